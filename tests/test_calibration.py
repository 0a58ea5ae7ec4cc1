"""The device calibration: fit errors recomputed, fitted values current, predictions in band."""

from __future__ import annotations

import json
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


def test_fit_noise_between_machines_is_current_and_a_moved_prediction_is_not():
    """noise_differences (what calibrate_width.py and calibrate_workloads.py --check compare):
    the fitted parameters may move along a flat direction (OpenBLAS's Haswell kernels moved
    the width model's mean-aggregation factor 2.26 -> 2.00 and CV residuals by 0.02 points);
    a prediction moved by more than 0.1 points, a share by more than two rows, a count, a row
    or a parameter name added or lost is stale."""
    from dse.validation.current import largest_move, noise_differences

    shipped = {"parameters": {"mean": 2.26165, "sep": {"orm": 4.97}},
               "cv": {"n": 100, "within_3_points": 0.70, "residuals": {"r1": -0.0693,
                                                                      "r2": 1.1307}},
               "generated_by": "x"}
    noise = {"parameters": {"mean": 2.0005, "sep": {"orm": 4.66}},
             "cv": {"n": 100, "within_3_points": 0.71, "residuals": {"r1": -0.0812,
                                                                    "r2": 1.1207}},
             "generated_by": "x"}
    assert noise_differences(shipped, noise) == []
    size, where = largest_move(shipped, noise)
    assert where == "/cv/residuals/r1" and size == pytest.approx(0.0119)
    for path, value, words in (
            (("cv", "residuals", "r2"), 1.2608, "/cv/residuals/r2: 1.1307 -> 1.2608"),
            (("cv", "within_3_points"), 0.73, "/cv/within_3_points: 0.7 -> 0.73"),
            (("cv", "n"), 101, "/cv/n: 100 -> 101"),
            (("parameters", "sep", "prm"), 1.0, "/parameters/sep/prm: only one side has it"),
            (("generated_by",), "y", "/generated_by: 'x' -> 'y'")):
        moved = json.loads(json.dumps(noise))
        *up, last = path
        node = moved
        for k in up:
            node = node[k]
        node[last] = value
        assert words in noise_differences(shipped, moved), words


def test_calibrate_width_check_passes_fit_noise_and_fails_a_moved_prediction(monkeypatch,
                                                                             capsys):
    """calibrate_width.py --check on a refit (run() replaced, no fit): the shipped doc with a
    flat parameter moved (aggregation_factor/mean 2.26 -> 2.00) and a left-out fold's residual
    moved 0.5 points, as another machine's refit gave, is current and says so; a fit row's
    prediction moved 0.3 points is stale and named. Nothing is written either way."""
    import importlib.util

    from dse.width.params import from_dict

    spec = importlib.util.spec_from_file_location(
        "calibrate_width", ROOT / "scripts" / "calibrate_width.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    shipped = json.loads(script.CV_PATH.read_text(encoding="utf-8"))
    before = script.CV_PATH.read_bytes(), script.MODEL_PATH.read_bytes()

    def check(doc: dict) -> tuple[int, str]:
        monkeypatch.setattr(script, "run", lambda: (from_dict(doc["parameters"]), doc))
        monkeypatch.setattr(sys, "argv", ["calibrate_width.py", "--check"])
        code = script.main()
        return code, capsys.readouterr().out

    noise = json.loads(json.dumps(shipped))
    noise["parameters"]["aggregation_factor"]["mean"] = 2.0005
    first = next(iter(noise["cv"]["policy"]["residuals"]))
    noise["cv"]["policy"]["residuals"][first] += 0.5
    code, out = check(noise)
    assert code == 0 and "\ncurrent\n" in f"\n{out}", out
    assert "within fit noise: 1 parameters moved" in out and "aggregation_factor/mean" in out
    moved = json.loads(json.dumps(shipped))
    row = next(iter(moved["fit"]["rows"]))
    moved["fit"]["rows"][row] += 0.3
    code, out = check(moved)
    assert code == 1 and f"moved: /fit/rows/{row}:" in out, out
    assert (script.CV_PATH.read_bytes(), script.MODEL_PATH.read_bytes()) == before


def test_calibrate_workloads_check_passes_fit_noise_and_fails_a_moved_prediction(monkeypatch,
                                                                                 capsys):
    """calibrate_workloads.py --check on a refit (the cross-validation replaced, no fit): two
    leave-one-dataset-out errors moved 0.0036 points (CI's and a Haswell refit's noise, stale
    under the old 1e-3 comparison) are current; an in-sample prediction moved 0.3 points is
    stale and named."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "calibrate_workloads", ROOT / "scripts" / "calibrate_workloads.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    shipped = script.acc.load()
    before = script.CV_PATH.read_bytes(), script.MODEL_PATH.read_bytes()

    def check(doc: dict) -> tuple[int, str]:
        monkeypatch.setattr(script.acc, "cross_validate", lambda *a, **k: (None, doc))
        monkeypatch.setattr(sys, "argv", ["calibrate_workloads.py", "--check", "--quiet"])
        code = script.main()
        return code, capsys.readouterr().out

    noise = json.loads(json.dumps(shipped))
    for r in noise["leave_one_dataset_out"]["rows"][6:8]:
        r["error_points"] += 0.0036
    code, out = check(noise)
    assert code == 0 and out.endswith("current\n"), out
    moved = json.loads(json.dumps(shipped))
    moved["fit"]["rows"][0]["fitted"] += 0.3
    code, out = check(moved)
    assert code == 1 and f"moved: /fit/rows[0]/fitted: {shipped['fit']['rows'][0]['fitted']!r}" \
        in out, out
    assert out.endswith("stale\n"), out
    assert (script.CV_PATH.read_bytes(), script.MODEL_PATH.read_bytes()) == before


def test_a_fitted_value_at_its_zero_bound_is_written_as_a_number_the_catalog_loads():
    """calibrate_devices.py writes a fitted term that another machine's refit leaves at 1e-35
    (its zero bound, floating-point noise) as 0: the catalog refuses a nonzero number under
    MIN_ABS (1e-30), so a refit can never write a file the loader then refuses."""
    import importlib.util

    from dse.specs.schema import MIN_ABS

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location(
            "calibrate_devices", ROOT / "scripts" / "calibrate_devices.py")
        assert spec is not None and spec.loader is not None
        script = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(script)
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert [script.number(v) for v in (1e-35, -MIN_ABS / 2, 1.58283e-22, 12.345678)] == [
        "0", "0", "1.58283e-22", "12.3457"]
