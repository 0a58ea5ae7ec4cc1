"""Fault-injection campaigns shared by tests/test_faults.py and scripts/reliability_report.py:
SIGKILL `dse optimize` and `dse export` at random moments and check what survives.

Each campaign returns a `Campaign` tally; `problems` lists every violated property (empty when
all held), so the tests assert on it and the report counts it.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzzing import ROOT

DSE = [sys.executable, "-m", "dse.launch"]  # as the `dse` console script starts


@dataclass
class Campaign:
    name: str
    runs: int = 0  # processes started
    kills: int = 0  # processes SIGKILLed while running
    finished: int = 0  # processes that exited by themselves
    studies_completed: int = 0
    trials_checked: int = 0
    lost: int = 0  # completed trials (or bundle files) missing after a kill
    duplicated: int = 0
    partial: int = 0  # partial bundles left behind
    problems: list[str] = field(default_factory=list)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DSE_DEBUG", None)
    return env


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*DSE, *argv], cwd=cwd, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def _wait_line(p: subprocess.Popen[bytes], timeout: float) -> bytes:
    """The first stderr line (`dse optimize` prints `storage: URL` before opening it)."""
    assert p.stderr is not None
    ready, _, _ = select.select([p.stderr], [], [], timeout)
    return p.stderr.readline() if ready else b""


def _kill_after(p: subprocess.Popen[bytes], delay: float) -> bool:
    """SIGKILL p after delay seconds unless it exits first; True when it was killed."""
    try:
        p.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        return True


# ------------------------------------------------------------------------------- optimize


def completed_trials(url: str, study: str) -> dict[int, tuple[Any, ...]]:
    """The study's completed trials: number -> (params, values, design_toml); {} when the study
    does not exist yet."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = optuna.storages.RDBStorage(url)
    try:
        names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
        if study not in names:
            return {}
        s = optuna.load_study(study_name=study, storage=storage)
        trials = s.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        return {t.number: (tuple(sorted(t.params.items())), tuple(t.values),
                           t.user_attrs.get("design_toml")) for t in trials}
    finally:
        storage.engine.dispose()


def check_trials(before: dict[int, tuple[Any, ...]], after: dict[int, tuple[Any, ...]],
                 c: Campaign, where: str) -> None:
    """No completed trial lost or changed; every completed trial carries its design."""
    lost = [n for n in before if n not in after]
    changed = [n for n in before if n in after and after[n] != before[n]]
    if lost:
        c.lost += len(lost)
        c.problems.append(f"{where}: completed trials lost: {lost}")
    if changed:
        c.duplicated += len(changed)
        c.problems.append(f"{where}: completed trials rewritten: {changed}")
    no_design = [n for n, v in after.items() if not v[2]]
    if no_design:
        c.problems.append(f"{where}: completed trials without design_toml: {no_design}")
    c.trials_checked += len(after)


