"""Study storage never writes where it should not: listing or exporting from a database that is
not an Optuna storage is refused (exit 2) and leaves it byte-identical (no tables, no WAL mode);
an in-memory SQLite URL, which would vanish with the command, is refused in one line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import dse
from dse.cli import main


def _other_db(path: Path) -> bytes:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE measurements (x REAL)")
    con.execute("INSERT INTO measurements VALUES (1.5)")
    con.commit()
    con.close()
    return path.read_bytes()


@pytest.mark.parametrize("argv", [
    ["studies"],
    ["export", "--study", "any", "--out", "OUT"],
])
def test_an_unrelated_database_is_left_alone(argv: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "mine.db"
    before = _other_db(db)
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    assert main([*argv, "--storage", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err
    assert "not an Optuna study storage" in err and err.count("\n") == 1
    assert db.read_bytes() == before
    assert not (tmp_path / "mine.db-wal").exists() and not (tmp_path / "out").exists()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master")] == ["measurements"]
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    con.close()


def test_a_file_that_is_no_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "notes.db"
    f.write_text("not a database\n", encoding="utf-8")
    assert main(["studies", "--storage", f"sqlite:///{f}"]) == 2
    assert "is not a SQLite database" in capsys.readouterr().err
    assert f.read_text(encoding="utf-8") == "not a database\n"


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_in_memory_sqlite_is_refused(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["studies", "--storage", url]) == 2
    assert "in-memory SQLite database" in capsys.readouterr().err
    assert main(["optimize", "--trials", "2", "--storage", url]) == 2
    err = capsys.readouterr().err
    assert "in-memory SQLite database" in err and "Traceback" not in err
    with pytest.raises(dse.UsageError, match="in-memory SQLite"):
        dse.optimize(trials=2, storage=url)


def test_a_missing_file_lists_nothing_and_creates_nothing(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    db = tmp_path / "none.db"
    assert main(["studies", "--storage", f"sqlite:///{db}"]) == 0
    assert "no studies" in capsys.readouterr().out and not db.exists()


def test_a_real_study_still_lists_and_exports(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    r = dse.optimize(trials=4, seed=0, storage=url, study_name="mine")
    assert r.n_trials == 4
    assert main(["studies", "--storage", url]) == 0
    assert "mine" in capsys.readouterr().out
    assert main(["export", "--study", "mine", "--storage", url, "--out",
                 str(tmp_path / "b")]) == 0


@pytest.mark.parametrize("argv", [
    ["studies"],
    ["export", "--study", "any", "--out", "OUT"],
    ["optimize", "--trials", "1"],
])
def test_a_bare_file_name_is_refused_with_the_url_it_meant(argv: list[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    """`--storage notes.txt` (a path where a URL belongs) was SQLAlchemy's "Could not parse
    SQLAlchemy URL" with exit 1 (optimize printed its `storage:` line first): now a usage error,
    one line, naming the flag and the sqlite:/// URL it meant, before anything is opened."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n", encoding="utf-8")
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    assert main([*argv, "--storage", "notes.txt"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "--storage notes.txt: not a storage URL" in err and "sqlite:///notes.txt" in err
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_full_disk_while_recording_a_trial_is_one_line_and_keeps_the_study(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The database filling up while a trial is recorded (dse optimize in a directory on a
    full filesystem) ended in a traceback: Optuna turns the failed commit into
    StorageInternalError and then, the trial left RUNNING, into `AssertionError: Should not
    reach.`. Now one line naming the storage and the database's own words, exit 1; the
    trials recorded before it are kept."""
    import optuna

    from dse.search.write_behind import WriteBehind

    monkeypatch.chdir(tmp_path)
    real = WriteBehind.set_trial_state_values
    finished = [0]

    def full_after_two(self, trial_id, state, values=None):  # type: ignore[no-untyped-def]
        if state.is_finished():
            finished[0] += 1
            if finished[0] == 3:
                try:
                    raise sqlite3.OperationalError("database or disk is full")
                except sqlite3.OperationalError as e:
                    raise optuna.exceptions.StorageInternalError("commit failed") from e
        return real(self, trial_id, state, values)

    monkeypatch.setattr(WriteBehind, "set_trial_state_values", full_after_two)
    argv = ["optimize", "--trials", "5", "--study-name", "s", "--json"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Should not reach" not in err, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("dse optimize: error: storage sqlite:///dse-studies.db: a trial "
                           "could not be recorded (database or disk is full)"), line
    study = optuna.load_study(study_name="s", storage="sqlite:///dse-studies.db")
    assert sorted(t.state.name for t in study.trials) == ["COMPLETE", "COMPLETE", "RUNNING"]
    # (a restarted run fails the trial left RUNNING by its recorded process id, then resumes:
    # tests/test_faults.py's kill campaign)
