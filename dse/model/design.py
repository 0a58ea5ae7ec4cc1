"""A Design: a system's placements (draft, PRM, target on devices), links, algorithm knobs and
schedule flags, resolved against the catalog and validated (feasibility).

The file formats (a system's TOML table, design files, `--set` overrides) are in
dse/io/design_files.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dse.core.roles import DEVICE_ROLES
from dse.devices.protocol import Placement
from dse.devices.registry import DeviceKind, board, kind_of, place, role_devices_label
from dse.errors import DseError, FlagValueError, InfeasibleError, SpecError, UnknownNameError
from dse.model.schedules.registry import Schedule
from dse.model.verifiers import VERIFIERS, Verifier
from dse.specs import Catalog, LinkSpec, ModelSpec
from dse.specs.model import tp_misfit
from dse.specs.scenario import WIDTH_WORKFLOWS, SystemSpec, WorkloadSpec, context_misfit


@dataclass(frozen=True)
class Design:
    """A resolved design. A speculative one has a draft and a verifier placement (a target
    verifier's is the target's); a target-only one has neither (`draft` and `prm` then raise:
    ask `roles` or `is_speculative` first). `colocated` lists the groups of roles that share
    one device: their work serialises, the device's idle power is counted once and no link hop
    is paid between them."""

    system: SystemSpec
    schedule: Schedule
    target: Placement
    draft_link: LinkSpec  # draft device <-> GPUs (tokens, verdicts, KV migration)
    gpu_link: LinkSpec  # PRM GPU <-> target GPU
    accept_threshold: float
    backtrack_threshold: float
    max_backtracks: int
    backtrack_window: int
    max_context_tokens: int
    init_gpu: Placement | None = None  # GPU that prefills a non-GPU draft's prompt (migration)
    draft_placement: Placement | None = None
    prm_placement: Placement | None = None  # None for a target verifier (it is the target)
    workflow: str = "speculative"
    verifier_kind: str | None = "prm"
    colocated: tuple[tuple[str, ...], ...] = ()
    # a width design's knobs (dse.engine.width): samples N per problem (candidates per step of
    # a search), beams kept (beam only) and how step scores make a response's score
    samples: int = 1
    beam_width: int = 1
    aggregation: str = "product"

    @property
    def name(self) -> str:
        return self.system.name

    @property
    def is_speculative(self) -> bool:
        return self.workflow == "speculative"

    @property
    def is_width(self) -> bool:
        """N samples of the target (the policy) ranked or voted
        (dse.specs.scenario.WIDTH_WORKFLOWS)."""
        return self.workflow in WIDTH_WORKFLOWS

    @property
    def roles(self) -> tuple[str, ...]:
        """The device roles this design runs ("draft", "prm", "target"; "target" alone for a
        target-only design; "target" and "prm" for a width design with a PRM, "target" alone
        for majority voting)."""
        if self.is_speculative:
            return tuple(r.value for r in DEVICE_ROLES)
        return ("target", "prm") if self.prm_placement is not None else ("target",)

    @property
    def width_label(self) -> str:
        """A width design's method and knobs, e.g. "best-of-n N=8", "beam N=16 B=4"; the
        workflow's name otherwise. Its report's `schedule`."""
        if not self.is_width:
            return self.workflow
        return f"{self.workflow} N={self.samples}" + (
            f" B={self.beam_width}" if self.workflow == "beam" else "")

    @property
    def draft(self) -> Placement:
        if self.draft_placement is None:
            raise DseError(f"{self.name}: a {self.workflow} design has no draft")
        return self.draft_placement

    @property
    def prm(self) -> Placement:
        """The verifier's placement (the target's when the target verifies)."""
        if self.verifier_kind is not None and self.verifier.is_target:
            return self.target
        if self.prm_placement is None:
            raise DseError(f"{self.name}: a {self.workflow} design has no verifier")
        return self.prm_placement

    @property
    def verifier(self) -> Verifier:
        if self.verifier_kind is None:
            raise DseError(f"{self.name}: a {self.workflow} design has no verifier")
        return VERIFIERS[self.verifier_kind]

    def shares_device(self, a: str, b: str) -> bool:
        """Roles a and b run on one device."""
        return any(a in g and b in g for g in self.colocated)

    def idle_owner(self, role: str) -> bool:
        """Whether the role's device idle power is booked to it: the first role of its
        colocated group (a shared device's idle power counts once)."""
        return not any(role in g and g[0] != role for g in self.colocated)

    @property
    def family(self) -> str:
        """`target-only`, `gpu-speculative`, `fpga-speculative` (the draft's device kind) or
        `width`."""
        if self.is_width:
            return "width"
        if not self.is_speculative:
            return "target-only"
        return "gpu-speculative" if self.draft.kind == "gpu" else "fpga-speculative"


def legacy_draft_engine(cat: Catalog, s: SystemSpec) -> SystemSpec:
    """An old system's `draft_serving` that names an FPGA engine on an FPGA draft is its
    `draft_engine` (the two were one key before); a conflict with `draft_engine` is an
    error."""
    legacy = s.draft_serving
    if s.draft_device is None:
        return s
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


def memory_options(s: SystemSpec, role: str) -> dict[str, Any]:
    """The role's KV-cache precision, weight offload and host CPU from the system's keys
    (`<role>_kv_precision`, `<role>_offload_fraction`, `<role>_host_cpu_slowdown`; absent:
    16-bit KV, no offload, the board's host)."""
    return {"kv_precision": getattr(s, f"{role}_kv_precision"),
            "offload_fraction": getattr(s, f"{role}_offload_fraction") or 0.0,
            "host_cpu_slowdown": getattr(s, f"{role}_host_cpu_slowdown")}


def placed_roles(s: SystemSpec) -> tuple[str, ...]:
    """The roles with a placement of their own in the system's workflow: the draft and a PRM
    (not a target verifier: that is the target) of a speculative design, and the target."""
    if s.workflow_name == "target-only" or s.workflow_name == "majority":
        return ("target",)
    if s.is_width:
        return ("target", "prm")
    if VERIFIERS[str(s.verifier_name)].is_target:
        return ("draft", "target")
    return ("draft", "prm", "target")


def build_design(cat: Catalog, s: SystemSpec, sched: Schedule, *, check: bool = True) -> Design:
    """Resolve a system against the catalog. check=True raises InfeasibleError with every reason
    the design cannot run (a colocated group whose models do not fit together included); a
    schedule whose overlaps need separate devices on a colocated design is a SpecError naming
    `colocate` (schedule_conflicts)."""
    where = s.path
    s = legacy_draft_engine(cat, s)
    roles = placed_roles(s)
    _check_names(cat, s, roles)
    # keyed by the role names ("draft", ...): a Role is its name (a StrEnum)
    models: dict[str, ModelSpec] = {r: cat.model(str(getattr(s, f"{r}_model"))) for r in roles}
    for role, m in models.items():
        if role not in m.roles:
            raise SpecError(where, f"{role}_model",
                            f"{m.name} cannot be a {role} (its roles: {', '.join(m.roles)})")
    if "draft" in models and models["draft"].tokenizer_family != models[
            "target"].tokenizer_family:
        raise SpecError(where, "draft_model",
                        f"draft {models['draft'].name} ({models['draft'].tokenizer_family}) and "
                        f"target {models['target'].name} ({models['target'].tokenizer_family}) "
                        "do not share a tokenizer")
    for role in roles:
        if role != "draft" and role not in kind_of(cat, str(getattr(s, f"{role}_device"))).roles:
            raise SpecError(where, f"{role}_device",
                            f"the {role} runs on {role_devices_label(role)} in this model")
    ctx = s.max_context_tokens
    kinds: dict[str, DeviceKind] = {r: kind_of(cat, str(getattr(s, f"{r}_device")))
                                    for r in roles}
    s = _check_software_keys(s, kinds)
    s = _check_build_knobs(s, kinds)
    if check:
        _check_tp(s, models)
    target = place(cat, models["target"], s.target_device, precision_name=s.target_precision,
                   software=software_of(s, "target", kinds["target"]), context_tokens=ctx,
                   tp=s.target_tp, **memory_options(s, "target"))
    target_link = cat.link(board(cat, s.target_device).host_link)
    if s.workflow_name == "target-only":
        d = Design(s, sched, target, target_link, target_link, 1.0, 1.0, 0, 1, ctx,
                   workflow="target-only", verifier_kind=None)
        return _checked(d, check)
    if s.is_width:
        return _checked(_width_design(cat, s, sched, target, target_link, kinds, models), check)
    draft_device = str(s.draft_device)
    # build knobs the system sets (None: the board's or engine's default)
    knobs = {k: v for k, v in (("clock_hz", s.fpga_clock_hz),
                               ("memory_channels", s.fpga_memory_channels),
                               ("mac_lanes", s.fpga_mac_lanes)) if v is not None}
    draft = place(cat, models["draft"], draft_device, precision_name=s.draft_precision,
                  software=software_of(s, "draft", kinds["draft"]), context_tokens=ctx,
                  knobs={k: v for k, v in knobs.items() if k in kinds["draft"].build_knobs},
                  **memory_options(s, "draft"))
    prm = None
    verifier_device = s.target_device
    if "prm" in roles:
        verifier_device = str(s.prm_device)
        prm = place(cat, models["prm"], verifier_device, precision_name=s.prm_precision,
                    software=software_of(s, "prm", kinds["prm"]), context_tokens=ctx,
                    tp=s.prm_tp or 1, **memory_options(s, "prm"))
    links = {d: cat.link(board(cat, d).host_link) for d in
             (draft_device, verifier_device, s.target_device)}
    slower = min(links[verifier_device], links[s.target_device],
                 key=lambda ln: ln.effective_bytes_per_s)
    draft_link = min(links[draft_device], slower, key=lambda ln: ln.effective_bytes_per_s)
    init_gpu = None
    # HeteroReason Phase 1: the target GPU prefills the prompt, the KV cache migrates
    if kinds["draft"].prompt_prefill_on_gpu:
        init_gpu = place(cat, models["draft"], s.target_device, precision_name="bf16",
                         software=s.target_serving, context_tokens=ctx)
    d = Design(s, sched, target, draft_link, slower, float(s.accept_threshold or 0.0),
               float(s.backtrack_threshold or 0.0), int(s.max_backtracks or 0),
               int(s.backtrack_window or 1), ctx, init_gpu, draft, prm,
               workflow="speculative", verifier_kind=s.verifier_name, colocated=s.colocated)
    conflicts = schedule_conflicts(d.colocated, sched)
    if conflicts:
        raise SpecError(where, "colocate", f"{s.colocate or 'prm+target (a target verifier)'}: "
                        + "; ".join(conflicts))
    return _checked(d, check)


def _width_design(cat: Catalog, s: SystemSpec, sched: Schedule, target: Placement,
                  target_link: LinkSpec, kinds: dict[str, DeviceKind],
                  models: dict[str, ModelSpec]) -> Design:
    """A width design: the policy (the target keys) and, but for majority voting, its PRM on
    a placement of its own; the link between them is the slower of their devices' host
    links (the N candidates' tokens go over it)."""
    prm = None
    link = target_link
    if "prm" in models:
        prm = place(cat, models["prm"], str(s.prm_device), precision_name=s.prm_precision,
                    software=software_of(s, "prm", kinds["prm"]),
                    context_tokens=s.max_context_tokens, tp=s.prm_tp or 1,
                    **memory_options(s, "prm"))
        link = min(cat.link(board(cat, str(s.prm_device)).host_link), target_link,
                   key=lambda ln: ln.effective_bytes_per_s)
    return Design(s, sched, target, target_link, link, 1.0, 1.0, 0, 1, s.max_context_tokens,
                  prm_placement=prm, workflow=s.workflow_name, verifier_kind=None,
                  samples=int(s.samples or 1), beam_width=int(s.beam_width or 1),
                  aggregation=s.aggregation or default_aggregation(s.workflow_name))


def default_aggregation(workflow: str) -> str:
    """A width design's aggregation when it names none: the searches rank single steps by the
    newest step's score ("last"), the response-level methods by the product of the step
    scores (the fitted conventions, dse.validation.width.row_separation)."""
    return "last" if workflow in ("step-search", "beam") else "product"


SOFTWARE_KEYS = {"serving": "a GPU serving profile", "engine": "an FPGA engine"}


def _check_software_keys(s: SystemSpec, kinds: dict[str, DeviceKind]) -> SystemSpec:
    """A role's software key must be its device kind's: an FPGA engine named for a GPU draft
    (or a serving profile for an FPGA one) would be ignored, so it is refused by name. Where an
    override moved the role to another kind of device and the other key came with the file, the
    file's key goes with the old device (it is dropped, not refused)."""
    drop: dict[str, Any] = {}
    for role, kind in kinds.items():
        for key, what in SOFTWARE_KEYS.items():
            name = f"{role}_{key}"
            value = getattr(s, name, None)
            if key == kind.software_key or value is None:
                continue
            moved = s.sources.get(f"{role}_device", "").startswith("set by")
            if moved and not s.sources.get(name, "").startswith("set by"):
                drop[name] = None
                continue
            raise SpecError(s.path, name, f"{value!r} is {what}, but the {role} runs on "
                            f"{kind.a_label} ({getattr(s, f'{role}_device')}), which takes "
                            f"{role}_{kind.software_key}")
    return replace(s, **drop) if drop else s


# The system keys of the FPGA build knobs: (TOML key, SystemSpec field, the kind's knob name).
BUILD_KNOB_KEYS = (("fpga_clock_MHz", "fpga_clock_hz", "clock_hz"),
                   ("fpga_memory_channels", "fpga_memory_channels", "memory_channels"),
                   ("fpga_mac_lanes", "fpga_mac_lanes", "mac_lanes"))


def _refuse(s: SystemSpec, key: str, reason: str) -> SpecError:
    """The error naming a system key: `--set` when it set the key (exit 2), else the file."""
    if s.sources.get(key, "") == "set by --set":
        return FlagValueError("--set", key, reason)
    return SpecError(s.path, key, reason)


def _check_build_knobs(s: SystemSpec, kinds: dict[str, DeviceKind]) -> SystemSpec:
    """A build knob (fpga_clock_MHz, ...) applies to a placed role whose kind builds with it
    (an FPGA draft); on any other design it would be ignored, so it is refused by name. Where
    an override moved the draft to another kind of device (or chose a workflow without a
    draft) and the knob came with the file, the knob goes with the old device (dropped, not
    refused), as the software keys do."""
    drop: dict[str, Any] = {}
    for key, attr, knob in BUILD_KNOB_KEYS:
        if getattr(s, attr) is None or any(knob in k.build_knobs for k in kinds.values()):
            continue
        moved = any(s.sources.get(k, "").startswith("set by")
                    for k in ("draft_device", "workflow"))
        if moved and not s.sources.get(key, "").startswith("set by"):
            drop[attr] = None
            continue
        where = (f"the draft runs on {kinds['draft'].a_label} ({s.draft_device})"
                 if "draft" in kinds else f"a {s.workflow_name} design has no draft")
        raise _refuse(s, key, f"an FPGA draft's build knob, but {where}; remove the key")
    return replace(s, **drop) if drop else s


def _check_tp(s: SystemSpec, models: dict[str, ModelSpec]) -> None:
    """target_tp and prm_tp split their model's attention heads as vLLM requires
    (dse.specs.model.tp_misfit), else one error naming the key."""
    for role, tp in (("target", s.target_tp), ("prm", s.prm_tp)):
        if tp is not None and role in models:
            why = tp_misfit(models[role], tp)
            if why is not None:
                raise _refuse(s, f"{role}_tp", why)


def budget_misfit(d: Design, w: WorkloadSpec) -> str | None:
    """Why the design's generation budget cannot hold one problem of the workload (its prompt
    and one step, draft or target), or None. E.g. 1 token against MATH500's 98.9-token prompt
    and 53-token steps: '1 tokens cannot hold ...: at least 152 needed'."""
    step = w.target_step_tokens_mean
    if d.is_speculative:
        step = max(step, w.draft_step_tokens_mean)
    return context_misfit(d.max_context_tokens, w.prompt_tokens, step, f"{w.name}'s")


def _checked(d: Design, check: bool) -> Design:
    """The design, or (check=True) an error with every reason it cannot run: roles that do
    not fit together on their shared device are a SpecError naming `colocate` (a
    FlagValueError when --set chose the colocation), any other reason an InfeasibleError."""
    if not check:
        return d
    shared = colocation_misfits(d)
    if shared:
        src = d.system.sources.get("colocate", "")
        if src == "set by --set":
            raise FlagValueError("--set", "colocate", "; ".join(shared))
        raise SpecError(d.system.path, "colocate", "; ".join(shared))
    why = infeasibility(d)
    if why:
        raise InfeasibleError(f"{d.name} is infeasible: " + "; ".join(why))
    return d


def schedule_conflicts(colocated: tuple[tuple[str, ...], ...], sched: Schedule) -> list[str]:
    """Why a schedule cannot run with these roles sharing devices (empty: it can). Work on one
    device serialises, so a technique that overlaps two roles needs them apart: step-ahead
    overlaps the verification with the draft's next step and the target's prefetch (all three
    apart); shadow sync overlaps the target's rewrite with the draft's ingestion (draft and
    target apart); backtracking re-scores a rewrite while the draft ingests it (draft and
    verifier apart)."""
    def shared(a: str, b: str) -> bool:
        return any(a in g and b in g for g in colocated)

    why = []
    if sched.step_ahead and colocated:
        why.append("step_ahead overlaps the draft, the verifier and the target, so it needs "
                   "each on its own device")
    if sched.shadow_sync and shared("draft", "target"):
        why.append("shadow_sync overlaps the target's rewrite with the draft's ingestion, so "
                   "it needs them on separate devices")
    if sched.backtracking and shared("draft", "prm"):
        why.append("backtracking re-scores a rewrite while the draft ingests it, so it needs "
                   "the draft and the verifier on separate devices")
    return why


def _check_names(cat: Catalog, s: SystemSpec, roles: tuple[str, ...]) -> None:
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

    for role in roles:
        check(f"{role}_model", cat.model)
        check(f"{role}_device", lambda name: kind_of(cat, name))
    # a role on a kind that cannot hold it: build_design says so, after the models' checks
    kinds = {r: k for r in roles
             if r in (k := kind_of(cat, str(getattr(s, f"{r}_device")))).roles}
    for role, kind in kinds.items():
        check(f"{role}_precision", lambda name, k=kind, r=role: k.check_precision(
            name, where=s.path, key=f"{r}_precision"))
        kind.check_memory_options(**memory_options(s, role), where=s.path, role=role,
                                  board=cat.device(str(getattr(s, f"{role}_device"))))
    for role, kind in kinds.items():  # the serving profile, or the engine, of the role's kind
        check(f"{role}_{kind.software_key}", lambda name, k=kind: cat.get(k.software_kind, name))


def infeasibility(d: Design) -> list[str]:
    """Every reason the design cannot run: each placement's own (memory, resources), and each
    colocated group's models not fitting together (weights and KV at the maximum context of
    every role on the device: the static KV split SpecReason uses)."""
    why: list[str] = []
    for role, p in _placements(d).items():
        why += [f"{role}: {w}" for w in p.infeasibility()]
    if not why:
        why += batch_misfits(d)
    return why + colocation_misfits(d)


def batch_misfits(d: Design) -> list[str]:
    """A width design's batch that does not fit: the policy decodes its N samples (a beam's N
    candidates per step) as one batch, and the PRM scores N candidates as one batch, each
    sequence's KV cache held at the maximum context beside the weights (Placement.max_batch;
    the shared prompt's saving is left out: a few hundred tokens of the budget)."""
    if not d.is_width:
        return []
    why = []
    for role, p in (("target", d.target), ("prm", d.prm_placement)):
        if p is None:
            continue
        fit = p.max_batch(d.max_context_tokens)
        if fit < d.samples:
            why.append(f"{role}: {d.samples} sequences' KV caches at {d.max_context_tokens} "
                       f"tokens do not fit beside {p.model.name}'s weights on "
                       f"{p.device.name} (at most {fit}); lower samples or "
                       "max_context_tokens")
    return why


def _placements(d: Design) -> dict[str, Placement]:
    return {r: p for r, p in (("draft", d.draft_placement), ("prm", d.prm_placement),
                              ("target", d.target)) if p is not None}


def colocation_misfits(d: Design) -> list[str]:
    """Each colocated group whose models do not fit its device together (weights and KV at
    the maximum context of every role on it: a static split of the memory)."""
    why: list[str] = []
    placements = _placements(d)
    for group in d.colocated:
        members = [placements[r] for r in group if r in placements]
        need = sum(p.memory_needed_bytes for p in members)
        have = min(p.usable_memory_bytes for p in members)
        if len(members) > 1 and need > have:
            parts = ", ".join(f"{r} {placements[r].memory_needed_bytes / 1e9:.2f} GB"
                              for r in group if r in placements)
            why.append(f"{'+'.join(group)}: together they need {need / 1e9:.2f} GB ({parts}) "
                       f"of the shared device's {have / 1e9:.2f} GB")
    return why
