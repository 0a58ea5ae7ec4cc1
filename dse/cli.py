"""The `dse` command: a table of subcommands, all printing and exit codes.

Exit codes: 0 ok, 1 other error, 2 usage error / unknown name, 3 malformed spec file,
4 infeasible design. Errors print one line on stderr (a traceback only with --debug).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dse import __version__
from dse.errors import DseError, InfeasibleError, UsageError
from dse.objectives import OBJECTIVES, check_objectives
from dse.specs import Catalog, spec_fields


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_args: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Catalog], tuple[Any, str]]  # (json payload, text)


# ------------------------------------------------------------------------------- helpers


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table; floats in 4 significant digits."""

    def fmt(v: Any) -> str:
        if isinstance(v, float | np.floating):
            return f"{v:.4g}"
        if v is None:
            return "-"
        return str(v)

    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def nonneg_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {s!r}")
    return v


# ------------------------------------------------------------------------------- catalog

CATALOG_KINDS = {
    "boards": ("gpu", "fpga", "link"),
    "models": ("model",),
    "serving": ("gpu-serving", "fpga-engine"),
}


def _catalog_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=[*sorted(CATALOG_KINDS), "scenarios"],
                   help="which part of the catalog to list")


def _run_catalog(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    kinds = CATALOG_KINDS.get(a.what) or tuple(
        k for k in cat.items if k not in {k for ks in CATALOG_KINDS.values() for k in ks})
    payload: dict[str, list[dict[str, Any]]] = {}
    text: list[str] = []
    for kind in kinds:
        specs = [cat.get(kind, n) for n in cat.names(kind)]
        payload[kind] = [{**spec_fields(s), "path": s.path} for s in specs]
        if not specs:
            continue
        text.append(f"{kind} ({len(specs)})")
        text.append(table(["name", "description"], [[s.name, s.description] for s in specs]))
        text.append("")
    return payload, "\n".join(text).rstrip() or "(empty)"


# ------------------------------------------------------------------------------ roofline


def _roofline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="catalog name, model TOML or HF config.json")
    p.add_argument("--device", required=True, help="GPU or FPGA board name")
    p.add_argument("--precision", help="bf16, fp16, w8a16, w8a8, w4a16 (default: bf16 on GPUs, "
                   "w8a8 on FPGAs)")
    p.add_argument("--serving", default="vllm-cudagraph", help="GPU serving profile")
    p.add_argument("--context", type=nonneg_int, default=1024,
                   help="tokens already in context when decoding (default 1024)")
    p.add_argument("--prompt-tokens", type=positive_int, default=128,
                   help="tokens to prefill (default 128)")
    p.add_argument("--clock-mhz", type=positive_float, help="FPGA kernel clock (default: board)")
    p.add_argument("--tp", type=positive_int, help="GPU tensor-parallel degree (default: the "
                   "smallest that fits)")


