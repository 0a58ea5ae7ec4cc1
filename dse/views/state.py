"""The dashboard's design state: a catalog system, overrides of its keys, a schedule and a
workload, and its round trip through the URL's query parameters (the form `dse evaluate --set`
takes); the keys a workflow uses (`applicable`) and a design's target alone; a design file (a
search candidate) as a state; a one-line design label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from dse.devices.registry import kind_of
from dse.errors import DseError, SpecError, UnknownNameError
from dse.io.design_files import ALIASES, DesignFile, parse_set, system_to_toml
from dse.io.resolve import override_spec, read_source
from dse.model.design import Design, build_design, placed_roles
from dse.model.schedules import FLAGS, PRESETS, Schedule
from dse.specs import SCHEMAS, Catalog
from dse.specs.emit import toml_value
from dse.specs.scenario import PRM_KEYS, WIDTH_WORKFLOWS, SystemSpec
from dse.views.load import LOAD_PARAMS

# The view a fresh dashboard opens on: the README's first example.
DEFAULT_SYSTEM = "paper-config1-u280"
DEFAULT_WORKLOAD = "math500"
DEFAULT_SCHEDULE = "heteroreason"
BASELINES = ("rsd", "brsd", "brsd_stepahead")

_META_KEYS = ("schema_version", "kind", "name", "description", "sources")
# The query parameter that carries the pinned designs (repeated, one per design); never a
# system key, so a design's own parameters never collide with it.
PIN_PARAM = "pin"
MAX_PINS = 8
# A role's memory and host options, each a system key `<role>_<option>` (dse.model.design.
# memory_options: its KV-cache precision, the share of its weights in host memory, its GPU's
# host CPU).
MEMORY_OPTIONS = ("kv_precision", "offload_fraction", "host_cpu_slowdown")
# The system keys a target-only design uses (its target and its generation budget); every
# other key (draft, PRM, thresholds, FPGA build, verifier, placement) does not apply to it.
TARGET_KEYS = ("target_model", "target_device", "target_tp", "target_precision",
               "target_serving", *(f"target_{o}" for o in MEMORY_OPTIONS), "max_context_tokens")
# The keys that describe the workflow rather than a role's placement (a width design's knobs
# among them).
WORKFLOW_KEYS = ("workflow", "verifier", "colocate", "samples", "beam_width", "aggregation")
# The PRM's own keys: unused when the target verifies.
PRM_ONLY_KEYS = (*PRM_KEYS, "prm_tp", *(f"prm_{o}" for o in MEMORY_OPTIONS))


@dataclass(frozen=True)
class DesignState:
    """What the dashboard shows: a catalog system, overrides of its keys (TOML units, as
    `dse evaluate --set`), a schedule and a workload."""

    system: str
    workload: str
    schedule: Schedule
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def spec(self, cat: Catalog) -> SystemSpec:
        return override_spec(read_source(cat, self.system).spec, dict(self.overrides),
                             source="--set")

    def design(self, cat: Catalog) -> Design:
        """The resolved design (dse.io.resolve, as `dse evaluate --set`); raises InfeasibleError
        or SpecError with the reasons."""
        return build_design(cat, self.spec(cat), self.schedule)

    def with_schedule(self, sched: Schedule) -> DesignState:
        return DesignState(self.system, self.workload, sched, dict(self.overrides))

    @property
    def is_target_only(self) -> bool:
        """Whether the state sets the target-only workflow (the catalog's systems are all
        speculative)."""
        return self.overrides.get("workflow") == "target-only"

    def target_alone(self) -> DesignState:
        """The alternative every speculative design is weighed against: its target model alone
        (`workflow = "target-only"`) on the same target placement, with the same generation
        budget and workload (normalised: see `applicable`); as a state, so that it has a URL
        and can be pinned. Its spec is dse.io.resolve.target_alone's of this state's system."""
        return applicable(DesignState(self.system, self.workload, self.schedule,
                                      {**self.overrides, "workflow": "target-only"}))

    def gpu_baseline(self, cat: Catalog, name: str) -> DesignState:
        """The paper's homogeneous GPU baseline `name` (rsd, brsd, brsd_stepahead) of this
        design: the same models, PRM and target, thresholds and workload, with a draft that
        is not on the PRM's GPU moved there (the GPU kind's default precision and serving
        profile: BF16, vLLM with CUDA graphs; a 16-bit KV cache, every weight on the GPU and
        the GPU's own host, its memory options dropped), as the paper's 3 x RTX 3090 baselines
        are to its FPGA systems. A baseline is speculative with a PRM verifier and each role on
        its own device, whatever this state's workflow, verifier and placement."""
        # the paper's baselines verify with a PRM, each role on its own GPU
        over = {k: v for k, v in self.overrides.items() if k not in WORKFLOW_KEYS}
        spec = override_spec(read_source(cat, self.system).spec, over, source="--set")
        if spec.prm_device is not None and spec.draft_device != spec.prm_device:
            gpu = kind_of(cat, spec.prm_device)
            for o in MEMORY_OPTIONS:
                over.pop(f"draft_{o}", None)
            over |= {"draft_device": spec.prm_device, "draft_precision": gpu.default_precision,
                     "draft_serving": gpu.default_software, "fpga_clock_MHz": "",
                     "fpga_memory_channels": "", "fpga_mac_lanes": ""}  # "": absent
        return DesignState(self.system, self.workload, PRESETS[name], over)

    def params(self) -> dict[str, str]:
        """Query parameters: system, workload, schedule, flags that differ from the schedule
        preset, then the overridden keys (the form `dse evaluate --set` takes)."""
        base = PRESETS.get(self.schedule.name) or _nearest_preset(self.schedule)
        out = {"system": self.system, "workload": self.workload, "schedule": base.name}
        for f in FLAGS:
            if getattr(self.schedule, f) != getattr(base, f):
                out[f] = toml_value(getattr(self.schedule, f))
        for k in sorted(self.overrides):
            v = self.overrides[k]
            out[k] = v if isinstance(v, str) else toml_value(v)
        return out

    def set_args(self) -> list[str]:
        """The same design as `dse evaluate --set` arguments."""
        p = self.params()
        return [f"{k}={v}" for k, v in p.items() if k not in ("system", "workload", "schedule")]


