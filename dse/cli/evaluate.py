"""`dse evaluate` (the closed form under each schedule) and `dse simulate` (the trace-driven
simulator), with the design options they share."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from dse.cli.common import (
    Once,
    add_force,
    add_wide,
    provenance_text,
    read_workload,
    refuse_overwriting_inputs,
    seed_type,
    table,
    text_width,
    whole_number,
    with_interval,
    write_file_set,
)
from dse.cli.layout import wrap
from dse.core.limits import MAX_PROBLEMS
from dse.errors import UsageError
from dse.io.outputs import check_output_file
from dse.model.design import build_design
from dse.specs import Catalog


def _design_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--system", action=Once, compare_hint=True,
                   help="a named system, e.g. paper-config1-u280 (once; several: dse compare)")
    g.add_argument("--design", action=Once, compare_hint=True,
                   help="a system or design TOML file (e.g. best.toml from dse optimize: its "
                   "schedule and workload are the defaults)")
    p.add_argument("--scenario", action=Once, help="workload name (gsm8k, math500, gaokao2023en, "
                   "olympiadbench) or a workload TOML file; a design file's by default")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a design knob, e.g. accept_threshold=0.8, fpga.clock_mhz=250, "
                   "backtracking=false; repeatable")
    add_wide(p)


def _source(a: argparse.Namespace, cat: Catalog) -> Any:
    """The system or design file of --system / --design, read once (dse.io.resolve)."""
    from dse.io.resolve import read_source

    if a.design is not None:
        return read_source(cat, Path(a.design))
    return read_source(cat, a.system)


def _scenario(a: argparse.Namespace, cat: Catalog, src: Any) -> Any:
    """The workload of --scenario, else the design file's."""
    name = a.scenario or src.workload
    if name is None:
        raise UsageError("--scenario: required (the design file names no workload)"
                         if a.design is not None else
                         "--scenario: required with --system (a system names no workload: "
                         "e.g. --scenario math500; dse catalog scenarios lists them)")
    return read_workload(cat, name)


def _designs(a: argparse.Namespace, cat: Catalog, src: Any, schedules: list[str] | None
             ) -> tuple[list[Any], list[str]]:
    """The design under each named schedule (None: the design file's schedule beside the
    presets the design can run), and a note for each preset it cannot run."""
    from dse.io.design_files import parse_set
    from dse.io.resolve import override_spec, runnable_schedules, schedule_misfit, schedule_of
    from dse.model.schedules import PRESETS, schedule

    sys_over, flags = parse_set(a.set)
    spec = override_spec(src.spec, sys_over, source="--set")
    if a.schedule:  # asked by flag: only a speculative design runs one
        schedule_misfit(spec.workflow_name, ", ".join(a.schedule) if isinstance(a.schedule, list)
                        else a.schedule)
    notes: list[str] = []
    if schedules is None:
        scheds = [PRESETS[n].with_flags(**flags) for n in PRESETS]
        if src.schedule is not None and src.schedule.name not in PRESETS:
            scheds.append(src.schedule.with_flags(**flags))
        scheds, notes = runnable_schedules(spec, scheds)
    else:
        scheds = [schedule_of(schedule(n), None).with_flags(**flags) for n in schedules]
    return [build_design(cat, spec, s) for s in scheds], notes


# columns after the report's headline ones (dse.engine.closed_form.REPORT_COLUMNS)
EXTRA_COLUMNS = (("speedup vs brsd", "speedup_vs_brsd"),
                 ("energy gain vs brsd", "energy_gain_vs_brsd"),
                 ("stall ratio", "speculation_stall_ratio"), ("comm share", "communication_share"))


def evaluate_args(p: argparse.ArgumentParser) -> None:
    _design_args(p)
    p.add_argument("--schedule", action="append", metavar="S",
                   help="rsd, brsd, brsd_stepahead, heteroreason (repeatable; default: all four)")


