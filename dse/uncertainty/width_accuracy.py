"""The accuracy factor of a width design (best-of-n, voting, step and beam search).

Its 90% half-width combines, in quadrature, the width model's own error and the test set's
binomial spread, as the held-out judgement of the model does (dse.validation.width.judge):
- the model's error grows with the gain it predicts over the policy alone (a method that adds
  little is a small step from a measured accuracy; pass@64 is a long one): the 90% quantile
  line of the absolute cross-validation residuals pooled over every scheme (leave one source,
  policy, verifier, dataset, N out) against the fold's predicted gain, intercept + per_gain x
  |gain| (quantile regression), less in quadrature 1.645 x the median binomial spread of those
  rows, whose own sampling noise is in the residuals already (dse/data/width_cv.json,
  `held_out.h_model`; `model_half_width_points`);
- the test set: 1.645 sqrt(P (1 - P) / n), P the predicted accuracy, n the workload's test
  problems (dse.uncertainty.accuracy_width.binomial_sd_points).
E.g. intercept 3, per_gain 0.6, noise 1.5, a gain of 5 points at P 85% on 500 problems:
model sqrt(6^2 - 1.5^2) = 5.81, sqrt(5.81^2 + (1.645 x 1.6)^2) = 6.4 points.
Status: cross-validated for the fitted methods (best-of-n, weighted-best-of-n, majority) on
a dataset and with a verifier the fit pinned; extrapolated for the searches (no fit-allowed
source prints beam-search accuracies, step search only held-out rows), a dataset the fit
never saw or a verifier with neither a ProcessBench F1 nor a fitted separation. One sample, or
a majority of two, is the policy alone: that design's factor is the target alone's (its
published solo accuracy's binomial spread, the same key, so their difference is exactly 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from dse.core.arrays import F64
from dse.uncertainty import accuracy_width as aw
from dse.uncertainty import evidence as ev
from dse.uncertainty.factors import Factor, _solo_accuracy_factor

if TYPE_CHECKING:
    from dse.model.design import Design
    from dse.specs.scenario import WorkloadSpec

FITTED_METHODS = ("best-of-n", "weighted-best-of-n", "majority")


def model_half_width_points(gain_points: ArrayLike, line: Mapping[str, float]) -> F64:
    """The width model's own 90% error (points) at a predicted gain over the policy alone:
    sqrt(max((intercept + per_gain |gain|)^2 - noise^2, 0)) with `line` the json's
    `held_out.h_model` (module docstring). E.g. intercept 3, per_gain 0.6, noise 1.5, gain -5:
    sqrt(36 - 2.25) = 5.81."""
    g = np.abs(np.asarray(gain_points, dtype=float))
    total = float(line["intercept"]) + float(line["per_gain"]) * g
    return np.asarray(np.sqrt(np.maximum(total ** 2 - float(line["noise"]) ** 2, 0.0)),
                      dtype=float)


def width_accuracy_key(d: Design, w: WorkloadSpec) -> str:
    """accuracy:<workload>:<method>:<policy>:<PRM or none>:<aggregation>; shared by designs of
    any N (one model error for one policy, PRM and method); the policy alone (one sample, a
    majority of two: dse.engine.width.policy_alone): the target alone's key."""
    from dse.engine.width import policy_alone

    if policy_alone(d):
        return f"accuracy:{w.name}:target-only:{d.target.model.name}"
    prm = d.prm_placement.model.name if d.prm_placement is not None else "none"
    agg = d.aggregation if d.prm_placement is not None else "none"
    return f"accuracy:{w.name}:{d.workflow}:{d.target.model.name}:{prm}:{agg}"


def width_accuracy_factor(d: Design, w: WorkloadSpec) -> Factor:
    """The accuracy shift of a width design (module docstring)."""
    from dse.engine.width import policy_alone, width_accuracy
    from dse.model.schedules import Costs

    if policy_alone(d):
        return _solo_accuracy_factor(w, d.target.model.name)
    s = ev.settings()
    acc = width_accuracy(Costs(d, w))
    line = ev.width_cv()["held_out"]["h_model"]
    gain = acc.accuracy_pct - acc.solo_pct
    h_model = float(model_half_width_points(gain, line))
    z = aw.z_of(s.level)
    test = aw.binomial_sd_points(acc.accuracy_pct, w.test_problems)
    hw = max(math.sqrt(h_model ** 2 + (z * test) ** 2), s.accuracy_floor_points)
    why = []
    if d.workflow not in FITTED_METHODS:
        why.append(f"{d.workflow} rests on no fitted row (step search: held-out rows only; "
                   "beam: none published in the fit-allowed sources)")
    if not acc.concentration_fitted:
        why.append(f"dataset {w.dataset!r} outside the fit (the default concentration)")
    if acc.separation_basis == "default":
        why.append(f"{d.prm.model.name} has no ProcessBench F1 on {w.processbench_subset} "
                   "and no fitted separation (the default)")
    status = "extrapolated" if why else "cross-validated"
    verifier = ("no verifier" if acc.separation is None else
                f"{d.prm.model.name} separation {acc.separation:.2f} "
                f"({acc.separation_basis}, {d.aggregation})")
    basis = (f"predicted by the width model (dse/width, scripts/calibrate_width.py) from "
             f"{d.target.model.name}'s {acc.solo_pct:.3g}% alone, {verifier}, concentration "
             f"{acc.concentration:.3g}; 90% within +-{hw:.2g} points = sqrt(model "
             f"{h_model:.2g}^2 (at a gain of {gain:+.2g} points over the policy alone: "
             f"{float(line['intercept']):.2g} + {float(line['per_gain']):.2g} x |gain|, less "
             f"the rows' own noise {float(line['noise']):.2g}, from the pooled cross-"
             f"validation, width_cv.json) + ({z:.3g} x test set {test:.2g})^2) on "
             f"{w.test_problems} problems")
    return Factor(width_accuracy_key(d, w), "accuracy", "accuracy", 0.0, -hw, hw, status,
                  "; ".join([basis, *why]))
