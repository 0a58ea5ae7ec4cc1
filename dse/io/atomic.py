"""One atomic writer for every output file and bundle directory the tool writes.

Guarantees (every writer: write_new, write_paths, write_files, write_new_dir):
- never half-written: the content goes to a temporary beside the destination (same directory,
  so same file system), which is then renamed onto it; on any failure the temporary is removed
  and the destination is as it was;
- an existing destination is refused unless `force`;
- a directory is never replaced by a file, nor a file by a directory;
- a symlink as destination is followed: with `force` its target is replaced and the link
  stays a link (a dangling link is refused: its target's location is not one the user named);
- race-safe without `force`: a destination another process creates meanwhile is kept and this
  write refused, never silently overwritten;
- nothing left behind: a temporary is created and removed with Ctrl-C and SIGTERM held back
  (so a signal never lands between its creation and the `try` that removes it, nor halfway
  through removing it), and a directory a write created (with its parents) is removed again
  when the write fails and leaves it empty (a full disk, an interruption).
Temporaries are named `.<name>.<random>.tmp` (created exclusively, so two writers never share one).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from dse.errors import UsageError

TEMP_TRIES = 100  # exclusive-create attempts for a temporary name (random: a clash is rare)


def _destination(path: str | Path) -> Path:
    """The absolute path that will be replaced: a symlink's target, else path itself."""
    p = Path(os.path.abspath(path))
    if p.is_symlink():
        target = Path(os.path.realpath(p))
        if not os.path.lexists(target):
            raise UsageError(f"{p}: is a symlink to {target}, which does not exist; refusing to "
                             "create a file there")
        return target
    return p


def _temp_name(dest: Path, kind: str) -> Path:
    return dest.with_name(f".{dest.name}.{secrets.token_hex(6)}.{kind}")


def write_new(path: str | Path, data: bytes, *, force: bool, mode: int = 0o666) -> Path:
    """Write `data` to the file `path` (its parent directory must exist) and return the
    destination replaced (a symlink's target). `mode` is the permission bits before the umask
    (0o777 for an executable script)."""
    dest = _destination(path)
    if dest.is_dir():
        raise UsageError(f"{dest}: is a directory")
    if not dest.parent.is_dir():
        raise UsageError(f"{dest}: no such directory {dest.parent}")
    if os.path.lexists(dest) and not force:
        raise UsageError(f"{dest}: already exists (use --force to replace it)")
    _write_set([dest], [data], force=force, mode=mode)
    return dest


def write_paths(files: Mapping[str | Path, bytes], *, force: bool) -> list[Path]:
    """Write several files, each into its own existing directory, as one set (as
    `write_files`: all renamed into place with Ctrl-C and SIGTERM held back, or none);
    e.g. `dse simulate`'s --trace-out and --timeline-out. Returns the destinations."""
    dests = [_destination(p) for p in files]
    for dest in dests:
        if dest.is_dir():
            raise UsageError(f"{dest}: is a directory")
        if not dest.parent.is_dir():
            raise UsageError(f"{dest}: no such directory {dest.parent}")
    clash = [str(p) for p in dests if os.path.lexists(p)]
    if clash and not force:
        raise UsageError(f"{', '.join(clash)}: already there (use --force to replace them)")
    _write_set(dests, list(files.values()), force=force)
    return dests


def write_files(directory: str | Path, files: Mapping[str, bytes], *, force: bool,
                remove: Sequence[str] = ()) -> list[Path]:
    """Write several files into `directory` (created with its parents if missing) as one set:
    every file's content first goes to a temporary beside it; only when all are written are
    they renamed into place, one after another with Ctrl-C and SIGTERM held back (delivered
    right after), so an interruption leaves all of them or none (earlier files of the same
    names stay as they were). Existing files are refused, before anything is written, unless
    `force`. `remove`: names of files of an earlier set that this one replaces without writing
    them, deleted with the renames (so the directory holds the old set or the new one, never a
    mix). A directory this call created is removed again if the write fails. Returns the
    destinations."""
    d = Path(os.path.abspath(directory))
    if os.path.lexists(d) and not d.is_dir():
        raise UsageError(f"{d}: exists and is not a directory")
    dests = [_destination(d / name) for name in files]
    clash = [p.name for p in dests if os.path.lexists(p)]
    if clash and not force:
        raise UsageError(f"{d}: {', '.join(sorted(clash))} already there (use --force to "
                         "replace them)")
    for dest in dests:
        if dest.is_dir():
            raise UsageError(f"{dest}: is a directory")
    created: list[Path] = []
    try:
        _make_dirs(d, created)
        _write_set(dests, list(files.values()), force=force,
                   remove=[d / name for name in remove if name not in files])
    except BaseException:
        _remove_if_empty(created)
        raise
    return dests


def _write_set(dests: Sequence[Path], data: Sequence[bytes], *, force: bool, mode: int = 0o666,
               remove: Sequence[Path] = ()) -> None:
    """Each data to a temporary beside its destination, then every temporary renamed into place
    (and `remove` deleted) with Ctrl-C and SIGTERM held back; the temporaries go in any case."""
    temps: list[Path] = []
    try:
        for dest, content in zip(dests, data, strict=True):
            try:
                with _signals_held():  # created and recorded for removal as one step
                    temps.append(_create_temp(dest, mode))
                with temps[-1].open("wb") as f:
                    f.write(content)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:  # a full disk, a quota: name the file
                raise _cannot_write(e, dest) from None
        with _signals_held():
            for tmp, dest in zip(temps, dests, strict=True):
                if force:
                    os.replace(tmp, dest)
                else:
                    _link_new(tmp, dest)
            for old in remove:
                with contextlib.suppress(FileNotFoundError):
                    old.unlink()
    finally:
        _remove_temps(temps)


