"""The accuracy model: PRM discrimination by draft, PRM and dataset, the in-chain factor, the
fit to Table III and RSD's Table 2 and its cross-validation, and what stays out of the fit."""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.engine.closed_form import accuracy_only
from dse.errors import SpecError
from dse.io.design_files import load_system
from dse.io.resolve import override_spec as with_overrides
from dse.model.design import build_design
from dse.model.discrimination import (
    AccuracyParams,
    beta_mean_at_cdf,
    prm_f1_pct,
    prm_means,
    prm_scores,
    shipped,
)
from dse.model.schedules import PRESETS
from dse.model.workflow import (
    accuracy_provenance,
    beta_cdf,
    design_scores,
    in_chain_rewrite_error,
    nested_target_error,
    pair_key,
    step_probabilities,
)
from dse.paper.reproduce import reported
from dse.search.grid import KnobGrid, pair_tables
from dse.specs import build_spec
from dse.validation import accuracy as acc

ROOT = Path(__file__).resolve().parents[1]
DRAFT = "qwen2.5-0.5b-instruct"
T7, T15 = "qwen2.5-math-7b-instruct", "qwen2.5-math-1.5b-instruct"
QPRM, SKY15, SKY7 = ("qwen2.5-math-prm-7b", "skywork-o1-open-prm-qwen-2.5-1.5b",
                     "skywork-o1-open-prm-qwen-2.5-7b")
DATASETS = ("gaokao2023en", "gsm8k", "math500", "olympiadbench")


def params(**over: float) -> AccuracyParams:
    base = AccuracyParams(kappa=8.0, good_mean=0.8, bad_mean_c0=0.2, bad_mean_draft=0.6,
                          bad_mean_prm=0.1, error_nesting=1.0, in_chain_error_factor={},
                          calibration_threshold=0.7, default_prm_f1={
                              "gsm8k": 70.0, "math": 60.0, "olympiadbench": 40.0,
                              "omnimath": 35.0})
    return replace(base, **over)


def test_in_chain_rewrite_error_by_hand():
    """h_d = 0.1, h_t = 0.02. Fully nested: P(t bad | d bad) = 0.02 / 0.1 = 0.2,
    P(t bad | d good) = 0 (h_t < h_d); rho 1.5: 0.3 and 0. Nesting 0.5:
    0.5 x 0.2 + 0.5 x 0.02 = 0.11 and 0.5 x 0 + 0.5 x 0.02 = 0.01; rho 1.5: 0.165 and 0.015.
    rho 20 caps the first at 1 (20 x 0.2 = 4): 1.0 and 20 x 0 = 0. The factor scales with the
    draft's share of the chain s: rho 1.5 at s 0.5 multiplies by 1.25 (0.2 -> 0.25); at s 0 by
    1 (the target's own chain)."""
    b, g = in_chain_rewrite_error(*nested_target_error(0.1, 0.02, 1.0), factor=1.5)
    assert (float(b), float(g)) == pytest.approx((0.3, 0.0))
    b, g = in_chain_rewrite_error(*nested_target_error(0.1, 0.02, 0.5), factor=1.5)
    assert (float(b), float(g)) == pytest.approx((0.165, 0.015))
    b, g = in_chain_rewrite_error(*nested_target_error(0.1, 0.02, 1.0), factor=20.0)
    assert (float(b), float(g)) == (1.0, 0.0)
    b, _ = in_chain_rewrite_error(0.2, 0.0, factor=1.5, draft_share=0.5)
    assert float(b) == pytest.approx(0.25)
    b, _ = in_chain_rewrite_error(0.2, 0.0, factor=1.5, draft_share=0.0)
    assert float(b) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="must be > 0"):
        in_chain_rewrite_error(0.1, 0.0, factor=0.0)


def test_bad_mean_by_hand():
    """c0 0.2 + c_draft 0.6 x (1 - 40/100) + c_prm 0.1 x (1 - 80/100) = 0.2 + 0.36 + 0.02 =
    0.58; clipped to [0.02, 0.99]."""
    assert params().bad_mean(40.0, 80.0) == pytest.approx(0.58)
    assert params(bad_mean_c0=1.0).bad_mean(0.0, 0.0) == 0.99
    assert params(bad_mean_c0=-1.0).bad_mean(100.0, 100.0) == 0.02


