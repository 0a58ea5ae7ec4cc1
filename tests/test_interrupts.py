"""Stopping and hostile streams: Ctrl-C (SIGINT) and SIGTERM end a running command with one
line and exit 130 / 143, no traceback; multi-file outputs appear whole or not at all
(dse.io.atomic.write_files); a closed or full stdout, a path that is not UTF-8 and a read-only
study database are each one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dse
from dse.cli import main
from dse.errors import Terminated
from dse.io.atomic import write_files
from tests.fuzzing import ROOT

DSE = [sys.executable, "-m", "dse.launch"]  # as the `dse` console script starts


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


# commands that run for minutes: a signal always finds them computing
LONG = {
    "reproduce": ["reproduce", "--json"],
    "optimize": ["optimize", "--trials", "100000", "--json", "--storage", "STORAGE"],
}


@pytest.mark.parametrize("command", list(LONG))
@pytest.mark.parametrize(("sig", "code", "words"), [
    (signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
    ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_a_running_command_in_one_line(command: str, sig: int, code: int,
                                                     words: str, tmp_path: Path) -> None:
    argv = [a.replace("STORAGE", f"sqlite:///{tmp_path / 's.db'}") for a in LONG[command]]
    p = subprocess.Popen([*DSE, *argv], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(4)  # imports done, computing
    assert p.poll() is None, "finished before the signal"
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    assert p.returncode == code, (p.returncode, err[-500:])
    assert err == f"dse {command}: {words}; nothing more was written\n", err[-500:]
    assert out == ""
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".")]  # no temporaries


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_ctrl_c_ends_a_sweep_and_its_worker_processes_in_one_line(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the whole process group, the sweep's forked workers too:
    they ignore it, the command says its one line, exits 130 and leaves no process behind."""
    p = subprocess.Popen([*DSE, "sweep", "--objective", "j_per_token", "--processes", "2"],
                         cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    kids: list[int] = []
    while not kids and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        kids = _children(p.pid)
    assert kids, "the sweep forked no worker processes"
    time.sleep(0.2)  # the workers are evaluating
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err[-500:])
    assert err == "dse sweep: interrupted (Ctrl-C); nothing more was written\n", err[-500:]
    assert out == ""
    time.sleep(0.5)
    assert not [k for k in kids if Path(f"/proc/{k}").exists()
                and "Z" not in Path(f"/proc/{k}/stat").read_text().split()[2]]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize(("sig", "code", "words", "group"), [
    (signal.SIGINT, 130, "interrupted (Ctrl-C)", True),
    (signal.SIGTERM, 143, "terminated (SIGTERM)", False)], ids=["SIGINT-group", "SIGTERM"])
