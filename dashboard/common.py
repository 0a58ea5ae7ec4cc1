"""Shared state and cached calls of the dashboard pages.

The current design lives in `st.session_state["design_params"]` as the query-parameter form of
`dse.views.DesignState` (system, workload, schedule, overrides), so every page sees the same
design and the URL can carry it. A new session reads it from the URL.
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

import streamlit as st

from dashboard import charts
from dse import views
from dse.engine.report import Report
from dse.errors import DseError
from dse.io.resolve import report as resolved_report
from dse.model.design import Design
from dse.specs import Catalog
from dse.views.load import LOAD_PARAMS, Curve, LoadState
from dse.views.load import load_state as load_state_of

Params = tuple[tuple[str, str], ...]
# Widget values that outlive a visit to another page (Streamlit drops the state of widgets a
# run does not draw; the What-if widgets reload from the design instead).
PERSISTENT = ("ds_space", "ds_method", "ds_objectives", "ds_min_accuracy", "ds_max_latency",
              "ds_max_power", "ds_trials", "ds_seed", "ds_storage", "ds_study", "ds_pick",
              "st_storage", "st_study", "st_objective", "pp_groups", "pp_misses",
              "wi_timeline_seed", "ex_file", "ds_view", "st_trial", "cp_reference", "gl_filter",
              "ds_measured", "ds_family", "cp_joint")


def keep_widget_state() -> None:
    """Call once per run, before the page: keeps PERSISTENT widget values across pages."""
    for k in PERSISTENT:
        if k in st.session_state:
            st.session_state[k] = st.session_state[k]


@st.cache_resource(show_spinner=False)
def catalog() -> Catalog:
    return Catalog.load()


@st.cache_resource(show_spinner=False)
def freeze_heap(page: str) -> bool:
    """Once per page and server, at the end of its first run: collect, then move every object
    alive (modules, the catalog, the caches so far) out of the garbage collector's sight
    (gc.freeze). Streamlit collects all generations after every run (runner.postScriptGC),
    holding the interpreter's lock while it walks the heap: 70-80 ms of every What-if rerun,
    during which the run's last messages wait to be sent; a frozen heap leaves it the run's
    new objects (about 3 ms). Frozen objects freed by reference counting go as before."""
    gc.collect()
    gc.freeze()
    return True


def key(state: views.DesignState) -> Params:
    """A hashable cache key that determines the design completely."""
    return tuple(sorted(state.params().items()))


def state_of(params: Params | dict[str, str]) -> views.DesignState:
    return views.state_from_params(catalog(), dict(params))


def design_of(state: views.DesignState) -> Design:
    """The resolved design; raises InfeasibleError / SpecError with the reasons."""
    return state.design(catalog())


@st.cache_data(max_entries=1024, show_spinner=False)
def report(params: Params) -> Report:
    """The closed-form report of a design (cached per design), through the resolver (which
    refuses a design it cannot report on, e.g. a budget too small for one problem)."""
    s = state_of(params)
    return resolved_report(design_of(s), catalog().get("workload", s.workload),
                           intervals=False)


@st.cache_resource(max_entries=256, show_spinner=False)
def evaluate_at_of(params: Params) -> Any:
    """The design's perturbed evaluations (dse.uncertainty.evaluate_at, closed-form moves):
    one per design and server, remembered, so that its intervals and every joint interval it
    enters share the same evaluations (a joint interval then costs almost nothing)."""
    from dse.uncertainty import INTERVAL_METRICS, evaluate_at

    s = state_of(params)
    r = report(params)
    return evaluate_at(design_of(s), catalog().get("workload", s.workload),
                       [m for m in INTERVAL_METRICS if getattr(r, m) is not None], central=r)


@st.cache_data(max_entries=256, show_spinner=False)
def report_with_intervals(params: Params) -> Report:
    """The report with its 90% intervals and provenance, as `dse evaluate` gives them
    (dse.uncertainty: the factors' moves by the closed form, 20-90 ms; cached per design)."""
    from dse.uncertainty import attach

    s = state_of(params)
    return attach(report(params), design_of(s), catalog().get("workload", s.workload),
                  at=evaluate_at_of(params))


@st.cache_data(max_entries=1024, show_spinner=False)
def paper_j_per_token(params: Params) -> float:
    """Energy per token in the paper's accounting (each device's operating power over the
    whole latency; dse.paper.reproduce.paper_energy), which its energy gains use."""
    from dse.paper.reproduce import paper_energy

    s = state_of(params)
    return paper_energy(design_of(s), catalog().get("workload", s.workload),
                        report(params)).j_per_token


@st.cache_data(max_entries=1024, show_spinner=False)
def explain(params: Params, base_params: Params, name: str) -> list[str]:
    """Why the design is slower or costlier than the baseline `name` (dse.views.explain)."""
    s, b = state_of(params), state_of(base_params)
    w = catalog().get("workload", s.workload)
    return views.explain_vs_baseline(design_of(s), report(params), design_of(b),
                                     report(base_params), name, prompt_tokens=w.prompt_tokens,
                                     step_tokens=w.draft_step_tokens_mean)


@st.cache_data(max_entries=1024, show_spinner=False)
def joint_intervals(params: Params, other_params: Params, moves: str = "closed-form"
                    ) -> dict[str, tuple[float, float]]:
    """The joint 90% interval of (design - other) on latency, J/token and accuracy, both on
    the first design's workload (dse.uncertainty.joint through views.joint_intervals). moves:
    "closed-form" (as `dse evaluate`: What-if, Compare) or "mean-value" (the search's
    screen)."""
    a, b = state_of(params), state_of(other_params)
    w = catalog().get("workload", a.workload)
    same = moves == "closed-form" and a.workload == b.workload  # the evaluations to reuse
    return views.joint_intervals((design_of(a), report(params)),
                                 (design_of(b), report(other_params)), w, moves_by=moves,
                                 at_a=evaluate_at_of(params) if same else None,
                                 at_b=evaluate_at_of(other_params) if same else None)


@st.cache_data(max_entries=256, show_spinner=False)
def timeline(params: Params, seed: int) -> views.Timeline:
    s = state_of(params)
    return views.problem_timeline(design_of(s), catalog().get("workload", s.workload), seed)


@st.cache_data(max_entries=256, show_spinner=False)
def rooflines(params: Params) -> list[views.RoleRoofline]:
    s = state_of(params)
    return views.rooflines(design_of(s), catalog().get("workload", s.workload))


@st.cache_data(max_entries=256, show_spinner=False)
def tornado(params: Params) -> list[dict[str, Any]]:
    s = state_of(params)
    return views.tornado(design_of(s), catalog().get("workload", s.workload))


def current_state() -> views.DesignState:
    """The session's design; on a session's first run, the one in the URL (or the default,
    with a warning when the URL's parameters are invalid)."""
    ss = st.session_state
    if "design_params" not in ss:
        qp = {k: st.query_params[k] for k in st.query_params}
        state = views.default_state()
        if qp:  # a bad parameter is dropped with a warning naming it, the rest kept
            state, warnings = views.url_state(catalog(), qp)
            if warnings:
                ss["design_params_warning"] = "The link: " + "; ".join(warnings)
        ss["design_params"] = state.params()
    try:
        return state_of(ss["design_params"])
    except DseError as e:  # e.g. a catalog that changed under a running session
        ss["design_params_warning"] = f"The design was reset: {e}"
        ss["design_params"] = views.default_state().params()
        return views.default_state()


def set_state(state: views.DesignState) -> None:
    """Make `state` the session's design and mirror it, with the pinned designs, in the
    URL."""
    st.session_state["design_params"] = state.params()
    _sync_url()


def _url_params() -> dict[str, str | list[str]]:
    ss = st.session_state
    out: dict[str, str | list[str]] = dict(ss.get("design_params") or {})
    out |= load_state().params()  # the load (dse.views.load), where not its defaults
    pins()  # a session's first run reads the pinned set from the URL before rewriting it
    if ss.get("pins"):
        out[views.PIN_PARAM] = list(ss["pins"])
    return out


def _sync_url() -> None:
    want = _url_params()
    have: dict[str, str | list[str]] = {k: st.query_params[k] for k in st.query_params
                                        if k != views.PIN_PARAM}
    if views.PIN_PARAM in st.query_params:
        have[views.PIN_PARAM] = st.query_params.get_all(views.PIN_PARAM)
    if have != want:
        st.query_params.from_dict(want)


# ------------------------------------------------------------------------------ the load

def load_state() -> LoadState:
    """The session's load (the Load page's controls, What-if's rate); on a session's first
    run, the one in the URL."""
    ss = st.session_state
    if "load_params" not in ss:
        state, warnings = load_state_of(
            {k: st.query_params[k] for k in st.query_params if k in LOAD_PARAMS})
        if warnings:
            ss["design_params_warning"] = "The link: " + "; ".join(warnings)
        ss["load_params"] = state.params()
    return load_state_of(ss["load_params"])[0]


def set_load_state(state: LoadState) -> None:
    """Make `state` the session's load and mirror it in the URL."""
    st.session_state["load_params"] = state.params()
    _sync_url()


LoadKey = tuple[tuple[str, str], ...]


@st.cache_data(max_entries=256, show_spinner=False)
def load_curve(params: Params, load: LoadKey, name: str) -> Curve:
    """A design at every rate of the load's grid below its capacity (dse.views.load, the
    single-stream report with its intervals reused); `load`: LoadState.curve_params."""
    from dse.views.load import serve_curve

    s = state_of(params)
    return serve_curve(name, design_of(s), catalog().get("workload", s.workload),
                       load_state_of(dict(load))[0], rep=report_with_intervals(params))


@st.cache_data(max_entries=256, show_spinner=False)
def load_curve_at(params: Params, load: LoadKey, name: str, rate: float | None) -> Curve:
    """load_curve with the chosen rate's point (dse.views.load.with_rate): a new rate serves
    one more point, not the curve again."""
    from dse.views.load import with_rate

    s = state_of(params)
    ls = replace(load_state_of(dict(load))[0], rate=rate)
    return with_rate(load_curve(params, load, name), design_of(s),
                     catalog().get("workload", s.workload), ls,
                     rep=report_with_intervals(params))


@st.cache_data(max_entries=256, show_spinner=False)
def load_point(params: Params, rate: float) -> dict[str, Any]:
    """A design at one rate, the closed form on the workload's lengths (What-if's load
    control: `dse serve --system ... --rate R`)."""
    from dse.views.load import serve_at

    s = state_of(params)
    return serve_at(design_of(s), catalog().get("workload", s.workload), rate,
                    LoadState(rate=rate), rep=report_with_intervals(params))


# ------------------------------------------------------------------------------ pinned designs

def pins() -> list[views.DesignState]:
    """The pinned designs (the Compare page shows them side by side); on a session's first
    run, the ones in the URL."""
    ss = st.session_state
    if "pins" not in ss:
        states, errors = views.decode_pins(catalog(), st.query_params.get_all(views.PIN_PARAM))
        ss["pins"] = [views.encode_pin(s) for s in states]
        if errors:
            ss["pins_warning"] = "; ".join(errors)
    states, _ = views.decode_pins(catalog(), ss["pins"])
    return states


def is_pinned(state: views.DesignState) -> bool:
    return state in pins()


def pin(state: views.DesignState) -> None:
    """Add a design to the pinned set (at most views.MAX_PINS; a pinned design is kept
    once) and mirror the set in the URL."""
    cur = pins()
    if state not in cur and len(cur) < views.MAX_PINS:
        st.session_state["pins"] = [*st.session_state["pins"], views.encode_pin(state)]
    _sync_url()


def unpin(state: views.DesignState) -> None:
    st.session_state["pins"] = [views.encode_pin(s) for s in pins() if s != state]
    _sync_url()


def unpin_all() -> None:
    st.session_state["pins"] = []
    _sync_url()


def pin_button(state: views.DesignState, key: str, label: str = "Pin to compare") -> None:
    """A button that pins `state` (disabled, saying so, when it is pinned or the set is
    full)."""
    n = len(pins())
    if is_pinned(state):
        st.button("Pinned", key=key, disabled=True, help="this design is on the Compare page")
    else:
        st.button(label, key=key, on_click=pin, args=(state,), disabled=n >= views.MAX_PINS,
                  help=f"add it to the Compare page ({n} of {views.MAX_PINS} pinned)")


# ------------------------------------------------------------------------------- tooltips

# Report fields and widget names -> the glossary's term (dse.views.glossary).
TIP_TERMS = {"goodput_tokens_per_s": "goodput",
             "j_per_token": "J/token", "accuracy": "accuracy", "p_accept": "p_accept"}


def tip(name: str) -> str:
    """A widget's or metric's tooltip from the glossary (the Glossary page lists them all)."""
    from dse.views.glossary import term_help

    return term_help(TIP_TERMS.get(name, name))


# --------------------------------------------------------------------------------- charts

# Every chart's toolbar saves an SVG (vector, for papers and slides), named after its key.
def chart_config(name: str) -> dict[str, Any]:
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": "svg", "filename": name},
            # a short toolbar, clear of the titles: save, zoom, pan, reset
            "modeBarButtonsToRemove": ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d",
                                       "autoScale2d"]}


