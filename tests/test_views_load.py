"""The Load page's view-model (dse.views.load): the load's URL state, the rate grid, the
alternatives, the curves against `dse serve`, the interval of a difference and the sentences
that say which design wins at the chosen rate (the alternative, plainly, when it does)."""

from __future__ import annotations

import json
import math

import pytest

from dse import views
from dse.cli import main
from dse.views import load as vl


def test_load_state_round_trips_through_its_parameters():
    ls = vl.LoadState(rate=0.3, rate_max=4.0, ttft_ms=None, tpot_ms=50.0, lengths="sharegpt",
                      evaluator="simulator")
    p = ls.params()
    assert p == {"rate": "0.3", "rate_max": "4", "slo_ttft": "0", "slo_tpot": "50",
                 "lengths": "sharegpt", "evaluator": "simulator"}
    assert vl.load_state(p) == (ls, [])
    assert vl.LoadState().params() == {}  # the defaults ride in no URL
    assert "rate" not in ls.curve_params()


@pytest.mark.parametrize("key, value", [("rate", "-1"), ("rate", "abc"), ("rate_max", "0"),
                                        ("lengths", "alpaca"), ("evaluator", "vidur"),
                                        ("slo_ttft", "nan")])
def test_a_bad_load_parameter_is_dropped_with_a_warning_naming_it(key, value):
    ls, warnings = vl.load_state({key: value, "slo_tpot": "40"})
    assert len(warnings) == 1 and f"{key}=" in warnings[0]
    assert ls.tpot_ms == 40.0  # the rest of the link is kept
    assert getattr(ls, vl.LOAD_PARAMS[key]) == getattr(vl.LoadState(), vl.LOAD_PARAMS[key])


def test_the_design_link_ignores_the_load_parameters(cat):
    """A link with both: the design's parser takes its keys and says nothing of the load's."""
    state, warnings = views.url_state(cat, {"accept_threshold": "0.8", "rate": "0.3",
                                            "slo_ttft": "500", "lengths": "sharegpt"})
    assert warnings == [] and state.overrides == {"accept_threshold": 0.8}


def test_rate_grid_spans_the_axis_evenly():
    assert vl.rate_grid(vl.LoadState(rate_max=2.0)) == [0.125 * i for i in range(1, 17)]
    assert len(vl.rate_grid(vl.LoadState(evaluator="simulator"))) == vl.POINTS["simulator"]


def test_alternatives_of_an_fpga_design_name_each_family(cat):
    s = views.default_state()
    alts = vl.alternatives(cat, s, s.design(cat))
    assert list(alts) == ["this design", "target alone", vl.NGRAM,
                          "brsd_stepahead (GPU draft)"]
    fams = [a.design(cat).family for a in alts.values()]
    assert fams == ["fpga-speculative", "target-only", "target-only", "gpu-speculative"]
    alone = s.target_alone()
    assert list(vl.alternatives(cat, alone, alone.design(cat))) == ["this design", vl.NGRAM]