def _nearest_preset(s: Schedule) -> Schedule:
    return min(PRESETS.values(), key=lambda p: sum(getattr(p, f) != getattr(s, f) for f in FLAGS))


def applicable(state: DesignState) -> DesignState:
    """The state with only the overrides its design uses: a target-only state keeps its
    target's keys, the generation budget and `workflow` (its schedule is the default preset:
    the target alone runs one way); one whose target verifies drops the PRM's keys; a
    colocation `none` is no override. So one design has one URL, whatever the widgets that do
    not apply to it hold."""
    over = {k: v for k, v in state.overrides.items() if not (k == "colocate" and v == "none")}
    sched = state.schedule
    workflow = over.get("workflow")
    if workflow == "target-only":
        over = {k: v for k, v in over.items() if k in (*TARGET_KEYS, "workflow")}
        sched = PRESETS[DEFAULT_SCHEDULE]
    elif workflow in WIDTH_WORKFLOWS:  # the policy (target keys), its knobs and its PRM
        knobs = ("samples", *(("beam_width",) if workflow == "beam" else ()),
                 *(("aggregation",) if workflow != "majority" else ()))
        prm = PRM_ONLY_KEYS if workflow != "majority" else ()
        over = {k: v for k, v in over.items()
                if k in (*TARGET_KEYS, "workflow", *knobs, *prm)}
        if workflow == "majority":  # no verifier: the preset's PRM keys cleared
            over |= {k: "" for k in PRM_KEYS}
        sched = PRESETS[DEFAULT_SCHEDULE]
    else:
        over = {k: v for k, v in over.items() if k not in ("samples", "beam_width",
                                                           "aggregation")}
        if over.get("verifier") == "target":
            over = {k: v for k, v in over.items() if k not in PRM_ONLY_KEYS}
    return DesignState(state.system, state.workload, sched, over)


