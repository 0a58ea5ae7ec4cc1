"""Studies: the Optuna studies of a storage; per study its history (best so far in the
objective's direction, infeasible trials apart), its front, its best (Pareto) trials to open
in What-if or pin, and direction-aware parameter importances."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard import common
from dse import views
from dse.errors import DseError
from dse.views import search as vs

st.title("Studies")
try:
    from dse import search
except ImportError as e:
    st.info(f"Optuna studies need the search module, which is not in this build ({e}).")
    st.stop()
import optuna  # noqa: E402  (the search module above needs it)

optuna.logging.set_verbosity(optuna.logging.WARNING)  # the page shows its own progress

ss = st.session_state
cat = common.catalog()


def version(url: str) -> float:
    """Cache key part that changes when a sqlite storage is written."""
    path = views.sqlite_file(url)
    return path.stat().st_mtime if path is not None and path.is_file() else 0.0


@st.cache_data(max_entries=32, show_spinner="Reading the studies")
def studies(url: str, stamp: float) -> list[dict[str, Any]]:
    return search.list_studies(url)


# A resource cache (not pickled: a design's spec does not pickle); the page only reads it.
@st.cache_resource(max_entries=64, show_spinner="Reading the study")
def study_view(url: str, stamp: float, name: str, i: int) -> dict[str, Any]:
    """What the page draws of objective `i`: its history, the best (Pareto) trials with their
    designs, every feasible trial's values (for the front) and the importances."""
    from dse.search.candidates import trial_candidate

    study = search.load_study(url, name)
    n = len(study.directions)
    objectives = list(study.user_attrs.get("objectives") or [f"objective {k}"
                                                             for k in range(n)])
    dirs = [1 if d.name == "MINIMIZE" else -1 for d in study.directions]
    pts = [vs.trial_points(study.trials, k) for k in range(n)]
    out: dict[str, Any] = {"n_complete": len(pts[i]), "objectives": objectives, "dirs": dirs,
                           "history": vs.history(pts[i], dirs[i])}
    out["feasible"] = [[p.value for p in pk] for pk in
                       ([q for q in pk if q.feasible] for pk in pts)]
    best = search.best_trials(study)
    out["best"] = [(t.number, list(t.values), trial_candidate(t)) for t in best]
    try:
        out["importance"] = vs.param_importances(study, i)
    except (ValueError, RuntimeError) as e:  # too few trials, or no varying parameter
        out["importance_error"] = str(e)
    return out


ss.setdefault("st_storage", search.DEFAULT_STORAGE)
c1, c2 = st.columns([4, 1])
c1.text_input("Optuna storage URL", key="st_storage",
              help="sqlite:///FILE (relative to the directory the app was started in), or "
              "any RDB URL Optuna accepts")
c2.button("Refresh", key="st_refresh", on_click=studies.clear)
url = ss.st_storage.strip() or search.DEFAULT_STORAGE
path = views.sqlite_file(url)
if path is not None and not path.is_file():
    st.info(f"No study storage at {path} yet: run an optimize (Design space page or "
            "`dse optimize`) to create it.")
    st.stop()
try:
    listing = studies(url, version(url))
except (DseError, ImportError, ValueError, RuntimeError) as e:
    st.error(f"Cannot open {url}: {e}")
    st.stop()
if not listing:
    st.info(f"{url} holds no study yet.")
    st.stop()

st.dataframe(vs.study_rows(listing), key="st_table", hide_index=True)
names = [s["name"] for s in listing]
if ss.get("st_study") not in names:
    ss["st_study"] = names[0]
c1, c2 = st.columns(2)
c1.selectbox("Study", names, key="st_study")
info = listing[names.index(ss.st_study)]
objectives = info["objectives"]
if ss.get("st_objective") not in range(len(objectives)):
    ss["st_objective"] = 0
c2.selectbox("Objective", range(len(objectives)), key="st_objective",
             format_func=lambda i: vs.title(str(objectives[i])))
view = study_view(url, version(url), ss.st_study, ss.st_objective)
if view["n_complete"] == 0:
    st.info("This study has no completed trial yet.")
    st.stop()
i = ss.st_objective
obj, d = view["objectives"][i], view["dirs"][i]
h: vs.History = view["history"]
MARGIN = {"l": 10, "r": 10, "t": 60, "b": 10}
fig = go.Figure()
fig.add_scatter(x=h.numbers, y=h.values, mode="markers", name="feasible trial",
                marker={"color": "#457b9d", "size": 7},
                hovertemplate="trial %{x}<br>%{y:.4g}<extra></extra>")
