"""Design space: a sweep or a short optimize from the app; the front (zoomed to it, or the
whole cloud, or log axes) with its 90% intervals as error bars and a band; a results table
(the primary pick: one selected row) with hardware, models, precisions, serving, schedule and
thresholds; the picked design's closed form (What-if's numbers), its files and a pin."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard import common, families
from dse import views
from dse.errors import DseError
from dse.search.families import ties_sentence
from dse.views import search as vs

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
    st.multiselect("Objectives", list(search.OBJECTIVES), key="ds_objectives",
                   format_func=lambda o: vs.title(o))
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
    st.checkbox("Measured devices only", key="ds_measured",
                help="keep only the hardware whose every device has a published measurement "
                "(no projection-only board such as the V80 or the H100)")
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
                                                               text=f"sweep {f:.0%}"),
                               measured_only=bool(ss.get("ds_measured")))
            ss["ds_result"] = {
                "method": "sweep", "objectives": list(res.objectives),
                "candidates": res.pareto, "points": res.points,
                "constraints": dict(res.constraints), "confidence": res.confidence,
                "typed": dict(cons.bounds), "families": list(res.by_family),
                "measured_only": res.measured_only, "ties": list(res.ties),
                "summary": f"{res.n_designs:,} designs, {res.n_feasible:,} feasible, "
                f"{len(res.pareto)} on the front, {res.seconds:.1f} s"
                + (" (measured devices only)" if res.measured_only else "")}
        else:
            def tick(done: int, total: int) -> None:
                bar.progress(min(done / max(total, 1), 1.0), text=f"trial {done} of {total}")

            import optuna

            optuna.logging.set_verbosity(optuna.logging.WARNING)  # the page shows progress
            res = search.optimize(cat, space, ss.ds_objectives, cons,
                                  trials=int(ss.ds_trials), seed=int(ss.ds_seed),
                                  storage=ss.ds_storage.strip() or search.DEFAULT_STORAGE,
                                  study_name=ss.ds_study.strip() or None, callback=tick,
                                  measured_only=bool(ss.get("ds_measured")))
            ss["st_storage"] = res.storage  # the Studies page opens this storage
            ss["ds_result"] = {
                "method": "optimize", "objectives": list(res.objectives),
                "candidates": res.best, "points": {},
                "constraints": dict(res.constraints), "confidence": res.confidence,
                "typed": dict(cons.bounds), "families": list(res.by_family),
                "measured_only": res.measured_only, "ties": list(res.ties),
                "summary": f"study {res.study_name} in {res.storage}: {res.n_trials} trials "
                f"({res.n_new} new), {len(res.best)} best, {res.seconds:.1f} s"
                + (" (measured devices only)" if res.measured_only else "")}
        ss.pop("ds_pick", None)
        ss.pop("ds_table", None)
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
cons_rows = vs.constraint_rows(result.get("constraints", {}), result.get("typed", {}),
                                  result.get("confidence", 0.9))
if cons_rows:
    st.caption("Constraints applied (a design is kept only if it meets each one at the "
               "pessimistic end of the metric's 90% interval, accuracy at its low end; "
               "docs/uncertainty.md); designs are ranked by central values:")
    st.dataframe(cons_rows, key="ds_constraints", hide_index=True)
else:
    st.caption("No constraint applied (the space has no default and none was typed).")
if not cands:
    st.warning("No feasible design meets the constraints.")
    st.stop()

objectives = result["objectives"]
families.verdict(result.get("families") or [], objectives)
rows = views.candidate_rows(cands)
axes = [search.OBJECTIVES[o] for o in objectives]
if len(axes) == 1:
    axes.append("accuracy" if axes[0] != "accuracy" else "latency_s_per_problem")
x_m, y_m = axes[0], axes[1]

# The pick is one row of the results table (its selection is the state); a click on the chart
# selects the row of the candidate index the point carries.
if ss.get("ds_pick") not in range(len(cands)):
    ss["ds_pick"] = 0
if "ds_table" not in ss:
    ss["ds_table"] = {"selection": {"rows": [ss.ds_pick]}}
sel_rows = list(ss["ds_table"]["selection"]["rows"]) if "ds_table" in ss else []
if sel_rows and sel_rows[0] in range(len(cands)):
    ss["ds_pick"] = int(sel_rows[0])
pick_i = int(ss.ds_pick)


def chart_pick() -> None:
    sel = ss.get("ds_chart")
    points = list(getattr(getattr(sel, "selection", None), "points", None) or [])
    i = vs.chosen_index(points, ss.get("ds_pick"))
    if i is not None and i in range(len(cands)):
        ss["ds_pick"] = i
        ss["ds_table"] = {"selection": {"rows": [i]}}


VIEWS = {"front": "Zoom to the front", "cloud": "All sampled designs",
         "log": "All sampled designs, log axes"}
ss.setdefault("ds_view", "front")
st.radio("Chart", list(VIEWS), key="ds_view", horizontal=True, format_func=VIEWS.get,
         help="the front fills the chart with a margin; or the whole cloud of sampled "
         "feasible designs, on linear or logarithmic axes")

fig = go.Figure()
pts = result["points"]
fig.add_scattergl(x=list(pts.get(x_m, [])), y=list(pts.get(y_m, [])), mode="markers",
                  name="sampled feasible designs (mean-value screen)", hoverinfo="skip",
                  marker={"color": "#9e9e9e", "size": 5, "opacity": 0.5})
ivs = {m: [c.intervals.get(m) for c in cands] for m in (x_m, y_m)}
iv = {m: (v if all(e is not None for e in v) else None) for m, v in ivs.items()}
xs = [r[x_m] for r in rows]
ys = [r[y_m] for r in rows]
boxes = vs.interval_boxes(xs, ys, x_iv=iv[x_m], y_iv=iv[y_m])
if boxes is not None:  # each design's 90% box: boxes that overlap are close calls
    fig.add_scatter(x=boxes[0], y=boxes[1], mode="lines", fill="toself", hoverinfo="skip",
                    name="90% intervals", line={"width": 0},
                    fillcolor="rgba(231,111,81,0.15)")


def error_bars(m: str) -> dict[str, Any] | None:
    """The front points' 90% intervals on one axis (None where the search gave none)."""
    if iv[m] is None:
        return None
    return {"type": "data", "symmetric": False, "color": "#e76f51", "thickness": 1,
            "array": [hi - r[m] for r, (_, hi) in zip(rows, iv[m], strict=True)],
            "arrayminus": [r[m] - lo for r, (lo, _) in zip(rows, iv[m], strict=True)]}


