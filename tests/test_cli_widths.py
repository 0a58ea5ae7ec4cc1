"""Every table and sentence the CLI prints fits 100 columns, or $COLUMNS when it is set
(STYLE.md 20); `--wide` gives the one-line rows; no number loses its interval.

The commands run in-process (dse.cli.main), as tests/test_readme_examples.py runs them; the
searches on small budgets (a 40-trial study of the default space in memory, a sweep of the
tiny space), so that their tables hold every family."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from dse.cli import main
from dse.cli.layout import (
    DEFAULT_WIDTH,
    chunks,
    output_width,
    table_text,
    wrap,
    wrap_line,
    wrap_name,
)

TINY = str(Path(__file__).parent / "data" / "tiny-space.toml")
EVALUATE = ["evaluate", "--system", "paper-config1-u280", "--scenario", "math500"]
SIMULATE = ["simulate", "--system", "paper-config1-u280", "--scenario", "math500",
            "--problems", "300", "--seed", "0"]
COMPARE = ["compare", "paper-config1-u280", "paper-config1-u280:accept_threshold=0.9",
           "paper-config1-3090", "--scenario", "math500"]
OPTIMIZE = ["optimize", "--trials", "40", "--storage", "memory"]
SWEEP = ["sweep", "--space", TINY]
COMMANDS = {
    "catalog boards": ["catalog", "boards"], "catalog models": ["catalog", "models"],
    "catalog serving": ["catalog", "serving"], "catalog scenarios": ["catalog", "scenarios"],
    "roofline": ["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280"],
    "evaluate": EVALUATE, "evaluate target-only": [*EVALUATE, "--set", "workflow=target-only"],
    "simulate": SIMULATE, "compare": COMPARE, "sweep": SWEEP,
    "sweep two objectives": [*SWEEP, "--objective", "j_per_token", "--objective", "latency"],
    "optimize": OPTIMIZE,
}


def run(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    return buf.getvalue().rstrip("\n")


def too_wide(text: str, width: int) -> list[str]:
    return [ln for ln in text.splitlines() if len(ln) > width]


@pytest.fixture(params=[80, 100], ids=["80", "100"])
def columns(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("COLUMNS", str(request.param))
    return int(request.param)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_line_fits_the_width(name: str, columns: int) -> None:
    out = run(COMMANDS[name])
    assert out and not too_wide(out, columns), too_wide(out, columns)
    assert not [ln for ln in out.splitlines() if ln != ln.rstrip()]  # no trailing blanks


def test_export_and_studies_fit(columns: int, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = run(["export", "--system", "paper-config1-u280", "--out", "b"])
    # the bundle's path, whole on the first line, is the one line that may pass the width
    assert out.splitlines()[0] == f"wrote 10 files to {tmp_path / 'b'}"
    assert not too_wide(out.split("\n", 1)[1], columns), too_wide(out, columns)
    url = f"sqlite:///{tmp_path / 's.db'}"
    run(["optimize", "--space", TINY, "--trials", "3", "--storage", url, "--study-name",
         "a-study-whose-name-is-long-enough-to-split-the-table"])
    out = run(["studies", "--storage", url])
    assert not too_wide(out, columns), too_wide(out, columns)
    assert out.count("a-study-whose-name-is-long") >= 2  # each part repeats the study's name


def test_unset_or_invalid_columns_is_100(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, "", "abc", "39", "-5", "1e9"):
        env = {} if value is None else {"COLUMNS": value}
        assert output_width(False, env) == DEFAULT_WIDTH == 100
    assert output_width(False, {"COLUMNS": " 132 "}) == 132
    assert output_width(True, {"COLUMNS": "80"}) is None
    monkeypatch.delenv("COLUMNS", raising=False)
    out = run(EVALUATE)
    assert max(map(len, out.splitlines())) <= 100
    monkeypatch.setenv("COLUMNS", "not-a-number")
    assert run(EVALUATE) == out


def _interval_texts(value: float, iv: list[float]) -> str:
    return f"{value:.4g} [{iv[0]:.4g}-{iv[1]:.4g}]"


def test_evaluate_keeps_every_number_and_interval(columns: int) -> None:
    data = json.loads(run([*EVALUATE, "--json"]))
    out = run(EVALUATE)
    lines = out.splitlines()
    for r in data["schedules"].values():
        schedule = r["schedule"]
        for key, iv in r["intervals"].items():
            if key in ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token",
                       "accuracy"):
                want = _interval_texts(r[key], iv)
                # on the schedule's own row, the number and its interval on one line
                assert any(ln.startswith(schedule + " ") and want in ln for ln in lines), want
        assert sum(ln.split("  ")[0] == schedule for ln in lines) >= 2  # a row in each part
    vs = data["vs_target_alone"]
    lo, hi = vs["margin_interval"]["accuracy"]
    assert f"{vs['margin']['accuracy']:+.4g} accuracy pts [{lo:+.4g} to {hi:+.4g}]" in out


def test_simulate_and_compare_keep_their_intervals(columns: int) -> None:
    r = json.loads(run([*SIMULATE, "--json"]))
    out = run(SIMULATE)
    for key in ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token", "accuracy"):
        assert _interval_texts(r[key], r["intervals"][key]) in out
    c = json.loads(run([*COMPARE, "--json"]))
    out = run(COMPARE)
    for d in c["designs"]:
        rep = d["report"]
        assert _interval_texts(rep["j_per_token"], rep["intervals"]["j_per_token"]) in out
    for d in c["differences"]:
        lo, hi = d["interval"]["latency_s_per_problem"]
        assert f"{d['delta']['latency_s_per_problem']:+.4g} [{lo:+.4g} to {hi:+.4g}]" in out


def test_search_names_each_design_shortly_then_in_full(columns: int) -> None:
    data = json.loads(run([*SWEEP, "--json"]))
    out = run(SWEEP)
    for c in data["pareto"][:5]:
        assert _interval_texts(c["metrics"]["j_per_token"], c["intervals"]["j_per_token"]) in out
    # the table's design column: family, draft @ device -> target @ device
    assert re.search(r"^1  (fpga|gpu)-speculative: qwen2\.5-0\.5b-instruct", out, re.M)
    assert "the designs in full (--wide puts them in the table):" in out
    full = out.split("the designs in full")[1]
    assert "#1 draft qwen2.5-0.5b-instruct@" in full and "| prm" in full
    fam = data["by_family"]
    best = next(f for f in fam if not f["is_winner"] and f["design"] is not None)
    lo, hi = best["margin_interval"]["j_per_token"]
    assert f"{best['margin']['j_per_token']:+.4g} [{lo:+.4g} to {hi:+.4g}] J/token" in out


@pytest.mark.parametrize("name", ["evaluate", "sweep", "optimize", "compare"])
def test_wide_gives_the_one_line_rows(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = run([*COMMANDS[name], "--wide"])
    heads = [ln for ln in out.splitlines() if ln.startswith(("schedule ", "#  ", "family "))]
    if name == "evaluate":
        assert len(heads) == 1 and heads[0].rstrip().endswith("comm share")
        assert max(map(len, out.splitlines())) > 200
    elif name == "compare":
        assert [h.split()[-1] for h in heads] == ["p_accept", "pts"]
    else:  # the whole design in the row, no list under the table
        assert [h.split()[-1] for h in heads] == ["design", "design"]
        rows = [ln for ln in out.splitlines() if re.match(r"^\d  ", ln)]
        assert any(" | target " in r and (" | prm " in r or " | verifier" in r) for r in rows)
        assert "the designs in full" not in out
    assert len(heads) == len({*heads})
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        main([COMMANDS[name][0], "--help"])
    assert "--wide" in buf.getvalue()


def test_json_is_the_same_at_any_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = run([*EVALUATE, "--json"])
    monkeypatch.setenv("COLUMNS", "300")
    assert run([*EVALUATE, "--json"]) == narrow == run([*EVALUATE, "--json", "--wide"])


# ------------------------------------------------------------------ the layout functions


def test_a_table_that_fits_is_one_block_and_wide_is_unchanged() -> None:
    rows = [["a", "1.5 [1-2]"], ["bb", "3"]]
    assert table_text(["k", "v"], rows, width=40) == (
        "k   v\n--  ---------\na   1.5 [1-2]\nbb  3")
    # None: today's layout, trailing blanks included
    assert table_text(["k", "v"], rows) == (
        "k   v        \n--  ---------\na   1.5 [1-2]\nbb  3        ")


def test_a_wide_table_splits_into_parts_that_repeat_the_key() -> None:
    headers = ["name", *(f"col{i}" for i in range(6))]
    rows = [["row-a", *(f"{i}.5 [{i}-{i + 1}]" for i in range(6))],
            ["row-b", *(f"{i}0 [{i}-{i + 9}]" for i in range(6))]]
    text = table_text(headers, rows, width=40)
    assert not too_wide(text, 40)
    blocks = text.split("\n\n")
    assert len(blocks) > 1 and all(b.startswith("name") for b in blocks)
    for r in rows:
        for cell in r:
            assert cell in text  # every cell, whole
    assert [ln.split("  ")[0] for ln in blocks[1].splitlines()][2:] == ["row-a", "row-b"]


def test_a_column_too_wide_alone_wraps_its_cells() -> None:
    text = table_text(["name", "description"], [["x", "word " * 30]], width=40)
    assert not too_wide(text, 40) and len(text.splitlines()) > 3
    assert " ".join(text.split()[5:]) == " ".join(["word"] * 30)


def test_a_name_column_too_wide_for_a_cell_beside_it_wraps_and_stays_beside_its_cells(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`dse catalog models` at 40 columns printed its names, then its descriptions in a second
    part without them (the name column, 33 wide, left no room for a cell): no description
    could be matched to its model. The name column now takes half the width, its names wrapped
    at their dashes, each description beside its name."""
    rows = [["deepseek-r1-distill-qwen-1.5b", "a reasoning draft of Qwen2.5-Math-1.5B shape"],
            ["gpt2", "a 12-layer decoder"]]
    text = table_text(["name", "description"], rows, width=40)
    assert not too_wide(text, 40) and "\n\n" not in text  # one part
    lines = text.splitlines()
    assert lines[2].startswith("deepseek-r1-") and "a reasoning" in lines[2]
    assert any(ln.startswith("gpt2 ") and "a 12-layer decoder" in ln for ln in lines)
    monkeypatch.setenv("COLUMNS", "40")
    out = run(["catalog", "models"])
    assert not too_wide(out, 40) and "\n\ndescription" not in out
    assert any(ln.startswith("gpt2 ") and "gpt2:" in ln for ln in out.splitlines())


