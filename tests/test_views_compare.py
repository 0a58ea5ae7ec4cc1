"""The Compare view-model (pinned designs in the URL, headline rows, deltas, CSV, the display
table) and the What-if explanation of a design slower or costlier than a baseline."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import pytest

from dse import views
from dse.engine.evaluate import evaluate
from dse.model.design import build_design
from dse.model.schedules import PRESETS


def state(**over):
    d = views.default_state()
    return views.DesignState(d.system, d.workload, d.schedule, over)


# ------------------------------------------------------------------------------ pins

def test_pins_round_trip_and_drop_duplicates(cat):
    a, b = state(), state(accept_threshold=0.8)
    c = views.DesignState("paper-config2-v80", "gsm8k", PRESETS["brsd"].with_flags(
        shadow_sync=True), {"max_backtracks": 3})
    got, errors = views.decode_pins(cat, [views.encode_pin(s) for s in (a, b, a, c)])
    assert got == [a, b, c] and errors == []


def test_a_bad_pin_is_reported_and_the_others_kept(cat):
    good = views.encode_pin(state())
    got, errors = views.decode_pins(cat, ["system=nope", good, "accept_threshold=1.7"])
    assert got == [state()]
    assert len(errors) == 1  # one short line for every pin that did not load, the first's why
    assert errors[0].startswith("2 pinned designs did not load")
    assert "unknown system 'nope'" in errors[0]


def test_pins_are_capped(cat):
    pins = [views.encode_pin(state(accept_threshold=0.5 + i / 100))
            for i in range(views.MAX_PINS + 3)]
    got, errors = views.decode_pins(cat, pins)
    assert len(got) == views.MAX_PINS
    assert errors == [f"3 pinned designs beyond the limit of {views.MAX_PINS} dropped"]


def test_the_pin_parameter_is_not_a_system_key(cat):
    params = state(accept_threshold=0.8).params() | {views.PIN_PARAM: "system=x"}
    assert views.state_from_params(cat, params) == state(accept_threshold=0.8)


def test_short_label_names_place_system_schedule_and_changes():
    assert views.short_label(state(), 0) == "#1 paper-config1-u280 · heteroreason"
    two = state(accept_threshold=0.8, max_backtracks=2)
    assert views.short_label(two, 2) == (
        "#3 paper-config1-u280 · heteroreason · accept_threshold=0.8, max_backtracks=2")
    # a device change is named first, whatever else changes
    moved = state(accept_threshold=0.8, draft_device="v80")
    assert views.short_label(moved, 0) == (
        "#1 paper-config1-u280 · heteroreason · draft_device=v80, accept_threshold=0.8")


# ------------------------------------------------------------------------ rows, deltas

ROWS = [{"design": "a", "latency_s_per_problem": 2.0, "accuracy": 70.0, "p_accept": 0.5,
         "latency_s_per_problem_low": 1.5, "latency_s_per_problem_high": 2.5},
        {"design": "b", "latency_s_per_problem": 3.0, "accuracy": 72.5, "p_accept": None}]


def test_deltas_by_hand():
    d = {r["design"]: r for r in views.deltas(ROWS, "a")}
    assert d["a"]["latency_s_per_problem_delta"] == 0.0
    assert d["b"]["latency_s_per_problem_delta"] == pytest.approx(0.5)  # 3 / 2 - 1
    assert d["b"]["accuracy_delta"] == pytest.approx(2.5)  # points, not a ratio
    assert d["b"]["p_accept_delta"] is None  # b has none
    with pytest.raises(KeyError, match="no design 'c'"):
        views.deltas(ROWS, "c")


def test_rows_csv_takes_every_column_and_leaves_none_empty():
    text = views.rows_csv(ROWS).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["design", "latency_s_per_problem", "accuracy", "p_accept",
                             "latency_s_per_problem_low", "latency_s_per_problem_high"]
    assert rows[1]["p_accept"] == "" and rows[1]["latency_s_per_problem_low"] == ""
    assert float(rows[0]["latency_s_per_problem_high"]) == 2.5


def test_metric_rows_carry_the_intervals(cat):
    d = build_design(cat, cat.get("system", "paper-config1-u280"), PRESETS["heteroreason"])
    rep = evaluate(d, cat.get("workload", "math500"))
    rep = replace(rep, intervals={"latency_s_per_problem": [1.0, 9.0]})
    (row,) = views.metric_rows({"x": rep})
    assert row["latency_s_per_problem"] == rep.latency_s_per_problem
    assert (row["latency_s_per_problem_low"], row["latency_s_per_problem_high"]) == (1.0, 9.0)
    assert "j_per_token_low" not in row
    assert row["schedule"] == "heteroreason" and row["workload"] == "math500"


def test_compare_table_formats_values_intervals_and_deltas(cat):
    spec = cat.get("system", "paper-config1-u280")
    rows = [dict(r, schedule="rsd", workload="math500") for r in ROWS]
    table = views.compare_table(rows, {d["design"]: d for d in views.deltas(rows, "a")},
                                {"a": spec, "b": spec})
    a, b = table
    assert a["latency per problem"] == "2 [1.5-2.5] s"
    assert b["latency per problem"] == "3 s"
    assert b["Δ latency per problem"] == "+50.0%"
    assert b["Δ accuracy"] == "+2.5 pts"
    assert b["accept probability"] == "n/a"
    assert a["draft"] == f"{spec.draft_model} on {spec.draft_device} ({spec.draft_precision})"


# --------------------------------------------------------------------------- explain

def designs(cat, a: views.DesignState, b: views.DesignState):
    w = cat.get("workload", a.workload)
    out = []
    for s in (a, b):
        d = build_design(cat, s.spec(cat), s.schedule)
        out += [d, evaluate(d, w)]
    return (*out, w)


def explain(cat, a, b, name="base"):
    da, ra, db, rb, w = designs(cat, a, b)
    return views.explain_vs_baseline(da, ra, db, rb, name, prompt_tokens=w.prompt_tokens,
                                     step_tokens=w.draft_step_tokens_mean), (ra, rb)


def test_nothing_to_explain_against_itself(cat):
    lines, _ = explain(cat, state(), state())
    assert lines == []


def test_a_slower_design_names_the_roles_that_grew_and_why(cat):
    """The U280 default against its rsd GPU baseline: every role whose critical-path time
    grew by at least 0.5% of the latency is named, with its delta; the draft's devices and
    the schedule flags that differ are the reasons."""
    a = state()
    b = a.gpu_baseline(cat, "rsd")
    lines, (ra, rb) = explain(cat, a, b, "rsd")
    if ra.latency_s_per_problem <= rb.latency_s_per_problem:
        pytest.skip("the default is not slower than rsd in this catalog")
    (slow,) = [x for x in lines if "slower than rsd" in x]
    grew = {r for r in ra.latency_breakdown_s
            if ra.latency_breakdown_s[r] - rb.latency_breakdown_s[r]
            > 0.005 * ra.latency_s_per_problem}
    for r in grew:
        dv = ra.latency_breakdown_s[r] - rb.latency_breakdown_s[r]
        assert f"the {views.ROLE_LABELS[r]} (+{dv:.3f} s)" in slow
    if "draft" in grew:
        assert "decodes a token in" in slow and "on u280" in slow
    for f in ("backtracking", "step-ahead speculation (T2)", "shadow sync (T1)"):
        assert f"{f} on here, off in rsd" in slow  # heteroreason has all three, rsd none


def test_a_costlier_design_names_the_device(cat):
    a = state()
    b = a.gpu_baseline(cat, "brsd")
    lines, (ra, rb) = explain(cat, a, b, "brsd")
    costlier = [x for x in lines if "more energy per token than brsd" in x]
    assert bool(costlier) == (ra.j_per_token > rb.j_per_token)
    if costlier:
        pct = ra.j_per_token / rb.j_per_token - 1
        assert costlier[0].startswith(f"{pct:.1%} more energy")


def test_only_the_flags_that_differ_are_reasons(cat):
    a = views.DesignState("paper-config1-3090", "math500", PRESETS["brsd"], {})
    b = views.DesignState("paper-config1-3090", "math500", PRESETS["brsd_stepahead"], {})
    lines, (ra, rb) = explain(cat, a, b, "brsd_stepahead")
    assert ra.latency_s_per_problem > rb.latency_s_per_problem  # step-ahead hides PRM time
    (slow,) = [x for x in lines if "slower" in x]
    assert "step-ahead speculation (T2) off here, on in brsd_stepahead" in slow
    assert "backtracking" not in slow and "decodes a token" not in slow  # same devices


def test_side_by_side_turns_rows_into_columns():
    rows = [{"design": "a", "x": "1", "y": "2"}, {"design": "b", "x": "3", "z": "4"}]
    assert views.side_by_side(rows) == [{"": "x", "a": "1", "b": "3"},
                                        {"": "y", "a": "2", "b": ""},
                                        {"": "z", "a": "", "b": "4"}]
