"""Paper: `dse reproduce`, every number the HeteroReason paper reports beside the tool's."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dashboard import common
from dse import reproduce, views

st.title("Paper check")
st.caption("Every number the HeteroReason paper reports beside hetero-dse's prediction for the "
           "same setting (`dse reproduce`). Calibrated rows were used to fit the workloads; "
           "every other row is a prediction.")
ss = st.session_state
with st.spinner("Evaluating the paper's settings (once per server, 15-30 s)"):
    rows = common.paper_rows()
summ = reproduce.summary(rows)
c = st.columns(3)
c[0].metric("Rows within tolerance", f"{summ['within']} / {summ['rows']}")
c[1].metric("Predicted rows within", f"{summ['predicted_within']} / {summ['predicted']}")
c[2].metric("Calibrated rows within", f"{summ['calibrated_within']} / {summ['calibrated']}")

points = views.paper_points(rows)
groups = sorted({p["group"] for p in points})
c1, c2 = st.columns([3, 1])
c1.multiselect("Groups", groups, key="pp_groups", placeholder="all groups")
c2.toggle("Only rows outside tolerance", key="pp_misses")
shown = [p for p in points if (not ss.pp_groups or p["group"] in ss.pp_groups)
         and (not ss.pp_misses or not p["within"])]

fig = go.Figure()
for within, color, name in ((True, "#2a9d8f", "within tolerance"),
                            (False, "#e76f51", "outside tolerance")):
    sel = [p for p in shown if p["within"] == within and p["paper_mid"] > 0 and p["tool"] > 0]
    fig.add_scatter(
        x=[p["paper_mid"] for p in sel], y=[p["tool"] for p in sel], mode="markers", name=name,
        marker={"color": color, "size": 8, "symbol": [
            "diamond" if p["calibrated"] else "circle" for p in sel]},
        error_x={"type": "data", "symmetric": False,
                 "array": [p["paper_high"] - p["paper_mid"] for p in sel],
                 "arrayminus": [p["paper_mid"] - p["paper_low"] for p in sel]},
        text=[p["id"] for p in sel],
        hovertemplate="%{text}<br>paper %{x:.4g}<br>tool %{y:.4g}<extra></extra>")
ends = [v for p in shown for v in (p["paper_mid"], p["tool"]) if v > 0]
if ends:
    fig.add_scatter(x=[min(ends), max(ends)], y=[min(ends), max(ends)], mode="lines",
                    name="tool = paper", line={"dash": "dot", "color": "#264653"})
fig.update_layout(xaxis={"type": "log", "title": "paper (midpoint of the reported range)"},
                  yaxis={"type": "log", "title": "hetero-dse"}, height=520,
                  title="Predicted vs reported (diamonds: calibrated rows)",
                  margin={"l": 10, "r": 10, "t": 40, "b": 10})
st.plotly_chart(fig, key="pp_chart")
st.dataframe([{"id": p["id"], "paper": (f"{p['paper_low']:.4g}" if p["paper_low"] ==
                                        p["paper_high"] else
                                        f"{p['paper_low']:.4g}-{p['paper_high']:.4g}"),
               "tool": p["tool"], "within": p["within"], "calibrated": p["calibrated"],
               "tolerance": p["tolerance"],
               "if missed": "" if p["within"] else reproduce.miss_reason(p["id"])}
              for p in shown], key="pp_table", hide_index=True)
