"""Input files are regular files read once under a size cap (dse/specs/files.py, the one
reader): devices, directories, sockets and named FIFOs are refused in one line naming the path
(exit 3), whatever option names them (--design, --trace, --space, a catalog member, a model's
config.json); a pipe handed over by the shell (`<(cat design.toml)`, /dev/stdin) is read once
and works; a file or pipe over the cap is refused; a catalog directory that cannot be listed is
an error naming it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import dse
from dse.cli import main
from dse.core.limits import MAX_SPEC_FILE_BYTES, MAX_TRACE_FILE_BYTES
from dse.specs.files import read_text
from tests.fuzzing import HF_CONFIG, ROOT, write_small_space

SYSTEM_FILE = ROOT / "scenarios" / "systems" / "paper-config1-u280.toml"
EVAL = ["evaluate", "--scenario", "gsm8k", "--schedule", "heteroreason"]


def _special(kind: str, d: Path, cap: int = MAX_SPEC_FILE_BYTES) -> Path:
    """A path of each refused kind (oversized: past cap)."""
    if kind in ("/dev/zero", "/dev/urandom", "/dev/null"):
        return Path(kind)
    p = d / f"special-{kind}.toml"
    if kind == "directory":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "oversized":
        p.write_text(SYSTEM_FILE.read_text(encoding="utf-8"), encoding="utf-8")
        os.truncate(p, cap + 1)  # sparse: nothing big is written
    return p


KINDS = {"/dev/zero": "is a device", "/dev/urandom": "is a device", "/dev/null": "is a device",
         "directory": "is a directory", "fifo": "a named FIFO", "socket": "is a socket",
         "oversized": "larger than"}


def _argv(option: str, p: Path, d: Path) -> list[str]:
    if option == "--design":
        return [*EVAL, "--design", str(p)]
    if option == "--trace":
        return ["simulate", "--system", "paper-config1-u280", "--scenario", "gsm8k",
                "--problems", "10", "--trace", str(p)]
    if option == "--space":
        return ["sweep", "--space", str(p)]
    if option == "--scenario":
        return ["evaluate", "--system", "paper-config1-u280", "--scenario", str(p)]
    if option == "config.json":
        link = d / "cfg" / "config.json"
        link.parent.mkdir()
        link.symlink_to(p)
        return ["roofline", "--model", str(link), "--device", "rtx-3090"]
    cat = d / "cat"
    cat.mkdir()
    (cat / "member.toml").symlink_to(p)
    return ["catalog", "boards", "--catalog", str(cat)]


@pytest.mark.parametrize("option", ["--design", "--trace", "--space", "--scenario",
                                    "config.json", "catalog member"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_special_files_are_refused(kind: str, option: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    p = _special(kind, tmp_path, MAX_TRACE_FILE_BYTES if option == "--trace"
                 else MAX_SPEC_FILE_BYTES)
    if option == "--scenario" and kind.startswith("/dev/"):
        link = tmp_path / "w.toml"  # a workload path is recognised by its .toml suffix
        link.symlink_to(p)
        p = link
    rc = main(_argv(option, p, tmp_path))
    err = capsys.readouterr().err
    assert rc == 3, (rc, err)  # a catalog member that is a directory (or links to one) too
    # a directory given as a model is a model directory: its config.json is read (none here)
    words = ("config.json/config.json: cannot read" if (kind, option) == (
        "directory", "config.json") else KINDS[kind])
    assert err.count("\n") == 1 and words in err, err


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_design_from_a_pipe_is_read_once(tmp_path: Path) -> None:
    dse_cmd = f"{sys.executable} -m dse.cli"
    f = tmp_path / "d.toml"
    f.write_text(SYSTEM_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    direct = _bash(f"{dse_cmd} {' '.join(EVAL)} --design {f} --json", tmp_path)
    piped = _bash(f"{dse_cmd} {' '.join(EVAL)} --design <(cat {f}) --json", tmp_path)
    stdin = _bash(f"{dse_cmd} {' '.join(EVAL)} --design /dev/stdin --json < {f}", tmp_path)
    assert direct.returncode == 0, direct.stderr
    assert piped.returncode == 0, piped.stderr
    assert stdin.returncode == 0, stdin.stderr
    # the same report from a file, a pipe and standard input (the design's path aside)
    want = json.loads(direct.stdout)
    for other, path in ((piped, "/dev/fd/63"), (stdin, "/dev/stdin")):
        got = json.loads(other.stdout.replace(path, str(f)))
        assert got == want
    big = _bash(f"{dse_cmd} {' '.join(EVAL)} --design <(head -c {MAX_SPEC_FILE_BYTES + 10} "
                "/dev/zero)", tmp_path)
    assert big.returncode == 3 and "larger than" in big.stderr
    assert big.stderr.count("\n") == 1, big.stderr


def test_a_fifo_never_blocks(tmp_path: Path) -> None:
    """A named FIFO nobody writes to: refused at once (opening it would wait forever)."""
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    r = _bash(f"timeout 60 {sys.executable} -m dse.cli {' '.join(EVAL)} --design {fifo}",
              tmp_path)
    assert r.returncode == 3 and "named FIFO" in r.stderr


def test_the_cap_is_exact(tmp_path: Path) -> None:
    f = tmp_path / "x.toml"
    f.write_bytes(b"#" * MAX_SPEC_FILE_BYTES)
    assert len(read_text(f)) == MAX_SPEC_FILE_BYTES
    f.write_bytes(b"#" * (MAX_SPEC_FILE_BYTES + 1))
    with pytest.raises(dse.SpecError, match="larger than"):
        read_text(f)
    assert read_text(f, max_bytes=MAX_SPEC_FILE_BYTES + 1)


def test_non_utf8_and_nul_paths(tmp_path: Path) -> None:
    f = tmp_path / "x.toml"
    f.write_bytes(b"name = \"\xff\"\n")
    with pytest.raises(dse.SpecError, match="not UTF-8"):
        read_text(f)
    with pytest.raises(dse.SpecError, match="NUL"):
        read_text(Path("a\0b"))


def test_api_refuses_special_files_too(tmp_path: Path) -> None:
    with pytest.raises(dse.SpecError, match="is a device"):
        dse.load_design(Path("/dev/urandom"))
    with pytest.raises(dse.SpecError, match="is a device"):
        dse.simulate(dse.load_design("paper-config1-u280"), "gsm8k", problems=5,
                     trace="/dev/zero")
    space = write_small_space(tmp_path / "s.toml")
    assert dse.load_space(space).name
    with pytest.raises(dse.SpecError, match="is a directory"):
        dse.load_space(tmp_path)
    cfg = tmp_path / "config.json"
    cfg.write_text(__import__("json").dumps(HF_CONFIG), encoding="utf-8")
    assert dse.model_from_hf_config(cfg).hidden_size > 0


def test_an_unreadable_catalog_directory_is_named(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Listing fails (a fault injected: root may list a mode-000 directory); the directory is
    named, never silently skipped as pathlib's rglob did."""
    cat = tmp_path / "cat"
    (cat / "locked").mkdir(parents=True)
    real = os.scandir
    locked = str(cat / "locked")

    def scandir(path: object = ".") -> object:
        if os.fspath(path) == locked:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", locked)
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    assert main(["catalog", "boards", "--catalog", str(cat)]) == 3
    err = capsys.readouterr().err
    assert f"{locked}: catalog directory: cannot read: Permission denied" in err
    assert err.count("\n") == 1
    with pytest.raises(dse.SpecError, match="locked: catalog directory: cannot read"):
        dse.load_catalog(cat)
