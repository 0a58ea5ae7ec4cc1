"""The batched closed form (one vectorised pass over a design's factor ends) equals the closed
form of each perturbed design, and the intervals it feeds equal those made one evaluation at a
time."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.engine.closed_form import HEADLINE_METRICS, headline_of
from dse.engine.evaluate import evaluate, evaluate_batch, evaluate_headline_batch
from dse.io.design_files import load_system
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.specs import Catalog
from dse.uncertainty import design_factors, evaluate_at
from dse.uncertainty.perturb import batches, scale_design, scale_design_batch
from dse.uncertainty.propagate import intervals, points
from tests.fuzzing import build_case, feasible, random_design_case

CAT = Catalog.load()


def _close(a: Any, b: Any, path: str = "", time_scale_s: float | None = None) -> list[str]:
    """Every float equal to 1e-12 relative; a time (a key ending in `_s`) may also differ by
    1e-12 of the problem's latency: a device's idle time is the latency less its busy time,
    so summation-order noise of the latency (1e-16 relative) is 1e-12 of a small idle time."""
    if time_scale_s is None and isinstance(a, dict):
        time_scale_s = abs(float(a.get("report", a).get("latency_s_per_problem", 0.0)))
    if isinstance(a, dict):
        return [d for k in a for d in _close(a[k], b[k], f"{path}.{k}", time_scale_s)]
    abs_tol = 1e-12 * (time_scale_s or 0.0) if path.endswith("_s") else 0.0
    if isinstance(a, float) and not math.isclose(a, b, rel_tol=1e-12,
                                                 abs_tol=max(abs_tol, 1e-300)):
        return [f"{path}: {a!r} != {b!r}"]
    return []


@pytest.mark.parametrize(("system", "schedule", "workload"), [
    ("paper-config1-u280", "heteroreason", "math500"),
    ("paper-config1-u280", "brsd", "gsm8k"),
    ("paper-config2-v80", "brsd_stepahead", "math500"),
])
def test_batch_equals_each_member(system: str, schedule: str, workload: str) -> None:
    d = build_design(CAT, load_system(CAT, system), PRESETS[schedule])
    w = CAT.workload(workload)
    pts = [{f.key: v} for f in design_factors(d, w) if f.quantity in ("time", "power")
           for v in points(f)]
    pts.append({k: v for p in pts[:3] for k, v in p.items()})  # several factors at once
    assert len(pts) >= 4
    members = [scale_design(d, v) for v in pts]
    got = evaluate_batch(scale_design_batch(d, pts), members, w)
    for r, m in zip(got, members, strict=True):
        diffs = _close(evaluate(m, w).to_dict(), r.to_dict())
        assert not diffs, diffs[:5]
    # the members differ: a batch that ignored its multipliers would give one report
    assert len({r.latency_s_per_problem for r in got}) > 2


@pytest.mark.parametrize("system", ["paper-config1-u280", "paper-config2-v80",
                                    "paper-config1-jetson", "paper-config1-3090"])
@pytest.mark.parametrize("schedule", list(PRESETS))
def test_the_headline_pass_equals_the_full_reports(system: str, schedule: str) -> None:
    """closed_form_headline_batch composes only time, energy above idle and the next head
    start (and takes no stall probability) yet gives every HEADLINE_METRICS value of the
    full batched reports to the bit, for each schedule of four systems at every time and
    power factor end and several at once."""
    d = build_design(CAT, load_system(CAT, system), PRESETS[schedule], check=False)
    w = CAT.workload("math500")
    pts = [{f.key: v} for f in design_factors(d, w) if f.quantity in ("time", "power")
           for v in points(f)]
    pts.append({k: v for p in pts[:3] for k, v in p.items()})
    members = [scale_design(d, v) for v in pts]
    batch = scale_design_batch(d, pts)
    full = evaluate_batch(batch, members, w)
    lean = evaluate_headline_batch(batch, members, w)
    assert lean == [headline_of(r) for r in full]
    assert set(lean[0]) == set(HEADLINE_METRICS)
    assert len({r["j_per_token"] for r in lean}) > 2  # the ends differ


def test_intervals_batched_equal_one_at_a_time() -> None:
    d = build_design(CAT, load_system(CAT, "paper-config1-u280"), PRESETS["heteroreason"])
    w = CAT.workload("math500")
    fs = design_factors(d, w)
    metrics = ["latency_s_per_problem", "j_per_token", "accuracy"]
    central = evaluate(d, w)
    c0 = {m: float(getattr(central, m)) for m in (*metrics, "p_accept")}
    batched = intervals(fs, c0, evaluate_at(d, w, metrics, central=central), metrics)
    one = evaluate_at(d, w, metrics, central=central)
    single = intervals(fs, c0, lambda v: one(v), metrics)  # a plain callable: no batch
    for m in metrics:
        for a, b in zip(batched[m], single[m], strict=True):
            assert math.isclose(float(a), float(b), rel_tol=1e-12), m


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_batches_equal_each_member_on_random_designs(cat, rng: random.Random) -> None:
    """Random designs (tests/fuzzing.py: systems, overrides, schedules, workloads) and random
    multipliers on one to three of their time and power factors per point, a point repeated
    (one shared row) and batches of 1 to 5 rows: every member's batched report equals its own
    closed form."""
    case = random_design_case(cat, rng)
    d = build_case(cat, case)
    if not feasible(d) or not d.is_speculative:
        return
    w = cat.get("workload", case.workload)
    keys = [f.key for f in design_factors(d, w) if f.quantity in ("time", "power")]
    pts = [{k: rng.uniform(0.3, 3.0) for k in rng.sample(keys, rng.randint(1, min(3, len(keys))))}
           for _ in range(rng.randint(1, 6))]
    pts.append(dict(pts[0]))
    seen = []
    for batch, sel, rows in batches(d, pts, rng.randint(1, 5)):
        members = [scale_design(d, pts[i]) for i in sel]
        full = evaluate_batch(batch, members, w, rows)
        for r, m in zip(full, members, strict=True):
            diffs = _close(evaluate(m, w).to_dict(), r.to_dict())
            assert not diffs, (case.describe(), diffs[:5])
        # the headline pass composes less and gives the same headline to the bit
        lean = evaluate_headline_batch(batch, members, w, rows)
        assert lean == [headline_of(r) for r in full], case.describe()
        seen += sel
    assert sorted(seen) == list(range(len(pts)))


# how far the coarse grid's interval ends may sit from the full grid's, as a share of the
# interval's width (docs/uncertainty.md; measured 2.1% at most over every shipped speculative
# system, schedule and workload, a 20th taken as the bound the docs state)
COARSE_END_SHARE = 0.05


def _grid_gap(d: Any, w: Any) -> dict[str, float]:
    """Each interval's largest end move between the coarse and the full grid, over its width."""
    from dse.uncertainty import attach

    r = evaluate(d, w)
    full = attach(r, d, w, at=evaluate_at(d, w, central=r, grid="full")).intervals
    coarse = attach(r, d, w, at=evaluate_at(d, w, central=r, grid="coarse")).intervals
    return {m: max(abs(coarse[m][0] - lo), abs(coarse[m][1] - hi)) / (hi - lo)
            for m, (lo, hi) in full.items() if hi > lo}