def _cannot_write(e: OSError, dest: Path) -> OSError:
    """The error of a failed write, naming the destination (a full disk's ENOSPC names none)."""
    return OSError(e.errno, f"cannot write it: {e.strerror or e}; nothing was written", str(dest))


def _remove_temps(temps: Sequence[Path]) -> None:
    """Remove temporaries (files or directories) left, with Ctrl-C and SIGTERM held back so
    that a signal never stops the removal halfway."""
    with _signals_held():
        for tmp in temps:
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp, ignore_errors=True)
            elif os.path.lexists(tmp):
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()


def _make_dirs(d: Path, created: list[Path]) -> None:
    """Create directory d with its missing parents, recording (outermost first) each one this
    call created, so that a failed write can remove them again."""
    missing: list[Path] = []
    p = d
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for m in reversed(missing):
        with _signals_held():
            try:
                m.mkdir()
            except FileExistsError:  # another process made it meanwhile: not ours
                continue
            created.append(m)


def _remove_if_empty(created: Sequence[Path]) -> None:
    """Remove the directories a failed write created, innermost first, where they are empty
    (one that another process has put a file into meanwhile stays)."""
    with _signals_held():
        for m in reversed(created):
            try:
                m.rmdir()
            except OSError:
                break


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while inside: their handlers only record them, and on
    leaving the previous handlers come back and the signals are raised again (Python runs
    signal handlers in the main thread only, so this holds even while other threads run,
    where a thread's signal mask would not)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        caught.append(signum)

    previous = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)


def _create_temp(dest: Path, mode: int) -> Path:
    for _ in range(TEMP_TRIES):
        tmp = _temp_name(dest, "tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
        except FileExistsError:
            continue
        return tmp
    raise OSError(errno.EEXIST, f"no free temporary name beside {dest}")


def _link_new(tmp: Path, dest: Path) -> None:
    """Move tmp to an absent dest, refusing (not overwriting) a dest that appeared meanwhile:
    a hard link fails if dest exists; where the file system has no hard links, a rename after
    one more check (the window is then microseconds wide)."""
    try:
        os.link(tmp, dest)
    except FileExistsError:
        raise UsageError(f"{dest}: another process created it while this one was being "
                         "written; kept it (use --force to replace it)") from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
            raise
        if os.path.lexists(dest):
            raise UsageError(f"{dest}: already exists (use --force to replace it)") from None
        os.replace(tmp, dest)


def write_new_dir(path: str | Path, fill: Callable[[Path], None], *, force: bool) -> Path:
    """Create the directory `path` whole: `fill(tmp)` writes the contents into a fresh
    temporary directory beside it, which is then renamed onto `path`. An absent or empty
    directory is simply taken; a non-empty one is refused unless `force`, and then replaced
    whole, atomically where the OS can swap two directories (Linux renameat2), else by two
    renames (`path` is then missing for an instant, never half-written). Returns the
    destination (a symlink's target). Parent directories are created (and removed again, where
    empty, if the write fails); the temporary (after a swap: the old content) is removed with
    Ctrl-C and SIGTERM held back, so an interruption never leaves part of it."""
    dest = _destination(path)
    if os.path.lexists(dest) and not dest.is_dir():
        raise UsageError(f"{dest}: exists and is not a directory")
    nonempty = dest.is_dir() and any(dest.iterdir())
    if nonempty and not force:
        raise UsageError(f"{dest}: directory is not empty (use --force to replace it)")
    created: list[Path] = []
    temps: list[Path] = []
    try:
        _make_dirs(dest.parent, created)
        with _signals_held():  # created and recorded for removal as one step
            temps.append(_create_temp_dir(dest))
        tmp = temps[0]
        try:
            fill(tmp)
            tmp.chmod(0o755)
        except OSError as e:
            raise _cannot_write(e, dest) from None
        with _signals_held():
            if nonempty:
                _replace_dir(tmp, dest)
            else:
                _rename_new(tmp, dest)
    except BaseException:
        _remove_temps(temps)
        _remove_if_empty(created)
        raise
    _remove_temps(temps)
    return dest


def _create_temp_dir(dest: Path) -> Path:
    for _ in range(TEMP_TRIES):
        tmp = _temp_name(dest, "tmp")
        try:
            tmp.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return tmp
    raise OSError(errno.EEXIST, f"no free temporary name beside {dest}")


def _rename_new(tmp: Path, dest: Path) -> None:
    """Move the finished directory to an absent or empty dest. If another process fills dest
    meanwhile (two writers racing for one directory), its content is kept and this write is
    refused with one line."""
    try:
        if dest.is_dir():
            dest.rmdir()
        os.rename(tmp, dest)
    except FileNotFoundError:  # the other process removed the empty directory first
        try:
            os.rename(tmp, dest)
        except OSError as e:
            _raced(dest, e)
    except OSError as e:
        _raced(dest, e)


def _raced(dest: Path, e: OSError) -> None:
    if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
        raise UsageError(f"{dest}: another process wrote there while this one was being "
                         "written; kept it (use --force to replace it)") from None
    raise e


def _replace_dir(new: Path, dest: Path) -> None:
    if _exchange(new, dest):  # `new` now holds the old content; the caller removes it
        return
    old = _temp_name(dest, "old")
    os.rename(dest, old)
    try:
        os.rename(new, dest)
    except BaseException:
        os.rename(old, dest)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))