NARROW = {**COMMANDS,
          "evaluate width": ["evaluate", "--system", "paper-config1-3090", "--scenario",
                             "math500", "--set", "workflow=majority", "--set", "samples=8"],
          "serve a design": ["serve", "--system", "paper-config1-u280", "--scenario", "math500",
                             "--rate", "1"]}


@pytest.mark.parametrize("name", ["sweep", "sweep two objectives", "optimize", "compare",
                                  "evaluate width", "serve a design"])
def test_at_the_narrowest_width_only_a_single_unbreakable_word_overflows(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 40 columns (MIN_WIDTH) a line may pass the width only when it is one word that no
    rule may break (a model@device/precision name, a path): a bracketed phrase of prose such as
    "[joint 90% interval of the difference]" wraps like any words, and a margin wider than a
    line with its interval ("+7.519e+05 ms [+6.573e+05 to +8.783e+05],") puts the interval on
    the next line."""
    monkeypatch.setenv("COLUMNS", "40")
    out = run(NARROW[name])
    over = [ln for ln in too_wide(out, 40) if len(ln.split()) > 1]
    assert not over, over


def test_prose_wraps_with_a_hanging_indent_and_keeps_intervals_whole() -> None:
    line = ("heteroreason - the target alone: -3.654 s/problem [-5.59 to -1.99], -0.425 J/token "
            "[-1.51 to +1.082], -15.44 accuracy pts [-19.88 to -10.99]")
    got = wrap_line(line, 45)
    assert all(len(ln) <= 45 for ln in got) and all(ln.startswith("  ") for ln in got[1:])
    for whole in ("-3.654 s/problem [-5.59 to -1.99],", "-0.425 J/token [-1.51 to +1.082],",
                  "-15.44 accuracy pts [-19.88 to -10.99]"):
        assert any(whole in ln for ln in got), (whole, got)
    assert wrap("  a b c d e f", 7) == "  a b c\n    d e\n    f"  # under its own indent
    assert wrap(line, None) == line
    assert chunks("qwen @ u280 -> t @ rtx-3090") == ["qwen @ u280", " ", "->", " ",
                                                      "t @ rtx-3090"]
    assert wrap_line("see /a/very/long/path/that/does/not/fit", 10) == [
        "see", "  /a/very/long/path/that/does/not/fit"]  # a path is never broken
    assert chunks("x [of the y]") == ["x", " ", "[of", " ", "the", " ", "y]"]  # prose
    assert chunks("on j, [joint 90% interval of the difference])")[-1] == "difference])"
    assert chunks("d [+0.49 to +0.82] s") == ["d [+0.49 to +0.82]", " ", "s"]
    assert wrap_line("x: +7.519e+05 ms [+6.573e+05 to +8.783e+05], +1 s [0-2]", 30) == [
        "x:", "  +7.519e+05 ms", "  [+6.573e+05 to +8.783e+05],", "  +1 s [0-2]"]


# ------------------------------------------------------------------ dse reproduce

REPRODUCE_RUNS = {"100": ("100", []), "80": ("80", []), "wide": ("80", ["--wide"]),
                  "json40": ("40", ["--json"]), "json300": ("300", ["--json", "--wide"])}


@pytest.fixture(scope="module")
def reproduced() -> dict[str, str]:
    """`dse reproduce` at 100 and 80 columns, with --wide, and --json at 40 and 300 columns.
    Its paper rows (the 20-60 s of intervals, which no width reads) are computed by the first
    run and handed to the others."""
    from dse.paper import coverage

    real = coverage.paper_rows
    computed: list[Any] = []

    def paper_rows(cat: Any, progress: Any = None) -> Any:
        if not computed:
            computed.append(real(cat, progress=progress))
        return computed[0]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(coverage, "paper_rows", paper_rows)
        out: dict[str, str] = {}
        for key, (cols, flags) in REPRODUCE_RUNS.items():
            mp.setenv("COLUMNS", cols)
            out[key] = run(["reproduce", *flags])
    return out


def _table_rows(text: str) -> dict[str, dict[str, str]]:
    """Every table of `text` read back: row id -> {header: cell}, merged over a table's parts,
    each id whole again (its indented continuation lines joined to it)."""
    got: dict[str, dict[str, str]] = {}
    lines = text.splitlines()
    for k in range(1, len(lines)):
        if not (lines[k - 1].startswith("id ") and lines[k].startswith("---")):
            continue
        starts = [m.start() for m in re.finditer(r"-+", lines[k])]
        ends = [*starts[1:], None]
        heads = [lines[k - 1][a:b].strip() for a, b in zip(starts, ends, strict=True)]
        part: list[list[str]] = []
        for ln in lines[k + 1:]:
            if not ln.strip() or re.fullmatch(r"\d+/\d+ within", ln):
                break
            cells = [ln[a:b].strip() for a, b in zip(starts, ends, strict=True)]
            if ln.startswith("  "):  # an id's continuation line, nothing beside it
                assert not any(cells[1:]), ln
                part[-1][0] += cells[0]
            else:
                part.append(cells)
        for cells in part:
            got.setdefault(cells[0], {}).update(zip(heads, cells, strict=True))
    return got


def _reproduce_cells(data: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What each row of `dse reproduce --json` shows in the text tables."""

    def paper(lo: float, hi: float) -> str:
        return f"{lo:.4g}" if lo == hi else f"{lo:.4g}-{hi:.4g}"

    yes = {True: "yes", False: "NO", None: ""}
    out = {r["id"]: {"id": r["id"], "paper": paper(r["paper_low"], r["paper_high"]),
                     "tool [90% interval]": _interval_texts(r["tool"], [r["tool_low"],
                                                                        r["tool_high"]]),
                     "within": yes[r["within"]], "in interval": yes[r["inside"]],
                     "label": r["label"]} for r in data["rows"]}
    for t in data["target_judge"]["timing"]:
        lo, hi = t["tool_widened"]
        out[t["id"]] = {"id": t["id"], "paper": paper(*t["paper"]), "tool": f"{t['tool']:.3g}",
                        "x tokens": "" if lo == hi else f"{lo:.3g}-{hi:.3g}",
                        "within": yes[t["within"]]}
    return out


@pytest.mark.parametrize("columns", [80, 100])
def test_reproduce_fits_the_width_and_keeps_every_cell(reproduced: dict[str, str],
                                                       columns: int) -> None:
    out = reproduced[str(columns)]
    assert not too_wide(out, columns), too_wide(out, columns)
    assert not [ln for ln in out.splitlines() if ln != ln.rstrip()]  # no trailing blanks
    data = json.loads(reproduced["json40"])
    want = _reproduce_cells(data)
    # every id whole, every cell on its row's first line (the id's continuation lines carry
    # nothing else), every number with its interval
    assert _table_rows(out) == want
    lines = out.splitlines()
    s, c = data["summary"], data["summary"]["coverage"]["paper_rows"]
    prose = " ".join(out.split())  # the sentences, however wrapped
    assert (f"{s['within']}/{s['rows']} within tolerance; fitted {s['fitted_within']}/"
            f"{s['fitted']}, calibrated {s['calibrated_within']}/{s['calibrated']}, predicted "
            f"{s['predicted_within']}/{s['predicted']} coverage: {c['inside']}/{c['n']} "
            f"predicted rows ({c['share_inside']:.0%}) inside the tool's 90% interval, median "
            f"relative width {c['median_relative_width']:.1%}") in prose
    assert sum(ln.startswith("id ") for ln in lines) >= 3  # the paper rows in two parts


def test_reproduce_wide_is_the_one_line_layout(reproduced: dict[str, str]) -> None:
    out = reproduced["wide"]  # at COLUMNS=80
    lines = out.splitlines()
    data = json.loads(reproduced["json300"])
    n, m = len(data["rows"]), len(data["target_judge"]["timing"])
    assert lines[0].split() == ["id", "paper", "tool", "[90%", "interval]", "within", "in",
                                "interval", "label"]
    assert max(map(len, lines)) > 100 and lines[2 + n] == ""  # each row on one line
    assert [ln.split()[0] for ln in lines[2:2 + n]] == [r["id"] for r in data["rows"]]
    assert len({len(ln) for ln in lines[:2 + n]}) == 1  # padded, as ever
    assert lines[2 + n + 4].startswith("the target judge beside SpecReason (every row "
                                       "predicted") and lines[2 + n + 4].endswith(".md)")
    assert len(lines) == 2 + n + 5 + 2 + m + 1 and lines[-1].endswith(" within")
    assert _table_rows(out) == _table_rows(reproduced["100"]) == _reproduce_cells(data)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert "--wide" in buf.getvalue()


def test_reproduce_json_is_the_same_at_any_width(reproduced: dict[str, str]) -> None:
    assert reproduced["json40"] == reproduced["json300"]
    assert json.loads(reproduced["json40"])["rows"]


def test_a_key_too_wide_wraps_at_its_dots() -> None:
    assert wrap_name("ab.cd.ef_gh", 8) == ["ab.cd.", "  ef_gh"]
    assert wrap_name("abcdefgh_ij", 8) == ["abcdefgh", "  _ij"]  # no break fits: in the word
    rows = [["energy_gain.vs_brsd.u280.config1.gsm8k", "1.2-1.3", "1.25 [1.1-1.4]"]]
    text = table_text(["id", "paper", "tool"], rows, width=45, key_width=20)
    assert text.splitlines()[2:] == ["energy_gain.vs_brsd.  1.2-1.3  1.25 [1.1-1.4]",
                                     "  u280.config1.gsm8k"]
    assert table_text(["id", "paper", "tool"], rows, key_width=20) == table_text(
        ["id", "paper", "tool"], rows)  # --wide: whole


def test_a_long_name_in_prose_breaks_at_its_joints() -> None:
    """A placement or a source's address longer than the line breaks after a '/', '@' or '.'
    (never inside a word) and fits; a filesystem path stays whole."""
    got = wrap_line("target qwen2.5-math-1.5b-instruct@a100-80gb-pcie/bf16 wins", 30)
    assert got == ["target", "  qwen2.5-math-1.5b-instruct@", "  a100-80gb-pcie/bf16 wins"]
    got = wrap_line("source: example.org/a/b/c/d/e/f/g/h/i/j/k/l/m.md", 20)
    assert got == ["source:", "  example.org/a/b/c/", "  d/e/f/g/h/i/j/k/l/", "  m.md"]
    assert wrap_line("see /a/very/long/path/that/does/not/fit", 10) == [
        "see", "  /a/very/long/path/that/does/not/fit"]