def test_scores_follow_the_designs_draft_and_prm(cat):
    """MATH500 (ProcessBench subset `math`): the 0.5B draft (34.4%) before Qwen2.5-Math-PRM-7B
    (F1 77.6): mu_b = c0 + c_draft x 0.656 + c_prm x 0.224 with the shipped parameters, and the
    Skywork 1.5B PRM (F1 48.0) or a stronger draft (Math-1.5B, 74.2%) give their own means."""
    w, p = cat.workload("math500"), shipped()
    assert w.processbench_subset == "math"
    q = cat.model(QPRM)
    mu_g, mu_b = prm_means(w, DRAFT, q)
    assert mu_g == p.good_mean
    assert mu_b == pytest.approx(p.bad_mean_c0 + p.bad_mean_draft * 0.656
                                 + p.bad_mean_prm * 0.224, abs=1e-12)
    _, sky = prm_means(w, DRAFT, cat.model(SKY15))
    assert sky - mu_b == pytest.approx(p.bad_mean_prm * (0.776 - 0.48), abs=1e-12)
    _, strong = prm_means(w, T15, q)
    assert mu_b - strong == pytest.approx(p.bad_mean_draft * (0.742 - 0.344), abs=1e-12)
    sc = prm_scores(w, DRAFT, q)
    assert (sc.good_alpha + sc.good_beta, sc.bad_alpha / p.kappa) == pytest.approx(
        (p.kappa, mu_b))
    assert "F1 77.6" in sc.basis and DRAFT in sc.basis


def test_a_design_scores_with_its_own_prm(cat):
    """The PRM's identity reaches the closed form: swapping the PRM of config1 changes its
    acceptance and accuracy the way its ProcessBench F1 says (a lower F1 raises mu_b: more bad
    steps accepted, lower accuracy, with the shipped c_prm > 0)."""
    assert shipped().bad_mean_prm > 0
    base = load_system(cat, "paper-config1-3090")
    w = cat.workload("math500")
    out = {}
    for prm in (QPRM, SKY7, SKY15):
        d = build_design(cat, with_overrides(base, {"prm_model": prm}), PRESETS["rsd"])
        assert design_scores(d, w).basis.startswith(prm)
        out[prm] = accuracy_only(d, w)
    assert out[QPRM] > out[SKY7] > out[SKY15]


def test_an_unpublished_prm_takes_the_catalog_mean(cat):
    p = shipped()
    assert prm_f1_pct(None, "olympiadbench", p) == (p.default_prm_f1["olympiadbench"], False)
    assert prm_f1_pct(cat.model(SKY7), "olympiadbench", p) == (22.9, True)
    for subset in ("gsm8k", "math", "olympiadbench", "omnimath"):
        f1s = [cat.model(m).processbench_f1[subset] for m in (QPRM, SKY15, SKY7)]
        assert p.default_prm_f1[subset] == pytest.approx(np.mean(f1s), abs=0.01)
    assert "unpublished" in prm_scores(cat.workload("gsm8k"), DRAFT, None).basis


def test_concentration_keeps_the_cdfs_at_the_calibration_threshold(cat):
    """A workload's own concentration moves both means so that each CDF at 0.7 stays what it
    was: the calibrated numbers do not move, other thresholds do."""
    w = cat.workload("gaokao2023en")
    q = cat.model(QPRM)
    a, b = prm_scores(w, DRAFT, q), prm_scores(replace(w, prm_concentration=16.0), DRAFT, q)
    assert b.good_alpha + b.good_beta == pytest.approx(16.0)
    for cls in ("good", "bad"):
        ca = float(beta_cdf(0.7, getattr(a, f"{cls}_alpha"), getattr(a, f"{cls}_beta")))
        cb = float(beta_cdf(0.7, getattr(b, f"{cls}_alpha"), getattr(b, f"{cls}_beta")))
        assert cb == pytest.approx(ca, abs=1e-9)
    assert beta_mean_at_cdf(float(beta_cdf(0.7, 4.0, 4.0)), 8.0, 0.7) == pytest.approx(0.5)


