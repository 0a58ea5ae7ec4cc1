"""What the command modules share: the command record, the text table, argument types, the
workload option, output files and Optuna's log level."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dse.cli.layout import DEFAULT_WIDTH, output_width, table_text
from dse.core.limits import MAX_INT, MAX_RATE_PER_S, MAX_SEED, MIN_RATE_PER_S
from dse.errors import (
    DseError,
    FlagValueError,
    SpecError,
    Terminated,
    UnknownNameError,
    UsageError,
)
from dse.io.outputs import check_output_file, check_path_text
from dse.specs import Catalog


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_args: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Catalog], tuple[Any, str]]  # (json payload, text)


class WithOutput(DseError):
    """A command's result that is also an error: its output is printed as usual (the text,
    or the --json payload), then the error's one line on stderr, and the command exits with
    the error's code (`dse roofline` of a model that does not fit its device: its table, then
    exit 4, as `dse evaluate` exits for a design that cannot run)."""

    def __init__(self, error: DseError, payload: Any, text: str) -> None:
        super().__init__(str(error))
        self.exit_code = error.exit_code
        self.payload = payload
        self.text = text


class Once(argparse.Action):
    """An option that may be given once: a second one is a usage error (argparse's default,
    the last one silently winning, hides a mistake). The `dse` parser makes it every option's
    default action (dse.cli.build_parser); the repeatable ones say action="append".
    compare_hint: the message suggests `dse compare` with both values (for --system and
    --design)."""

    def __init__(self, *args: Any, compare_hint: bool = False, **kwargs: Any) -> None:
        self.compare_hint = compare_hint
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        given: set[str] = namespace.__dict__.setdefault(_GIVEN, set())
        if self.dest in given and option_string is not None:
            before = _shown(getattr(namespace, self.dest, None))
            hint = (f"; to put designs side by side: dse compare {before} {_shown(values)}"
                    if self.compare_hint else
                    f", with all its values ({option_string} {before} {_shown(values)})"
                    if self.nargs == "+" else "")
            parser.error(f"{option_string}: given twice ({before}, then {_shown(values)}); "
                         f"give it once{hint}")
        given.add(self.dest)
        if values == "" and option_string is not None:  # refused before running: check_given
            namespace.__dict__.setdefault(_EMPTY, []).append(
                f"{option_string}: the value is empty; give {self.metavar or self.dest.upper()}")
        setattr(namespace, self.dest, values)


# the namespace's records of the options Once has seen, and of those given an empty value
_GIVEN, _EMPTY = "_dse_options_given", "_dse_options_empty"


def was_given(a: argparse.Namespace, dest: str) -> bool:
    """Whether the option storing into `dest` was on the command line (not its default)."""
    return dest in getattr(a, _GIVEN, ())


def check_given(a: argparse.Namespace) -> None:
    """Refuse, before any computing, an option given an empty value (`--design ''` names no
    file, `--storage ''` no storage: never "not given", nor the working directory), and a
    --catalog directory that is empty, given twice or the shipped catalog's own."""
    from dse.specs.catalog import default_catalog_dirs

    for why in getattr(a, _EMPTY, ()):
        raise UsageError(why)
    shipped = {d.resolve() for d in default_catalog_dirs()}
    seen: dict[Path, str] = {}
    for d in getattr(a, "catalog", None) or ():
        if d == "":
            raise UsageError("--catalog: the value is empty; give DIR")
        r = Path(d).resolve()
        if r in shipped:
            raise UsageError(f"--catalog {d}: the shipped catalog directory, always loaded; "
                             "drop it")
        if r in seen:
            raise UsageError(f"--catalog {d}: the same directory given twice (also "
                             f"--catalog {seen[r]}); give it once")
        seen[r] = d


