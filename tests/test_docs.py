"""The documentation holds together: README.md is a short door that starts with the two set-up
commands and links every docs page; every relative Markdown link in README.md and docs/**/*.md
reaches an existing file (and, for `#anchor` links, an existing heading); every `dse` command of
the CLI's command table has a docs page with a heading that names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dse.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_README_LINES = 290  # its `$ dse` examples print at 100 columns, wrapped (docs/cli.md)
TITLE = "# hetero-dse\n\n"
SETUP_BLOCK = ("```\n"
               "pip install . && dse optimize --objective j_per_token\n"
               "pip install '.[test]' && pytest\n"
               "```\n")

# [text](target) where target has no spaces; images ![..](..) match too. Reference-style links
# are not used in these pages.
LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def doc_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (links and headings inside code are not Markdown)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline code marks and link targets dropped, lowercased,
    punctuation other than '-' and '_' removed, each space a '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a page, with GitHub's -1, -2 suffixes for repeated headings."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def relative_links(path: Path) -> list[str]:
    targets = []
    for line in prose_lines(path.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)  # inline code is not a link
        targets += [t for t in LINK.findall(line) if not EXTERNAL.match(t)]
    return targets


def test_slug_follows_github():
    """Hand-checked against GitHub's rendering of these headings."""
    assert slug("Trace format (JSONL)") == "trace-format-jsonl"
    assert slug("`dse sweep`, `dse optimize` and `dse studies`: searching") == (
        "dse-sweep-dse-optimize-and-dse-studies-searching")
    assert slug('kind = "space"  (scenarios/spaces/, or `--space FILE`)') == (
        "kind--space--scenariosspaces-or---space-file")


def test_link_finder_skips_code_and_external_links(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("see [a](a.md#x) and [b](https://example.org) `[c](c.md)`\n"
                    "```\n[d](d.md)\n```\n[e](#local)\n", encoding="utf-8")
    assert relative_links(page) == ["a.md#x", "#local"]


@pytest.mark.parametrize("page", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
            broken.append(f"{target}: no file {shown}")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_readme_is_a_short_door():
    text = README.read_text(encoding="utf-8")
    n_lines = len(text.splitlines())
    assert n_lines <= MAX_README_LINES, f"README.md: {n_lines} lines, at most {MAX_README_LINES}"
    assert text.startswith(TITLE + SETUP_BLOCK), (
        "README.md must open, after its title, with the two set-up commands, unchanged")


def test_every_command_has_a_docs_page():
    """Each `dse <command>` of dse.cli.COMMANDS is named in a heading of some docs/ page."""
    headings = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        headings += [m.group(2) for line in prose_lines(page.read_text(encoding="utf-8"))
                     if (m := HEADING.match(line))]
    names = [c.name for c in COMMANDS]
    assert names, "the CLI's command table is empty"
    missing = [n for n in names
               if not any(re.search(rf"\bdse {re.escape(n)}\b", h) for h in headings)]
    assert not missing, f"commands without a docs heading: {missing}"


def test_readme_links_every_docs_page():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(README)}
    unlinked = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.md"))
                if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"
