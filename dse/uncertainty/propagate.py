"""First-order propagation of the factors' 90% ranges to a metric's 90% interval.

A factor's range [low, high] is read as the 5th and 95th percentiles of its distribution:
log-normal for a multiplier or a concentration (median sqrt(low high)), normal for an
accuracy shift (median (low + high) / 2). The model's own value (`central`, 1 for a
multiplier) need not be the median: a declared one-sided range such as the V80 draft's
[1.0, 1.33] puts it at the low end. Each factor i is evaluated at its median and its two ends
(all others central), which gives a shift s_i = f(mid_i) - f0 and moves a_i = f(high_i) -
f(mid_i), b_i = f(low_i) - f(mid_i). For independent factors whose effects add (first order),
the 90% interval is

    f0 + sum_i s_i + [-sqrt(sum_i dn_i^2), +sqrt(sum_i up_i^2)],
    up_i = max(a_i, b_i, 0),  dn_i = max(-a_i, -b_i, 0),

exact for a sum of independent normal effects (each end is 1.645 sigma_i away), and
asymmetric where the metric is (a schedule's overlap hides a faster PRM, not a slower one).
Everything is numpy over arrays, so a sweep's grid of designs is one pass per evaluation
point. `monte_carlo` draws the same distributions jointly, as the check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dse.uncertainty.factors import Factor

F64 = NDArray[np.float64]
Z90 = 1.6448536269514722  # the standard normal's 95th percentile
Metrics = Mapping[str, "F64 | float"]
EvaluateAt = Callable[[Mapping[str, float]], Metrics]
ACCURACY = "accuracy"


@dataclass(frozen=True)
class BatchAt:
    """An EvaluateAt that also evaluates many points in one go (`many`: a list of factor
    values -> their metrics, in order; e.g. one batched closed form)."""

    one: EvaluateAt
    many: Callable[[Sequence[Mapping[str, float]]], list[Metrics]]

    def __call__(self, values: Mapping[str, float]) -> Metrics:
        return self.one(values)


def evaluate_all(at: EvaluateAt, points: Sequence[Mapping[str, float]]) -> list[Metrics]:
    """`at` of each point, together where `at` can (a BatchAt)."""
    if isinstance(at, BatchAt):
        return at.many(points)
    return [at(v) for v in points]


def shift_scale(f: Factor, p_accept: F64 | float | None) -> F64 | float:
    """How much of an accuracy shift's range applies at p_accept: the chain model is exact in
    the target-only limit (every step rewritten: the target's published solo accuracy), so its
    cross-validated error applies in proportion to the share of committed steps the draft
    wrote, relative to the calibration settings' share (capped at 1, and never below the
    declared floor of the width)."""
    if f.accept_reference is None or p_accept is None or f.high <= 0:
        return 1.0
    share = np.clip(np.asarray(p_accept, dtype=float) / max(f.accept_reference, 1e-12), 0, 1)
    return np.maximum(share, min(f.width_floor / f.high, 1.0))


def median(f: Factor) -> float:
    """The median of the factor's distribution (see the module docstring)."""
    return (f.low + f.high) / 2 if f.additive else float(np.sqrt(f.low * f.high))


def _mirrored(f: Factor) -> bool:
    return abs(median(f) - f.central) <= 1e-12 * max(abs(f.central), 1.0)


def points(f: Factor) -> tuple[float, ...]:
    """The values to evaluate the factor at (its central value needs none): both ends, and
    the median where it is not the central value. Both ends even of a symmetric range: the
    schedules' overlaps (a PRM hidden behind the draft's next step) make a metric flat on one
    side of a kink, which one end mirrored would miss."""
    if _mirrored(f):
        return (f.low, f.high)
    return tuple(v for v in (median(f), f.low, f.high) if v != f.central)


def moves(f: Factor, f0: F64, at: Mapping[float, F64]) -> tuple[F64, F64, F64]:
    """(shift, up, down) of a metric from its values at the factor's `points` (and f0 at the
    central value)."""
    def value(v: float) -> F64:
        return f0 if v == f.central else at[v]

    mid = f0 if _mirrored(f) else value(median(f))
    a, b = value(f.high) - mid, value(f.low) - mid
    return (mid - f0, np.maximum(np.maximum(a, b), 0.0),
            np.maximum(np.maximum(-a, -b), 0.0))


