"""Study storage: opening an Optuna RDB storage (embedded SQLite by default, any SQLAlchemy
URL), and reading the studies in it: their completed trials, best designs and summaries.
The only part of the search that touches files (the SQLite database)."""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import socket
import time
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from dse.errors import DseError, UnknownNameError, UsageError
from dse.io.design_files import DesignFile
from dse.search.candidates import Candidate, trial_candidate
from dse.search.objectives import OBJECTIVES
from dse.search.pareto import pareto_mask

DEFAULT_STORAGE = "sqlite:///dse-studies.db"  # the `dse` command's; the library's is in memory
MEMORY_STORAGE = "memory"  # dse optimize --storage memory: Optuna's in-memory storage
IN_MEMORY = "in-memory"  # OptimizeResult.storage of a study kept in memory
# Storage behaviour (operational, not model, constants): a worker waits up to SQLITE_BUSY_S for
# another's write lock; on a server database (whose workers may run on other hosts) a trial's
# heartbeat every HEARTBEAT_S, and a RUNNING trial without one for GRACE_S is one a killed
# process left (a trial takes milliseconds to a second); on SQLite (one host: its write-ahead
# log needs shared memory) the process id a trial is marked with tells instead (`fail_orphans`),
# and an unmarked RUNNING trial older than GRACE_S was left by a killed worker; workers
# creating one new storage at once retry the schema race OPEN_TRIES times, 0.2 s x try apart.
SQLITE_BUSY_S = 300
HEARTBEAT_S = 2
GRACE_S = 8
OPEN_TRIES = 8
UNMARKED_WAIT_S = 3.0  # a trial's sampling (before its worker marks it) takes milliseconds


# Tables every Optuna RDB storage has; a database without them is not one.
OPTUNA_TABLES = ("studies", "version_info")


def _sqlite_path(url: str) -> str | None:
    """The database file of a sqlite URL; None for another database; "" for an in-memory one
    (sqlite://, sqlite:///:memory:)."""
    if not url.startswith("sqlite"):
        return None
    _, _, rest = url.partition(":///")
    return "" if rest in ("", ":memory:") else rest


def _check_url(url: str) -> None:
    from dse.io.outputs import sqlite_path_problem, storage_url_problem

    if url == MEMORY_STORAGE:
        raise UsageError(f"--storage {url}: an in-memory study ends with the `dse optimize` that "
                         "ran it, so none can be listed, resumed or exported; give the storage "
                         "it was saved in (sqlite:///FILE, postgresql://...; none: the default "
                         "file)")
    form = storage_url_problem(url)
    if form is not None:
        raise UsageError(f"--storage {url}: {form}")
    path = _sqlite_path(url)
    why = None if path is None else sqlite_path_problem(path)
    if why is not None:
        raise UsageError(f"--storage {url}: {why}")