def test_the_ngram_alternative_is_dse_serves_token_speculation(cat, capsys):
    """The token-speculative family's representative: the target alone with n-gram lookup,
    k = 4, the default acceptance: `dse serve --set workflow=target-only --speculative-model
    ngram --num-speculative-tokens 4`, figure for figure."""
    s = views.default_state()
    d, w = s.target_alone().design(cat), cat.get("workload", s.workload)
    ls = vl.LoadState(rate=1.0)
    c = vl.with_rate(vl.serve_curve(vl.NGRAM, d, w, ls), d, w, ls)
    assert c.family == "token-speculative" and "ngram" in c.note
    capsys.readouterr()
    assert main(["serve", "--system", views.DEFAULT_SYSTEM, "--set", "workflow=target-only",
                 "--speculative-model", "ngram", "--num-speculative-tokens", "4", "--rate",
                 "1", "--goodput", "ttft:1000", "tpot:100", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    for k in ("cost_usd_per_mtok", "mean_tpot_ms", "mean_ttft_ms", "request_goodput"):
        assert c.points[1.0][k] == pytest.approx(cli[k], rel=1e-12), k


@pytest.fixture(scope="module")
def curves(cat):
    s = views.default_state()
    w = cat.get("workload", s.workload)
    ls = vl.LoadState(rate=0.3)
    out = {n: vl.with_rate(vl.serve_curve(n, st.design(cat), w, ls), st.design(cat), w, ls)
           for n, st in vl.alternatives(cat, s, s.design(cat)).items()}
    return ls, out


def test_the_chosen_rate_is_dse_serve(curves, capsys):
    """The design's point at 0.3 requests/s is `dse serve --system ... --rate 0.3 --goodput`,
    figure for figure, intervals included."""
    _, cs = curves
    capsys.readouterr()
    assert main(["serve", "--system", views.DEFAULT_SYSTEM, "--rate", "0.3", "--goodput",
                 "ttft:1000", "tpot:100", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    p = cs["this design"].points[0.3]
    for k in ("request_throughput", "output_throughput", "mean_ttft_ms", "mean_tpot_ms",
              "cost_usd_per_mtok", "j_per_token", "request_goodput"):
        assert p[k] == pytest.approx(cli[k], rel=1e-12), k
    assert p["intervals"]["cost_usd_per_mtok"] == pytest.approx(
        cli["intervals"]["cost_usd_per_mtok"], rel=1e-12)


def test_each_curve_stops_at_its_capacity(curves):
    _, cs = curves
    for c in cs.values():
        assert c.points and max(c.points) < c.capacity
        grid = [r for r in vl.rate_grid(vl.LoadState()) if r < c.capacity * (1 - 1e-6)]
        assert set(grid) <= set(c.points)
    # the FPGA design saturates near 0.55 requests/s; the target alone serves the whole axis
    assert cs["this design"].capacity < 1.0 < 2.0 < cs["target alone"].capacity
    rows = vl.curve_rows([cs["this design"]], "mean_ttft_ms")
    assert all(r["low"] <= r["value"] <= r["high"] for r in rows)
    assert vl.curve_rows([cs["this design"]], "p90_ttft_ms") == []  # the closed form: means


def test_latency_metrics_follow_the_evaluator():
    assert vl.latency_metrics("closed-form", "ttft") == ["mean_ttft_ms"]
    assert vl.latency_metrics("simulator", "tpot") == ["median_tpot_ms", "p90_tpot_ms",
                                                       "p99_tpot_ms"]


def test_difference_moves_shared_ends_together_else_in_quadrature():
    a = {"m": 3.0, "intervals": {"m": [2.0, 5.0]}}
    b = {"m": 1.0, "intervals": {"m": [0.5, 2.0]}}
    assert vl.difference(a, b, "m", shared=True) == (2.0, (1.5, 3.0))
    m, (lo, hi) = vl.difference(a, b, "m", shared=False)
    assert m == 2.0 and lo == pytest.approx(2.0 - math.hypot(1.0, 1.0))
    assert hi == pytest.approx(2.0 + math.hypot(2.0, 0.5))
    assert vl.difference({"m": None, "intervals": {}}, b, "m", shared=True) is None


def test_the_verdict_says_plainly_when_the_target_alone_wins(curves):
    """At 0.3 requests/s the FPGA design costs about five times the target alone's $/Mtok,
    the interval of the difference above 0: the page says the alternative wins."""
    ls, cs = curves
    lines = vl.verdict(cs["this design"], cs["target alone"], ls, shared=True)
    assert lines[0].startswith("At 0.3 requests/s, the simplest alternative, the target alone:")
    assert "meets the SLOs" in lines[0]
    assert lines[1].startswith("**The target alone wins at this rate**")
    assert "90% interval of the difference" in lines[1]


def _curve(name, cost, lo, hi, ttft=10.0, cap=1.0, rate=0.5):
    p = {"cost_usd_per_mtok": cost, "mean_ttft_ms": ttft, "mean_tpot_ms": 20.0,
         "intervals": {"cost_usd_per_mtok": [lo, hi]}}
    return vl.Curve(name, "x", cap, {rate: p} if rate < cap else {})


def test_the_verdict_past_capacity_slo_misses_and_ties():
    ls = vl.LoadState(rate=0.5, ttft_ms=100.0, tpot_ms=None)
    alone = _curve("target alone", 1.0, 0.9, 1.1)
    past = vl.verdict(_curve("this design", 0.5, 0.4, 0.6, cap=0.4), alone, ls, shared=True)
    assert "past its capacity (0.4 requests/s" in past[0]
    assert past[1].startswith("**The target alone wins at this rate**: this design cannot")
    slow = vl.verdict(_curve("this design", 0.5, 0.4, 0.6, ttft=300.0), alone, ls, shared=True)
    assert slow[1].startswith("**The target alone wins") and "mean TTFT 300 ms > 100 ms" \
        in slow[1]
    tie = vl.verdict(_curve("this design", 1.05, 0.9, 1.2), alone, ls, shared=True)
    assert "cannot be told apart" in tie[1]
    win = vl.verdict(_curve("this design", 0.5, 0.45, 0.55), alone, ls, shared=True)
    assert win[1].startswith("**This design wins at this rate**")
    assert vl.verdict(alone, None, ls, shared=True)[0].startswith("This design is the target")
    assert "Choose a request rate" in vl.verdict(alone, alone, vl.LoadState(), True)[0]


def test_at_load_rows_carry_the_intervals(curves):
    _, cs = curves
    rows = {r["figure"]: r for r in vl.at_load_rows(cs["this design"].points[0.3])}
    assert rows["cost"]["value"].endswith("$/Mtok") and "-" in rows["cost"]["90% interval"]
    assert set(rows) == {"output throughput", "request throughput", "mean TTFT", "mean TPOT",
                         "cost", "energy"}


def test_sharegpt_lengths_serve_the_target_alone_only(cat):
    s = views.default_state()
    w = cat.get("workload", s.workload)
    ls = vl.LoadState(rate=0.5, lengths="sharegpt")
    with pytest.raises(ValueError, match="workload's problems"):
        vl.serve_at(s.design(cat), w, 0.5, ls)
    p = vl.serve_at(s.target_alone().design(cat), w, 0.5, ls)
    assert p["request_throughput"] == pytest.approx(0.5, rel=0.01) and p["cost_usd_per_mtok"] > 0
