"""Widget choices: the devices, models, precisions and software a role can use on a device,
and a device kind's build-knob ranges, from the device registry's capabilities.
"""

from __future__ import annotations

from dataclasses import dataclass

from dse.devices.registry import device_names, kind_of, resolve
from dse.specs import Catalog


@dataclass(frozen=True)
class RoleOptions:
    """Valid choices for one role on one device."""

    devices: list[str]
    models: list[str]
    precisions: list[str]
    servings: list[str]
    default_precision: str
    default_serving: str
    kind: str  # the device's kind (dse.devices.registry)
    serving_label: str  # what its software is called: "Serving", "FPGA engine"
    software_key: str  # the system key suffix naming it: "serving" (<role>_serving), "engine"
    build_knobs: tuple[str, ...]  # the kind's build knobs (empty: none to show)


def role_options(cat: Catalog, role: str, device: str) -> RoleOptions:
    """Devices, models, precisions and serving profiles (FPGA engines) a role can use on a
    device, from the device kind's capabilities (the PRM and target run on GPUs; the draft on
    a GPU or an FPGA)."""
    devices = device_names(cat, role)
    models = [n for n in cat.names("model") if role in cat.model(n).roles]
    k = kind_of(cat, device)
    return RoleOptions(devices, models, list(k.precisions), cat.names(k.software_kind),
                       k.default_precision, k.default_software, k.name, k.software_label,
                       k.software_key, k.build_knobs)


def build_knob_ranges(cat: Catalog, device: str) -> dict[str, float]:
    """The device kind's knob ranges for this board: for an FPGA, clock range and default
    (MHz) and memory channels (0 in the system TOML means the board default / every
    channel); empty for a kind without build knobs."""
    b, k = resolve(cat, device)
    return k.knob_ranges(b)