def test_processbench_keys_are_checked():
    """Only a PRM carries ProcessBench F1s, on known subsets; a workload names a known
    subset. Each error names the key."""
    base = tomllib.loads((ROOT / "models" / f"{QPRM}.toml").read_text(encoding="utf-8"))
    bad = {**base, "processbench_f1": {"math": 77.6, "aime": 10.0}}
    with pytest.raises(SpecError, match=r"processbench_f1\.aime"):
        build_spec("prm.toml", bad)
    lm = tomllib.loads((ROOT / "models" / f"{T7}.toml").read_text(encoding="utf-8"))
    with pytest.raises(SpecError, match="processbench_f1"):
        build_spec("lm.toml", {**lm, "processbench_f1": {"math": 50.0}})
    wl = tomllib.loads((ROOT / "scenarios" / "workloads" / "gsm8k.toml").read_text("utf-8"))
    with pytest.raises(SpecError, match="processbench_subset"):
        build_spec("w.toml", {**wl, "processbench_subset": "aime"})
    # the PRM's statistics are no longer the dataset's: an old key is refused by name
    with pytest.raises(SpecError, match="prm_good_alpha"):
        build_spec("w.toml", {**wl, "prm_good_alpha": 6.5})


def test_catalog_pairs_and_provenance():
    fitted = set(shipped().in_chain_error_factor)
    assert fitted == {pair_key(DRAFT, T7), pair_key(DRAFT, T15), pair_key(T15, T7),
                      pair_key(T7, "qwen2.5-math-72b-instruct")}
    kind, basis = accuracy_provenance(DRAFT, T15)
    assert kind == "calibrated" and "calibrate_workloads" in basis
    for draft, target in ((DRAFT, "qwen2.5-math-72b-instruct"), ("llama-3.2-1b-instruct", T7)):
        kind, basis = accuracy_provenance(draft, target)
        assert kind == "extrapolated" and "solo-accuracy form" in basis
        assert shipped().rho(pair_key(draft, target)) == 1.0


@settings(max_examples=25, deadline=None)
@given(ds=st.sampled_from(DATASETS), method=st.sampled_from(["rsd", "brsd"]),
       tau=st.floats(0.1, 0.95), rho=st.floats(0.1, 5.0), more=st.floats(0.01, 3.0))
def test_accuracy_falls_with_the_in_chain_factor(cat, ds, method, tau, rho, more):
    """A target that rewrites worse inside the chain never raises accuracy; rho = 1 is the
    solo-accuracy form (the pair absent from the table)."""
    spec = with_overrides(load_system(cat, "paper-config2-3090"), {"accept_threshold": tau})
    d = build_design(cat, spec, PRESETS[method])
    w = cat.workload(ds)
    key = pair_key(DRAFT, T15)

    def at(r: float | None) -> float:
        table = {} if r is None else {key: r}
        return accuracy_only(d, w, replace(shipped(), in_chain_error_factor=table))

    assert at(rho + more) <= at(rho) + 1e-9
    assert at(1.0) == pytest.approx(at(None), abs=1e-12)


def test_closed_form_and_sweep_tables_agree(cat):
    """pair_tables (the sweep) uses the same scores and in-chain factor as the closed form, for
    each PRM: its acceptance equals the closed form's and its accuracy is within the sweep's
    1-point mean-value tolerance, for measured targets and an extrapolated one."""
    g = KnobGrid(np.array([0.5, 0.7, 0.9]), np.array([0.7, 0.7]), np.array([0, 5]),
                 np.array([3, 3]), ((False, False),))
    for target, prm in ((T7, QPRM), (T15, SKY15), ("qwen2.5-1.5b-instruct", SKY7)):
        spec = with_overrides(load_system(cat, "paper-config2-3090"),
                              {"target_model": target, "prm_model": prm})
        for ds in ("math500", "gsm8k"):
            w = cat.workload(ds)
            pt = pair_tables(w, DRAFT, target, g, 4096, "prm", cat.model(prm))
            for i, tau in enumerate(g.accept):
                for k, (method, bt) in enumerate((("rsd", 0), ("brsd", 5))):
                    s = with_overrides(spec, {"accept_threshold": float(tau),
                                              "max_backtracks": bt})
                    d = build_design(cat, s, PRESETS[method])
                    assert pt.accuracy[i, k] == pytest.approx(accuracy_only(d, w), abs=1.0)
                    pr = step_probabilities(w, DRAFT, target, tau, 0.7, design_scores(d, w))
                    assert pt.pa[i] == pytest.approx(float(pr.p_accept))


