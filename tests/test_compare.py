"""`dse compare A B [C ...]` (dse/cli/compare.py): the same numbers as the resolver and the
Python API, each difference with the joint 90% interval `dse evaluate` uses for its margin
against the target alone, one-line errors naming the DESIGN argument, and `dse evaluate` with
two --system flags pointing here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import dse
from dse.cli import main
from dse.cli.compare import METRICS, parse_design_arg
from dse.errors import UsageError

BASE = "paper-config1-u280"


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_numbers_are_the_resolvers_and_intervals_are_joint(
        capsys: pytest.CaptureFixture[str]) -> None:
    from dse.uncertainty.joint import difference_interval

    out = _json(["compare", BASE, f"{BASE}:accept_threshold=0.9,backtracking=false",
                 "paper-config1-3090:schedule=brsd", "--scenario", "math500"], capsys)
    assert out["baseline"] == BASE and out["workload"] == "math500"
    assert [d["schedule"] for d in out["designs"]] == [
        "heteroreason", "custom(step_ahead,shadow_sync)", "brsd"]
    a = dse.load_design(BASE)
    b = dse.load_design(BASE, overrides={"accept_threshold": 0.9, "backtracking": False})
    c = dse.load_design("paper-config1-3090", schedule="brsd")
    reports = [dse.evaluate(x, "math500") for x in (a, b, c)]
    w = dse.load_workload("math500")
    keys = [m for m, _, _ in METRICS]
    for d, r in zip(out["designs"], reports, strict=True):
        for m in keys:
            assert d["report"][m] == pytest.approx(getattr(r, m), rel=1e-12)
    for diff, (x, r) in zip(out["differences"], [(b, reports[1]), (c, reports[2])],
                            strict=True):
        assert diff["vs"] == BASE
        iv = difference_interval((x, r), (a, reports[0]), w, keys)
        for m in keys:
            delta = getattr(r, m) - getattr(reports[0], m)
            assert diff["delta"][m] == pytest.approx(delta, rel=1e-12, abs=1e-12)
            assert diff["relative"][m] == pytest.approx(delta / getattr(reports[0], m))
            lo, hi = diff["interval"][m]
            assert (lo, hi) == pytest.approx(iv[m])
            assert lo <= delta + 1e-12 and delta - 1e-12 <= hi
            assert diff["decided"][m] == (not lo <= 0 <= hi)
    # a stricter threshold accepts fewer steps: more target rewrites, a higher accuracy
    assert out["differences"][0]["delta"]["accuracy"] > 0
    assert out["differences"][0]["decided"]["accuracy"]


def test_identical_designs_differ_by_exactly_zero(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(["compare", BASE, BASE, "--scenario", "gsm8k"], capsys)
    (diff,) = out["differences"]
    for m, _, _ in METRICS:
        assert diff["delta"][m] == 0 and diff["interval"][m] == [0.0, 0.0]
        assert diff["decided"][m] is False


def test_text_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", BASE, "paper-config2-v80", "--scenario", "gsm8k"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("2 designs on gsm8k")
    assert f"difference from #1 ({BASE})" in text
    # the difference row: one interval per metric, in the parts the 100-column table splits
    # into (each part repeats the row's number)
    parts = [line for line in text.splitlines() if line.split()[:1] == ["2"] and " to " in line]
    assert sum(p.count("[") for p in parts) == len(METRICS) and "%)" in parts[0]
    assert main(["compare", BASE, "paper-config2-v80", "--scenario", "gsm8k", "--wide"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.split()[:2] == ["2", "paper-config2-v80"] and " to " in line)
    assert row.count("[") == len(METRICS) and "%)" in row  # --wide: one line


def test_design_files_and_their_workload(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from dse.io.design_files import design_file_text

    d = dse.load_design("paper-config2-v80", schedule="brsd")
    f = tmp_path / "my:design.toml"  # a colon in the path, no settings: the path stays whole
    f.write_text(design_file_text(d.system, d.schedule, "gsm8k"), encoding="utf-8")
    out = _json(["compare", str(f), f"{f}:max_backtracks=0"], capsys)
    assert out["workload"] == "gsm8k"
    assert [x["schedule"] for x in out["designs"]] == ["brsd", "brsd"]
    assert out["designs"][0]["report"]["latency_s_per_problem"] == pytest.approx(
        dse.evaluate(d, "gsm8k").latency_s_per_problem, rel=1e-12)
    g = tmp_path / "other.toml"
    g.write_text(design_file_text(d.system, d.schedule, "math500"), encoding="utf-8")
    assert main(["compare", str(f), str(g)]) == 2
    assert "--scenario: required (the design files name gsm8k, math500)" in (
        capsys.readouterr().err)


def test_parse_design_arg() -> None:
    a = parse_design_arg(2, f"{BASE}:accept_threshold=0.9, schedule=rsd ,step_ahead=false")
    assert (a.ref, a.settings, a.schedule) == (BASE, ("accept_threshold=0.9",
                                                      "step_ahead=false"), "rsd")
    assert parse_design_arg(1, "C:/x/y.toml").ref == "C:/x/y.toml"
    assert parse_design_arg(1, "a:b:c=1").ref == "a:b"
    for bad in (":accept_threshold=1", f"{BASE}:accept_threshold=0.9,,x=1",
                f"{BASE}:a=1,b", f"{BASE}:=1"):
        with pytest.raises(UsageError, match=r"^DESIGN #1 "):
            parse_design_arg(1, bad)


@pytest.mark.parametrize(("argv", "words", "code"), [
    ([BASE], "give 2..16 designs to compare, got 1", 2),
    ([BASE] * 17, "give 2..16 designs to compare, got 17", 2),
    ([BASE, f"{BASE}:accept_threshold=1.7"],
     f"DESIGN #2 ({BASE}:accept_threshold=1.7): accept_threshold: must be <= 1", 2),
    ([BASE, f"{BASE}:accept_threshold=nan"], "DESIGN #2", 2),
    ([BASE, f"{BASE}:max_backtracks=1{'0' * 400}"], "max_backtracks", 2),
    ([BASE, f"{BASE}:warp=9"], "DESIGN #2 (paper-config1-u280:warp=9): warp: unknown key", 2),
    ([BASE, f"{BASE}:backtracking=maybe"], "backtracking: expected true or false", 2),
    ([BASE, f"{BASE}:schedule=fast"], "unknown schedule 'fast'", 2),
    ([BASE, "nope"], "unknown system 'nope'", 2),
    ([BASE, "missing.toml"], "missing.toml: cannot read", 3),
    ([BASE, "/dev/zero.toml"], "cannot read", 3),
    ([BASE, f"{BASE}:colocate=draft+prm"], "DESIGN #2", 2),
])
def test_errors_are_one_line(argv: list[str], words: str, code: int,
                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *argv, "--scenario", "gsm8k"]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dse compare: error: ") and words in err, err


@pytest.mark.parametrize("flag", ["--system", "--design"])
def test_evaluate_refuses_two_designs_and_points_to_compare(
        flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["evaluate", flag, "a", flag, "b", "--scenario", "gsm8k"])
    assert e.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (f"dse evaluate: error: {flag}: given twice (a, then b); give it once; to "
                    "put designs side by side: dse compare a b")


@pytest.mark.parametrize("argv", [
    ["simulate", "--system", BASE, "--scenario", "gsm8k", "--scenario", "math500"],
    ["export", "--system", BASE, "--out", "x", "--out", "y"],
    ["simulate", "--system", BASE, "--schedule", "rsd", "--schedule", "brsd"],
])
def test_other_single_options_given_twice(argv: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "given twice" in capsys.readouterr().err


def test_relative_is_none_where_the_baseline_is_zero() -> None:
    from dse.cli.compare import _delta_text

    diff = {"delta": {"x": 1.0}, "relative": {"x": None}, "interval": {"x": [0.5, 1.5]},
            "decided": {"x": True}}
    assert _delta_text(diff, "x") == "+1 [+0.5 to +1.5]"
    assert not math.isnan(diff["delta"]["x"])


def test_every_command_help_renders(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse formats help strings with %: a stray one breaks `--help` (it did, once)."""
    from dse.cli import COMMANDS

    for argv in ([], *([c.name] for c in COMMANDS)):
        with pytest.raises(SystemExit) as e:
            main([*argv, "--help"])
        assert e.value.code == 0, argv
    assert "dse compare" in capsys.readouterr().out
