"""The one place input files are read: catalog members, system and design files, space files,
Hugging Face config.json and JSONL traces all come through `read_text`, and catalog
directories are walked by `toml_files`.

An input is a regular file, read once with a size cap (dse.core.limits). A pipe that the shell
hands over as /dev/fd/N or /dev/stdin (`--design <(cat design.toml)`, `< design.toml`) is read
once too, under the same cap. Everything else is refused in one SpecError line naming the
path: a directory, a device (/dev/zero, /dev/urandom would never end), a socket, and a named
FIFO (opening one waits for a writer that may never come).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dse.core.limits import MAX_SPEC_FILE_BYTES
from dse.errors import SpecError

# paths through which a process reads a descriptor it inherited (process substitution, stdin)
INHERITED = ("/dev/fd/", "/proc/self/fd/", "/dev/stdin")
CHUNK_BYTES = 1 << 16


def _strerror(e: OSError) -> str:
    return e.strerror or str(e)


def _kind_refused(mode: int, inherited: bool) -> str | None:
    """Why a file of this mode is no input (None: it is one)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return None if inherited else (
            "a named FIFO (opening it waits for a writer); give a regular file, or a pipe "
            "as <(command)")
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def _too_big(max_bytes: int) -> str:
    return f"larger than {max_bytes:,} bytes, the cap on input files (dse/core/limits.py)"


def read_bytes(path: Path, *, max_bytes: int = MAX_SPEC_FILE_BYTES) -> bytes:
    """The bytes of an input file (at most max_bytes), read once; see the module docstring."""
    text_path = str(path)
    inherited = text_path.startswith(INHERITED)
    try:
        st = os.stat(path)
    except ValueError:  # an embedded NUL
        raise SpecError(path, "", "not a usable path (it contains a NUL character)") from None
    except OSError as e:
        raise SpecError(path, "", f"cannot read: {_strerror(e)}") from None
    why = _kind_refused(st.st_mode, inherited)
    if why is not None:
        raise SpecError(path, "", why)
    if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
        raise SpecError(path, "", _too_big(max_bytes))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise SpecError(path, "", f"cannot read: {_strerror(e)}") from None
    try:
        mode = os.fstat(fd).st_mode  # what was opened (the path may have changed meanwhile)
        why = _kind_refused(mode, inherited)
        if why is not None:
            raise SpecError(path, "", why)
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, CHUNK_BYTES)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise SpecError(path, "", _too_big(max_bytes))
            chunks.append(chunk)
    except OSError as e:
        raise SpecError(path, "", f"cannot read: {_strerror(e)}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: Path, *, max_bytes: int = MAX_SPEC_FILE_BYTES) -> str:
    """A UTF-8 text input file (read_bytes' rules); non-UTF-8 is one SpecError line."""
    try:
        return read_bytes(path, max_bytes=max_bytes).decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(path, "", "not UTF-8 text") from None


def toml_files(d: Path, skip: str) -> list[Path]:
    """Every *.toml file under catalog directory d (sorted; not following directory links, not
    under a directory named `skip`); a directory that cannot be listed is one SpecError naming
    it (never silently skipped), and so is a directory (or a link to one) named like a member,
    `*.toml`, which read_bytes would refuse as an input file."""

    def refuse(e: OSError) -> None:
        where = e.filename or d
        raise SpecError(where, "", f"catalog directory: cannot read: {_strerror(e)}")

    out: list[Path] = []
    for root, dirs, files in os.walk(d, onerror=refuse):
        named = sorted(x for x in dirs if x.endswith(".toml"))
        if named:
            raise SpecError(Path(root) / named[0], "", "is a directory, not a file")
        dirs[:] = sorted(x for x in dirs if x != skip)
        out += [Path(root) / f for f in files if f.endswith(".toml")]
    return sorted(out)
