"""The simplest alternative beside every answer (STYLE 18): `dse simulate`, `dse compare` and
`dse serve` with a speculative design or token-level speculation each set the target alone
beside it, with the margin and the interval of the difference."""

from __future__ import annotations

import json

import pytest

import dse
from dse.cli import main

BASE = "paper-config1-u280"


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_adds_each_target_alone_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Two designs on one target placement share one target-alone row; its numbers are the
    resolver's target-only design's and its difference from #1 is the joint interval
    `dse compare` gives any design."""
    from dse.uncertainty.joint import difference_interval

    out = _json(["compare", BASE, f"{BASE}:accept_threshold=0.5", "--scenario", "math500"],
                capsys)
    (alt,) = out["target_alone"]
    assert alt["of"] == 1 and alt["label"] == "target alone of #1"
    assert alt["schedule"] == "target-only"
    a = dse.load_design(BASE)
    alone = dse.load_design(BASE, overrides={"workflow": "target-only"})
    ra, rb = dse.evaluate(alone, "math500"), dse.evaluate(a, "math500")
    assert alt["report"]["latency_s_per_problem"] == pytest.approx(
        ra.latency_s_per_problem, rel=1e-12)
    iv = difference_interval((alone, ra), (a, rb), dse.load_workload("math500"),
                             ["accuracy"])["accuracy"]
    assert alt["delta"]["accuracy"] == pytest.approx(ra.accuracy - rb.accuracy)
    assert alt["interval"]["accuracy"] == pytest.approx(list(iv))
    # a second target placement gets its own row; a compared target-only design is its own
    out = _json(["compare", BASE, "paper-config2-v80", "--scenario", "math500"], capsys)
    assert [x["of"] for x in out["target_alone"]] == [1, 2]
    out = _json(["compare", f"{BASE}:workflow=target-only", BASE, "--scenario", "math500"],
                capsys)
    assert out["target_alone"] == []
    assert main(["compare", BASE, "paper-config2-v80", "--scenario", "math500", "--wide"]) == 0
    text = capsys.readouterr().out
    assert text.count("target alone of #1") == 2  # its row and its difference row


def test_simulate_sets_the_target_alone_beside_the_design(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The target alone is simulated on the same problems; the margin is the two simulated
    means' difference and its interval the closed form's joint one moved by the same offsets
    around it (its width kept)."""
    argv = ["simulate", "--system", BASE, "--scenario", "gsm8k", "--problems", "300"]
    out = _json(argv, capsys)
    alone, vs = out["target_alone"], out["vs_target_alone"]
    assert alone["schedule"] == "target-only" and alone["backtracks_per_problem"] == 0
    ev = _json(["evaluate", "--system", BASE, "--scenario", "gsm8k", "--schedule",
                "heteroreason"], capsys)["vs_target_alone"]
    for m in ("latency_s_per_problem", "j_per_token", "accuracy"):
        assert vs["margin"][m] == pytest.approx(out[m] - alone[m], rel=1e-12)
        lo, hi = vs["margin_interval"][m]
        elo, ehi = ev["margin_interval"][m]
        assert hi - lo == pytest.approx(ehi - elo, rel=1e-9)
        assert lo - vs["margin"][m] == pytest.approx(elo - ev["margin"][m], rel=1e-9, abs=1e-9)
        assert vs["decided"][m] == (not lo <= 0 <= hi)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "target alone" in text and "heteroreason - the target alone (joint 90%" in text
    # a target-only design is the alternative itself
    out = _json([*argv, "--set", "workflow=target-only"], capsys)
    assert "vs_target_alone" not in out


def test_serve_a_design_beside_its_target_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """At the same load and replicas: the margins are the two servings' figures' difference,
    the interval from their ends moved together (one target board); below both capacities at a
    rate the throughput is the rate's and is left out."""
    from dse.uncertainty.joint import difference_of_ends

    argv = ["serve", "--system", BASE, "--scenario", "math500", "--rate", "0.2"]
    out = _json(argv, capsys)
    alone = _json(["serve", "--system", BASE, "--scenario", "math500", "--rate", "0.2",
                   "--set", "workflow=target-only"], capsys)
    assert "target_alone" not in alone  # the alternative itself
    vs = out["vs_target_alone"]
    assert "output_throughput" not in vs and not out["saturated"]
    for k in ("mean_e2el_ms", "j_per_token", "cost_usd_per_mtok"):
        assert out["target_alone"][k] == pytest.approx(alone[k], rel=1e-9)
        m, iv = difference_of_ends(out[k], out["intervals"][k], alone[k],
                                   alone["intervals"][k], shared=True)
        assert vs[k]["margin"] == pytest.approx(m) and vs[k]["interval"] == pytest.approx(iv)
        assert iv[0] <= m <= iv[1]
    assert vs["accuracy"]["margin"] == pytest.approx(out["accuracy"] - alone["accuracy"])
    assert vs["accuracy"]["decided"] and vs["accuracy"]["margin"] < 0
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "heteroreason - the target alone at this load (joint 90% interval" in text
    assert "the target alone is better on" in text and "accuracy" in text


def test_serve_token_speculation_beside_the_target_without_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """--speculative-model: the same model, board and load without speculation; past the
    speculative engine's capacity the throughput is the system's and is weighed."""
    base = ["serve", "--model", "qwen2.5-math-7b-instruct", "--device", "h100-sxm",
            "--input-tokens", "100", "--output-tokens", "400"]
    spec = ["--speculative-model", "ngram", "--num-speculative-tokens", "4"]
    out = _json([*base, "--rate", "2", *spec], capsys)
    plain = _json([*base, "--rate", "2"], capsys)
    assert "target_alone" not in plain
    assert out["target_alone"]["mean_e2el_ms"] == pytest.approx(plain["mean_e2el_ms"])
    assert out["vs_target_alone"]["mean_e2el_ms"]["margin"] < 0  # fewer target passes
    assert "accuracy" not in out["vs_target_alone"]  # lossless: the same outputs
    out = _json([*base, "--concurrency", "8", *spec], capsys)
    assert "output_throughput" in out["vs_target_alone"]
    assert main([*base, "--rate", "2", *spec]) == 0
    assert "speculation - the target without speculation at this load" in " ".join(
        capsys.readouterr().out.split())


def test_difference_of_ends_by_hand() -> None:
    """Shared: low minus low, high minus high (widened to hold the margin); independent: the
    half-widths in quadrature (3-4-5)."""
    from dse.uncertainty.joint import difference_of_ends

    assert difference_of_ends(10.0, [8.0, 13.0], 5.0, [4.0, 6.0], shared=True) == (
        5.0, [4.0, 7.0])
    assert difference_of_ends(10.0, [9.0, 11.0], 5.0, [2.0, 9.0], shared=True) == (
        5.0, [2.0, 7.0])
    m, iv = difference_of_ends(10.0, [7.0, 14.0], 5.0, [2.0, 9.0], shared=False)
    assert m == 5.0 and iv == pytest.approx([0.0, 10.0])  # hypot(3, 4), hypot(4, 3)
