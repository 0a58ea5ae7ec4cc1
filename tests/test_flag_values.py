"""Flags as a new user mistypes them (a new-user sweep's findings): an option given twice, an
empty value, a library's error about a flag's value, --set that breaks a system, --debug,
directories and files of the wrong kind where a name or file is expected. Each is one error
line naming the flag (or file and key) and what is wrong, with the documented exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dse.cli import main

SYS = "paper-config1-u280"
MODEL = ["--model", "qwen2.5-0.5b-instruct"]
SERVE = ["serve", *MODEL, "--device", "rtx-3090"]
ROOF = ["roofline", *MODEL, "--device", "rtx-3090"]


def _last_line(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


def _one_line(rc: int, code: int, capsys: pytest.CaptureFixture[str], command: str) -> str:
    err = capsys.readouterr().err
    assert rc == code, err
    assert err.count("\n") == 1 and err.startswith(f"dse {command}: error: "), err
    return err.strip()


# an option of each command that takes one value, given twice: (argv, the flag)
TWICE = [
    ([*SERVE, "--rate", "1", "--rate", "2"], "--rate"),
    ([*SERVE, "--concurrency", "1", "--concurrency", "2"], "--concurrency"),
    ([*SERVE, "--batch", "1", "--batch", "2"], "--batch"),
    (["serve", *MODEL, "--device", "rtx-3090", "--device", "a10", "--rate", "1"], "--device"),
    ([*SERVE, "--rate", "1", "--tp", "1", "--tp", "2"], "--tp"),
    ([*SERVE, "--rate", "1", "--replicas", "1", "--replicas", "2"], "--replicas"),
    ([*SERVE, "--rate", "1", "--requests", "10", "--requests", "20"], "--requests"),
    ([*SERVE, "--rate", "1", "--precision", "bf16", "--precision", "fp8"], "--precision"),
    ([*SERVE, "--rate", "1", "--serving", "vllm-v1", "--serving", "vllm-v1"], "--serving"),
    ([*SERVE, "--rate", "1", "--goodput", "ttft:100", "--goodput", "tpot:20"], "--goodput"),
    ([*SERVE, "--rate", "1", "--input-tokens", "5", "--input-tokens", "6"], "--input-tokens"),
    ([*SERVE, "--rate", "1", "--output-tokens", "5", "--output-tokens", "6"],
     "--output-tokens"),
    ([*SERVE, "--rate", "1", "--dataset", "sharegpt", "--dataset", "sharegpt"], "--dataset"),
    ([*SERVE, "--rate", "1", "--evaluator", "simulator", "--evaluator", "closed-form"],
     "--evaluator"),
    (["simulate", "--system", SYS, "--problems", "5", "--problems", "6"], "--problems"),
    (["simulate", "--system", SYS, "--seed", "1", "--seed", "1"], "--seed"),
    (["simulate", "--system", SYS, "--trace", "a", "--trace", "b"], "--trace"),
    (["simulate", "--system", SYS, "--trace-out", "a", "--trace-out", "b"], "--trace-out"),
    (["simulate", "--system", SYS, "--timeline-out", "a", "--timeline-out", "b"],
     "--timeline-out"),
    ([*ROOF, "--model", "qwen2.5-7b-instruct"], "--model"),
    ([*ROOF, "--device", "a10"], "--device"),
    ([*ROOF, "--context", "1", "--context", "2"], "--context"),
    (["sweep", "--out", "a", "--out", "b"], "--out"),
    (["sweep", "--space", "a", "--space", "b"], "--space"),
    (["sweep", "--rate", "1", "--rate", "2"], "--rate"),
    (["sweep", "--slo", "ttft:100", "--slo", "tpot:20"], "--slo"),
    (["sweep", "--min-accuracy", "50", "--min-accuracy", "60"], "--min-accuracy"),
    (["optimize", "--trials", "2", "--trials", "3"], "--trials"),
    (["optimize", "--storage", "a", "--storage", "b"], "--storage"),
    (["studies", "--storage", "a", "--storage", "b"], "--storage"),
    (["export", "--study", "s", "--storage", "a", "--storage", "b", "--out", "o"], "--storage"),
    (["export", "--study", "s", "--trial", "1", "--trial", "2", "--out", "o"], "--trial"),
    (["reproduce", "--markdown", "a", "--markdown", "b"], "--markdown"),
]


@pytest.mark.parametrize(("argv", "flag"), TWICE, ids=[f"{a[0]} {f}" for a, f in TWICE])
def test_an_option_given_twice_is_refused(argv: list[str], flag: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Never the last one silently winning: exit 2, the line names the flag, before any
    computing (argparse's own error, as for --system given twice)."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    line = _last_line(capsys)
    assert line.startswith(f"dse {argv[0]}: error: {flag}: given twice ("), line


def test_a_list_option_given_twice_says_to_give_its_values_at_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*SERVE, "--rate", "1", "--goodput", "ttft:100", "--goodput", "tpot:20"])
    assert _last_line(capsys) == ("dse serve: error: --goodput: given twice (ttft:100, then "
                                  "tpot:20); give it once, with all its values (--goodput "
                                  "ttft:100 tpot:20)")


def test_repeatable_options_stay_repeatable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--system", SYS, "--scenario", "gsm8k", "--schedule", "rsd",
                 "--schedule", "brsd", "--set", "accept_threshold=0.8", "--set",
                 "max_backtracks=2", "--json"]) == 0
    assert {"rsd", "brsd"} <= set(json.loads(capsys.readouterr().out)["schedules"])


@pytest.mark.parametrize(("argv", "command", "words"), [
    (["evaluate", "--system", SYS, "--scenario", "gsm8k", "--set", "accept_threshold=0.8",
      "--set", "accept_threshold=0.9"], "evaluate",
     "--set: accept_threshold: given twice; set each key once"),
    (["compare", SYS, f"{SYS}:schedule=rsd,schedule=brsd", "--scenario", "gsm8k"], "compare",
     f"DESIGN #2 ({SYS}:schedule=rsd,schedule=brsd): schedule: given twice"),
    (["compare", SYS, f"{SYS}:accept_threshold=0.8,accept_threshold=0.9", "--scenario",
      "gsm8k"], "compare", "accept_threshold: given twice"),
    (["sweep", "--objective", "latency", "--objective", "latency"], "sweep",
     "--objective latency: given twice"),
])
def test_a_key_given_twice_is_refused(argv: list[str], command: str, words: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line(main(argv), 2, capsys, command)
    assert words in line, line


def test_a_catalog_directory_given_twice_is_named_as_such(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not "duplicate gpu name": the directory itself is given twice (or is the shipped one)."""
    d = tmp_path / "cat"
    d.mkdir()
    shutil.copy(Path(__file__).parent.parent / "boards" / "gpus" / "rtx-3090.toml",
                d / "my-3090.toml")
    (d / "my-3090.toml").write_text((d / "my-3090.toml").read_text(encoding="utf-8").replace(
        'name = "rtx-3090"', 'name = "my-3090"'), encoding="utf-8")
    line = _one_line(main(["catalog", "boards", "--catalog", str(d), "--catalog",
                           f"{d}/"]), 2, capsys, "catalog")
    assert f"--catalog {d}/: the same directory given twice (also --catalog {d})" in line
    shipped = Path(__file__).parent.parent / "boards"
    line = _one_line(main(["catalog", "boards", "--catalog", str(shipped)]), 2, capsys,
                     "catalog")
    assert "the shipped catalog directory" in line


