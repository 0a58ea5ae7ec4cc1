"""Every output path of every command is checked before any computing (dse/io/outputs.py): a file
where a directory is needed (or the other way round), a path under a regular file, a directory
this process cannot create files in, a missing directory, a device, files already there without
--force, a read-only or misplaced study database. Each is one stderr line naming the flag, a
non-zero exit, and the compute function behind the command is never called (it is replaced by
one that fails the test)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dse.cli import main
from tests.hostile import unwritable_dir as hostile_unwritable_dir

ROOT = Path(__file__).resolve().parents[1]


class Computed(Exception):
    """The command started computing although its output path is unusable."""


def unwritable_dir(tmp_path: Path) -> Path:
    """A directory in which this process cannot create files (tests.hostile.unwritable_dir: a
    mode-0555 one, or as root a kernel file system that refuses even root); skip if none."""
    d = hostile_unwritable_dir(tmp_path)
    if d is None:
        pytest.skip("no directory here refuses new files")
    return d


def _file(tmp_path: Path) -> Path:
    f = tmp_path / "a-file"
    f.write_text("x\n", encoding="utf-8")
    return f


# each: (name, a function of tmp_path giving the unusable path, words the error line holds)
FILE_OUTPUTS: list[tuple[str, Callable[[Path], Path], str]] = [
    ("a directory", lambda t: t, "is a directory"),
    ("under a regular file", lambda t: _file(t) / "out.json", "is a file, not a directory"),
    ("a missing directory", lambda t: t / "none" / "out.json", "no such directory"),
    ("an unwritable directory", lambda t: unwritable_dir(t) / "out.json",
     "cannot create files in"),
    ("a device", lambda t: Path("/dev/null"), "is not a regular file"),
]
DIR_OUTPUTS: list[tuple[str, Callable[[Path], Path], str]] = [
    ("a regular file", _file, "exists and is not a directory"),
    ("under a regular file", lambda t: _file(t) / "out", "is a file, not a directory"),
    ("an unwritable directory", lambda t: unwritable_dir(t) / "out", "cannot create files in"),
]

SYS = ["--system", "paper-config1-u280", "--scenario", "gsm8k"]


def _compute(monkeypatch: pytest.MonkeyPatch) -> None:
    import dse.exporters
    import dse.io.resolve
    import dse.paper.coverage
    import dse.search

    def computed(*_: object, **__: object) -> None:
        raise Computed

    targets = ((dse.search, "sweep"), (dse.search, "optimize"), (dse.io.resolve, "simulate"),
               (dse.exporters, "render_bundle"), (dse.paper.coverage, "paper_rows"))
    for mod, name in targets:  # load lazy names first: a module imported while patched
        getattr(mod, name)     # would keep the patched function
    for mod, name in targets:
        monkeypatch.setattr(mod, name, computed)


def _refused_fast(argv: list[str], flag: str, words: str, capsys: pytest.CaptureFixture[str],
                  monkeypatch: pytest.MonkeyPatch) -> None:
    _compute(monkeypatch)
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, (rc, err)
    assert err.count("\n") == 1 and err.startswith(f"dse {argv[0]}: error: {flag}"), err
    assert words in err, err


FILE_COMMANDS = [
    (["simulate", *SYS, "--problems", "10"], "--trace-out"),
    (["simulate", *SYS, "--problems", "10"], "--timeline-out"),
    (["reproduce"], "--markdown"),
    (["reproduce"], "--html"),
]


@pytest.mark.parametrize(("argv", "flag"), FILE_COMMANDS, ids=[f for _, f in FILE_COMMANDS])
@pytest.mark.parametrize(("case", "where", "words"), FILE_OUTPUTS,
                         ids=[c for c, _, _ in FILE_OUTPUTS])
def test_file_outputs(argv: list[str], flag: str, case: str, where: Callable[[Path], Path],
                      words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    _refused_fast([*argv, flag, str(where(tmp_path))], flag, words, capsys, monkeypatch)


DIR_COMMANDS = [
    (["sweep"], "--out"),
    (["optimize", "--trials", "2", "--storage", "STORAGE"], "--out"),
    (["export", "--system", "paper-config1-u280"], "--out"),
]


@pytest.mark.parametrize(("argv", "flag"), DIR_COMMANDS, ids=[a[0] for a, _ in DIR_COMMANDS])
@pytest.mark.parametrize(("case", "where", "words"), DIR_OUTPUTS,
                         ids=[c for c, _, _ in DIR_OUTPUTS])
def test_directory_outputs(argv: list[str], flag: str, case: str,
                           where: Callable[[Path], Path], words: str, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    argv = [a.replace("STORAGE", f"sqlite:///{tmp_path / 's.db'}") for a in argv]
    _refused_fast([*argv, flag, str(where(tmp_path))], flag, words, capsys, monkeypatch)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("command", ["sweep", "optimize"])
def test_search_files_already_there_need_force_before_the_search(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "pareto.csv").write_text("mine\n", encoding="utf-8")
    extra = ["--trials", "2", "--storage", f"sqlite:///{tmp_path / 's.db'}"] * (
        command == "optimize")
    _refused_fast([command, *extra, "--out", str(out)], "--out", "pareto.csv already there",
                  capsys, monkeypatch)
    assert (out / "pareto.csv").read_text(encoding="utf-8") == "mine\n"


def test_export_into_a_directory_that_is_no_bundle(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep\n", encoding="utf-8")
    argv = ["export", "--system", "paper-config1-u280", "--out", str(out)]
    _refused_fast(argv, "--out", "is not empty", capsys, monkeypatch)
    _refused_fast([*argv, "--force"], "--out", "holds no manifest.json", capsys, monkeypatch)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


STORAGES: list[tuple[str, Callable[[Path], str], str]] = [
    ("a directory", lambda t: f"sqlite:///{t}", "is a directory, not a database file"),
    ("under a regular file", lambda t: f"sqlite:///{_file(t) / 's.db'}",
     "is a file, not a directory"),
    ("a missing directory", lambda t: f"sqlite:///{t / 'none' / 's.db'}", "no such directory"),
    ("an unwritable directory", lambda t: f"sqlite:///{unwritable_dir(t) / 's.db'}",
     "cannot create files in"),
    ("a device", lambda t: "sqlite:////dev/null", "is not a regular file"),
    ("empty", lambda t: "", "the value is empty"),
]


@pytest.mark.parametrize(("case", "url", "words"), STORAGES, ids=[c for c, _, _ in STORAGES])
def test_optimize_storage(case: str, url: Callable[[Path], str], words: str, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    _refused_fast(["optimize", "--trials", "2", "--storage", url(tmp_path)], "--storage", words,
                  capsys, monkeypatch)


def test_optimize_refuses_a_file_that_is_no_database_and_leaves_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's text file as --storage: refused up front in one line (exit 2), never after a
    storage line, and not a byte of it changed."""
    f = _file(tmp_path)
    _refused_fast(["optimize", "--trials", "2", "--storage", f"sqlite:///{f}"], "--storage",
                  "is not a SQLite database", capsys, monkeypatch)
    assert f.read_bytes() == b"x\n" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_studies_names_a_directory_as_one(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["studies", "--storage", f"sqlite:///{tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path} is a directory, not a database file" in err


def test_optimize_default_storage_in_an_unwritable_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(unwritable_dir(tmp_path))
    _refused_fast(["optimize", "--trials", "2"], "--storage", "cannot create files in", capsys,
                  monkeypatch)


def test_a_usable_path_still_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The checks refuse only what cannot be written: a new file in a new name, a symlink to a
    regular file, and files replaced with --force all work."""
    out = tmp_path / "t.jsonl"
    link = tmp_path / "link.json"
    target = tmp_path / "target.json"
    target.write_text("old\n", encoding="utf-8")
    link.symlink_to(target)
    argv = ["simulate", *SYS, "--problems", "10", "--trace-out", str(out), "--timeline-out",
            str(link)]
    assert main(argv) == 2  # the link's target is a file already there: --force replaces it
    assert not out.exists()
    assert main([*argv, "--force"]) == 0
    assert main([*argv, "--force"]) == 0  # replaced
    assert out.stat().st_size > 0 and link.is_symlink() and "intervals" in target.read_text(
        encoding="utf-8")
    capsys.readouterr()


@pytest.mark.parametrize(("argv", "flag"), FILE_COMMANDS, ids=[f for _, f in FILE_COMMANDS])
def test_an_existing_file_needs_force(argv: list[str], flag: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the user's already at an output path is refused before computing (exit 2, one
    line naming the flag), and kept as it was; --force replaces it."""
    mine = tmp_path / "notes.json"
    mine.write_text("notes\n", encoding="utf-8")
    _refused_fast([*argv, flag, str(mine)], flag, "already exists", capsys, monkeypatch)
    assert mine.read_text(encoding="utf-8") == "notes\n"
    with pytest.raises(Computed):  # past the checks: the command computes
        main([*argv, flag, str(mine), "--force"])


def test_simulate_keeps_a_users_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`dse simulate --timeline-out notes.json` over the user's notes: exit 2, notes kept."""
    notes = tmp_path / "notes.json"
    notes.write_text("notes\n", encoding="utf-8")
    argv = ["simulate", "--system", "paper-config1-u280", "--scenario", "math500", "--problems",
            "5", "--timeline-out", str(notes)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"dse simulate: error: --timeline-out {notes}: already "
                                       "exists; use --force to replace it, or another file "
                                       "name\n")
    assert notes.read_text(encoding="utf-8") == "notes\n"


@pytest.mark.parametrize("flag", ["--markdown", "--html"])
def test_reproduce_keeps_a_users_file_and_rewrites_its_own(
        flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`dse reproduce --markdown my.md` over the user's my.md: refused; over a file it wrote
    earlier (docs/validation.md, an earlier chart) it runs without --force, so that
    `dse reproduce --markdown docs/validation.md` regenerates the committed doc."""
    from dse.cli.reproduce import HTML_MARK

    mine = tmp_path / "my.md"
    mine.write_text("mine\n", encoding="utf-8")
    _refused_fast(["reproduce", flag, str(mine)], flag,
                  "already exists and is not an earlier dse reproduce output", capsys,
                  monkeypatch)
    assert mine.read_text(encoding="utf-8") == "mine\n"
    ours = tmp_path / "ours"
    ours.write_text((ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
                    if flag == "--markdown" else f"{HTML_MARK}\n<html></html>\n",
                    encoding="utf-8")
    with pytest.raises(Computed):  # past the checks
        main(["reproduce", flag, str(ours)])


def test_a_file_that_appears_while_computing_is_kept(tmp_path: Path) -> None:
    """The file is checked again as it is written (dse.cli.common.write_file): one the user
    wrote while the command computed is refused and kept."""
    from dse.cli.common import write_file
    from dse.cli.reproduce import markdown_is_ours
    from dse.errors import UsageError

    f = tmp_path / "v.md"
    f.write_text("mine\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"--markdown .*: already exists"):
        write_file("--markdown", str(f), "# T\n", force=False, ours=markdown_is_ours)
    assert f.read_text(encoding="utf-8") == "mine\n"
    write_file("--markdown", str(f), "# T\n", force=True)
    assert f.read_text(encoding="utf-8") == "# T\n"


EMPTY = [(["sweep"], "--out"),
         (["optimize", "--trials", "2", "--storage", "memory"], "--out"),
         (["export", "--system", "paper-config1-u280"], "--out"),
         *FILE_COMMANDS]


@pytest.mark.parametrize(("argv", "flag"), EMPTY, ids=[f"{a[0]} {f}" for a, f in EMPTY])
def test_an_empty_output_path_is_refused(argv: list[str], flag: str,
                                         capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`--out ""` names no file: one line naming the flag, exit 2, never "not given"."""
    _refused_fast([*argv, flag, ""], flag, "the value is empty", capsys, monkeypatch)


def test_an_empty_study_name_is_refused(capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--study-name ""` is not the default name said another way: one line, exit 2."""
    _refused_fast(["optimize", "--trials", "2", "--storage", "memory", "--study-name", ""],
                  "--study-name", "the value is empty", capsys, monkeypatch)
