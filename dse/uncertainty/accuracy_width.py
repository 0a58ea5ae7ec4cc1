"""The width of an accuracy interval, term by term (each stated in the provenance).

A predicted accuracy is judged against a measurement on a finite test set, so its 90% interval
combines, in quadrature (standard deviations in points, z = the normal quantile of the level):
- the model's error: the root mean square of the cross-validation residuals that match what the
  prediction extrapolates (`scheme`), less the binomial variance of the measured rows those
  residuals were taken against (the next term adds it back for this dataset's size);
- the test set: the binomial spread sqrt(A (1 - A) / n) of the accuracy A on the dataset's n
  problems (MATH500: about 2 points at 70%).
The published solo accuracies a prediction starts from are measurements too. Their spread is
not added a third time: every residual above was computed from those same solo accuracies, so
it already holds what their noise does to a prediction (and the residuals show that noise
largely cancelling: predictions and measurements share the test set's hard problems). A
target-only design's accuracy is its solo accuracy itself: its interval is that measurement's
binomial spread. E.g. model 1.5 and test set 2.0 points: 1.645 x sqrt(2.25 + 4) = 4.1 points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from dse.model.discrimination import ScoreStats
from dse.specs.scenario import WorkloadSpec


def z_of(level: float) -> float:
    """The two-sided normal quantile: 1.645 at 0.9."""
    return NormalDist().inv_cdf(0.5 + level / 2)


def binomial_sd_points(accuracy_pct: float, n_problems: int) -> float:
    """sqrt(A (1 - A) / n) in points. E.g. 70% on 500 problems: 2.05."""
    a = min(max(accuracy_pct / 100.0, 0.0), 1.0)
    return 100.0 * math.sqrt(a * (1 - a) / max(n_problems, 1))


def model_sd_points(rows: Iterable[Mapping[str, Any]]) -> float:
    """The model's own error from cross-validation rows ({"error_points", "measured",
    "n_problems"}): sqrt(max(mean(e^2) - mean(binomial variance of the measured rows), 0)).
    E.g. residuals 3 and -1 on rows whose binomial sd is 2: sqrt(5 - 4) = 1."""
    e, var = [], []
    for r in rows:
        if r.get("error_points") is None:
            continue
        e.append(float(r["error_points"]))
        var.append(binomial_sd_points(float(r["measured"]), int(r["n_problems"])) ** 2)
    if not e:
        return 0.0
    return math.sqrt(max(float(np.mean(np.square(e))) - float(np.mean(var)), 0.0))


@dataclass(frozen=True)
class Width:
    """The two terms (sd, points), the level's z and the resulting half-widths."""

    model_sd: float
    test_sd: float
    z: float

    @property
    def half_width(self) -> float:
        return self.z * math.sqrt(self.model_sd ** 2 + self.test_sd ** 2)

    @property
    def noise_half_width(self) -> float:
        """Without the model's term: where the target writes every step, only the
        measurement's spread is left."""
        return self.z * self.test_sd

    def describe(self) -> str:
        return (f"90% within +-{self.half_width:.2g} points = {self.z:.3g} x sqrt(model "
                f"{self.model_sd:.2g}^2 + test set {self.test_sd:.2g}^2)")


def forward_accuracy_pct(w: WorkloadSpec, draft: str, target: str, threshold: float,
                         scores: ScoreStats) -> float:
    """The forward-only accuracy at one threshold (beta 0, over the problems' difficulty and
    the workload's steps: dse.model.workflow.chain_accuracy_pct): the accuracy the test-set term is
    taken at."""
    from dse.model.workflow import chain_accuracy_pct, quality_max_steps, steps_distribution

    s_vals, s_p = steps_distribution(w, quality_max_steps(w))
    return float(chain_accuracy_pct(w, draft, target, threshold, threshold, scores, 0.0,
                                    s_vals, s_p))