EMPTY = [
    (["evaluate", "--design", ""], "--design"),
    (["evaluate", "--system", SYS, "--scenario", ""], "--scenario"),
    (["sweep", "--space", ""], "--space"),
    (["catalog", "boards", "--catalog", ""], "--catalog"),
    (["studies", "--storage", ""], "--storage"),
    (["roofline", *MODEL, "--device", ""], "--device"),
    (["serve", *MODEL, "--device", "", "--rate", "1"], "--device"),
]


@pytest.mark.parametrize(("argv", "flag"), EMPTY, ids=[f"{a[0]} {f}" for a, f in EMPTY])
def test_an_empty_value_is_named_empty(argv: list[str], flag: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Never "." read as a directory, the working directory scanned, or the default used."""
    monkeypatch.chdir(tmp_path)
    line = _one_line(main(argv), 2, capsys, argv[0])
    assert line.startswith(f"dse {argv[0]}: error: {flag}: the value is empty"), line
    assert list(tmp_path.iterdir()) == []


LIBRARY_FLAGS = [
    (["roofline", *MODEL, "--device", "h100-sxm", "--clock-mhz", "300"], "--clock-mhz",
     "applies to FPGA boards"),
    (["roofline", "--model", "qwen2.5-7b-instruct", "--device", "rtx-3090", "--tp", "3"],
     "--tp", "does not divide the 28 attention heads"),
    (["roofline", *MODEL, "--device", "u280", "--offload-fraction", "0.5"],
     "--offload-fraction", "holds every weight in its own memory"),
    (["roofline", *MODEL, "--device", "nonesuch"], "--device", "unknown device 'nonesuch'"),
    ([*SERVE, "--rate", "1", "--kv-precision", "bogus"], "--kv-precision",
     "'bogus' not supported on a GPU"),
    ([*SERVE, "--rate", "1", "--precision", "bogus"], "--precision",
     "unknown precision 'bogus'"),
    ([*SERVE, "--rate", "1", "--serving", "bogus"], "--serving", "unknown gpu-serving 'bogus'"),
    (["serve", "--system", "nonesuch", "--rate", "1"], "--system", "unknown system"),
]


@pytest.mark.parametrize(("argv", "flag", "words"), LIBRARY_FLAGS,
                         ids=[f"{a[0]} {f}" for a, f, _ in LIBRARY_FLAGS])
def test_a_library_error_about_a_flag_names_the_flag(argv: list[str], flag: str, words: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Not the library's argument name (clock_mhz:, kv_precision:) and exit 3 as for a file:
    the flag, exit 2, the reason kept."""
    line = _one_line(main(argv), 2, capsys, argv[0])
    assert line.startswith(f"dse {argv[0]}: error: {flag}: ") and words in line, line


def test_a_set_that_breaks_a_shipped_system_names_set(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """A target whose tokenizer the draft does not share, found as the design is built: the
    --set value is the mistake, not the shipped system file."""
    line = _one_line(main(["evaluate", "--system", SYS, "--scenario", "math500", "--set",
                           "target_model=llama-2-70b"]), 2, capsys, "evaluate")
    assert line == ("dse evaluate: error: --set: draft_model: draft qwen2.5-0.5b-instruct "
                    "(qwen2) and target llama-2-70b (llama2) do not share a tokenizer"), line


@pytest.mark.parametrize(("argv", "code"), [
    (["evaluate", "--system", SYS, "--scenario", "gsm8k", "--set", "accept_threshold=2"], 2),
    (["evaluate", "--system", SYS, "--scenario", "math500", "--set",
      "target_model=llama-2-70b"], 2),
    (["evaluate", "--design", "missing.toml"], 3),
])
def test_debug_shows_the_traceback_and_keeps_the_exit_code(
        argv: list[str], code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == code
    plain = capsys.readouterr().err
    assert main([*argv, "--debug"]) == code
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith(plain.splitlines()[-1] + "\n"), err


def test_a_directory_or_a_design_file_where_a_workload_or_system_is_expected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    line = _one_line(main(["compare", SYS, "adir", "--scenario", "gsm8k"]), 3, capsys,
                     "compare")
    assert "DESIGN #2 (adir): adir: is a directory, not a file" in line, line
    line = _one_line(main(["evaluate", "--system", SYS, "--scenario", "adir"]), 3, capsys,
                     "evaluate")
    assert "adir: is a directory, not a file; --scenario takes a workload" in line, line
    assert main(["export", "--system", SYS, "--scenario", "gsm8k", "--out", "b"]) == 0
    capsys.readouterr()
    line = _one_line(main(["evaluate", "--system", SYS, "--scenario", "b/design.toml"]), 3,
                     capsys, "evaluate")
    assert "b/design.toml: kind: 'design': a design file (read with --design), not a " \
        "catalog file; --scenario takes a workload" in line, line


@pytest.mark.parametrize("argv", [
    [*SERVE, "--rate", "1", "--seed", "3"],
    [*SERVE, "--batch", "4", "--seed", "0", "--evaluator", "closed-form"],
    ["serve", "--system", SYS, "--rate", "1", "--seed", "5"],
])
def test_a_seed_for_the_closed_form_is_refused(argv: list[str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`dse serve --seed 3` without --evaluator simulator ran the closed form, which draws
    nothing, and echoed `"seed": 3` in its answer: a flag silently ignored. Now a usage error
    naming --seed and the evaluator it needs; with the simulator it still runs."""
    line = _one_line(main(argv), 2, capsys, "serve")
    assert "--seed" in line and "--evaluator simulator" in line, line
    assert main([*SERVE, "--rate", "1", "--seed", "3", "--evaluator", "simulator",
                 "--requests", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["load"]["seed"] == 3