def default_state() -> DesignState:
    return DesignState(DEFAULT_SYSTEM, DEFAULT_WORKLOAD, PRESETS[DEFAULT_SCHEDULE])


def state_from_params(cat: Catalog, params: Mapping[str, str]) -> DesignState:
    """Parse query parameters (the inverse of `DesignState.params`); missing ones take the
    defaults. Raises SpecError / UnknownNameError naming the bad parameter."""
    d = default_state()
    system = params.get("system", d.system)
    workload = params.get("workload", d.workload)
    cat.get("system", system)
    cat.get("workload", workload)
    sched_name = params.get("schedule", d.schedule.name)
    if sched_name not in PRESETS:
        raise UnknownNameError("schedule", sched_name, list(PRESETS))
    rest = [f"{k}={v}" for k, v in params.items()
            if k not in ("system", "workload", "schedule", PIN_PARAM, *LOAD_PARAMS)]
    overrides, flags = parse_set(rest)
    for key, value in overrides.items():
        _check_name(cat, key, value)
    state = DesignState(system, workload, PRESETS[sched_name].with_flags(**flags), overrides)
    state.spec(cat)  # validates the values with the catalog loader
    return state


NAME_LOOKUPS = {"_device": "device", "_model": "model", "_serving": "gpu-serving",
                "_engine": "fpga-engine"}


def _check_name(cat: Catalog, key: str, value: Any) -> None:
    """A catalog name in a `*_device`, `*_model`, `*_serving` or `*_engine` parameter must be
    one of that kind ("" clears an optional name); an UnknownNameError lists the valid ones."""
    for suffix, kind in NAME_LOOKUPS.items():
        if key.endswith(suffix) and isinstance(value, str) and value:
            if kind == "device":
                kind_of(cat, value)
            elif kind == "model":
                cat.model(value)
            else:
                cat.get(kind, value)


def _short(e: Exception | str, limit: int = 200) -> str:
    """An error's message (or a reason) cut at a word boundary (a long list of valid names ends
    in '...')."""
    text = str(e)
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def url_state(cat: Catalog, params: Mapping[str, str]) -> tuple[DesignState, list[str]]:
    """A shared link's design, forgiving: each parameter that does not load (an unknown name, a
    value out of range, a device of the wrong kind for its role) is dropped with one warning
    naming it, the rest are kept; parameters that are no design key (a tracking `fbclid`,
    `utm_*`) are ignored with one short note; if the kept ones do not combine, the system as
    shipped is shown and the warning says why. Never raises for a bad link."""
    d = default_state()
    warnings: list[str] = []

    def pick(name: str, default: str, valid: Sequence[str]) -> str:
        value = params.get(name, default)
        if value in valid:
            return value
        warnings.append(f"URL parameter {name}={str(value)[:40]!r}: unknown {name}; "
                        f"showing {default}")
        return default

    system = pick("system", d.system, cat.names("system"))
    workload = pick("workload", d.workload, cat.names("workload"))
    sched_name = pick("schedule", d.schedule.name, list(PRESETS))
    known = {k.toml for k in SCHEMAS["system"].keys} | set(ALIASES) | set(FLAGS)
    rest = {k: v for k, v in params.items()  # the load's parameters: dse.views.load
            if k not in ("system", "workload", "schedule", PIN_PARAM, *LOAD_PARAMS)}
    ignored = sorted(k for k in rest if k not in known)
    if ignored:
        warnings.append("ignored URL parameters that are no design key: "
                        + ", ".join(k[:30] for k in ignored[:5])
                        + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else ""))
    overrides: dict[str, Any] = {}
    flags: dict[str, bool] = {}
    for k, v in rest.items():
        if k not in known:
            continue
        try:
            over, fl = parse_set([f"{k}={v}"])
            for key, value in over.items():
                _check_name(cat, key, value)
        except DseError as e:
            warnings.append(f"URL parameter {k}={str(v)[:40]!r} ignored: {_short(e)}")
            continue
        overrides |= over
        flags |= fl
    state = DesignState(system, workload, PRESETS[sched_name].with_flags(**flags), overrides)
    try:
        spec = state.spec(cat)
    except DseError as e:
        warnings.append(f"the link's settings do not combine ({_short(e)}); showing {system} "
                        "as shipped")
        return DesignState(system, workload, PRESETS[sched_name]), warnings
    refused = _refused_memory(cat, spec, overrides)
    for k, why in refused.items():
        warnings.append(f"URL parameter {k}={str(overrides[k])[:40]!r} ignored: "
                        f"{_short(why)}")
    if refused:
        state = DesignState(system, workload, state.schedule,
                            {k: v for k, v in overrides.items() if k not in refused})
    return state, warnings


