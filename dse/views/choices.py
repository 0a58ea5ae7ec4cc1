"""Widget choices: the devices, models, precisions and software a role can use on a device,
its memory and host options (KV-cache precisions, weight offload, the board's host CPU) and a
device kind's build-knob ranges, from the device registry's capabilities; the workflows,
verifiers and placements (roles sharing one device) with their labels, and which schedules
and flags a placement allows (dse.model.design.schedule_conflicts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from dse.core.roles import DEVICE_ROLES
from dse.devices.registry import device_names, kind_of, resolve
from dse.errors import DseError
from dse.model.design import schedule_conflicts
from dse.model.schedules import FLAGS, PRESETS
from dse.specs import Catalog
from dse.specs.model import KV_PRECISIONS
from dse.specs.scenario import COLOCATIONS, SystemSpec
from dse.views.state import MEMORY_OPTIONS


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
    # the KV-cache precisions a system may set on the kind (<role>_kv_precision; empty: its
    # build fixes the KV width, as an FPGA's does)
    kv_precisions: tuple[str, ...] = ()
    offloads: bool = False  # may hold weights in host memory (<role>_offload_fraction)
    hosted: bool = False  # has a host CPU a system may replace (<role>_host_cpu_slowdown)
    # the board's own host CPU slowdown and its source (a hosted kind; None and "" otherwise)
    host_cpu_slowdown: float | None = None
    host_cpu_source: str = ""

    @property
    def kv_choices(self) -> list[str]:
        """The KV-cache widget's options: the 16-bit cache (KV_DEFAULT, the widget's word for
        an absent key) first, then the kind's other KV precisions; KV_DEFAULT alone for a kind
        without KV choices."""
        return [KV_DEFAULT, *(p for p in self.kv_precisions if p != KV_DEFAULT)]


def role_options(cat: Catalog, role: str, device: str) -> RoleOptions:
    """Devices, models, precisions and serving profiles (FPGA engines) a role can use on a
    device, from the device kind's capabilities (the PRM and target run on GPUs; the draft on
    a GPU or an FPGA), with the kind's KV-cache precisions, whether it offloads weights to
    host memory (not a unified-memory board: its host memory is the GPU's) and, for a hosted
    kind, the board's host CPU slowdown and its source."""
    devices = device_names(cat, role)
    models = [n for n in cat.names("model") if role in cat.model(n).roles]
    b, k = resolve(cat, device)
    host = float(cast(Any, b).host_cpu_slowdown) if k.hosted else None  # hosted: a field
    source = (b.sources.get("host_cpu_slowdown") or b.sources.get("*", "")) if k.hosted else ""
    return RoleOptions(devices, models, list(k.precisions), cat.names(k.software_kind),
                       k.default_precision, k.default_software, k.name, k.software_label,
                       k.software_key, k.build_knobs, k.kv_precisions,
                       k.offloads and not getattr(b, "unified_memory", False), k.hosted,
                       host, source)


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


# ------------------------------------------------------------------ KV cache, offload, host CPU

# The KV widget's word for an absent <role>_kv_precision: the 16-bit cache (the model dtype,
# vLLM's kv_cache_dtype=auto), which every GPU precision keeps when the key is absent, so the
# two evaluate alike; an unchanged widget makes no override (memory_overrides).
KV_DEFAULT = "16"
# The number widgets' 0 stands for an absent key: no offload, the board's own host CPU.
MEMORY_ABSENT: dict[str, Any] = dict(zip(MEMORY_OPTIONS, (KV_DEFAULT, 0.0, 0.0), strict=True))
# The offload widget's upper end: the key takes [0, 1) (the GPU keeps the activations, the KV
# cache and some weights), so the widget stops one step of 0.01 short of 1.
OFFLOAD_WIDGET_MAX = 0.99


def kv_label(name: str) -> str:
    """A KV-cache precision in words: '16-bit (default)' (the model dtype), 'fp8 (8 bits)'."""
    if name == KV_DEFAULT:
        return "16-bit (default)"
    return f"{name} ({KV_PRECISIONS[name]:g} bits)" if name in KV_PRECISIONS else name


def supports(opts: RoleOptions, option: str) -> bool:
    """Whether the role's device kind takes the memory option (one of MEMORY_OPTIONS): KV
    choices, weight offload, a host CPU of its own."""
    return {"kv_precision": bool(opts.kv_precisions), "offload_fraction": opts.offloads,
            "host_cpu_slowdown": opts.hosted}[option]


def memory_widget_values(spec: SystemSpec) -> dict[str, Any]:
    """Each role's KV-cache, offload and host-CPU widget value (`<role>_<option>`): the
    system's key, else the widget's word for an absent key (MEMORY_ABSENT: "16", 0.0, 0.0)."""
    out: dict[str, Any] = {}
    for role in DEVICE_ROLES:
        for option, absent in MEMORY_ABSENT.items():
            v = getattr(spec, f"{role}_{option}")
            out[f"{role}_{option}"] = absent if v is None else v
    return out


def memory_overrides(opts: RoleOptions, role: str, values: Mapping[str, Any],
                     preset: Mapping[str, Any]) -> dict[str, Any]:
    """The `<role>_<option>` overrides the role's memory widgets make against the preset
    system (`preset`: its TOML table). values: option -> widget value (None: not drawn, as
    absent). A widget at its word for an absent key makes no override where the preset leaves
    the key out, and says the absent value explicitly where the preset sets one ("16", 0.0,
    or the board's own host CPU slowdown); an option the device's kind does not take makes
    none (an FPGA draft: the override is dropped, the widget keeps its value)."""
    out: dict[str, Any] = {}
    for option, absent in MEMORY_ABSENT.items():
        key = f"{role}_{option}"
        v = values.get(option)
        if not supports(opts, option) or (option == "kv_precision" and v is not None
                                          and v != KV_DEFAULT and v not in opts.kv_precisions):
            continue
        if v is None or v == absent:
            if preset.get(key) is None:
                continue
            v = opts.host_cpu_slowdown if option == "host_cpu_slowdown" else absent
        if v != preset.get(key):
            out[key] = v
    return out


def build_knob_ranges(cat: Catalog, device: str) -> dict[str, float]:
    """The device kind's knob ranges for this board: for an FPGA, clock range and default
    (MHz) and memory channels (0 in the system TOML means the board default / every
    channel); empty for a kind without build knobs."""
    b, k = resolve(cat, device)
    return k.knob_ranges(b)


# ------------------------------------------------------------------ workflow, verifier, placement

WORKFLOW_LABELS = {"speculative": "Speculative (draft, verifier, target)",
                   "target-only": "Target alone",
                   "best-of-n": "Best-of-N (the PRM ranks N samples of the target)",
                   "weighted-best-of-n": "Weighted best-of-N (PRM scores summed per answer)",
                   "majority": "Majority vote over N samples (no verifier)",
                   "step-search": "Step search (N candidates per step, the PRM's best kept)",
                   "beam": "Beam search (N candidates per step, beam width kept)"}
AGGREGATION_LABELS = {"default": "Method's default (product; last for the searches)",
                      "product": "Product of the step scores", "min": "Lowest step score",
                      "last": "Last step's score"}
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
    shares the target's device, so only the draft can join it (dse.specs.scenario's check)."""
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
    other = workflow != "speculative"  # the target alone or a width design
    spec = replace(base, workflow=None if workflow == "speculative" else workflow,
                   verifier=None if other else verifier,
                   colocate=None if other or colocate == NO_COLOCATION else colocate)
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
    (dse.model.design.schedule_conflicts); empty for a target-only or width system (no schedule)."""
    if spec.workflow_name != "speculative":
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
        why = (schedule_conflicts(spec.colocated, s) if spec.workflow_name == "speculative"
               else [])
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