def optimize_workers_campaign(url: str, space: Path, cwd: Path, *, rounds: int = 3,
                              workers: int = 3, trials: int = 12, prefix: str = "workers",
                              timeout_s: float = 300.0) -> Campaign:
    """`workers` processes of `dse optimize --trials N --json` started at once on one fresh
    study, `rounds` times: each round must leave exactly N completed trials (never more: each
    worker claims a trial's place before evaluating it), and the workers' reported
    n_new_trials must add up to N."""
    import json

    c = Campaign(f"optimize workers ({url.split(':', 1)[0]})")
    for r in range(rounds):
        study = f"{prefix}-{r}"
        argv = ["optimize", "--space", str(space), "--trials", str(trials), "--storage", url,
                "--study-name", study, "--json"]
        procs = [subprocess.Popen([*DSE, *argv], cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(workers)]
        added = 0
        for p in procs:
            out, err = p.communicate(timeout=timeout_s)
            c.runs += 1
            if p.returncode != 0:
                c.problems.append(f"{study}: exit {p.returncode}: {err[-300:]!r}")
                continue
            added += int(json.loads(out)["n_new_trials"])
        done = completed_trials(url, study)
        c.trials_checked += len(done)
        if len(done) != trials or added != trials:
            c.problems.append(f"{study}: {len(done)} completed trials, the workers reported "
                              f"{added}; expected {trials}")
            c.duplicated += max(len(done) - trials, 0)
        else:
            c.studies_completed += 1
    return c


def optimize_kill_campaign(url: str, space: Path, cwd: Path, rng: Any, *, kills: int = 20,
                           trials: int = 25, prefix: str = "kill", max_delay_s: float = 2.5,
                           timeout_s: float = 600.0) -> Campaign:
    """Run `dse optimize --trials N` and SIGKILL it at a random moment (uniform in
    [0, max_delay_s] after it announces its storage), `kills` times; restart with the same
    arguments after each kill. A run that finishes by itself must leave exactly N completed
    trials; the next runs then start a new study. After every run: no completed trial lost or
    changed, trial numbers unique (they are the dict keys), each with its design."""
    c = Campaign(f"optimize kill ({url.split(':', 1)[0]})")
    t_end = time.monotonic() + timeout_s
    study_i = 0
    study = f"{prefix}-{study_i}"
    before: dict[int, tuple[Any, ...]] = {}
    while c.kills < kills and time.monotonic() < t_end:
        argv = ["optimize", "--space", str(space), "--trials", str(trials), "--storage", url,
                "--study-name", study, "--seed", "0"]
        p = _start(argv, cwd)
        c.runs += 1
        first = _wait_line(p, 60)
        if not first.startswith(b"storage:"):
            p.kill()
            p.wait()
            c.problems.append(f"run {c.runs}: no storage line ({first!r})")
            break
        killed = _kill_after(p, rng.uniform(0.0, max_delay_s))
        assert p.stderr is not None
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        after = completed_trials(url, study)
        check_trials(before, after, c, f"{study} run {c.runs}")
        if killed:
            c.kills += 1
        else:
            c.finished += 1
            if p.returncode != 0:
                c.problems.append(f"{study} run {c.runs}: exit {p.returncode}: {err[-300:]}")
            elif len(after) != trials:
                c.problems.append(f"{study}: finished with {len(after)} completed trials, "
                                  f"expected {trials}")
            else:
                c.studies_completed += 1
            study_i += 1
            study = f"{prefix}-{study_i}"
            after = {}
        before = after
    if c.kills < kills:
        c.problems.append(f"only {c.kills} kills within {timeout_s} s")
    # the last study resumes to completion
    if before:
        p = _start(["optimize", "--space", str(space), "--trials", str(trials), "--storage",
                    url, "--study-name", study, "--seed", "0"], cwd)
        c.runs += 1
        _, err_b = p.communicate(timeout=300)
        after = completed_trials(url, study)
        check_trials(before, after, c, f"{study} final run")
        c.finished += 1
        if p.returncode != 0 or len(after) != trials:
            c.problems.append(f"{study} final run: exit {p.returncode}, {len(after)} completed "
                              f"of {trials}: {err_b.decode(errors='replace')[-300:]}")
        else:
            c.studies_completed += 1
    return c


# --------------------------------------------------------------------------------- export


def bundle_state(out: Path) -> str:
    """'absent', 'complete' (a manifest whose files and sha256s match exactly) or 'partial'."""
    if not out.exists():
        return "absent"
    man = out / "manifest.json"
    try:
        entries = json.loads(man.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError):
        return "partial"
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    if on_disk != set(entries) | {"manifest.json"}:
        return "partial"
    for rel, e in entries.items():
        if hashlib.sha256((out / rel).read_bytes()).hexdigest() != e["sha256"]:
            return "partial"
    return "complete"


def export_kill_campaign(tmp: Path, rng: Any, *, kills: int = 8,
                         max_delay_s: float | None = None) -> Campaign:
    """SIGKILL `dse export` at a random moment, alternately into a fresh directory and with
    --force over a previous bundle; --out must then be absent or a complete bundle (the
    previous one or the new one), never partial. The moment is drawn in 10-100% of
    max_delay_s, by default the duration of one untouched export (so that kills land inside
    the run however fast the command starts)."""
    c = Campaign("export kill")
    if max_delay_s is None:
        t0 = time.perf_counter()
        subprocess.run([*DSE, "export", "--system", "paper-config1-u280", "--out",
                        str(tmp / "timing")], env=_env(), capture_output=True, check=True)
        max_delay_s = time.perf_counter() - t0
    for i in range(kills * 3):
        if c.kills >= kills:
            break
        force = i % 2 == 1
        out = tmp / f"bundle-{i}"
        if force:  # a previous, complete bundle to replace
            p = subprocess.run([*DSE, "export", "--system", "paper-config2-3090", "--out",
                                str(out)], env=_env(), capture_output=True, check=False)
            if p.returncode != 0 or bundle_state(out) != "complete":
                c.problems.append(f"setup export failed: {p.stderr.decode()[-300:]}")
                continue
        argv = ["export", "--system", "paper-config1-u280", "--out", str(out)]
        p2 = _start([*argv, "--force"] if force else argv, tmp)
        c.runs += 1
        killed = _kill_after(p2, rng.uniform(0.1 * max_delay_s, max_delay_s))
        assert p2.stderr is not None
        p2.stderr.close()
        c.kills += killed
        c.finished += not killed
        state = bundle_state(out)
        ok = {"complete"} if (force or not killed) else {"absent", "complete"}
        if state not in ok:
            c.partial += state == "partial"
            c.problems.append(f"export {i} ({'--force' if force else 'fresh'}, "
                              f"{'killed' if killed else 'finished'}): --out is {state}")
    return c


def export_race(tmp: Path, rounds: int = 3) -> Campaign:
    """Two `dse export` processes racing for one new directory: one complete bundle, one
    clean one-line error."""
    c = Campaign("export race")
    for i in range(rounds):
        out = tmp / f"race-{i}"
        ps = [subprocess.Popen([*DSE, "export", "--system", s, "--out", str(out)], env=_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
              for s in ("paper-config1-u280", "paper-config1-3090")]
        errs = [p.communicate(timeout=120)[1].decode(errors="replace") for p in ps]
        c.runs += 2
        rcs = [p.returncode for p in ps]
        state = bundle_state(out)
        if sorted(rc == 0 for rc in rcs) != [False, True] or state != "complete":
            c.problems.append(f"race {i}: exits {rcs}, --out {state}: {errs}")
            continue
        err = errs[rcs.index(next(rc for rc in rcs if rc != 0))].strip().splitlines()
        if len(err) != 1 or "Traceback" in err[0] or not err[0].startswith("dse export:"):
            c.problems.append(f"race {i}: the loser's error is not one clean line: {err}")
        leftovers = [p.name for p in tmp.iterdir() if p.name.startswith(f".race-{i}.")]
        if leftovers:
            c.problems.append(f"race {i}: temporary directories left: {leftovers}")
    return c


# --------------------------------------------------------------------------------- signals

SEARCH_FILES = ("best.toml", "pareto.csv", "pareto.html")
STOPPED = {signal.SIGINT: (130, "interrupted (Ctrl-C)"),
           signal.SIGTERM: (143, "terminated (SIGTERM)")}


def _set_state(out: Path) -> str:
    """A search's --out: 'absent' (no files of the set), 'old' (every file the marker written
    before), 'new' (every file present and none the marker) or 'mixed'."""
    files = [out / n for n in SEARCH_FILES]
    present = [f for f in files if f.exists()]
    if not present:
        return "absent"
    if len(present) < len(files):
        return "mixed"
    old = [f.read_bytes() == b"old\n" for f in files]
    return "old" if all(old) else ("new" if not any(old) else "mixed")


def signal_campaign(tmp: Path, space: Path, rng: Any, *, signals: int = 8) -> Campaign:
    """SIGINT or SIGTERM to `dse export` and `dse sweep --out` at a random moment of their run
    (40-100% of one untouched run's duration), fresh and with --force over earlier outputs.
    Each run must end with exit 0, or 130/143 and exactly the one line saying so; a bundle
    must be absent or complete (never partial), a search's files all old or all new."""
    c = Campaign("signals (Ctrl-C, SIGTERM)")
    commands = {"export": lambda out: ["export", "--system", "paper-config1-u280", "--out",
                                       str(out)],
                "sweep": lambda out: ["sweep", "--space", str(space), "--out", str(out)]}
    duration: dict[str, float] = {}
    for name, argv in commands.items():
        t0 = time.perf_counter()
        subprocess.run([*DSE, *argv(tmp / f"timing-{name}")], env=_env(), capture_output=True,
                       check=True, cwd=tmp)
        duration[name] = time.perf_counter() - t0
    for i in range(signals):
        name = ("export", "sweep")[i % 2]
        force = (i // 2) % 2 == 1
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        out = tmp / f"{name}-{i}"
        if force and name == "export":
            subprocess.run([*DSE, "export", "--system", "paper-config2-3090", "--out",
                            str(out)], env=_env(), capture_output=True, check=True)
        elif force:
            out.mkdir()
            for n in SEARCH_FILES:
                (out / n).write_bytes(b"old\n")
        p = _start([*commands[name](out), *(["--force"] if force else [])], tmp)
        c.runs += 1
        try:
            p.wait(timeout=rng.uniform(0.4, 1.0) * duration[name])
        except subprocess.TimeoutExpired:
            p.send_signal(sig)
            c.kills += 1
        assert p.stderr is not None
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        rc = p.wait(timeout=120)
        c.finished += rc == 0
        code, words = STOPPED[sig]
        where = f"{name} {i} ({'--force' if force else 'fresh'}, {sig.name})"
        if rc == 0:
            pass
        elif rc != code or err != f"dse {name}: {words}; nothing more was written\n":
            c.problems.append(f"{where}: exit {rc}: {err.strip()[-300:]}")
        if name == "export":
            state = bundle_state(out)
            ok = {"complete"} if force or rc == 0 else {"absent", "complete"}
        else:
            state = _set_state(out)
            ok = {"new"} if rc == 0 else ({"old", "new"} if force else {"absent", "new"})
        if state not in ok:
            c.partial += 1
            c.problems.append(f"{where}: --out is {state} after exit {rc}")
        leftovers = [f.name for f in (out if out.is_dir() else tmp).iterdir()
                     if f.name.startswith(".") and f.name.endswith(".tmp")]
        if leftovers:
            c.problems.append(f"{where}: temporaries left: {leftovers}")
    return c
