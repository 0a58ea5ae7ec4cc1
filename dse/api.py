"""The public Python API: what `import dse` gives a notebook or a script.

Every function is keyword-only after its subject, typed, and returns frozen result objects; none
prints, reads argv, changes global logging or draws an unseeded random number. Names are
resolved against a catalog: the shipped one (boards, models, scenarios, loaded once per process)
unless `catalog=` is given (`load_catalog(dir, ...)` adds user directories).

    >>> import dse
    >>> design = dse.load_design("paper-config1-u280", schedule="heteroreason")
    >>> report = dse.evaluate(design, workload="math500")
    >>> round(report.latency_s_per_problem, 2) > 0
    True

See docs/python-api.md for every function with examples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dse.core import arguments as arg
from dse.core.limits import MAX_INT, MAX_PROBLEMS, MAX_SEED
from dse.errors import ArgumentError
from dse.specs import Catalog

if TYPE_CHECKING:  # the heavy modules load when a function needs them
    from dse.engine.report import Report
    from dse.engine.simulator import Trace
    from dse.model.design import Design
    from dse.model.schedules import Schedule
    from dse.search import OptimizeResult, Space, SweepResult
    from dse.specs.scenario import SystemSpec, WorkloadSpec

EvaluatorName = Literal["closed-form", "simulator"]
Objective = Literal["j_per_token", "latency", "goodput", "accuracy", "cost"]
PathLike = str | Path
STUDY_NAME_CHARS = 512  # Optuna's RDB storage holds study names of at most 512 characters


# ------------------------------------------------------------------------------- catalog


@cache
def _shipped_catalog() -> Catalog:
    return Catalog.load()


def load_catalog(*dirs: PathLike, shipped: bool = True) -> Catalog:
    """The catalog: the shipped boards, models and scenarios (unless shipped=False) plus every
    TOML file under each of `dirs` (a user's own boards, models, systems, workloads). Every
    file is checked by the strict loader; a bad one raises SpecError naming file and key."""
    paths = [arg.path(f"dirs[{i}]", d) for i, d in enumerate(dirs)]
    if not paths and arg.flag("shipped", shipped):
        return _shipped_catalog()
    return Catalog.load(paths, shipped=arg.flag("shipped", shipped))


def _catalog(catalog: Catalog | None) -> Catalog:
    checked = arg.optional_instance("catalog", catalog, Catalog,
                                    "a Catalog (from dse.load_catalog) or None")
    return checked if checked is not None else _shipped_catalog()


def _workload_ref(workload: Any) -> Any:
    from dse.specs.scenario import WorkloadSpec

    return arg.name_or_path("workload", workload, WorkloadSpec,
                            "a workload name, a workload TOML path or a WorkloadSpec")


def _design_ref(design: Any) -> Any:
    """A `design` argument, checked: a Design as is, else what the command line takes (a
    system name, a system or design TOML path) or a SystemSpec, resolved by `_design`."""
    from dse.model.design import Design
    from dse.specs.scenario import SystemSpec

    if isinstance(design, Design):
        return design
    return arg.name_or_path("design", design, SystemSpec,
                            "a Design (from dse.load_design), a system name, a system or "
                            "design TOML path, or a SystemSpec")


def _design(ref: Any, catalog: Catalog | None) -> Design:
    """The Design of a checked `design` argument (dse.io.resolve, as `load_design` with its
    defaults: the design file's schedule, else heteroreason)."""
    from dse.io.resolve import resolve_design
    from dse.model.design import Design

    if isinstance(ref, Design):
        return ref
    return resolve_design(_catalog(catalog), ref)


def load_workload(workload: str | PathLike | WorkloadSpec, *,
                  catalog: Catalog | None = None) -> WorkloadSpec:
    """A workload by catalog name (gsm8k, math500, gaokao2023en, olympiadbench), a workload
    TOML file, or a WorkloadSpec (returned as is)."""
    from dse.io.resolve import resolve_workload

    cat = _catalog(catalog)
    return resolve_workload(cat, _workload_ref(workload))


# -------------------------------------------------------------------------------- design


def load_design(system: str | PathLike | SystemSpec, *, catalog: Catalog | None = None,
                schedule: str | Schedule | None = None,
                overrides: Mapping[str, Any] | None = None, check: bool = True) -> Design:
    """A Design: a named system (e.g. "paper-config1-u280"), a system or design TOML file
    (`best.toml` from `dse optimize --out`), or a SystemSpec, resolved against the catalog.

    schedule: a preset name (rsd, brsd, brsd_stepahead, heteroreason) or a Schedule; default:
    the design file's schedule, else heteroreason.
    overrides: system keys by their TOML names (`accept_threshold`, `fpga_clock_MHz`,
    `target_device`, ...), the aliases `fpga.clock_mhz`, `fpga.channels`, `fpga.mac_lanes`, and
    the schedule flags `backtracking`, `step_ahead`, `shadow_sync` (booleans). Values are
    checked by the same strict loader as the catalog files.
    check: raise InfeasibleError (with every reason) when the design cannot run.
    """
    from dse.io.resolve import resolve_design
    from dse.model.schedules import Schedule
    from dse.specs.scenario import SystemSpec

    cat = _catalog(catalog)
    ref = arg.name_or_path("system", system, SystemSpec,
                           "a system name, a system or design TOML path, or a SystemSpec")
    if schedule is not None and not isinstance(schedule, Schedule):
        if not isinstance(schedule, str):
            raise ArgumentError("schedule", "expected a schedule name (rsd, brsd, "
                                "brsd_stepahead, heteroreason), a Schedule or None, got "
                                f"{arg.shown(schedule)}")
        arg.text("schedule", schedule, max_chars=100)
    return resolve_design(cat, ref, overrides=arg.overrides("overrides", overrides),
                          schedule=schedule, source="overrides", check=arg.flag("check", check))


# ------------------------------------------------------------------------------ evaluate


def evaluate(design: Design | str | PathLike | SystemSpec,
             workload: str | PathLike | WorkloadSpec, *,
             evaluator: EvaluatorName = "closed-form", problems: int = 5000, seed: int = 0,
             intervals: bool = True, catalog: Catalog | None = None) -> Report:
    """Per-problem metrics of a design on a workload (the one entry point of the engine).

    design: a Design (`load_design`), or what the command line takes, resolved as
    `load_design` does with its defaults: a system name ("paper-config1-u280"), a system or
    design TOML path (`best.toml`), or a SystemSpec.
    evaluator: "closed-form" (expected values; milliseconds) or "simulator" (replays `problems`
    synthetic problems drawn with `seed`; adds latency percentiles). intervals: add each
    headline metric's 90% interval and the provenance of each component (`Report.intervals`,
    `Report.provenance`; dse.uncertainty, about 20 more closed-form evaluations). A
    non-finite metric raises DseError instead of returning.
    """
    ref = _design_ref(design)
    arg.choice("evaluator", evaluator, ("closed-form", "simulator"))
    _check_problems(problems, seed)
    arg.flag("intervals", intervals)
    from dse.io.resolve import report

    w = load_workload(workload, catalog=catalog)
    return report(_design(ref, catalog), w, evaluator=evaluator, problems=problems, seed=seed,
                  intervals=intervals)


@dataclass(frozen=True)
class Simulation:
    """What `simulate` returns: the report (with percentiles), the trace replayed and the
    timeline of problem 0 (device, role, start_s, end_s intervals for a Gantt chart)."""

    report: Report
    trace: Trace
    timeline: list[Any]


def _check_problems(problems: int, seed: int) -> None:
    arg.whole("problems", problems, 1, MAX_PROBLEMS)
    arg.whole("seed", seed, 0, MAX_SEED)


def simulate(design: Design | str | PathLike | SystemSpec,
             workload: str | PathLike | WorkloadSpec, *, problems: int = 5000,
             seed: int = 0, trace: PathLike | Trace | None = None, intervals: bool = True,
             catalog: Catalog | None = None) -> Simulation:
    """Trace-driven simulation of a design (as `evaluate`: a Design, a system name, a system
    or design TOML path, or a SystemSpec): `problems` synthetic problems drawn with `seed` from
    the workload's statistics, or a recorded trace (a JSONL file of a real run, or a Trace).
    intervals: add the closed form's relative 90% intervals around the simulated means and
    the provenance (as `evaluate`)."""
    from dse.engine.simulator import Trace, read_jsonl
    from dse.io.resolve import simulate as _simulate

    ref = _design_ref(design)
    _check_problems(problems, seed)
    arg.flag("intervals", intervals)
    if trace is not None and not isinstance(trace, Trace):
        trace = arg.name_or_path("trace", trace, Trace, "a JSONL trace path or a Trace")
    w = load_workload(workload, catalog=catalog)
    d = _design(ref, catalog)
    tr = trace if trace is None or isinstance(trace, Trace) else read_jsonl(trace)
    sim = _simulate(d, w, problems=problems, seed=seed, trace=tr, intervals=intervals)
    return Simulation(sim.report, sim.trace, sim.timeline)


# -------------------------------------------------------------------------------- search


def load_space(space: PathLike | Space | None = None, *,
               catalog: Catalog | None = None) -> Space:
    """A design space: a space TOML file, or the shipped default (None)."""
    from dse.search import Space
    from dse.search import load_space as _load_space

    cat = _catalog(catalog)
    if isinstance(space, Space):
        return space
    return _load_space(cat, arg.optional_path("space", space))


def _constraints(min_accuracy: float | None, max_latency_s: float | None,
                 max_power_w: float | None) -> Any:
    """The bounds as dse.search.Constraints (which checks each against its declared range)."""
    from dse.search import Constraints

    return Constraints(min_accuracy=arg.optional_real("min_accuracy", min_accuracy),
                       max_latency_s=arg.optional_real("max_latency_s", max_latency_s),
                       max_power_w=arg.optional_real("max_power_w", max_power_w))


def _search_args(space: Any, objectives: Any, confidence: Any, measured_only: Any,
                 catalog: Any) -> tuple[Catalog, Space | Path | None, list[str], float, bool]:
    """The arguments sweep and optimize share, checked before anything is loaded."""
    from dse.search import Space
    from dse.search.objectives import OBJECTIVES, check_confidence

    cat = _catalog(catalog)
    sp = space if isinstance(space, Space) else arg.optional_path("space", space)
    objs = arg.choices("objectives", objectives, list(OBJECTIVES))
    conf = arg.real("confidence", confidence)
    if not 0.5 <= conf < 1:  # dse.search.objectives.check_confidence's range
        raise ArgumentError("confidence", f"must be a number in [0.5, 1), got "
                            f"{arg.shown(confidence)}")
    check_confidence(conf)
    return cat, sp, objs, conf, arg.flag("measured_only", measured_only)


def sweep(space: PathLike | Space | None = None, *,
          objectives: Sequence[Objective] = ("j_per_token",),
          min_accuracy: float | None = None, max_latency_s: float | None = None,
          max_power_w: float | None = None, confidence: float = 0.9,
          measured_only: bool = False, catalog: Catalog | None = None) -> SweepResult:
    """Every design of the space (vectorised mean-value model): the exact optimum of one
    objective, or the exact Pareto front of several, under the constraints (min_accuracy in
    percent, max_latency_s per problem, max_power_w average system power; None: the space's
    defaults). Constraints are checked at the pessimistic end of each metric's interval at
    `confidence` in [0.5, 1) (0.9: the end of the 90% interval; 0.5: central values); designs
    are ranked by central values. The designs returned (the best, the front) carry the
    accurate closed form's metrics with their `intervals` and `provenance`, re-ranked by them
    (dse.search.shown; the mean-value figures in `metrics["mean_value_diagnostic"]`).
    `by_family`: each family's best (target-only, gpu-speculative, fpga-speculative) beside
    the winner, with its margin and the joint 90% interval of the difference.
    measured_only: only hardware whose every device has a published measurement.
    """
    from dse.search import sweep as _sweep

    cat, sp, objs, conf, measured = _search_args(space, objectives, confidence, measured_only,
                                                 catalog)
    cons = _constraints(min_accuracy, max_latency_s, max_power_w)
    return _sweep(cat, load_space(sp, catalog=cat), objs, cons, confidence=conf,
                  measured_only=measured)


def optimize(space: PathLike | Space | None = None, *,
             objectives: Sequence[Objective] = ("j_per_token",), trials: int = 200,
             timeout_s: float | None = None, seed: int = 0, storage: str | None = None,
             study_name: str | None = None, min_accuracy: float | None = None,
             max_latency_s: float | None = None, max_power_w: float | None = None,
             confidence: float = 0.9, measured_only: bool = False,
             catalog: Catalog | None = None) -> OptimizeResult:
    """Optuna search of the space until the study holds `trials` completed trials (or
    `timeout_s` passes), with a TPE sampler seeded by `seed`. Constraints are checked at the
    pessimistic end of each metric's interval at `confidence` (as `sweep`).

    storage: None keeps the study in memory (gone with the process); a SQLAlchemy URL
    (sqlite:///studies.db, postgresql://...) makes it resumable and shareable. The `dse optimize`
    command defaults to sqlite:///dse-studies.db instead.
    """
    from dse.search import optimize as _optimize

    cat, sp, objs, conf, measured = _search_args(space, objectives, confidence, measured_only,
                                                 catalog)
    arg.whole("trials", trials, 1, MAX_INT)
    timeout = arg.optional_real("timeout_s", timeout_s, positive=True)
    arg.whole("seed", seed, 0, MAX_SEED)
    if storage is not None:
        from dse.io.outputs import check_storage

        check_storage("storage", arg.text("storage", storage))
    if study_name is not None:
        arg.text("study_name", study_name, max_chars=STUDY_NAME_CHARS)
    cons = _constraints(min_accuracy, max_latency_s, max_power_w)
    return _optimize(cat, load_space(sp, catalog=cat), objs, cons, trials=trials,
                     timeout=timeout, seed=seed, storage=storage, study_name=study_name,
                     confidence=conf, measured_only=measured)


# -------------------------------------------------------------------------------- export


@dataclass(frozen=True)
class Bundle:
    """The build and serving files of a design (path -> bytes), and where they were written
    (None when only rendered)."""

    files: Mapping[str, bytes]
    path: Path | None


def export(design: Design | str | PathLike | SystemSpec,
           workload: str | PathLike | WorkloadSpec, *,
           out: PathLike | None = None, force: bool = False,
           catalog: Catalog | None = None) -> Bundle:
    """Render a design's bundle (HLS config, Vitis link config, vLLM serving files, host
    program config, the predicted report, a manifest) and, with `out`, write it as a new
    directory (an existing bundle there is replaced only with force=True; anything else is
    never overwritten). Same inputs, byte-identical files. design: as `evaluate` (a Design, a
    system name, a system or design TOML path, or a SystemSpec)."""
    from dse.exporters import render_bundle, write_bundle
    from dse.io.resolve import read_source
    from dse.model.design import Design
    from dse.specs.scenario import SystemSpec

    ref = _design_ref(design)
    cat = _catalog(catalog)
    out_dir = arg.optional_path("out", out)
    arg.flag("force", force)
    if out_dir is not None:  # refused before rendering, with the writer's own rules
        from dse.io.outputs import check_output_dir

        check_output_dir("out", out_dir, force=force, whole_marker="manifest.json")
    w = load_workload(workload, catalog=cat)
    # a design file read once: its [serving] table (a design chosen at a load) travels along
    src = None if isinstance(ref, Design | SystemSpec) else read_source(cat, ref)
    files = render_bundle(cat, _design(src or ref, cat), w,
                          serving=None if src is None else src.serving)
    path = write_bundle(files, out_dir, force) if out_dir is not None else None
    return Bundle(files, path)
