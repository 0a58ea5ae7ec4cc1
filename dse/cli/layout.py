"""How the command's text fits a width: the width itself (100 columns, or $COLUMNS), tables
split into parts that fit (each part repeating the row's first column), cells and prose wrapped
with a hanging indent. Pure functions over strings; the width is an argument, None meaning no
limit (the `--wide` layout: one line per row, as wide as it comes).

A line is never cut inside a `[low-high]` interval, nor between a value and the interval that
follows it unless the two are wider than a line (the interval then starts the next line); a
bracketed phrase of prose, "[joint 90% interval of the difference]", is not an interval; prose
never breaks a word (a path or URL longer than the width keeps its own line). A table's name
column given a key_width wraps a longer name after its dots (wrap_name)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence

DEFAULT_WIDTH = 100  # columns when $COLUMNS is unset or invalid (STYLE.md: tables fit 100)
MIN_WIDTH = 40  # a $COLUMNS below this is ignored: no table of the CLI is readable narrower
GAP = "  "  # between two columns
MIN_CELL = 12  # the narrowest a wrapped column gets (below it the repeated columns go)


def output_width(wide: bool, environ: Mapping[str, str]) -> int | None:
    """The width the text fits: None with --wide (no limit); else int($COLUMNS) when it is a
    whole number >= MIN_WIDTH, else DEFAULT_WIDTH. Not the terminal's actual size: the same
    command prints the same text in a pipe, a test and a terminal."""
    if wide:
        return None
    text = environ.get("COLUMNS", "").strip()
    if text.isdigit() and len(text) < 7 and int(text) >= MIN_WIDTH:
        return int(text)
    return DEFAULT_WIDTH


_SPACES = re.compile(r"(\s+)")
_NUMBER = re.compile(r"^[-+]?\d[\d.,eE+-]*%?,?$")
UNIT_WORDS = 2  # words of a unit between a number and its interval ("accuracy pts")


INTERVAL_WORDS = 4  # at most this many words in brackets holding a digit make an interval


def _bracket_prose(words: Sequence[str]) -> list[bool]:
    """For each word, whether it is inside (or opens) a bracketed phrase that is prose, not
    an interval: more than INTERVAL_WORDS words or no digit ("[joint 90% interval of the
    difference]" may break; "[+0.49 to +0.82]" and "[0.70-1.19]" may not)."""
    out = [False] * len(words)
    i = 0
    while i < len(words):
        if words[i].count("[") > words[i].count("]"):
            depth, j = 0, i
            while j < len(words):
                depth += words[j].count("[") - words[j].count("]")
                if depth <= 0:
                    break
                j += 1
            span = words[i:j + 1]
            if len(span) > INTERVAL_WORDS or not any(c.isdigit() for w in span for c in w):
                out[i:j + 1] = [True] * len(span)
            i = j + 1
            continue
        i += 1
    return out


def _glued(words: Sequence[str]) -> list[bool]:
    """For each word, whether no line may break before it: a "[" opening an interval and the
    unit words between it and the number it qualifies; "@" and the word after it. A bracketed
    phrase of prose (_bracket_prose) is words like any others."""
    prose = _bracket_prose(words)
    # a "[" opening an interval, and "model @ device" kept whole
    out = [(w.startswith("[") and not prose[i]) or w == "@" or (i > 0 and words[i - 1] == "@")
           for i, w in enumerate(words)]
    for k in (k for k, w in enumerate(words) if w.startswith("[") and not prose[k]):
        for n in range(k - 1, max(k - 2 - UNIT_WORDS, -1), -1):
            if _NUMBER.match(words[n]):
                for j in range(n + 1, k):
                    out[j] = True
                break
    return out


