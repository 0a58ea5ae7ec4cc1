"""The search at a load's shortcuts leave its answer alone (issue 39's speed bar): the screen by
a lower bound, the capacity by rounds of rates (`capacity_rate_grid` over `_first_failing`),
the reports and capacities reused between a design's runs. The by-family answer on a small
space is the one from serving every candidate one by one, each from scratch."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dse.api import load_catalog
from dse.devices.registry import place
from dse.search import load_space, sweep
from dse.search.at_load import (
    LOAD_METRICS,
    _family,
    _speculations,
    search_at_load,
    serve_at_load,
)
from dse.search.families import _design, identity
from dse.search.loads import LoadSpec
from dse.serving import Engine, Load, Speculation, vllm_caps
from dse.serving.closed_form import _first_failing, capacity, open_loop

SPACE = str(Path(__file__).parent / "data" / "load-space.toml")


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_first_failing_is_open_loops_first_failure(cat):
    """`_first_failing` iterates every rate at once, drops the rates past a known failure and
    the decided ones, and reuses each iteration's decode-only time: the first failure and the
    kept rates' verdict are the scalar `open_loop`'s, rate by rate, on both sides of the
    capacity."""
    pl = place(cat, cat.model("qwen2.5-math-1.5b-instruct"), "rtx-3090", software="vllm-v1",
               context_tokens=2000)
    ld = Load("rate", 1.0, 99, 392, 1000, 0, None)
    rng = np.random.default_rng(39)
    for spec in (None, Speculation("ngram", 4, 0.6, "test")):
        e = Engine(pl, vllm_caps(pl.memory_bytes, pl.device.name), speculation=spec)
        top = capacity(e, ld).request_rate
        for _ in range(3):
            rates = np.sort(rng.uniform(0.0, 1.3 * top, 48))
            ok = np.array([open_loop(e, ld, float(x)) is not None for x in rates])
            bad = np.flatnonzero(~ok)
            want = int(bad[0]) if bad.size else rates.size
            assert _first_failing(e, ld, rates) == (want, True)
            kept = rates[::-1][:4]  # high rates kept to their end past the first failure
            got = _first_failing(e, ld, np.append(rates, kept), keep=4)
            assert got == (want, all(open_loop(e, ld, float(x)) is not None for x in kept))


@pytest.mark.slow  # about 25 s: every pool design served alone
def test_by_family_is_every_candidate_served_one_by_one(cat):
    """Each family's best at 20 problems/s and its figures: the search's (screened, capacity
    by rounds, reports reused) equal the best of every pool design (and each target-only
    design's default proposers) served alone with `serve_at_load` from one replica up."""
    space = load_space(cat, SPACE)
    pool = sweep(cat, space, ["cost"], pool=True, families=False).pool
    load = LoadSpec(20.0)
    res = search_at_load(cat, space, "cost", pool, load)
    metric, sign = LOAD_METRICS["cost"]
    wl = space.workloads[0][0]
    best: dict[str, tuple[float, object]] = {}
    seen = set()
    for c in pool:
        if identity(c) in seen:
            continue
        seen.add(identity(c))
        fam = _family(cat, c)
        jobs = [(fam, None, None)]
        if fam == "target-only":
            jobs += [("token-speculative", s, x)
                     for s, x in _speculations(cat, space, _design(cat, c), wl)]
        for f, spec, extra in jobs:
            s = serve_at_load(cat, space, c, load, f, speculation=spec, extra=extra)
            if not s.feasible:
                continue
            v = sign * float(s.candidate.metrics[metric])
            if f not in best or v < best[f][0]:
                best[f] = (v, s)
    assert set(best) == set(res.served)
    for f, (_, s) in best.items():
        got = res.served[f]
        assert identity(got.candidate) == identity(s.candidate) and got.proposer == s.proposer
        assert got.replicas == s.replicas
        for k in ("cost_usd_per_mtok", "j_per_token", "mean_ttft_ms", "mean_tpot_ms",
                  "capacity_request_rate"):
            a, b = got.candidate.metrics[k], s.candidate.metrics[k]
            assert a == pytest.approx(b, rel=1e-9) or (a is None and b is None), (f, k)
        for k, (lo, hi) in s.candidate.intervals.items():
            glo, ghi = got.candidate.intervals[k]
            assert math.isclose(glo, lo, rel_tol=1e-9) and math.isclose(ghi, hi, rel_tol=1e-9)
    ranked = [sign * float(s.candidate.metrics[metric]) for s in res.ranked]
    assert ranked == sorted(ranked) and ranked[0] == pytest.approx(min(v for v, _ in
                                                                       best.values()))


def test_parts_with_disjoint_families_combine_to_one_pass(cat):
    """The pool split by family (the target-only designs, with their token speculation, and
    the width designs), each part served on its own and combined: exactly one pass's answer
    (the screen is within a family), as `dse optimize --rate` relies on."""
    from dse.search.at_load import _family, combine, serve_pool

    space = load_space(cat, SPACE)
    pool = sweep(cat, space, ["cost"], pool=True, families=False).pool
    load = LoadSpec(20.0)
    one = search_at_load(cat, space, "cost", pool, load)
    alone = [c for c in pool if _family(cat, c) == "target-only"]
    rest = [c for c in pool if _family(cat, c) != "target-only"]
    assert alone and rest
    got = combine(load, "cost", [serve_pool(cat, space, "cost", p, load) for p in (rest, alone)])
    assert [s.candidate.to_dict() for s in got.ranked] == \
        [s.candidate.to_dict() for s in one.ranked]
    assert [f.to_dict() for f in got.by_family] == [f.to_dict() for f in one.by_family]
    assert (got.infeasible, got.examples, got.n_pool, got.n_served) == \
        (one.infeasible, one.examples, one.n_pool, one.n_served)
