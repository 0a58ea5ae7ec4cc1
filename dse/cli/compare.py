"""`dse compare A B [C ...]`: designs side by side on one workload (closed form, 90% intervals),
each one's difference from the first, and the joint 90% interval of each difference
(dse.uncertainty.joint: the errors two designs share move both).

A DESIGN argument is a system name or a system/design TOML file, optionally followed by
`:KEY=VALUE[,KEY=VALUE...]`, the `--set` keys of `dse evaluate` (system keys, the `fpga.*`
aliases, the schedule flags) and `schedule=NAME`, e.g.
`paper-config1-u280:accept_threshold=0.9,backtracking=false`. Each resolves through dse.io.resolve
(the one resolver), as `dse evaluate --system/--design ... --set ...` would.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.cli.common import Once, add_wide, read_workload, table, text_width, with_interval
from dse.cli.layout import wrap
from dse.core.limits import MAX_COMPARE_DESIGNS
from dse.errors import DseError, FlagValueError, UsageError
from dse.specs import Catalog

# (report key, column label, unit of a difference)
METRICS = (("latency_s_per_problem", "latency s", "s/problem"),
           ("goodput_tokens_per_s", "goodput tok/s", "tok/s"),
           ("j_per_token", "J/token", "J/token"),
           ("accuracy", "accuracy %", "accuracy pts"))
SCHEDULE_KEY = "schedule"


@dataclass(frozen=True)
class DesignArg:
    """One DESIGN argument, parsed: its text (the label), the system or file it names, its
    `KEY=VALUE` settings and its schedule (None: --schedule, else the file's, else
    heteroreason)."""

    number: int
    label: str
    ref: str
    settings: tuple[str, ...]
    schedule: str | None

    @property
    def where(self) -> str:
        return f"DESIGN #{self.number} ({self.label[:80]})"


class DesignArgError(DseError):
    """An error resolving one DESIGN argument: its message and exit code, naming the
    argument first."""

    def __init__(self, arg: DesignArg, error: DseError) -> None:
        super().__init__(f"{arg.where}: {error}")
        self.exit_code = error.exit_code


def parse_design_arg(number: int, text: str) -> DesignArg:
    """`REF` or `REF:KEY=VALUE[,KEY=VALUE...]`; split at the last ':' whose right side holds
    '=' (so a path with a ':' but no settings stays whole)."""
    head, sep, tail = text.rpartition(":")
    if not sep or "=" not in tail:
        head, tail = text, ""
    ref = head.strip()
    if not ref:
        raise UsageError(f"DESIGN #{number} ({text[:80]}): names no system or design file "
                         "before ':'")
    settings, schedule = [], None
    for item in (x.strip() for x in tail.split(",")) if tail else ():
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"DESIGN #{number} ({text[:80]}): {item[:60]!r}: expected "
                             "KEY=VALUE")
        if key.strip() == SCHEDULE_KEY:
            if schedule is not None:
                raise UsageError(f"DESIGN #{number} ({text[:80]}): {SCHEDULE_KEY}: given "
                                 "twice; set each key once")
            schedule = value.strip()
        else:
            settings.append(item)
    return DesignArg(number, text, ref, tuple(settings), schedule)


def compare_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("designs", nargs="+", metavar="DESIGN",
                   help="a system name or a system/design TOML file, optionally followed by "
                   ":KEY=VALUE[,KEY=VALUE...] (the --set keys of dse evaluate, and "
                   "schedule=NAME), e.g. paper-config1-u280:accept_threshold=0.9; the first "
                   f"is the baseline; 2..{MAX_COMPARE_DESIGNS} designs")
    p.add_argument("--scenario", action=Once, help="workload name or TOML file (default: the "
                   "design files' workload, when they name one)")
    p.add_argument("--schedule", action=Once, help="rsd, brsd, brsd_stepahead or heteroreason "
                   "for every design without schedule=NAME (default: a design file's, else "
                   "heteroreason)")
    add_wide(p)


def _ref(cat: Catalog, ref: str) -> str | Path:
    """A DESIGN's system name, or its path where it names no system but a path (one that is
    there, or that holds a '/'): read as a file, whose reader says what is wrong with it (a
    directory, a missing file), never "unknown system"."""
    if ref in cat.names("system") or not (os.path.lexists(ref) or "/" in ref):
        return ref
    return Path(ref)


def _resolve(cat: Catalog, a: argparse.Namespace, arg: DesignArg) -> tuple[Any, Any]:
    """(the design, its source) of one DESIGN argument, through dse.io.resolve."""
    from dse.io.design_files import parse_set
    from dse.io.resolve import read_source, resolve_design, schedule_misfit

    src = read_source(cat, _ref(cat, arg.ref))
    try:
        sys_over, flags = parse_set(arg.settings)
        d = resolve_design(cat, src, overrides={**sys_over, **flags},
                           schedule=arg.schedule or a.schedule, source="--set")
        # a DESIGN's own schedule= must apply; --schedule is for the designs that run one
        schedule_misfit(d.workflow, arg.schedule, "schedule=")
    except FlagValueError as e:  # name the DESIGN argument, not --set
        raise FlagValueError(arg.where, e.key, e.reason) from None
    return d, src


def _workload(cat: Catalog, a: argparse.Namespace, sources: list[Any]) -> Any:
    if a.scenario:
        return read_workload(cat, a.scenario)
    named = sorted({s.workload for s in sources if s.workload is not None})
    if len(named) > 1:
        raise UsageError(f"--scenario: required (the design files name {', '.join(named)})")
    if not named:
        raise UsageError("--scenario: required (no design file names a workload)")
    return read_workload(cat, named[0])


def _difference(base: tuple[Any, Any], other: tuple[Any, Any], w: Any) -> dict[str, Any]:
    from dse.uncertainty.joint import difference_interval

    keys = [m for m, _, _ in METRICS]
    iv = difference_interval(other, base, w, keys)
    rb, ro = base[1], other[1]
    delta = {m: float(getattr(ro, m)) - float(getattr(rb, m)) for m in keys}
    rel = {m: (delta[m] / float(getattr(rb, m)) if float(getattr(rb, m)) else None)
           for m in keys}
    return {"delta": delta, "relative": rel, "interval": {m: list(iv[m]) for m in keys},
            "decided": {m: not (iv[m][0] <= 0 <= iv[m][1]) for m in keys}}


def _delta_text(diff: dict[str, Any], m: str) -> str:
    lo, hi = diff["interval"][m]
    rel = diff["relative"][m]
    return (f"{diff['delta'][m]:+.4g} [{lo:+.4g} to {hi:+.4g}]"
            + ("" if rel is None else f" ({rel:+.1%})")
            + ("" if diff["decided"][m] else " undecided"))


def run_compare(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.engine.closed_form import closed_form_caveats
    from dse.io.resolve import report

    if not 2 <= len(a.designs) <= MAX_COMPARE_DESIGNS:
        raise UsageError(f"DESIGN: give 2..{MAX_COMPARE_DESIGNS} designs to compare, got "
                         f"{len(a.designs)} (one design: dse evaluate)")
    args = [parse_design_arg(i, t) for i, t in enumerate(a.designs, 1)]
    resolved = []
    for arg in args:
        try:
            resolved.append(_resolve(cat, a, arg))
        except FlagValueError:
            raise
        except DseError as e:  # an unknown name, an unreadable file, an infeasible design
            raise DesignArgError(arg, e) from None
    w = _workload(cat, a, [src for _, src in resolved])
    pairs = [(d, report(d, w)) for d, _ in resolved]
    diffs = [_difference(pairs[0], p, w) for p in pairs[1:]]
    alts = [(n, (ad, report(ad, w))) for n, ad in _alternatives(cat, args, pairs)]
    alt_diffs = [_difference(pairs[0], p, w) for _, p in alts]
    designs = [{"label": arg.label, "system": d.name, "schedule": r.schedule,
                "settings": list(arg.settings), "report": r.to_dict()}
               for arg, (d, r) in zip(args, pairs, strict=True)]
    differences = [{"label": arg.label, "vs": args[0].label, **diff}
                   for arg, diff in zip(args[1:], diffs, strict=True)]
    alternatives = [{"label": _alt_label(n), "of": n, "system": d.name, "schedule": r.schedule,
                     "report": r.to_dict(), "vs": args[0].label, **diff}
                    for (n, (d, r)), diff in zip(alts, alt_diffs, strict=True)]
    named = [(arg.number, arg.label, p) for arg, p in zip(args, pairs, strict=True)] + [
        (f"T{n}", _alt_label(n), p) for n, p in alts]
    rows = [[num, label, r.schedule,
             *(with_interval(float(getattr(r, m)), r.intervals.get(m)) for m, _, _ in METRICS),
             r.p_accept if d.is_speculative else None]
            for num, label, (d, r) in named]
    drows = [[num, label, *(_delta_text(diff, m) for m, _, _ in METRICS)]
             for (num, label, _), diff in zip(named[1:], [*diffs, *alt_diffs], strict=True)]
    notes = [f"note (#{arg.number}): {c}" for arg, (_, r) in zip(args, pairs, strict=True)
             for c in closed_form_caveats(r)]
    width = text_width(a)
    text = (f"{len(args)} designs on {w.name} (closed form, per problem; [low-high]: 90% "
            "intervals)\n"
            + table(["#", "design", "schedule", *(label for _, label, _ in METRICS),
                     "p_accept"], rows, width=width)
            + f"\n\ndifference from #1 ({args[0].label}): value [joint 90% interval of the "
            "difference] (relative); undecided: 0 inside the interval\n"
            + table(["#", "design", *(unit if unit.endswith("pts") else label
                                      for _, label, unit in METRICS)], drows, width=width)
            + "".join(f"\n{n}" for n in notes))
    return {"workload": w.name, "baseline": args[0].label, "designs": designs,
            "differences": differences, "target_alone": alternatives}, wrap(text, width)


def _alt_label(number: int) -> str:
    return f"target alone of #{number}"


def _alternatives(cat: Catalog, args: list[DesignArg], pairs: list[tuple[Any, Any]]
                  ) -> list[tuple[int, Any]]:
    """The simplest alternative of each speculative or width design compared: its target
    placement alone (dse.io.resolve.target_alone), once a placement, unless a design compared
    is that target alone already."""
    from dse.io.resolve import target_alone
    from dse.model.design import build_design

    def placement(d: Any) -> tuple[Any, ...]:
        t = d.target
        return (t.model.name, t.device.name, t.tp, t.precision.name, t.serving)

    seen = {placement(d) for d, _ in pairs if d.workflow == "target-only"}
    out = []
    for arg, (d, _) in zip(args, pairs, strict=True):
        if d.workflow == "target-only":
            continue
        alone = build_design(cat, target_alone(d.system), d.schedule)
        if placement(alone) not in seen:
            seen.add(placement(alone))
            out.append((arg.number, alone))
    return out
