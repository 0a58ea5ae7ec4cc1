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

from dse.errors import UsageError
from dse.specs import Catalog

if TYPE_CHECKING:  # the heavy modules load when a function needs them
    from dse.design import Design
    from dse.engine.report import Report
    from dse.engine.simulator import Trace
    from dse.scenario import SystemSpec, WorkloadSpec
    from dse.schedules import Schedule
    from dse.search import OptimizeResult, Space, SweepResult

EvaluatorName = Literal["closed-form", "simulator"]
Objective = Literal["j_per_token", "latency", "goodput", "accuracy", "cost"]
PathLike = str | Path


# ------------------------------------------------------------------------------- catalog


@cache
def _shipped_catalog() -> Catalog:
    return Catalog.load()


def load_catalog(*dirs: PathLike, shipped: bool = True) -> Catalog:
    """The catalog: the shipped boards, models and scenarios (unless shipped=False) plus every
    TOML file under each of `dirs` (a user's own boards, models, systems, workloads). Every
    file is checked by the strict loader; a bad one raises SpecError naming file and key."""
    if not dirs and shipped:
        return _shipped_catalog()
    return Catalog.load(dirs, shipped=shipped)


def _catalog(catalog: Catalog | None) -> Catalog:
    return catalog if catalog is not None else _shipped_catalog()


def load_workload(workload: str | PathLike | WorkloadSpec, *,
                  catalog: Catalog | None = None) -> WorkloadSpec:
    """A workload by catalog name (gsm8k, math500, gaokao2023en, olympiadbench), a workload
    TOML file, or a WorkloadSpec (returned as is)."""
    from dse.resolve import resolve_workload

    return resolve_workload(_catalog(catalog), workload)


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
    from dse.resolve import resolve_design

    return resolve_design(_catalog(catalog), system, overrides=overrides, schedule=schedule,
                          source="overrides", check=check)


# ------------------------------------------------------------------------------ evaluate


def evaluate(design: Design, workload: str | PathLike | WorkloadSpec, *,
             evaluator: EvaluatorName = "closed-form", problems: int = 5000, seed: int = 0,
             intervals: bool = True, catalog: Catalog | None = None) -> Report:
    """Per-problem metrics of a design on a workload (the one entry point of the engine).

    evaluator: "closed-form" (expected values; milliseconds) or "simulator" (replays `problems`
    synthetic problems drawn with `seed`; adds latency percentiles). intervals: add each
    headline metric's 90% interval and the provenance of each component (`Report.intervals`,
    `Report.provenance`; dse.uncertainty, about 20 more closed-form evaluations). A
    non-finite metric raises DseError instead of returning.
    """
    if evaluator not in ("closed-form", "simulator"):
        raise UsageError(f"evaluator: {evaluator!r} is not one of closed-form, simulator")
    if evaluator == "simulator":
        _check_problems(problems, seed)
    from dse.resolve import report

    return report(design, load_workload(workload, catalog=catalog), evaluator=evaluator,
                  problems=problems, seed=seed, intervals=intervals)


@dataclass(frozen=True)
class Simulation:
    """What `simulate` returns: the report (with percentiles), the trace replayed and the
    timeline of problem 0 (device, role, start_s, end_s intervals for a Gantt chart)."""

    report: Report
    trace: Trace
    timeline: list[Any]


def _check_problems(problems: int, seed: int) -> None:
    from dse.limits import MAX_PROBLEMS

    if isinstance(problems, bool) or not isinstance(problems, int) or not (
            1 <= problems <= MAX_PROBLEMS):
        raise UsageError(f"problems: must be a whole number in 1..{MAX_PROBLEMS}, got "
                         f"{problems!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"seed: must be a whole number >= 0, got {seed!r}")


def simulate(design: Design, workload: str | PathLike | WorkloadSpec, *, problems: int = 5000,
             seed: int = 0, trace: PathLike | Trace | None = None, intervals: bool = True,
             catalog: Catalog | None = None) -> Simulation:
    """Trace-driven simulation: `problems` synthetic problems drawn with `seed` from the
    workload's statistics, or a recorded trace (a JSONL file of a real run, or a Trace).
    intervals: add the closed form's relative 90% intervals around the simulated means and
    the provenance (as `evaluate`)."""
    from dse.engine.simulator import Trace, read_jsonl
    from dse.resolve import simulate as _simulate

    _check_problems(problems, seed)
    w = load_workload(workload, catalog=catalog)
    tr = trace if trace is None or isinstance(trace, Trace) else read_jsonl(trace)
    sim = _simulate(design, w, problems=problems, seed=seed, trace=tr, intervals=intervals)
    return Simulation(sim.report, sim.trace, sim.timeline)


# -------------------------------------------------------------------------------- search


def load_space(space: PathLike | Space | None = None, *,
               catalog: Catalog | None = None) -> Space:
    """A design space: a space TOML file, or the shipped default (None)."""
    from dse.search import Space
    from dse.search import load_space as _load_space

    if isinstance(space, Space):
        return space
    return _load_space(_catalog(catalog), space)


def _constraints(min_accuracy: float | None, max_latency_s: float | None,
                 max_power_w: float | None) -> Any:
    """The bounds as dse.search.Constraints (which checks each against its declared range)."""
    from dse.search import Constraints

    return Constraints(min_accuracy=min_accuracy, max_latency_s=max_latency_s,
                       max_power_w=max_power_w)


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
    from dse.search.objectives import check_confidence

    cat = _catalog(catalog)
    return _sweep(cat, load_space(space, catalog=cat), list(objectives),
                  _constraints(min_accuracy, max_latency_s, max_power_w),
                  confidence=check_confidence(confidence), measured_only=bool(measured_only))


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

    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise UsageError(f"trials: must be a whole number >= 1, got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"seed: must be a whole number >= 0, got {seed!r}")
    from dse.search.objectives import check_confidence

    confidence = check_confidence(confidence)
    cat = _catalog(catalog)
    return _optimize(cat, load_space(space, catalog=cat), list(objectives),
                     _constraints(min_accuracy, max_latency_s, max_power_w), trials=trials,
                     timeout=timeout_s, seed=seed, storage=storage, study_name=study_name,
                     confidence=confidence, measured_only=bool(measured_only))


# -------------------------------------------------------------------------------- export


@dataclass(frozen=True)
class Bundle:
    """The build and serving files of a design (path -> bytes), and where they were written
    (None when only rendered)."""

    files: Mapping[str, bytes]
    path: Path | None


def export(design: Design, workload: str | PathLike | WorkloadSpec, *,
           out: PathLike | None = None, force: bool = False,
           catalog: Catalog | None = None) -> Bundle:
    """Render the design's bundle (HLS config, Vitis link config, vLLM serving files, host
    program config, the predicted report, a manifest) and, with `out`, write it as a new
    directory (an existing bundle there is replaced only with force=True; anything else is
    never overwritten). Same inputs, byte-identical files."""
    from dse.exporters import render_bundle, write_bundle

    cat = _catalog(catalog)
    files = render_bundle(cat, design, load_workload(workload, catalog=cat))
    path = write_bundle(files, out, force) if out is not None else None
    return Bundle(files, path)
