"""`dse reproduce`: every number the HeteroReason paper reports beside the tool's."""

from __future__ import annotations

import argparse
from typing import Any

from dse.cli.common import refuse_overwriting_inputs, table, write_file
from dse.specs import Catalog


def reproduce_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    p.add_argument("--html", metavar="FILE", help="also write a plotly chart (HTML)")


def run_reproduce(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse import calibrate, reproduce
    from dse.validation import accuracy, gpu_cv

    refuse_overwriting_inputs({"--markdown": a.markdown, "--html": a.html}, {},
                              catalogs=a.catalog)
    rs = reproduce.rows(cat)
    dev = calibrate.validation_rows(cat)
    summ = reproduce.summary(rs)
    cv = gpu_cv.load()
    if a.markdown:
        md = reproduce.markdown(rs, dev, reproduce.accuracy_cv_lines(),
                                reproduce.cross_validation_lines(cat))
        write_file(a.markdown, md)
    if a.html:
        page = reproduce.html(rs)
        write_file(a.html, page)
    payload = {
        "rows": [r.to_dict() for r in rs],
        "summary": {**summ, "cross_validation": accuracy.summary_json(accuracy.load())},
        "device_rows": [{"id": d.id, "description": d.description, "measured": d.measured,
                         "tool": d.predicted, "rel_error": d.rel_error, "within": d.within,
                         "fitted": d.fitted} for d in dev],
        "device_cross_validation": {"gpu": gpu_cv.to_json(gpu_cv.summarise(cv))},
    }
    rows = [[r.id, f"{r.paper_low:.4g}" if r.paper_low == r.paper_high
             else f"{r.paper_low:.4g}-{r.paper_high:.4g}", r.tool, "yes" if r.within else "NO",
             "yes" if r.calibrated else ""] for r in rs]
    text = (table(["id", "paper", "tool", "within", "calibrated"], rows) + "\n\n"
            + f"{summ['within']}/{summ['rows']} within tolerance; calibrated "
            f"{summ['calibrated_within']}/{summ['calibrated']}, predicted "
            f"{summ['predicted_within']}/{summ['predicted']}")
    return payload, text