xt, yt = vs.title(x_m), vs.title(y_m)
# the pick's ring under the front's points, so that a click lands on a front point
fig.add_scatter(x=[xs[pick_i]], y=[ys[pick_i]], mode="markers", name=f"picked (#{pick_i})",
                hoverinfo="skip",
                marker={"color": "rgba(0,0,0,0)", "size": 20,
                        "line": {"color": "#1d3557", "width": 3}})
fig.add_scatter(x=xs, y=ys, error_x=error_bars(x_m), error_y=error_bars(y_m),
                mode="markers+lines" if len(rows) > 1 else "markers",
                name="front" if result["method"] == "sweep" else "best",
                customdata=list(range(len(rows))), text=[r["design"] for r in rows],
                marker={"color": "#e76f51", "size": 10}, line={"dash": "dot"},
                selected={"marker": {"opacity": 1.0}}, unselected={"marker": {"opacity": 1.0}},
                hovertemplate="#%{customdata}: %{text}<br>" + xt + " %{x:.4g}<br>" + yt
                + " %{y:.4g}<extra></extra>")
if ss.ds_view == "front":
    xr = vs.zoom_range(xs, lows=[v[0] for v in iv[x_m] or []],
                          highs=[v[1] for v in iv[x_m] or []])
    yr = vs.zoom_range(ys, lows=[v[0] for v in iv[y_m] or []],
                          highs=[v[1] for v in iv[y_m] or []])
    fig.update_xaxes(range=xr)
    fig.update_yaxes(range=yr)
elif ss.ds_view == "log":
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
fig.update_layout(xaxis_title=xt, yaxis_title=yt,
                  height=480, margin={"l": 10, "r": 10, "t": 50, "b": 10},
                  legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
common.chart(fig, key="ds_chart", on_select=chart_pick, selection_mode="points")

table = vs.result_rows(cands, objectives)
tie_line = ties_sentence(result.get("ties", []), first=0)  # the table counts from 0
if tie_line:
    st.info(tie_line)
st.caption(f"{len(cands)} {'front' if result['method'] == 'sweep' else 'best'} design(s); "
           "the accurate closed form's figures with their 90% intervals, as `dse evaluate` "
           "gives them (the mean-value model only screened the grid: the grey cloud). Select a "
           "row to pick a design (or click its point in the chart).")
st.dataframe(table, key="ds_table", hide_index=True, on_select="rerun",
             selection_mode="single-row-required")
c1, c2 = st.columns(2)
c1.download_button("Download the table (CSV)",
                   vs.csv_text(vs.result_rows(cands, objectives, digits=None)),
                   file_name="front.csv", mime="text/csv", key="ds_download_front")
if pts:
    c2.download_button("Download the sampled designs (CSV)", vs.points_csv(pts),
                       file_name="sampled.csv", mime="text/csv", key="ds_download_points")

pick = cands[pick_i]
state = views.state_from_design(cat, pick.design)
st.subheader(f"Picked design #{pick_i}")
st.caption(rows[pick_i]["design"])
st.dataframe([vs.closed_form_row("accurate closed form, the space's workloads",
                                 pick.metrics, pick.intervals)],
             key="ds_models", hide_index=True)
st.caption("The search screened the grid with the mean-value model (dse.model.symbolic) and "
           "re-evaluated every design it shows with the accurate closed form, as `dse "
           "evaluate` and What-if do; `--json` keeps the screen's figures as "
           "mean_value_diagnostic.")
c1, c2, c3 = st.columns(3)
if c1.button("Open in What-if", key="ds_open", type="primary"):
    common.open_in_whatif(state)
with c2:
    common.pin_button(state, key="ds_pin")
c3.download_button("Download design TOML", pick.toml, file_name="design.toml",
                   key="ds_download_toml")
families.show(result.get("families") or [], objectives)
