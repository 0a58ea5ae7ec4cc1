"""Design space: a sweep or a short optimize from the app, and an interactive Pareto scatter
whose points open in What-if, with their 90% intervals as error bars."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard import common
from dse import views
from dse.errors import DseError

st.title("Design space")
try:
    from dse import search
    from dse.search import load_space
except ImportError as e:  # the search module is not in this build
    st.info(f"The design-space search is not available in this build ({e}).")
    st.stop()

cat = common.catalog()
ss = st.session_state


with st.form("ds_form", border=False):
    c1, c2 = st.columns([2, 1])
    c1.text_input("Design space TOML (empty: the shipped default space)", key="ds_space",
                  help="a `kind = \"space\"` file; docs/catalog-format.md describes it")
    c2.radio("Method", ["Sweep", "Optimize"], key="ds_method", horizontal=True,
             help="Sweep: every design of the grid (exact front). Optimize: an Optuna study "
             "of a few trials, stored in the storage below.")
    ss.setdefault("ds_objectives", ["j_per_token", "latency"])
    st.multiselect("Objectives", list(search.OBJECTIVES), key="ds_objectives")
    c1, c2, c3 = st.columns(3)
    c1.number_input("Min accuracy (%)", min_value=0.0, max_value=100.0, value=None,
                    key="ds_min_accuracy", help="empty: the space's default")
    c2.number_input("Max latency (s per problem)", min_value=0.0, value=None,
                    key="ds_max_latency")
    c3.number_input("Max average power (W)", min_value=0.0, value=None, key="ds_max_power")
    c1, c2, c3, c4 = st.columns(4)
    ss.setdefault("ds_trials", 30)
    c1.number_input("Trials (optimize)", min_value=1, step=10, key="ds_trials")
    c2.number_input("Seed", min_value=0, step=1, key="ds_seed")
    ss.setdefault("ds_storage", search.DEFAULT_STORAGE)
    c3.text_input("Study storage", key="ds_storage")
    c4.text_input("Study name (empty: from the space)", key="ds_study")
    run = st.form_submit_button("Run", key="ds_run", type="primary")

if run:
    bar = st.progress(0.0, text="starting")
    try:
        space = load_space(cat, ss.ds_space.strip() or None)
        cons = search.Constraints(min_accuracy=ss.ds_min_accuracy,
                                  max_latency_s=ss.ds_max_latency,
                                  max_power_w=ss.ds_max_power)
        if ss.ds_method == "Sweep":
            res = search.sweep(cat, space, ss.ds_objectives, cons,
                               progress=lambda f: bar.progress(min(float(f), 1.0),
                                                               text=f"sweep {f:.0%}"))
            ss["ds_result"] = {
                "method": "sweep", "objectives": list(res.objectives),
                "candidates": res.pareto, "points": res.points,
                "summary": f"{res.n_designs:,} designs, {res.n_feasible:,} feasible, "
                f"{len(res.pareto)} on the front, {res.seconds:.1f} s"}
        else:
            def tick(done: int, total: int) -> None:
                bar.progress(min(done / max(total, 1), 1.0), text=f"trial {done} of {total}")

            import optuna

            optuna.logging.set_verbosity(optuna.logging.WARNING)  # the page shows progress
            res = search.optimize(cat, space, ss.ds_objectives, cons,
                                  trials=int(ss.ds_trials), seed=int(ss.ds_seed),
                                  storage=ss.ds_storage.strip() or search.DEFAULT_STORAGE,
                                  study_name=ss.ds_study.strip() or None, callback=tick)
            ss["st_storage"] = res.storage  # the Studies page opens this storage
            ss["ds_result"] = {
                "method": "optimize", "objectives": list(res.objectives),
                "candidates": res.best, "points": {},
                "summary": f"study {res.study_name} in {res.storage}: {res.n_trials} trials "
                f"({res.n_new} new), {len(res.best)} best, {res.seconds:.1f} s"}
        ss.pop("ds_pick", None)
        bar.progress(1.0, text="done")
    except DseError as e:
        bar.empty()
        st.error(str(e))

result = ss.get("ds_result")
if not result:
    st.caption("Choose the objectives and run a sweep or an optimize.")
    st.stop()

cands = result["candidates"]
st.success(result["summary"])
st.caption("The search ranks with the mean-value model (dse.symbolic, within about 15% of the "
           "accurate closed form); What-if shows the closed form of the design you open. "
           "Constraints are checked at the pessimistic end of each metric's 90% interval "
           "(accuracy at its low end; docs/uncertainty.md), designs ranked by central values.")
if not cands:
    st.warning("No feasible design meets the constraints.")
    st.stop()
rows = views.candidate_rows(cands)
metric = {o: search.OBJECTIVES[o] for o in result["objectives"]}
axes = list(metric.values())
if len(axes) == 1:
    axes.append("accuracy" if axes[0] != "accuracy" else "latency_s_per_problem")
x_m, y_m = axes[0], axes[1]

# a point chosen in the chart becomes the pick (before the selectbox is drawn)
sel = ss.get("ds_chart")
points = list(getattr(getattr(sel, "selection", None), "points", None) or [])
chosen = [p for p in points if p.get("curve_number") == 1]
if chosen and chosen[0].get("point_index") != ss.get("ds_last_point"):
    ss["ds_last_point"] = chosen[0]["point_index"]
    ss["ds_pick"] = int(chosen[0]["point_index"])

fig = go.Figure()
pts = result["points"]
fig.add_scattergl(x=list(pts.get(x_m, [])), y=list(pts.get(y_m, [])), mode="markers",
                  name="sampled feasible designs", hoverinfo="skip",
                  marker={"color": "#9e9e9e", "size": 5, "opacity": 0.6})


def error_bars(m: str) -> dict[str, Any] | None:
    """The front points' 90% intervals on one axis (None where the search gave none)."""
    if not all(f"{m}_low" in r for r in rows):
        return None
    return {"type": "data", "symmetric": False, "color": "#e76f51", "thickness": 1,
            "array": [r[f"{m}_high"] - r[m] for r in rows],
            "arrayminus": [r[m] - r[f"{m}_low"] for r in rows]}


