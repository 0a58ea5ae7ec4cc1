"""The target judge's fit to published SpecReason rows: the data files are what the fit gives,
its parameters lie in their declared ranges, the fit and the verifier compute the same
distributions for a pair, p_accept by hand from the fitted form, the judge file's strict
loader, the CV file's schema, the provenance, interval and factor key of a target-verifier
design, and the timing rows."""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dse
from dse.model.verifiers import (
    JUDGE_DATA,
    SHIFT_RANGE,
    VERIFIERS,
    judge_means,
    judge_parameters,
    parse_judge,
)
from dse.model.workflow import accuracy_provenance, step_probabilities
from dse.specs import Catalog
from dse.uncertainty.factors import accuracy_key, design_factors
from dse.validation import judge
from dse.validation.accuracy import KAPPA

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = ("leave_one_pair_out", "leave_one_dataset_out", "leave_one_threshold_out",
           "leave_one_row_out")


@pytest.fixture(scope="module")
def doc() -> Mapping[str, Any]:
    return judge.load()


@pytest.mark.slow  # about 30 s: the judge's fit rerun
def test_calibration_is_current() -> None:
    """`scripts/calibrate_target_judge.py --check` refits (about 30 s) and compares."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_target_judge.py"),
                        "--check"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "target_judge.toml: current" in r.stdout and "judge_cv.json: current" in r.stdout


def test_fitted_parameters_in_declared_ranges(doc: Mapping[str, Any]) -> None:
    p = doc["fit"]["parameters"]
    # the good mean may sit at its upper bound 0.999 (it does: the fit pushes it there)
    assert judge.GOOD_MEAN_RANGE[0] < p["good_mean"] <= judge.GOOD_MEAN_RANGE[1]
    assert judge.BAD_MEAN_RANGE[0] < p["bad_mean"] < judge.BAD_MEAN_RANGE[1]
    assert p["bad_mean"] < p["good_mean"]  # a good step scores higher on average
    assert 0 < p["shift"] < SHIFT_RANGE[1]  # a weaker draft's steps score lower
    assert p["kappa"] == KAPPA and doc["fit"]["start_spread"] < 1e-3
    # the judge file holds the fit, and the verifier reads it
    toml = tomllib.loads(JUDGE_DATA.read_text("utf-8"))
    jp = judge_parameters()
    for k in ("kappa", "good_mean", "bad_mean", "shift"):
        assert toml["judge"][k] == pytest.approx(p[k], rel=1e-5)
        assert getattr(jp, k) == pytest.approx(p[k], rel=1e-5)
        assert jp.sources[k]
    for k in ("good_mean", "bad_mean", "shift", "scores"):
        assert "calibrate_target_judge" in jp.sources[k]
    for key in judge.ASSUMPTIONS:
        assert jp.sources[key] == judge.ASSUMPTIONS[key]


def test_fit_and_verifier_compute_the_same_distributions(doc: Mapping[str, Any]) -> None:
    """TargetJudge.scores(w, draft, target) on a fitted row's setting is the fit's Params at
    the row's relative error (one function, dse.model.verifiers.judge_score_stats); x < 0 is x =
    0."""
    p = doc["fit"]["parameters"]
    params = judge.Params(p["good_mean"], p["bad_mean"], p["shift"])
    rows, _ = judge.usable_rows(judge.published())
    for r in rows:
        acc = {r.draft: r.draft_accuracy_pct, r.target: r.target_accuracy_pct}
        w = judge.thinking_workload(r.id, r.dataset, acc)
        tool = VERIFIERS["target"].scores(w, r.draft, r.target)
        fitted = params.scores(r.relative_error)
        for k in ("good_alpha", "good_beta", "bad_alpha", "bad_beta"):
            assert getattr(tool, k) == pytest.approx(getattr(fitted, k), rel=1e-5)
        assert r.draft in tool.basis and f"x = {r.relative_error:.3f}" in tool.basis
    # a draft stronger than the target is judged as one equal to it: x clipped at 0
    w = judge.thinking_workload("swap", "gsm8k", {"d": 80.0, "t": 70.0})
    strong, equal = (VERIFIERS["target"].scores(w, "d", "t"),
                     VERIFIERS["target"].scores(w, "t", "t"))
    assert strong.good_alpha == equal.good_alpha and strong.bad_alpha == equal.bad_alpha
    assert judge_means(0.95, 0.85, 0.3, -0.5) == judge_means(0.95, 0.85, 0.3, 0.0) == (0.95, 0.85)
    assert judge_means(0.95, 0.85, 0.3, 0.5) == pytest.approx((0.80, 0.70))
    # clipped to the declared ranges: 0.95 - 2 x 1 -> 0.5, 0.85 - 2 -> 0.02
    assert judge_means(0.95, 0.85, 2.0, 1.0) == (judge.GOOD_MEAN_RANGE[0],
                                                 judge.BAD_MEAN_RANGE[0])
    with pytest.raises(dse.DseError, match=r"accuracy\.nobody: no solo accuracy"):
        VERIFIERS["target"].scores(w, "nobody", "t")


@pytest.mark.parametrize(("edit", "match"), [
    (("kappa = 8\n", "kappa = 8\ncolour = 1.0\n"), "judge.colour: unknown key"),
    (("\nshift = ", "\nshift = 3.0  # "), "judge.shift: expected a number in"),
    (("schema_version = 2", "schema_version = 1"), "schema_version: expected 2"),
    (("\nshift = \"", "\nshift_note = \""), "sources.shift: missing"),
])
def test_judge_file_is_strict(edit: tuple[str, str], match: str) -> None:
    text = JUDGE_DATA.read_text("utf-8")
    assert parse_judge(text) == judge_parameters()
    old, new = edit
    assert old in text
    with pytest.raises(dse.DseError, match=match):
        parse_judge(text.replace(old, new, 1))


def _upper_tail(a: float, b: float, tau: float, n: int = 2000) -> float:
    """P(u >= tau) for u ~ Beta(a, b), without scipy: with y = 1 - u and z = y^b the integral
    of u^(a-1) (1-u)^(b-1) over [tau, 1] is the integral of (1 - z^(1/b))^(a-1) / b over
    [0, (1 - tau)^b], smooth even for b < 1 (composite Simpson); B(a, b) from lgamma."""
    top = (1 - tau) ** b
    z = np.linspace(0.0, top, n + 1)
    f = (1 - z ** (1 / b)) ** (a - 1) / b
    integral = top / n / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())
    return float(integral / math.exp(math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))


def test_p_accept_by_hand_at_threshold_9() -> None:
    """R1-Distill 1.5B (28.5%) before 32B (70.8%) on AIME24: x = 1 - 28.5 / 70.8 = 0.59746.
    Fitted means 0.999 and 0.732736, shift 0.276164: both fall by 0.276164 x 0.59746 = 0.16500
    to 0.83400 and 0.56774; kappa 8: good Beta(6.6720, 1.3280), bad Beta(4.5419, 3.4581).
    SpecReason's k = 9 is 0.9: P(good >= 0.9) = 0.3681, P(bad >= 0.9) = 0.0098. Over exactly
    100 steps h_d = 1 - 0.285^(1/100) = 0.012474. p_accept = (1 - h_d) 0.3681 + h_d 0.0098 =
    0.36353 + 0.00012 = 0.3636."""
    jp = judge_parameters()
    x = 1 - 28.5 / 70.8
    assert x == pytest.approx(0.59746, abs=1e-5)
    assert jp.good_mean - jp.shift * x == pytest.approx(0.83400, abs=1e-5)
    assert jp.bad_mean - jp.shift * x == pytest.approx(0.56774, abs=1e-5)
    w = judge.thinking_workload("hand", "aime24", {"d": 28.5, "t": 70.8})
    w = replace(w, steps_cv=0.0)  # exactly 100 steps
    sc = VERIFIERS["target"].scores(w, "d", "t")
    assert (sc.good_alpha, sc.good_beta) == pytest.approx((6.6720, 1.3280), abs=1e-4)
    assert (sc.bad_alpha, sc.bad_beta) == pytest.approx((4.5419, 3.4581), abs=1e-4)
    good = _upper_tail(sc.good_alpha, sc.good_beta, 0.9)
    bad = _upper_tail(sc.bad_alpha, sc.bad_beta, 0.9)
    assert good == pytest.approx(0.3681, abs=2e-4) and bad == pytest.approx(0.0098, abs=2e-4)
    h_d = 1 - 0.285 ** (1 / 100)
    assert h_d == pytest.approx(0.012474, abs=1e-6)
    pr = step_probabilities(w, "d", "t", 0.9, 0.9, sc)
    assert float(pr.h_draft) == pytest.approx(h_d, rel=1e-9)
    assert float(pr.p_accept) == pytest.approx((1 - h_d) * good + h_d * bad, abs=1e-6)
    assert float(pr.p_accept) == pytest.approx(0.3636, abs=2e-4)


def test_cv_file_schema(doc: Mapping[str, Any]) -> None:
    assert doc["schema_version"] == judge.SCHEMA_VERSION == 2
    assert doc["generated_by"] == "scripts/calibrate_target_judge.py"
    used = set(doc["rows_used"])
    assert len(used) == 14 and all(i.startswith("lr-") for i in used)
    assert {r["id"] for r in doc["rows_excluded"]}.isdisjoint(used)
    assert all(r["reason"] for r in doc["rows_excluded"])
    for block in (doc["fit"], *(doc[k] for k in SCHEMES)):
        rows = block["rows"]
        assert {r["id"] for r in rows} == used and block["n"] == len(rows) == 14
        key = "fitted" if block is doc["fit"] else "predicted"
        for r in rows:
            assert r["error_points"] == pytest.approx(r[key] - r["paper"], abs=1e-3)
            assert r["acceptance_error"] == pytest.approx(
                r[f"acceptance_{key}"] - r["acceptance_measured"], abs=1e-3)
        e = np.abs([r["error_points"] for r in rows])
        a = np.abs([r["acceptance_error"] for r in rows])
        assert block["median_abs_error"] == pytest.approx(np.median(e), abs=1e-3)
        assert block["max_abs_error"] == pytest.approx(e.max(), abs=1e-3)
        assert block["acceptance_median_abs_error"] == pytest.approx(np.median(a), abs=1e-3)
        assert block["acceptance_max_abs_error"] == pytest.approx(a.max(), abs=1e-3)
    # two pairs, six datasets, two thresholds: one fold each
    assert len(doc["leave_one_pair_out"]["folds"]) == 2
    assert len(doc["leave_one_dataset_out"]["folds"]) == 6
    assert len(doc["leave_one_threshold_out"]["folds"]) == 2
    assert doc["leave_one_source_out"]["status"] == "not computed"
    assert doc["fit"]["parameters"]["shift"] > 0  # the tool's form, every scheme refits it
    assert all("shift" in f["parameters"] for k in SCHEMES for f in doc[k]["folds"])
    one = doc["one_distribution_form"]  # the diagnostic: shift 0, worse acceptance
    assert one["fit"]["parameters"]["shift"] == 0.0
    assert one["fit"]["acceptance_median_abs_error"] > doc["fit"]["acceptance_median_abs_error"]
    assert {c["threshold"] for c in doc["qwen3_threshold_check"]} == {0.7, 0.8, 0.9}
    assert all({"sum_of_squares", "one_distribution_sum_of_squares"} <= c.keys()
               for c in doc["qwen3_threshold_check"])
    catalog = {(c["draft"], c["target"]) for c in doc["covered"]}
    assert ("qwen3-1.7b", "qwen3-32b") in catalog


def test_target_verifier_provenance_and_interval(cat: Catalog) -> None:
    from dse.uncertainty.evidence import judge_provenance

    w = cat.workload("math500")
    kind, basis = judge_provenance(w.dataset, "qwen2.5-0.5b-instruct",
                                   "qwen2.5-math-7b-instruct")
    assert kind == "extrapolated" and basis.startswith(
        "target judge fitted on SpecReason rows of other model families")
    # the fit covered Qwen3 1.7B -> 32B on GSM8K, not on MATH500
    assert judge_provenance("gsm8k", "qwen3-1.7b", "qwen3-32b")[0] == "calibrated"
    assert judge_provenance(w.dataset, "qwen3-1.7b", "qwen3-32b")[0] == "extrapolated"
    # a PRM design's provenance rests on Table III (the workload's in-chain factors)
    assert accuracy_provenance("qwen2.5-0.5b-instruct", "qwen2.5-math-7b-instruct")[0] == \
        "calibrated"
    d = dse.load_design("paper-config1-3090", schedule="rsd", overrides={"verifier": "target"})
    acc = next(f for f in design_factors(d, w) if f.quantity == "accuracy")
    lopo = [r["error_points"] for r in judge.load()["leave_one_pair_out"]["rows"]]
    assert acc.status == "extrapolated" and "judge_cv.json" in acc.basis
    assert acc.high == pytest.approx(max(abs(e) for e in lopo), abs=1e-9)  # 14: the largest
    prm = dse.load_design("paper-config1-3090", schedule="rsd")
    prm_acc = next(f for f in design_factors(prm, w) if f.quantity == "accuracy")
    assert "Table III" in prm_acc.basis
    # the same pair under the two verifiers: two fits, two accuracy factors (no shared error)
    pair = f"accuracy:{w.name}:{d.draft.model.name}:{d.target.model.name}"
    assert prm_acc.key == accuracy_key(prm, w) == pair
    assert acc.key == accuracy_key(d, w) == pair + ":target-judge"


def test_timing_rows(cat: Catalog) -> None:
    rows = {r.id: r for r in judge.timing_rows(cat)}
    pre = rows["specreason.verify_prefill.qwq-32b.a6000-tp2"]
    call = rows["specreason.verify_call.qwq-32b.a6000-tp2"]
    assert 1.0 <= pre.tool <= 2.0 and pre.within
    # the score token comes from the prefill's last logits: the call is the prefill alone
    assert call.tool == pytest.approx(pre.tool, rel=1e-9) and call.within
    for pair in ("qwq32b-r1-1.5b", "qwq32b-zr1-1.5b", "skywork32b-r1-1.5b",
                 "skywork32b-zr1-1.5b"):
        lo = rows[f"specreason.speedup.{pair}.low_share"]
        hi = rows[f"specreason.speedup.{pair}.high_share"]
        assert 1.0 < lo.tool < hi.tool  # more accepted steps, faster
        assert lo.tool <= lo.tool_low <= lo.tool_high  # fewer thinking tokens: only faster
    # SpecReason at acceptance 0.408 cannot beat 1 / (1 - 0.408) at equal tokens
    assert rows["specreason.speedup.qwq32b-r1-1.5b.aime24"].tool < 1 / (1 - 0.408)
