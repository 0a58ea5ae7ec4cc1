"""The device calibration: fit errors recomputed, fitted values current, predictions in band."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dse.validation import calibrate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows(cat):
    return calibrate.validation_rows(cat)


def test_every_measured_point_within_band(rows):
    """The issue's bar: every decode point of measured.toml (the 14 the fits read) within
    +-20% (Jetson +-35%)."""
    fitted = [r for r in rows if r.id.startswith("gpu_decode.") and r.label == "fitted"]
    assert len(fitted) == 14
    for r in fitted:
        tol = 0.35 if "jetson" in r.id else 0.20
        assert abs(r.rel_error) <= tol, (r.id, r.rel_error)


def test_held_out_points_within_what_cross_validation_saw(rows):
    """reference_points.toml's 11 HF points, which no fit reads, land within the largest
    leave-one-out error of hf-eager's own fit (its [calibration] loo_max_abs_rel_error: how
    far the fit misses a point it did not see); median under 10%. Measured at this commit:
    median 4.2%, worst +21.0% (Qwen2.5-7B at a 14,336-token input, where HF's attention
    slows more than the fitted attention efficiency gives)."""
    import tomllib

    held = [r for r in rows if r.id.startswith("gpu_decode.") and r.label == "predicted"]
    assert len(held) == 11 and all("hf-transformers" in r.id for r in held)
    cal = tomllib.loads((ROOT / "boards" / "serving" / "hf-eager.toml").read_text())[
        "calibration"]
    assert cal["points"] == 101  # measured.toml's and published.toml's, not these
    errs = np.abs([r.rel_error for r in held])
    assert np.max(errs) <= cal["loo_max_abs_rel_error"]
    assert np.median(errs) <= 0.10


def test_recorded_fit_error_matches(cat, rows):
    """FlexLLM's fit error written into its file is what the model gives today (the serving
    profiles' are checked against dse/data/gpu_cv.json in tests/test_gpu_fit.py)."""
    import tomllib

    rec = tomllib.loads((ROOT / "boards" / "engines" / "flexllm.toml").read_text())["calibration"]
    errs = np.array([r.rel_error for r in rows
                     if r.label == "fitted" and r.id.startswith("fpga_")])
    assert rec["fit_rms_rel_error"] == pytest.approx(np.sqrt(np.mean(errs**2)), rel=1e-3, abs=1e-6)
    assert rec["fit_max_rel_error"] == pytest.approx(np.max(np.abs(errs)), rel=1e-3, abs=1e-6)


def _calibrate_devices():
    import importlib.util

    spec = importlib.util.spec_from_file_location("calibrate_devices",
                                                  ROOT / "scripts" / "calibrate_devices.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_current_means_the_same_text_and_numbers_within_fit_noise():
    """--check's comparison: numbers within 0.1% (or 1e-6 absolute) are the same fit; any
    other text change, or a number 1% off, is stale; a serving profile's values may drift
    where the refit predicts every published point alike (any_values). A git hash that reads
    as a number (8e94910: inf) is compared as text."""
    close = _calibrate_devices().numbers_close
    assert close("a = 1.0\n", "a = 1.0005\n")
    assert close("gap = 2.07e-12\n", "gap = 2.09e-12\n")  # at its zero bound
    assert close('src = "x @ 8e94910"\n', 'src = "x @ 8e94910"\n')
    assert not close("a = 1.0\n", "a = 1.01\n")
    assert close("a = 19.35\n", "a = 15.37\n", any_values=True)
    assert not close("a = 1\n", "b = 1\n", any_values=True)


@pytest.mark.slow
def test_fitted_values_are_current():
    """Refitting from scratch reproduces the catalog values (scripts/calibrate_devices.py), up
    to fit noise: the same text, numbers within 0.1%, a serving profile's flat directions
    free where every published point is predicted alike (the script's docstring)."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_devices.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().endswith("current")


def test_links_in_measured_range(rows):
    for r in rows:
        if r.id.startswith("link."):
            assert r.within, r.id


def test_a_stale_check_names_what_moved():
    """dse.validation.current.differences lists each leaf `close` refuses, with its path and
    both values (what a --check prints on a machine whose refit moved), and nothing within
    the tolerance."""
    from dse.validation.current import close, differences

    shipped = {"kappa": 8.0, "f": {"a": 0.05, "b": 18.7}, "rows": [1.0, 2.0], "s": "x"}
    refit = {"kappa": 8.0004, "f": {"a": 0.05, "b": 21.0}, "rows": [1.0, 2.5], "s": "x",
             "new": 1}
    assert not close(shipped, refit)
    assert differences(shipped, refit) == ["/new: only one side has it", "/f/b: 18.7 -> 21.0",
                                           "/rows[1]: 2.0 -> 2.5"]
    assert differences(shipped, shipped) == [] and close(shipped, shipped)
