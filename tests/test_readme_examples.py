"""The README's and the command pages' example outputs are what the commands print today.

Each ```-block in README.md and docs/commands/{catalog-roofline,evaluate-simulate,search,compare}.md
that starts with `$ dse ...` is run (in-process, through dse.cli.main) and its output compared
with the block's text, exactly for the commands whose output is deterministic (roofline,
evaluate, simulate with a seed, export, compare); a search's example (a sweep, a seeded study) is
checked for its result lines (its timing varies; a study runs in a fresh directory, which the
page calls /tmp/ex). Every example is the 100-column text (COLUMNS unset; docs/cli.md, Output
width). Regenerate a block by running its command and pasting the output."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from dse.cli import main

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```\n(\$ dse .*?)^```", re.S | re.M)
EXACT = ("roofline", "evaluate", "simulate", "export", "compare")


PAGES = ("README.md", "docs/commands/catalog-roofline.md", "docs/commands/evaluate-simulate.md",
         "docs/commands/search.md", "docs/commands/compare.md")
STUDY_DIR = "/tmp/ex"  # where the search page's study ran


def examples(pages: tuple[str, ...] = PAGES) -> list[tuple[str, str]]:
    """(command line, expected output) for every `$ dse` example of the pages."""
    out = []
    for page in pages:
        out += _page_examples(page)
    return out


def _page_examples(page: str) -> list[tuple[str, str]]:
    out = []
    for block in BLOCK.findall((ROOT / page).read_text(encoding="utf-8")):
        parts = re.split(r"^\$ ", block, flags=re.M)
        for part in parts[1:]:
            cmd, _, expected = part.partition("\n")
            out.append((cmd, expected.rstrip("\n")))
    return out


def run(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0
    return buf.getvalue().rstrip("\n")


def test_readme_has_examples() -> None:
    assert {shlex.split(c)[1] for c, _ in examples(("README.md",))} >= {
        "roofline", "evaluate", "simulate", "export", "sweep"}
    assert {shlex.split(c)[1] for c, _ in _page_examples("docs/commands/compare.md")} == {
        "compare"}
    assert {shlex.split(c)[1] for c, _ in _page_examples("docs/commands/search.md")} == {
        "sweep", "optimize"}


@pytest.mark.parametrize(("cmd", "expected"), examples(), ids=[c for c, _ in examples()])
def test_readme_example_is_current(cmd: str, expected: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    argv = shlex.split(cmd)[1:]
    monkeypatch.delenv("COLUMNS", raising=False)  # the pages show the default 100 columns
    if argv[0] == "optimize":  # a fresh study in a fresh directory, named as the page names it
        monkeypatch.chdir(tmp_path)
        expected = expected.replace(STUDY_DIR, str(tmp_path))
    if argv[0] == "export":  # write the bundle somewhere fresh; the text names the path
        out = argv[argv.index("--out") + 1]
        argv[argv.index("--out") + 1] = str(tmp_path / "bundle")
        expected = expected.replace(out, str(tmp_path / "bundle"))
    got = run(argv)
    if argv[0] in EXACT:
        assert [ln.rstrip() for ln in got.splitlines()] == [
            ln.rstrip() for ln in expected.splitlines()]
    else:  # a search: the designs and metrics, not the seconds it took (nor a study's
        # storage line, which goes to standard error)
        expected = "\n".join(ln for ln in expected.splitlines()
                             if not ln.startswith("storage: "))
        strip = re.compile(r" in [0-9.]+ s;")
        assert [strip.sub("", ln).rstrip() for ln in got.splitlines()] == [
            strip.sub("", ln).rstrip() for ln in expected.splitlines()]


def _read_after(text: str, block_start: str) -> str:
    """The "Read: ..." paragraph that follows the README example starting with block_start."""
    i = text.index(block_start)
    j = text.index("\nRead: ", i)
    return " ".join(text[j + 1:text.index("\n\n", j)].split())


def test_the_readmes_read_paragraphs_state_the_examples_numbers():
    """The prose under the README's evaluate and main-job examples restates their figures
    (rounded): it must move when a regenerated example moves (it once kept 3.7 s and 15.4
    points under an evaluate example that gave -3.471 s and -19.52 points)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    ev = re.search(r"heteroreason - the target alone .*?\n\s+(-[\d.]+) s/problem.*?"
                   r"(-[\d.]+) accuracy pts", text, re.S)
    assert ev is not None
    read = _read_after(text, "$ dse evaluate --system paper-config1-u280 --scenario math500\n")
    assert f"{-float(ev.group(1)):.1f} s per problem faster" in read
    assert f"{-float(ev.group(2)):.1f} points less accurate" in read
    block = text[text.index("$ dse sweep --objective j_per_token"):]
    margins = {fam: float(m) for fam, m in re.findall(
        r"^(gpu-speculative|fpga-speculative|width)\s+\S+\s+\+([\d.]+) \[", block, re.M)}
    best = float(re.search(r"^target-only\s+([\d.]+) \[", block, re.M).group(1))
    read = _read_after(text, "$ dse sweep --objective j_per_token")
    assert f"{best:.2f} J/token" in read
    assert (f"{margins['gpu-speculative']:.2f}, {margins['fpga-speculative']:.2f} and "
            f"{margins['width']:.2f} J/token more") in read


def test_the_search_pages_read_paragraph_states_its_examples_numbers():
    """docs/commands/search.md's prose under its study example restates each family's margin
    and the ends of its joint interval (rounded: two decimals, two significant digits below
    0.1) as the example's table gives them."""
    text = (ROOT / "docs/commands/search.md").read_text(encoding="utf-8")
    start = "$ dse optimize --objective j_per_token --out best"
    block = text[text.index(start):text.index("\nRead: ", text.index(start))]
    read = _read_after(text, start)
    rows = re.findall(r"^(gpu-speculative|fpga-speculative|width)\s+\S+\s+\+([\d.]+) "
                      r"\[\+([\d.]+) to \+([\d.]+)\]", block, re.M)
    assert len(rows) == 3
    def rounded(v: str) -> str:
        return f"{float(v):.2f}" if float(v) >= 0.1 else f"{float(v):.2g}"

    for _fam, m, lo, hi in rows:
        assert f"{float(m):.2f}" in read
        assert f"+{rounded(lo)} to +{rounded(hi)}" in read
