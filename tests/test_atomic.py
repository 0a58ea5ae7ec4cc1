"""dse.io.atomic: the one writer of output files and bundle directories.

Each test states a guarantee and checks both the destination and that no temporary is left."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dse.errors import UsageError
from dse.io import atomic
from dse.io.atomic import write_new, write_new_dir


def names(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


# ----------------------------------------------------------------------------------- files


def test_new_file_written_whole_and_no_temporary(tmp_path):
    dest = write_new(tmp_path / "a.txt", b"hello", force=False)
    assert dest == tmp_path / "a.txt" and dest.read_bytes() == b"hello"
    assert names(tmp_path) == ["a.txt"]


def test_existing_file_refused_unless_forced(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"old")
    with pytest.raises(UsageError, match=r"already exists.*--force"):
        write_new(p, b"new", force=False)
    assert p.read_bytes() == b"old" and names(tmp_path) == ["a.txt"]
    write_new(p, b"new", force=True)
    assert p.read_bytes() == b"new" and names(tmp_path) == ["a.txt"]


@pytest.mark.parametrize("force", [False, True])
def test_directory_never_replaced_by_a_file(tmp_path, force):
    d = tmp_path / "d"
    d.mkdir()
    (d / "keep").write_bytes(b"x")
    with pytest.raises(UsageError, match="is a directory"):
        write_new(d, b"data", force=force)
    assert names(d) == ["keep"] and names(tmp_path) == ["d"]


def test_missing_parent_is_one_clean_error(tmp_path):
    with pytest.raises(UsageError, match="no such directory"):
        write_new(tmp_path / "nope" / "a.txt", b"x", force=True)
    assert names(tmp_path) == []


def test_force_through_a_symlink_replaces_its_target_and_keeps_the_link(tmp_path):
    real_dir, link_dir = tmp_path / "real", tmp_path / "links"
    real_dir.mkdir()
    link_dir.mkdir()
    target = real_dir / "t.txt"
    target.write_bytes(b"old")
    link = link_dir / "l.txt"
    link.symlink_to(target)
    with pytest.raises(UsageError, match="already exists"):
        write_new(link, b"new", force=False)
    assert write_new(link, b"new", force=True) == target
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == b"new"
    assert names(link_dir) == ["l.txt"] and names(real_dir) == ["t.txt"]  # no stray temporary


@pytest.mark.parametrize("force", [False, True])
def test_dangling_symlink_refused(tmp_path, force):
    link = tmp_path / "l.txt"
    link.symlink_to(tmp_path / "elsewhere" / "t.txt")
    with pytest.raises(UsageError, match="does not exist"):
        write_new(link, b"x", force=force)
    assert link.is_symlink() and names(tmp_path) == ["l.txt"]


@pytest.mark.parametrize("force", [False, True])
def test_failure_mid_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, force):
    p = tmp_path / "a.txt"
    if force:
        p.write_bytes(b"old")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        write_new(p, b"new", force=force)
    assert names(tmp_path) == (["a.txt"] if force else [])
    if force:
        assert p.read_bytes() == b"old"


def test_a_file_created_meanwhile_is_kept_without_force(tmp_path, monkeypatch):
    """Another process creates the destination after the existence check: this write is
    refused and the other's file kept (a hard link cannot overwrite)."""
    p = tmp_path / "a.txt"
    real = atomic._create_temp

    def racing(dest: Path, mode: int) -> Path:
        tmp = real(dest, mode)
        p.write_bytes(b"theirs")
        return tmp

    monkeypatch.setattr(atomic, "_create_temp", racing)
    with pytest.raises(UsageError, match="another process"):
        write_new(p, b"mine", force=False)
    assert p.read_bytes() == b"theirs" and names(tmp_path) == ["a.txt"]