def run_evaluate(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.engine.closed_form import closed_form_caveats
    from dse.engine.report import REPORT_COLUMNS
    from dse.io.resolve import report
    from dse.uncertainty import attach, evaluate_at

    src = _source(a, cat)
    w = _scenario(a, cat, src)
    designs, skipped = _designs(a, cat, src, a.schedule or None)
    reports, caveats = {}, [f"note: {n}" for n in skipped]
    last: tuple[Any, Any, Any] | None = None
    for d in designs:
        rep = report(d, w, intervals=False)
        at = evaluate_at(d, w, central=rep)  # remembered: the margin's joint interval reuses it
        rep = attach(rep, d, w, at=at)
        if d.workflow != "target-only" and (  # weighed against the target: the design
                last is None or src.schedule is None  # file's own schedule, else the last
                or last[0].schedule.name != src.schedule.name):
            last = (d, rep, at)
        notes = closed_form_caveats(rep)
        reports[rep.schedule] = rep.to_dict() | {"caveats": notes}
        caveats += [f"note ({rep.schedule}): {c}" for c in notes]
    alone, vs = _versus_target_alone(cat, last, w)
    if alone is not None:
        reports["target alone"] = alone.to_dict() | {"caveats": []}
    base = reports.get("brsd")
    for r in reports.values():
        if base is not None:
            r["speedup_vs_brsd"] = base["latency_s_per_problem"] / r["latency_s_per_problem"]
            r["energy_gain_vs_brsd"] = base["j_per_token"] / r["j_per_token"]
    first = next(iter(reports.values()))
    columns = (*REPORT_COLUMNS, *EXTRA_COLUMNS)
    rows = [[with_interval(r.get(key), r["intervals"].get(key)) for _, key in columns]
            for r in reports.values()]
    head = [label for label, _ in columns]
    text = (f"{first['system']} on {first['workload']} (closed form, per problem; "
            "[low-high]: 90% intervals)\n" + table(head, rows, width=text_width(a))
            + _versus_text(vs)
            + "".join(f"\n{c}" for c in caveats) + "\n" + provenance_text(first))
    return {"system": first["system"], "workload": first["workload"],
            "schedules": reports, "vs_target_alone": vs}, wrap(text, text_width(a))


MARGINS = (("latency_s_per_problem", "s/problem"), ("j_per_token", "J/token"),
           ("accuracy", "accuracy pts"))


def _versus_target_alone(cat: Catalog, last: tuple[Any, Any, Any] | None, w: Any
                         ) -> tuple[Any, Any]:
    """The target alone (the same target placement) and the margin of `last` (a design
    file's own schedule, else the last speculative or width design evaluated: its design,
    report and `evaluate_at`) against it, with the joint 90% interval of the difference."""
    from dse.io.resolve import report, target_alone
    from dse.uncertainty.joint import difference_interval

    if last is None:
        return None, None
    d, rd, at = last
    alone = build_design(cat, target_alone(d.system), d.schedule)
    ra = report(alone, w)
    iv = difference_interval((d, rd), (alone, ra), w, [m for m, _ in MARGINS], at_a=at)
    margin = {m: float(getattr(rd, m)) - float(getattr(ra, m)) for m, _ in MARGINS}
    return ra, {"schedule": rd.schedule, "margin": margin,
                "margin_interval": {m: list(v) for m, v in iv.items()},
                "decided": {m: not (iv[m][0] <= 0 <= iv[m][1]) for m, _ in MARGINS}}


def _versus_text(vs: Any) -> str:
    if vs is None:
        return ""
    parts = []
    for m, unit in MARGINS:
        if m not in vs["margin"]:
            continue
        lo, hi = vs["margin_interval"][m]
        parts.append(f"{vs['margin'][m]:+.4g} {unit} [{lo:+.4g} to {hi:+.4g}]"
                     + ("" if vs["decided"][m] else " (undecided: 0 inside)"))
    return (f"\n{vs['schedule']} - the target alone (joint 90% interval of the difference): "
            + ", ".join(parts))


def simulate_args(p: argparse.ArgumentParser) -> None:
    _design_args(p)
    p.add_argument("--schedule", action=Once, help="rsd, brsd, brsd_stepahead or heteroreason "
                   "(default: the design file's schedule, else heteroreason)")
    p.add_argument("--problems", type=whole_number(1, MAX_PROBLEMS), default=5000,
                   help="synthetic problems to draw (default 5000)")
    p.add_argument("--seed", type=seed_type, default=0, help="random seed (default 0)")
    p.add_argument("--trace", help="replay this JSONL trace instead of a synthetic one")
    p.add_argument("--trace-out", help="write the (synthetic) trace replayed as JSONL")
    p.add_argument("--timeline-out", help="write problem 0's device timeline as JSON")
    add_force(p, "--trace-out and --timeline-out files")


def run_simulate(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.engine.simulator import read_jsonl, trace_to_records
    from dse.io.resolve import report, simulate, target_alone

    refuse_overwriting_inputs({"--trace-out": a.trace_out, "--timeline-out": a.timeline_out},
                              {"--trace": a.trace, "--design": a.design,
                               "--scenario": a.scenario if a.scenario and a.scenario.endswith(
                                   ".toml") else None}, catalogs=a.catalog)
    for flag, path in (("--trace-out", a.trace_out), ("--timeline-out", a.timeline_out)):
        if path is not None:  # a bad path is refused before the simulation
            check_output_file(flag, path, force=a.force)
    src = _source(a, cat)
    if a.schedule is None:
        names = None if src.schedule is not None else ["heteroreason"]
        ds, _ = _designs(a, cat, src, names)
        (d,) = [x for x in ds if src.schedule is None or x.schedule.name == src.schedule.name][:1]
    else:
        (d,), _ = _designs(a, cat, src, [a.schedule])
    if a.trace and not d.is_speculative:
        raise UsageError(f"--trace: a {d.workflow} design has no draft steps, verdicts or "
                         "rewrites to replay; simulate it without --trace")
    w = _scenario(a, cat, src)
    sim = simulate(d, w, problems=a.problems, seed=a.seed,
                   trace=read_jsonl(a.trace) if a.trace else None)
    r, tr = sim.report.to_dict(), sim.trace
    outs: dict[str, tuple[str, str]] = {}  # written as one set: both files or neither
    if a.trace_out is not None:
        if tr is None:
            raise UsageError(f"--trace-out: a {d.workflow} design has no speculative trace "
                             "to write")
        outs[a.trace_out] = ("--trace-out", "".join(json.dumps(rec) + "\n"
                                                    for rec in trace_to_records(tr)))
    if a.timeline_out is not None:
        payload = {"schema_version": 1, "system": d.name, "schedule": r["schedule"],
                   "problem": 0, "intervals": sim.timeline}
        outs[a.timeline_out] = ("--timeline-out", json.dumps(payload, indent=1))
    write_file_set(outs, force=a.force)
    vs = None
    if d.workflow != "target-only":  # weighed against the target alone, simulated alike
        alone = build_design(cat, target_alone(d.system), d.schedule)
        # a replayed trace's problems are not the workload's draws: the target alone is its
        # closed form's expectation over the workload's problems
        ra = (report(alone, w) if a.trace else
              simulate(alone, w, problems=a.problems, seed=a.seed).report)
        vs = _versus_simulated(cat, d, sim.report, ra, w, measured=a.trace is not None)
        r = r | {"target_alone": ra.to_dict(), "vs_target_alone": vs}
    rows = [_simulated_row(r, r["schedule"])]
    if vs is not None:
        rows.append(_simulated_row(r["target_alone"], "target alone" + (
            " (closed form)" if a.trace else "")))
    text = (f"{r['system']} on {r['workload']}: {r['problems']} problem"
            f"{'s' if r['problems'] != 1 else ''} simulated "
            "([low-high]: 90% intervals of the mean, the closed form's relative width)\n"
            + table(["schedule", "mean latency s", "p50 s", "p95 s", "goodput tok/s",
                     "J/token", "accuracy %", "backtracks", "stall ratio"], rows,
                    width=text_width(a))
            + _versus_text(vs) + "\n" + provenance_text(r))
    return r, wrap(text, text_width(a))


def _simulated_row(r: dict[str, Any], label: str) -> list[Any]:
    pct, iv = r["percentiles"], r["intervals"]
    return [label,
            with_interval(r["latency_s_per_problem"], iv.get("latency_s_per_problem")),
            pct.get("latency_p50_s"), pct.get("latency_p95_s"),
            with_interval(r["goodput_tokens_per_s"], iv.get("goodput_tokens_per_s")),
            with_interval(r["j_per_token"], iv.get("j_per_token")),
            with_interval(r["accuracy"], iv.get("accuracy")),
            r["backtracks_per_problem"], r["speculation_stall_ratio"]]


def _versus_simulated(cat: Catalog, d: Any, rd: Any, ra: Any, w: Any, *, measured: bool
                      ) -> dict[str, Any]:
    """The simulated design's margin over its simulated target alone, with the closed form's
    joint 90% interval of the difference moved to sit around the simulated margin (the same
    offsets either side, as a simulated report's own interval: dse.uncertainty.attach).
    measured: the design is a replayed trace, the target alone its closed form over the
    workload: the trace's measured accuracy (a Wilson interval) is independent of the target
    alone's modelled one, their half-widths added in quadrature
    (dse.uncertainty.joint.difference_of_ends). A metric either side lacks (a trace without
    correctness has no accuracy) has no margin."""
    from dse.io.resolve import report
    from dse.uncertainty import draw_ends, evaluate_at
    from dse.uncertainty.joint import difference_of_ends

    cf = report(d, w, intervals=False)
    _, vs = _versus_target_alone(cat, (d, cf, evaluate_at(d, w, central=cf)), w)
    margin: dict[str, float] = {}
    iv: dict[str, list[float]] = {}
    for m, _ in MARGINS:
        va, vb = getattr(rd, m), getattr(ra, m)
        if va is None or vb is None:
            continue
        if m == "accuracy" and measured:
            margin[m], iv[m] = difference_of_ends(va, rd.intervals[m], vb, ra.intervals[m],
                                                  shared=False)
            continue
        margin[m] = float(va) - float(vb)
        lo, hi = vs["margin_interval"][m]
        c = vs["margin"][m]
        if m == "accuracy":  # each side's draw of its problems, too (dse.uncertainty.attach)
            d_down, d_up = draw_ends(float(va), rd.problems)
            a_down, a_up = draw_ends(float(vb), ra.problems)
            lo = c - math.hypot(c - lo, math.hypot(d_down, a_up))
            hi = c + math.hypot(hi - c, math.hypot(d_up, a_down))
        iv[m] = [lo + margin[m] - c, hi + margin[m] - c]
        if m == "accuracy":  # two percentages differ by at most 100 points
            iv[m] = [max(iv[m][0], -100.0), min(iv[m][1], 100.0)]
    return {"schedule": rd.schedule, "margin": margin, "margin_interval": iv,
            "decided": {m: not (v[0] <= 0 <= v[1]) for m, v in iv.items()}}