def _refused_memory(cat: Catalog, spec: SystemSpec, overrides: Mapping[str, Any]
                    ) -> dict[str, str]:
    """The memory options among the overrides that their role's device kind refuses (a KV
    precision or a host CPU on an FPGA draft, an offload on a unified-memory board: the
    kind's check_memory_options), each with the reason; roles the design does not place are
    left to `applicable`."""
    out: dict[str, str] = {}
    for role in placed_roles(spec):
        try:
            device = str(getattr(spec, f"{role}_device"))
            kind, board = kind_of(cat, device), cat.device(device)
        except UnknownNameError:  # the page reports it with the design's other errors
            continue
        for o in MEMORY_OPTIONS:
            key = f"{role}_{o}"
            if key not in overrides:
                continue
            given: dict[str, Any] = {"kv_precision": None, "offload_fraction": 0.0,
                                     "host_cpu_slowdown": None, o: overrides[key]}
            try:
                kind.check_memory_options(**given, role=role, board=board)
            except SpecError as e:
                out[key] = e.reason
    return out


def encode_pin(state: DesignState) -> str:
    """One pinned design as one query-parameter value: its parameters, URL-encoded."""
    return urlencode(state.params())


def decode_pins(cat: Catalog, values: Sequence[str]) -> tuple[list[DesignState], list[str]]:
    """Pinned designs from the `pin` query-parameter values (at most MAX_PINS, duplicates
    dropped); returns the states and at most two short messages: how many values did not load
    (with the first), how many were beyond the limit."""
    states: list[DesignState] = []
    bad: list[str] = []
    beyond = 0
    for v in values:
        try:
            s = state_from_params(cat, dict(parse_qsl(v, keep_blank_values=True,
                                                     strict_parsing=True)))
        except (DseError, ValueError) as e:
            bad.append(f"{v[:40]!r} ({_short(e, 120)})")
            continue
        if s in states:
            continue
        if len(states) < MAX_PINS:
            states.append(s)
        else:
            beyond += 1
    errors = []
    if bad:
        errors.append(f"{len(bad)} pinned design{'s' if len(bad) > 1 else ''} did not load"
                      f" (the first: {bad[0]})")
    if beyond:
        errors.append(f"{beyond} pinned design{'s' if beyond > 1 else ''} beyond the limit of "
                      f"{MAX_PINS} dropped")
    return states, errors


def system_diff(base: SystemSpec, spec: SystemSpec) -> dict[str, Any]:
    """The TOML keys whose values differ between two systems."""
    a, b = system_to_toml(base), system_to_toml(spec)
    return {k: v for k, v in b.items() if k not in _META_KEYS and a.get(k) != v}


def state_from_design(cat: Catalog, df: DesignFile, workload: str | None = None
                      ) -> DesignState:
    """A design file (e.g. a search candidate) as a state: the catalog system it differs least
    from, plus the differences."""
    names = cat.names("system")
    if df.system.name in names:
        base_name = df.system.name
    else:
        base_name = min(names, key=lambda n: (len(system_diff(_system(cat, n), df.system)), n))
    return DesignState(base_name, df.workload or workload or DEFAULT_WORKLOAD,
                       df.schedule or PRESETS[DEFAULT_SCHEDULE],
                       system_diff(_system(cat, base_name), df.system))


