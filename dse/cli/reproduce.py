"""`dse reproduce`: every number the HeteroReason paper reports beside the tool's."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dse.cli.common import add_wide, refuse_overwriting_inputs, text_width, write_file
from dse.cli.layout import GAP, MIN_CELL, table_text, wrap
from dse.io.outputs import check_output_file
from dse.specs import Catalog


def reproduce_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    p.add_argument("--html", metavar="FILE", help="also write a plotly chart (HTML)")
    add_wide(p)


ROW_HEADERS = ["id", "paper", "tool [90% interval]", "within", "in interval", "label"]
JUDGE_HEADERS = ["id", "paper", "tool", "x tokens", "within"]


def id_width(width: int | None, rows: list[list[str]]) -> int | None:
    """The columns the paper rows' id takes: what the paper's value and the tool's (columns 1
    and 2) leave of `width`, so that the three stand side by side in the table's first part
    (a longer id wraps at its dots); None with --wide."""
    if width is None:
        return None
    beside = sum(len(GAP) + max(len(ROW_HEADERS[i]), *(len(r[i]) for r in rows))
                 for i in (1, 2))
    return max(width - beside, MIN_CELL)


def run_reproduce(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.paper import coverage, reproduce
    from dse.validation import accuracy, calibrate, gpu_cv, judge

    refuse_overwriting_inputs({"--markdown": a.markdown, "--html": a.html}, {},
                              catalogs=a.catalog)
    for flag, path in (("--markdown", a.markdown), ("--html", a.html)):
        if path:  # a bad path is refused before half a minute of computing
            check_output_file(flag, path)
    show = sys.stderr.isatty() and not a.json

    def progress(f: float) -> None:
        if show:
            print(f"\rreproduce: {100 * f:5.1f}%", end="", file=sys.stderr, flush=True)

    rs = coverage.paper_rows(cat, progress=progress)
    if show:
        print(file=sys.stderr)
    dev = calibrate.validation_rows(cat)
    summ: dict[str, Any] = dict(reproduce.summary(rs))
    summ["coverage"] = {"paper_rows": coverage.paper_coverage(rs).to_dict(),
                        "device_points": [c.to_dict() for c in coverage.device_coverage()]}
    cv = gpu_cv.load()
    judge_timing = judge.timing_rows(cat)
    if a.markdown:
        md = reproduce.markdown(rs, dev, reproduce.accuracy_cv_lines(),
                                reproduce.cross_validation_lines(cat),
                                coverage.markdown_section(rs))
        write_file(a.markdown, md)
    if a.html:
        from dse.views.paper import html

        page = html(rs)
        write_file(a.html, page)
    payload = {
        "rows": [r.to_dict() for r in rs],
        "summary": {**summ, "cross_validation": accuracy.summary_json(accuracy.load())},
        "accuracy_held_out": _held_out_json(),
        "width_cross_validation": _width_json(),
        "device_rows": [{"id": d.id, "description": d.description, "measured": d.measured,
                         "tool": d.predicted, "rel_error": d.rel_error, "within": d.within,
                         "label": d.label} for d in dev],
        "device_cross_validation": {"gpu": gpu_cv.to_json(gpu_cv.summarise(cv))},
        "target_judge": {"timing": [
            {"id": t.id, "description": t.description, "paper": [t.paper_low, t.paper_high],
             "tool": t.tool, "tool_widened": [t.tool_low, t.tool_high], "within": t.within,
             "calibrated": False} for t in judge_timing],
            "cross_validation": {k: v for k, v in judge.load().items()
                                 if k.startswith(("fit", "leave_one"))}},
    }
    rows = [[r.id, f"{r.paper_low:.4g}" if r.paper_low == r.paper_high
             else f"{r.paper_low:.4g}-{r.paper_high:.4g}", reproduce.tool_text(r),
             "yes" if r.within else "NO", {None: "", True: "yes", False: "NO"}[r.inside],
             r.label] for r in rs]
    judge_rows = [[t.id, f"{t.paper_low:.4g}" if t.paper_low == t.paper_high
                   else f"{t.paper_low:.4g}-{t.paper_high:.4g}", f"{t.tool:.3g}",
                   "" if t.tool_low == t.tool_high else f"{t.tool_low:.3g}-{t.tool_high:.3g}",
                   "yes" if t.within else "NO"] for t in judge_timing]
    pc = coverage.paper_coverage(rs)
    width = text_width(a)
    text = (table_text(ROW_HEADERS, rows, width=width, key_width=id_width(width, rows))
            + "\n\n"
            + wrap(f"{summ['within']}/{summ['rows']} within tolerance; fitted "
                   f"{summ['fitted_within']}/{summ['fitted']}, calibrated "
                   f"{summ['calibrated_within']}/{summ['calibrated']}, predicted "
                   f"{summ['predicted_within']}/{summ['predicted']}\n"
                   f"coverage: {pc.inside}/{pc.n} predicted rows ({pc.share:.0%}) inside the "
                   f"tool's 90% interval, median relative width {pc.median_rel_width:.1%}\n\n"
                   "the target judge beside SpecReason (every row predicted: no timing "
                   "parameter is fitted to SpecReason; stand-in models, docs/validation.md)",
                   width)
            + "\n" + table_text(JUDGE_HEADERS, judge_rows, width=width)
            + f"\n{sum(t.within for t in judge_timing)}/{len(judge_timing)} within")
    return payload, text


def _held_out_json() -> dict[str, Any]:
    """The held-out RSD rows' summary and per-pair breakdown (dse/data/accuracy_held_out.json,
    written by scripts/validate_accuracy.py)."""
    from dse.validation import accuracy_held_out

    doc = accuracy_held_out.load()
    return {"summary": doc["summary"], "by_pair": doc["by_pair"],
            "by_dataset": doc["by_dataset"], "generated_by": doc["generated_by"]}


def _width_json() -> dict[str, Any]:
    """The width model's fit, cross-validation and held-out summaries (dse/data/width_cv.json,
    written by scripts/calibrate_width.py)."""
    from dse.validation import width

    return width.summary_json(width.load())
