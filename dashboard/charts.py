"""Figures the What-if and Compare pages share: latency by role, energy by device and the
headline metrics with their 90% error bars, for one design or several side by side. Every
axis carries its unit.

These are Vega-Lite charts drawn on a canvas, their data apart from their specification:
the figures What-if draws anew on every change of a knob. A change that keeps the
specification (a new threshold, a flag) sends new rows only, which the page's chart takes in
place; Plotly, which What-if drew them with before, laid out and drew every SVG element of
both charts again (legends included) and loaded its 4.7 MB script (Vega's: 0.8 MB) on a
session's first page: a threshold step settled in 509-537 ms with Plotly and 369-392 ms with
these, a fresh session in 3.2 s and 1.6-1.7 s (bench_browser.py, 2-core machine,
docs/benchmarks.md). The specifications hold no value that changes with the design (titles
and sort orders are fixed; totals and intervals go to the captions beside them) so that they
stay the same.
What-if's other figures (timeline, roofline, tornado) are Plotly's (dashboard/
whatif_figures.py): drawn once per tab visit, where Plotly's hover and zoom pay."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dse import views
from dse.engine.report import BREAKDOWN_KEYS, DEVICES

ROLE_COLORS = {"init": "#9e9e9e", "draft": "#2a9d8f", "prm": "#e9c46a", "target": "#e76f51",
               "link": "#264653"}
MARGIN = {"l": 10, "r": 10, "t": 70, "b": 10}  # the Plotly figures' (whatif_figures.py)
INK = "#264653"  # totals' markers and error bars
# what Vega-Lite needs beside the marks: a canvas (no SVG element per mark), tooltips
USERMETA = {"embedOptions": {"renderer": "canvas"}}
BAR_PX = 32  # a horizontal bar's band


@dataclass(frozen=True)
class Chart:
    """A Vega-Lite chart: its rows (one table) and its specification (no data in it)."""

    rows: list[dict[str, Any]]
    spec: dict[str, Any]


def _color(field: str, domain: Sequence[str], colors: Sequence[str]) -> dict[str, Any]:
    return {"field": field, "type": "nominal", "title": None,
            "scale": {"domain": list(domain), "range": list(colors)},
            "legend": {"orient": "right"}}


def _stack(reports: dict[str, Any], roles: Sequence[str], part: Callable[[Any, str], float],
           total: str, *, suffix: str = "") -> list[dict[str, Any]]:
    """Rows of stacked bars, one per (design, role): `part(report, role)`; and one per
    design carrying `total`'s 90% interval (its error bar), where the report has one."""
    rows: list[dict[str, Any]] = []
    for i, (name, r) in enumerate(reports.items()):
        for k, role in enumerate(roles):
            rows.append({"design": name, "order": i, "part": views.ROLE_LABELS.get(role, role)
                         + suffix, "k": k, "value": float(part(r, role))})
        if total in r.intervals:
            lo, hi = (float(x) for x in r.intervals[total])
            rows.append({"design": name, "order": i, "total": float(getattr(r, total)),
                         "low": lo, "high": hi})
    return rows


def _stack_spec(title: str, roles: Sequence[str], axis_title: str, unit: str, fmt: str, *,
                suffix: str = "") -> dict[str, Any]:
    """Horizontal bars stacked by role, BAR_PX apart (the chart as tall as the designs
    need), with the totals' error bars (`_stack`'s rows)."""
    cat, num = "y", "x"
    design = {"field": "design", "type": "nominal", "title": None,
              "sort": {"field": "order", "op": "min"}, "axis": {"labelLimit": 320}}
    labels = [views.ROLE_LABELS.get(r, r) + suffix for r in roles]
    bars = {"transform": [{"filter": "isValid(datum.part)"}], "mark": "bar",
            "encoding": {cat: design,
                         num: {"field": "value", "type": "quantitative", "stack": "zero",
                               "title": axis_title},
                         "color": _color("part", labels, [ROLE_COLORS[r] for r in roles]),
                         "order": {"field": "k"},
                         "tooltip": [{"field": "design"}, {"field": "part", "title": "role"},
                                     {"field": "value", "format": fmt, "title": unit}]}}
    on_total = [{"filter": "isValid(datum.total)"}]
    tip = [{"field": "design"}, {"field": "total", "format": fmt, "title": f"total ({unit})"},
           {"field": "low", "format": fmt, "title": "90% low"},
           {"field": "high", "format": fmt, "title": "90% high"}]
    err = {"transform": on_total, "mark": {"type": "rule", "color": INK, "strokeWidth": 1.5},
           "encoding": {cat: design, num: {"field": "low", "type": "quantitative"},
                        f"{num}2": {"field": "high"}, "tooltip": tip}}
    dot = {"transform": on_total, "mark": {"type": "point", "filled": True, "color": INK,
                                           "size": 40, "opacity": 1},
           "encoding": {cat: design, num: {"field": "total", "type": "quantitative"},
                        "tooltip": tip}}
    return {"title": title, "height": {"step": BAR_PX}, "usermeta": USERMETA,
            "layer": [bars, err, dot]}


