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
    around it (its width kept; the accuracy's widened by each side's draw of its problems)."""
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
        assert vs["decided"][m] == (not lo <= 0 <= hi)
        if m == "accuracy":  # 300 problems a side: each draw widens it
            assert lo - vs["margin"][m] < elo - ev["margin"][m]
            assert hi - vs["margin"][m] > ehi - ev["margin"][m]
            continue
        assert hi - lo == pytest.approx(ehi - elo, rel=1e-9)
        assert lo - vs["margin"][m] == pytest.approx(elo - ev["margin"][m], rel=1e-9, abs=1e-9)
    # one problem a side: the draw alone spans most of the range; the margin stays in +-100
    one = _json(["simulate", "--system", BASE, "--scenario", "gsm8k", "--problems", "1"],
                capsys)
    lo, hi = one["intervals"]["accuracy"]
    lo300, hi300 = out["intervals"]["accuracy"]
    assert hi - lo > 3 * (hi300 - lo300)
    lo, hi = one["vs_target_alone"]["margin_interval"]["accuracy"]
    assert -100 <= lo < 0 < hi <= 100
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


def test_simulate_a_trace_beside_the_closed_form_target_alone(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A replayed trace's problems are not the workload's draws: the target alone is its
    closed form. Without correctness the trace has no accuracy, so no accuracy margin (it
    used to crash); with it, the accuracy is the measured share with its Wilson interval,
    independent of the target alone's modelled one."""
    from dse.uncertainty.joint import wilson_pct

    rec = {"problem": 0, "step": 0, "draft_tokens": 54, "target_tokens": 0,
           "decision": "accept"}
    bare, scored = tmp_path / "bare.jsonl", tmp_path / "scored.jsonl"
    bare.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    scored.write_text(json.dumps(rec | {"correct": True}) + "\n", encoding="utf-8")
    argv = ["simulate", "--system", BASE, "--scenario", "math500", "--trace"]
    out = _json([*argv, str(bare)], capsys)
    assert out["accuracy"] is None and "accuracy" not in out["vs_target_alone"]["margin"]
    alone = dse.evaluate(dse.load_design(BASE, overrides={"workflow": "target-only"}),
                         "math500")
    assert out["target_alone"]["latency_s_per_problem"] == pytest.approx(
        alone.latency_s_per_problem)
    out = _json([*argv, str(scored)], capsys)
    assert out["accuracy"] == 100.0
    assert out["intervals"]["accuracy"] == pytest.approx(list(wilson_pct(1, 1)))
    lo, hi = out["vs_target_alone"]["margin_interval"]["accuracy"]
    assert lo < 0 < hi  # one solved problem decides nothing
    assert main([*argv, str(scored)]) == 0
    assert "1 problem simulated" in capsys.readouterr().out


def test_wilson_interval_by_hand() -> None:
    """z = 1.6449: 1 of 1 -> centre (1 + z^2/2) / (1 + z^2) = 0.635, half z sqrt(z^2/4) /
    (1 + z^2) = 0.3652 -> [26.99, 100]; 0 of 1 mirrors it; 50 of 100 sits around 50."""
    from dse.uncertainty.joint import wilson_pct

    lo, hi = wilson_pct(1, 1)
    assert lo == pytest.approx(26.99, abs=0.01) and hi == 100.0
    lo0, hi0 = wilson_pct(0, 1)
    assert lo0 == 0.0 and hi0 == pytest.approx(100 - lo, abs=1e-9)
    lo, hi = wilson_pct(50, 100)
    assert lo == pytest.approx(100 - hi) and 41 < lo < 42


def test_serve_names_the_alternative_and_the_draft_board(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Token-level speculation on a target-only design is weighed against the target without
    speculation (not 'target-only - the target alone'); a draft on an FPGA is named."""
    assert main(["serve", "--system", BASE, "--scenario", "math500", "--rate", "0.2",
                 "--set", "workflow=target-only", "--speculative-model",
                 "qwen2.5-0.5b-instruct", "--num-speculative-tokens", "4"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "speculation - the target without speculation at this load" in text
    assert main(["serve", "--model", "qwen2.5-7b-instruct", "--device", "h100-sxm", "--rate",
                 "1", "--speculative-model", "qwen2.5-0.5b-instruct",
                 "--num-speculative-tokens", "3", "--speculative-device", "u280"]) == 0
    assert "speculating with qwen2.5-0.5b-instruct on u280" in " ".join(
        capsys.readouterr().out.split())


def test_majority_of_two_is_the_policy_alone_exactly(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """Two votes, ties split: p^2 + p (1 - p) = p at every difficulty, so its accuracy is the
    policy's and the difference from the target alone is exactly 0 [0, 0] (one factor key)."""
    over = {"workflow": "majority", "samples": 2}
    out = _json(["evaluate", "--system", BASE, "--scenario", "math500",
                 *(x for k, v in over.items() for x in ("--set", f"{k}={v}"))], capsys)
    vs = out["vs_target_alone"]
    assert vs["margin"]["accuracy"] == 0.0
    assert vs["margin_interval"]["accuracy"] == [0.0, 0.0]


def test_set_workflow_reaches_the_alternative_from_any_design(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """--set workflow=... clears the keys the new workflow has no use for (the documented way
    to the target alone works from a width design file; a speculative system becomes a
    majority vote without its PRM keys)."""
    from dse.io.design_files import design_file_text

    d = dse.load_design(BASE, overrides={"workflow": "best-of-n", "samples": 4,
                                         "aggregation": "last"})
    f = tmp_path / "width.toml"
    f.write_text(design_file_text(d.system, d.schedule, "math500"), encoding="utf-8")
    assert "best-of-n N=4" in _json(["evaluate", "--design", str(f)], capsys)["schedules"]
    out = _json(["evaluate", "--design", str(f), "--set", "workflow=target-only"], capsys)
    assert list(out["schedules"]) == ["target-only"]
    out = _json(["evaluate", "--system", BASE, "--scenario", "math500", "--set",
                 "workflow=majority", "--set", "samples=4"], capsys)
    assert "majority N=4" in out["schedules"]