def chunks(text: str) -> list[str]:
    """`text` as words and the spaces between them, where a line may break at a space except
    inside an interval [...], before a "[", between a number, its unit and the interval after
    them (so that "-15.4 accuracy pts [-19.9 to -11.0]" stays whole), and around "@"
    ("qwen2.5-7b @ rtx-3090"); a bracketed phrase of prose breaks like any words. E.g.
    chunks("a 1 s [0-2] b") == ["a", " ", "1 s [0-2]", " ", "b"];
    chunks("x [of the y]") == ["x", " ", "[of", " ", "the", " ", "y]"]."""
    parts = _SPACES.split(text)
    words, spaces = parts[0::2], parts[1::2]
    glued = _glued(words)
    prose = _bracket_prose(words)
    out = [words[0]]
    depth = words[0].count("[") - words[0].count("]")
    for i, (space, word) in enumerate(zip(spaces, words[1:], strict=True), 1):
        if (depth > 0 and not prose[i]) or glued[i]:
            out[-1] += space + word
        else:
            out += [space, word]
        depth = max(depth + word.count("[") - word.count("]"), 0)
    return [c for c in out if c]


class _Wrapper(textwrap.TextWrapper):
    """A too-long single name (no space: a source's address, a placement such as
    model@gpu/precision) breaks where a name does (after "/", "@", ".", then "_", "-"); a
    filesystem path and anything else too long stay whole with break_long_words=False, and
    break at the width with True (a table cell)."""

    def _split(self, text: str) -> list[str]:
        return chunks(text)

    def _handle_long_word(self, reversed_chunks: list[str], cur_line: list[str],
                          cur_len: int, width: int) -> None:
        chunk = reversed_chunks[-1]
        if " [" in chunk and not cur_line:  # a value and its interval wider than any line:
            at = chunk.index(" [")           # the interval goes on the next line, whole
            cur_line.append(chunk[:at])
            reversed_chunks[-1] = chunk[at + 1:]
            return
        room = max(width - cur_len, 1)
        cut = None if cur_line or " " in chunk.strip() or chunk.startswith(_PATH_STARTS) else next(
            (i + 1 for kinds in _WORD_BREAKS for i in range(min(room, len(chunk)) - 1, 0, -1)
             if chunk[i] in kinds), None)
        if cut is None and (self.break_long_words or cur_line):
            super()._handle_long_word(reversed_chunks, cur_line, cur_len, width)
            return
        if cut is None:  # a phrase kept together, or a name with nowhere to break: whole
            cur_line.append(reversed_chunks.pop())
            return
        cur_line.append(chunk[:cut])
        reversed_chunks[-1] = chunk[cut:]


def wrap_line(line: str, width: int | None, *, hang: int = 2,
              break_words: bool = False) -> list[str]:
    """One line as lines of at most `width` characters (None: the line unchanged); the
    continuation lines indented `hang` more than the line's own indent. E.g.
    wrap_line("ab cd [1 - 2]", 9, hang=1) == ["ab", " cd [1 - 2]"] (the interval and the value
    before it stay on one line, here longer than 9)."""
    if width is None or len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    lead = " " * (len(line) - len(body))
    w = _Wrapper(width, initial_indent=lead, subsequent_indent=lead + " " * hang,
                 break_long_words=break_words, break_on_hyphens=False)
    return w.wrap(body) or [line]


def wrap(text: str, width: int | None, *, hang: int = 2) -> str:
    """Each line of `text` wrapped to `width` with a hanging indent (None: unchanged)."""
    if width is None:
        return text
    return "\n".join(out for line in text.split("\n") for out in wrap_line(line, width,
                                                                          hang=hang))


def _line_width(widths: Sequence[int]) -> int:
    return sum(widths) + len(GAP) * (len(widths) - 1)


def _parts(widths: Sequence[int], keys: int, width: int) -> list[list[int]]:
    """The columns after the first `keys`, in order, grouped so that each group beside the key
    columns fits `width` (a group of one column may not: its cells wrap)."""
    kw = list(widths[:keys])
    parts: list[list[int]] = [[]]
    for i in range(keys, len(widths)):
        cur = parts[-1]
        if cur and _line_width([*kw, *(widths[j] for j in cur), widths[i]]) > width:
            parts.append([])
        parts[-1].append(i)
    return parts


_NAME_BREAKS = (".", "/"), ("_", "-")  # where a name breaks, the first kind preferred
# where a name in running text breaks (_Wrapper): a path's, a URL's, a placement's joints
_WORD_BREAKS = ("/", "@", "."), ("_", "-")
# a filesystem path (an output file a user copies) stays whole, past the width if need be
_PATH_STARTS = ("/", "./", "../", "~")