def _run_roofline(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.roofline import roofline  # local: keeps `dse --help` fast

    r = roofline(cat, model=a.model, device=a.device, precision_name=a.precision,
                 serving=a.serving, context=a.context, prompt_tokens=a.prompt_tokens,
                 clock_mhz=a.clock_mhz, tp=a.tp)
    rows = [
        ["decode", f"{r['decode_s_per_token'] * 1e3:.3f} ms/token",
         f"{r['decode_tokens_per_s']:.1f} tokens/s", r["bound"]],
        ["prefill", f"{r['prefill_s'] * 1e3:.3f} ms", f"{a.prompt_tokens} tokens",
         r["prefill_bound"]],
    ]
    lines = [
        f"{r['model']} on {r['device']} ({r['precision']}, {r['serving']}, tp={r['tp']}), "
        f"context {a.context}",
        table(["phase", "time", "rate", "bound"], rows),
        "",
        f"weights {r['weights_bytes'] / 1e9:.3f} GB, KV {r['kv_bytes_per_token'] / 1e3:.2f} "
        f"kB/token, needs {r['memory_needed_bytes'] / 1e9:.2f} GB of "
        f"{r['memory_bytes'] / 1e9:.1f} GB: {'fits' if r['fits'] else 'DOES NOT FIT'}",
        f"roofline floor {r['roofline_s_per_token'] * 1e3:.3f} ms/token; power "
        f"{r['power_w']:.1f} W decoding, {r['idle_w']:.1f} W idle; "
        f"{r['j_per_token']:.3f} J/token",
    ]
    if r["infeasible"]:
        lines.append("infeasible: " + "; ".join(r["infeasible"]))
    return r, "\n".join(lines)


# ------------------------------------------------------------------ evaluate / simulate


def _design_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--system", help="a named system, e.g. paper-config1-u280")
    g.add_argument("--design", help="a system or design TOML file (e.g. best.toml from "
                   "dse optimize: its schedule and workload are the defaults)")
    p.add_argument("--scenario", help="workload name (gsm8k, math500, gaokao2023en, "
                   "olympiadbench) or a workload TOML file; a design file's by default")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a design knob, e.g. accept_threshold=0.8, fpga.clock_mhz=250, "
                   "backtracking=false; repeatable")


def _workload(cat: Catalog, name: str) -> Any:
    from pathlib import Path

    from dse.scenario import WorkloadSpec
    from dse.specs import load_spec

    if name.endswith(".toml") and Path(name).is_file():
        spec = load_spec(name)
        if not isinstance(spec, WorkloadSpec):
            raise DseError(f"{name}: kind: expected \"workload\"")
        return spec
    return cat.get("workload", name)


def _design_file(a: argparse.Namespace, cat: Catalog) -> Any:
    from dse.design_files import DesignFile, read_design_file

    if a.design is not None:
        return read_design_file(a.design)
    return DesignFile(cat.get("system", a.system), None, None)


def _scenario(a: argparse.Namespace, cat: Catalog) -> Any:
    """The workload of --scenario, else the design file's."""
    name = a.scenario or _design_file(a, cat).workload
    if name is None:
        raise UsageError("--scenario: required (the design file names no workload)")
    return _workload(cat, name)


def _designs(a: argparse.Namespace, cat: Catalog, schedules: list[str] | None) -> list[Any]:
    """The design under each named schedule; None: the design file's schedule, else all
    presets."""
    from dse.design import build_design
    from dse.design_files import parse_set, with_overrides
    from dse.schedules import PRESETS, schedule

    sys_over, flags = parse_set(a.set)
    df = _design_file(a, cat)
    spec = with_overrides(df.system, sys_over)
    if schedules is None:
        scheds = [PRESETS[n] for n in PRESETS]
        if df.schedule is not None and df.schedule.name not in PRESETS:
            scheds.append(df.schedule)
    else:
        scheds = [schedule(n) for n in schedules]
    return [build_design(cat, spec, s.with_flags(**flags)) for s in scheds]


REPORT_COLUMNS = (
    ("schedule", "schedule"), ("latency s", "latency_s_per_problem"),
    ("goodput tok/s", "goodput_tokens_per_s"), ("J/token", "j_per_token"),
    ("accuracy %", "accuracy"), ("p_accept", "p_accept"),
)


def _evaluate_args(p: argparse.ArgumentParser) -> None:
    _design_args(p)
    p.add_argument("--schedule", action="append", metavar="S",
                   help="rsd, brsd, brsd_stepahead, heteroreason (repeatable; default: all four)")


