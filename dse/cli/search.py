"""`dse sweep` (exhaustive vectorised search), `dse optimize` (Optuna studies) and
`dse studies` (a storage's studies), with the options and output files they share."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from dse.cli.common import (
    add_wide,
    confidence_type,
    margin_text,
    positive_float,
    positive_int,
    quiet_optuna,
    refuse_overwriting_inputs,
    seed_type,
    table,
    text_width,
    with_interval,
)
from dse.cli.layout import wrap, wrap_line
from dse.errors import InfeasibleError, UsageError
from dse.search.objectives import CONSTRAINT_TABLE, OBJECTIVES, Constraint, check_objectives
from dse.specs import Catalog


def bound_type(c: Constraint) -> Callable[[str], float]:
    """An argparse type for a constraint's bound: a finite number in the constraint's range."""

    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {s[:40]!r}") from None
        try:
            return c.check(v)  # the constraint's own range check
        except UsageError:
            raise argparse.ArgumentTypeError(f"must be a finite number {c.range_text}, got "
                                             f"{s[:40]!r}") from None

    return parse


def _search_args(p: argparse.ArgumentParser) -> None:

    p.add_argument("--objective", action="append", choices=list(OBJECTIVES), metavar="OBJ",
                   help="j_per_token, latency, goodput, accuracy or cost ($/Mtoken); repeat "
                   "for a Pareto front (default j_per_token)")
    p.add_argument("--space", metavar="FILE", help="a design-space TOML (default: the shipped "
                   "scenarios/spaces/default.toml)")
    for c in CONSTRAINT_TABLE.values():  # one flag per declared constraint
        p.add_argument(c.flag, type=bound_type(c), metavar=c.metavar, help=c.help, dest=c.name)
    p.add_argument("--confidence", type=confidence_type, default=0.9, metavar="C",
                   help="check constraints at the pessimistic end of each metric's interval: "
                   "0.9 (default) at the end of the 90%% interval, 0.5 at the central values; "
                   "designs are ranked by their central values")
    p.add_argument("--out", metavar="DIR", help="write best.toml, pareto.csv, pareto.html "
                   "(and trials.csv for optimize) into DIR")
    p.add_argument("--force", action="store_true", help="replace files already in --out")
    p.add_argument("--measured-only", action="store_true",
                   help="only hardware whose every device has a published measurement (no "
                   "projection-only board)")
    from dse.cli.search_load import load_args

    load_args(p)
    add_wide(p)


SEARCH_FILES = ("best.toml", "pareto.csv", "pareto.html")  # what --out receives


def _search_setup(a: argparse.Namespace, cat: Catalog, *, names: tuple[str, ...] = SEARCH_FILES
                  ) -> tuple[Any, list[str], Any]:
    """The space, objectives and constraints; every output checked before any computing."""
    from dse.io.outputs import check_output_dir
    from dse.search import Constraints, load_space

    refuse_overwriting_inputs({"--out": a.out}, {"--space": a.space}, catalogs=a.catalog,
                              dir_outputs=("--out",))
    if a.out:
        check_output_dir("--out", a.out, force=a.force, names=names)
    space = load_space(cat, a.space)
    for i, o in enumerate(a.objective or ()):
        if o in a.objective[:i]:
            raise UsageError(f"--objective {o}: given twice; give each objective once")
    objectives = check_objectives(a.objective or ["j_per_token"])
    return space, objectives, Constraints(**{k: getattr(a, k) for k in CONSTRAINT_TABLE})


def design_roles(system: Any) -> str:
    """A design's models and devices in a few words: the draft's and the target's (the device
    named once when both are the same kind; xN for a target split over N GPUs), e.g.
    `qwen2.5-0.5b-instruct @ u280 -> qwen2.5-math-7b-instruct @ rtx-3090`; the target alone:
    `qwen2.5-math-1.5b-instruct @ a100-80gb-pcie`. Candidate.label has the whole design."""
    tp = f" x{system.target_tp}" if system.target_tp > 1 else ""
    target = f"{system.target_model} @ {system.target_device}{tp}"
    if system.is_width:  # e.g. `best-of-n x8: policy @ gpu + prm @ gpu`
        prm = f" + {system.prm_model} @ {system.prm_device}" if system.prm_model else ""
        return f"{system.workflow} x{system.samples}: {target}{prm}"
    if system.workflow_name == "target-only" or system.draft_model is None:
        return target
    if system.draft_device == system.target_device and not tp:
        return f"{system.draft_model} -> {target}"
    return f"{system.draft_model} @ {system.draft_device} -> {target}"


def full_designs(entries: list[tuple[str, str]], width: int) -> str:
    """The designs a table names shortly, in full: one entry a line (`#1 draft ... | prm ...`),
    each wrapped to `width` (under its text after a short key like `#1`)."""
    lines = ["the designs in full (--wide puts them in the table):"]
    for key, label in entries:
        lines += wrap_line(f"{key} {label}", width, hang=len(key) + 1 if len(key) < 5 else 2)
    return "\n".join(lines)


def _best_table(cat: Catalog, objectives: list[str], best: list[Any], width: int | None
                ) -> str:
    """The shown designs with their metrics; within a width, each design in a few words (its
    family, draft and target), then in full under the table."""
    from dse.search.optuna_study import trial_family

    metrics = list(dict.fromkeys([OBJECTIVES[o] for o in objectives]
                                 + ["j_per_token", "latency_s_per_problem", "accuracy"]))
    shown = best[:20]
    rows = [[i + 1, *(with_interval(c.metrics.get(m), c.intervals.get(m)) for m in metrics),
             c.label if width is None else
             f"{trial_family(cat, c)}: {design_roles(c.design.system)}"]
            for i, c in enumerate(shown)]
    more = f"\n({len(best) - 20} more on the front)" if len(best) > 20 else ""
    text = table(["#", *metrics, "design"], rows, width=width) + more
    if width is not None:
        text += "\n" + full_designs([(f"#{i + 1}", c.label) for i, c in enumerate(shown)],
                                    width)
    return text


def _ties_text(ties: list[Any]) -> str:
    """The line naming the shown designs that cannot be told apart at 90% ("" if none)."""
    from dse.search.families import ties_sentence

    line = ties_sentence(ties)
    return f"\n{line}" if line else ""


def _search_files(a: argparse.Namespace, objectives: list[str], best: list[Any],
                  cloud: Any, title: str, trials_csv: str | None = None) -> list[str]:
    from dse.search.files import candidate_row, csv_text, pareto_html, write_outputs

    if not a.out or not best:  # no feasible design: the caller says so (exit 4)
        return []
    files = {"best.toml": best[0].toml,
             "pareto.csv": csv_text([candidate_row(c) for c in best]),
             "pareto.html": pareto_html(objectives, best, cloud, title)}
    if trials_csv is not None:
        files["trials.csv"] = trials_csv
    return [str(p) for p in write_outputs(a.out, files, a.force)]


SHOWN_NOTE = ("\nevery figure: the accurate closed form with its 90% interval (as dse evaluate); "
              "the mean-value model only screened and ranked the grid (--json: "
              "mean_value_diagnostic); one problem at a time (batch 1, the paper's setting): "
              "for a service at a load, dse serve")


FAMILY_LABELS = {"j_per_token": "J/token", "latency_s_per_problem": "s/problem",
                 "accuracy": "accuracy pts"}


def _families_text(objectives: list[str], fams: list[Any], width: int | None) -> str:
    """Each family's best beside the winner (accurate closed form), its margin against it with
    the joint 90% interval of the difference, and a line when the target alone wins; within a
    width, each design in a few words, then in full under the table."""
    from dse.search.families import (
        idle_notes,
        nearest_notes,
        no_speculation_wins,
        verdict_scope,
    )
    from dse.search.objectives import direction

    if not fams:
        return ""
    obj = OBJECTIVES[objectives[0]]
    rows = []
    notes = []
    for f in fams:
        c = f.candidate
        if c is None:
            rows.append([f.family, "-", "-", "-", "-", "-", "-", f.note])
            continue
        cf, iv = c.metrics, c.intervals

        def val(m: str, cf: dict[str, Any] = cf, iv: dict[str, Any] = iv) -> Any:
            return with_interval(cf.get(m), iv.get(m)) if m in cf else "-"

        margin = margin_text(f, obj, FAMILY_LABELS.get(obj, obj))
        pa = cf.get("p_accept")
        rows.append([f.family, val("j_per_token"), val("latency_s_per_problem"),
                     val("accuracy"), "-" if pa is None else f"{pa:.3g}",
                     "-" if pa is None else f"{1 - pa:.0%}", margin,
                     c.label if width is None else design_roles(c.design.system)])
        if f.evidence:
            proj = [e for e in f.evidence if "projection" in e]
            extra = [e.split(":")[0] for e in f.evidence if e.endswith(": extrapolated")]
            notes.append(f"evidence ({f.family}): " + "; ".join(
                [*proj, *(["extrapolated: " + ", ".join(extra)] if extra else [])]))
    out = ("\nbest of each family (accurate closed form, [low-high]: 90% intervals; margin: "
           "family - #1 on " + objectives[0] + ", [joint 90% interval of the difference])\n"
           + table(["family", "J/token", "latency s", "accuracy %", "p_accept",
                    "target steps", "margin vs #1", "design"], rows, width=width))
    if width is not None:
        out += "\n" + full_designs([(f"{f.family}:", f.candidate.label) for f in fams
                                    if f.candidate is not None], width)
    if no_speculation_wins(fams, obj, direction(objectives[0])):
        what = ("speculative or width" if any(f.family == "width" for f in fams)
                else "speculative")
        out += (f"\nNo {what} design beats the best target-only design (the target model "
                f"alone) on {objectives[0]} {verdict_scope(fams)}.")
    notes = idle_notes(fams, objectives[0]) + nearest_notes(fams) + notes
    return out + "".join(f"\n{n}" for n in notes)


def _wrote_text(files: list[str]) -> str:
    """The files written, a path a line, whole (never wrapped)."""
    return f"\nwrote {len(files)} files:" + "".join(f"\n  {f}" for f in files) if files else ""


def _constraint_text(cons: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in cons.items()) or "none"


def _confidence_text(confidence: float) -> str:
    if confidence <= 0.5:
        return "constraints checked at central values (--confidence 0.5)"
    return (f"constraints checked at the pessimistic end of each metric's interval "
            f"(--confidence {confidence:g}"
            + ("" if confidence != 0.9 else ": the end of the 90% interval")
            + "); ranked by central values; [low-high]: 90% intervals")


def sweep_args(p: argparse.ArgumentParser) -> None:
    _search_args(p)
    p.add_argument("--processes", type=positive_int, default=None, metavar="N",
                   help="processes sharing the hardware choices (default: one per CPU; "
                        "the result does not depend on it)")


def run_sweep(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.cli.search_load import load_of
    from dse.search import sweep
    from dse.search.exhaustive import default_processes

    space, objectives, cons = _search_setup(a, cat)
    ld = load_of(a, cat, space, objectives)
    show = sys.stderr.isatty() and not a.json

    def progress(f: float) -> None:
        if show:
            print(f"\rsweep: {100 * f:5.1f}%", end="", file=sys.stderr, flush=True)

    r = sweep(cat, space, objectives, cons, progress=progress, confidence=a.confidence,
              measured_only=a.measured_only,
              processes=a.processes if a.processes is not None else default_processes(),
              pool=ld is not None, families=ld is None, reevaluate=ld is None)
    if show:
        print(file=sys.stderr)
    title = f"dse sweep over {space.name}: {', '.join(objectives)}"
    # at a load, --out gets the design the search at the load chose (_at_load)
    files = _search_files(a, objectives, r.pareto, r.points, title) if ld is None else []
    payload = {"best": [c.to_dict() for c in r.best], "pareto": [c.to_dict() for c in r.pareto],
               "n_designs": r.n_designs, "n_feasible": r.n_feasible,
               "n_hardware": r.n_hardware, "seconds": r.seconds, "objectives": objectives,
               "constraints": r.constraints, "confidence": r.confidence, "space": space.name,
               "infeasible_hardware": r.infeasible, "infeasible_examples": r.examples,
               "files": files}
    head = (f"swept {r.n_designs:,} designs ({r.n_hardware:,} hardware choices, each with the "
            f"knob settings it can run) of space {space.name} in "
            f"{r.seconds:.2f} s; {r.n_feasible:,} feasible (constraints: "
            f"{_constraint_text(r.constraints)})\n{_confidence_text(r.confidence)}")
    for k, v in sorted(r.infeasible.items()):
        head += f"\ninfeasible: {k}: {v} hardware choices, e.g. {r.examples[k]}"
    if not r.best:
        raise InfeasibleError(f"no feasible design among {r.n_designs:,} (constraints: "
                              f"{_constraint_text(r.constraints)}); relax the constraints")
    payload |= _families_payload(r)
    width = text_width(a)
    if ld is not None:
        from dse.search.at_load import search_at_load

        res = search_at_load(cat, space, objectives[0], r.pool, ld)
        return _at_load(res, payload, head, width, (a, title, None))
    return payload, _single_stream_text(cat, objectives, r.pareto, r, head, width, files)


def _families_payload(r: Any) -> dict[str, Any]:
    """A search's by-family answer for --json (a sweep's or a study's result)."""
    return {"by_family": [f.to_dict() for f in r.by_family], "measured_only": r.measured_only,
            "ties": [t.to_dict() for t in r.ties]}


