"""Figures the What-if and Compare pages share: latency by role, energy by device and the
headline metrics with their 90% error bars, for one design or several side by side. Every
axis carries its unit; the top margin leaves room for the chart toolbar."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import plotly.graph_objects as go

from dse import views
from dse.engine.report import BREAKDOWN_KEYS, DEVICES

ROLE_COLORS = {"init": "#9e9e9e", "draft": "#2a9d8f", "prm": "#e9c46a", "target": "#e76f51",
               "link": "#264653"}
MARGIN = {"l": 10, "r": 10, "t": 70, "b": 10}


LEGEND_RIGHT = {"orientation": "v", "x": 1.02, "y": 1, "yanchor": "top"}

# Fixed margins. Plotly's automatic ones (axis automargin, margin autoexpand) measure every
# label in the browser and draw the figure again once the margins have grown: 2-4x the cost
# of drawing What-if's charts, which are drawn anew on every change (45 -> 20 ms for the
# latency chart, 110 -> 30 ms for the intervals chart; headless Chromium, 2-core machine).
# These figures size their margins from their own labels instead, at CHAR_PX a character
# (Streamlit draws chart text in 12 px Source Sans: 4.6-5.8 px a character); where an
# estimate passes MAX_FIXED_PX (Compare's long pinned names) Plotly's margins stay.
CHAR_PX = 6.0
MAX_FIXED_PX = 200
TICK_PAD_PX = 16  # the margin's pad (8 px in Streamlit's chart theme), the tick and a gap
LEGEND_ENTRY_PX = 50  # a legend entry's symbol and gaps, and the legend's offset (x=1.02)
X_TITLE_PX = 65  # below the plot: tick labels, the title's standoff, the 14 px title
# left of the plot: the pad, the rotated 14 px title and its standoff, and tick labels of
# up to 5 characters ("1000", "12.5k")
Y_AXIS_PX = 53 + 5 * CHAR_PX


def label_px(labels: Iterable[str]) -> float:
    """The widest of `labels` in px, estimated at CHAR_PX a character."""
    return CHAR_PX * max((len(s) for s in labels), default=0)


def legend_px(names: Iterable[str]) -> float:
    """The right margin a vertical legend of `names` takes (LEGEND_RIGHT)."""
    return LEGEND_ENTRY_PX + label_px(names)


def fix_margins(fig: go.Figure, *, left: float, right: float, bottom: float) -> None:
    """Give `fig` margins in px that Plotly neither measures labels for nor grows (none
    wider than MAX_FIXED_PX; otherwise the automatic ones, MARGIN grown to fit)."""
    if max(left, right, bottom) > MAX_FIXED_PX:
        fig.update_layout(margin=MARGIN)
        return
    fig.update_layout(margin={"l": round(left), "r": round(right), "t": MARGIN["t"],
                              "b": round(bottom), "autoexpand": False})
    fig.update_xaxes(automargin=False)
    fig.update_yaxes(automargin=False)


def _total_bars(reports: dict[str, Any], metric: str, horizontal: bool) -> dict[str, Any]:
    """Error bars of a total (`metric`'s 90% interval) of the reports given (each carries
    one)."""
    if not reports:
        return {}
    v = [float(getattr(r, metric)) for r in reports.values()]
    lo = [float(r.intervals[metric][0]) for r in reports.values()]
    hi = [float(r.intervals[metric][1]) for r in reports.values()]
    return {"error_x" if horizontal else "error_y": {
        "type": "data", "symmetric": False, "color": "#264653",
        "array": [h - x for h, x in zip(hi, v, strict=True)],
        "arrayminus": [x - low for low, x in zip(lo, v, strict=True)]}}


def _stack(fig: go.Figure, reports: dict[str, Any], roles: Sequence[str],
           part: Callable[[Any, str], float], total: str, unit: str, *, horizontal: bool,
           suffix: str = "") -> None:
    """One stacked bar per design, a segment per role (`part(report, role)`), and the
    total's 90% interval as an error bar where every report carries one."""
    names = list(reports)
    fmt = "%{y}: %{x:.3f} " if horizontal else "%{x}: %{y:.1f} "
    for role in roles:
        label = views.ROLE_LABELS.get(role, role)
        vals = [float(part(reports[n], role)) for n in names]
        fig.add_bar(**({"y": names, "x": vals} if horizontal else {"x": names, "y": vals}),
                    name=label + suffix, orientation="h" if horizontal else "v",
                    marker_color=ROLE_COLORS[role],
                    hovertemplate=fmt + unit + "<extra>" + label + "</extra>")
    # the totals' markers and error bars for the designs that carry an interval (What-if
    # leaves its GPU baselines' to the Uncertainty tab)
    names = [n for n in names if total in reports[n].intervals]
    if bars := _total_bars({n: reports[n] for n in names}, total, horizontal=horizontal):
        tot = [float(getattr(reports[n], total)) for n in names]
        fig.add_scatter(**({"y": names, "x": tot} if horizontal else {"x": names, "y": tot}),
                        mode="markers", marker={"color": "#264653", "size": 6},
                        name="total, 90% interval", **bars,
                        hovertemplate=fmt + unit + "<extra>total</extra>")


