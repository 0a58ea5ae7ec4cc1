"""The device calibration: fit errors recomputed, fitted values current, predictions in band."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dse import calibrate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows(cat):
    return calibrate.validation_rows(cat)


def test_every_measured_point_within_band(rows):
    """The issue's bar: every measured.toml decode point within +-20% (Jetson +-35%)."""
    measured = [r for r in rows if r.id.startswith("gpu_decode.") and
                (r.fitted or "jetson" in r.id)]
    assert len(measured) == 14
    for r in measured:
        tol = 0.35 if "jetson" in r.id else 0.20
        assert abs(r.rel_error) <= tol, (r.id, r.rel_error)


def test_recorded_fit_error_matches(cat, rows):
    """FlexLLM's fit error written into its file is what the model gives today (the serving
    profiles' are checked against dse/data/gpu_cv.json in tests/test_gpu_fit.py)."""
    import tomllib

    rec = tomllib.loads((ROOT / "boards" / "engines" / "flexllm.toml").read_text())["calibration"]
    errs = np.array([r.rel_error for r in rows if r.fitted and r.id.startswith("fpga_")])
    assert rec["fit_rms_rel_error"] == pytest.approx(np.sqrt(np.mean(errs**2)), rel=1e-3, abs=1e-6)
    assert rec["fit_max_rel_error"] == pytest.approx(np.max(np.abs(errs)), rel=1e-3, abs=1e-6)


@pytest.mark.slow
def test_fitted_values_are_current():
    """Refitting from scratch reproduces the catalog values (scripts/calibrate_devices.py)."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_devices.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip().endswith("current")


def test_links_in_measured_range(rows):
    for r in rows:
        if r.id.startswith("link."):
            assert r.within, r.id