def _single_stream_text(cat: Catalog, objectives: list[str], shown: list[Any], r: Any,
                        head: str, width: int | None, files: list[str]) -> str:
    """A search's answer one problem at a time: its head, the shown designs, the front's ties
    and each family's best with its margin."""
    text = (head + "\n" + _best_table(cat, objectives, shown, width) + _ties_text(r.ties)
            + SHOWN_NOTE + _families_text(objectives, r.by_family, width))
    return wrap(text, width) + _wrote_text(files)


def _at_load(res: Any, payload: dict[str, Any], head: str, width: int | None,
             out: tuple[argparse.Namespace, str, str | None]) -> tuple[Any, str]:
    """The search's answer at the load (`res`, dse.search.at_load's): its payload replaces
    the single-stream best and by_family (kept under single_stream_best); `out` (the
    arguments, the plot's title, a study's trials.csv): --out's files are the search at the
    load's (dse.search.served_design.load_files: best.toml the design it chose, with its
    [serving] table)."""
    from dse import __version__
    from dse.cli.search_load import load_payload, load_text, no_design
    from dse.search.files import write_outputs
    from dse.search.served_design import load_files

    if not res.ranked:
        raise InfeasibleError(no_design(res))
    a, title, trials_csv = out
    files: list[str] = []
    if a.out:
        texts = load_files(res, title, __version__)
        if trials_csv is not None:
            texts["trials.csv"] = trials_csv
        files = [str(p) for p in write_outputs(a.out, texts, a.force)]
    payload["files"] = files
    payload["single_stream_best"] = payload.pop("best")
    payload.pop("pareto", None)
    payload.pop("ties", None)
    payload |= load_payload(res)
    return payload, wrap(load_text(res, width, head), width) + _wrote_text(files)


