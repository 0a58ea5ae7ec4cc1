"""Pareto fronts: the non-dominated rows of a value matrix, exactly, for any number of
objectives (sweep's front over the grid, optimize's front over a study's trials)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dse.core.arrays import F64


def pareto_mask(values: F64) -> NDArray[np.bool_]:
    """Non-dominated rows of values [n, m] (all minimised); exact duplicates keep one."""
    n, m = values.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    if m == 1:
        out = np.zeros(n, dtype=bool)
        out[int(np.argmin(values[:, 0]))] = True
        return out
    if m == 2:
        order = np.lexsort((values[:, 1], values[:, 0]))
        y = values[order, 1]
        prev_min = np.minimum.accumulate(np.concatenate([[np.inf], y[:-1]]))
        keep = y < prev_min
        out = np.zeros(n, dtype=bool)
        out[order[keep]] = True
        return out
    # m >= 3: sweep candidates in lexicographic order; each survivor removes what it dominates
    order = np.lexsort(values.T[::-1])
    pts = values[order]
    idx = np.arange(n)
    i = 0
    while i < len(pts):
        dominated = np.all(pts >= pts[i], axis=1) & np.any(pts > pts[i], axis=1)
        dup = np.all(pts == pts[i], axis=1)
        dup[: i + 1] = False
        keep = ~(dominated | dup)
        pts, idx = pts[keep], idx[keep]
        i = int(keep[: i + 1].sum())
    out = np.zeros(n, dtype=bool)
    out[order[idx]] = True
    return out