def chart(fig: Any, key: str, **kwargs: Any) -> Any:
    """st.plotly_chart with the house configuration (SVG download, no Plotly logo)."""
    return st.plotly_chart(fig, key=key, config=chart_config(key), **kwargs)


def vega(c: charts.Chart, key: str) -> Any:
    """A Vega-Lite chart of dashboard/charts.py: its rows as the data, its specification
    apart (a concatenation of panels keeps its own width; a single chart takes the
    column's)."""
    import pandas as pd

    concat = "hconcat" in c.spec or "vconcat" in c.spec
    return st.vega_lite_chart(pd.DataFrame(c.rows), c.spec, key=key,
                              width="content" if concat else "stretch")


def open_in_whatif(state: views.DesignState) -> None:
    """Load a design into What-if (its widgets reload from it) and go there."""
    for k in [k for k in st.session_state if str(k).startswith("wi_")]:
        del st.session_state[k]
    set_state(state)
    st.switch_page("dashboard/whatif.py", query_params=state.params())


def show_warning() -> None:
    msg = st.session_state.pop("design_params_warning", None)
    if msg:
        st.warning(msg)


@st.cache_data(show_spinner=False)
def paper_rows() -> list[Any]:
    """`dse reproduce`'s rows (slow: evaluated once per server)."""
    from dse.paper import reproduce

    return reproduce.rows(catalog())