def test_a_signal_ends_optimize_at_a_load_and_its_background_sweep(
        sig: int, code: int, words: str, group: bool, tmp_path: Path) -> None:
    """`dse optimize --rate R` sweeps the width and target-only designs in a forked process
    while its study runs (dse.search.background): a Ctrl-C to the terminal's process group or
    a SIGTERM to the command alone ends both, in the command's one line."""
    p = subprocess.Popen([*DSE, "optimize", "--trials", "100000", "--rate", "20", "--json",
                          "--storage", f"sqlite:///{tmp_path / 's.db'}"], cwd=tmp_path,
                         env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    kids: list[int] = []
    while not kids and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        kids = _children(p.pid)
    if os.cpu_count() == 1:
        pytest.skip("one CPU: the sweep runs in the command's own process")
    assert kids, "no background sweep was forked"
    time.sleep(1.0)  # the study and the sweep are running
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == code, (p.returncode, err[-500:])
    assert err == f"dse optimize: {words}; nothing more was written\n", err[-500:]
    assert out == ""
    time.sleep(0.5)
    assert not [k for k in kids if Path(f"/proc/{k}").exists()
                and "Z" not in Path(f"/proc/{k}/stat").read_text().split()[2]]


# a Ctrl-C that lands while the command starts: sent by the process itself at a chosen moment
_CTRL_C_AT = """
import builtins, os, signal, sys
import argparse
sys.argv = ["dse", "evaluate", "--system", "paper-config1-u280", "--scenario", "math500"]
where = {where!r}
if where == "loading":  # while dse.cli and its modules load (before dse.cli.main runs)
    real_import = builtins.__import__
    def hooked(name, *a, **k):
        if name == "dse.cli":
            builtins.__import__ = real_import
            os.kill(os.getpid(), signal.SIGINT)
        return real_import(name, *a, **k)
    builtins.__import__ = hooked
else:  # while dse.cli.main builds its argument parser (argparse loads shutil there)
    real_init = argparse.HelpFormatter.__init__
    def hooked_init(self, *a, **k):
        argparse.HelpFormatter.__init__ = real_init
        os.kill(os.getpid(), signal.SIGINT)
        real_init(self, *a, **k)
    argparse.HelpFormatter.__init__ = hooked_init
from dse.launch import main
sys.exit(main())
"""


@pytest.mark.parametrize("where", ["loading", "parser"])
def test_ctrl_c_while_the_command_starts_is_one_line(where: str) -> None:
    """The `dse` entry point (dse.launch) catches a Ctrl-C while the command's modules load,
    dse.cli.main one while it builds its parser: exit 130 and the command's one line, no
    traceback (before, each was a KeyboardInterrupt traceback and a death by SIGINT)."""
    r = subprocess.run([sys.executable, "-c", _CTRL_C_AT.format(where=where)], env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    assert r.stderr == "dse evaluate: interrupted (Ctrl-C); nothing more was written\n"
    assert r.stdout == ""


def test_debug_keeps_the_traceback(tmp_path: Path) -> None:
    p = subprocess.Popen([*DSE, "reproduce", "--json", "--debug"], cwd=tmp_path, env=_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert "Traceback" in err and "Terminated" in err and p.returncode != 0


def _files() -> dict[str, bytes]:
    return {"best.toml": b"new best\n", "pareto.csv": b"new csv\n", "pareto.html": b"new\n"}


def test_write_files_interrupted_while_writing_leaves_the_old_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for name in _files():
        (out / name).write_text("old\n", encoding="utf-8")
    calls = []
    real = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(KeyboardInterrupt):
        write_files(out, _files(), force=True)
    assert sorted(p.name for p in out.iterdir()) == sorted(_files())  # no temporaries
    assert all((out / n).read_text(encoding="utf-8") == "old\n" for n in _files())
    monkeypatch.setattr(os, "fsync", real)
    new = tmp_path / "new"
    monkeypatch.setattr(os, "fsync", fsync)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        write_files(new, _files(), force=False)
    assert not new.exists()  # the directory it created, left empty, went with it


def test_a_signal_during_the_renames_waits_until_all_are_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C arriving while the set is renamed into place is held back until the last one.
    (Python's own SIGINT handler is installed for the test: a run started in the background
    by a non-interactive shell inherits SIGINT ignored, and then no Ctrl-C arrives at all.)"""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    real = os.replace
    seen = []

    def replace(a: object, b: object) -> None:
        if not seen:
            os.kill(os.getpid(), signal.SIGINT)  # delivered only when the mask is lifted
        seen.append(b)
        real(a, b)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    try:
        with pytest.raises(KeyboardInterrupt):
            write_files(tmp_path / "out", _files(), force=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(seen) == 3
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == _files()


def test_write_files_refuses_existing_before_writing(tmp_path: Path) -> None:
    (tmp_path / "pareto.csv").write_text("mine\n", encoding="utf-8")
    with pytest.raises(dse.DseError, match=r"pareto\.csv already there"):
        write_files(tmp_path, _files(), force=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pareto.csv"]


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=_env(), capture_output=True,
                          timeout=120)


@pytest.mark.parametrize(("redirect", "code", "words"), [
    (">&-", 2, b"standard output is closed"),
    (">/dev/full", 1, b"cannot write the output to standard output: No space left on device"),
])
def test_closed_or_full_stdout_is_one_line(redirect: str, code: int, words: bytes,
                                           tmp_path: Path) -> None:
    dse_cmd = " ".join(DSE)
    for argv in ("catalog boards", "catalog boards --json",
                 "evaluate --system paper-config1-u280 --scenario gsm8k --schedule rsd"):
        r = _bash(f"{dse_cmd} {argv} {redirect}", tmp_path)
        assert r.returncode == code, r.stderr
        assert r.stderr.count(b"\n") == 1 and words in r.stderr, r.stderr


def test_a_path_that_is_not_utf8(tmp_path: Path) -> None:
    """A file name of arbitrary bytes: read, written and printed back as those bytes; a
    missing one is one line."""
    src = (ROOT / "scenarios" / "systems" / "paper-config1-u280.toml").read_bytes()
    name = b"design-\xff\xfe.toml"
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as f:
        f.write(src)
    out = os.path.join(os.fsencode(tmp_path), b"bundle-\xff")
    r = subprocess.run([*map(os.fsencode, DSE), b"export", b"--design", name, b"--scenario",
                        b"gsm8k", b"--out", out], cwd=tmp_path, env=_env(),
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out in r.stdout and b"Traceback" not in r.stderr
    assert os.path.isfile(os.path.join(out, b"manifest.json"))
    r = subprocess.run([*map(os.fsencode, DSE), b"evaluate", b"--design", b"none-\xff.toml",
                        b"--scenario", b"gsm8k"], cwd=tmp_path, env=_env(),
                       capture_output=True, timeout=120)
    assert r.returncode == 3 and r.stderr.count(b"\n") == 1 and b"cannot read" in r.stderr


def test_a_read_only_study_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before the search (root ignores the mode bits: then the refusal of the open is
    injected)."""
    import dse.io.outputs

    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    assert main(["optimize", "--trials", "2", "--storage", url, "--json"]) == 0
    capsys.readouterr()
    before = db.read_bytes()
    db.chmod(0o444)
    if os.access(db, os.W_OK):
        def refuse(_p: Path) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(dse.io.outputs, "_open_for_writing", refuse)
    assert main(["optimize", "--trials", "4", "--storage", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a read-only database cannot record trials" in err, err
    assert db.read_bytes() == before
    with pytest.raises(dse.DseError, match="read-only database"):
        dse.optimize(trials=4, storage=url)


def test_a_library_error_raised_while_a_signal_unwinds_is_the_signal(monkeypatch, capsys):
    """Optuna's trial runner can fail in its own cleanup while Terminated unwinds it (an
    UnboundLocalError whose context is the Terminated): still one line and exit 143; Ctrl-C
    likewise 130; an error with no signal under it stays an error."""
    import dse.cli as cli
    from dse.errors import Terminated

    def failing_cleanup(sig: BaseException):
        def run(_args):
            try:
                raise sig
            except BaseException:  # the implicit context (no `from`) is what is tested
                raise UnboundLocalError("local 'updated_state'")  # noqa: B904
        return run

    for sig, code in ((Terminated(), 143), (KeyboardInterrupt(), 130)):
        monkeypatch.setattr(cli, "_run", failing_cleanup(sig))
        assert cli.main(["catalog", "boards"]) == code
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
    monkeypatch.setattr(cli, "_run", failing_cleanup(ValueError("x")))
    with pytest.raises(UnboundLocalError):
        cli.main(["catalog", "boards"])


@pytest.mark.slow
def test_ctrl_c_at_any_moment_of_an_export_exits_0_or_130(tmp_path):
    """Ctrl-C at random moments of `dse export --force` (over an earlier bundle): exit 0 (it
    had finished) or 130 with its one line, never a death by SIGINT. 8 of 25 such runs died
    with exit -2 after printing the line: an interrupt landing in code the interpreter ran
    for a library marks it unhandled, and the interpreter's own exit then re-raised it."""
    import random

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "b"
    argv = [*DSE, "export", "--system", "paper-config1-u280", "--out", str(out), "--force"]
    subprocess.run(argv, env=env, capture_output=True, check=True)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True)
    duration = time.perf_counter() - t0
    rng = random.Random(1)
    for i in range(20):
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
        try:
            p.wait(timeout=rng.uniform(0.4, 1.0) * duration)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
        assert p.stderr is not None
        err = p.stderr.read().decode()
        p.stderr.close()
        rc = p.wait()
        assert rc == 0 or (rc == 130 and err == "dse export: interrupted (Ctrl-C); nothing "
                           "more was written\n"), (i, rc, err)


_POOL_LOG = """
import sys, sqlalchemy
if sys.argv[1] == "dse":
    import dse.search.storage  # noqa: F401
pool = sqlalchemy.create_engine("sqlite://").pool
try:
    raise KeyboardInterrupt
except KeyboardInterrupt:  # as SQLAlchemy logs a Ctrl-C landing in a dropped connection's reset
    pool.logger.error("Exception during reset or similar", exc_info=True)
"""


def test_sqlalchemys_pool_log_of_an_interrupt_stays_off_stderr() -> None:
    """A Ctrl-C inside SQLAlchemy's reset of a connection the interrupted call dropped is
    logged by its pool with a traceback; without a handler, Python's last-resort one printed it
    before the command's one line (seen once in test_a_signal_ends_a_running_command_in_one_line).
    dse.search.storage gives the pool's logger a NullHandler."""
    def stderr(mode: str) -> str:
        return subprocess.run([sys.executable, "-c", _POOL_LOG, mode], env=_env(),
                              capture_output=True, text=True, timeout=60).stderr

    assert "Exception during reset" in stderr("bare")  # what the handler keeps away
    assert stderr("dse") == ""


def _lose_a_signal(sig: int) -> None:
    """A signal whose exception a library loses, as one raised inside a __del__ or a weakref
    callback is ("Exception ignored in ...")."""
    try:
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler runs here and raises
    except (KeyboardInterrupt, Terminated):
        pass


@pytest.mark.parametrize(("sig", "code", "words"), [
    (signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
    ids=["SIGINT", "SIGTERM"])
def test_a_signal_a_library_lost_still_stops_optimize(sig: int, code: int, words: str,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """The signal's stop is kept (dse.errors.note_stop): the next trial raises it again, so
    the study ends with the command's one line instead of running its 100,000 trials (a
    SIGTERM lost so once in about 40 runs kept `dse optimize` going)."""
    from dse.search import grid

    real = grid.Evaluator.evaluate
    calls: list[int] = []

    def losing(self: grid.Evaluator, hw: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            _lose_a_signal(sig)
        return real(self, hw)  # type: ignore[arg-type]

    monkeypatch.setattr(grid.Evaluator, "evaluate", losing)
    got = main(["optimize", "--trials", "100000", "--storage", "memory", "--json"])
    assert got == code
    assert len(calls) == 3  # the next trial raised before it evaluated
    assert capsys.readouterr().err.endswith(f"dse optimize: {words}; nothing more was "
                                            "written\n")


def test_a_signal_a_library_lost_still_stops_a_sweep(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from dse.search import exhaustive

    real = exhaustive._summary
    calls: list[int] = []

    def losing(job: object, i: int) -> object:
        calls.append(i)
        if len(calls) == 5:
            _lose_a_signal(signal.SIGTERM)
        return real(job, i)  # type: ignore[arg-type]

    monkeypatch.setattr(exhaustive, "_summary", losing)
    assert main(["sweep", "--objective", "j_per_token", "--processes", "1", "--json"]) == 143
    assert len(calls) == 5  # the loop raised on taking the summary it was computing
    assert capsys.readouterr().err.endswith("dse sweep: terminated (SIGTERM); nothing more was "
                                            "written\n")


def test_a_stop_raised_in_a_librarys_clean_up_prints_nothing() -> None:
    """A Ctrl-C that lands in a weakref callback (SQLAlchemy's, in a full suite once) is
    "ignored" by the interpreter with a traceback on standard error; the command notes the stop
    and ends at its next loop step in its one line, so the hook drops that report while the
    command runs, and passes every other unraisable exception on."""
    code = (
        "import gc, weakref\n"
        "from dse.cli import _sigterm_raises\n"
        "class A: pass\n"
        "def stop(r): raise KeyboardInterrupt\n"
        "def other(r): raise ValueError('other')\n"
        "with _sigterm_raises():\n"
        "    a = A(); w = weakref.ref(a, stop); del a; gc.collect()\n"
        "    b = A(); v = weakref.ref(b, other); del b; gc.collect()\n"
        "print('done')\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env=_env())
    assert p.stdout == "done\n"
    assert "KeyboardInterrupt" not in p.stderr
    assert "ValueError: other" in p.stderr
