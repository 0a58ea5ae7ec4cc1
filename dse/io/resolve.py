"""The resolver: one road from a request to a Design and a Report.

A request names a system (a catalog name, a system or design TOML file, or a SystemSpec), the
overrides to apply (system keys by their TOML names, the aliases `fpga.clock_mhz`,
`fpga.channels`, `fpga.mac_lanes`, and the schedule flags), a schedule, a workload and an
evaluator. Every entry point resolves through here: the `dse` commands, `import dse`
(dse.api), the dashboard's view-model (dse.views.state), the search's candidates and the
exporters. So:
- a file is read once (`read_source`), and a design file's schedule and workload become the
  defaults;
- an override replaces one field of the frozen spec after that field's own check (type, range,
  unit conversion: the catalog loader's `check_value`) and the system kind's cross-field check
  (what a workflow needs, colocated roles on one device): no TOML round trip;
- the schedules a design can run follow from its workflow and its colocated roles
  (`runnable_schedules`);
- a report is the engine's `evaluate`, with intervals and provenance attached when asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dse.engine.report import Report
from dse.errors import FlagValueError, SpecError
from dse.io.design_files import ALIASES, ServingSettings, read_design_file
from dse.model.design import Design, budget_misfit, build_design, schedule_conflicts
from dse.model.schedules import FLAGS, PRESETS, Schedule
from dse.model.schedules import schedule as preset
from dse.specs import SCHEMAS, Catalog, check_value, load_spec
from dse.specs.scenario import PRM_KEYS, SystemSpec, WorkloadSpec

SystemRef = str | Path | SystemSpec
WorkloadRef = str | Path | WorkloadSpec


@dataclass(frozen=True)
class Source:
    """A system as read (once): its spec, and a design file's schedule, workload and serving
    settings (None for a catalog name, a plain system file or a spec)."""

    spec: SystemSpec
    schedule: Schedule | None = None
    workload: str | None = None
    serving: ServingSettings | None = None


def read_source(cat: Catalog, system: SystemRef) -> Source:
    """A catalog system name, a system or design TOML file (read once), or a SystemSpec."""
    if isinstance(system, SystemSpec):
        return Source(system)
    if isinstance(system, Path) or str(system).endswith(".toml"):
        df = read_design_file(system)
        return Source(df.system, df.schedule, df.workload, df.serving)
    spec = cat.get("system", str(system))
    if not isinstance(spec, SystemSpec):  # a catalog lookup of kind "system" is one
        raise SpecError(getattr(spec, "path", ""), "kind", 'expected kind = "system"')
    return Source(spec)


def split_overrides(overrides: Mapping[str, Any], *, source: str = "overrides"
                    ) -> tuple[dict[str, Any], dict[str, bool]]:
    """(system keys by their TOML names, schedule flags); aliases resolved, a flag that is
    not a boolean refused."""
    sys_over: dict[str, Any] = {}
    flags: dict[str, bool] = {}
    for key, value in overrides.items():
        key = ALIASES.get(key, key)
        if key in FLAGS:
            if not isinstance(value, bool):
                words = "True or False" if source == "overrides" else "true or false"
                raise SpecError(source, key, f"expected {words}, got {value!r}")
            flags[key] = value
        else:
            sys_over[key] = value
    return sys_over, flags


def edited_path(path: object, source: str) -> str:
    """The path a system changed by `source` (`--set`, "overrides") carries, so an error found
    later names both; `edited_by` recognises it."""
    return f"{path} (with {source})"


def edited_by(path: object, source: str) -> bool:
    return str(path).endswith(edited_path("", source))


def override_spec(s: SystemSpec, overrides: Mapping[str, Any], *, source: str = "overrides"
                  ) -> SystemSpec:
    """The system with some keys (TOML names, TOML units) replaced: each value passes its
    key's check, then the system kind's cross-field check runs on the result; the replaced
    keys' sources say where the values came from. No TOML round trip, no file read."""
    if not overrides:
        return s
    kind = SCHEMAS["system"]
    by_name = {k.toml: k for k in kind.keys}
    where = edited_path(s.path, source)
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in by_name:
            valid = ", ".join(sorted([*by_name, *ALIASES, *FLAGS]))
            raise SpecError(source, str(key)[:60], f"unknown key; valid: {valid}")
        k = by_name[key]
        # None, or "", clears an optional key (`--set draft_engine=`, `--set fpga.clock_mhz=`)
        clear = k.optional and (value is None or (isinstance(value, str) and value == ""))
        changes[k.attr] = None if clear else check_value(source, k, value)
    for attr in _dropped_by_workflow(overrides.get("workflow"), s):
        if attr not in changes:  # a key the new workflow has no use for, unless named too
            changes[attr] = None
    values = {k.attr: changes.get(k.attr, getattr(s, k.attr)) for k in kind.keys}
    if kind.check is not None:
        try:
            kind.check(where, values)
        except SpecError as e:
            if source != "--set":
                raise
            raise FlagValueError("--set", e.key, e.reason) from None
    sources = {**s.sources, **{k: f"set by {source}" for k in overrides}}
    return replace(s, path=where, sources=sources, **changes)


