"""What-if, Compare and Design space under AppTest, by widget key, for the workflows (the
target alone), the verifiers (the target judging) and the placements (roles sharing a GPU):
each control drives exactly what `dse evaluate` computes for the state the URL names, the
header and the metrics name that one state, controls that do not apply are disabled,
schedules a shared device cannot run are not offered, an invalid combination gives one
message; the target alone beside the design; Compare across families; the families table and
the measured-devices option."""

from __future__ import annotations

import csv
import io

import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from dse import views
from dse.engine.evaluate import evaluate
from dse.model.design import build_design
from tests.test_app import APP, metric, ok, run_app
from tests.test_app_compare import downloads, pins_in, served  # noqa: F401 (a fixture)
from tests.test_views_workflows import SPACE

TABS = ("Latency and energy", "Uncertainty", "Timeline", "Roofline", "Sensitivity",
        "Command line")


def shown_state(cat, at: AppTest) -> views.DesignState:
    """The state the URL names (the query parameters the page wrote)."""
    return views.state_from_params(cat, {k: v for k, v in at.query_params.items()
                                         if k != views.PIN_PARAM})


def same_state(cat, at: AppTest):
    """The header and the metrics name one state, the one in the URL: its label is the
    header, its closed form the metrics. Returns its report."""
    s = shown_state(cat, at)
    d = build_design(cat, s.spec(cat), s.schedule)
    rep = evaluate(d, cat.get("workload", s.workload))
    assert at.caption[0].value == views.design_label(d.system, d.schedule) + f" | {s.workload}"
    assert metric(at, "Latency (s/problem)") == f"{rep.latency_s_per_problem:.3f}"
    assert metric(at, "Energy (J/token)") == f"{rep.j_per_token:.3f}"
    assert metric(at, "Accept probability") == f"{rep.p_accept:.3f}"
    assert at.session_state["wi_report"]["latency_s_per_problem"] == rep.latency_s_per_problem
    return rep


def frame(at: AppTest, column: str, n: int | None = None):
    """The one table (interactive or static) shown with this column, or the n-th of them
    (AppTest keeps no key on a dataframe without selections)."""
    found = [d.value for d in [*at.dataframe, *at.table] if column in d.value.columns]
    if n is None:
        (df,) = found
        return df
    return found[n]


def every_tab(at: AppTest) -> None:
    for tab in TABS:
        at.session_state["wi_tab"] = tab
        ok(at.run())
        assert not at.error, (tab, [e.value for e in at.error])
    at.session_state["wi_tab"] = TABS[0]


def test_workflow_target_alone(cat):
    """Workflow -> Target alone: the target-only design's numbers, its draft, verifier,
    placement, schedule and thresholds disabled (their values kept), no GPU baselines, every
    tab drawn; back to speculative: the design as before."""
    at = ok(run_app())
    before = same_state(cat, at)
    at.radio(key="wi_workflow").set_value("target-only")
    ok(at.run())
    assert at.query_params["workflow"] == "target-only"
    assert not {"verifier", "colocate", "accept_threshold"} & set(at.query_params)
    rep = same_state(cat, at)
    assert rep.schedule == "target-only" and rep.p_accept == 0.0
    assert at.caption[0].value.startswith("target alone: ")
    for w in (at.radio(key="wi_verifier"), at.selectbox(key="wi_colocate"),
              at.selectbox(key="wi_schedule"), at.slider(key="wi_accept_threshold"),
              at.toggle(key="wi_backtracking"), at.selectbox(key="wi_draft_device"),
              at.selectbox(key="wi_prm_model")):
        assert w.disabled, w.key
    assert not at.selectbox(key="wi_target_device").disabled
    assert not [m for m in at.metric if m.label.startswith("Speed-up")]
    assert any("target model alone" in i.value for i in at.info)
    every_tab(at)
    at.radio(key="wi_workflow").set_value("speculative")
    ok(at.run())
    assert "workflow" not in at.query_params
    assert same_state(cat, at).latency_s_per_problem == before.latency_s_per_problem


def test_verifier_target_offers_only_what_a_shared_gpu_runs(cat):
    """Verifier -> the target judges: it shares the target's GPU, so step-ahead is refused
    (the heteroreason flags keep backtracking and shadow sync on brsd), the PRM is unused and
    the placements left are none and draft+target."""
    at = ok(run_app())
    at.radio(key="wi_verifier").set_value("target")
    ok(at.run())
    assert at.query_params["verifier"] == "target"
    assert at.selectbox(key="wi_schedule").value == "brsd"
    assert at.selectbox(key="wi_schedule").options == ["rsd", "brsd"]
    assert at.toggle(key="wi_step_ahead").value is False
    assert at.toggle(key="wi_step_ahead").disabled
    assert at.toggle(key="wi_shadow_sync").value is True
    assert at.selectbox(key="wi_colocate").options == [
        views.COLOCATE_LABELS["none"], views.COLOCATE_LABELS["draft+target"]]
    assert at.selectbox(key="wi_prm_device").disabled
    rep = same_state(cat, at)
    assert rep.schedule == "custom(backtracking,shadow_sync)"
    # the GPU baselines are the paper's (PRM on its own GPU): all three run
    assert {f"Speed-up vs {b}" for b in views.BASELINES} <= {m.label for m in at.metric}
    every_tab(at)