def _run_evaluate(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.engine.closed_form import closed_form_caveats, evaluate

    w = _scenario(a, cat)
    reports, caveats = {}, []
    for d in _designs(a, cat, a.schedule or None):
        rep = evaluate(d, w)
        notes = closed_form_caveats(rep)
        reports[d.schedule.name] = rep.to_dict() | {"caveats": notes}
        caveats += [f"note ({d.schedule.name}): {c}" for c in notes]
    base = reports.get("brsd")
    for r in reports.values():
        if base is not None:
            r["speedup_vs_brsd"] = base["latency_s_per_problem"] / r["latency_s_per_problem"]
            r["energy_gain_vs_brsd"] = base["j_per_token"] / r["j_per_token"]
    first = next(iter(reports.values()))
    rows = [[r["schedule"], r["latency_s_per_problem"], r["goodput_tokens_per_s"],
             r["j_per_token"], r["accuracy"], r["p_accept"], r.get("speedup_vs_brsd"),
             r.get("energy_gain_vs_brsd"), r["speculation_stall_ratio"],
             r["communication_share"]] for r in reports.values()]
    head = [c for c, _ in REPORT_COLUMNS] + ["speedup vs brsd", "energy gain vs brsd",
                                            "stall ratio", "comm share"]
    text = (f"{first['system']} on {first['workload']} (closed form, per problem)\n"
            + table(head, rows) + "".join(f"\n{c}" for c in caveats))
    return {"system": first["system"], "workload": first["workload"],
            "schedules": reports}, text


def _simulate_args(p: argparse.ArgumentParser) -> None:
    _design_args(p)
    p.add_argument("--schedule", help="rsd, brsd, brsd_stepahead or heteroreason (default: the "
                   "design file's schedule, else heteroreason)")
    p.add_argument("--problems", type=positive_int, default=5000,
                   help="synthetic problems to draw (default 5000)")
    p.add_argument("--seed", type=nonneg_int, default=0, help="random seed (default 0)")
    p.add_argument("--trace", help="replay this JSONL trace instead of a synthetic one")
    p.add_argument("--trace-out", help="write the (synthetic) trace replayed as JSONL")
    p.add_argument("--timeline-out", help="write problem 0's device timeline as JSON")


def _run_simulate(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.engine.closed_form import report_from_replay
    from dse.engine.simulator import read_jsonl, replay, synthetic_trace, trace_to_records
    from dse.schedules import Costs

    if a.schedule is None:
        df = _design_file(a, cat)
        names = None if df.schedule is not None else ["heteroreason"]
        ds = _designs(a, cat, names)
        (d,) = [x for x in ds if df.schedule is None or x.schedule.name == df.schedule.name]
    else:
        (d,) = _designs(a, cat, [a.schedule])
    c = Costs(d, _scenario(a, cat))
    tr = read_jsonl(a.trace) if a.trace else synthetic_trace(c, a.problems, a.seed)
    rp = replay(c, tr, timeline_problem=0)
    r = report_from_replay(c, rp).to_dict()
    if a.trace_out:
        _write_file(a.trace_out, "".join(json.dumps(rec) + "\n" for rec in trace_to_records(tr)))
    if a.timeline_out:
        payload = {"schema_version": 1, "system": d.name, "schedule": d.schedule.name,
                   "problem": 0, "intervals": rp.timeline}
        _write_file(a.timeline_out, json.dumps(payload, indent=1))
    pct = r["percentiles"]
    rows = [[r["schedule"], r["latency_s_per_problem"], pct["latency_p50_s"],
             pct["latency_p95_s"], r["goodput_tokens_per_s"], r["j_per_token"], r["accuracy"],
             r["backtracks_per_problem"], r["speculation_stall_ratio"]]]
    text = (f"{r['system']} on {r['workload']}: {r['problems']} problems simulated\n"
            + table(["schedule", "mean latency s", "p50 s", "p95 s", "goodput tok/s",
                     "J/token", "accuracy %", "backtracks", "stall ratio"], rows))
    return r, text


def _write_file(path: str, text: str) -> None:
    """Write a user-named output file (--trace-out, --timeline-out, --markdown, --html)
    atomically. These options have no --force: as always, naming a file replaces it."""
    from dse.atomic import write_new

    write_new(path, text.encode("utf-8"), force=True)


# ----------------------------------------------------------------------------- reproduce


def _reproduce_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    p.add_argument("--html", metavar="FILE", help="also write a plotly chart (HTML)")


def _run_reproduce(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse import calibrate, reproduce

    rs = reproduce.rows(cat)
    dev = calibrate.validation_rows(cat)
    summ = reproduce.summary(rs)
    if a.markdown:
        md = reproduce.markdown(rs, dev, reproduce.config2_target_sensitivity(cat))
        _write_file(a.markdown, md)
    if a.html:
        page = reproduce.html(rs)
        _write_file(a.html, page)
    payload = {
        "rows": [r.to_dict() for r in rs],
        "summary": summ,
        "device_rows": [{"id": d.id, "description": d.description, "measured": d.measured,
                         "tool": d.predicted, "rel_error": d.rel_error, "within": d.within,
                         "fitted": d.fitted} for d in dev],
    }
    rows = [[r.id, f"{r.paper_low:.4g}" if r.paper_low == r.paper_high
             else f"{r.paper_low:.4g}-{r.paper_high:.4g}", r.tool, "yes" if r.within else "NO",
             "yes" if r.calibrated else ""] for r in rs]
    text = (table(["id", "paper", "tool", "within", "calibrated"], rows) + "\n\n"
            + f"{summ['within']}/{summ['rows']} within tolerance; calibrated "
            f"{summ['calibrated_within']}/{summ['calibrated']}, predicted "
            f"{summ['predicted_within']}/{summ['predicted']}")
    return payload, text


# -------------------------------------------------------------------------------- export


def _export_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--design", help="a system or design TOML file (its schedule and workload "
                   "are the defaults)")
    g.add_argument("--system", help="a named system, e.g. paper-config1-u280 (schedule "
                   "heteroreason, workload math500 unless given)")
    g.add_argument("--study", help="an optimisation study: its best feasible trial's design")
    p.add_argument("--storage", help="study storage URL (with --study)")
    p.add_argument("--trial", type=nonneg_int, help="export this trial number instead of the "
                   "best (with --study)")
    p.add_argument("--scenario", help="workload name or TOML file (default: the design's; "
                   "math500 for --system)")
    p.add_argument("--schedule", help="rsd, brsd, brsd_stepahead or heteroreason (default: the "
                   "design's, else heteroreason)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a design knob, e.g. fpga.clock_mhz=200; repeatable")
    p.add_argument("--out", required=True, metavar="DIR", help="bundle directory to write")
    p.add_argument("--force", action="store_true",
                   help="replace DIR if it holds a previous bundle")


def _export_design_file(a: argparse.Namespace, cat: Catalog) -> Any:
    from dse.design_files import DesignFile, read_design_file

    if a.study is None and (a.storage is not None or a.trial is not None):
        raise UsageError("--storage and --trial go with --study")
    if a.design is not None:
        return read_design_file(a.design)
    if a.system is not None:
        return DesignFile(cat.get("system", a.system), None, None)
    try:
        from dse.search import study_design_file
    except ImportError as e:
        raise DseError(f"--study: studies are not available in this build ({e})") from None
    _quiet_optuna()
    return study_design_file(a.storage, a.study, a.trial)


def _run_export(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.design import build_design
    from dse.design_files import parse_set, with_overrides
    from dse.exporters import render_bundle, write_bundle
    from dse.schedules import PRESETS, schedule

    df = _export_design_file(a, cat)
    sys_over, flags = parse_set(a.set)
    sched = (schedule(a.schedule) if a.schedule else df.schedule or PRESETS["heteroreason"])
    wl_name = a.scenario or df.workload or ("math500" if a.system is not None else None)
    if wl_name is None:
        raise UsageError("--scenario: required (the design file names no workload)")
    design = build_design(cat, with_overrides(df.system, sys_over), sched.with_flags(**flags))
    files = render_bundle(cat, design, _workload(cat, wl_name))
    out = write_bundle(files, a.out, a.force)
    manifest = json.loads(files["manifest.json"])
    lines = [f"wrote {len(files)} files to {out} ({design.name}, schedule "
             f"{design.schedule.name}, workload {manifest['workload']})"]
    lines += [f"  {p}" for p in sorted(files)]
    for d, why in manifest["projection_only_reasons"].items():
        lines.append(f"projection only: {d}: {why}")
    lines += [f"note: {n}" for n in manifest["notes"]]
    return {"out": str(out), "files": sorted(files), "manifest": manifest}, "\n".join(lines)


# -------------------------------------------------------------------------------- search


def percent(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage, got {s!r}") from None
    if not math.isfinite(v) or not 0 <= v <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100, got {s!r}")
    return v


def _search_args(p: argparse.ArgumentParser) -> None:

    p.add_argument("--objective", action="append", choices=list(OBJECTIVES), metavar="OBJ",
                   help="j_per_token, latency, goodput, accuracy or cost ($/Mtoken); repeat "
                   "for a Pareto front (default j_per_token)")
    p.add_argument("--space", metavar="FILE", help="a design-space TOML (default: the shipped "
                   "scenarios/spaces/default.toml)")
    p.add_argument("--min-accuracy", type=percent, metavar="PCT",
                   help="minimum accuracy, percent (default: the space's)")
    p.add_argument("--max-latency", type=positive_float, metavar="S",
                   help="maximum latency per problem, seconds")
    p.add_argument("--max-power-w", type=positive_float, metavar="W",
                   help="maximum average system power, watts")
    p.add_argument("--out", metavar="DIR", help="write best.toml, pareto.csv, pareto.html "
                   "(and trials.csv for optimize) into DIR")
    p.add_argument("--force", action="store_true", help="replace files already in --out")


def _search_setup(a: argparse.Namespace, cat: Catalog) -> tuple[Any, list[str], Any]:
    from dse.search import Constraints
    from dse.space import load_space

    space = load_space(cat, a.space)
    objectives = check_objectives(a.objective or ["j_per_token"])
    return space, objectives, Constraints(a.min_accuracy, a.max_latency, a.max_power_w)


def _best_table(objectives: list[str], best: list[Any]) -> str:
    metrics = list(dict.fromkeys([OBJECTIVES[o] for o in objectives]
                                 + ["j_per_token", "latency_s_per_problem", "accuracy"]))
    rows = [[i + 1, *(c.metrics.get(m) for m in metrics), c.label]
            for i, c in enumerate(best[:20])]
    more = f"\n({len(best) - 20} more on the front)" if len(best) > 20 else ""
    return table(["#", *metrics, "design"], rows) + more


def _search_files(a: argparse.Namespace, objectives: list[str], best: list[Any],
                  cloud: Any, title: str, trials_csv: str | None = None) -> list[str]:
    from dse.search_files import candidate_row, csv_text, pareto_html, write_outputs

    if not a.out or not best:  # no feasible design: the caller says so (exit 4)
        return []
    files = {"best.toml": best[0].toml,
             "pareto.csv": csv_text([candidate_row(c) for c in best]),
             "pareto.html": pareto_html(objectives, best, cloud, title)}
    if trials_csv is not None:
        files["trials.csv"] = trials_csv
    return [str(p) for p in write_outputs(a.out, files, a.force)]


def _closed_form_line(best: Any) -> str:
    cf = best.metrics.get("closed_form")
    if not cf:
        return ""
    return (f"\n#1 by the accurate closed form (dse evaluate): {cf['latency_s_per_problem']:.4g} "
            f"s/problem, {cf['j_per_token']:.4g} J/token, accuracy {cf['accuracy']:.4g}%")


def _constraint_text(cons: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in cons.items()) or "none"


def _sweep_args(p: argparse.ArgumentParser) -> None:
    _search_args(p)


def _run_sweep(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.search import sweep

    space, objectives, cons = _search_setup(a, cat)
    show = sys.stderr.isatty() and not a.json

    def progress(f: float) -> None:
        if show:
            print(f"\rsweep: {100 * f:5.1f}%", end="", file=sys.stderr, flush=True)

    r = sweep(cat, space, objectives, cons, progress=progress)
    if show:
        print(file=sys.stderr)
    title = f"dse sweep over {space.name}: {', '.join(objectives)}"
    files = _search_files(a, objectives, r.pareto, r.points, title)
    payload = {"best": [c.to_dict() for c in r.best], "pareto": [c.to_dict() for c in r.pareto],
               "n_designs": r.n_designs, "n_feasible": r.n_feasible,
               "n_hardware": r.n_hardware, "seconds": r.seconds, "objectives": objectives,
               "constraints": r.constraints, "space": space.name,
               "infeasible_hardware": r.infeasible, "infeasible_examples": r.examples,
               "files": files}
    head = (f"swept {r.n_designs:,} designs ({r.n_hardware} hardware choices x "
            f"{r.n_designs // max(r.n_hardware, 1):,} knob settings) of space {space.name} in "
            f"{r.seconds:.2f} s; {r.n_feasible:,} feasible (constraints: "
            f"{_constraint_text(r.constraints)})")
    for k, v in sorted(r.infeasible.items()):
        head += f"\ninfeasible: {k}: {v} hardware choices, e.g. {r.examples[k]}"
    if not r.best:
        raise InfeasibleError(f"no feasible design among {r.n_designs:,} (constraints: "
                              f"{_constraint_text(r.constraints)}); relax the constraints")
    text = head + "\n" + _best_table(objectives, r.pareto) + _closed_form_line(r.best[0])
    if files:
        text += "\nwrote " + ", ".join(files)
    return payload, text


def _optimize_args(p: argparse.ArgumentParser) -> None:
    _search_args(p)
    p.add_argument("--trials", type=positive_int, default=300, metavar="N",
                   help="run until the study holds N completed trials (default 300); a "
                   "restarted or concurrent run shares the count")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="stop after S seconds")
    p.add_argument("--seed", type=nonneg_int, default=0, help="sampler seed (default 0)")
    p.add_argument("--storage", metavar="URL", help="Optuna storage URL (default "
                   "sqlite:///dse-studies.db in the working directory; postgresql://... to "
                   "share a study between machines)")
    p.add_argument("--study-name", metavar="NAME",
                   help="study to create or resume (default <space>-<objectives>)")


def _quiet_optuna() -> None:
    """Optuna logs every trial at INFO; the command prints its own progress and table."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


def _run_optimize(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.search import DEFAULT_STORAGE, load_study, optimize
    from dse.search_files import csv_text, trials_rows

    space, objectives, cons = _search_setup(a, cat)
    url = a.storage or DEFAULT_STORAGE
    if not a.json:
        where = f" ({Path(url[len('sqlite:///'):]).resolve()})" if url.startswith(
            "sqlite:///") else ""
        print(f"storage: {url}{where}", file=sys.stderr, flush=True)
    _quiet_optuna()
    # a resumed or shared study: each process samples its own designs (worker = its pid)
    r = optimize(cat, space, objectives, cons, trials=a.trials, timeout=a.timeout,
                 seed=a.seed, storage=url, study_name=a.study_name,
                 progress=sys.stderr.isatty() and not a.json, worker=os.getpid())
    study = load_study(url, r.study_name)
    trials = trials_rows(study)
    cloud: dict[str, list[float]] = {}
    for t in study.trials:
        if t.user_attrs.get("violation", 1.0) <= 0:
            for k, v in t.user_attrs.get("metrics", {}).items():
                cloud.setdefault(k, []).append(v)
    title = f"dse optimize {r.study_name}: {', '.join(objectives)}"
    files = _search_files(a, objectives, r.best, cloud, title, csv_text(trials))
    n_feasible = sum(1 for t in trials if t["feasible"])
    payload = {"best": [c.to_dict() for c in r.best], "n_trials": r.n_trials,
               "n_new_trials": r.n_new, "n_feasible_trials": n_feasible,
               "study_name": r.study_name, "storage": r.storage, "objectives": objectives,
               "constraints": r.constraints, "seconds": r.seconds, "files": files}
    head = (f"study {r.study_name} in {r.storage}: {r.n_trials} completed trials "
            f"({r.n_new} new, {n_feasible} feasible) in {r.seconds:.1f} s; constraints: "
            f"{_constraint_text(r.constraints)}")
    if not r.best:
        raise InfeasibleError(f"study {r.study_name}: no feasible design in {r.n_trials} "
                              f"trials (constraints: {_constraint_text(r.constraints)}); relax "
                              "the constraints or run more trials")
    text = head + "\n" + _best_table(objectives, r.best) + _closed_form_line(r.best[0])
    if files:
        text += "\nwrote " + ", ".join(files)
    return payload, text


def _studies_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--storage", metavar="URL",
                   help="Optuna storage URL (default sqlite:///dse-studies.db)")


def _run_studies(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.search import DEFAULT_STORAGE, list_studies

    url = a.storage or DEFAULT_STORAGE
    _quiet_optuna()
    studies = list_studies(url)
    rows = [[s["name"], s["n_complete"], s["n_trials"], "+".join(s["objectives"]),
             ", ".join(f"{v:.4g}" for v in s["best_values"]) if s["best_values"] else "-",
             s["space"], s["created"]] for s in studies]
    text = (table(["study", "completed", "trials", "objectives", "best", "space", "created"],
                  rows) if studies else f"no studies in {url}")
    return {"storage": url, "studies": studies}, text


# ---------------------------------------------------------------------------- the table

COMMANDS: list[Command] = [
    Command("catalog", "list boards, models, serving profiles or scenarios", _catalog_args,
            _run_catalog),
    Command("roofline", "per-token decode and prefill cost of a model on a device",
            _roofline_args, _run_roofline),
    Command("evaluate", "closed-form metrics of a system under each schedule", _evaluate_args,
            _run_evaluate),
    Command("simulate", "trace-driven simulation: latency distribution and timeline",
            _simulate_args, _run_simulate),
    Command("reproduce", "every number the HeteroReason paper reports beside the tool's",
            _reproduce_args, _run_reproduce),
    Command("sweep", "exhaustive vectorised search of a design space: exact optimum or front",
            _sweep_args, _run_sweep),
    Command("optimize", "Optuna search of a design space (resumable, shareable studies)",
            _optimize_args, _run_optimize),
    Command("studies", "list the Optuna studies in a storage with their best values",
            _studies_args, _run_studies),
    Command("export", "write a design's build and serving files (FPGA, vLLM, host) as a "
            "bundle", _export_args, _run_export),
]


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--catalog", action="append", default=[], metavar="DIR",
                        help="extra catalog directory (boards, models, scenarios); repeatable")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--debug", action="store_true", help="show tracebacks")
    p = argparse.ArgumentParser(prog="dse", description="hetero-dse: design-space exploration "
                                "for heterogeneous FPGA-GPU speculative reasoning")
    p.add_argument("--version", action="version", version=f"dse {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for c in COMMANDS:
        sp = sub.add_parser(c.name, help=c.help, description=c.help, parents=[common])
        c.add_args(sp)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cmd = next(c for c in COMMANDS if c.name == args.command)
    try:
        cat = Catalog.load(args.catalog)
        payload, text = cmd.run(args, cat)
    except DseError as e:
        if args.debug:
            raise
        print(f"dse {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except (OSError, ValueError) as e:
        if args.debug:
            raise
        print(f"dse {args.command}: error: {e}", file=sys.stderr)
        return 1
    try:
        if args.json:
            print(json.dumps(_jsonable(payload), indent=2, sort_keys=True))
        else:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `dse ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