fig.add_scatter(x=[r.get(x_m) for r in rows], y=[r.get(y_m) for r in rows],
                error_x=error_bars(x_m), error_y=error_bars(y_m),
                mode="markers+lines" if len(rows) > 1 else "markers",
                name="front" if result["method"] == "sweep" else "best",
                text=[r["design"] for r in rows],
                marker={"color": "#e76f51", "size": 10}, line={"dash": "dot"},
                hovertemplate="%{text}<br>" + x_m + " %{x:.4g}<br>" + y_m
                + " %{y:.4g}<extra></extra>")
fig.update_layout(xaxis_title=x_m, yaxis_title=y_m, height=460,
                  margin={"l": 10, "r": 10, "t": 30, "b": 10})
st.plotly_chart(fig, key="ds_chart", on_select="rerun", selection_mode="points")

if ss.get("ds_pick") not in range(len(cands)):
    ss["ds_pick"] = 0
st.selectbox("Design", range(len(cands)), key="ds_pick",
             format_func=lambda i: f"{i}: {x_m} {rows[i].get(x_m, float('nan')):.4g}, "
             f"{y_m} {rows[i].get(y_m, float('nan')):.4g}")
pick = cands[ss.ds_pick]
st.caption(rows[ss.ds_pick]["design"])
c1, c2 = st.columns([1, 3])
if c1.button("Open in What-if", key="ds_open", type="primary"):
    common.open_in_whatif(views.state_from_design(cat, pick.design))
c2.download_button("Download design TOML", pick.toml, file_name="design.toml",
                   key="ds_download_toml")
st.dataframe([{k: v for k, v in r.items() if k != "design"} for r in rows],
             key="ds_table", hide_index=True)