def test_placement_moves_devices_and_fits_the_schedule(cat):
    """Placement -> draft and target share one GPU: the FPGA draft moves onto the target's
    GPU (GPU software), only rsd and brsd are offered, heteroreason becomes brsd; a new
    target device takes the draft along; the draft is offered GPUs only."""
    at = ok(run_app())
    at.selectbox(key="wi_colocate").set_value("draft+target")
    ok(at.run())
    assert at.query_params["colocate"] == "draft+target"
    assert at.selectbox(key="wi_draft_device").value == "rtx-3090"
    assert at.selectbox(key="wi_draft_serving").value == "vllm-cudagraph"
    assert at.selectbox(key="wi_schedule").value == "brsd"
    assert at.selectbox(key="wi_schedule").options == ["rsd", "brsd"]
    assert at.toggle(key="wi_shadow_sync").disabled and at.toggle(key="wi_step_ahead").disabled
    assert any("Not offered on shared devices: brsd_stepahead, heteroreason" in c.value
               for c in at.sidebar.caption)
    assert "u280" not in at.selectbox(key="wi_draft_device").options
    same_state(cat, at)
    at.selectbox(key="wi_target_device").set_value("a100-80gb-pcie")
    ok(at.run())
    assert at.selectbox(key="wi_draft_device").value == "a100-80gb-pcie"
    assert at.query_params["target_device"] == at.query_params["draft_device"]
    same_state(cat, at)
    every_tab(at)


@pytest.mark.parametrize("query, words", [
    # roles that share a device on two devices: the link is refused with its reason
    ({"colocate": "draft+target"}, "colocated roles must name the same device"),
])
def test_an_invalid_link_gives_one_warning(query, words):
    at = ok(run_app(**query))
    (w,) = at.warning
    assert words in w.value and "colocate" in w.value
    assert not at.error
    assert at.query_params.get("colocate") is None  # the default design opened


@pytest.mark.parametrize("query, words", [
    # two 7B models on one 24 GB GPU
    ({"colocate": "prm+target", "schedule": "rsd"}, "together they need"),
    ({"colocate": "draft+target", **{"draft_device": "rtx-3090", "draft_precision": "bf16",
                                     "draft_serving": "vllm-cudagraph"}}, "step_ahead"),
])
def test_a_design_that_cannot_run_gives_one_error(query, words):
    """A placement whose models do not fit the shared GPU, or whose schedule needs its roles
    apart: one message saying why, no numbers, the controls still there to fix it."""
    at = ok(run_app(**query))
    (err,) = at.error
    assert err.value.startswith("No numbers for this design:") and words in err.value
    assert not at.metric and at.session_state["wi_report"] is None
    assert at.selectbox(key="wi_colocate").value == query["colocate"]


def test_target_alone_beside_the_design(cat):
    """The margins against the target alone (the joint intervals by the closed form's moves,
    as `dse compare`, on the headline and the Uncertainty tab), and the target alone
    pinned."""
    at = ok(run_app())
    s = views.default_state()
    d = build_design(cat, s.spec(cat), s.schedule)
    a = s.target_alone()
    da = build_design(cat, a.spec(cat), a.schedule)
    w = cat.get("workload", s.workload)
    rep, alone = evaluate(d, w), evaluate(da, w)
    ms = views.margins(rep, alone)
    assert views.margin_sentence(ms) in [m.value.strip("*") for m in at.markdown]
    table = frame(at, "target alone")
    assert list(table["target alone"]) == [r["target alone"] for r in views.margin_rows(ms)]
    quick = views.joint_intervals((d, rep), (da, alone), w)
    assert list(table["joint 90% interval of the difference"]) == [
        r["joint 90% interval of the difference"]
        for r in views.margin_rows(views.margins(rep, alone, quick))]
    at.session_state["wi_tab"] = "Uncertainty"
    ok(at.run())
    joint = views.joint_intervals((d, rep), (da, alone), w)
    # the Uncertainty tab's table, below the headline's
    assert list(frame(at, "target alone", -1)["joint 90% interval of the difference"]) == [
        r["joint 90% interval of the difference"]
        for r in views.margin_rows(views.margins(rep, alone, joint))]
    at.button(key="wi_pin_alone").click()
    ok(at.run())
    assert pins_in(at) == [views.encode_pin(a)]