def test_without_hard_links_a_new_file_is_still_written(tmp_path, monkeypatch):
    def no_links(src: object, dst: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(atomic.os, "link", no_links)
    write_new(tmp_path / "a.txt", b"x", force=False)
    assert (tmp_path / "a.txt").read_bytes() == b"x" and names(tmp_path) == ["a.txt"]


def test_temporary_names_never_shared(tmp_path, monkeypatch):
    """A temporary name already taken (another writer's) is skipped, not reused."""
    hexes = iter(["aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(atomic.secrets, "token_hex", lambda n: next(hexes))
    other = tmp_path / ".a.txt.aaaaaaaaaaaa.tmp"
    other.write_bytes(b"other writer's")
    write_new(tmp_path / "a.txt", b"x", force=False)
    assert other.read_bytes() == b"other writer's"
    assert names(tmp_path) == [".a.txt.aaaaaaaaaaaa.tmp", "a.txt"]


def test_mode_is_the_umask_applied_to_the_request(tmp_path):
    old = os.umask(0o022)
    try:
        plain = write_new(tmp_path / "a.txt", b"x", force=False)
        script = write_new(tmp_path / "b.sh", b"x", force=False, mode=0o777)
    finally:
        os.umask(old)
    assert stat.S_IMODE(plain.stat().st_mode) == 0o644
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


# ----------------------------------------------------------------------------- directories


def fill_with(files: dict[str, bytes]):
    def fill(tmp: Path) -> None:
        for name, data in files.items():
            (tmp / name).write_bytes(data)

    return fill


def test_new_directory_created_whole(tmp_path):
    out = write_new_dir(tmp_path / "x" / "out", fill_with({"a": b"1", "b": b"2"}), force=False)
    assert out == tmp_path / "x" / "out" and names(out) == ["a", "b"]
    assert names(tmp_path / "x") == ["out"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o755


def test_empty_directory_is_taken(tmp_path):
    (tmp_path / "out").mkdir()
    write_new_dir(tmp_path / "out", fill_with({"a": b"1"}), force=False)
    assert names(tmp_path / "out") == ["a"] and names(tmp_path) == ["out"]


@pytest.mark.parametrize("exchange", [True, False])
def test_non_empty_directory_refused_unless_forced_then_replaced_whole(tmp_path, monkeypatch,
                                                                       exchange):
    if not exchange:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    write_new_dir(out, fill_with({"old1": b"1", "old2": b"2"}), force=False)
    with pytest.raises(UsageError, match="not empty"):
        write_new_dir(out, fill_with({"new": b"3"}), force=False)
    assert names(out) == ["old1", "old2"]
    write_new_dir(out, fill_with({"new": b"3"}), force=True)
    assert names(out) == ["new"] and names(tmp_path) == ["out"]


def test_failing_fill_leaves_the_old_directory_and_no_temporary(tmp_path):
    out = tmp_path / "out"
    write_new_dir(out, fill_with({"old": b"1"}), force=False)

    def failing(tmp: Path) -> None:
        (tmp / "new").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_new_dir(out, failing, force=True)
    assert names(out) == ["old"] and names(tmp_path) == ["out"]
    with pytest.raises(OSError):
        write_new_dir(tmp_path / "fresh", failing, force=False)
    assert names(tmp_path) == ["out"]


@pytest.mark.parametrize("force", [False, True])
def test_a_file_is_never_replaced_by_a_directory(tmp_path, force):
    p = tmp_path / "f"
    p.write_bytes(b"x")
    with pytest.raises(UsageError, match="not a directory"):
        write_new_dir(p, fill_with({"a": b"1"}), force=force)
    assert p.read_bytes() == b"x" and names(tmp_path) == ["f"]


def test_force_through_a_directory_symlink_keeps_the_link(tmp_path):
    real, link = tmp_path / "real", tmp_path / "link"
    write_new_dir(real, fill_with({"old": b"1"}), force=False)
    link.symlink_to(real)
    assert write_new_dir(link, fill_with({"new": b"2"}), force=True) == real
    assert link.is_symlink() and names(real) == ["new"]
    assert names(tmp_path) == ["link", "real"]


def test_a_directory_filled_meanwhile_is_kept(tmp_path, monkeypatch):
    """Two writers racing for one new directory: the loser is refused with one line and the
    winner's content kept."""
    out = tmp_path / "out"

    def theirs_first(tmp: Path) -> None:
        (tmp / "mine").write_bytes(b"1")
        out.mkdir()
        (out / "theirs").write_bytes(b"2")

    with pytest.raises(UsageError, match="another process"):
        write_new_dir(out, theirs_first, force=False)
    assert names(out) == ["theirs"] and names(tmp_path) == ["out"]
