"""The target judge's fit to published SpecReason rows: the data files are what the fit gives,
its parameters lie in their declared ranges, p_accept by hand from the fitted Betas, the CV
file's schema, the provenance and interval of a target-verifier design, and the timing rows."""

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
from dse.specs import Catalog
from dse.uncertainty.factors import design_factors
from dse.validation import judge
from dse.validation.accuracy import KAPPA
from dse.verifiers import VERIFIERS, judge_parameters
from dse.workflow import accuracy_provenance, step_probabilities

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = ("leave_one_pair_out", "leave_one_dataset_out", "leave_one_threshold_out",
           "leave_one_row_out")


@pytest.fixture(scope="module")
def doc() -> Mapping[str, Any]:
    return judge.load()


def test_calibration_is_current() -> None:
    """`scripts/calibrate_target_judge.py --check` refits (about 30 s) and compares."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_target_judge.py"),
                        "--check"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "target_judge.toml: current" in r.stdout and "judge_cv.json: current" in r.stdout


def test_fitted_parameters_in_declared_ranges(doc: Mapping[str, Any]) -> None:
    p = doc["fit"]["parameters"]
    assert judge.GOOD_MEAN_RANGE[0] < p["good_mean"] < judge.GOOD_MEAN_RANGE[1]
    assert judge.BAD_MEAN_RANGE[0] < p["bad_mean"] < judge.BAD_MEAN_RANGE[1]
    assert p["bad_mean"] < p["good_mean"]  # a good step scores higher on average
    assert p["kappa"] == KAPPA and doc["fit"]["start_spread"] < 1e-3
    # the judge file holds the fit, and the verifier reads it
    toml = tomllib.loads((ROOT / "dse" / "data" / "target_judge.toml").read_text("utf-8"))
    jp = judge_parameters()
    for k in ("good_alpha", "good_beta", "bad_alpha", "bad_beta"):
        assert toml["judge"][k] == pytest.approx(p[k], rel=1e-5)
        assert getattr(jp, k) == pytest.approx(p[k], rel=1e-5)
    assert jp.good_alpha + jp.good_beta == pytest.approx(KAPPA, rel=1e-5)
    assert "calibrate_target_judge" in jp.sources["scores"]
    for key in judge.ASSUMPTIONS:
        assert jp.sources[key] == judge.ASSUMPTIONS[key]


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
    """Fitted Betas: good (7.1942, 0.8058), bad (5.8356, 2.1644); SpecReason's k = 9 is 0.9.
    P(good >= 0.9) = 0.6224, P(bad >= 0.9) = 0.1159. R1-Distill 1.5B on AIME24 (28.5%) over
    exactly 100 steps: h_d = 1 - 0.285^(1/100) = 0.012474. p_accept = (1 - h_d) 0.6224 + h_d
    0.1159 = 0.61467 + 0.00145 = 0.6161."""
    jp = judge_parameters()
    good = _upper_tail(jp.good_alpha, jp.good_beta, 0.9)
    bad = _upper_tail(jp.bad_alpha, jp.bad_beta, 0.9)
    assert good == pytest.approx(0.6224, abs=2e-4) and bad == pytest.approx(0.1159, abs=2e-4)
    h_d = 1 - 0.285 ** (1 / 100)
    assert h_d == pytest.approx(0.012474, abs=1e-6)
    sc = VERIFIERS["target"].scores(dse.load_catalog().workload("math500"))
    w = judge.thinking_workload("hand", "aime24", {"d": 28.5, "t": 70.8}, sc)
    w = replace(w, steps_cv=0.0)  # exactly 100 steps
    pr = step_probabilities(w, "d", "t", 0.9, 0.9, sc)
    assert float(pr.h_draft) == pytest.approx(h_d, rel=1e-9)
    assert float(pr.p_accept) == pytest.approx((1 - h_d) * good + h_d * bad, abs=1e-6)
    assert float(pr.p_accept) == pytest.approx(0.6161, abs=2e-4)


def test_cv_file_schema(doc: Mapping[str, Any]) -> None:
    assert doc["schema_version"] == judge.SCHEMA_VERSION == 1
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
    assert "shift" in doc["difficulty_shift_form"]["fit"]["parameters"]
    assert {c["threshold"] for c in doc["qwen3_threshold_check"]} == {0.7, 0.8, 0.9}
    catalog = {(c["draft"], c["target"]) for c in doc["covered"]}
    assert ("qwen3-1.7b", "qwen3-32b") in catalog


def test_target_verifier_provenance_and_interval(cat: Catalog) -> None:
    w = cat.workload("math500")
    kind, basis = accuracy_provenance(w, "qwen2.5-0.5b-instruct", "qwen2.5-math-7b-instruct",
                                      "target")
    assert kind == "extrapolated" and basis.startswith(
        "target judge fitted on SpecReason rows of other model families")
    # the fit covered Qwen3 1.7B -> 32B on GSM8K, not on MATH500
    assert accuracy_provenance(cat.workload("gsm8k"), "qwen3-1.7b", "qwen3-32b",
                               "target")[0] == "calibrated"
    assert accuracy_provenance(w, "qwen3-1.7b", "qwen3-32b", "target")[0] == "extrapolated"
    # the PRM's provenance is unchanged by default, and an unknown verifier fails loudly
    assert accuracy_provenance(w, "qwen2.5-0.5b-instruct", "qwen2.5-math-7b-instruct") == \
        accuracy_provenance(w, "qwen2.5-0.5b-instruct", "qwen2.5-math-7b-instruct", "prm")
    with pytest.raises(dse.DseError, match="valid: prm, target"):
        accuracy_provenance(w, "a", "b", "oracle")
    d = dse.load_design("paper-config1-3090", schedule="rsd", overrides={"verifier": "target"})
    acc = next(f for f in design_factors(d, w) if f.quantity == "accuracy")
    lopo = [r["error_points"] for r in judge.load()["leave_one_pair_out"]["rows"]]
    assert acc.status == "extrapolated" and "judge_cv.json" in acc.basis
    assert acc.high == pytest.approx(max(abs(e) for e in lopo), abs=1e-9)  # 14: the largest
    prm = dse.load_design("paper-config1-3090", schedule="rsd")
    assert "Table III" in next(f for f in design_factors(prm, w)
                               if f.quantity == "accuracy").basis


def test_timing_rows(cat: Catalog) -> None:
    rows = {r.id: r for r in judge.timing_rows(cat)}
    pre = rows["specreason.verify_prefill.qwq-32b.a6000-tp2"]
    call = rows["specreason.verify_call.qwq-32b.a6000-tp2"]
    assert 1.0 <= pre.tool <= 2.0 and pre.within
    assert call.tool == pytest.approx(pre.tool + 1.0, abs=0.05)  # + one decoded score token
    for pair in ("qwq32b-r1-1.5b", "qwq32b-zr1-1.5b", "skywork32b-r1-1.5b",
                 "skywork32b-zr1-1.5b"):
        lo = rows[f"specreason.speedup.{pair}.low_share"]
        hi = rows[f"specreason.speedup.{pair}.high_share"]
        assert 1.0 < lo.tool < hi.tool  # more accepted steps, faster
        assert lo.tool <= lo.tool_low <= lo.tool_high  # fewer thinking tokens: only faster
    # SpecReason at acceptance 0.408 cannot beat 1 / (1 - 0.408) at equal tokens
    assert rows["specreason.speedup.qwq32b-r1-1.5b.aime24"].tool < 1 / (1 - 0.408)