def wrap_name(name: str, limit: int, *, hang: int = 2) -> list[str]:
    """A name without spaces (a dotted id, a path) as lines of at most `limit` characters (at
    least one character each), the continuation lines indented `hang`: broken after the last
    "." or "/" that fits, where none does after a "_" or "-", and only failing both inside a
    word. E.g. wrap_name("ab.cd.ef_gh", 8) == ["ab.cd.", "  ef_gh"]."""
    lines: list[str] = []
    rest = name
    while len(rest) > (room := max(limit - (hang if lines else 0), 1)):
        cut = next((i + 1 for kinds in _NAME_BREAKS for i in range(room - 1, 0, -1)
                    if rest[i] in kinds), room)
        lines.append(" " * (hang if lines else 0) + rest[:cut])
        rest = rest[cut:]
    return [*lines, " " * (hang if lines else 0) + rest]


def _cell(text: str, limit: int | None, name: bool = False) -> list[str]:
    if limit is None or len(text) <= limit:
        return [text]
    if name:
        return wrap_name(text, limit)
    return wrap_line(text, limit, hang=2 if limit >= 2 * MIN_CELL else 0, break_words=True)


def _block(headers: Sequence[str], rows: Sequence[Sequence[str]],
           limits: Sequence[int | None], names: int = 0) -> list[str]:
    """One table: a header, a rule and the rows, each column at most its limit (None: as wide
    as its widest cell), a cell wider than its limit wrapped onto more lines (in the first
    `names` columns at a name's dots, wrap_name)."""
    grid = [[_cell(c, lim, i < names) for i, (c, lim) in enumerate(zip(r, limits, strict=True))]
            for r in [headers, *rows]]
    widths = [max(len(s) for r in grid for s in r[i]) for i in range(len(headers))]
    out = []
    for k, r in enumerate(grid):
        for j in range(max(len(c) for c in r)):
            out.append(GAP.join((c[j] if j < len(c) else "").ljust(w)
                                for c, w in zip(r, widths, strict=True)))
        if k == 0:
            out.append(GAP.join("-" * w for w in widths))
    return out


def table_text(headers: Sequence[str], rows: Sequence[Sequence[str]], *,
               width: int | None = None, keys: int = 1, key_width: int | None = None) -> str:
    """A text table of formatted cells. width None: one line per row, however wide. Otherwise
    a table wider than `width` becomes parts, one under the other, each repeating the first
    `keys` columns (the row's name) beside as many of the next columns as fit; a column too
    wide even alone has its cells wrapped. key_width: the most columns each key column takes
    (a longer name wraps at its dots, wrap_name), so that more columns fit beside it; None: as
    wide as its widest cell (one name column too wide to leave MIN_CELL beside it takes half
    the width). Every cell is kept; lines carry no trailing blanks."""
    if width is None:
        return "\n".join(_block(headers, rows, [None] * len(headers)))
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    keys = min(keys, len(headers) - 1)
    if key_width is not None:
        widths[:keys] = [min(w, key_width) for w in widths[:keys]]
    if keys == 1 and key_width is None and widths[0] + len(GAP) + MIN_CELL > width:
        # one name column too wide to leave a cell beside it: it takes half the width, its
        # names wrapped at their dots and dashes (wrap_name), so that every part still says
        # which row each cell is of
        key_width = widths[0] = max((width - len(GAP)) // 2, MIN_CELL)
    if keys and _line_width(widths[:keys]) + len(GAP) + MIN_CELL > width:
        keys = 0  # the name columns leave no room: the parts do not repeat them
    blocks = []
    for part in _parts(widths, keys, width):
        cols = [*range(keys), *part]
        room = width - (_line_width(widths[:keys]) + len(GAP) if keys else 0)
        limits = [key_width] * keys + [None if _line_width([*widths[:keys], *(
            widths[j] for j in part)]) <= width else room] * len(part)
        blocks.append("\n".join(ln.rstrip() for ln in _block(
            [headers[i] for i in cols], [[r[i] for i in cols] for r in rows], limits, keys)))
    return "\n\n".join(blocks)