def _system(cat: Catalog, name: str) -> SystemSpec:
    s = cat.get("system", name)
    assert isinstance(s, SystemSpec)
    return s


def unpinned_alternatives(pinned: Sequence[DesignState]) -> list[tuple[int, DesignState]]:
    """The simplest alternative beside a pinned set: each speculative or width design's target
    alone (`DesignState.target_alone`) that is not pinned itself, once, with the index of the
    first design it belongs to (the Compare page's rows `target alone of #n`)."""
    seen = list(pinned)
    out = []
    for i, s in enumerate(pinned):
        if s.is_target_only:
            continue
        alone = s.target_alone()
        if alone not in seen:
            seen.append(alone)
            out.append((i, alone))
    return out


def short_label(state: DesignState, index: int) -> str:
    """A pinned design's name: its place in the set, system, schedule and every key it
    changes, its devices and models first (two designs that differ only by a device must not
    read alike), then its workflow, then the knobs."""
    how = "target alone" if state.is_target_only else state.schedule.name
    label = f"#{index + 1} {state.system} · {how}"
    p = state.params()
    keys = [k for k in p if k not in ("system", "workload", "schedule")]

    def rank(k: str) -> int:
        if k.endswith(("_device", "_model")):
            return 0
        return 1 if k in ("workflow", "verifier", "colocate") else 2

    changes = [f"{k}={p[k]}" for k in sorted(keys, key=rank)]
    return label + (" · " + ", ".join(changes) if changes else "")


def _memory(s: SystemSpec, role: str) -> list[str]:
    """The memory options a system sets for a role, in words: ["KV fp8", "25% of weights in
    host memory", "host CPU 1.5x"] (none set: [])."""
    kv, off, host = (getattr(s, f"{role}_{o}") for o in MEMORY_OPTIONS)
    return [*([f"KV {kv}"] if kv is not None else []),
            *([f"{100 * off:g}% of weights in host memory"] if off else []),
            *([f"host CPU {host:g}x"] if host is not None else [])]


def _how(s: SystemSpec, role: str) -> str:
    """A role's precision and the memory options its system sets: "bf16", "bf16, KV fp8"."""
    return ", ".join([str(getattr(s, f"{role}_precision")), *_memory(s, role)])


def design_label(s: SystemSpec, sched: Schedule | None = None) -> str:
    """One line naming the workflow, the hardware split, the models and the knobs: "target
    alone: ..." for a target-only design; "verifier: the target" when the target judges; the
    roles that share a device; a role's KV cache, weight offload and host CPU where the system
    sets them."""
    tp = f" x{s.target_tp}" if s.target_tp > 1 else ""
    target = f"{s.target_model} on {s.target_device}{tp} ({_how(s, 'target')})"
    if s.workflow_name == "target-only":
        return f"target alone: {target}"
    if s.is_width:
        knobs = f"N={s.samples}" + (f" B={s.beam_width}" if s.beam_width else "")
        prm = (f"PRM {s.prm_model} on {s.prm_device} ({s.aggregation or 'default'} score)"
               if s.prm_model else "majority vote, no verifier")
        return f"{s.workflow} {knobs}: policy {target} | {prm}"
    prm_memory = ", ".join(_memory(s, "prm"))
    parts = [f"draft {s.draft_model} on {s.draft_device} ({_how(s, 'draft')})",
             ("verifier: the target" if s.verifier_name == "target"
              else f"{str(s.verifier_name).upper()} {s.prm_model} on {s.prm_device}"
              + (f" ({prm_memory})" if prm_memory else "")),
             f"target {target}"]
    if s.colocate:
        parts.append(f"{s.colocate} on one device")
    parts.append(f"accept {s.accept_threshold:g}, backtrack {s.backtrack_threshold:g}")
    if sched is not None:
        parts.append(sched.name)
    return " | ".join(parts)