def test_compare_a_target_alone_beside_a_speculative_design(cat, downloads):  # noqa: F811
    """Pinned across families: the table reads none for the target alone's draft and PRM, the
    charts draw, the CSV has both; the joint intervals of the differences on request."""
    s = views.default_state()
    a = s.target_alone()
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params[views.PIN_PARAM] = [views.encode_pin(s), views.encode_pin(a)]
    ok(at.switch_page("dashboard/compare.py").run())
    names = [views.short_label(s, 0), views.short_label(a, 1)]
    table = at.dataframe[0].value.set_index("")
    assert table.loc["draft", names[1]] == "none (target alone)"
    assert table.loc["workflow", names[1]] == "target alone"
    assert table.loc["schedule", names[1]] == "target-only"
    assert len(at.get("vega_lite_chart")) == 3
    energy = convert_arrow_bytes_to_pandas_df(at.get("vega_lite_chart")[2].proto.data.data)
    (draft,) = energy[(energy.order == 1) & (energy.part == "draft device")].value
    assert draft == 0.0  # the target alone spends nothing on a draft
    rows = list(csv.DictReader(io.StringIO(
        served(at, downloads, "Comparison (CSV)").decode())))
    assert [r["design"] for r in rows] == names and rows[1]["p_accept"] == "0.0"
    # the joint interval of each difference against the reference (the first)
    at.toggle(key="cp_joint").set_value(True)
    ok(at.run())
    table = at.dataframe[0].value.set_index("")
    d = build_design(cat, s.spec(cat), s.schedule)
    da = build_design(cat, a.spec(cat), a.schedule)
    w = cat.get("workload", s.workload)
    lo, hi = views.joint_intervals((da, evaluate(da, w)), (d, evaluate(d, w)), w)[
        "latency_s_per_problem"]
    assert f"[{lo:+.4g}, {hi:+.4g}] s" in table.loc["Δ latency per problem, joint 90%",
                                                    names[1]]


@pytest.fixture(scope="module")
def families_space(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("space") / "families.toml"
    path.write_text(SPACE)
    return str(path)


def test_design_space_families_and_measured_devices(cat, families_space):
    """A sweep over every family: the families table (each family's best, its margin against
    the winner with the joint interval) and its line; measured devices only leaves the V80
    out; a family's best opens in What-if."""
    at = ok(run_app())
    ok(at.switch_page("dashboard/design_space.py").run())
    at.text_input(key="ds_space").set_value(families_space)
    at.multiselect(key="ds_objectives").set_value(["accuracy"])
    ok(at.button(key="ds_run").click().run())
    table = frame(at, "family")
    assert list(table["family"]) == ["target alone", "GPU-draft speculation",
                                     "FPGA-draft speculation"]
    assert table["decided on accuracy"].iloc[0] == "winner"
    # the target alone is the most accurate here: the page says no speculation beats it
    assert any(w.value.startswith("No speculative design beats the best target-only design")
               for w in at.warning)
    assert at.session_state["ds_result"]["measured_only"] is False
    at.checkbox(key="ds_measured").check()
    at.multiselect(key="ds_objectives").set_value(["j_per_token"])
    ok(at.button(key="ds_run").click().run())
    assert "(measured devices only)" in at.success[0].value
    designs = list(frame(at, "family")["design"])
    assert any("u280" in x for x in designs) and not any("v80" in x for x in designs)
    assert any(i.value.startswith("The winner (") for i in at.info)
    # open the target alone's best in What-if
    at.selectbox(key="ds_family").set_value(0)
    ok(at.button(key="ds_family_open").click().run())
    assert at.title[0].value == "What-if"
    assert at.query_params["workflow"] == "target-only"
    same_state(cat, at)


def test_design_space_says_when_a_speculative_best_accepts_no_draft_step():
    """The default space by energy per token (the main job's): each speculative family whose
    best accepts under 1% of its draft's steps gets its line under the verdict, and only
    those (on this model the GPU family's best is the target judging at threshold 1.0)."""
    at = ok(run_app())
    ok(at.switch_page("dashboard/design_space.py").run())
    at.multiselect(key="ds_objectives").set_value(["j_per_token"])
    ok(at.button(key="ds_run").click().run(timeout=300))
    table = frame(at, "family")
    idle = [f for f, pa in zip(table["family"], table["accept probability"], strict=True)
            if "speculation" in f and float(pa) < 0.01]
    notes = [c.value for c in at.caption if "its best design accepts" in c.value]
    assert [n.split(":")[0] for n in notes] == idle
    assert idle == ["GPU-draft speculation"]