def _shown(value: Any) -> str:
    """An option's value as a message shows it: a list's items with spaces, a KEY:MS pair
    (--goodput) with its colon, a float in %g."""
    if isinstance(value, list):
        return " ".join(_shown(v) for v in value)
    if isinstance(value, tuple):
        return ":".join(_shown(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def once_by_default(p: argparse.ArgumentParser) -> None:
    """Every option `p` gets without an action of its own takes one value once (Once)."""
    p.register("action", None, Once)
    p.register("action", "store", Once)


@contextlib.contextmanager
def flags_named(given: Mapping[str, Any], keys: Mapping[str, str]) -> Iterator[None]:
    """A library's error about a command's own arguments, said in the command's words: a
    SpecError of no file about an argument (keys: argument -> flag, e.g. "clock_mhz" ->
    "--clock-mhz") and an unknown name that is a flag's value (given: flag -> value) become
    usage errors naming the flag (exit 2, the reason kept); every other error passes as it is."""
    try:
        yield
    except FlagValueError:
        raise
    except SpecError as e:
        if e.path or e.key not in keys:
            raise
        raise FlagValueError(keys[e.key], "", e.reason) from e
    except UnknownNameError as e:
        flag = next((f for f, v in given.items() if v is not None and v == e.name), None)
        if flag is None:
            raise
        raise UsageError(f"{flag}: {e}") from e


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, width: int | None = None,
          keys: int = 1) -> str:
    """A plain text table; floats in 4 significant digits. width None: one line per row (the
    --wide layout); otherwise it fits `width`, split into parts that repeat the first `keys`
    columns (dse.cli.layout.table_text)."""

    def fmt(v: Any) -> str:
        if isinstance(v, float | np.floating):
            return f"{v:.4g}"
        if v is None:
            return "-"
        return str(v)

    return table_text(headers, [[fmt(v) for v in r] for r in rows], width=width, keys=keys)


def add_wide(p: argparse.ArgumentParser) -> None:
    """--wide, on every command that prints a table or prose."""
    p.add_argument("--wide", action="store_true",
                   help="one line per table row and per sentence, however wide (default: the "
                   f"text fits $COLUMNS, else {DEFAULT_WIDTH} columns; a table too wide is "
                   "split into parts that repeat its first column)")


def text_width(a: argparse.Namespace) -> int | None:
    """The width a command's text fits: None with --wide (or on a command without the flag),
    else $COLUMNS or 100 (dse.cli.layout.output_width)."""
    return output_width(getattr(a, "wide", True), os.environ)


def with_interval(value: Any, interval: Sequence[float] | None) -> Any:
    """`value [low-high]` in 4 significant digits (the value alone without an interval)."""
    if interval is None or value is None:
        return value
    lo, hi = interval
    return f"{value:.4g} [{lo:.4g}-{hi:.4g}]"


def margin_text(f: Any, metric: str, unit: str = "") -> str:
    """A family's margin against the winner on a metric, with the interval of the difference
    and whether it holds 0 (dse.search.families.FamilyBest); the winner says so."""
    if f.is_winner:
        return "#1 (the winner)"
    m = f.margin.get(metric)
    if m is None:
        return "-"
    lo, hi = f.margin_interval.get(metric, [m, m])
    sure = "outside" if f.decided(metric) else "inside"
    return f"{m:+.4g} [{lo:+.4g} to {hi:+.4g}]{' ' + unit if unit else ''}; 0 {sure} the interval"


def clip_words(text: str, limit: int) -> str:
    """The text up to `limit` characters, cut at a word boundary with " ..." when cut (never
    mid-word). E.g. clip_words("a 89% interval of x", 12) == "a 89% ..."."""
    if len(text) <= limit:
        return text
    head = text[:limit + 1].rsplit(" ", 1)[0].rstrip(",;:(")
    return (head if head else text[:limit]) + " ..."


def provenance_text(report: Mapping[str, Any]) -> str:
    """One line per component of a report's provenance: its status, then what it rests on
    (the first part, cut at a word; `--json` has it whole)."""
    prov = report.get("provenance") or {}
    lines = ["provenance:"]
    for comp, p in prov.items():
        first = p["basis"].split(" | ")
        text = clip_words(first[0], 110)
        if len(first) > 1 and not text.endswith(" ..."):
            text += ", ..."
        lines.append(f"  {comp}: {p['status']} ({text})")
    return "\n".join(lines) if prov else ""


def _half_open_type(lo: float, hi: float) -> Callable[[str], float]:
    """An argparse type for a number in [lo, hi)."""
    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number in [{lo:g}, {hi:g}), got "
                                             f"{s[:40]!r}") from None
        if not lo <= v < hi:
            raise argparse.ArgumentTypeError(f"must be in [{lo:g}, {hi:g}), got {s[:40]!r}")
        return v

    return parse


# --confidence: the interval end constraints are checked at; --offload-fraction: a share
confidence_type = _half_open_type(0.5, 1.0)
offload_fraction_type = _half_open_type(0.0, 1.0)


def whole_number(lo: int, hi: int = MAX_INT) -> Callable[[str], int]:
    """An argparse type: a whole number in lo..hi (hi: a cap of dse.core.limits)."""

    def parse(s: str) -> int:
        text = s.strip().replace("_", "")
        if len(text) > 40:  # never int() a thousand-digit string (hi has at most 16 digits)
            raise argparse.ArgumentTypeError(f"must be at most {hi}, got a {len(text)}-digit "
                                             "number")
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {s[:40]!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be in {lo}..{hi}, got {v}")
        return v

    return parse


seed_type = whole_number(0, MAX_SEED)  # what numpy's RandomState (Optuna's samplers) takes
positive_int = whole_number(1)
nonneg_int = whole_number(0)


def positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {s!r}")
    return v


def rate_per_s(s: str) -> float:
    """A finite number of requests per second, MIN_RATE_PER_S to MAX_RATE_PER_S."""
    v = positive_float(s)
    if v > MAX_RATE_PER_S:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RATE_PER_S:g} requests/s, "
                                         f"got {s!r}")
    if v < MIN_RATE_PER_S:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_RATE_PER_S:g} requests/s "
                                         f"(one request in 12 days), got {s!r}")
    return v


