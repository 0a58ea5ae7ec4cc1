"""The accuracy model judged on published RSD rows no fit used (dse/data/rsd_published.toml
`[[held_out]]`), predicted as a user would get them: `dse.api.evaluate` of the row's design
(RSD's base system with the row's draft, PRM and target, forward only at the row's threshold)
on the catalog's workload, with its 90% interval (pure: scripts/validate_accuracy.py does the
I/O and writes dse/data/accuracy_held_out.json).

Usable rows: method rsd, a numeric accept threshold (rows whose threshold was tuned per dataset
are skipped: the value is not published), a dataset the catalog has a workload for, models and
a PRM the catalog has (a PRM whose size the source does not state is skipped) and a solo
accuracy of both models on that workload. Every other
row is listed with the reason. The tool predicts from the catalog's solo accuracies, not the
row's own single-model columns: that is what a user gets, and the gap between the two is part
of what the rows judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np

from dse.specs import Catalog
from dse.validation.accuracy import RSD_BASE_SYSTEM, rsd_published

SCHEMA_VERSION = 1
GENERATED_BY = "scripts/validate_accuracy.py"
FILE = "accuracy_held_out.json"


def _catalog_name(cat: Catalog, published: str) -> str | None:
    name = published.lower()
    return name if name in set(cat.names("model")) else None


def usable(cat: Catalog, doc: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                           list[dict[str, str]]]:
    """(usable held-out rsd rows with their catalog names, skipped rows with the reason)."""
    workloads = set(cat.names("workload"))
    rows, skipped = [], []
    for r in doc["held_out"]:
        if r["method"] != "rsd":
            continue
        why = ""
        if not isinstance(r.get("accept_threshold"), (int, float)):
            why = f"threshold {r.get('accept_threshold')!r} (tuned, value not published)"
        elif r["dataset"] not in workloads:
            why = f"no workload for dataset {r['dataset']}"
        names = {k: _catalog_name(cat, r[k]) for k in ("draft", "target", "prm")}
        if not why and None in names.values():
            missing = [r[k] for k, v in names.items() if v is None]
            why = f"not in the catalog: {', '.join(missing)}"
        if not why:
            w = cat.workload(r["dataset"])
            lacking = [names[k] for k in ("draft", "target") if names[k] not in w.accuracy]
            if lacking:
                why = f"no solo accuracy on {r['dataset']} for {', '.join(map(str, lacking))}"
        if why:
            skipped.append({"id": r["id"], "reason": why})
            continue
        rows.append({**r, **{f"{k}_model": v for k, v in names.items()}})
    return rows, skipped


def predict(cat: Catalog, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each row's prediction and 90% interval by dse.api.evaluate, beside the measurement."""
    from dse import api

    out = []
    for r in rows:
        t = float(r["accept_threshold"])
        rep = api.evaluate(api.load_design(RSD_BASE_SYSTEM, catalog=cat, schedule="rsd",
                                           overrides={"draft_model": r["draft_model"],
                                                      "target_model": r["target_model"],
                                                      "prm_model": r["prm_model"],
                                                      "accept_threshold": t,
                                                      "backtrack_threshold": t},
                                           check=False),
                           r["dataset"], catalog=cat)
        lo, hi = rep.intervals["accuracy"]
        acc = float(rep.accuracy if rep.accuracy is not None else "nan")
        status = rep.provenance.get("accuracy", {}).get("status", "")
        out.append({"id": r["id"], "pair": f"{r['draft_model']} -> {r['target_model']}",
                    "prm": r["prm_model"], "dataset": r["dataset"], "threshold": t,
                    "n_problems": int(r["n_problems"]), "measured": float(r["rsd_pct"]),
                    "predicted": round(acc, 4),
                    "interval": [round(float(lo), 4), round(float(hi), 4)],
                    "error_points": round(acc - float(r["rsd_pct"]), 4),
                    "status": status})
    return out


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Within 3 points, inside the 90% interval, median half-width, median and max error."""
    if not rows:
        return {"n": 0}
    e = np.abs([r["error_points"] for r in rows])
    inside = [r["interval"][0] <= r["measured"] <= r["interval"][1] for r in rows]
    half = [(r["interval"][1] - r["interval"][0]) / 2 for r in rows]
    return {"n": len(rows), "within_3_points": round(float(np.mean(e <= 3.0)), 4),
            "coverage_90": round(float(np.mean(inside)), 4),
            "median_half_width": round(float(np.median(half)), 4),
            "median_abs_error": round(float(np.median(e)), 4),
            "max_abs_error": round(float(e.max()), 4)}


def by_group(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(str(r[key]), []).append(r)
    return {g: summary(v) for g, v in sorted(groups.items())}


def document(cat: Catalog) -> dict[str, Any]:
    rows, skipped = usable(cat, rsd_published())
    pred = predict(cat, rows)
    return {"schema_version": SCHEMA_VERSION, "generated_by": GENERATED_BY,
            "summary": summary(pred), "by_pair": by_group(pred, "pair"),
            "by_dataset": by_group(pred, "dataset"), "rows": pred, "skipped": skipped}


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


def load() -> dict[str, Any]:
    text = resources.files("dse.data").joinpath(FILE).read_text("utf-8")
    doc: dict[str, Any] = json.loads(text)
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"dse/data/{FILE}: schema_version {doc.get('schema_version')!r}, "
                         f"expected {SCHEMA_VERSION}; rerun {GENERATED_BY}")
    return doc


def markdown_section(doc: Mapping[str, Any]) -> list[str]:
    """docs/validation.md's held-out RSD table."""
    s = doc["summary"]
    out = ["### Held-out RSD rows", "",
           f"Published RSD accuracies (arXiv:2501.19324) that no fit used, "
           f"{s['n']} rows with a published threshold on the catalog's workloads "
           f"({len(doc['skipped'])} others skipped: tuned thresholds, datasets or models "
           "outside the catalog), predicted by `dse evaluate` as a user gets them "
           f"({GENERATED_BY}): **{s['within_3_points']:.0%} within 3 points, "
           f"{s['coverage_90']:.0%} inside the 90% interval at a median half-width of "
           f"{s['median_half_width']:.1f} points** (median error {s['median_abs_error']:.1f}, "
           f"largest {s['max_abs_error']:.1f}).", "",
           "| pair | rows | within 3 pts | in 90% interval | median half-width | "
           "median abs error |", "|---|---|---|---|---|---|"]
    for g, v in doc["by_pair"].items():
        out.append(f"| {g} | {v['n']} | {v['within_3_points']:.0%} | {v['coverage_90']:.0%} "
                   f"| {v['median_half_width']:.1f} | {v['median_abs_error']:.1f} |")
    out.append("")
    return out
