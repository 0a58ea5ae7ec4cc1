"""The Paper page's data: `dse reproduce` rows filtered, counted, split into one panel per unit
(accuracy in %, ratios in x, shares as fractions), as table rows, as CSV, and the reasons for
the misses in full.

The rows are `dse.paper.reproduce.Row`s; their 90% intervals (`tool_low`, `tool_high`) come from
`dse.paper.coverage.paper_rows`, which re-evaluates every row once per uncertainty factor,
so a page may show the central rows first and merge the intervals in later (`with_intervals`).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dse.paper.reproduce import Row, miss_reason, summary, tool_text
from dse.views.pages import paper_points

# Panels in this order, titled by the quantity and its unit.
UNIT_TITLES = {"%": "accuracy (%)", "x": "ratio (x)", "fraction": "share (fraction)"}
# A panel spanning more than this factor between its smallest and largest positive value is
# drawn on log axes (the communication share, ~1e-4, beside shares of ~0.3).
LOG_SPAN = 100.0
# The legend's series: (name, within tolerance, calibrated); colour tells within / outside,
# the marker symbol calibrated / predicted.
SERIES = (("within tolerance, predicted", True, False),
          ("within tolerance, fitted or calibrated", True, True),
          ("outside tolerance, predicted", False, False),
          ("outside tolerance, fitted or calibrated", False, True))


@dataclass(frozen=True)
class PaperPanel:
    """One unit's rows: points (paper midpoint, tool value, both ranges), axis scale and the
    ends of its y = x line."""

    unit: str
    title: str
    log_axes: bool
    points: tuple[dict[str, Any], ...]
    line: tuple[float, float]


def with_intervals(rows: Sequence[Row], interval_rows: Iterable[Row]) -> list[Row]:
    """The rows with the 90% intervals of the row of the same id in interval_rows (rows
    without one keep theirs)."""
    by_id = {r.id: r for r in interval_rows}
    return [replace(r, tool_low=by_id[r.id].tool_low, tool_high=by_id[r.id].tool_high)
            if r.id in by_id else r for r in rows]


def groups(rows: Iterable[Row]) -> list[str]:
    """The rows' groups (an id's first part, e.g. `accuracy`, `speedup_vs_brsd`), sorted."""
    return sorted({r.id.split(".")[0] for r in rows})


def filter_rows(rows: Iterable[Row], *, group: Sequence[str] = (),
                misses_only: bool = False) -> list[Row]:
    """The rows of the given groups (all when empty), only those outside tolerance when
    misses_only."""
    return [r for r in rows if (not group or r.id.split(".")[0] in group)
            and (not misses_only or not r.within)]


def has_interval(r: Row) -> bool:
    return math.isfinite(r.tool_low) and math.isfinite(r.tool_high)


def counts(shown: Sequence[Row], total: int) -> dict[str, int]:
    """`dse.paper.reproduce.summary` of the rows shown, the fitted or calibrated ones (`read`: a fit
    or a constraint read them), their number overall (`total`) and how many have an interval
    (`with_interval`) and hold the paper's value in it (`inside`)."""
    read = [r for r in shown if r.calibrated]  # fitted or calibrated: not predictions
    return {**summary(list(shown)), "total": total,
            "read": len(read), "read_within": sum(r.within for r in read),
            "with_interval": sum(has_interval(r) for r in shown),
            "inside": sum(bool(r.inside) for r in shown)}


def value_text(v: float, unit: str) -> str:
    """A value to 4 significant digits with its unit (`64.8%`, `1.12x`, `0.175`)."""
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.4g}" + {"%": "%", "x": "x"}.get(unit, "")


def paper_text(r: Row) -> str:
    """The paper's value or range, with the unit."""
    if r.paper_low == r.paper_high:
        return value_text(r.paper_low, r.unit)
    return f"{r.paper_low:.4g}-{value_text(r.paper_high, r.unit)}"


# Rows drawn in a panel of their own, so that their scale does not squash the others': the
# Jetson edge draft's system slowdowns (5-7x) beside speed-ups and energy gains of 0.5-2.5x.
OWN_PANELS = {"edge_gpu_draft.": ("x", "ratio (x): Jetson draft slowdown")}


def _panel_parts() -> list[tuple[str, str, Callable[[str], bool]]]:
    """(unit, title, which row ids): each unit's rows but those with a panel of their own,
    then those, beside it."""
    def rest(i: str) -> bool:
        return not any(i.startswith(p) for p in OWN_PANELS)

    parts: list[tuple[str, str, Callable[[str], bool]]] = []
    for u, t in UNIT_TITLES.items():
        parts.append((u, t, rest))
        parts += [(u, title, lambda i, p=prefix: i.startswith(p))  # type: ignore[misc]
                  for prefix, (unit, title) in OWN_PANELS.items() if unit == u]
    return parts


