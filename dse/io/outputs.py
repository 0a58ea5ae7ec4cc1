"""Output paths checked before any computing: a file, a directory or a SQLite study database
that a command (or `dse.export`, `dse.optimize`) will write is refused in one line, naming the
flag or argument, when it cannot be written: an empty path, a directory where a file is needed
(or the other way round), a path under a regular file, a device or a FIFO, a directory that does
not exist or that this process cannot create files in, files already there without force (a
file the command itself wrote earlier, recognised by its first bytes, excepted where the command
says how). dse.io.atomic does the writing itself (and checks again: the file system may change
in between).

Writability is probed, not guessed from permission bits: a temporary file is created
exclusively in the directory and removed at once (root ignores the bits, while a read-only
mount or a kernel file system refuses even root).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from dse.core.limits import MAX_SQLITE_PATH_BYTES
from dse.errors import UsageError

HEAD_BYTES = 4096  # what `ours` sees of an existing output file: its first bytes


def _fail(flag: str, path: object, why: str) -> UsageError:
    return UsageError(f"{flag} {path}: {why}")


def check_path_text(flag: str, text: str) -> None:
    """An output path as given: an empty one (`--out ""`) or one with a NUL byte names no file
    and is refused in one line, never silently skipped."""
    if not text or "\0" in text:
        raise _fail(flag, repr(text), "not a usable path")


def _nearest_existing(p: Path) -> Path:
    """p, or its nearest ancestor that exists (lexists: a dangling link counts)."""
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


def _probe_writable(flag: str, shown: object, d: Path) -> None:
    """Create and remove a file in directory d, or refuse in one line."""
    probe = d / f".dse-probe.{secrets.token_hex(6)}.tmp"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        raise _fail(flag, shown, f"cannot create files in {d} ({why})") from None
    try:
        os.unlink(probe)
    except OSError:
        pass


def _directory_for(flag: str, shown: object, d: Path, *, create: bool) -> None:
    """Directory d will hold the output: it exists and is a writable directory, or (create) its
    nearest existing ancestor is one (the missing levels are then created)."""
    base = _nearest_existing(d)
    if base != d and not create:
        raise _fail(flag, shown, f"no such directory {d}")
    try:
        st = os.stat(base)
    except OSError as e:  # a dangling link, a loop
        raise _fail(flag, shown, f"cannot use {base} ({os.strerror(e.errno or errno.EIO)})"
                    ) from None
    if not stat.S_ISDIR(st.st_mode):
        raise _fail(flag, shown, f"{base} is a file, not a directory")
    _probe_writable(flag, shown, base)


def _target(flag: str, path: str | os.PathLike[str]) -> Path:
    """The absolute path (a symlink's target; a dangling link is refused, as dse.io.atomic)."""
    text = os.fspath(path)
    check_path_text(flag, text)
    p = Path(os.path.abspath(text))
    if p.is_symlink():
        real = Path(os.path.realpath(p))
        if not os.path.lexists(real):
            raise _fail(flag, text, f"a symlink to {real}, which does not exist")
        return real
    return p


def _head(p: Path) -> bytes | None:
    """The first HEAD_BYTES of the regular file p; None when it cannot be read."""
    try:
        with p.open("rb") as f:
            return f.read(HEAD_BYTES)
    except OSError:
        return None


def check_output_file(flag: str, path: str | os.PathLike[str], *, force: bool,
                      ours: Callable[[bytes], bool] | None = None, owner: str = "") -> Path:
    """A file the command will write: its directory exists and takes new files; the path
    itself is no directory, device or FIFO; a regular file already there (a symlink's target)
    is refused unless force, or unless `ours(its first HEAD_BYTES bytes)` says the command
    wrote it earlier (owner: that command's name, for the message, e.g. "dse reproduce")."""
    p = _target(flag, path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:  # a regular file on the way: say which
        st = None
    except OSError as e:
        raise _fail(flag, path, f"cannot use it ({os.strerror(e.errno or errno.EIO)})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise _fail(flag, path, "is a directory; give a file name")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _fail(flag, path, "is not a regular file (a device, FIFO or socket); give a "
                    "file name")
    if st is not None and not force:
        head = _head(p) if ours is not None else None
        if ours is None or head is None or not ours(head):
            mine = f" and is not an earlier {owner} output" if owner else ""
            raise _fail(flag, path, f"already exists{mine}; use --force to replace it, or "
                        "another file name")
    _directory_for(flag, path, p.parent, create=False)
    return p


def check_output_dir(flag: str, path: str | os.PathLike[str], *, force: bool,
                     names: Sequence[str] = (), whole_marker: str | None = None) -> Path:
    """A directory the command will write (created with its parents where missing).

    names: the files written into it, each refused when already there unless force;
    whole_marker: the directory is written whole (a bundle, swapped in with the files a user
    added carried over): a non-empty one needs force and must hold this marker file (a previous
    bundle), else it is never written into."""
    p = _target(flag, path)
    if not os.path.lexists(p):
        _directory_for(flag, path, p.parent, create=True)
        return p
    if not p.is_dir():
        raise _fail(flag, path, "exists and is not a directory")
    if whole_marker is not None:
        try:
            nonempty = any(p.iterdir())
        except OSError as e:
            raise _fail(flag, path, f"cannot list it ({os.strerror(e.errno or errno.EIO)})"
                        ) from None
        if nonempty and not force:
            raise _fail(flag, path, "directory is not empty (--force replaces a previous "
                        "bundle's files and keeps the ones you added)")
        if nonempty and not (p / whole_marker).is_file():
            raise _fail(flag, path, f"not empty and holds no {whole_marker}, so it is not a "
                        "previous bundle; refusing to replace it even when forced")
        _directory_for(flag, path, p.parent, create=False)  # the bundle is renamed in beside
        return p
    clash = sorted(n for n in names if os.path.lexists(p / n))
    if clash and not force:
        raise _fail(flag, path, f"{', '.join(clash)} already there; use --force to replace "
                    "them, or another directory")
    for n in clash:
        if (p / n).is_dir():
            raise _fail(flag, path, f"{n} there is a directory")
    _directory_for(flag, path, p, create=False)
    return p


def sqlite_file(url: str) -> str | None:
    """The database file of a sqlite:/// URL; None for another database or an in-memory one."""
    if not url.startswith("sqlite"):
        return None
    _, _, rest = url.partition(":///")
    return None if rest in ("", ":memory:") else rest


def storage_url_problem(url: str) -> str | None:
    """Why `url` names no study storage before any database is opened, or None: a bare path
    (a file name where a URL belongs: SQLAlchemy's own error, "Could not parse SQLAlchemy URL",
    names no fix) and an in-memory SQLite database (gone when the command ends)."""
    if "://" not in url:
        return (f"not a storage URL; a database file is sqlite:///{url} (relative to the "
                "working directory), a server database postgresql://...")
    if url.startswith("sqlite") and url.partition(":///")[2] in ("", ":memory:"):
        return ("an in-memory SQLite database ends with the command, so no study could be "
                "resumed or listed; give sqlite:///FILE (or no storage for the default file)")
    return None


def sqlite_path_problem(path: str) -> str | None:
    """Why SQLite cannot write a database at `path` (relative: in the working directory), or
    None: its absolute path (as SQLite builds it, and with links resolved, as it also does)
    must fit MAX_SQLITE_PATH_BYTES."""
    full = max((os.path.abspath(path), os.path.realpath(path)), key=lambda q: len(os.fsencode(q)))
    n = len(os.fsencode(full))
    if n <= MAX_SQLITE_PATH_BYTES:
        return None
    return (f"the database's absolute path is {n} bytes long, past SQLite's limit of "
            f"{MAX_SQLITE_PATH_BYTES} (its 512-byte path names less the journal's '-journal'), "
            "so SQLite cannot open it; give a shorter --storage path, e.g. "
            "--storage sqlite:////tmp/dse-studies.db")


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def _first_bytes(p: Path, n: int) -> bytes:
    """The first n bytes of file p (fewer if it is shorter); reads nothing more."""
    with open(p, "rb") as f:
        return f.read(n)


def _open_for_writing(p: Path) -> None:
    """Open p for reading and writing and close it again (changes nothing)."""
    os.close(os.open(p, os.O_RDWR))


def check_storage(flag: str, url: str) -> None:
    """A study storage that will be written: an empty URL is refused; a SQLite file must be a
    regular file this process can open for writing (a read-only database is refused here, not
    after the first trial), in a directory that takes new files (SQLite's journal)."""
    if not url.strip():
        raise UsageError(f"{flag}: an empty URL; give sqlite:///FILE or a database URL")
    form = storage_url_problem(url)
    if form is not None:
        raise _fail(flag, url, form)
    path = sqlite_file(url)
    if path is None:
        return
    why = sqlite_path_problem(path)
    if why is not None:
        raise _fail(flag, url, why)
    p = Path(os.path.abspath(path))
    if os.path.lexists(p):
        if p.is_dir():
            raise _fail(flag, url, f"{p} is a directory, not a database file")
        if not p.is_file():
            raise _fail(flag, url, f"{p} is not a regular file")
        try:
            _open_for_writing(p)
            head = _first_bytes(p, len(SQLITE_HEADER))
        except OSError as e:
            raise _fail(flag, url, f"{p} cannot be written "
                        f"({os.strerror(e.errno or errno.EIO)}); a read-only database cannot "
                        "record trials") from None
        if head and head != SQLITE_HEADER:  # SQLite takes an empty file as a new database
            raise _fail(flag, url, f"{p} is not a SQLite database (a file of another kind, "
                        "left as it is); give a new file or a study database")
    _directory_for(flag, url, p.parent, create=False)
