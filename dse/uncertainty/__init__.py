"""Intervals and provenance from declared evidence.

Every prediction carries a 90% interval and a provenance: for each component (each device's
cost, the accuracy, the workload statistics) whether it rests on a calibrated setting, a
cross-validated family or an extrapolation, and on what. The evidence is data
(dse/data/uncertainty.toml and the calibration scripts' cross-validation files, `evidence`);
the factors of a design follow from it (`factors`); they perturb the evaluators' inputs
(`perturb`) and are propagated to first order (`propagate`). docs/uncertainty.md has the
method and the coverage it reaches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from dse.uncertainty.factors import Factor, design_factors, provenance
from dse.uncertainty.perturb import perturb_workload, scale_design
from dse.uncertainty.propagate import EvaluateAt, intervals, monte_carlo

if TYPE_CHECKING:
    from dse.design import Design
    from dse.engine.closed_form import Report
    from dse.scenario import WorkloadSpec

# The headline metrics every report gives an interval for.
INTERVAL_METRICS = ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token",
                    "energy_j_per_problem", "accuracy")

__all__ = ["INTERVAL_METRICS", "Factor", "attach", "design_factors", "evaluate_at",
           "intervals", "monte_carlo", "perturbed", "perturbed_workload", "provenance",
           "scale_design", "shifted_report"]


def perturbed_workload(w: WorkloadSpec, values: Mapping[str, float]) -> WorkloadSpec:
    """The workload with the factors in `values` (key -> value) that concern it applied."""
    from dse.uncertainty.evidence import settings

    return perturb_workload(w, values, settings().calibration_threshold)


def perturbed(d: Design, w: WorkloadSpec, values: Mapping[str, float]
              ) -> tuple[Design, WorkloadSpec]:
    """The design and workload with the factors in `values` (key -> value) applied."""
    return scale_design(d, values), perturbed_workload(w, values)


def shifted_report(d: Design, w: WorkloadSpec, values: Mapping[str, float]
                   ) -> tuple[Design, Report]:
    """The perturbed design and its closed-form report at the factor values, an accuracy
    shift (`accuracy:<workload>:<draft>:<target>`) added to its accuracy."""
    from dse.engine.closed_form import evaluate
    from dse.uncertainty.propagate import shift_scale

    d2, w2 = perturbed(d, w, values)
    r = evaluate(d2, w2)
    key = f"accuracy:{w.name}:{d.draft.model.name}:{d.target.model.name}"
    if key in values and r.accuracy is not None:
        (f,) = [f for f in design_factors(d, w) if f.key == key]
        shift = values[key] * float(shift_scale(f, r.p_accept))
        r = replace(r, accuracy=min(max(r.accuracy + shift, 0.0), 100.0))
    return d2, r


def evaluate_at(d: Design, w: WorkloadSpec, metrics: Sequence[str] = INTERVAL_METRICS
                ) -> EvaluateAt:
    """A function from factor values to the closed form's metrics of the perturbed design."""
    from dse.engine.closed_form import evaluate

    def at(values: Mapping[str, float]) -> dict[str, float]:
        r = evaluate(*perturbed(d, w, values))
        return {m: float(getattr(r, m)) for m in (*metrics, "p_accept")}

    return at


def attach(report: Report, d: Design, w: WorkloadSpec) -> Report:
    """The report with its 90% intervals and provenance. The intervals are the closed form's
    (first order over the design's factors); a simulated report gets the same relative
    interval around its own central value."""
    fs = design_factors(d, w)
    metrics = [m for m in INTERVAL_METRICS if getattr(report, m) is not None]
    at = evaluate_at(d, w, metrics)
    central = at({}) if report.evaluator != "closed-form" else {
        m: float(getattr(report, m)) for m in (*metrics, "p_accept")}
    iv = intervals(fs, central, at, metrics)
    out: dict[str, list[float]] = {}
    for m in metrics:
        lo, hi = (float(x) for x in iv[m])
        c0, v = float(central[m]), float(getattr(report, m))
        if report.evaluator != "closed-form" and c0 != 0 and m != "accuracy":
            lo, hi = lo * v / c0, hi * v / c0
        out[m] = [lo, hi]
    prov = provenance(fs)
    return replace(report, intervals=out, provenance=prov)
