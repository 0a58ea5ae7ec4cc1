"""Studies: the Optuna studies of a storage, their history, Pareto front and importances."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import common
from dse import views
from dse.errors import DseError

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


def objective_values(t: Any, i: int) -> float:
    return t.values[i]


@st.cache_data(max_entries=64, show_spinner="Drawing the study")
def figures(url: str, stamp: float, name: str, i: int) -> dict[str, Any]:
    import optuna.visualization as vis

    study = search.load_study(url, name)
    objectives = study.user_attrs.get("objectives") or [f"objective {k}" for k in
                                                         range(len(study.directions))]
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    out: dict[str, Any] = {"n_complete": len(done)}
    if not done:
        return out
    out["history"] = vis.plot_optimization_history(
        study, target=lambda t: objective_values(t, i), target_name=objectives[i])
    if len(study.directions) > 1:
        # infeasible trials (the sampler's constraints, stored with each trial) are greyed
        out["pareto"] = vis.plot_pareto_front(study, target_names=list(objectives))
    try:
        out["importance"] = vis.plot_param_importances(
            study, target=lambda t: objective_values(t, i), target_name=objectives[i])
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

st.dataframe([{k: (", ".join(map(str, v)) if isinstance(v, list) else v)
               for k, v in s.items()} for s in listing], key="st_table", hide_index=True)
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
             format_func=lambda i: str(objectives[i]))
figs = figures(url, version(url), ss.st_study, ss.st_objective)
if figs["n_complete"] == 0:
    st.info("This study has no completed trial yet.")
    st.stop()
st.plotly_chart(figs["history"], key="st_fig_history")
if "pareto" in figs:
    st.plotly_chart(figs["pareto"], key="st_fig_pareto")
if "importance" in figs:
    st.plotly_chart(figs["importance"], key="st_fig_importance")
else:
    st.caption(f"No parameter importances: {figs.get('importance_error', '')}")
if st.button("Open the best design in What-if", key="st_open"):
    try:
        df = search.study_design_file(url, ss.st_study)
    except DseError as e:
        st.error(str(e))
    else:
        common.open_in_whatif(views.state_from_design(cat, df))