def test_simulator_uses_the_in_chain_rates(cat):
    """The simulator draws rewrites with the in-chain conditional rates: its accuracy tracks
    the closed form's for config2 (rho 1.84)."""
    from dse.engine.evaluate import evaluate

    d = build_design(cat, load_system(cat, "paper-config2-3090"), PRESETS["rsd"])
    w = cat.workload("math500")
    sim = evaluate(d, w, evaluator="simulator", problems=4000, seed=3)
    assert sim.accuracy == pytest.approx(accuracy_only(d, w), abs=2.5)


@pytest.fixture(scope="module")
def cv():
    return acc.load()


def test_the_fit_uses_the_declared_rows_only(cat):
    """Table III's 16 rsd/brsd numbers and RSD Table 2's 16 Qwen2.5-Math rows on the catalog's
    datasets; no held-out row (threshold sweeps, tuned thresholds, other families) enters."""
    rows = acc.calibration_rows(cat, reported())
    doc = acc.rsd_published()
    held = {r["id"] for r in doc.get("held_out", [])}
    assert len(rows) == 32 and not held & {r.id for r in rows}
    rsd = [r for r in rows if r.source == acc.RSD]
    assert len(rsd) == 16 and {r.design.accept_threshold for r in rsd} == {0.7}
    assert {r.prm for r in rsd} == {SKY15, SKY7}
    assert {r.design.target.model.name for r in rsd} == {T7, "qwen2.5-math-72b-instruct"}
    assert all(not r.design.schedule.backtracking for r in rsd)
    assert all(h["held_out"] for h in doc["held_out"])


def test_cv_json_shape_and_sizes(cat, cv):
    assert cv["schema_version"] == 3 and cv["generated_by"] == "scripts/calibrate_workloads.py"
    ids = {r["id"] for r in cv["fit"]["rows"]}
    assert len(ids) == 32
    for sec in ("fit", *acc.SCHEMES):
        key = "fitted" if sec == "fit" else "predicted"
        rows = cv[sec]["rows"]
        assert {r["id"] for r in rows} == ids and cv[sec]["n"] == 32
        for r in rows:
            assert r["error_points"] == pytest.approx(r[key] - r["measured"], abs=1e-3)
            assert r["n_problems"] in (385, 500, 675, 1319)
        e = np.abs([r["error_points"] for r in rows])
        assert cv[sec]["median_abs_error"] == pytest.approx(np.median(e), abs=1e-3)
        assert cv[sec]["max_abs_error"] == pytest.approx(e.max(), abs=1e-3)
    assert len(cv["fit"]["parameters"]["in_chain_error_factor"]) == 4  # 9 parameters in all
    cap = acc.rejection_cap(reported())
    assert cv["fit"]["rejection_cap"] == pytest.approx(cap)
    assert cv["fit"]["max_rejection_probability"] <= cap + 1e-3
    for k in acc.SCHEMES:  # each fold's training cost, from the default starts
        assert len(cv[k]["folds"]) == len(acc.folds(acc.calibration_rows(cat, reported()), k))


def test_cv_json_fit_is_what_the_catalog_predicts(cat, cv):
    """The json's in-sample values are today's closed-form accuracies with the shipped
    parameters, and dse/data/accuracy_model.toml holds the json's parameters (the fit is
    current)."""
    rows = acc.calibration_rows(cat, reported())
    tool = {r.id: accuracy_only(r.design, cat.workload(r.dataset)) for r in rows}
    for r in cv["fit"]["rows"]:
        assert r["fitted"] == pytest.approx(tool[r["id"]], abs=2e-3), r["id"]
    p, want = shipped(), cv["fit"]["parameters"]
    for k in ("kappa", "good_mean", "bad_mean_c0", "bad_mean_draft", "bad_mean_prm",
              "error_nesting", "calibration_threshold"):
        assert getattr(p, k) == pytest.approx(want[k], rel=1e-5), k
    assert dict(p.in_chain_error_factor) == pytest.approx(want["in_chain_error_factor"],
                                                          rel=1e-5)