def fig_breakdown(reports: dict[str, Any]) -> Chart:
    """Latency per problem by role on the critical path, one bar per design; the total's 90%
    interval as an error bar where the reports carry it."""
    return Chart(_stack(reports, BREAKDOWN_KEYS, lambda r, role: r.latency_breakdown_s[role],
                        "latency_s_per_problem"),
                 _stack_spec("Latency per problem by role (critical path)", BREAKDOWN_KEYS,
                             "seconds per problem (s)", "s", ".3f"))


def fig_energy(split: dict[str, dict[str, float]]) -> Chart:
    """One design's energy per problem by device, idle draw and energy above idle (the
    total and its 90% interval go in the caption: the specification stays the same)."""
    rows = []
    for i, (d, v) in enumerate(split.items()):
        label = views.ROLE_LABELS.get(d, d)
        rows += [{"device": label, "order": i, "kind": "above idle", "k": 0,
                  "value": float(v["active_j"])},
                 {"device": label, "order": i, "kind": "idle draw", "k": 1,
                  "value": float(v["idle_j"])}]
    spec = {"title": "Energy per problem by device", "height": 230, "usermeta": USERMETA,
            "mark": "bar",
            "encoding": {
                "x": {"field": "device", "type": "nominal", "title": None,
                      "sort": {"field": "order", "op": "min"}, "axis": {"labelAngle": 0}},
                "y": {"field": "value", "type": "quantitative", "stack": "zero",
                      "title": "energy per problem (J)"},
                "color": _color("kind", ["above idle", "idle draw"], ["#e76f51", "#9e9e9e"]),
                "order": {"field": "k"},
                "tooltip": [{"field": "device"}, {"field": "kind"},
                            {"field": "value", "format": ".1f", "title": "J"}]}}
    return Chart(rows, spec)


def energy_caption(split: dict[str, dict[str, float]],
                   total_interval_j: tuple[float, float] | None) -> str:
    """The energy chart's total per problem, with its 90% interval where given."""
    total = sum(v["total_j"] for v in split.values())
    return f"Energy per problem: {total:.0f} J in total" + (
        "" if total_interval_j is None else
        f", 90%: {total_interval_j[0]:.0f}-{total_interval_j[1]:.0f} J")


def fig_energy_designs(reports: dict[str, Any]) -> Chart:
    """Energy per problem by device, one stacked bar per design (as the latency's, the
    designs' names whole); the total's 90% interval as an error bar where the reports carry
    it."""
    # a role a design does not run (the target alone's draft and PRM) has no energy entry
    return Chart(_stack(reports, DEVICES, lambda r, role: r.energy_by_device_j.get(role, 0.0),
                        "energy_j_per_problem", suffix=" device"),
                 _stack_spec("Energy per problem by device", DEVICES,
                             "energy per problem (J)", "J", ".1f", suffix=" device"))


def fig_intervals(rows: list[dict[str, Any]]) -> Chart:
    """Designs side by side, each headline metric in its own panel (its own scale) with its
    90% error bar (`views.interval_rows`)."""
    def panel(m: str, label: str, unit: str) -> dict[str, Any]:
        x = {"field": "design", "type": "nominal", "title": None,
             "sort": {"field": "order", "op": "min"},
             # every name, turned (Vega drops labels whose boxes overlap by default)
             "axis": {"labelAngle": -45, "labelLimit": 220, "labelOverlap": False}}
        tip = [{"field": "design"}, {"field": "value", "format": ".4g", "title": unit},
               {"field": "low", "format": ".4g", "title": "90% low"},
               {"field": "high", "format": ".4g", "title": "90% high"}]
        return {"title": f"{label} ({unit})", "width": {"step": 44}, "height": 240,
                "transform": [{"filter": {"field": "metric", "equal": m}}],
                "layer": [
                    {"mark": {"type": "rule", "color": INK, "strokeWidth": 1.5},
                     "encoding": {"x": x, "y": {"field": "low", "type": "quantitative",
                                                "title": unit, "scale": {"zero": False}},
                                  "y2": {"field": "high"}, "tooltip": tip}},
                    {"mark": {"type": "point", "filled": True, "color": INK, "size": 80,
                              "opacity": 1},
                     "encoding": {"x": x, "y": {"field": "value", "type": "quantitative"},
                                  "tooltip": tip}}]}

    order = {d: i for i, d in enumerate(dict.fromkeys(r["design"] for r in rows))}
    data = [{**r, "order": order[r["design"]]} for r in rows]
    return Chart(data, {"usermeta": USERMETA, "hconcat": [
        panel(*p) for p in views.INTERVAL_PANELS if any(r["metric"] == p[0] for r in rows)]})