def combine(central: F64 | float, up: Sequence[F64], down: Sequence[F64],
            shift: Sequence[F64] = ()) -> tuple[F64, F64]:
    """(low, high) from the factors' shifts and moves, the moves in quadrature."""
    c = np.asarray(central, dtype=float) + sum(shift, np.zeros(np.shape(central)))
    hi = c + np.sqrt(sum((u * u for u in up), np.zeros_like(c)))
    lo = c - np.sqrt(sum((d * d for d in down), np.zeros_like(c)))
    return lo, hi


def intervals(factors: Sequence[Factor], central: Metrics, at: EvaluateAt,
              metrics: Sequence[str]) -> dict[str, tuple[F64, F64]]:
    """The 90% interval of each metric (arrays broadcast like the central values); accuracy is
    kept within [0, 100] and nothing positive goes below zero. An additive factor (an
    accuracy shift) moves only the accuracy, scaled by `shift_scale` at central["p_accept"]
    where given; device times and powers never move it."""
    f0 = {m: np.asarray(central[m], dtype=float) for m in metrics}
    p_acc = central.get("p_accept")
    parts: dict[str, tuple[list[F64], list[F64], list[F64]]] = {m: ([], [], []) for m in metrics}
    moving = [f for f in factors if any(f.moves(m) for m in metrics)]
    asked = [(f.key, v) for f in moving if not f.additive for v in points(f)]
    done = dict(zip(asked, evaluate_all(at, [{k: v} for k, v in asked]), strict=True))
    for f in moving:
        used = [m for m in metrics if f.moves(m)]
        evaluated: dict[float, Metrics]
        if f.additive:
            k = shift_scale(f, p_acc)
            evaluated = {v: {ACCURACY: f0[ACCURACY] + v * k} for v in points(f)}
        else:
            evaluated = {v: done[f.key, v] for v in points(f)}
        for m in used:
            s, u, d = moves(f, f0[m], {v: np.asarray(r[m], dtype=float)
                                       for v, r in evaluated.items()})
            parts[m][0].append(s)
            parts[m][1].append(u)
            parts[m][2].append(d)
    out = {}
    for m in metrics:
        shift, up, down = parts[m]
        lo, hi = combine(f0[m], up, down, shift)
        if m == ACCURACY:
            lo, hi = np.clip(lo, 0.0, 100.0), np.clip(hi, 0.0, 100.0)
        else:
            lo = np.maximum(lo, 0.0)
        out[m] = (lo, hi)
    return out


def sample(f: Factor, rng: np.random.Generator, n: int) -> F64:
    """n draws whose 5th and 95th percentiles are the factor's range: log-normal for a
    multiplier or a concentration, normal for a shift."""
    z = rng.standard_normal(n)
    if f.additive:
        return np.asarray(median(f) + z * (f.high - f.low) / (2 * Z90))
    return np.asarray(median(f) * np.exp(z * np.log(f.high / f.low) / (2 * Z90)))


def monte_carlo(factors: Sequence[Factor], at: EvaluateAt, metrics: Sequence[str], *,
                draws: int = 400, seed: int = 0) -> dict[str, tuple[float, float]]:
    """The 5th and 95th percentiles of each metric with every factor drawn at once (the
    check of the first-order intervals; a few hundred evaluations, tests only)."""
    rng = np.random.default_rng(seed)
    values = {f.key: sample(f, rng, draws) for f in factors}
    p_acc = at({}).get("p_accept")
    shift = sum((values[f.key] * shift_scale(f, p_acc) for f in factors if f.additive),
                np.zeros(draws))
    rows = {m: np.empty(draws) for m in metrics}
    keep_acc = [f.key for f in factors if not f.additive and f.moves(ACCURACY)]
    for i in range(draws):
        point = {f.key: float(values[f.key][i]) for f in factors if not f.additive}
        r = at(point)
        acc_only = at({k: point[k] for k in keep_acc}) if ACCURACY in rows else r
        for m in metrics:
            v = float(np.asarray(acc_only[m] if m == ACCURACY else r[m]))
            rows[m][i] = v + (shift[i] if m == ACCURACY else 0.0)
    return {m: (float(np.percentile(v, 5)), float(np.percentile(v, 95)))
            for m, v in rows.items()}