def test_an_unknown_pair_is_predicted_in_the_solo_form(cv):
    """Leave one pair out predicts the pair with rho = 1. Config2's target loses more inside
    the 0.5B's chain than its solo accuracy says (rho 1.84 in the full fit), so with its factor
    unknown every config2 row comes out too high."""
    rows = [r for r in cv["leave_one_pair_out"]["rows"] if ".config2." in r["id"]]
    assert len(rows) == 8 and all(r["error_points"] > 0 for r in rows)


def test_folds_group_whole_pairs_datasets_prms_and_sources(cat):
    rows = acc.calibration_rows(cat, reported())
    for scheme, n in (("leave_one_pair_out", 4), ("leave_one_dataset_out", 4),
                      ("leave_one_prm_out", 3), ("leave_one_source_out", 2),
                      ("leave_one_row_out", 32)):
        fs = acc.folds(rows, scheme)
        assert len(fs) == n
        for train, test in fs:
            assert len(train) + len(test) == 32
            assert not {r.id for r in train} & {r.id for r in test}
    for train, test in acc.folds(rows, "leave_one_prm_out"):
        assert not {r.prm for r in train} & {r.prm for r in test}


def test_accuracy_interval_terms_by_hand():
    """70% on 500 problems: sd sqrt(0.7 x 0.3 / 500) = 2.05 points. Residuals 3 and -1 on rows
    whose binomial sd is 2 (50% on 625): sqrt((9 + 1) / 2 - 4) = 1. z(0.9) = 1.645; model 1.5
    and test set 2.0: 1.645 x 2.5 = 4.11."""
    from dse.uncertainty import accuracy_width as aw

    assert aw.binomial_sd_points(70.0, 500) == pytest.approx(2.0494, abs=1e-4)
    rows = [{"error_points": 3.0, "measured": 50.0, "n_problems": 625},
            {"error_points": -1.0, "measured": 50.0, "n_problems": 625}]
    assert aw.model_sd_points(rows) == pytest.approx(1.0)
    w = aw.Width(1.5, 2.0, aw.z_of(0.9))
    assert w.half_width == pytest.approx(1.6449 * 2.5, abs=1e-3)
    assert w.noise_half_width == pytest.approx(1.6449 * 2.0, abs=1e-3)
    assert aw.model_sd_points([]) == 0.0
    assert math.isclose(aw.binomial_sd_points(100.0, 10), 0.0)


def test_interval_schemes_follow_what_is_extrapolated(cat, cv):
    from dse.uncertainty.factors import prm_scheme

    q = cat.model(QPRM)
    assert prm_scheme(cv, "math500", DRAFT, T7, q) == "leave_one_row_out"
    assert prm_scheme(cv, "math500", DRAFT, "qwen2.5-7b-instruct", q) == "leave_one_pair_out"
    assert prm_scheme(cv, "math500", DRAFT, T7, None) == "leave_one_prm_out"
    assert prm_scheme(cv, "aime24", DRAFT, T7, q) == "leave_one_dataset_out"


@pytest.mark.slow
def test_calibration_script_check_is_current():
    """The full refit (about fifteen minutes on one core: 46 fits, the leave-one-row-out ones
    included, each from the three default starts): accuracy_model.toml and accuracy_cv.json
    are current."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_workloads.py"),
                        "--check", "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_model_doc_threshold_table_is_current(cat, cv):
    """docs/model.md's accuracy-against-threshold table is what the shipped model gives
    (`python scripts/calibrate_workloads.py` regenerates it)."""
    text = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
    assert acc.splice_curves(text, acc.threshold_curves(cat, cv)) == text, (
        "docs/model.md's threshold table is stale: run python scripts/calibrate_workloads.py")
