"""The dashboard under streamlit.testing.v1.AppTest: every page renders without an exception,
and widgets (addressed by key) drive exactly what `dse.engine.closed_form` computes for the same
overrides; the design round-trips through the URL's query parameters."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from dashboard.whatif_controls import HARDWARE
from dse import views
from dse.devices.registry import KINDS
from dse.engine.evaluate import evaluate
from dse.io.resolve import override_spec as with_overrides
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.paper.reproduce import _row

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
TEST_SPACE = str(ROOT / "tests" / "data" / "dashboard-space.toml")


def run_app(**query: str) -> AppTest:
    """A new session's first run, What-if's *Hardware and models* expander open (its widgets
    are drawn only while it is open, and the tests address them by key)."""
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.session_state[HARDWARE] = True
    return at.run()


def follow_up(at: AppTest) -> AppTest:
    """The run a browser makes a moment after a session's first What-if run (its fragment's
    timer; AppTest runs none), which draws what the first left out: the open tab's charts."""
    return at.run() if "wi_charts_pending" in at.session_state else at


def vega(at: AppTest) -> list:
    """The page's Vega-Lite charts (dashboard/charts.py)."""
    return list(at.get("vega_lite_chart"))


def vega_rows(chart) -> pd.DataFrame:
    """A Vega-Lite chart's data, as the page sent it."""
    return convert_arrow_bytes_to_pandas_df(chart.proto.data.data)


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    (m,) = [m for m in at.metric if m.label == label]
    return m.value


def expected(cat, system: str, workload: str, schedule: str, **over):
    spec = with_overrides(cat.get("system", system), over)
    return evaluate(build_design(cat, spec, PRESETS[schedule]), cat.get("workload", workload))


def test_whatif_default_shows_the_closed_form(cat):
    at = ok(run_app())
    rep = expected(cat, views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD, views.DEFAULT_SCHEDULE)
    assert metric(at, "Latency (s/problem)") == f"{rep.latency_s_per_problem:.3f}"
    assert metric(at, "Energy (J/token)") == f"{rep.j_per_token:.3f}"
    # each headline metric carries its unit whole in its label and a bare number as its value:
    # a value with its unit after it was cut in a fifth of the page ("4.000 J/to...")
    for label in ("Latency (s/problem)", "Goodput (tok/s)", "Energy (J/token)", "Accuracy (%)"):
        assert float(metric(at, label)) >= 0 and len(label) <= 20
    assert all(len(m.value) <= 8 for m in at.metric), [(m.label, m.value) for m in at.metric]
    # the baselines are the paper's GPU systems: the FPGA draft moves to the PRM's GPU
    brsd = expected(cat, "paper-config1-3090", views.DEFAULT_WORKLOAD, "brsd")
    assert metric(at, "Speed-up vs brsd") == (
        f"{brsd.latency_s_per_problem / rep.latency_s_per_problem:.2f}x")
    # a session's first run leaves the charts out (the browser shows the numbers first); its
    # fragment's timed rerun, a full rerun here, draws the open tab's two
    assert len(at.get("plotly_chart")) == len(vega(at)) == 0
    assert "Drawing the charts..." in [c.value for c in at.caption]
    ok(at.run())
    assert len(vega(at)) == 2  # the open tab: latency and energy (Vega-Lite)
    assert at.query_params["system"] == views.DEFAULT_SYSTEM
    for tab, charts in (("Timeline", 1), ("Roofline", 1), ("Sensitivity", 1),
                        ("Command line", 0)):
        at.session_state["wi_tab"] = tab
        ok(at.run())
        assert len(at.get("plotly_chart")) == charts, tab
    assert at.code[0].value.startswith(f"dse evaluate --system {views.DEFAULT_SYSTEM}")


def test_whatif_uncertainty_tab(cat):
    """The Uncertainty tab: error bars for this design and its baselines, the intervals in
    words and the provenance table, all from dse.uncertainty.attach."""
    from dse.uncertainty import attach

    at = ok(run_app())
    at.session_state["wi_tab"] = "Uncertainty"
    ok(at.run())
    assert len(vega(at)) == 1 and not at.get("plotly_chart")
    spec = cat.get("system", views.DEFAULT_SYSTEM)
    d = build_design(cat, spec, PRESETS[views.DEFAULT_SCHEDULE])
    w = cat.get("workload", views.DEFAULT_WORKLOAD)
    full = attach(evaluate(d, w), d, w)
    lo, hi = full.intervals["latency_s_per_problem"]
    assert any(f"latency {lo:.3f}-{hi:.3f} s" in c.value for c in at.caption)
    rows = vega_rows(vega(at)[0])  # the chart's error bars are the same interval
    (this,) = rows[(rows.order == 0) & (rows.metric == "latency_s_per_problem")].itertuples()
    assert (this.low, this.value, this.high) == pytest.approx(
        (lo, full.latency_s_per_problem, hi))
    assert set(rows.order) == set(range(5))  # this design, the target alone, 3 GPU baselines
    (table,) = [t.value for t in at.table if "component" in t.value.columns]
    assert set(table["component"]) >= {"draft", "prm", "target"}
    assert set(table["status"]) <= {"calibrated", "cross-validated", "extrapolated"}


