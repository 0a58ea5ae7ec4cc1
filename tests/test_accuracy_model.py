"""The accuracy model's in-chain rewrite factor, its Table III fit and its cross-validation."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.design import build_design
from dse.design_files import load_system
from dse.engine.closed_form import accuracy_only
from dse.reproduce import reported
from dse.resolve import override_spec as with_overrides
from dse.schedules import PRESETS
from dse.search.grid import KnobGrid, pair_tables
from dse.validation import accuracy as acc
from dse.workflow import (
    accuracy_provenance,
    in_chain_error_factor,
    in_chain_rewrite_error,
    nested_target_error,
    pair_key,
    step_probabilities,
)

ROOT = Path(__file__).resolve().parents[1]
DRAFT = "qwen2.5-0.5b-instruct"
T7, T15 = "qwen2.5-math-7b-instruct", "qwen2.5-math-1.5b-instruct"
DATASETS = ("gaokao2023en", "gsm8k", "math500", "olympiadbench")


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


def test_prm_bad_mean_by_hand():
    """c0 0.2 + c1 0.6 x (1 - 40/100) = 0.56; clipped to [0.02, 0.99]."""
    p = acc.Params(0.8, 0.2, 0.6, 1.0, {})
    assert p.prm_bad_mean(40.0) == pytest.approx(0.56)
    assert acc.Params(0.8, 1.0, 0.6, 1.0, {}).prm_bad_mean(0.0) == 0.99


def test_catalog_pairs_and_provenance(cat):
    w = cat.workload("math500")
    assert set(w.in_chain_error_factor) == {pair_key(DRAFT, T7), pair_key(DRAFT, T15)}
    kind, basis = accuracy_provenance(w, DRAFT, T15)
    assert kind == "calibrated" and "config2" in basis and "calibrate_workloads" in basis
    assert accuracy_provenance(w, DRAFT, T7)[0] == "calibrated"
    for draft, target in ((DRAFT, "qwen2.5-math-72b-instruct"), ("llama-3.2-1b-instruct", T7)):
        kind, basis = accuracy_provenance(w, draft, target)
        assert kind == "extrapolated" and "solo-accuracy form" in basis
        assert in_chain_error_factor(w, draft, target) == 1.0


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

    def at(r: float) -> float:
        return accuracy_only(d, replace(w, in_chain_error_factor={key: r}))

    assert at(rho + more) <= at(rho) + 1e-9
    assert at(1.0) == pytest.approx(accuracy_only(d, replace(w, in_chain_error_factor=None)),
                                    abs=1e-12)


def test_closed_form_and_sweep_tables_agree_with_the_factor(cat):
    """pair_tables (the sweep) uses the same in-chain rewrite error as the closed form: its
    rejection probability equals the closed form's and its accuracy is within the sweep's
    1-point mean-value tolerance, for both measured targets and an extrapolated one."""
    g = KnobGrid(np.array([0.5, 0.7, 0.9]), np.array([0.7, 0.7]), np.array([0, 5]),
                 np.array([3, 3]), ((False, False),))
    for target in (T7, T15, "qwen2.5-1.5b-instruct"):
        spec = with_overrides(load_system(cat, "paper-config2-3090"), {"target_model": target})
        for ds in ("math500", "gsm8k"):
            w = cat.workload(ds)
            pt = pair_tables(w, DRAFT, target, g, 4096)
            for i, tau in enumerate(g.accept):
                for k, (method, bt) in enumerate((("rsd", 0), ("brsd", 5))):
                    s = with_overrides(spec, {"accept_threshold": float(tau),
                                              "max_backtracks": bt})
                    d = build_design(cat, s, PRESETS[method])
                    assert pt.accuracy[i, k] == pytest.approx(accuracy_only(d, w), abs=1.0)
                    pr = step_probabilities(w, DRAFT, target, tau, 0.7)
                    assert pt.pa[i] == pytest.approx(float(pr.p_accept))


def test_simulator_uses_the_in_chain_rates(cat):
    """The simulator draws rewrites with the in-chain conditional rates: its accuracy tracks
    the closed form's for config2 (rho 1.69)."""
    from dse.engine.evaluate import evaluate

    d = build_design(cat, load_system(cat, "paper-config2-3090"), PRESETS["rsd"])
    w = cat.workload("math500")
    sim = evaluate(d, w, evaluator="simulator", problems=4000, seed=3)
    assert sim.accuracy == pytest.approx(accuracy_only(d, w), abs=2.5)


@pytest.fixture(scope="module")
def cv():
    return acc.load()


def test_cv_json_shape_and_sizes(cv):
    assert cv["schema_version"] == 1 and cv["generated_by"] == "scripts/calibrate_workloads.py"
    ids = {f"accuracy.{c}.{m}.{d}" for c in ("config1", "config2") for m in ("rsd", "brsd")
           for d in DATASETS}
    for sec, key in (("fit", "fitted"), ("leave_one_config_out", "predicted"),
                     ("leave_one_dataset_out", "predicted"), ("leave_one_row_out", "predicted")):
        rows = cv[sec]["rows"]
        assert {r["id"] for r in rows} == ids
        for r in rows:
            assert r["error_points"] == pytest.approx(r[key] - r["paper"], abs=1e-3)
        e = np.abs([r["error_points"] for r in rows])
        assert cv[sec]["median_abs_error"] == pytest.approx(np.median(e), abs=1e-3)
        assert cv[sec]["max_abs_error"] == pytest.approx(e.max(), abs=1e-3)
    assert len(cv["fit"]["parameters"]["in_chain_error_factor"]) == 2  # 6 parameters in all
    assert cv["fit"]["max_rejection_probability"] <= acc.REJECTION_CAP + 1e-3


def test_cv_json_fit_is_what_the_catalog_predicts(cat, cv):
    """The json's in-sample values are today's closed-form accuracies from the workload files,
    and its parameters are the ones written into every workload (the fit is current)."""
    rows = acc.settings(cat, reported())
    tool = {s.id: accuracy_only(s.design, cat.workload(s.dataset)) for s in rows}
    for r in cv["fit"]["rows"]:
        assert r["fitted"] == pytest.approx(tool[r["id"]], abs=2e-3), r["id"]
    p = cv["fit"]["parameters"]
    params = acc.Params(p["prm_good_mean"], p["prm_bad_mean_c0"], p["prm_bad_mean_c1"],
                        p["error_nesting"], p["in_chain_error_factor"])
    for ds in DATASETS:
        w = cat.workload(ds)
        want = acc.workload_with(w, params, DRAFT)
        for k in ("prm_good_alpha", "prm_good_beta", "prm_bad_alpha", "prm_bad_beta",
                  "error_nesting"):
            assert getattr(w, k) == pytest.approx(getattr(want, k), rel=1e-4), (ds, k)
        assert dict(w.in_chain_error_factor) == pytest.approx(p["in_chain_error_factor"],
                                                              rel=1e-4)


def test_loco_falls_back_to_the_solo_form(cat, cv):
    """Leaving config2 out leaves the 1.5B's factor unknown: those predictions are the
    solo-accuracy form, higher than the paper's (the 1.5B loses more in the chain)."""
    rows = [r for r in cv["leave_one_config_out"]["rows"] if ".config2." in r["id"]]
    assert all(r["error_points"] > 0 for r in rows)


@pytest.mark.slow
def test_calibration_script_check_is_current():
    """The full refit (about five minutes: 23 fits, the leave-one-row-out ones included):
    workloads and accuracy_cv.json are current."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_workloads.py"),
                        "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
