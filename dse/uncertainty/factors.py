"""The uncertain factors of one design on one workload, each with its 90% range and what it
rests on.

- Each placement's operation times (decode; prefill and, by the kind, absorb): a multiplier
  whose range is the split-conformal 90% width of its serving family's leave-one-out residuals
  (GPU, dse/data/gpu_cv.json) or of the FPGA designs' residuals (fpga_cv.json), widened where
  the data does not cover the setting; a declared range replaces it where one applies (the V80
  draft).
- Each placement's dynamic power above idle: a declared range (GPU, FPGA).
- The accuracy: a shift in points. A PRM design's combines the model's error from the matching
  accuracy cross-validation (leave one row, pair, PRM or dataset out) with the test set's
  binomial spread (dse.uncertainty.accuracy_width); a target-only design's is its solo
  accuracy's binomial spread; a target verifier's, the 90% width of the
  judge's fit to SpecReason rows (judge_cv.json), under a key of its own (":target-judge"); a
  width design's, the width model's pooled cross-validation error and the test set's
  spread (dse.uncertainty.width_accuracy).
- The PRM score concentration, away from the calibration threshold only; the workload
  statistics that are assumptions (declared).

A factor's key names what its error is shared by (the same placement in two designs, the same
workload), so a ratio of two designs moves both together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from dse.devices import shape
from dse.devices.protocol import Placement
from dse.model.discrimination import shipped
from dse.specs.model import ModelSpec
from dse.specs.scenario import WorkloadSpec, solo_accuracy_pct
from dse.uncertainty import accuracy_width as aw
from dse.uncertainty import evidence as ev
from dse.uncertainty.perturb import device_identity, placement_identity

if TYPE_CHECKING:
    from dse.model.design import Design

Status = str  # one of evidence.STATUSES
RANK = {s: i for i, s in enumerate(ev.STATUSES)}  # calibrated < cross-validated < extrapolated


@dataclass(frozen=True)
class Factor:
    """One uncertain input: its 90% range [low, high] around `central` (a multiplier's central
    value is 1, an accuracy shift's 0)."""

    key: str
    component: str  # what the provenance lists it under: draft, prm, target, init, accuracy, ...
    quantity: str  # time, power, accuracy, prm_concentration, steps_mean
    central: float
    low: float
    high: float
    status: Status
    basis: str
    affects_accuracy: bool = True
    # an accuracy shift's width scales with the share of committed steps the draft wrote,
    # p_accept / accept_reference (capped at 1, never below width_floor): None for a fixed one
    accept_reference: float | None = None
    width_floor: float = 0.0

    @property
    def additive(self) -> bool:
        return self.quantity == "accuracy"

    def moves(self, metric: str) -> bool:
        """Whether the factor can move the metric at all (device times and powers never move
        the accuracy; an accuracy shift moves nothing else)."""
        if metric == "accuracy":
            return self.affects_accuracy and self.quantity not in ("time", "power")
        return not self.additive


def _log_range(half_width: float) -> tuple[float, float]:
    return float(np.exp(-half_width)), float(np.exp(half_width))


@cache
def _shipped_model_params() -> dict[str, int]:
    """Parameters of every shipped model by name (the residual rows name shipped models), read
    once per process: the model files only, not the whole catalog."""
    from dse.specs.catalog import default_catalog_dirs, load_spec
    from dse.specs.model import ModelSpec

    out: dict[str, int] = {}
    for d in (d for d in default_catalog_dirs() if d.name == "models"):
        for f in sorted(d.rglob("*.toml")):
            spec = load_spec(f)
            if isinstance(spec, ModelSpec):
                out[spec.name] = shape.total_params(spec)
    return out


def _model_params(name: str) -> int | None:
    return _shipped_model_params().get(name)


def _declared(quantity: str, **what: str) -> ev.Declared | None:
    hits = [d for d in ev.settings().declared if d.quantity == quantity and d.applies(**what)]
    return max(hits, key=lambda d: len(d.match)) if hits else None


def _gpu_time(p: Placement, op: str, generation: str) -> tuple[float, Status, str]:
    """The GPU evidence of one operation of a placement (remembered: the search asks it for
    every hardware choice, and it depends on the placement only through these names and the
    model's size)."""
    return _gpu_time_of(p.serving, p.device.name, p.model.name, p.precision.name,
                        shape.total_params(p.model), op, generation, p.tp)


@cache
def _gpu_time_of(serving: str, device: str, model: str, precision: str, size: int, op: str,
                 generation: str, tp: int = 1) -> tuple[float, Status, str]:
    """The widths rest on the residuals of the placement's kind of pass, one GPU or tensor
    parallel (evidence.new_source_width); a GPU generation its family never measured takes the width
    that predicting an unmeasured GPU has cost; a model size outside the family's data, a
    stack with no measured point or too few residuals of the extrapolation are widened by the
    declared extrapolation factor."""
    s = ev.settings()
    points = ev.gpu_points()
    measured = [r for r in points if r.profile == serving]
    if not measured:
        w = ev.new_source_width(points, "", op, tp=tp, level=s.level, min_points=s.min_points)
        return (w.log_half_width * s.extrapolation_factor, "extrapolated",
                f"serving {serving!r} has no measured point: {w.basis.split(': ', 1)[-1]}, "
                f"widened x{s.extrapolation_factor:g}")
    family = measured[0].family
    fam_all = [r for r in points if r.family == family]
    gens = {r.generation for r in fam_all}
    w = ev.new_source_width(points, family, op, tp=tp, unseen_gpu=generation not in gens,
                            level=s.level, min_points=s.min_points)
    why: list[str] = []
    if not any(r.op == op for r in fam_all):
        why.append(f"no {op} point in {family}'s data (its {op} terms are derived or assumed)")
    if generation not in gens:
        why.append(f"no {generation} GPU in {family}'s data ({', '.join(sorted(gens))})")
    sizes = [n for r in fam_all if (n := _model_params(r.model)) is not None]
    wide = w.borrowed
    if sizes and not (min(sizes) / s.model_size_margin <= size <= max(sizes)
                      * s.model_size_margin):
        why.append(f"{model} outside {family}'s measured sizes "
                   f"({min(sizes) / 1e9:.2g}-{max(sizes) / 1e9:.2g} B parameters)")
        wide = True
    hw = w.log_half_width * (s.extrapolation_factor if wide else 1.0)
    widened = f"; widened x{s.extrapolation_factor:g}" if wide else ""
    if why or w.borrowed:
        return hw, "extrapolated", "; ".join([*why, w.basis]) + widened
    fitted = (serving, device, model, precision) in ev.gpu_fitted_settings()
    basis = f"{w.basis}, 90% within x{np.exp(hw):.3f}"
    return (hw, "calibrated" if fitted else "cross-validated",
            ("a measured setting; " if fitted else "") + basis)


def _fpga_time(p: Placement, op: str) -> tuple[float, Status, str]:
    """An engine fitted to two or more documents (a class of designs, as hls-stream's HLS
    ports): its own leave-one-source-out residuals, each document's points predicted by a fit
    to the others (the spread the class's sources show). Another design measured on this
    board: the single-design engines' leave-one-out residuals (a fit to a design's other
    points predicting one: how a design's fit carries to another model or context). A board
    the design never ran on: those engines' every residual, the predictions of other boards
    and simulated figures included, widened."""
    s = ev.settings()
    res = ev.fpga_residuals()
    own = [r for r in res if r.engine == p.serving and r.source == "leave-one-source-out"]
    classes = {r.engine for r in res if r.source == "leave-one-source-out"}
    res = tuple(r for r in res if r.engine not in classes)
    measured = ev.fpga_measured_settings()
    on_board = any(e == p.serving and b == p.device.name for e, b, _ in measured)
    if own:
        pool = own
        scope = (f"{len(own)} leave-one-source-out residuals of {p.serving}'s designs"
                 f"{ev.coverage_note(len(own), s.level)}")
    else:
        pool = [r for r in res if r.source == "leave-one-out"] if on_board else list(res)
        scope = (f"{len(pool)} leave-one-out residuals of the FPGA designs"
                 f"{ev.coverage_note(len(pool), s.level)}")
    hw = ev.half_width([r.log_error for r in pool], s.level)
    if (p.serving, p.device.name, p.model.name) in measured:
        return hw, "calibrated", f"a measured setting; {scope}"
    if on_board:
        return hw, "cross-validated", f"{p.serving} measured on {p.device.name}; {scope}"
    if own:
        return (hw * s.extrapolation_factor, "extrapolated",
                f"{p.serving} never measured on {p.device.name}: {scope}, widened "
                f"x{s.extrapolation_factor:g}")
    return (hw * s.extrapolation_factor, "extrapolated",
            f"{p.serving} never measured on {p.device.name}: all {len(pool)} FPGA residuals "
            f"(other boards' predictions included), widened x{s.extrapolation_factor:g}")


def _unmeasured_kind(p: Placement, op: str) -> tuple[float, Status, str]:
    s = ev.settings()
    pool = [r.log_error for r in ev.gpu_residuals() if r.op == op] + [
        r.log_error for r in ev.fpga_residuals()
        if r.op == op and r.source != "leave-one-source-out"]
    hw = ev.half_width(pool, s.level)
    return (hw * s.extrapolation_factor, "extrapolated",
            f"no measurement of a {p.kind} device: all {len(pool)} {op} residuals, widened "
            f"x{s.extrapolation_factor:g}")


# The cross-validation evidence of each device kind (a kind without any is extrapolated).
TIME_EVIDENCE = {
    "gpu": lambda p, op: _gpu_time(p, op, str(getattr(p.device, "generation", ""))),
    "fpga": _fpga_time,
}


def _time_factors(p: Placement, component: str, ops: Sequence[str]) -> list[Factor]:
    """One factor per operation, or one declared range for all of them."""
    ident = placement_identity(p)
    d = _declared("time", device=p.device.name, serving=p.serving, model=p.model.name,
                  kind=p.kind)
    if d is not None:
        return [Factor(f"time:all:{ident}", component, "time", 1.0, d.low, d.high, d.status,
                       f"{' and '.join(ops)} times: declared range {d.name} ({d.source})")]
    out = []
    for op in ops:
        hw, status, basis = TIME_EVIDENCE.get(p.kind, _unmeasured_kind)(p, op)
        lo, hi = _log_range(hw)
        out.append(Factor(f"time:{op}:{ident}", component, "time", 1.0, lo, hi, status,
                          f"{op}: {basis}"))
    return out


def _power_factor(p: Placement, component: str) -> Factor | None:
    d = _declared("power", device=p.device.name, serving=p.serving, kind=p.kind)
    if d is None:
        return None
    return Factor(f"power:{device_identity(p)}", component, "power", 1.0, d.low, d.high,
                  d.status, f"dynamic power: declared range {d.name} ({d.source})",
                  affects_accuracy=False)


def _accuracy_factor(w: WorkloadSpec, draft: str, target: str, verifier: str = "prm",
                     prm: ModelSpec | None = None) -> Factor:
    """The accuracy shift of a speculative design. A PRM verifier's: the model's error from the
    cross-validation that matches what the prediction extrapolates (`prm_scheme`) and the test
    set's binomial spread (dse.uncertainty.accuracy_width); a target
    judge's: its SpecReason rows' cross-validation (judge_cv.json). The model's term scales
    with the share of the chain the draft wrote (p_accept relative to the calibration's)."""
    from dse.model.verifiers import VERIFIERS
    from dse.model.workflow import (  # scipy: not for roofline
        accuracy_provenance,
        step_probabilities,
    )

    s = ev.settings()
    unfit = _dataset_unfit(w, target)
    if verifier == "target":
        status, basis = ev.judge_provenance(w.dataset, draft, target)
        if unfit:
            status, basis = "extrapolated", f"{unfit}; {basis}"
        data = ev.judge_cv()
        scheme = ev.judge_interval_scheme(status, draft, target)
        scores = VERIFIERS[verifier].scores(w, draft, target)
        errs = [r["error_points"] for r in data[scheme]["rows"]
                if r.get("error_points") is not None]
        hw = max(ev.half_width(errs, s.level), s.accuracy_floor_points)
        t0 = ev.JUDGE_REFERENCE_THRESHOLD
        ref = float(step_probabilities(w, draft, target, t0, t0, scores).p_accept)
        return Factor(_accuracy_key(w, draft, target, verifier), "accuracy", "accuracy", 0.0,
                      -hw, hw, status, f"{basis}; {scheme.replace('_', '-')} residuals of the "
                      f"SpecReason rows (judge_cv.json), {len(errs)} rows, 90% within "
                      f"+-{hw:.2g} points at the calibration's p_accept {ref:.2f}, in "
                      "proportion below it", accept_reference=ref,
                      width_floor=s.accuracy_floor_points)
    status, basis = accuracy_provenance(draft, target)
    data = ev.accuracy_cv()
    scheme = prm_scheme(data, w.name, draft, target, prm)
    if scheme == "leave_one_prm_out" and status == "calibrated":
        status, basis = "extrapolated", f"{basis}; a PRM outside the calibration rows"
    if unfit:
        status, basis = "extrapolated", f"{unfit}; {basis}"
    t0 = s.calibration_threshold

    scores = VERIFIERS[verifier].scores(w, draft, target, prm)
    width = aw.Width(aw.model_sd_points(data[scheme]["rows"]), aw.binomial_sd_points(
        aw.forward_accuracy_pct(w, draft, target, t0, scores), w.test_problems),
        aw.z_of(s.level))
    hw = max(width.half_width, s.accuracy_floor_points)
    ref = float(step_probabilities(w, draft, target, t0, t0, scores).p_accept)
    return Factor(_accuracy_key(w, draft, target, verifier), "accuracy", "accuracy", 0.0, -hw,
                  hw, status, f"{basis}; model term from {scheme.replace('_', '-')} residuals "
                  f"({len(data[scheme]['rows'])} rows); {width.describe()} on "
                  f"{w.test_problems} problems at the calibration's p_accept {ref:.2f}, the "
                  "model term in proportion below it", accept_reference=ref,
                  width_floor=max(width.noise_half_width, s.accuracy_floor_points))


def _dataset_unfit(w: WorkloadSpec, target: str) -> str:
    """Why the workload's problem difficulty is not fitted, or "": its dataset is none the
    difficulty model (dse.width.params: the solve-rate concentration every step quality rests
    on) was fitted on, so its default applies (a new dataset, or a misspelt one)."""
    from dse.model.workflow import model_accuracy
    from dse.width.params import shipped

    _, fitted = shipped().concentration_for(w.dataset, model_accuracy(w, target))
    if fitted:
        return ""
    known = ", ".join(sorted(shipped().concentration))
    return (f"dataset {w.dataset!r} is none the difficulty model was fitted on ({known}): "
            "its default concentration applies")


def prm_scheme(data: Mapping[str, Any], workload: str, draft: str, target: str,
               prm: ModelSpec | None) -> str:
    """The cross-validation whose residuals size a PRM design's model error: a pair nobody
    measured in a chain: leave one pair out; a PRM outside the calibration rows: leave one PRM
    out; a dataset outside them: leave one dataset out; else leave one row out (the pair, the
    PRM and the dataset all measured)."""
    from dse.model.workflow import pair_key  # scipy: not for roofline

    rows = data["fit"]["rows"]
    if pair_key(draft, target) not in {r["pair"] for r in rows}:
        return "leave_one_pair_out"
    if prm is None or prm.name not in {r["prm"] for r in rows}:
        return "leave_one_prm_out"
    if workload not in {r["dataset"] for r in rows}:
        return "leave_one_dataset_out"
    return "leave_one_row_out"


def _workload_factors(w: WorkloadSpec, thresholds: Iterable[float], *,
                      prm_scores: bool = True) -> list[Factor]:
    s = ev.settings()
    out = []
    if prm_scores and any(abs(t - s.calibration_threshold) > 1e-9 for t in thresholds):
        d = _declared("prm_concentration", workload=w.name)
        if d is not None:
            kappa = w.prm_concentration or shipped().kappa
            out.append(Factor(f"prm_concentration:{w.name}", "prm_scores", "prm_concentration",
                              kappa, d.low, d.high, d.status,
                              f"thresholds away from {s.calibration_threshold:g}: declared "
                              f"range {d.name} ({d.source})"))
    d = _declared("steps_mean", workload=w.name)
    if d is not None:
        out.append(Factor(f"workload:{w.name}:steps_mean", "workload", "steps_mean", 1.0,
                          d.low, d.high, d.status, f"steps per problem: declared range "
                          f"{d.name} ({d.source})", affects_accuracy=False))
    return out


def placement_factors(p: Placement, component: str = "device",
                      ops: Sequence[str] = ("decode", "prefill")) -> list[Factor]:
    """The time factors (one per operation, or one declared for all) and the dynamic-power
    factor of one placement."""
    out = _time_factors(p, component, ops)
    pf = _power_factor(p, component)
    return out + ([pf] if pf is not None else [])


def design_factors(d: Design, w: WorkloadSpec, *, thresholds: Sequence[float] | None = None
                   ) -> tuple[Factor, ...]:
    """Every uncertain factor of a design on a workload (one per key); thresholds: the accept
    and backtrack thresholds it runs at (default: the design's; a search gives its grid's)."""
    out: dict[str, Factor] = {}
    # a target verifier is the target's placement: its factors are the target's
    roles: Sequence[tuple[str, Placement | None]] = (
        ("draft", d.draft_placement), ("prm", d.prm_placement), ("target", d.target),
        ("init", d.init_gpu))
    for component, p in roles:
        if p is None:
            continue
        ops = ("prefill",) if component in ("prm", "init") else ("decode", "prefill")
        for f in _time_factors(p, component, ops):
            out.setdefault(f.key, f)
        pf = _power_factor(p, component)
        if pf is not None:
            out.setdefault(pf.key, pf)
    for f in accuracy_factors(d, w, thresholds=thresholds):
        out[f.key] = f
    return tuple(out.values())


def accuracy_factors(d: Design, w: WorkloadSpec, *, thresholds: Sequence[float] | None = None
                     ) -> tuple[Factor, ...]:
    """The factors of `design_factors` that can move a design's accuracy: its accuracy shift
    and the workload's (no device time or power factor moves it)."""
    if d.is_width:
        from dse.uncertainty.width_accuracy import width_accuracy_factor

        return (width_accuracy_factor(d, w),)
    if not d.is_speculative:
        return (_solo_accuracy_factor(w, d.target.model.name),)
    acc = _remembered_accuracy_factor(
        w, d.draft.model.name, d.target.model.name, d.verifier.name,
        d.prm_placement.model if d.prm_placement is not None else None)
    ts = (d.accept_threshold, d.backtrack_threshold) if thresholds is None else thresholds
    return (acc, *_workload_factors(w, ts, prm_scores=not d.verifier.is_target))


_ACCURACY_FACTORS: dict[tuple[int, str, str, str, int],
                        tuple[WorkloadSpec, ModelSpec | None, Factor]] = {}


def _remembered_accuracy_factor(w: WorkloadSpec, draft: str, target: str, verifier: str,
                                prm: ModelSpec | None) -> Factor:
    """`_accuracy_factor`, remembered per workload and PRM object: it depends on neither the
    hardware nor the thresholds, and a search asks for it once per hardware choice (1,434
    times in the default sweep, about 1 ms each). Specs are frozen, so one object gives one
    factor; the entry keeps its objects and is used only when they are the very ones asked
    about, so a reused id never returns another workload's factor."""
    key = (id(w), draft, target, verifier, id(prm))
    hit = _ACCURACY_FACTORS.get(key)
    if hit is not None and hit[0] is w and hit[1] is prm:
        return hit[2]
    f = _accuracy_factor(w, draft, target, verifier, prm)
    if len(_ACCURACY_FACTORS) >= 256:
        _ACCURACY_FACTORS.clear()
    _ACCURACY_FACTORS[key] = (w, prm, f)
    return f


def _accuracy_key(w: WorkloadSpec, draft: str, target: str, verifier: str | None) -> str:
    """accuracy:<workload>:<draft>:<target>, with ":target-judge" for a target verifier: a PRM
    design and a target-judge design of one pair rest on different fits (Table III, the
    SpecReason rows), so their accuracy errors are not shared."""
    key = f"accuracy:{w.name}:{draft}:{target}"
    return key + ":target-judge" if verifier == "target" else key


def accuracy_key(d: Design, w: WorkloadSpec) -> str:
    """The key of a design's accuracy factor (`_accuracy_key`; a target-only design's:
    accuracy:<workload>:target-only:<target>)."""
    if d.is_width:
        from dse.uncertainty.width_accuracy import width_accuracy_key

        return width_accuracy_key(d, w)
    if not d.is_speculative:
        return f"accuracy:{w.name}:target-only:{d.target.model.name}"
    return _accuracy_key(w, d.draft.model.name, d.target.model.name, d.verifier.name)


def _solo_accuracy_factor(w: WorkloadSpec, target: str) -> Factor:
    """A target-only design's accuracy is the target's published solo accuracy, a measurement
    on the dataset's test set: its binomial spread sqrt(A (1 - A) / n) is what it carries
    (never below the declared floor of an accuracy width). E.g. 74.2% on 500 problems:
    1.645 x 1.96 = 3.2 points."""
    s = ev.settings()
    src = w.sources.get(f"accuracy.{target}", "the workload's solo accuracy")
    a = solo_accuracy_pct(w, target)
    sd = aw.binomial_sd_points(a, w.test_problems)
    hw = max(aw.z_of(s.level) * sd, s.accuracy_floor_points)
    return Factor(f"accuracy:{w.name}:target-only:{target}", "accuracy", "accuracy", 0.0,
                  -hw, hw, "calibrated",
                  f"published solo accuracy of {target} ({src}); 90% within +-{hw:.2g} "
                  f"points: the binomial spread of {a:g}% on {w.test_problems} problems "
                  f"({sd:.2g} points)")


def provenance(factors: Iterable[Factor]) -> dict[str, dict[str, str]]:
    """Per component: the least certain status among its factors and what each rests on."""
    by: dict[str, list[Factor]] = {}
    for f in factors:
        by.setdefault(f.component, []).append(f)
    return {c: {"status": max((f.status for f in fs), key=RANK.__getitem__),
                "basis": " | ".join(f.basis for f in fs)} for c, fs in by.items()}
