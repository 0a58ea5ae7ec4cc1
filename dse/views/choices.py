"""Widget choices: the devices, models, precisions and software a role can use on a device,
and a device kind's build-knob ranges, from the device registry's capabilities; the workflows,
verifiers and placements (roles sharing one device) with their labels, and which schedules
and flags a placement allows (dse.design.schedule_conflicts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from dse.design import schedule_conflicts
from dse.devices.registry import device_names, kind_of, resolve
from dse.errors import DseError
from dse.scenario import COLOCATIONS, SystemSpec
from dse.schedules import FLAGS, PRESETS
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


def runs_precision(cat: Catalog, device: str, name: str | None) -> bool:
    """The device's kind runs the precision: one of its listed names or a valid member of one
    of its families (exl2-4.65 on a GPU), by the kind's one check."""
    k = kind_of(cat, device)
    if name is None or not k.runs_precision(name):
        return False
    try:
        k.check_precision(name)
    except DseError:
        return False
    return True


def build_knob_ranges(cat: Catalog, device: str) -> dict[str, float]:
    """The device kind's knob ranges for this board: for an FPGA, clock range and default
    (MHz) and memory channels (0 in the system TOML means the board default / every
    channel); empty for a kind without build knobs."""
    b, k = resolve(cat, device)
    return k.knob_ranges(b)


# ------------------------------------------------------------------ workflow, verifier, placement

WORKFLOW_LABELS = {"speculative": "Speculative (draft, verifier, target)",
                   "target-only": "Target alone"}
VERIFIER_LABELS = {"prm": "PRM (a process reward model)",
                   "target": "The target judges (one score token)"}
# `none` is the widget's word for "each role on its own device(s)" (no `colocate` key)
NO_COLOCATION = "none"
COLOCATE_LABELS = {NO_COLOCATION: "Each role on its own device",
                   "draft+target": "Draft and target share one GPU",
                   "prm+target": "PRM and target share one GPU",
                   "draft+prm": "Draft and PRM share one GPU",
                   "draft+prm+target": "Draft, PRM and target share one GPU"}


def colocate_options(verifier: str) -> list[str]:
    """The placements a verifier allows: with the target as verifier, the verifier already
    shares the target's device, so only the draft can join it (dse.scenario's check)."""
    return [NO_COLOCATION, *(c for c in COLOCATIONS if verifier == "prm" or "prm" not in c)]


def colocate_for_verifier(colocate: str, verifier: str) -> str:
    """The placement kept when the verifier changes to `verifier`: with the target as
    verifier, a group naming the PRM keeps its other roles (draft+prm+target: draft+target;
    prm+target, draft+prm with the draft joining the target: see colocate_options)."""
    if verifier == "prm" or colocate == NO_COLOCATION or "prm" not in colocate:
        return colocate
    rest = [r for r in colocate.split("+") if r != "prm"]
    return "draft+target" if "draft" in rest else NO_COLOCATION


def arrangement(base: SystemSpec, workflow: str, verifier: str, colocate: str) -> SystemSpec:
    """`base` with the widgets' workflow, verifier and placement (their defaults as absent
    keys), unchecked: for reading which roles share a device (`SystemSpec.colocated`) before
    the devices are chosen."""
    spec = replace(base, workflow=None if workflow == "speculative" else workflow,
                   verifier=None if workflow == "target-only" else verifier,
                   colocate=None if workflow == "target-only" or colocate == NO_COLOCATION
                   else colocate)
    assert isinstance(spec, SystemSpec)
    return spec


def colocation_moves(colocate: str, devices: Mapping[str, str], anchor: str | None = None
                     ) -> dict[str, str]:
    """Roles to move so that a placement's roles name one device: each onto the anchor's
    device (default: the target's when the target is among them, else the PRM's; a role
    just moved by the user is the anchor). Roles without a device of their own (absent from
    `devices`: a judging target's verifier) are left alone. Returns role -> device (empty:
    nothing to move, or the anchor is not in the placement)."""
    if colocate == NO_COLOCATION:
        return {}
    roles = [r for r in colocate.split("+") if r in devices]
    if anchor is None:
        anchor = "target" if "target" in roles else "prm"
    if anchor not in roles:
        return {}
    return {r: devices[anchor] for r in roles if r != anchor and devices[r] != devices[anchor]}


def shared_devices(cat: Catalog, roles: Sequence[str]) -> list[str]:
    """The devices every one of `roles` can run on (the choices for roles that share one
    device), in the first role's order."""
    if not roles:
        return []
    allowed = [set(device_names(cat, r)) for r in roles[1:]]
    return [d for d in device_names(cat, roles[0]) if all(d in a for a in allowed)]


def flag_conflicts(spec: SystemSpec) -> dict[str, str]:
    """Each schedule flag the system's shared devices forbid, with the reason
    (dse.design.schedule_conflicts); empty for a target-only system (it has no schedule)."""
    if spec.workflow_name == "target-only":
        return {}
    out: dict[str, str] = {}
    for f in FLAGS:
        why = schedule_conflicts(spec.colocated, PRESETS["rsd"].with_flags(**{f: True}))
        if why:
            out[f] = "; ".join(why)
    return out


def schedule_choices(spec: SystemSpec) -> tuple[list[str], dict[str, str]]:
    """(the schedule presets the system can run, {preset: why not} for the others)."""
    ok, why_not = [], {}
    for name, s in PRESETS.items():
        why = schedule_conflicts(spec.colocated, s) if spec.workflow_name != "target-only" else []
        if why:
            why_not[name] = "; ".join(why)
        else:
            ok.append(name)
    return ok, why_not


def runnable_flags(spec: SystemSpec, flags: Mapping[str, bool]) -> tuple[str, dict[str, bool]]:
    """A preset the system can run and the flags to keep: the flags with every forbidden one
    turned off, and the runnable preset that differs from them in the fewest flags (the
    first in PRESETS' order on a tie)."""
    banned = flag_conflicts(spec)
    kept: dict[str, bool] = {f: bool(flags.get(f, False)) and f not in banned for f in FLAGS}
    ok, _ = schedule_choices(spec)
    best = min(ok, key=lambda n: sum(getattr(PRESETS[n], f) != kept[f] for f in FLAGS))
    return best, kept