def is_optuna_storage(url: str) -> bool:
    """Whether the database at url already holds Optuna's tables; read only: opens a SQLite
    file read-only and another database through SQLAlchemy's inspector, creating nothing."""
    path = _sqlite_path(url)
    if path is not None:
        import sqlite3

        if os.path.isdir(path):
            raise UsageError(f"storage {url}: {path} is a directory, not a database file")
        if not os.path.isfile(path):
            return False
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                names = {r[0] for r in con.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
            finally:
                con.close()
        except sqlite3.DatabaseError as e:  # not a database at all
            raise UsageError(f"storage {url}: {path} is not a SQLite database ({e})") from None
        return set(OPTUNA_TABLES) <= names
    import sqlalchemy

    try:
        engine = sqlalchemy.create_engine(url)
        try:
            insp = sqlalchemy.inspect(engine)
            return all(insp.has_table(t) for t in OPTUNA_TABLES)
        finally:
            engine.dispose()
    except Exception as e:  # sqlalchemy / driver errors: one line for the user
        raise DseError(f"storage {url}: cannot open: {str(e).splitlines()[0]}") from None


# SQLAlchemy's pool logs "Exception during reset or similar" with a traceback when a Ctrl-C
# lands while it rolls back a connection the interrupted call dropped, then lets the interrupt
# through; with no handler configured, Python's last-resort handler printed that to stderr
# before the command's one line. A NullHandler keeps it off stderr (as a library should); an
# application's own logging still receives the record.
logging.getLogger("sqlalchemy.pool").addHandler(logging.NullHandler())


SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")  # what SQLite keeps beside a database file


@contextlib.contextmanager
def removed_if_failed(url: str | None) -> Iterator[None]:
    """A SQLite database file that does not exist before the block and that the block leaves
    without a study (creating the storage or the study failed: a full disk, an interruption)
    is removed again, with its journal, write-ahead log and shared-memory files; a file that
    existed, or that holds a study (another process's, created meanwhile), is kept."""
    path = _sqlite_path(url or DEFAULT_STORAGE)
    if not path or os.path.lexists(path):
        yield
        return
    try:
        yield
    except BaseException:
        if os.path.isfile(path) and not _holds_a_study(path):
            for p in (path, *(path + s for s in SQLITE_SIDE_FILES)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
        raise


def _holds_a_study(path: str) -> bool:
    """Whether the SQLite file holds at least one study (read only; a file that is no database
    or has no studies table holds none)."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return con.execute("SELECT 1 FROM studies LIMIT 1").fetchone() is not None
        finally:
            con.close()
    except sqlite3.Error:
        return False


def open_storage(url: str | None, *, create: bool = True) -> Any:
    """An Optuna RDB storage: the embedded SQLite file by default, any SQLAlchemy URL
    (postgresql://...) otherwise. On a server database a heartbeat lets a restarted run fail
    the trials a killed one left RUNNING; SQLite needs none (`fail_orphans`), and the heartbeat
    thread and writes would cost time there. create=False (listing, loading, exporting a
    study): the database must already be an Optuna storage, else a UsageError, and nothing in
    it is created or changed (no tables, no journal mode)."""
    import optuna

    url = url or DEFAULT_STORAGE
    _check_url(url)
    if not create and not is_optuna_storage(url):
        raise UsageError(f"storage {url}: not an Optuna study storage (it has no "
                         f"{' and '.join(OPTUNA_TABLES)} tables); nothing was written to it")
    kwargs: dict[str, Any] = {}
    beat: dict[str, Any] = {"heartbeat_interval": HEARTBEAT_S, "grace_period": GRACE_S}
    if url.startswith("sqlite"):
        kwargs = {"connect_args": {"timeout": SQLITE_BUSY_S}}
        beat = {}
    for attempt in range(OPEN_TRIES):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                store = optuna.storages.RDBStorage(url, engine_kwargs=kwargs, **beat)
            break
        except Exception as e:  # sqlalchemy / driver errors: one line for the user
            msg = str(e).splitlines()[0]
            # processes creating one new storage at once race on its schema: try again
            if attempt < OPEN_TRIES - 1 and ("UNIQUE constraint" in msg or "already exists" in msg
                                or "locked" in msg or "duplicate key" in msg):
                time.sleep(0.2 * (attempt + 1))
                continue
            raise DseError(f"storage {url}: cannot open: {msg}") from None
    if url.startswith("sqlite") and create:
        _fast_sqlite(store.engine)
    return store


def storage_failure(e: BaseException) -> str | None:
    """The first line of the database error under `e` (its cause or context, at any depth),
    or None when none is there. Optuna turns a commit that fails while it records a trial (a
    full disk) into StorageInternalError, and then, its trial left RUNNING, into
    `AssertionError: Should not reach.`: the database's own line is the one a user can act on."""
    seen: set[int] = set()
    found: BaseException | None = None
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        kind = type(cur)
        if kind.__module__.startswith(("sqlalchemy", "sqlite3")) or kind.__name__ in (
                "StorageInternalError", "OperationalError", "DatabaseError"):
            found = cur  # the deepest: the driver's own words
        cur = cur.__cause__ or cur.__context__
    if found is None:
        return None
    return (str(found).splitlines() or [type(found).__name__])[0]


def _fast_sqlite(engine: Any) -> None:
    """Write-ahead log and fsync at checkpoints only: a commit then survives a killed process
    (the log is in the OS cache) though not a power cut; commits get ~10x cheaper and readers
    no longer block the writer of another process."""
    import sqlalchemy

    def on_connect(conn: Any, _record: Any) -> None:
        cur = conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    sqlalchemy.event.listen(engine, "connect", on_connect)
    engine.dispose()  # connections opened before the listener get replaced


WORKER_ATTR = "dse_worker"  # "host:pid" of the process running a trial, written in one go
THROUGH = (WORKER_ATTR,)  # trial attributes other workers read while the trial runs


def write_behind(store: Any) -> Any:
    """`store` (an RDB storage) for a study this process runs trials on: what a trial writes
    goes to the database in one transaction before its finishing state, and the study is
    re-read once per trial (dse.search.write_behind); the plain storage where this Optuna
    lacks the private parts that relies on."""
    from dse.search import write_behind as wb

    return (wb.WriteBehind(store, through=THROUGH, mark={WORKER_ATTR: _worker()})
            if wb.usable() else store)


def _refresh(study: Any) -> None:
    """Make the study's next read go to the database (a write-behind storage serves a trial's
    reads from what it read at the trial's start)."""
    stale = getattr(study._storage, "stale", None)
    if stale is not None:
        stale(study._study_id)


def mark_worker(trial: Any) -> None:
    """Record the process running `trial` ("host:pid", one attribute, so that a trial is
    either marked or not), so that a trial a killed process on this host left RUNNING is not
    counted as a claim on the study's budget. A write-behind storage marks each trial as it
    creates it (one transaction), and this writes nothing."""
    if trial.user_attrs.get(WORKER_ATTR) != _worker():
        trial.set_user_attr(WORKER_ATTR, _worker())


def _worker() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(t: Any) -> bool:
    """Whether a marked RUNNING trial's process may still be running it: True unless it ran
    on this host under a pid that no longer exists (another host's counts)."""
    host, _, pid = str(t.user_attrs.get(WORKER_ATTR, "")).rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def fail_orphans(study: Any) -> int:
    """Mark FAIL the RUNNING trials a killed process left in a study without a heartbeat (the
    SQLite file's): those marked by a process of this host that no longer exists, and those
    never marked that started more than GRACE_S ago (a worker marks its trial milliseconds
    after creating it). With a heartbeat, or in memory, Optuna does this itself (or nothing
    outlives the process). The number of trials failed; one read when there are none."""
    import optuna

    store = study._storage
    if isinstance(store, optuna.storages.InMemoryStorage) or store.get_heartbeat_interval():
        return 0
    S = optuna.trial.TrialState
    now = datetime.datetime.now()
    n = 0
    _refresh(study)
    for t in study.get_trials(deepcopy=False, states=(S.RUNNING,)):
        left = (not _alive(t) if WORKER_ATTR in t.user_attrs else
                t.datetime_start is not None
                and (now - t.datetime_start).total_seconds() > GRACE_S)
        if left:
            try:
                n += bool(store.set_trial_state_values(t._trial_id, state=S.FAIL))
            except optuna.exceptions.UpdateFinishedTrialError:
                pass  # another worker failed it first
    return n


def within_budget(study: Any, number: int, trials: int) -> bool:
    """Whether trial `number` is among the first `trials` that count: the completed and
    running trials numbered before it leave room for it. Workers sharing a study each ask
    before evaluating, so together they never finish more than `trials` (a trial in flight
    elsewhere holds its place; a failed one, or one a killed local process left, frees it).
    A running trial not yet marked (its worker still sampling it, milliseconds) is waited for
    when it decides, up to UNMARKED_WAIT_S; one still unmarked was left by a killed worker."""
    if number < trials:  # fewer than `trials` trials of any kind are numbered before it
        return True
    import optuna

    S = optuna.trial.TrialState
    deadline = time.monotonic() + UNMARKED_WAIT_S
    while True:
        _refresh(study)
        before = [t for t in study.get_trials(deepcopy=False, states=(S.COMPLETE, S.RUNNING))
                  if t.number < number]
        held = sum(t.state == S.COMPLETE or (WORKER_ATTR in t.user_attrs and _alive(t))
                   for t in before)
        unmarked = sum(t.state == S.RUNNING and WORKER_ATTR not in t.user_attrs
                       for t in before)
        if held >= trials:
            return False
        if held + unmarked < trials or time.monotonic() > deadline:
            return True
        time.sleep(0.05)


def study_trials(study: Any) -> list[Any]:
    import optuna

    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))


def best_trials(study: Any) -> list[Any]:
    """The best feasible completed trial (one objective) or the feasible non-dominated ones,
    sorted by the first objective (best first); each carries its design."""
    dirs = [1 if d.name == "MINIMIZE" else -1 for d in study.directions]
    ts = [t for t in study_trials(study) if t.user_attrs.get("violation", 1.0) <= 0
          and "design_toml" in t.user_attrs]
    if not ts:
        return []
    vals = np.array([[v * d for v, d in zip(t.values, dirs, strict=True)] for t in ts])
    mask = pareto_mask(vals)
    order = np.flatnonzero(mask)[np.argsort(vals[mask, 0], kind="stable")]
    return [ts[i] for i in order]


def best_candidates(study: Any) -> list[Candidate]:
    """The best feasible trial (one objective) or the feasible non-dominated trials."""
    return [trial_candidate(t) for t in best_trials(study)]


def load_study(storage: str | None, study_name: str) -> Any:
    import optuna

    url = storage or DEFAULT_STORAGE
    names = [s.study_name for s in list_study_summaries(url)]
    if study_name not in names:
        raise UnknownNameError("study", study_name, names)
    return optuna.load_study(study_name=study_name, storage=open_storage(url, create=False))


def study_design_file(storage: str | None, study_name: str, trial: int | None = None
                      ) -> DesignFile:
    """The design of a study's best feasible trial, or of trial number `trial`."""
    study = load_study(storage, study_name)
    if trial is None:
        best = best_candidates(study)
        if not best:
            raise DseError(f"study {study_name}: no feasible completed trial")
        return best[0].design
    ts = [t for t in study_trials(study) if t.number == trial]
    if not ts or "design_toml" not in ts[0].user_attrs:
        done = [t.number for t in study_trials(study) if "design_toml" in t.user_attrs]
        raise UsageError(f"--trial {trial}: no completed trial with a design in study "
                         f"{study_name} (completed: {len(done)}, numbers "
                         f"{done[0] if done else '-'}..{done[-1] if done else '-'})")
    return trial_candidate(ts[0]).design


def list_study_summaries(url: str) -> list[Any]:
    import optuna

    _check_url(url)
    path = _sqlite_path(url)
    if path and not os.path.exists(path):  # no file yet: no studies, and none is created
        return []
    return list(optuna.get_all_study_summaries(open_storage(url, create=False),
                                               include_best_trial=False))


def list_studies(storage: str | None = None) -> list[dict[str, Any]]:
    """Every study in a storage with its trial counts and best values (feasible trials)."""
    import optuna

    url = storage or DEFAULT_STORAGE
    out = []
    for s in list_study_summaries(url):
        study = optuna.load_study(study_name=s.study_name, storage=open_storage(url, create=False))
        best = best_candidates(study) if study.trials else []
        objectives = study.user_attrs.get("objectives") or [
            d.name.lower() for d in study.directions]
        out.append({
            "name": s.study_name,
            "n_trials": len(study.trials),
            "n_complete": len(study_trials(study)),
            "objectives": objectives,
            "directions": [d.name.lower() for d in study.directions],
            "best_values": ([best[0].metrics.get(OBJECTIVES.get(o, o)) for o in objectives]
                            if best else None),
            "n_pareto": len(best),
            "space": study.user_attrs.get("space"),
            "created": s.datetime_start.isoformat(timespec="seconds")
            if s.datetime_start else None,
        })
    return out
