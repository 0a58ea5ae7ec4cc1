"""Cases a hostile-input corpus found, one test each, held to docs/cli.md's promises: one line
on stderr `dse COMMAND: error: ...` naming the file, key or flag and what is wrong, the
documented exit code, whole outputs or none, nothing left behind."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dse.cli import main
from tests.faults import bundle_state
from tests.fuzzing import ROOT, write_small_space

DSE = [sys.executable, "-m", "dse.launch"]  # as the `dse` console script starts


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


def _one_error_line(err: str, command: str) -> str:
    assert err.count("\n") == 1 and err.startswith(f"dse {command}: error: "), err
    assert "Traceback" not in err
    return err


def _hidden(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("."))


def test_optimize_without_a_feasible_trial_says_why_in_its_own_words(tmp_path: Path) -> None:
    """--min-accuracy 100: every trial completes as infeasible (a NaN design cell no longer
    passes for the least violating one, so Optuna never fails a trial with value nan), no
    Optuna warning reaches stderr, and the one line counts the trials that ran."""
    r = subprocess.run([*DSE, "optimize", "--min-accuracy", "100", "--trials", "3",
                        "--storage", "memory", "--json"], cwd=tmp_path, env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 4, r.stderr
    err = _one_error_line(r.stderr, "optimize")
    assert "no feasible design in 3 trials: every trial was below --min-accuracy 100" in err
    assert "Trial" not in err and "nan" not in err and r.stdout == ""


def test_a_directory_named_like_a_catalog_member_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cat" / "x.toml").mkdir(parents=True)
    assert main(["catalog", "boards", "--catalog", str(tmp_path / "cat")]) == 3
    err = _one_error_line(capsys.readouterr().err, "catalog")
    assert f"{tmp_path / 'cat' / 'x.toml'}: is a directory" in err


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_export_cleans_up_leaves_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        sig: int, code: int) -> None:
    """`export --force` over an earlier bundle: the signal lands as the temporary (holding the
    old bundle after the swap) is removed; it waits until the removal is done."""
    import shutil

    out = tmp_path / "b"
    argv = ["export", "--system", "paper-config1-u280", "--out", str(out), "--force"]
    assert main(argv) == 0
    real = shutil.rmtree

    def rmtree(path: object, *args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), sig)
        real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    capsys.readouterr()
    assert main(argv) == code
    assert capsys.readouterr().err.count("\n") == 1
    assert _hidden(tmp_path) == []
    assert bundle_state(out) == "complete"


def test_simulate_writes_its_trace_and_timeline_as_a_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    """SIGTERM while the second file is written: neither file is there (the first is not
    renamed into place alone); undisturbed, both are."""
    trace, timeline = tmp_path / "t.jsonl", tmp_path / "tl.json"
    argv = ["simulate", "--system", "paper-config1-u280", "--scenario", "math500",
            "--problems", "20", "--trace-out", str(trace), "--timeline-out", str(timeline)]
    real = os.fsync
    calls: list[int] = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert main(argv) == 143
    assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    monkeypatch.setattr(os, "fsync", real)
    assert main(argv) == 0
    assert trace.stat().st_size > 0 and json.loads(timeline.read_text())["problem"] == 0


@pytest.mark.parametrize("command", ["sweep", "optimize"])
def test_a_full_disk_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str],
                                           command: str) -> None:
    """ENOSPC while `sweep --out` writes its files (the directory it created goes again), and
    while `optimize` creates its study in a new SQLite file (the file goes again)."""
    space = write_small_space(tmp_path / "space.toml")
    if command == "sweep":
        out = tmp_path / "new" / "out"

        def full(_fd: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", full)
        assert main(["sweep", "--space", str(space), "--out", str(out), "--processes", "1",
                     "--json"]) == 1
        err = _one_error_line(capsys.readouterr().err, "sweep")
        assert str(out) in err and "No space left on device" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["space.toml"]
        return
    import optuna
    import sqlalchemy

    db = tmp_path / "s.db"

    def create_study(**_: object) -> None:  # the storage's tables are in the file by now
        raise sqlalchemy.exc.OperationalError("INSERT INTO studies", {},
                                              Exception("database or disk is full"))

    monkeypatch.setattr(optuna, "create_study", create_study)
    assert main(["optimize", "--space", str(space), "--trials", "2", "--storage",
                 f"sqlite:///{db}", "--json"]) == 1
    err = _one_error_line(capsys.readouterr().err, "optimize")
    assert "cannot create study" in err and "database or disk is full" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.toml"]


def test_force_replaces_a_whole_result_set_and_keeps_the_users_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sweep --force` over an optimize result: the optimize run's trials.csv goes with its
    set; a file dse did not write (the user's notes, a trials.csv of their own) stays."""
    space = write_small_space(tmp_path / "space.toml")
    out = tmp_path / "out"
    assert main(["optimize", "--space", str(space), "--trials", "4", "--storage", "memory",
                 "--out", str(out), "--json"]) == 0
    assert (out / "trials.csv").is_file()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    sweep = ["sweep", "--space", str(space), "--out", str(out), "--processes", "1", "--json"]
    assert main(sweep) == 2  # without --force: refused, as before
    assert main([*sweep, "--force"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "best.toml", "notes.txt", "pareto.csv", "pareto.html"]
    (out / "trials.csv").write_text("the user's own\n", encoding="utf-8")
    assert main([*sweep, "--force"]) == 0
    assert (out / "trials.csv").read_text(encoding="utf-8") == "the user's own\n"
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n"


def test_the_exit_code_does_not_depend_on_writing_the_error_line(tmp_path: Path) -> None:
    """An unknown system is exit 2 whether stderr is a terminal, closed (`2>&-`) or a pipe
    whose reader left; the line never goes to stdout instead."""
    argv = [*DSE, "evaluate", "--system", "nope"]
    closed = subprocess.run(argv, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, timeout=120,
                            preexec_fn=lambda: os.close(2))
    assert (closed.returncode, closed.stdout) == (2, b"")
    p = subprocess.Popen(argv, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stderr is not None and p.stdout is not None
    p.stderr.close()  # the reader leaves before the line is written
    out = p.stdout.read()
    p.stdout.close()
    assert (p.wait(timeout=120), out) == (2, b"")


def test_a_storage_path_past_sqlites_limit_is_one_line_before_computing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    """The default sqlite:///dse-studies.db from a working directory about 520 characters
    deep: exit 2 naming --storage, the length and SQLite's limit; nothing created."""
    deep = tmp_path
    while len(os.fsencode(deep)) < 520:
        deep /= "d" * 60
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert main(["optimize", "--trials", "2"]) == 2
    err = _one_error_line(capsys.readouterr().err, "optimize")
    n = len(os.fsencode(deep / "dse-studies.db"))
    assert f"--storage sqlite:///dse-studies.db: the database's absolute path is {n} bytes" in err
    assert "SQLite's limit of 504" in err and "give a shorter --storage path" in err
    assert list(deep.iterdir()) == []
