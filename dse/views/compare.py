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
from dse.search.objectives import METRIC_TABLE
from dse.specs.scenario import SystemSpec
from dse.views.search import fmt, workflow_text


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


# The metrics whose difference against the reference can carry a joint 90% interval
# (dse.uncertainty.joint; views.alternative's margins)
JOINT_METRICS = ("latency_s_per_problem", "j_per_token", "accuracy")


def joint_csv_columns(joint: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """One design's joint intervals as CSV columns `<metric>_diff_low`, `<metric>_diff_high`."""
    return {f"{m}_diff_{side}": float(v) for m, iv in joint.items()
            for side, v in zip(("low", "high"), iv, strict=True)}


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
    HEADLINE metrics both have; accuracy as a difference in points), keyed `<metric>_delta`,
    and for JOINT_METRICS the absolute difference x - ref, keyed `<metric>_diff`."""
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
            if m in JOINT_METRICS:
                d[f"{m}_diff"] = None if a is None or b is None else a - b
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


def role_text(s: SystemSpec, role: str) -> str:
    """A role's placement in words: model on device (precision), "none" for a role the
    design does not run, "the target judges" for a target verifier."""
    if s.workflow_name == "target-only" and role != "target":
        return "none (target alone)"
    if s.is_width and role == "draft":
        return f"none ({s.workflow}: N = {s.samples} samples of the target)"
    if s.is_width and role == "prm" and not s.prm_model:
        return "none (majority voting)"
    if role == "prm" and s.verifier_name == "target":
        return "none (the target judges)"
    tp = getattr(s, f"{role}_tp", None) or 1
    x = f" x{tp}" if tp > 1 else ""
    return (f"{getattr(s, f'{role}_model')} on {getattr(s, f'{role}_device')}{x} "
            f"({getattr(s, f'{role}_precision')})")


def compare_table(rows: Sequence[Mapping[str, Any]], delta: Mapping[str, Mapping[str, Any]],
                  specs: Mapping[str, SystemSpec],
                  joint: Mapping[str, Mapping[str, Sequence[float]]] | None = None
                  ) -> list[dict[str, str]]:
    """Display rows: each design's workflow, hardware and models (a role it does not run
    reads "none"), then every HEADLINE metric as
    `value [low-high] unit` and its delta against the reference (`+12.3%`, accuracy
    `+1.2 pts`), all as formatted text. `joint` (design -> metric -> the joint 90% interval
    of design - reference, dse.uncertainty.joint) adds, for the designs it names, the
    difference with that interval and whether 0 lies outside it."""
    out = []
    for r in rows:
        s = specs[r["design"]]
        row = {"design": r["design"], "workflow": workflow_text(s),
               "schedule": r["schedule"], "workload": r["workload"],
               **{label: role_text(s, role) for role, label in (("draft", "draft"),
                                                                ("prm", "PRM"),
                                                                ("target", "target"))}}
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
        for m, iv in (joint or {}).get(r["design"], {}).items():
            label, unit = next((x[1], x[2]) for x in HEADLINE if x[0] == m)
            diff = d.get(f"{m}_diff")
            unit = "pts" if m == "accuracy" else unit
            row[f"Δ {label}, joint 90%"] = (
                f"{'–' if diff is None else f'{diff:+.4g}'} [{iv[0]:+.4g}, {iv[1]:+.4g}] "
                f"{unit}: 0 {'outside' if not iv[0] <= 0 <= iv[1] else 'inside'}")
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
