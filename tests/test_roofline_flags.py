"""`dse roofline` FPGA build flags: --engine, --mac-lanes, --channels (with --clock-mhz)."""

from __future__ import annotations

import json

import pytest

from dse.cli import main
from dse.io.roofline import roofline

M = "qwen2.5-0.5b-instruct"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_reports_engine_and_knobs(capsys):
    code, out, _ = run(capsys, "roofline", "--model", M, "--device", "u280", "--engine",
                       "flightllm", "--mac-lanes", "1024", "--channels", "16", "--json")
    assert code == 0
    r = json.loads(out)
    assert (r["engine"], r["mac_lanes"], r["channels"], r["clock_mhz"]) == (
        "flightllm", 1024, 16, 225.0)


def test_defaults_are_the_flexllm_build(cat):
    r = roofline(cat, model=M, device="u280")
    assert (r["engine"], r["mac_lanes"], r["channels"], r["clock_mhz"]) == (
        "flexllm", 2048, 32, 300.0)
    g = roofline(cat, model=M, device="a100-80gb-sxm")
    assert (g["engine"], g["mac_lanes"], g["channels"]) == (None, None, None)


def test_fewer_channels_and_lanes_are_slower(cat):
    base = roofline(cat, model=M, device="u280")["decode_s_per_token"]
    assert roofline(cat, model=M, device="u280", channels=8)["decode_s_per_token"] > base
    assert roofline(cat, model=M, device="u280", mac_lanes=64)["decode_s_per_token"] > base


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["--device", "u280", "--mac-lanes", "99999"], 4,
         "mac_lanes: 99999 lanes is outside u280's 1..18048 lanes"),
        (["--device", "u280", "--channels", "33"], 4,
         "channels: 33 channels is outside u280's 1..32 channels"),
        (["--device", "kv260", "--channels", "2"], 4, "outside kv260's 1..1 channels"),
        (["--device", "rtx-3090", "--channels", "4"], 2, "--channels: applies to FPGA"),
        (["--device", "rtx-3090", "--mac-lanes", "4"], 2, "--mac-lanes: applies to FPGA"),
        (["--device", "rtx-3090", "--engine", "flightllm"], 2, "--engine: applies to FPGA"),
        (["--device", "u280", "--engine", "nope"], 2, "unknown fpga-engine 'nope'; valid:"),
    ],
)
def test_bad_values_one_line(capsys, argv, code, words):
    got, _out, err = run(capsys, "roofline", "--model", M, *argv)
    assert got == code
    assert words in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(("argv", "words"), [(["--mac-lanes", "0"], "--mac-lanes: must be in 1.."),
                                           (["--channels", "-1"], "--channels"),
                                           (["--mac-lanes", "x"], "--mac-lanes")])
def test_unparseable_values_are_usage_errors(capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        main(["roofline", "--model", M, "--device", "u280", *argv])
    assert e.value.code == 2
    assert words in capsys.readouterr().err
