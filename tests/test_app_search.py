"""The Design space and Studies pages under AppTest, by widget key: the results table as the
pick, the zoom / log control, the applied constraints, the picked design's closed form, CSV
downloads, pins in the URL; a study's history, best trials to open or pin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dse import views
from dse.engine.evaluate import evaluate
from dse.model.design import build_design
from dse.specs import Catalog
from dse.views import search as vs

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
TEST_SPACE = str(ROOT / "tests" / "data" / "dashboard-space.toml")


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def traces(at: AppTest, n: int = 0) -> dict[str, dict]:
    spec = json.loads(at.get("plotly_chart")[n].proto.spec)
    return {t.get("name"): t for t in spec["data"]} | {"_layout": spec["layout"]}


@pytest.fixture(scope="module")
def swept() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    ok(at.switch_page("dashboard/design_space.py").run())
    at.text_input(key="ds_space").set_value(TEST_SPACE)
    return ok(at.button(key="ds_run").click().run())


def test_sweep_chart_zooms_to_the_front_and_labels_axes_with_units(swept):
    at = swept
    at.radio(key="ds_view").set_value("front")
    t = traces(ok(at.run()))
    front, lay = t["front"], t["_layout"]
    assert front["customdata"] == list(range(len(front["x"])))
    assert front["error_x"]["array"] and t["90% intervals"]["fill"] == "toself"
    lo, hi = lay["xaxis"]["range"]
    assert lo <= min(front["x"]) and hi >= max(front["x"])
    cloud = t["sampled feasible designs (mean-value screen)"]["x"]
    assert lo > min(cloud) or hi < max(cloud)  # the zoom leaves part of the cloud out
    assert lay["xaxis"]["title"]["text"].startswith("energy per token (J/token)")
    # the front's figures are the accurate closed form's: the axes carry no model's name
    assert "mean-value" not in lay["yaxis"]["title"]["text"]
    at.radio(key="ds_view").set_value("log")
    lay = traces(ok(at.run()))["_layout"]
    assert lay["xaxis"]["type"] == "log" and lay["yaxis"]["type"] == "log"
    at.radio(key="ds_view").set_value("cloud")
    lay = traces(ok(at.run()))["_layout"]
    assert "range" not in lay["xaxis"] and lay["xaxis"].get("type") != "log"


def test_table_pick_moves_the_highlight_and_shows_the_closed_form(swept, cat):
    at = swept
    (table,) = [d for d in at.dataframe if d.key == "ds_table"]
    cols = list(table.value.columns)
    for c in ("draft device", "target TP", "draft precision", "target serving", "schedule",
              "accept threshold", "energy per token (J/token)"):
        assert c in cols
    at.session_state["ds_table"] = {"selection": {"rows": [2]}}
    ok(at.run())
    assert at.session_state["ds_pick"] == 2
    t = traces(at)
    (picked,) = [v for k, v in t.items() if str(k).startswith("picked")]
    assert picked["x"] == [t["front"]["x"][2]]
    assert at.subheader[0].value == "Picked design #2"
    # the figures shown are What-if's (common.report of the design's state), to the digit
    cands = at.session_state["ds_result"]["candidates"]
    state = views.state_from_design(cat, cands[2].design)
    from dashboard import common

    rep = common.report(common.key(state))
    models = next(d for d in at.dataframe if "model" in d.value.columns).value
    row = models[models["model"].str.startswith("accurate closed form")].iloc[0]
    assert row["latency per problem"].startswith(vs.fmt_metric("latency_s_per_problem",
                                                               rep.latency_s_per_problem))
    assert "[" in row["latency per problem"]  # with its 90% interval


def test_constraints_downloads_and_pin(swept, cat):
    at = swept
    cons = [d.value for d in at.dataframe if "checked at" in d.value.columns]
    assert cons and cons[0].iloc[0]["constraint"] == "accuracy ≥ 60 %"
    assert cons[0].iloc[0]["from"] == "space default"
    assert "low end of its 90% interval" in cons[0].iloc[0]["checked at"]
    keys = {b.key for b in at.get("download_button")}
    assert {"ds_download_front", "ds_download_points", "ds_download_toml"} <= keys
    ok(at.button(key="ds_pin").click().run())
    pick = at.session_state["ds_result"]["candidates"][at.session_state["ds_pick"]]
    assert at.query_params.get(views.PIN_PARAM) == views.encode_pin(
        views.state_from_design(cat, pick.design))
    assert at.button(key="ds_pin").disabled  # pinned: the button says so


def test_study_history_best_trials_open_and_pin(tmp_path):
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    at = AppTest.from_file(APP, default_timeout=120).run()
    ok(at.switch_page("dashboard/design_space.py").run())
    at.text_input(key="ds_space").set_value(TEST_SPACE)
    at.radio(key="ds_method").set_value("Optimize")
    at.multiselect(key="ds_objectives").set_value(["goodput", "j_per_token"])
    at.number_input(key="ds_trials").set_value(12)
    at.text_input(key="ds_storage").set_value(storage)
    at.text_input(key="ds_study").set_value("dash-two")
    ok(at.button(key="ds_run").click().run())
    ok(at.switch_page("dashboard/studies.py").run())
    assert at.selectbox(key="st_study").value == "dash-two"
    t = traces(at, 0)
    best = t["best so far (maximum)"]["y"]  # goodput is maximised: a running maximum
    assert best == sorted(best) and best[-1] == max(t["feasible trial"]["y"])
    assert "goodput (tokens/s)" in t["_layout"]["yaxis"]["title"]["text"]
    assert any("highest values" in c.value for c in at.caption)  # importance, maximised
    trial = at.selectbox(key="st_trial")
    assert trial.options and all(o.startswith("trial ") for o in trial.options)
    last = int(trial.options[-1].split()[1].rstrip(":"))
    trial.set_value(last)
    ok(at.run())
    assert at.session_state["st_trial"] == last
    # the chosen design's closed form with its 90% interval, as dse evaluate gives it
    from dse.search import study_design_file
    from dse.uncertainty import attach

    df = study_design_file(storage, "dash-two", trial=last)
    cat = Catalog.load()
    st_ = views.state_from_design(cat, df)
    d = build_design(cat, st_.spec(cat), st_.schedule)
    w = cat.get("workload", st_.workload)
    rep = attach(evaluate(d, w), d, w)
    (row,) = [r for df_ in at.dataframe for r in df_.value.to_dict("records")
              if str(r.get("model", "")).startswith("closed form (What-if)")]
    lo, hi = rep.intervals["latency_s_per_problem"]
    assert row["latency per problem"] == (
        f"{rep.latency_s_per_problem:.4g} s [{lo:.4g}-{hi:.4g}]")
    ok(at.button(key="st_pin").click().run())
    assert at.query_params.get(views.PIN_PARAM)
    ok(at.button(key="st_open").click().run())
    assert at.title[0].value == "What-if"
