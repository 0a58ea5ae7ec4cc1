"""The joint 90% interval of the difference between two designs' metrics.

Two designs that place the same model on the same board under the same software, or run on the
same board, or are judged on the same workload statistics, share those factors (the factor keys
are identities: dse.uncertainty.perturb), so an error in one moves both and largely cancels in
their difference; a factor only one design has moves only its side. First order, as
dse.uncertainty.propagate: each factor of the union is set to its ends (and median) in both
designs at once, the difference's moves combined in quadrature. An accuracy shift belongs to
one (draft, target) pair on one workload: it moves the designs that have it, each scaled by its
own p_accept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from dse.engine.report import Report
from dse.model.design import Design
from dse.specs.scenario import WorkloadSpec
from dse.uncertainty import INTERVAL_METRICS, evaluate_at
from dse.uncertainty.factors import Factor, design_factors
from dse.uncertainty.propagate import (
    F64,
    EvaluateAt,
    combine,
    evaluate_all,
    moves,
    points,
    shift_scale,
)


def difference_interval(a: tuple[Design, Report], b: tuple[Design, Report], w: WorkloadSpec,
                        metrics: Sequence[str] = INTERVAL_METRICS, *,
                        moves_by: str = "closed-form", at_a: EvaluateAt | None = None,
                        at_b: EvaluateAt | None = None) -> dict[str, tuple[float, float]]:
    """The 90% interval of (a's metric - b's metric) for each metric, both designs on the
    workload, around their closed-form reports' difference (module docstring). moves_by: what
    evaluates a factor's moves of a speculative design ("closed-form", or "mean-value": the
    sweep's model, relative to the closed form's value, as the search's intervals;
    dse.uncertainty.evaluate_at); a target-only one is always the closed form's. at_a, at_b:
    each design's `evaluate_at` around its report where the caller has one (e.g. from its
    intervals: the evaluations they made are reused)."""
    (da, ra), (db, rb) = a, b
    fa = {f.key: f for f in design_factors(da, w)}
    fb = {f.key: f for f in design_factors(db, w)}
    union: dict[str, Factor] = {**fb, **fa}
    at_a = at_a or evaluate_at(da, w, metrics, central=ra, moves=moves_by)
    at_b = at_b or evaluate_at(db, w, metrics, central=rb, moves=moves_by)
    f0 = {m: float(getattr(ra, m)) - float(getattr(rb, m)) for m in metrics}
    shifts: dict[str, list[F64]] = {m: [] for m in metrics}
    ups: dict[str, list[F64]] = {m: [] for m in metrics}
    downs: dict[str, list[F64]] = {m: [] for m in metrics}
    moving = {key: f for key, f in union.items() if any(f.moves(m) for m in metrics)}
    asked = [(key, v) for key, f in moving.items() if not f.additive for v in points(f)]
    side_a = [(key, v) for key, v in asked if key in fa]
    side_b = [(key, v) for key, v in asked if key in fb]
    got_a = dict(zip(side_a, evaluate_all(at_a, [{k: v} for k, v in side_a]), strict=True))
    got_b = dict(zip(side_b, evaluate_all(at_b, [{k: v} for k, v in side_b]), strict=True))
    for key, f in moving.items():
        used = [m for m in metrics if f.moves(m)]
        vals: dict[float, Mapping[str, float]] = {}
        for v in points(f):
            if f.additive:  # an accuracy shift, on the side(s) that have it
                ka = float(shift_scale(f, ra.p_accept)) if key in fa else 0.0
                kb = float(shift_scale(f, rb.p_accept)) if key in fb else 0.0
                vals[v] = {"accuracy": f0["accuracy"] + v * (ka - kb)}
                continue
            ma = got_a[key, v] if key in fa else {m: float(getattr(ra, m)) for m in metrics}
            mb = got_b[key, v] if key in fb else {m: float(getattr(rb, m)) for m in metrics}
            vals[v] = {m: float(ma[m]) - float(mb[m]) for m in metrics}
        for m in used:
            s, u, d = moves(f, np.asarray(f0[m]),
                            {v: np.asarray(r[m], dtype=float) for v, r in vals.items()
                             if m in r})
            shifts[m].append(s)
            ups[m].append(u)
            downs[m].append(d)
    out: dict[str, tuple[float, float]] = {}
    for m in metrics:
        lo, hi = combine(f0[m], ups[m], downs[m], shifts[m])
        if m == "accuracy":  # two percentages differ by at most 100 points
            lo, hi = np.maximum(lo, -100.0), np.minimum(hi, 100.0)
        out[m] = (float(lo), float(hi))
    return out


def difference_of_ends(va: float, ia: Sequence[float], vb: float, ib: Sequence[float], *,
                       shared: bool) -> tuple[float, list[float]]:
    """a - b and its 90% interval from each side's value and 90% ends alone, where the
    factors behind the ends are not at hand (the serving model's intervals): `shared` (the
    two run their target on the same board, whose factors dominate both) moves the ends
    together (low minus low, high minus high, the interval also holding a - b); otherwise
    the sides are independent and their half-widths add in quadrature."""
    m = float(va) - float(vb)
    if shared:
        ends = (ia[0] - ib[0], ia[1] - ib[1])
        return m, [min(m, *ends), max(m, *ends)]
    lo = math.hypot(va - ia[0], ib[1] - vb)
    hi = math.hypot(ia[1] - va, vb - ib[0])
    return m, [m - lo, m + hi]


def wilson_pct(solved: float, n: int, level: float = 0.9) -> tuple[float, float]:
    """The Wilson score interval (percent, 90% by default) of a measured share: `solved` of
    `n` problems (a replayed trace's correctness). Unlike the normal approximation it stays
    inside [0, 100] and does not shrink to a point at 0 or n solved (1 of 1: [27.0, 100])."""
    from dse.uncertainty.accuracy_width import z_of

    z = z_of(level)
    p = solved / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100.0 * max(centre - half, 0.0), 100.0 * min(centre + half, 1.0)