fig.add_scatter(x=h.numbers, y=h.best, mode="lines", line={"shape": "hv", "color": "#e76f51"},
                name=f"best so far ({'minimum' if d > 0 else 'maximum'})")
if h.infeasible_numbers:
    fig.add_scatter(x=h.infeasible_numbers, y=h.infeasible_values, mode="markers",
                    name=f"infeasible ({h.n_infeasible})", hoverinfo="skip",
                    marker={"color": "#bdbdbd", "size": 5, "symbol": "x"})
fig.update_yaxes(range=h.y_range, title=vs.title(str(obj)) + ", mean-value model")
fig.update_xaxes(title="trial number")
fig.update_layout(title="History", height=380, margin=MARGIN,
                  legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"})
common.chart(fig, key="st_fig_history")
st.caption(f"{len(h.numbers)} feasible and {h.n_infeasible} infeasible completed trial(s) "
           "(infeasible: Optuna's constraint value > 0, or no such design); the axis is set "
           "by the feasible ones, so an infeasible trial off it is not drawn.")

best = view["best"]
if len(view["objectives"]) > 1:
    fx, fy = view["feasible"][0], view["feasible"][1]
    fig = go.Figure()
    fig.add_scatter(x=fx, y=fy, mode="markers", name="feasible trial", hoverinfo="skip",
                    marker={"color": "#9e9e9e", "size": 6, "opacity": 0.6})
    fig.add_scatter(x=[v[0] for _, v, _ in best], y=[v[1] for _, v, _ in best],
                    mode="markers+lines", name="best (Pareto) trials", line={"dash": "dot"},
                    text=[f"trial {n}" for n, _, _ in best],
                    marker={"color": "#e76f51", "size": 10},
                    hovertemplate="%{text}<br>%{x:.4g}, %{y:.4g}<extra></extra>")
    fig.update_layout(title="Front", height=400, margin=MARGIN,
                      xaxis_title=vs.title(str(view["objectives"][0])),
                      yaxis_title=vs.title(str(view["objectives"][1])),
                      legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"})
    common.chart(fig, key="st_fig_pareto")

if "importance" in view:
    imp = view["importance"]
    names_ = list(imp)[::-1]
    fig = go.Figure(go.Bar(x=[imp[k] for k in names_], y=names_, orientation="h",
                           marker={"color": "#457b9d"},
                           hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    fig.update_layout(title="Parameter importances", height=max(240, 28 * len(names_) + 80),
                      margin=MARGIN, xaxis_title="importance (share of the total, 0-1)")
    common.chart(fig, key="st_fig_importance")
    st.caption(f"Importance of each parameter for reaching the best 10% of the feasible trials "
               f"on {vs.label(str(obj)).words} ({'lowest' if d > 0 else 'highest'} values): "
               "Optuna's PED-ANOVA, on the feasible trials only, normalised to sum 1.")
else:
    st.caption(f"No parameter importances: {view.get('importance_error', '')}")

if not best:
    st.info("No feasible trial with a design yet.")
    st.stop()
st.subheader("Best trials" if len(best) > 1 else "Best trial")
nums = [n for n, _, _ in best]
table = vs.result_rows([c for _, _, c in best], [str(o) for o in view["objectives"]])
st.dataframe([{"trial": n, **{k: v for k, v in r.items() if k != "#"}}
              for n, r in zip(nums, table, strict=True)], key="st_best",
             hide_index=True)
if ss.get("st_trial") not in nums:
    ss["st_trial"] = nums[0]
st.selectbox("Design to open or pin", nums, key="st_trial",
             format_func=lambda n: vs.trial_choice(
                 n, [str(o) for o in view["objectives"]], best[nums.index(n)][1]))
chosen = best[nums.index(ss.st_trial)][2]
state = views.state_from_design(cat, chosen.design)
try:
    cf = common.report_with_intervals(common.key(state))
except DseError as e:
    st.warning(f"No closed form for this design: {e}")
else:
    st.dataframe([vs.closed_form_row(f"closed form (What-if), {state.workload}",
                                     cf.to_dict(), cf.intervals)],
                 key="st_closed_form", hide_index=True)
    st.caption("The trials' values are the mean-value model's (what the study optimises); "
               "this is the chosen design's accurate closed form with its 90% interval, as "
               "What-if, `dse optimize` and `dse evaluate` give them.")
c1, c2 = st.columns(2)
if c1.button("Open in What-if", key="st_open", type="primary"):
    common.open_in_whatif(state)
with c2:
    common.pin_button(state, key="st_pin")