def optimize_args(p: argparse.ArgumentParser) -> None:
    _search_args(p)
    p.add_argument("--trials", type=positive_int, default=300, metavar="N",
                   help="run until the study holds N completed trials (default 300); a "
                   "restarted or concurrent run shares the count")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="stop after S seconds")
    p.add_argument("--seed", type=seed_type, default=0, help="sampler seed (default 0)")
    p.add_argument("--storage", metavar="URL", help="Optuna storage URL (default "
                   "sqlite:///dse-studies.db in the working directory; postgresql://... to "
                   "share a study between machines; `memory`: a study kept in memory, about 5x "
                   "faster, gone when the command ends: no resume, no sharing)")
    p.add_argument("--study-name", metavar="NAME",
                   help="study to create or resume (default <space>-<objectives>)")


def run_optimize(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.io.outputs import check_storage
    from dse.search import DEFAULT_STORAGE, optimize
    from dse.search.files import csv_text, trials_rows
    from dse.search.storage import MEMORY_STORAGE

    if a.study_name is not None and not a.study_name.strip():
        raise UsageError("--study-name: an empty name; give a name, or leave the flag out for "
                         "the default (<space>-<objectives>)")
    url = a.storage if a.storage is not None else DEFAULT_STORAGE
    memory = url == MEMORY_STORAGE
    if not memory:
        check_storage("--storage", url)
    from dse.cli.search_load import load_of

    space, objectives, cons = _search_setup(a, cat, names=(*SEARCH_FILES, "trials.csv"))
    ld = load_of(a, cat, space, objectives)
    if not a.json:
        where = f" ({Path(url[len('sqlite:///'):]).resolve()})" if url.startswith(
            "sqlite:///") else ""
        if memory:
            where = " (nothing is saved: the study ends with this command)"
        print(wrap(f"storage: {url}{where}", text_width(a)), file=sys.stderr, flush=True)
    quiet_optuna()
    from dse.search.background import Background

    # at a load, the target-only and width designs are swept and served at the load on
    # another CPU while the study runs
    with (Background(lambda: _pool_at_load(cat, space, objectives, cons, a, ld))
          if ld is not None else nullcontext()) as swept:
        # a resumed or shared study: each process samples its own designs (worker = its pid)
        r = optimize(cat, space, objectives, cons, trials=a.trials, timeout=a.timeout,
                     seed=a.seed, storage=None if memory else url, study_name=a.study_name,
                     progress=sys.stderr.isatty() and not a.json, worker=os.getpid(),
                     confidence=a.confidence, measured_only=a.measured_only,
                     families=ld is None, reevaluate=ld is None)
        study = r.study  # the study as its run ended (its storage stays open)
        trials = trials_rows(study)
        cloud: dict[str, list[float]] = {}
        for t in study.trials:
            if t.user_attrs.get("violation", 1.0) <= 0:
                for k, v in t.user_attrs.get("metrics", {}).items():
                    cloud.setdefault(k, []).append(v)
        title = f"dse optimize {r.study_name}: {', '.join(objectives)}"
        files = (_search_files(a, objectives, r.best, cloud, title, csv_text(trials))
                 if ld is None else [])
        n_feasible = sum(1 for t in trials if t["feasible"])
        payload = {"best": [c.to_dict() for c in r.best], "n_trials": r.n_trials,
                   "n_new_trials": r.n_new, "n_feasible_trials": n_feasible,
                   "study_name": r.study_name, "storage": r.storage, "objectives": objectives,
                   "constraints": r.constraints, "confidence": r.confidence,
                   "seconds": r.seconds, "files": files}
        where = "memory (not saved)" if memory else r.storage
        head = (f"study {r.study_name} in {where}: {r.n_trials} completed trials "
                f"({r.n_new} new, {n_feasible} feasible) in {r.seconds:.1f} s; constraints: "
                f"{_constraint_text(r.constraints)}\n{_confidence_text(r.confidence)}")
        if not r.best:
            from dse.search.optuna_study import infeasible_summary

            why = (infeasible_summary(study, r.constraints, r.confidence)
                   or f"constraints: {_constraint_text(r.constraints)}")
            raise InfeasibleError(f"study {r.study_name}: no feasible design in {r.n_trials} "
                                  f"trials: {why}; relax the constraints or run more trials")
        payload |= _families_payload(r)
        width = text_width(a)
        if ld is not None:
            from dse.search.at_load import combine, serve_pool, study_pool

            assert swept is not None
            part = swept.result()
            mine = serve_pool(cat, space, objectives[0], study_pool(cat, space, study, []), ld)
            res = combine(ld, objectives[0], [*([] if part is None else [part]), mine])
            return _at_load(res, payload, head, width, (a, title, csv_text(trials)))
        return payload, _single_stream_text(cat, objectives, r.best, r, head, width, files)


def _pool_at_load(cat: Catalog, space: Any, objectives: list[str], cons: Any,
                  a: argparse.Namespace, ld: Any) -> Any:
    """`_pool_sweep`'s designs served at the load (dse.search.at_load.serve_pool: their
    families, target-only, token-speculative and width, are none of the study's, so the
    combined answer is one pass's); None where the space has none."""
    from dse.search.at_load import serve_pool

    sub = _pool_sweep(cat, space, objectives, cons, a)
    return None if sub is None else serve_pool(cat, space, objectives[0], sub.pool, ld)


def _pool_sweep(cat: Catalog, space: Any, objectives: list[str], cons: Any,
                a: argparse.Namespace) -> Any:
    """The target-only and width arrangements swept for a study at a load (as
    `study_families` weighs them: a study rarely reaches every width design; each family's
    best on each target placement joins the study's own in `study_pool`), on the CPUs the
    study leaves free; None where the space has none."""
    from dataclasses import replace

    from dse.search import sweep
    from dse.search.exhaustive import default_processes

    arrs = tuple(x for x in space.arrangements if x.workflow != "speculative")
    if not arrs:
        return None
    return sweep(cat, replace(space, arrangements=arrs), objectives[:1], cons,
                 confidence=a.confidence, measured_only=a.measured_only, families=False,
                 pool=True, reevaluate=False, processes=max(1, default_processes() - 1))


def studies_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--storage", metavar="URL",
                   help="Optuna storage URL (default sqlite:///dse-studies.db)")
    add_wide(p)


def run_studies(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.search import DEFAULT_STORAGE, list_studies

    url = a.storage or DEFAULT_STORAGE
    quiet_optuna()
    studies = list_studies(url)
    rows = [[s["name"], s["n_complete"], s["n_trials"], "+".join(s["objectives"]),
             ", ".join(f"{v:.4g}" for v in s["best_values"]) if s["best_values"] else "-",
             s["space"], s["created"]] for s in studies]
    text = (table(["study", "completed", "trials", "objectives", "best", "space", "created"],
                  rows, width=text_width(a)) if studies else f"no studies in {url}")
    return {"storage": url, "studies": studies}, wrap(text, text_width(a))
