"""A simulated report's interval is around its own value: relative for times and energies,
the same points either side for the accuracy (a few simulated problems can land far from the
closed form's accuracy; their interval must still hold them)."""

from __future__ import annotations

import pytest

from dse.io.resolve import resolve_design, simulate


@pytest.mark.parametrize("problems, seed", [(3, 0), (7, 2), (400, 1)])
def test_simulated_intervals_hold_their_values(cat, problems, seed):
    d = resolve_design(cat, "paper-config1-u280")
    r = simulate(d, cat.workload("math500"), problems=problems, seed=seed).report
    for m, (lo, hi) in r.intervals.items():
        v = getattr(r, m)
        assert lo <= v <= hi, (m, lo, v, hi)
    closed = simulate(d, cat.workload("math500"), problems=problems, seed=seed,
                      intervals=False).report
    assert closed.accuracy == r.accuracy
