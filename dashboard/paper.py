"""Paper: `dse reproduce`, every number the HeteroReason paper reports beside the tool's."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from dashboard import common, paper_intervals
from dse.views import paper as pv
from dse.views.glossary import term_help

COLORS = {True: "#2a9d8f", False: "#e76f51"}  # within / outside tolerance
SYMBOLS = {False: "circle", True: "diamond"}  # predicted / calibrated

st.title("Paper check")
st.caption("Every number the HeteroReason paper reports beside hetero-dse's prediction for the "
           "same setting (`dse reproduce`). Calibrated rows were used to fit the workloads; "
           "every other row is a prediction. Terms: see the [Glossary](glossary).")
ss = st.session_state
with st.spinner("Evaluating the paper's settings (once per server, a few seconds)"):
    rows = common.paper_rows()
fut = paper_intervals.interval_rows()
if fut.done():
    if fut.exception() is not None:
        st.warning(f"The tool's 90% intervals could not be computed: {fut.exception()}")
    else:
        rows = pv.with_intervals(rows, fut.result())
else:
    @st.fragment(run_every=3)
    def wait_for_intervals() -> None:
        if fut.done():
            st.rerun()
        st.info("Computing the tool's 90% intervals (dse.paper.coverage, once per "
                "server, about a minute); the error bars appear when they are ready.")

    wait_for_intervals()

c1, c2 = st.columns([3, 1])
c1.multiselect("Groups", pv.groups(rows), key="pp_groups", placeholder="all groups")
c2.toggle("Only rows outside tolerance", key="pp_misses")
shown = pv.filter_rows(rows, group=ss.pp_groups, misses_only=ss.pp_misses)
n = pv.counts(shown, len(rows))
c = st.columns(5)
c[0].metric("Rows shown", f"{n['rows']} of {n['total']}")
c[1].metric("Rows within tolerance", f"{n['within']} / {n['rows']}",
            help=term_help("tolerance"))
c[2].metric("Predicted rows within", f"{n['predicted_within']} / {n['predicted']}")
c[3].metric("Fitted or calibrated rows within", f"{n['read_within']} / {n['read']}",
            help=term_help("calibrated vs predicted row"))
c[4].metric("Paper value in the 90% interval",
            f"{n['inside']} / {n['with_interval']}" if n["with_interval"] else "pending",
            help="of the rows shown that have an interval (rows without one, and the filters' "
            "rows left out, are not counted; `dse reproduce` counts every row): those whose "
            "paper value, or part of its range, lies in the tool's interval. "
            + term_help("90% interval"))
if n["with_interval"]:
    st.caption(f"Coverage counts the {n['with_interval']} rows shown with a 90% interval, not "
               f"the {n['total']} rows in all.")


def figure(panels: list[pv.PaperPanel]) -> go.Figure:
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p.title for p in panels],
                        horizontal_spacing=0.08)
    seen: set[str] = set()
    for col, panel in enumerate(panels, start=1):
        for name, within, calibrated in pv.SERIES:
            sel = [p for p in panel.points if p["series"] == name]
            if not sel:
                continue
            fig.add_scatter(
                x=[p["paper_mid"] for p in sel], y=[p["tool"] for p in sel], mode="markers",
                name=name, legendgroup=name, showlegend=name not in seen, row=1, col=col,
                marker={"color": COLORS[within], "symbol": SYMBOLS[calibrated], "size": 9,
                        "line": {"width": 1, "color": "#264653"}},
                error_x={"type": "data", "symmetric": False, "thickness": 1,
                         "array": [p["paper_plus"] for p in sel],
                         "arrayminus": [p["paper_minus"] for p in sel]},
                error_y={"type": "data", "symmetric": False, "thickness": 1,
                         "array": [p["tool_plus"] for p in sel],
                         "arrayminus": [p["tool_minus"] for p in sel]},
                text=[p["hover"] for p in sel], hovertemplate="%{text}<extra></extra>")
            seen.add(name)
        lo, hi = panel.line
        fig.add_scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="hetero-dse = paper",
                        legendgroup="ref", showlegend=col == 1, row=1, col=col,
                        line={"dash": "dot", "color": "#264653"}, hoverinfo="skip")
        # log axes: one tick per decade, written as plain numbers (0.001, not 1m)
        axis = ({"type": "log", "dtick": 1, "tickformat": "~g"} if panel.log_axes
                else {"type": "linear", "tickformat": "~g"})
        fig.update_xaxes(title_text=f"paper, range midpoint ({panel.unit})", row=1, col=col,
                         **axis)
        fig.update_yaxes(title_text=f"hetero-dse ({panel.unit})", row=1, col=col, **axis)
    fig.update_layout(height=460, margin={"l": 10, "r": 10, "t": 70, "b": 10},
                      legend={"title": {"text": "colour: tolerance; symbol: fit"}})
    return fig


panels = pv.panels(shown)
if panels:
    common.chart(figure(panels), key="pp_chart")
    st.caption("Colour: within (green) or outside (orange) the row's tolerance; symbol: "
               "fitted or calibrated (diamond) or predicted (circle). Horizontal bars: the paper's "
               "reported range; vertical bars: the tool's 90% interval.")
else:
    st.info("No row matches the filters.")
st.dataframe(pv.table_rows(shown), key="pp_table", hide_index=True,
             column_config={"if missed": st.column_config.TextColumn(width="large")})
st.download_button("Download the rows shown (CSV)", pv.csv_bytes(shown),
                   file_name="heteroreason-paper-rows.csv", mime="text/csv", key="pp_csv")
misses = pv.miss_groups(shown)
if misses:
    st.subheader("Why rows miss")
    for reason, ids in misses:
        st.markdown(f"- **{', '.join(f'`{i}`' for i in ids)}**: "
                    f"{reason or 'no reason recorded in dse.paper.reproduce.MISS_REASONS'}")
