"""No command writes over one of its own inputs: an output file or directory that is an input
(a trace, a design file, a workload file, a space file, a catalog directory), or holds one, is
refused with one line and exit 2 before anything is written; so are two outputs on one path and
a bundle or search result inside a catalog directory. Numeric flags are capped (dse.core.limits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dse.cli import main
from dse.core.limits import MAX_CONTEXT_TOKENS, MAX_PROBLEMS

SIM = ["simulate", "--system", "paper-config1-u280", "--scenario", "gsm8k", "--problems", "20"]


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], words: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_trace_out_over_its_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    assert main([*SIM, "--trace-out", str(trace)]) == 0
    before = trace.read_bytes()
    capsys.readouterr()
    _refused([*SIM, "--trace", str(trace), "--trace-out", str(trace)], capsys,
             "would overwrite the --trace input")
    _refused([*SIM, "--trace", str(trace), "--timeline-out", str(tmp_path / ".." / tmp_path.name
                                                                  / "t.jsonl")],
             capsys, "would overwrite the --trace input")
    assert trace.read_bytes() == before


def test_two_outputs_on_one_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.json"
    _refused([*SIM, "--trace-out", str(out), "--timeline-out", str(out)], capsys,
             "the same path as --trace-out")
    assert not out.exists()


def test_export_over_its_design_and_inside_a_catalog(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "b"
    assert main(["export", "--system", "paper-config1-u280", "--out", str(bundle)]) == 0
    design = bundle / "design.toml"
    before = design.read_bytes()
    capsys.readouterr()
    _refused(["export", "--design", str(design), "--out", str(bundle), "--force"], capsys,
             "would overwrite the --design input")
    assert design.read_bytes() == before
    cat = tmp_path / "mycat"
    cat.mkdir()
    _refused(["export", "--system", "paper-config1-u280", "--catalog", str(cat), "--out",
              str(cat / "bundle")], capsys, "inside the catalog directory")
    _refused(["export", "--system", "paper-config1-u280", "--catalog", str(cat), "--out",
              str(cat), "--force"], capsys, "would overwrite the --catalog input")
    assert list(cat.iterdir()) == []


def test_sweep_out_over_its_space(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fuzzing import write_small_space

    space = write_small_space(tmp_path / "space.toml")
    _refused(["sweep", "--space", str(space), "--out", str(tmp_path)], capsys,
             "would overwrite the --space input")


@pytest.mark.parametrize(("argv", "words"), [
    (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--context",
      "1" + "0" * 400], "must be at most"),
    (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--context",
      str(MAX_CONTEXT_TOKENS + 1)], f"must be in 0..{MAX_CONTEXT_TOKENS}"),
    (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--prompt-tokens",
      "1" + "0" * 30], "must be in 1..10000000"),
    (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "a100-80gb-sxm", "--tp",
      "1000"], "must be in 1..64"),
    ([*SIM[:-2], "--problems", str(MAX_PROBLEMS + 1)], f"must be in 1..{MAX_PROBLEMS}"),
    ([*SIM, "--seed", "9" * 5000], "must be at most"),
])
def test_numeric_flags_are_capped(argv: list[str], words: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


@pytest.mark.parametrize("mhz", ["1e300", "1e17", "10", "501"])
def test_roofline_refuses_a_clock_the_board_cannot_run(mhz: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280",
                 "--clock-mhz", mhz, "--json"]) == 4
    err = capsys.readouterr().err
    assert "outside u280's 50..500 MHz" in err and err.count("\n") == 1
