"""`dse reproduce`: rows, calibration declared and current, the committed validation doc."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.engine.closed_form import accuracy_only
from dse.io.design_files import load_system
from dse.io.resolve import override_spec as with_overrides
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.paper import reproduce

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows(cat):
    return reproduce.rows(cat)


def test_row_ids_and_calibration_flags(rows):
    ids = {r.id for r in rows}
    for rid in ("accuracy.config2.brsd.math500", "t2_speedup.config1.gsm8k",
                "speedup_vs_brsd.v80.config1.math500", "goodput_gain_vs_brsd.u280.config2.gsm8k",
                "speedup_vs_brsd_stepahead.v80.config2.math500",
                "energy_gain.vs_brsd.v80.config1.math500",
                "no_backtrack_speedup.config2.olympiadbench",
                "brsd_speed_relative_to_rsd.config1.gaokao2023en",
                "step_latency_share.prm.config1.math500", "communication_share.max",
                "speculation_stall_ratio.mean", "wasted_energy_share.config1.math500",
                "rejection_probability.config1.gsm8k",
                "edge_gpu_draft.system_slowdown_vs_heteroreason.config1.math500"):
        assert rid in ids, rid
    cfgs, ds = ("config1", "config2"), ("gaokao2023en", "gsm8k", "math500", "olympiadbench")
    assert {r.id for r in rows if r.label == "fitted"} == {
        f"accuracy.{c}.{m}.{d}" for c in cfgs for m in ("rsd", "brsd") for d in ds}
    assert {r.id for r in rows if r.label == "calibrated"} == {
        f"{k}.{c}.{d}" for k in ("rejection_probability", "speedup_vs_brsd_stepahead.v80")
        for c in cfgs for d in ds}


def test_calibrated_rows_close(rows):
    """Nine shared parameters for 32 numbers (dse/validation/accuracy.py): not every fitted
    Table III row lands within 1.5 points, and each miss has its reason. None is more than 7
    off: since accuracy is conditioned on the problem's difficulty (issue 38) the model cannot
    give config2 Table III's 3-7 point gain of brsd over rsd, and the fit splits it (largest
    miss 6.8 points, config2 rsd MATH500; 2.2 before the change)."""
    for r in rows:
        if r.label == "fitted":
            assert abs(r.tool - r.paper_low) <= 7.0, r
            assert r.within or reproduce.miss_reason(r.id), r


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """`dse reproduce --json --markdown --html`, run once (about 40 s: the intervals
    re-evaluate every run the rows use at each factor's range)."""
    tmp = tmp_path_factory.mktemp("reproduce")
    md, page = tmp / "v.md", tmp / "v.html"
    r = subprocess.run([sys.executable, "-m", "dse.cli", "reproduce", "--json", "--markdown",
                        str(md), "--html", str(page)], capture_output=True, text=True,
                       cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), md.read_text(encoding="utf-8"), page.read_text(
        encoding="utf-8")


@pytest.mark.slow  # the reproduce run (about 30 s) it shares
def test_validation_doc_is_current(cli_run):
    _, md, _ = cli_run
    assert (ROOT / "docs" / "validation.md").read_text(encoding="utf-8") == md, (
        "docs/validation.md is stale: run `dse reproduce --markdown docs/validation.md`")


@pytest.mark.slow  # the reproduce run it shares
def test_reproduce_json(cli_run):
    out, md, page = cli_run
    assert set(out["summary"]) >= {"rows", "within", "fitted", "calibrated", "copied",
                                   "predicted", "predicted_within", "coverage",
                                   "cross_validation"}
    r = out["rows"][0]
    assert set(r) >= {"id", "description", "paper_low", "paper_high", "tool", "within",
                      "label", "calibrated", "tool_low", "tool_high", "inside"}
    assert {row["label"] for row in out["rows"]} == {"fitted", "calibrated", "predicted"}
    assert all(row["calibrated"] == (row["label"] != "predicted") for row in out["rows"])
    assert {d["label"] for d in out["device_rows"]} == {"fitted", "copied", "predicted"}
    for row in out["rows"]:
        assert row["tool_low"] <= row["tool"] + 1e-9 and row["tool"] <= row["tool_high"] + 1e-9
    cov = out["summary"]["coverage"]
    assert cov["paper_rows"]["n"] > 100 and 0 <= cov["paper_rows"]["inside"] <= cov[
        "paper_rows"]["n"]
    # per family with >= 9 leave-one-source-out residuals (vllm-cudagraph has one source)
    assert {c["group"] for c in cov["device_points"]} >= {"GPU vllm-eager decode"}
    assert md.startswith("# Validation") and "## Interval coverage" in md
    # the accuracy cross-validation, a contract: these keys, from dse/data/accuracy_cv.json
    from dse.validation import accuracy

    doc = accuracy.load()
    xv = out["summary"]["cross_validation"]
    assert set(xv) == set(accuracy.SCHEMES)
    for k, v in xv.items():
        assert set(v) == {"median_abs_error", "max_abs_error", "rows"}
        assert v["median_abs_error"] == doc[k]["median_abs_error"] and len(v["rows"]) == 32
    assert "plotly" in page[:5000].lower()
    # the target judge's own table: SpecReason's timing statements, every row predicted
    tj = out["target_judge"]
    assert tj["timing"] and all(not t["calibrated"] for t in tj["timing"])
    assert {"fit", "leave_one_pair_out", "leave_one_dataset_out"} <= set(tj["cross_validation"])
    # the held-out RSD rows and the width model's validation, from their data files
    from dse.validation import accuracy_held_out, width

    held = out["accuracy_held_out"]
    assert held["summary"] == accuracy_held_out.load()["summary"] and held["summary"]["n"] > 50
    assert {"within_3_points", "coverage_90", "median_half_width"} <= set(held["summary"])
    wv = out["width_cross_validation"]
    assert set(wv["cross_validation"]) == set(width.SCHEMES)
    assert wv["held_out"]["new"] == width.load()["held_out"]["new"]
    assert "### Held-out RSD rows" in md and "## Width cross-validation" in md


def test_reproduce_refuses_a_bad_path_before_computing(tmp_path, capsys):
    """A --markdown path whose directory does not exist: one line, exit 2, at once."""
    from dse.cli import main

    code = main(["reproduce", "--markdown", str(tmp_path / "no" / "such" / "v.md")])
    err = capsys.readouterr().err
    assert code == 2 and "--markdown" in err and err.count("\n") == 1
    # a directory where the file should go: refused too, before computing
    code = main(["reproduce", "--html", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--html" in err and "is a directory" in err


def test_reproduce_shows_progress_on_a_terminal(monkeypatch):
    """On a terminal, dse reproduce reports its progress on stderr (none when piped)."""
    import io

    from dse.cli import reproduce as cli_reproduce

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    seen: list[float] = []

    def fake_rows(cat, progress=None):  # the slow part, replaced: its progress reports
        for f in (0.5, 1.0):
            progress(f)
            seen.append(f)
        raise SystemExit(0)

    err = Tty()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("dse.paper.coverage.paper_rows", fake_rows)
    import argparse

    with pytest.raises(SystemExit):
        cli_reproduce.run_reproduce(argparse.Namespace(markdown=None, html=None, json=False,
                                                       catalog=[]), None)  # type: ignore[arg-type]
    assert seen == [0.5, 1.0] and "reproduce:  50.0%" in err.getvalue()
    assert "reproduce: 100.0%" in err.getvalue()


@pytest.mark.slow  # the reproduce run it shares
def test_ratio_of_shared_hardware_is_narrower(cat, cli_run):
    """Two schedules on the same GPUs share every device factor: the interval of their ratio
    (T2's speed-up) is far narrower than either latency's."""
    from dse import evaluate, load_design

    rows_ = {r["id"]: r for r in cli_run[0]["rows"]}
    t2 = rows_["t2_speedup.config1.math500"]
    rep = evaluate(load_design("paper-config1-3090", schedule="brsd"), "math500")
    lo, hi = rep.intervals["latency_s_per_problem"]
    rel_lat = (hi - lo) / rep.latency_s_per_problem
    assert (t2["tool_high"] - t2["tool_low"]) / t2["tool"] < 0.5 * rel_lat


@settings(max_examples=20, deadline=None)
@given(system=st.sampled_from(["paper-config1-3090", "paper-config2-3090"]),
       workload=st.sampled_from(["gsm8k", "math500", "gaokao2023en", "olympiadbench"]),
       tau=st.floats(0.05, 0.95), budget=st.integers(0, 6))
def test_accuracy_monotone_in_backtrack_budget(cat, system, workload, tau, budget):
    w = cat.get("workload", workload)
    spec = with_overrides(load_system(cat, system), {"accept_threshold": tau,
                                                      "max_backtracks": budget})
    more = with_overrides(spec, {"max_backtracks": budget + 1})
    a = accuracy_only(build_design(cat, spec, PRESETS["brsd"]), w)
    b = accuracy_only(build_design(cat, more, PRESETS["brsd"]), w)
    assert b >= a - 1e-9
    fwd = accuracy_only(build_design(cat, spec, PRESETS["rsd"]), w)
    assert a >= fwd - 1e-9  # backtracking never lowers accuracy


def test_paper_energy_is_operating_power_times_latency(cat):
    """The paper's accounting: J/token = (sum of the devices' operating power) x latency / tokens,
    so the gain of one system over another is its power ratio times its speed-up."""
    runs = reproduce.Runs(cat)
    het = runs.get("paper-config1-u280", "math500", "heteroreason")
    brsd = runs.get("paper-config1-3090", "math500", "brsd")
    e_het = runs.paper_energy("paper-config1-u280", "math500", "heteroreason")
    e_brsd = runs.paper_energy("paper-config1-3090", "math500", "brsd")
    assert e_het.j_per_token == pytest.approx(
        sum(e_het.operating_power_w.values()) * het.latency_s_per_problem
        / het.tokens_per_problem)
    # same PRM and target GPUs: only the draft's power differs
    assert e_het.operating_power_w["prm"] == pytest.approx(e_brsd.operating_power_w["prm"])
    assert e_het.operating_power_w["draft"] < e_brsd.operating_power_w["draft"]
    gain = e_brsd.j_per_token / e_het.j_per_token
    ratio = sum(e_brsd.operating_power_w.values()) / sum(e_het.operating_power_w.values())
    assert gain == pytest.approx(ratio * brsd.latency_s_per_problem / het.latency_s_per_problem)
    assert 0.0 < e_het.wasted_energy_share < 0.05
    assert runs.paper_energy("paper-config1-3090", "math500", "brsd").wasted_energy_share == 0.0


@pytest.mark.parametrize("system", ["paper-config1-u280", "paper-config2-v80"])
def test_stall_step_share_closed_form_matches_simulator(cat, system):
    """The paper's speculation stall ratio (share of steps in which the draft finished its
    step-ahead speculation before the verdict): the closed form's exact probability over the
    next step's length agrees with the simulator's count; absent without step-ahead."""
    from dse.engine.evaluate import evaluate

    w = cat.get("workload", "math500")
    d = build_design(cat, load_system(cat, system), PRESETS["heteroreason"])
    cf = evaluate(d, w).speculation_stall_step_share
    sim = evaluate(d, w, evaluator="simulator", problems=3000, seed=1)
    assert cf is not None and 0.0 < cf < 1.0
    assert cf == pytest.approx(sim.speculation_stall_step_share, abs=0.02)
    seq = build_design(cat, load_system(cat, system), PRESETS["brsd"])
    assert evaluate(seq, w).speculation_stall_step_share is None
