"""The command line: smoke over every board x model pair, JSON keys, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dse.cli import main

ROOFLINE_KEYS = {"model", "device", "precision", "serving", "decode_s_per_token", "prefill_s",
                 "bound", "weights_bytes", "kv_bytes_per_token", "fits", "power_w"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_roofline_every_board_model_pair(cat, capsys):
    devices = cat.names("gpu") + cat.names("fpga")
    for d in devices:
        for m in cat.names("model"):
            code, out, err = run(capsys, "roofline", "--model", m, "--device", d, "--json")
            assert code == 0, (d, m, err)
            r = json.loads(out)
            assert ROOFLINE_KEYS <= set(r)
            assert r["decode_s_per_token"] > 0 and r["prefill_s"] > 0
            assert r["bound"] in ("memory", "compute", "overhead")
            assert r["precision"] == ("w8a8" if d in cat.names("fpga") else "bf16")


def test_roofline_text_and_defaults(capsys):
    code, out, _ = run(capsys, "roofline", "--model", "qwen2.5-0.5b-instruct", "--device",
                       "u280", "--clock-mhz", "200")
    assert code == 0
    assert "ms/token" in out and "fits" in out


def test_fpga_clock_changes_speed(capsys):
    def speed(mhz):
        _, out, _ = run(capsys, "roofline", "--model", "qwen2.5-0.5b-instruct", "--device",
                        "u280", "--clock-mhz", str(mhz), "--json")
        return json.loads(out)["decode_s_per_token"]

    assert speed(200) > speed(300)


def test_does_not_fit_is_reported(capsys):
    code, out, _ = run(capsys, "roofline", "--model", "qwen2.5-math-72b-instruct", "--device",
                       "u280", "--json")
    assert code == 0
    r = json.loads(out)
    assert r["fits"] is False and any("do not fit" in w for w in r["infeasible"])


@pytest.mark.parametrize("what", ["boards", "models", "serving", "scenarios"])
def test_catalog(capsys, what):
    code, out, _ = run(capsys, "catalog", what, "--json")
    assert code == 0
    json.loads(out)


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u281"], 2,
         "unknown device 'u281'"),
        (["roofline", "--model", "gpt-5", "--device", "u280"], 2, "unknown model 'gpt-5'"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090",
          "--precision", "fp4"], 2, "unknown precision"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090",
          "--clock-mhz", "300"], 3, "applies to FPGA"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090",
          "--serving", "tgi"], 2, "unknown gpu-serving 'tgi'"),
    ],
)
def test_errors_one_line(capsys, argv, code, words):
    got, _out, err = run(capsys, *argv)
    assert got == code
    assert words in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_usage_errors_exit_2(capsys):
    for argv in (["roofline", "--model", "x"], ["roofline", "--model", "x", "--device", "y",
                                                "--context", "-5"], ["frobnicate"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    capsys.readouterr()


def test_malformed_user_catalog(tmp_path, capsys):
    (tmp_path / "bad.toml").write_text('schema_version = 1\nkind = "link"\nname = "bad"\n'
                                       'generation = 4\nlanes = -16\n')
    code, _, err = run(capsys, "catalog", "boards", "--catalog", str(tmp_path))
    assert code == 3
    assert "bad.toml: lanes: must be > 0" in err


def test_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "dse.cli", "roofline", "--model",
                        "qwen2.5-7b-instruct", "--device", "rtx-3090", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fits"] is True
