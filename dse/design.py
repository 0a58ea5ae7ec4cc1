"""A Design: a system's placements (draft, PRM, target on devices), links, algorithm knobs and
schedule flags, resolved against the catalog and validated (feasibility).

The file formats (a system's TOML table, design files, `--set` overrides) are in
dse/design_files.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dse.devices.protocol import Placement
from dse.devices.registry import DeviceKind, board, kind_of, place, role_devices_label
from dse.errors import InfeasibleError, SpecError, UnknownNameError
from dse.roles import DEVICE_ROLES
from dse.scenario import SystemSpec
from dse.schedules.registry import Schedule
from dse.specs import Catalog, LinkSpec, ModelSpec


@dataclass(frozen=True)
class Design:
    system: SystemSpec
    schedule: Schedule
    draft: Placement
    prm: Placement
    target: Placement
    draft_link: LinkSpec  # draft device <-> GPUs (tokens, verdicts, KV migration)
    gpu_link: LinkSpec  # PRM GPU <-> target GPU
    accept_threshold: float
    backtrack_threshold: float
    max_backtracks: int
    backtrack_window: int
    max_context_tokens: int
    init_gpu: Placement | None = None  # GPU that prefills a non-GPU draft's prompt (migration)

    @property
    def name(self) -> str:
        return self.system.name


def legacy_draft_engine(cat: Catalog, s: SystemSpec) -> SystemSpec:
    """An old system's `draft_serving` that names an FPGA engine on an FPGA draft is its
    `draft_engine` (the two were one key before); a conflict with `draft_engine` is an
    error."""
    legacy = s.draft_serving
    try:
        kind = kind_of(cat, s.draft_device)
    except UnknownNameError:  # _check_names reports it with the file and key
        return s
    if legacy is None or kind.software_key != "engine" or legacy not in cat.names(
            kind.software_kind):
        return s
    if s.draft_engine is not None and s.draft_engine != legacy:
        raise SpecError(s.path, "draft_serving", f"names the FPGA engine {legacy!r} but "
                        f"draft_engine is {s.draft_engine!r}; give the engine as draft_engine")
    return replace(s, draft_serving=None, draft_engine=legacy)


def software_of(s: SystemSpec, role: str, kind: DeviceKind) -> str | None:
    """The software a role's device runs, from the system key its kind names
    (`<role>_serving` for a GPU serving profile, `<role>_engine` for an FPGA engine); None: the
    kind's default."""
    value = getattr(s, f"{role}_{kind.software_key}", None)
    return value if isinstance(value, str) else None


def build_design(cat: Catalog, s: SystemSpec, sched: Schedule, *, check: bool = True) -> Design:
    """Resolve a system against the catalog. check=True raises InfeasibleError with every reason
    the design cannot run."""
    where = s.path
    s = legacy_draft_engine(cat, s)
    _check_names(cat, s)
    # keyed by the role names ("draft", ...): a Role is its name (a StrEnum)
    models: dict[str, ModelSpec] = {r: cat.model(getattr(s, f"{r}_model")) for r in DEVICE_ROLES}
    for role, m in models.items():
        if role not in m.roles:
            raise SpecError(where, f"{role}_model",
                            f"{m.name} cannot be a {role} (its roles: {', '.join(m.roles)})")
    if models["draft"].tokenizer_family != models["target"].tokenizer_family:
        raise SpecError(where, "draft_model",
                        f"draft {models['draft'].name} ({models['draft'].tokenizer_family}) and "
                        f"target {models['target'].name} ({models['target'].tokenizer_family}) "
                        "do not share a tokenizer")
    for role in ("prm", "target"):
        if role not in kind_of(cat, getattr(s, f"{role}_device")).roles:
            raise SpecError(where, f"{role}_device",
                            f"the {role} runs on {role_devices_label(role)} in this model")
    ctx = s.max_context_tokens
    # build knobs the system sets (None: the board's or engine's default)
    knobs = {k: v for k, v in (("clock_hz", s.fpga_clock_hz),
                               ("memory_channels", s.fpga_memory_channels),
                               ("mac_lanes", s.fpga_mac_lanes)) if v is not None}
    kinds: dict[str, DeviceKind] = {r: kind_of(cat, getattr(s, f"{r}_device"))
                                    for r in DEVICE_ROLES}
    draft = place(cat, models["draft"], s.draft_device, precision_name=s.draft_precision,
                  software=software_of(s, "draft", kinds["draft"]), context_tokens=ctx,
                  knobs={k: v for k, v in knobs.items() if k in kinds["draft"].build_knobs})
    prm = place(cat, models["prm"], s.prm_device, precision_name=s.prm_precision,
                software=software_of(s, "prm", kinds["prm"]), context_tokens=ctx,
                tp=s.prm_tp or 1)
    target = place(cat, models["target"], s.target_device, precision_name=s.target_precision,
                   software=software_of(s, "target", kinds["target"]), context_tokens=ctx,
                   tp=s.target_tp)
    links = {d: cat.link(board(cat, d).host_link) for d in
             (s.draft_device, s.prm_device, s.target_device)}
    slower = min(links[s.prm_device], links[s.target_device],
                 key=lambda ln: ln.effective_bytes_per_s)
    draft_link = min(links[s.draft_device], slower, key=lambda ln: ln.effective_bytes_per_s)
    init_gpu = None
    # HeteroReason Phase 1: the target GPU prefills the prompt, the KV cache migrates
    if kinds["draft"].prompt_prefill_on_gpu:
        init_gpu = place(cat, models["draft"], s.target_device, precision_name="bf16",
                         software=s.target_serving, context_tokens=ctx)
    d = Design(s, sched, draft, prm, target, draft_link, slower, s.accept_threshold,
               s.backtrack_threshold, s.max_backtracks, s.backtrack_window, ctx, init_gpu)
    if check:
        why = infeasibility(d)
        if why:
            raise InfeasibleError(f"{s.name} is infeasible: " + "; ".join(why))
    return d


def _check_names(cat: Catalog, s: SystemSpec) -> None:
    """Every name the system refers to exists; an unknown one is reported with the file and
    the key that holds it (still an UnknownNameError, exit 2, listing the valid names)."""

    def check(key: str, lookup: Any) -> None:
        if getattr(s, key, None) is None:  # an optional key left at its default
            return
        try:
            lookup(getattr(s, key))
        except UnknownNameError as e:
            e.args = (f"{s.path}: {key}: {e}",)
            raise

    for role in DEVICE_ROLES:
        check(f"{role}_model", cat.model)
        check(f"{role}_device", lambda name: kind_of(cat, name))
    # a role on a kind that cannot hold it: build_design says so, after the models' checks
    kinds = {r: k for r in DEVICE_ROLES
             if r in (k := kind_of(cat, getattr(s, f"{r}_device"))).roles}
    for role, kind in kinds.items():
        check(f"{role}_precision", lambda name, k=kind, r=role: k.check_precision(
            name, where=s.path, key=f"{r}_precision"))
    for role, kind in kinds.items():  # the serving profile, or the engine, of the role's kind
        check(f"{role}_{kind.software_key}", lambda name, k=kind: cat.get(k.software_kind, name))


def infeasibility(d: Design) -> list[str]:
    why: list[str] = []
    for role in DEVICE_ROLES:
        why += [f"{role}: {w}" for w in getattr(d, role).infeasibility()]
    return why
