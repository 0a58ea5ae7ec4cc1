"""request_goodput's 90% interval (dse.serving.load.Slo.met_share, goodput_interval): at each
interval end the requests' latencies move by that end's relative move of their means and the
share meeting the SLOs is counted again."""

from __future__ import annotations

import numpy as np
import pytest

from dse.serving.load import Slo, goodput_interval


def test_met_share_by_hand() -> None:
    """Four requests, TTFT 0.1/0.2/0.3/0.4 s and TPOT 10/20/30/40 ms: under ttft 250 ms and
    tpot 25 ms two meet both; the latencies 1.5x slower, only the first (0.15 s, 15 ms)."""
    ttft = np.array([0.1, 0.2, 0.3, 0.4])
    tpot = np.array([0.01, 0.02, 0.03, 0.04])
    e2el = ttft + 100 * tpot
    slo = Slo(ttft_ms=250, tpot_ms=25)
    assert slo.met_share((ttft, tpot, e2el)) == 0.5
    assert slo.met_share((ttft, tpot, e2el), (1.5, 1.5, 1.5)) == 0.25
    assert slo.met_share((ttft, tpot, e2el), (1.0, 0.5, 1.0)) == 0.5  # TTFT binds then
    # the closed form's means: scalars, a share of 0 or 1; a bound not given is not checked
    assert Slo(e2el_ms=1000).met_share((0.1, 0.01, 0.9)) == 1.0
    assert Slo(e2el_ms=1000).met_share((0.1, 0.01, 0.9), (1, 1, 1.2)) == 0.0
    assert Slo().met_share((ttft, tpot, e2el)) == 1.0


def test_goodput_interval_spans_the_centre_and_every_end() -> None:
    lat = (np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.01, 0.02, 0.03, 0.04]),
           np.array([1.0, 2.0, 3.0, 4.0]))
    slo = Slo(ttft_ms=250, tpot_ms=25)
    # 10 requests/s served at the centre: goodput 5; the fast end serves 10 with every
    # latency x0.5 (all four meet), the slow end 8 with x1.5 (one meets)
    assert goodput_interval(5.0, lat, slo, [(10.0, (0.5,) * 3), (8.0, (1.5,) * 3)]) == [
        2.0, 10.0]


@pytest.mark.parametrize("evaluator", ["closed-form", "simulator"])
def test_serve_gives_goodput_an_interval_that_holds_it(evaluator: str) -> None:
    from dse.devices.registry import place
    from dse.serving import Load, serve
    from dse.specs import Catalog

    cat = Catalog.load()
    pl = place(cat, cat.model("qwen2.5-7b-instruct"), "h100-sxm", software="vllm-v1",
               context_tokens=1024 + 128)
    r = serve(pl, Load("rate", 5.0, 1024, 128, 200), evaluator=evaluator,
              slo=Slo(ttft_ms=200, tpot_ms=20))
    lo, hi = r["intervals"]["request_goodput"]
    assert 0 <= lo <= r["request_goodput"] <= hi <= r["intervals"]["request_throughput"][1]
    # without SLOs there is no goodput and no interval of it
    r = serve(pl, Load("rate", 5.0, 1024, 128, 200), evaluator=evaluator)
    assert r["request_goodput"] is None and "request_goodput" not in r["intervals"]


@pytest.mark.parametrize("requests", [1, 3])
def test_a_run_shorter_than_the_steady_batch_is_its_transient(requests: int) -> None:
    """A run of fewer requests than the steady state holds never reaches it: the closed form
    serves them into an emptier engine (one request alone: the simulator's lone request
    exactly), with its interval ends on the same footing; a long run keeps the steady state."""
    from dse.devices.registry import place
    from dse.serving import Load, serve
    from dse.specs import Catalog

    cat = Catalog.load()
    pl = place(cat, cat.model("qwen2.5-7b-instruct"), "h100-sxm", software="vllm-v1",
               context_tokens=1024 + 128)
    short = serve(pl, Load("rate", 5.0, 1024, 128, requests))
    long = serve(pl, Load("rate", 5.0, 1024, 128, 1000))
    assert short["mean_ttft_ms"] < long["mean_ttft_ms"]
    assert short["mean_tpot_ms"] < long["mean_tpot_ms"]
    lo, hi = short["intervals"]["mean_ttft_ms"]
    assert lo <= short["mean_ttft_ms"] <= hi < long["intervals"]["mean_ttft_ms"][1]
    if requests == 1:
        sim = serve(pl, Load("rate", 5.0, 1024, 128, 1), evaluator="simulator")
        for k in ("mean_ttft_ms", "mean_tpot_ms", "mean_e2el_ms"):
            assert short[k] == pytest.approx(sim[k], rel=1e-6)