def test_accept_threshold_matches_dse_evaluate(cat):
    """Raising the accept threshold lowers p_accept and changes latency exactly as
    `dse evaluate --set accept_threshold=0.85` does."""
    at = ok(run_app())
    before = at.session_state["wi_report"]
    at.slider(key="wi_accept_threshold").set_value(0.85)
    ok(at.run())
    after = at.session_state["wi_report"]
    want = expected(cat, views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD, views.DEFAULT_SCHEDULE,
                    accept_threshold=0.85)
    assert after["p_accept"] < before["p_accept"]
    assert after["p_accept"] == want.p_accept
    assert after["latency_s_per_problem"] == want.latency_s_per_problem
    assert after["latency_s_per_problem"] != before["latency_s_per_problem"]
    assert metric(at, "Accept probability") == f"{want.p_accept:.3f}"
    assert at.query_params["accept_threshold"] == "0.85"


def test_url_opens_the_shared_design(cat):
    at = ok(run_app(system="paper-config2-v80", workload="gsm8k", schedule="brsd",
                    accept_threshold="0.6", step_ahead="true"))
    assert at.selectbox(key="wi_system").value == "paper-config2-v80"
    assert at.slider(key="wi_accept_threshold").value == 0.6
    assert at.toggle(key="wi_step_ahead").value is True
    rep = at.session_state["wi_report"]
    want = expected(cat, "paper-config2-v80", "gsm8k", "brsd_stepahead", accept_threshold=0.6)
    assert rep["latency_s_per_problem"] == want.latency_s_per_problem
    assert rep["schedule"] == "brsd_stepahead"


def test_bad_url_warns_and_opens_the_default():
    at = ok(run_app(system="no-such-system"))
    assert any("no-such-system" in w.value for w in at.warning)
    assert at.selectbox(key="wi_system").value == views.DEFAULT_SYSTEM
    assert at.session_state["wi_report"] is not None