def fig_breakdown(reports: dict[str, Any]) -> go.Figure:
    """Latency per problem by role on the critical path, one bar per design; the total's 90%
    interval as an error bar where the reports carry it."""
    fig = go.Figure()
    names = list(reports)
    _stack(fig, reports, BREAKDOWN_KEYS, lambda r, role: r.latency_breakdown_s[role],
           "latency_s_per_problem", "s", horizontal=True)
    fig.update_layout(barmode="stack", title="Latency per problem by role (critical path)",
                      yaxis={"autorange": "reversed"}, xaxis_title="seconds per problem (s)",
                      height=max(280, 140 + 40 * len(names)), legend=LEGEND_RIGHT)
    fix_margins(fig, left=TICK_PAD_PX + label_px(names),
                right=legend_px(tr.name for tr in fig.data), bottom=X_TITLE_PX)
    return fig


def fig_energy(split: dict[str, dict[str, float]],
               total_interval_j: tuple[float, float] | None = None) -> go.Figure:
    """One design's energy per problem by device, idle draw and energy above idle; the
    total's 90% interval in the title (the intervals are the totals')."""
    devs = list(split)
    labels = [views.ROLE_LABELS.get(d, d) for d in devs]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[split[d]["active_j"] for d in devs], name="above idle",
                marker_color="#e76f51", hovertemplate="%{x}: %{y:.1f} J<extra>above idle"
                "</extra>")
    fig.add_bar(x=labels, y=[split[d]["idle_j"] for d in devs], name="idle draw",
                marker_color="#9e9e9e", hovertemplate="%{x}: %{y:.1f} J<extra>idle</extra>")
    total = sum(v["total_j"] for v in split.values())
    sub = f"total {total:.0f} J" + ("" if total_interval_j is None else
                                    f", 90%: {total_interval_j[0]:.0f}-"
                                    f"{total_interval_j[1]:.0f} J")
    fig.update_layout(barmode="stack", title=f"Energy per problem by device<br><sup>{sub}</sup>",
                      yaxis_title="energy per problem (J)", height=300, legend=LEGEND_RIGHT)
    fix_margins(fig, left=Y_AXIS_PX, right=legend_px(tr.name for tr in fig.data),
                bottom=TICK_PAD_PX + 24)
    return fig


def fig_energy_designs(reports: dict[str, Any]) -> go.Figure:
    """Energy per problem by device, one stacked bar per design; the total's 90% interval as
    an error bar where the reports carry it."""
    fig = go.Figure()
    # a role a design does not run (the target alone's draft and PRM) has no energy entry
    _stack(fig, reports, DEVICES, lambda r, role: r.energy_by_device_j.get(role, 0.0),
           "energy_j_per_problem", "J", horizontal=False, suffix=" device")
    fig.update_layout(barmode="stack", title="Energy per problem by device",
                      yaxis_title="energy per problem (J)", height=360, margin=MARGIN,
                      legend=LEGEND_RIGHT)
    return fig


def fig_intervals(rows: list[dict[str, Any]]) -> go.Figure:
    """Designs side by side, each headline metric in its own panel with its 90% error bar.
    The panels' axes are laid out by hand (as make_subplots would, gap 0.2 of a panel):
    make_subplots validates its whole layout again and took 30 ms of a 200 ms rerun."""
    panels = views.INTERVAL_PANELS
    n, gap = len(panels), 0.2 / len(panels)
    width = (1 - gap * (n - 1)) / n
    traces: list[go.Scatter] = []
    layout: dict[str, Any] = {}
    titles = []
    for i, (m, label, unit) in enumerate(panels):
        rr = [r for r in rows if r["metric"] == m]
        ax = "" if i == 0 else str(i + 1)
        lo = i * (width + gap)
        traces.append(go.Scatter(
            x=[r["design"] for r in rr], y=[r["value"] for r in rr], mode="markers",
            marker={"size": 10, "color": "#264653"}, showlegend=False,
            xaxis=f"x{ax}", yaxis=f"y{ax}",
            error_y={"type": "data", "symmetric": False,
                     "array": [r["high"] - r["value"] for r in rr],
                     "arrayminus": [r["value"] - r["low"] for r in rr]},
            hovertemplate="%{x}: %{y:.4g} " + unit + "<extra></extra>"))
        layout[f"xaxis{ax}"] = {"domain": [lo, lo + width], "anchor": f"y{ax}"}
        layout[f"yaxis{ax}"] = {"domain": [0.0, 1.0], "anchor": f"x{ax}",
                                "title": {"text": unit}}
        titles.append({"text": f"{label} ({unit})", "x": lo + width / 2, "y": 1.0,
                       "xref": "paper", "yref": "paper", "xanchor": "center",
                       "yanchor": "bottom", "showarrow": False, "font": {"size": 16}})
    fig = go.Figure(data=traces, layout={**layout, "annotations": titles, "height": 380})
    # the designs' names turn by 30 degrees where they do not fit side by side (Plotly's
    # angle): room below the panels for them turned, and right of the last for its last name
    names_px = label_px(str(r["design"]) for r in rows)
    fix_margins(fig, left=Y_AXIS_PX, right=TICK_PAD_PX + 0.87 * names_px,
                bottom=TICK_PAD_PX + 0.5 * names_px + 14)
    return fig
