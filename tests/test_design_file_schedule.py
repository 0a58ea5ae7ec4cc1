"""A design file's [schedule]: its flags decide the schedule and a `name` must agree with them
(one line naming schedule.name otherwise); `dse evaluate --design` weighs the file's own
schedule against the target alone, not the last preset it prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dse
from dse.cli import main

BASE = "paper-config1-u280"


def _file(tmp_path: Path, name: str | None, flags: tuple[bool, bool, bool]) -> Path:
    from dse.io.design_files import design_file_text

    d = dse.load_design(BASE, schedule="brsd")
    text = design_file_text(d.system, d.schedule, "math500")
    head, _, rest = text.partition("[schedule]\n")
    _body, _, tail = rest.partition("\n\n")
    lines = ([f'name = "{name}"'] if name is not None else []) + [
        f"{k} = {str(v).lower()}" for k, v in zip(("backtracking", "step_ahead", "shadow_sync"),
                                                  flags, strict=True)]
    f = tmp_path / "d.toml"
    f.write_text(head + "[schedule]\n" + "\n".join(lines) + "\n\n" + tail, encoding="utf-8")
    return f


@pytest.mark.parametrize("name", ["heteroreason", "bogus"])
def test_a_name_that_contradicts_the_flags_is_refused(name: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    f = _file(tmp_path, name, (True, False, False))
    assert main(["evaluate", "--design", str(f)]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "schedule.name" in err and "'brsd'" in err


def test_the_files_own_schedule_is_weighed(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from dse.uncertainty.joint import difference_interval

    for name in ("brsd", None):  # with its name, or with the flags alone
        f = _file(tmp_path, name, (True, False, False))
        assert main(["evaluate", "--design", str(f), "--json"]) == 0
        vs = json.loads(capsys.readouterr().out)["vs_target_alone"]
        assert vs["schedule"] == "brsd"
    d = dse.load_design(BASE, schedule="brsd")
    alone = dse.load_design(BASE, overrides={"workflow": "target-only"})
    rd, ra = dse.evaluate(d, "math500"), dse.evaluate(alone, "math500")
    assert vs["margin"]["latency_s_per_problem"] == pytest.approx(
        rd.latency_s_per_problem - ra.latency_s_per_problem)
    iv = difference_interval((d, rd), (alone, ra), dse.load_workload("math500"),
                             ["latency_s_per_problem"])["latency_s_per_problem"]
    assert vs["margin_interval"]["latency_s_per_problem"] == pytest.approx(list(iv), rel=1e-6)


def test_a_study_that_never_sampled_a_family_says_so(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two trials cannot speak for the space: a speculative family the study never reached
    (or reached only infeasibly) says so, and the verdict is scoped to what it evaluated."""
    monkeypatch.chdir(tmp_path)
    assert main(["optimize", "--trials", "2", "--storage", "memory", "--seed", "1",
                 "--objective", "latency", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    fams = {f["family"]: f for f in out["by_family"]}
    missing = [f for f in fams.values() if f.get("design") is None
               and f["family"] not in ("target-only", "width")]
    assert missing, "the seed no longer leaves a family unreached: pick another"
    for f in missing:
        assert "the study's" in f["note"] and "dse sweep" in f["note"]
    assert main(["optimize", "--trials", "2", "--storage", "memory", "--seed", "1",
                 "--objective", "latency"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    if "No speculative" in text:
        assert "among the designs this study evaluated" in text


@pytest.mark.parametrize("argv", [
    ["evaluate", "--system", BASE, "--scenario", "math500", "--set", "workflow=target-only",
     "--schedule", "brsd"],
    ["simulate", "--system", BASE, "--scenario", "math500", "--set", "workflow=majority",
     "--set", "samples=4", "--schedule", "rsd"],
    ["serve", "--system", BASE, "--scenario", "math500", "--rate", "1", "--set",
     "workflow=target-only", "--schedule", "brsd"],
    ["compare", f"{BASE}:workflow=target-only,schedule=rsd", BASE, "--scenario", "math500"],
])
def test_a_schedule_asked_of_a_design_that_runs_none_is_refused(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "runs no schedule" in err


def test_compares_schedule_flag_passes_over_a_target_only_design(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", f"{BASE}:workflow=target-only", BASE, "--scenario", "math500",
                 "--schedule", "brsd", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [d["schedule"] for d in out["designs"]] == ["target-only", "brsd"]


def test_an_accuracy_difference_stays_within_100_points() -> None:
    """A one-problem test set makes each accuracy interval wide; their difference still lies
    within +-100 points."""
    from dataclasses import replace

    from dse.uncertainty.joint import difference_interval

    w = replace(dse.load_workload("math500"), test_problems=1)
    a = dse.load_design(BASE)
    b = dse.load_design(BASE, overrides={"workflow": "target-only"})
    lo, hi = difference_interval((a, dse.evaluate(a, w)), (b, dse.evaluate(b, w)), w,
                                 ["accuracy"])["accuracy"]
    assert -100.0 <= lo <= hi <= 100.0