def refuse_overwriting_inputs(outputs: Mapping[str, str | None],
                              inputs: Mapping[str, str | Sequence[str] | None], *,
                              catalogs: Sequence[str] = (), dir_outputs: Sequence[str] = ()
                              ) -> None:
    """Refuse, before anything is written, an output path that is one of the command's inputs
    (files, or catalog directories) or a directory that holds one; two outputs on one path; and
    a directory output (a bundle, search results: design TOML files) inside a catalog directory,
    which the catalog would then try to load; and an empty output path (`--out ""`: refused,
    never taken as "not given"). Keys are the flags, for the messages; None: not given."""
    ins = [(flag, p) for flag, given in inputs.items()
           for p in ([given] if isinstance(given, str) else (given or ()))]
    ins += [("--catalog", c) for c in catalogs]
    seen: dict[Path, str] = {}
    for oflag, out in outputs.items():
        if out is None:
            continue
        check_path_text(oflag, out)
        o = Path(out).resolve()
        if o in seen:
            raise UsageError(f"{oflag} {out}: the same path as {seen[o]}")
        seen[o] = oflag
        for iflag, inp in ins:
            i = Path(inp).resolve()
            if i == o or o in i.parents:
                raise UsageError(f"{oflag} {out}: would overwrite the {iflag} input {inp}; "
                                 "write the output elsewhere")
            if oflag in dir_outputs and iflag == "--catalog" and i in o.parents:
                raise UsageError(f"{oflag} {out}: inside the catalog directory {inp}, whose "
                                 "loader would read the design files written there")


def read_workload(cat: Catalog, name: str) -> Any:
    """A workload by catalog name or TOML file (dse.io.resolve, the one resolver); a
    directory, or a file of another kind, is refused saying so (never "unknown workload")."""
    from dse.errors import SpecError
    from dse.io.resolve import resolve_workload

    if name not in cat.names("workload") and os.path.isdir(name):
        raise SpecError(name, "", "is a directory, not a file; --scenario takes a workload "
                        "name or a workload TOML file")
    try:
        return resolve_workload(cat, name, flag="--scenario")
    except SpecError as e:
        if e.key != "kind" or e.path != str(Path(name)):
            raise
        raise SpecError(e.path, e.key, f"{e.reason}; --scenario takes a workload name or a "
                        "workload TOML file") from e


def add_force(p: argparse.ArgumentParser, what: str) -> None:
    """--force, on a command whose output files are refused when already there."""
    p.add_argument("--force", action="store_true", help=f"replace {what} already there "
                   "(without it an existing file is refused)")


def write_file(flag: str, path: str, text: str, *, force: bool,
               ours: Callable[[bytes], bool] | None = None, owner: str = "") -> None:
    """Write a user-named output file (--markdown, --html) atomically. Checked again first
    (dse.io.outputs.check_output_file: the file may have appeared or changed while the command
    computed): a file already there is replaced only with force or when `ours` recognises it;
    a new one is created exclusively, so one another process creates meanwhile is kept."""
    from dse.io.atomic import write_new

    check_output_file(flag, path, force=force, ours=ours, owner=owner)
    write_new(path, text.encode("utf-8"), force=os.path.lexists(path))


def write_file_set(files: Mapping[str, tuple[str, str]], *, force: bool) -> None:
    """Write user-named output files (path -> (flag, text)) as one set
    (dse.io.atomic.write_paths): all of them or, if the command is stopped or a write fails,
    none; each checked again first, as write_file (a file already there only with force)."""
    from dse.io.atomic import write_paths

    for p, (flag, _) in files.items():
        check_output_file(flag, p, force=force)
    if files:
        write_paths({p: t.encode("utf-8") for p, (_, t) in files.items()},
                    force=any(os.path.lexists(p) for p in files))


class _NoInterruptLogs(logging.Filter):
    """Drops Optuna's report of a trial stopped by Ctrl-C (a warning with the traceback, then
    "failed with value None"): the command says it in one line instead."""

    def __init__(self) -> None:
        super().__init__()
        self.interrupted = False

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, KeyboardInterrupt | Terminated):
            self.interrupted = True
            return False
        return not (self.interrupted and "failed with value None" in record.getMessage())


def quiet_optuna() -> None:
    """Optuna logs every trial at INFO and a failed one at WARNING (its parameters, then "Trial
    N failed with value ..."); the command prints its own progress and table, says why no trial
    was feasible, and an error that fails a trial ends the command in one line, so only
    Optuna's errors reach stderr."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    for h in logging.getLogger("optuna").handlers:
        if not any(isinstance(f, _NoInterruptLogs) for f in h.filters):
            h.addFilter(_NoInterruptLogs())