def test_hardware_widgets_drawn_only_while_open(cat):
    """Collapsed, *Hardware and models* draws none of its widgets (each would cost the browser
    a re-render on every run); opened, it draws them at the design's values, and the design,
    its URL and its numbers stay as they were."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    ok(follow_up(at))
    assert not [w for w in at.selectbox if w.key == "wi_target_device"]
    before = metric(at, "Latency (s/problem)"), dict(at.query_params)
    at.session_state[HARDWARE] = True
    ok(at.run())
    spec = views.default_state().spec(cat)
    assert at.selectbox(key="wi_target_device").value == spec.target_device
    assert (metric(at, "Latency (s/problem)"), dict(at.query_params)) == before


def test_whatif_charts_keep_their_specification_across_a_threshold(cat):
    """What-if's two charts are Vega-Lite specifications with their data apart
    (dashboard/charts.py): a new threshold sends new rows under the same specification, so the
    page's charts take them in place. The rows are the reports' numbers."""
    at = ok(follow_up(run_app()))
    specs = [c.proto.spec for c in vega(at)]
    lat = vega_rows(vega(at)[0])
    at.slider(key="wi_accept_threshold").set_value(0.8)
    ok(at.run())
    assert [c.proto.spec for c in vega(at)] == specs
    for spec in specs:
        assert "values" not in json.dumps(json.loads(spec).get("data", {}))
    rep = expected(cat, views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD, views.DEFAULT_SCHEDULE,
                   accept_threshold=0.8)
    rows = vega_rows(vega(at)[0])
    this = rows[(rows.order == 0) & rows.part.notna()]
    assert this.value.sum() == pytest.approx(sum(rep.latency_breakdown_s.values()))
    assert not rows.equals(lat)
    (total,) = rows[(rows.order == 0) & rows.total.notna()].itertuples()
    assert total.total == pytest.approx(rep.latency_s_per_problem)
    assert total.low < total.total < total.high
    energy = vega_rows(vega(at)[1])
    assert energy.value.sum() == pytest.approx(rep.energy_j_per_problem, rel=1e-9)
    assert any(c.value.startswith(f"Energy per problem: {rep.energy_j_per_problem:.0f} J")
               for c in at.caption)


def test_infeasible_design_shows_why():
    at = ok(follow_up(run_app()))
    at.selectbox(key="wi_target_model").set_value("qwen2.5-math-72b-instruct")
    ok(at.run())
    assert at.session_state["wi_report"] is None
    (err,) = at.error
    assert "infeasible" in err.value and "qwen2.5-math-72b-instruct needs" in err.value
    assert not at.metric


def test_preset_resets_knobs_and_gpu_draft_drops_the_fpga_engine(cat):
    at = ok(run_app(accept_threshold="0.85"))
    ok(at.button(key="wi_reset").click().run())
    assert at.slider(key="wi_accept_threshold").value == (
        cat.get("system", views.DEFAULT_SYSTEM).accept_threshold)
    assert at.query_params == {"system": views.DEFAULT_SYSTEM,
                               "workload": views.DEFAULT_WORKLOAD, "schedule": "heteroreason"}
    assert at.number_input(key="wi_fpga_clock_MHz").value == 300.0
    at.selectbox(key="wi_draft_device").set_value("rtx-4090")
    ok(at.run())
    assert at.selectbox(key="wi_draft_serving").value == KINDS.get("gpu").default_software
    assert at.selectbox(key="wi_draft_precision").value == "w8a8"  # valid on a GPU too
    assert not [w for w in at.number_input if w.key == "wi_fpga_clock_MHz"]
    assert at.query_params["draft_device"] == "rtx-4090"
    rep = at.session_state["wi_report"]
    want = expected(cat, views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD, "heteroreason",
                    draft_device="rtx-4090", draft_serving=KINDS.get("gpu").default_software)
    assert rep["latency_s_per_problem"] == want.latency_s_per_problem


def test_schedule_flags(cat):
    at = ok(run_app())
    at.selectbox(key="wi_schedule").set_value("rsd")
    ok(at.run())
    assert not at.toggle(key="wi_backtracking").value
    at.toggle(key="wi_step_ahead").set_value(True)
    ok(at.run())
    assert at.session_state["wi_report"]["schedule"] == "custom(step_ahead)"
    assert at.query_params["step_ahead"] == "true"


def test_design_space_sweep_point_opens_in_whatif(cat):
    at = ok(run_app())
    ok(at.switch_page("dashboard/design_space.py").run())
    at.text_input(key="ds_space").set_value(TEST_SPACE)
    ok(at.button(key="ds_run").click().run())
    assert not at.error and "designs" in at.success[0].value
    assert any("pessimistic end" in c.value for c in at.caption)
    front = next(t for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
                 if t.get("name") == "front")
    assert front["error_x"]["array"] and front["error_y"]["arrayminus"]  # 90% intervals
    assert len(at.session_state["ds_result"]["candidates"]) >= 2
    at.session_state["ds_table"] = {"selection": {"rows": [1]}}  # the table row is the pick
    ok(at.run())
    assert at.session_state["ds_pick"] == 1
    ok(at.button(key="ds_open").click().run())
    assert at.title[0].value == "What-if"
    state = views.state_from_params(cat, at.session_state["design_params"])
    assert at.query_params["system"] == state.system
    rep = at.session_state["wi_report"]
    assert rep["schedule"] == state.schedule.name and rep["workload"] == "math500"


def test_design_space_optimize_then_studies(tmp_path):
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    at = ok(run_app())
    ok(at.switch_page("dashboard/studies.py").run())
    at.text_input(key="st_storage").set_value(storage)
    ok(at.run())
    assert "No study storage" in at.info[0].value
    ok(at.switch_page("dashboard/design_space.py").run())
    at.text_input(key="ds_space").set_value(TEST_SPACE)
    at.radio(key="ds_method").set_value("Optimize")
    at.number_input(key="ds_trials").set_value(4)
    at.text_input(key="ds_storage").set_value(storage)
    at.text_input(key="ds_study").set_value("dash-test")
    ok(at.button(key="ds_run").click().run())
    assert not at.error and "dash-test" in at.success[0].value
    ok(at.switch_page("dashboard/studies.py").run())
    assert at.text_input(key="st_storage").value == storage
    assert at.selectbox(key="st_study").value == "dash-test"
    assert len(at.get("plotly_chart")) >= 2  # history, Pareto front (+ importances)
    ok(at.button(key="st_open").click().run())
    assert at.title[0].value == "What-if" and at.session_state["wi_report"] is not None


def test_paper_page(monkeypatch):
    from dashboard import common, paper_intervals

    fake = [_row("speedup_vs_brsd.u280.config1.math500", "d", 1.01, 1.12, 1.05, "ratio"),
            _row("accuracy.config1.rsd.math500", "d", 60.0, 60.0, 70.0, "accuracy")]
    monkeypatch.setattr("dse.paper.reproduce.rows", lambda cat: fake)
    monkeypatch.setattr("dse.paper.coverage.paper_rows", lambda cat: fake)
    common.paper_rows.clear()
    paper_intervals.interval_rows.clear()
    try:
        at = ok(run_app())
        ok(at.switch_page("dashboard/paper.py").run())
        assert metric(at, "Rows within tolerance") == "1 / 2"
        assert len(at.get("plotly_chart")) == 1
        at.toggle(key="pp_misses").set_value(True)
        ok(at.run())
        assert len(at.dataframe[0].value) == 1
    finally:
        common.paper_rows.clear()
        paper_intervals.interval_rows.clear()


def test_export_bundle_is_the_exporters(cat):
    render_bundle = pytest.importorskip("dse.exporters").render_bundle
    at = ok(run_app(accept_threshold="0.85"))
    ok(at.switch_page("dashboard/export.py").run())
    st = views.state_from_params(cat, at.session_state["design_params"])
    assert st.overrides == {"accept_threshold": 0.85}
    assert at.query_params["accept_threshold"] == "0.85"
    files = render_bundle(cat, build_design(cat, st.spec(cat), st.schedule),
                          cat.get("workload", st.workload))
    shown = at.dataframe[0].value
    assert dict(zip(shown["file"], shown["bytes"], strict=True)) == {
        p: len(b) for p, b in files.items()}
    assert at.download_button(key="ex_download").proto.url.endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(views.bundle_zip(files))) as z:
        assert sorted(z.namelist()) == sorted(files)


def test_preset_switch_between_fpga_and_gpu_drafts_shows_the_presets_numbers(cat):
    """From the U280 preset to the Jetson one (a GPU draft) and back: the FPGA preset's engine
    and clock do not ride along as overrides (the resolver would refuse an FPGA engine on a GPU
    draft and show no numbers); each preset shows its own closed form and a clean URL."""
    at = ok(run_app())
    for system in ("paper-config1-jetson", "paper-config2-u280", "paper-config1-3090"):
        at.selectbox(key="wi_system").set_value(system)
        ok(at.run())
        want = expected(cat, system, views.DEFAULT_WORKLOAD, "heteroreason")
        assert metric(at, "Latency (s/problem)") == f"{want.latency_s_per_problem:.3f}"
        assert dict(at.query_params) == {"system": system, "workload": views.DEFAULT_WORKLOAD,
                                         "schedule": "heteroreason"}


def test_whatif_widgets_are_drawn_with_their_session_values_as_defaults():
    """A browser that draws a What-if widget afresh from a later run's message (a click during
    the session's first runs: CI's early-click test caught it) uses the widget's default, not
    the value it was given by the session state on an earlier run. Each widget's default is
    its current value, so such a widget shows, and sends back, the design's value: a default
    of the first preset made its callback load that preset over the user's click."""
    at = ok(run_app(system="paper-config1-jetson", workload="gsm8k", schedule="brsd",
                    accept_threshold="0.85", max_backtracks="3"))
    ok(at.run())  # a later run: the widgets' values now come from the session, not set anew
    widgets = [*at.selectbox, *at.radio, *at.slider, *at.number_input, *at.toggle]
    checked = 0
    for w in widgets:
        if not str(w.key).startswith("wi_"):
            continue
        p = w.proto
        if w in at.selectbox or w in at.radio:
            shown = p.options[p.default]
            want = w.format_func(w.value) if w.format_func else str(w.value)
            assert shown == want, (w.key, shown, want)
        elif w in at.slider:
            assert list(p.default) == [w.value], (w.key, list(p.default), w.value)
        else:
            assert p.default == w.value, (w.key, p.default, w.value)
        checked += 1
    assert checked >= 20  # the sidebar's widgets and the roles' device, model, precision...
    assert at.selectbox(key="wi_system").value == "paper-config1-jetson"
    assert at.slider(key="wi_accept_threshold").value == 0.85