@pytest.mark.parametrize("system", ["paper-config1-u280", "paper-config2-v80",
                                    "paper-config1-jetson", "paper-config1-3090"])
def test_coarse_grid_intervals_sit_near_the_full_grids(system: str) -> None:
    """The factor ends' moves on the coarse quadrature (dse.uncertainty.evaluate_at's default)
    put every interval end within COARSE_END_SHARE of its width of the full grid's, on the
    paper's systems under every speculative schedule; the central value is the full grid's."""
    for schedule in PRESETS:
        d = build_design(CAT, load_system(CAT, system), PRESETS[schedule])
        if not d.is_speculative:
            continue
        gap = _grid_gap(d, CAT.workload("math500"))
        assert max(gap.values()) <= COARSE_END_SHARE, (schedule, gap)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_coarse_grid_intervals_on_random_designs(cat, rng: random.Random) -> None:
    """As above on random designs (tests/fuzzing.py: thresholds, budgets, models, devices)."""
    case = random_design_case(cat, rng)
    d = build_case(cat, case)
    if not feasible(d) or not d.is_speculative:
        return
    gap = _grid_gap(d, cat.get("workload", case.workload))
    assert max(gap.values(), default=0.0) <= COARSE_END_SHARE, (case.describe(), gap)


def test_headline_pass_refuses_a_metric_that_is_not_finite() -> None:
    """The headline pass checks the metrics it returns (`finite(r, HEADLINE_METRICS)`): a NaN
    or infinity there comes out as one DseError naming it, never as a number; the fields it
    never reads are not checked."""
    from dataclasses import replace

    from dse.engine import closed_form
    from dse.engine.report import finite
    from dse.errors import DseError

    d = build_design(CAT, load_system(CAT, "paper-config1-u280"), PRESETS["heteroreason"])
    r = evaluate(d, CAT.workload("math500"))
    assert finite(r, closed_form.HEADLINE_METRICS) is r
    with pytest.raises(DseError, match="j_per_token = inf"):
        finite(replace(r, j_per_token=float("inf")), closed_form.HEADLINE_METRICS)
    # a field outside the headline is not read: the headline pass does not check it
    assert finite(replace(r, backtracks_per_problem=float("nan")),
                  closed_form.HEADLINE_METRICS) is not None
