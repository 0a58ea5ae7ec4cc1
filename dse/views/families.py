"""The Design space page's families table: each family's best design (target-only,
gpu-speculative, fpga-speculative: dse.search.families) beside the search's winner, by the
accurate closed form with its 90% intervals, its accept probability and the share of steps
the target writes (1 - p_accept: every step of the target alone, each rejected step of a
speculative design), its margin against the winner with the joint 90% interval of the
difference and whether 0 lies outside it, and what its numbers rest on; and the one-line
statement when no speculative design beats the target alone.

Light: no numpy, Streamlit or plotly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dse.search.families import (
    MARGIN_METRICS,
    FamilyBest,
    idle_notes,
    nearest_notes,
    no_speculation_wins,
    verdict_scope,
)
from dse.search.objectives import OBJECTIVES, direction
from dse.views.search import fmt, label

FAMILY_LABELS = {"target-only": "target alone", "gpu-speculative": "GPU-draft speculation",
                 "fpga-speculative": "FPGA-draft speculation",
                 "width": "width (N samples ranked or voted)"}


def closed_form(f: FamilyBest) -> Mapping[str, Any]:
    """The family best's metrics, the accurate closed form's as the search shows them
    (dse.search.shown), with their "intervals"; empty without a design."""
    if f.candidate is None:
        return {}
    return {**f.candidate.metrics, "intervals": f.candidate.intervals}


def _with_interval(v: Any, iv: Sequence[float] | None, unit: str) -> str:
    if v is None:
        return "–"
    text = fmt(v)
    if iv is not None:
        text += f" [{fmt(iv[0])}-{fmt(iv[1])}]"
    return f"{text} {unit}".rstrip()


def margin_text(f: FamilyBest, metric: str) -> str:
    """The margin against the winner on one metric (family - winner) with the joint 90%
    interval of the difference, e.g. "+0.4915 [+0.4056, +0.5878] J/token"; "winner" for the
    winner's own family, a dash without a margin."""
    if f.is_winner:
        return "winner"
    m = f.margin.get(metric)
    if m is None:
        return "–"
    unit = "pts" if metric == "accuracy" else label(metric).unit
    iv = f.margin_interval.get(metric)
    text = f"{m:+.4g}"
    if iv is not None:
        text += f" [{iv[0]:+.4g}, {iv[1]:+.4g}]"
    return f"{text} {unit}"


def decided_text(f: FamilyBest, metric: str) -> str:
    """Whether 0 lies outside the joint 90% interval of the margin: "yes (0 outside)" means
    the winner is surely better (or worse) on this metric."""
    if f.is_winner:
        return "winner"
    d = f.decided(metric)
    return "–" if d is None else ("yes (0 outside)" if d else "no (0 inside)")


def family_rows(fams: Sequence[FamilyBest], objectives: Sequence[str]) -> list[dict[str, Any]]:
    """One display row per family: its best's closed form with 90% intervals (J/token,
    latency, accuracy), p_accept, the steps the target writes, the margin against the winner
    on each margin metric (the objective's first) with the joint interval, whether that
    interval excludes 0 on the objective, the evidence, the design. A family without a
    feasible design says so."""
    obj = OBJECTIVES.get(objectives[0], objectives[0]) if objectives else "j_per_token"
    order = [obj, *(m for m in MARGIN_METRICS if m != obj)]
    rows = []
    for f in fams:
        row: dict[str, Any] = {"family": FAMILY_LABELS.get(f.family, f.family)}
        cf = closed_form(f)
        if f.candidate is None or not cf:
            rows.append(row | {"design": f.note or "no feasible design of this family"})
            continue
        iv = cf.get("intervals") or {}
        for m in ("j_per_token", "latency_s_per_problem", "accuracy"):
            row[label(m).title] = _with_interval(cf.get(m), iv.get(m), label(m).unit)
        pa = cf.get("p_accept")
        row["accept probability"] = "–" if pa is None else f"{float(pa):.3f}"
        row["steps the target writes"] = "–" if pa is None else f"{1 - float(pa):.0%}"
        for m in order:
            row[f"{label(m).words} vs winner [joint 90%]"] = margin_text(f, m)
        row[f"decided on {label(obj).words}"] = decided_text(f, obj)
        row["evidence"] = "; ".join(f.evidence) or "measured devices, calibrated components"
        row["design"] = f.candidate.label
        rows.append(row)
    return rows


def families_verdict(fams: Sequence[FamilyBest], objectives: Sequence[str]) -> str | None:
    """The one-line statement when no speculative design beats the target alone on the
    (first) objective, with which speculative families' margins are decided; None
    otherwise."""
    if not fams or not objectives:
        return None
    obj = OBJECTIVES.get(objectives[0], objectives[0])
    if not no_speculation_wins(fams, obj, direction(objectives[0])):
        return None
    what = ("speculative or width" if any(f.family == "width" for f in fams)
            else "speculative")
    text = (f"No {what} design beats the best target-only design (the target model "
            f"alone) on {label(obj).words} {verdict_scope(fams, FAMILY_LABELS)}.")
    spec = [f for f in fams if f.family != "target-only" and f.candidate is not None
            and not f.is_winner]
    sure = [FAMILY_LABELS.get(f.family, f.family) for f in spec if f.decided(obj)]
    unsure = [FAMILY_LABELS.get(f.family, f.family) for f in spec if f.decided(obj) is False]
    if sure:
        text += f" Decided (0 outside the joint 90% interval) for {' and '.join(sure)}."
    if unsure:
        text += f" Not decided (0 inside the joint 90% interval) for {' and '.join(unsure)}."
    return text


def idle_draft_notes(fams: Sequence[FamilyBest], objectives: Sequence[str]) -> list[str]:
    """A line for each speculative family whose best design accepts (almost) no draft step
    (dse.search.families.idle_drafts): it is the target alone with a draft and a verifier
    added; for a width best that is exactly as accurate as its policy alone (majority of
    2: dse.search.families.idle_widths); and for a family with no feasible design, what its
    most accurate design reaches against the accuracy bound (dse.search.families.nearest_notes)."""
    if not objectives:
        return []
    words = label(OBJECTIVES.get(objectives[0], objectives[0])).words
    return idle_notes(fams, words, FAMILY_LABELS) + nearest_notes(fams, FAMILY_LABELS)


def winner_vs_target_alone(fams: Sequence[FamilyBest], objectives: Sequence[str]
                           ) -> str | None:
    """When a speculative design wins: by how much it beats the best target-only design on
    the objective, with the joint 90% interval of the difference (None: no target-only
    family in the space, or the target alone wins)."""
    if not fams or not objectives:
        return None
    obj = OBJECTIVES.get(objectives[0], objectives[0])
    alone = next((f for f in fams if f.family == "target-only" and f.candidate is not None),
                 None)
    winner = next((f for f in fams if f.is_winner), None)
    if alone is None or winner is None or alone.is_winner or obj not in alone.margin:
        return None
    text = (f"The winner ({FAMILY_LABELS.get(winner.family, winner.family)}) against the best "
            f"target-only design on {label(obj).words}: target alone - winner = "
            f"{margin_text(alone, obj)}")
    if alone.decided(obj) is not None:
        text += ("; 0 is outside the joint 90% interval (decided)" if alone.decided(obj)
                 else "; 0 is inside the joint 90% interval (not decided)")
    return text + "."
