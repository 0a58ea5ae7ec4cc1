"""One atomic writer for every output file and bundle directory the tool writes.

Guarantees (both functions):
- never half-written: the content goes to a temporary beside the destination (same directory,
  so same file system), which is then renamed onto it; on any failure the temporary is removed
  and the destination is as it was;
- an existing destination is refused unless `force`;
- a directory is never replaced by a file, nor a file by a directory;
- a symlink as destination is followed: with `force` its target is replaced and the link
  stays a link (a dangling link is refused: its target's location is not one the user named);
- race-safe without `force`: a destination another process creates meanwhile is kept and this
  write refused, never silently overwritten.
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
from collections.abc import Callable, Iterator, Mapping
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
    tmp = _create_temp(dest, mode)
    try:
        with tmp.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if force:
            os.replace(tmp, dest)
        else:
            _link_new(tmp, dest)
    finally:
        if os.path.lexists(tmp):
            tmp.unlink()
    return dest


def write_files(directory: str | Path, files: Mapping[str, bytes], *, force: bool
                ) -> list[Path]:
    """Write several files into `directory` (created with its parents if missing) as one set:
    every file's content first goes to a temporary beside it; only when all are written are
    they renamed into place, one after another with Ctrl-C and SIGTERM held back (delivered
    right after), so an interruption leaves all of them or none (earlier files of the same
    names stay as they were). Existing files are refused, before anything is written, unless
    `force`. Returns the destinations."""
    d = Path(os.path.abspath(directory))
    if os.path.lexists(d) and not d.is_dir():
        raise UsageError(f"{d}: exists and is not a directory")
    dests = [_destination(d / name) for name in files]
    clash = [p.name for p in dests if os.path.lexists(p)]
    if clash and not force:
        raise UsageError(f"{d}: {', '.join(sorted(clash))} already there (use --force to "
                         "replace them)")
    d.mkdir(parents=True, exist_ok=True)
    temps: list[Path] = []
    try:
        for dest, data in zip(dests, files.values(), strict=True):
            if dest.is_dir():
                raise UsageError(f"{dest}: is a directory")
            tmp = _create_temp(dest, 0o666)
            temps.append(tmp)
            with tmp.open("wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        with _signals_held():
            for tmp, dest in zip(temps, dests, strict=True):
                if force:
                    os.replace(tmp, dest)
                else:
                    _link_new(tmp, dest)
    finally:
        for tmp in temps:
            if os.path.lexists(tmp):
                tmp.unlink()
    return dests


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
    destination (a symlink's target). Parent directories are created."""
    dest = _destination(path)
    if os.path.lexists(dest) and not dest.is_dir():
        raise UsageError(f"{dest}: exists and is not a directory")
    nonempty = dest.is_dir() and any(dest.iterdir())
    if nonempty and not force:
        raise UsageError(f"{dest}: directory is not empty (use --force to replace it)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temp_dir(dest)
    try:
        fill(tmp)
        tmp.chmod(0o755)
        if nonempty:
            _replace_dir(tmp, dest)
        else:
            _rename_new(tmp, dest)
    finally:
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
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