def schedule_misfit(workflow: str, given: str | None, flag: str = "--schedule") -> None:
    """Refuse a schedule asked of a design that runs none: a schedule orders a draft's steps
    and their verification, and a target-only or width design has neither (one line naming
    the flag; silently ignoring it read as if it applied)."""
    from dse.errors import UsageError

    if given is not None and workflow != "speculative":
        sep = "" if flag.endswith("=") else " "
        raise UsageError(f"{flag}{sep}{given}: a {workflow} design runs no schedule (no draft "
                         "steps to verify); leave it out")


def _dropped_by_workflow(workflow: Any, s: SystemSpec) -> tuple[str, ...]:
    """The keys a system's workflow set to `workflow` has no use for (`--set
    workflow=target-only` on a width or speculative design, `workflow=speculative` on a width
    one): cleared as `target_alone` clears them, so the documented way to the alternative
    works from any design."""
    width = ("samples", "beam_width", "aggregation")
    if workflow is None or workflow == s.workflow:
        return ()
    if workflow == "target-only":
        return ("verifier", "colocate", *width, "fpga_clock_hz", "fpga_memory_channels",
                "fpga_mac_lanes")
    if workflow == "speculative":
        return width
    gone = ("colocate", *(("beam_width",) if workflow != "beam" else ()))
    if workflow == "majority":  # no verifier
        gone = (*gone, *PRM_KEYS, "prm_tp", "aggregation")
    return gone


def resolve_design(cat: Catalog, system: SystemRef | Source, *,
                   overrides: Mapping[str, Any] | None = None,
                   schedule: str | Schedule | None = None, source: str = "overrides",
                   check: bool = True) -> Design:
    """The Design of a request. schedule: a preset name or a Schedule; default: the design
    file's, else heteroreason (a colocated design whose schedule cannot run there is refused
    with the reason; `runnable_schedules` picks the ones that can)."""
    src = system if isinstance(system, Source) else read_source(cat, system)
    sys_over, flags = split_overrides(overrides or {}, source=source)
    spec = override_spec(src.spec, sys_over, source=source)
    return build_design(cat, spec, schedule_of(schedule, src.schedule).with_flags(**flags),
                        check=check)


def schedule_of(schedule: str | Schedule | None, default: Schedule | None) -> Schedule:
    """A preset by name, a Schedule as is, else the default, else heteroreason."""
    if isinstance(schedule, Schedule):
        return schedule
    if schedule is not None:
        return preset(schedule)
    return default if default is not None else PRESETS["heteroreason"]


def runnable_schedules(spec: SystemSpec, schedules: Sequence[Schedule]
                       ) -> tuple[list[Schedule], list[str]]:
    """(the schedules the system can run, one note per one it cannot). A target-only design
    runs one way (the first schedule stands for it); a colocated one only the schedules whose
    overlaps its shared devices allow (dse.model.design.schedule_conflicts)."""
    if spec.workflow_name != "speculative":  # target-only and width: one way to run
        return list(schedules[:1]), []
    ok, notes = [], []
    for s in schedules:
        why = schedule_conflicts(spec.colocated, s)
        if why:
            notes.append(f"{s.name} not evaluated: {'; '.join(why)}")
        else:
            ok.append(s)
    return ok, notes


