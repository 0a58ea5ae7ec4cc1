"""What-if's own figures: one simulated problem's timeline, each role's roofline with its
operating points, and the mean-value model's tornado (the figures Compare shares are in
dashboard/charts.py)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard import charts
from dse import views

KIND_COLORS = {"prefill": "#9e9e9e", "migrate": "#9e9e9e", "decode": "#2a9d8f",
               "tokens": "#264653", "verify": "#e9c46a", "speculate": "#8ecae6",
               "discarded": "#d62828", "stall": "#6c757d", "prefetch": "#f4a261",
               "refine": "#e76f51", "sync": "#a7c957", "verify-rewrite": "#bc6c25",
               "backtrack": "#7b2cbf"}


def fig_timeline(tl: views.Timeline) -> go.Figure:
    fig = go.Figure()
    for kind, desc in views.TIMELINE_KINDS.items():
        iv = [i for i in tl.intervals if i["kind"] == kind]
        if not iv:
            continue
        fig.add_bar(base=[i["start_s"] for i in iv], x=[i["end_s"] - i["start_s"] for i in iv],
                    y=[i["device"] for i in iv], orientation="h", name=kind,
                    marker_color=KIND_COLORS.get(kind), customdata=[[desc]] * len(iv),
                    hovertemplate="%{customdata[0]}<br>%{base:.3f} s + %{x:.3f} s"
                    "<extra>" + kind + "</extra>")
    fig.update_layout(barmode="overlay", height=340, xaxis_title="time into the problem (s)",
                      yaxis={"categoryorder": "array", "title": "device",
                             "categoryarray": [d for d in reversed(views.TIMELINE_DEVICES)
                                               if any(i["device"] == d
                                                      for i in tl.intervals)]},
                      title=f"One simulated problem: {tl.attempts} "
                      f"{'attempts' if tl.decisions else 'target steps'}, "
                      f"{tl.latency_s:.2f} s", margin=charts.MARGIN)
    return fig


def fig_roofline(rfs: list[views.RoleRoofline]) -> go.Figure:
    """Each role's roofline (datasheet and effective) with its operating points, in TFLOP/s
    against FLOP/byte on log axes."""
    tera = 1e12
    def who(r: views.RoleRoofline) -> str:
        if r.role == "prm" and any(p.op == "judge step" for p in r.points):
            return "verifier (the target judges)"
        return views.ROLE_LABELS.get(r.role, r.role)

    fig = make_subplots(rows=1, cols=len(rfs), horizontal_spacing=0.07, subplot_titles=[
        f"{who(r)}: {r.model}<br>on {r.device}" for r in rfs])
    for i, r in enumerate(rfs, 1):
        pts = r.points
        lo = min(min(p.intensity for p in pts), r.peak_flops_per_s / r.peak_bytes_per_s) / 10
        hi = max(max(p.intensity for p in pts), r.peak_flops_per_s / r.peak_bytes_per_s) * 10
        for (f, b), dash, name in (((r.peak_flops_per_s, r.peak_bytes_per_s), "solid",
                                    "datasheet peak"),
                                   ((r.effective_flops_per_s, r.effective_bytes_per_s), "dash",
                                    "effective (serving profile / FPGA build)")):
            ridge = f / b
            x = sorted({lo, ridge, hi})
            fig.add_scatter(x=x, y=[min(f, b * v) / tera for v in x], mode="lines", name=name,
                            line={"dash": dash, "color": "#264653"}, showlegend=i == 1,
                            legendgroup=name, hovertemplate="%{x:.3g} FLOP/byte: %{y:.3g} "
                            "TFLOP/s<extra>" + name + "</extra>", row=1, col=i)
        ivs = [p.achieved_interval for p in pts]
        bars = None if any(v is None for v in ivs) else {
            "type": "data", "symmetric": False, "color": charts.ROLE_COLORS[r.role],
            "array": [v[1] / tera - p.achieved_flops_per_s / tera
                      for p, v in zip(pts, ivs, strict=True) if v is not None],
            "arrayminus": [p.achieved_flops_per_s / tera - v[0] / tera
                           for p, v in zip(pts, ivs, strict=True) if v is not None]}
        fig.add_scatter(x=[p.intensity for p in pts],
                        y=[p.achieved_flops_per_s / tera for p in pts], error_y=bars,
                        mode="markers+text", text=[p.op for p in pts], textposition="top center",
                        marker={"size": 10, "color": charts.ROLE_COLORS[r.role]},
                        name=views.ROLE_LABELS.get(r.role, r.role),
                        customdata=[[p.time_s * 1e3] for p in pts],
                        hovertemplate="%{text}<br>%{x:.3g} FLOP/byte<br>%{y:.3g} TFLOP/s"
                        "<br>%{customdata[0]:.3f} ms<extra></extra>", row=1, col=i)
        fig.update_xaxes(type="log", title_text="arithmetic intensity (FLOP/byte)",
                         exponentformat="power", row=1, col=i)
        fig.update_yaxes(type="log", title_text="achieved (TFLOP/s)", exponentformat="power",
                         row=1, col=i)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 80, "b": 10},
                      legend={"orientation": "h", "y": -0.3})
    return fig


def fig_tornado(rows: list[dict[str, Any]]) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True,
                        subplot_titles=["latency per problem", "energy per token (J/token)"])
    labels = [r["label"] for r in rows][::-1]
    for col, (base, low, high) in enumerate((("latency_base_s", "latency_low_s",
                                              "latency_high_s"),
                                             ("j_per_token_base", "j_per_token_low",
                                              "j_per_token_high")), 1):
        rr = rows[::-1]
        for side, color, name in ((low, "#2a9d8f", "term -10%"), (high, "#e76f51",
                                                                   "term +10%")):
            fig.add_bar(y=labels, x=[(r[side] / r[base] - 1) * 100 for r in rr],
                        orientation="h", marker_color=color, name=name, showlegend=col == 1,
                        legendgroup=name, hovertemplate="%{y}: %{x:+.2f}%<extra></extra>",
                        row=1, col=col)
        fig.update_xaxes(title_text="change (%)", row=1, col=col)
    fig.update_layout(barmode="overlay", height=140 + 26 * len(rows), margin=charts.MARGIN,
                      legend={"orientation": "h", "y": -0.15})
    return fig
