"""Designs side by side: one row per design of its headline metrics (with their 90%
intervals where the report has them) and its change against a reference design, and the rows
as CSV (the What-if and Compare pages' downloads).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from dse.engine.report import Report
from dse.scenario import SystemSpec
from dse.search.objectives import METRIC_TABLE
from dse.views.search import fmt


def _unit(m: str) -> str:
    return METRIC_TABLE[m].unit


# (report field, column label, unit); the search's metrics take METRIC_TABLE's units
HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("latency_s_per_problem", "latency per problem", _unit("latency_s_per_problem")),
    ("goodput_tokens_per_s", "goodput", _unit("goodput_tokens_per_s")),
    ("j_per_token", "energy per token", _unit("j_per_token")),
    ("energy_j_per_problem", "energy per problem", _unit("energy_j_per_problem")),
    ("accuracy", "accuracy", _unit("accuracy")),
    ("p_accept", "accept probability", ""),
    ("tokens_per_problem", "tokens per problem", _unit("tokens_per_problem")),
    ("backtracks_per_problem", "backtracks per problem", ""),
    ("speculation_stall_ratio", "speculation stall", ""),
    ("communication_share", "communication share", ""),
)


def metric_rows(reports: Mapping[str, Report]) -> list[dict[str, Any]]:
    """One row per design: its name, schedule, workload, every HEADLINE metric and, where the
    report carries a 90% interval, `<metric>_low` / `<metric>_high`."""
    rows = []
    for name, r in reports.items():
        row: dict[str, Any] = {"design": name, "system": r.system, "schedule": r.schedule,
                               "workload": r.workload}
        for m, _, _ in HEADLINE:
            v = getattr(r, m)
            row[m] = None if v is None else float(v)
            if m in r.intervals:
                row[f"{m}_low"], row[f"{m}_high"] = (float(x) for x in r.intervals[m])
        rows.append(row)
    return rows


def deltas(rows: Sequence[Mapping[str, Any]], reference: str) -> list[dict[str, Any]]:
    """Each row's relative change against the row named `reference` (x / ref - 1, for the
    HEADLINE metrics both have; accuracy as a difference in points), keyed `<metric>_delta`."""
    ref = next((r for r in rows if r["design"] == reference), None)
    if ref is None:
        raise KeyError(f"no design {reference!r} among {[r['design'] for r in rows]}")
    out = []
    for r in rows:
        d: dict[str, Any] = {"design": r["design"]}
        for m, _, _ in HEADLINE:
            a, b = r.get(m), ref.get(m)
            if a is None or b is None:
                d[f"{m}_delta"] = None
            elif m == "accuracy":
                d[f"{m}_delta"] = a - b
            else:
                d[f"{m}_delta"] = a / b - 1 if b else None
        out.append(d)
    return out


def rows_csv(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """Rows as CSV (the union of their keys, in first-seen order; empty cells for None)."""
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if r.get(k) is None else r[k] for k in cols})
    return buf.getvalue().encode()


def compare_table(rows: Sequence[Mapping[str, Any]], delta: Mapping[str, Mapping[str, Any]],
                  specs: Mapping[str, SystemSpec]) -> list[dict[str, str]]:
    """Display rows: each design's hardware and models, then every HEADLINE metric as
    `value [low-high] unit` and its delta against the reference (`+12.3%`, accuracy
    `+1.2 pts`), all as formatted text."""
    out = []
    for r in rows:
        s = specs[r["design"]]
        tp = f" x{s.target_tp}" if s.target_tp > 1 else ""
        row = {"design": r["design"], "schedule": r["schedule"], "workload": r["workload"],
               "draft": f"{s.draft_model} on {s.draft_device} ({s.draft_precision})",
               "PRM": f"{s.prm_model} on {s.prm_device} ({s.prm_precision})",
               "target": f"{s.target_model} on {s.target_device}{tp} ({s.target_precision})"}
        d = delta[r["design"]]
        for m, label, unit in HEADLINE:
            v = r.get(m)
            if v is None:
                row[label] = "n/a"
                continue
            text = fmt(v)
            if f"{m}_low" in r:
                text += f" [{fmt(r[f'{m}_low'])}-{fmt(r[f'{m}_high'])}]"
            row[label] = f"{text} {unit}".rstrip()
            dv = d.get(f"{m}_delta")
            if dv is not None:
                row[f"Δ {label}"] = f"{dv:+.1f} pts" if m == "accuracy" else f"{dv:+.1%}"
        out.append(row)
    return out


def side_by_side(rows: Sequence[Mapping[str, str]], key: str = "design"
                 ) -> list[dict[str, str]]:
    """Display rows turned for reading across: one row per field (the union of the rows'
    fields in first-seen order, `key` left out), one column per design named by its `key`;
    a field a design lacks is empty."""
    fields: list[str] = []
    for r in rows:
        fields += [f for f in r if f != key and f not in fields]
    return [{"": f, **{str(r[key]): r.get(f, "") for r in rows}} for f in fields]