def panels(rows: Sequence[Row]) -> list[PaperPanel]:
    """One panel per unit present (in UNIT_TITLES' order), its points with finite tool
    values (and, on log axes, positive ones). A point carries the paper's range as x error
    (`paper_minus`, `paper_plus`) and the tool's 90% interval as y error (`tool_minus`,
    `tool_plus`, None where the row has none), its series name (SERIES) and hover text."""
    out = []
    for unit, title, part in _panel_parts():
        sel = [r for r in rows if r.unit == unit and math.isfinite(r.tool) and part(r.id)]
        if not sel:
            continue
        pts = [p | {"unit": unit} for p in paper_points(sel)]
        pos = [v for p in pts for v in (p["paper_mid"], p["tool"]) if v > 0]
        log = bool(pos) and max(pos) / min(pos) > LOG_SPAN
        if log:
            keep = [i for i, p in enumerate(pts) if p["paper_mid"] > 0 and p["tool"] > 0]
            sel, pts = [sel[i] for i in keep], [pts[i] for i in keep]
        if not pts:
            continue
        for p, r in zip(pts, sel, strict=True):
            iv = has_interval(r)
            p.update(paper_minus=p["paper_mid"] - r.paper_low,
                     paper_plus=r.paper_high - p["paper_mid"],
                     tool_minus=r.tool - r.tool_low if iv else None,
                     tool_plus=r.tool_high - r.tool if iv else None,
                     series=series_name(r),
                     hover=f"{r.id}<br>paper {paper_text(r)}<br>hetero-dse "
                           f"{tool_text(r)}{' (90% interval)' if iv else ''}")
        ends = [v for p in pts for v in (p["paper_mid"], p["tool"])]
        ends += [v for r in sel if has_interval(r) for v in (r.tool_low, r.tool_high)
                 if v > 0 or not log]
        out.append(PaperPanel(unit, title, log, tuple(pts), (min(ends), max(ends))))
    return out


def series_name(r: Row) -> str:
    (name,) = [n for n, w, c in SERIES if w == r.within and c == r.calibrated]
    return name


def table_rows(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """The rows as table text: values to 4 significant digits with their units."""
    inside = {None: "", True: "yes", False: "no"}
    return [{"id": r.id, "quantity": UNIT_TITLES.get(r.unit, r.unit),
             "paper": paper_text(r), "hetero-dse [90% interval]": tool_text(r),
             "within": r.within, "in interval": inside[r.inside],
             "label": r.label, "tolerance": r.tolerance,
             "if missed": "" if r.within else miss_reason(r.id)} for r in rows]


def miss_groups(rows: Iterable[Row]) -> list[tuple[str, list[str]]]:
    """The reasons for the rows outside tolerance, each with the ids it explains, in the
    order of first appearance (rows without a recorded reason under one empty reason)."""
    out: dict[str, list[str]] = {}
    for r in rows:
        if not r.within:
            out.setdefault(miss_reason(r.id), []).append(r.id)
    return list(out.items())


CSV_COLUMNS = ("id", "description", "unit", "paper_low", "paper_high", "tool", "tool_low",
               "tool_high", "within", "inside", "label", "tolerance", "miss_reason")


def csv_bytes(rows: Iterable[Row]) -> bytes:
    """The rows as CSV (UTF-8): CSV_COLUMNS, numbers to 6 significant digits, empty where a
    value is missing (no interval, no reason)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)

    def num(v: float) -> str:
        return f"{v:.6g}" if math.isfinite(v) else ""

    for r in rows:
        w.writerow([r.id, r.description, r.unit, num(r.paper_low), num(r.paper_high),
                    num(r.tool), num(r.tool_low), num(r.tool_high), r.within,
                    "" if r.inside is None else r.inside, r.label, r.tolerance,
                    "" if r.within else miss_reason(r.id)])
    return buf.getvalue().encode("utf-8")


def html(rs: Sequence[Row]) -> str:
    """`dse reproduce --html`: a self-contained plotly chart of tool vs paper (one point per
    row)."""
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure()
    for within, color in ((True, "#2a9d8f"), (False, "#e76f51")):
        sel = [r for r in rs if r.within == within and r.paper_high > 0]
        mid = [(r.paper_low + r.paper_high) / 2 for r in sel]
        fig.add_trace(go.Scatter(
            x=mid, y=[r.tool / m if m else np.nan for r, m in zip(sel, mid, strict=True)],
            mode="markers", name="within" if within else "outside",
            marker={"color": color}, text=[r.id for r in sel],
            hovertemplate="%{text}<br>paper %{x:.4g}<br>tool/paper %{y:.3f}<extra></extra>"))
    fig.add_hline(y=1.0, line_dash="dot")
    fig.update_layout(title="hetero-dse vs the HeteroReason paper (tool / paper value)",
                      xaxis_title="paper value (midpoint)", yaxis_title="tool / paper",
                      xaxis_type="log")
    return fig.to_html(include_plotlyjs=True, full_html=True)