def target_alone(s: SystemSpec) -> SystemSpec:
    """The simplest alternative to a speculative or width system: its target placement alone
    (the draft's build knobs, the verifier, colocation and width knobs dropped)."""
    return replace(s, workflow="target-only", verifier=None, colocate=None, samples=None,
                   beam_width=None, aggregation=None, fpga_clock_hz=None,
                   fpga_memory_channels=None, fpga_mac_lanes=None,
                   sources={**s.sources, "workflow": "the target alone: the baseline"})


def resolve_workload(cat: Catalog, workload: WorkloadRef | None, default: str | None = None,
                     *, flag: str = "workload") -> WorkloadSpec:
    """A workload by catalog name, a workload TOML file, or a WorkloadSpec; None: `default`
    (a design file's), else a UsageError naming `flag`."""
    from dse.errors import UsageError

    if isinstance(workload, WorkloadSpec):
        return workload
    name = workload if workload is not None else default
    if name is None:
        raise UsageError(f"{flag}: required (the design file names no workload)")
    p = Path(name)
    if p.suffix == ".toml":
        spec = load_spec(p)
        if not isinstance(spec, WorkloadSpec):
            raise SpecError(p, "kind", 'expected kind = "workload"')
        return spec
    return cat.workload(str(name))


def report(d: Design, w: WorkloadSpec, *, evaluator: str = "closed-form", problems: int = 5000,
           seed: int = 0, intervals: bool = True) -> Report:
    """The design's report on the workload, with its 90% intervals and provenance (unless
    intervals=False)."""
    from dse.engine.evaluate import evaluate

    check_budget(d, w)
    r = evaluate(d, w, evaluator=evaluator, problems=problems, seed=seed)
    if not intervals:
        return r
    from dse.uncertainty import attach

    return attach(r, d, w)


def check_budget(d: Design, w: WorkloadSpec) -> None:
    """A design whose generation budget cannot hold the workload's prompt and one step is
    refused with one line naming `max_context_tokens` (dse.model.design.budget_misfit): its numbers
    would be for problems it never finishes."""
    why = budget_misfit(d, w)
    if why is not None:
        src = d.system.sources.get("max_context_tokens", "")
        if src == "set by --set":
            raise FlagValueError("--set", "max_context_tokens", why)
        raise SpecError(d.system.path, "max_context_tokens", why)


@dataclass(frozen=True)
class Simulated:
    """A simulation: its report (means, percentiles; intervals when asked), the trace it
    replayed (None for a target-only design: no draft steps or verdicts to record) and the
    device timeline of problem 0."""

    report: Report
    trace: Any
    timeline: list[dict[str, Any]]


def simulate(d: Design, w: WorkloadSpec, *, problems: int = 5000, seed: int = 0,
             trace: Any = None, intervals: bool = True) -> Simulated:
    """The trace-driven simulation of a design: a synthetic trace of `problems` problems drawn
    with `seed`, or the given Trace (a speculative design only), replayed; the report with the
    closed form's relative 90% intervals around the simulated means (unless intervals=False;
    a given trace's measured accuracy: the Wilson interval of its solved share)."""
    from dse.engine.report import finite, report_from_replay
    from dse.engine.simulator import replay, synthetic_trace
    from dse.errors import UsageError
    from dse.model.schedules import Costs

    check_budget(d, w)
    c = Costs(d, w)
    given = trace is not None  # a user's trace: its correctness is measured, not modelled
    if not d.is_speculative:
        from dse.engine.target_only import target_only_replay
        from dse.engine.width import width_replay

        if trace is not None:
            raise UsageError(f"trace: a {d.workflow} design has no draft steps, verdicts or "
                             "rewrites to replay; simulate it without a trace")
        rp = (width_replay(c, problems, seed) if d.is_width
              else target_only_replay(c, problems, seed))
    else:
        trace = trace if trace is not None else synthetic_trace(c, problems, seed)
        rp = replay(c, trace, timeline_problem=0)
    r = finite(report_from_replay(c, rp))
    if intervals:
        from dse.uncertainty import attach

        r = attach(r, d, w)
        if given and r.accuracy is not None:  # measured: the share's own sampling interval
            from dataclasses import replace

            from dse.uncertainty.joint import wilson_pct

            n = int(rp.correct.size)
            r = replace(r, intervals={**r.intervals, "accuracy": list(
                wilson_pct(float(rp.correct.sum()), n))})
    return Simulated(r, trace, list(rp.timeline or []))
