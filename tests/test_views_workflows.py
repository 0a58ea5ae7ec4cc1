"""dse.views for the workflows, verifiers and shared devices: the target alone of a design
state and the keys each workflow uses, the widget choices a placement allows, the margins
against the target alone (hand-computed), figure data for target-only and shared-device
designs (no missing role), Compare's rows for a target-only design, and the Design space
page's families table on a small space."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

from dse import views
from dse.engine.evaluate import evaluate
from dse.io.resolve import target_alone
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.search.families import FamilyBest
from dse.views import families as vf

DRAFT_ON_3090 = {"draft_device": "rtx-3090", "draft_precision": "bf16",
                 "draft_serving": "vllm-cudagraph"}


def state(sched: str = "heteroreason", **over) -> views.DesignState:
    return views.DesignState(views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD, PRESETS[sched], over)


def design_report(cat, s: views.DesignState):
    d = build_design(cat, s.spec(cat), s.schedule)
    return d, evaluate(d, cat.get("workload", s.workload))


# ------------------------------------------------------------------------------ state

def test_target_alone_is_the_resolvers_target_alone(cat):
    """The state's target alone resolves to dse.io.resolve.target_alone of its system (the same
    target placement, workflow target-only), keeps the target's and the budget's overrides
    and drops every other one; its URL names only those."""
    s = state("brsd", accept_threshold=0.8, target_device="a100-80gb-pcie",
              max_context_tokens=3072, verifier="target", colocate="draft+target",
              **{**DRAFT_ON_3090, "draft_device": "a100-80gb-pcie"})
    alone = s.target_alone()
    assert alone.overrides == {"target_device": "a100-80gb-pcie", "max_context_tokens": 3072,
                               "workflow": "target-only"}
    assert alone.is_target_only and not s.is_target_only
    assert alone.schedule == PRESETS[views.DEFAULT_SCHEDULE]  # it runs one way
    want = target_alone(s.spec(cat))
    got = alone.spec(cat)
    for k in ("workflow", "verifier", "colocate", "target_model", "target_device",
              "target_precision", "target_serving", "target_tp", "max_context_tokens"):
        assert getattr(got, k) == getattr(want, k), k
    assert views.state_from_params(cat, alone.params()) == alone


def test_applicable_keeps_the_keys_a_design_uses():
    s = state(accept_threshold=0.8, prm_device="a100-80gb-pcie", prm_tp=2, verifier="target",
              colocate="none")
    # the target judges: no PRM keys; "none" is no colocation
    assert views.applicable(s).overrides == {"accept_threshold": 0.8, "verifier": "target"}
    assert views.applicable(state(colocate="draft+target")).overrides == {
        "colocate": "draft+target"}


def test_workflow_states_round_trip_through_the_url(cat):
    for s in (state(workflow="target-only"), state("rsd", verifier="target"),
              state("rsd", colocate="draft+target", **DRAFT_ON_3090)):
        assert views.state_from_params(cat, s.params()) == s
        assert views.decode_pins(cat, [views.encode_pin(s)]) == ([s], [])


def test_labels_name_the_workflow(cat):
    alone = state(workflow="target-only")
    assert views.design_label(alone.spec(cat)) == (
        "target alone: qwen2.5-math-7b-instruct on rtx-3090 (bf16)")
    judged = views.design_label(state("rsd", verifier="target").spec(cat))
    assert "verifier: the target" in judged and "PRM" not in judged
    shared = state("rsd", colocate="draft+target", **DRAFT_ON_3090).spec(cat)
    assert "draft+target on one device" in views.design_label(shared)
    assert views.short_label(alone, 0) == (
        "#1 paper-config1-u280 · target alone · workflow=target-only")


def test_gpu_baselines_verify_with_a_prm_on_separate_gpus(cat):
    """A shared-device or target-judged design is weighed against the paper's baselines:
    PRM verifier, each role on its own GPU (a colocation would refuse step-ahead)."""
    s = state("rsd", verifier="target", colocate="draft+target", **DRAFT_ON_3090)
    b = s.gpu_baseline(cat, "brsd_stepahead")
    assert not set(b.overrides) & {"workflow", "verifier", "colocate"}
    assert b.spec(cat).colocated == ()
    design_report(cat, b)  # it runs


# ------------------------------------------------------------------------------ choices

def test_colocate_options_and_verifier_changes():
    assert views.colocate_options("prm") == ["none", "draft+target", "prm+target",
                                             "draft+prm", "draft+prm+target"]
    assert views.colocate_options("target") == ["none", "draft+target"]
    assert views.colocate_for_verifier("draft+prm+target", "target") == "draft+target"
    assert views.colocate_for_verifier("draft+prm", "target") == "draft+target"
    assert views.colocate_for_verifier("prm+target", "target") == "none"
    assert views.colocate_for_verifier("prm+target", "prm") == "prm+target"


def test_colocation_moves_follow_the_anchor():
    devs = {"draft": "u280", "prm": "rtx-3090", "target": "a100-80gb-pcie"}
    assert views.colocation_moves("none", devs) == {}
    assert views.colocation_moves("draft+target", devs) == {"draft": "a100-80gb-pcie"}
    assert views.colocation_moves("draft+prm", devs) == {"draft": "rtx-3090"}
    assert views.colocation_moves("draft+prm+target", devs, anchor="prm") == {
        "draft": "rtx-3090", "target": "rtx-3090"}
    assert views.colocation_moves("draft+target", devs, anchor="prm") == {}  # not in it
    # a judging target's verifier has no device of its own: left alone
    assert views.colocation_moves("draft+target", {"draft": "l4", "target": "h100-pcie"}) == {
        "draft": "h100-pcie"}


def test_shared_devices_are_the_gpus_for_a_draft_with_the_target(cat):
    both = views.shared_devices(cat, ["draft", "target"])
    assert "rtx-3090" in both and "u280" not in both
    assert set(both) <= set(views.role_options(cat, "draft", "u280").devices)


def test_schedules_and_flags_a_placement_allows(cat):
    base = cat.get("system", views.DEFAULT_SYSTEM)
    apart = views.arrangement(base, "speculative", "prm", "none")
    assert views.flag_conflicts(apart) == {}
    assert views.schedule_choices(apart) == (list(PRESETS), {})
    dt = views.arrangement(base, "speculative", "prm", "draft+target")
    assert set(views.flag_conflicts(dt)) == {"step_ahead", "shadow_sync"}
    ok, why = views.schedule_choices(dt)
    assert ok == ["rsd", "brsd"] and set(why) == {"brsd_stepahead", "heteroreason"}
    assert "step_ahead" in why["heteroreason"] and "shadow_sync" in why["heteroreason"]
    # the target judges: it shares the verifier's device with the target (step-ahead refused)
    judge = views.arrangement(base, "speculative", "target", "none")
    assert set(views.flag_conflicts(judge)) == {"step_ahead"}
    assert views.runnable_flags(judge, {"backtracking": True, "step_ahead": True,
                                        "shadow_sync": True}) == (
        "brsd", {"backtracking": True, "step_ahead": False, "shadow_sync": True})
    # draft, verifier and target on one GPU: rsd only
    all3 = views.arrangement(base, "speculative", "target", "draft+target")
    assert views.schedule_choices(all3)[0] == ["rsd"]
    assert views.runnable_flags(all3, {"backtracking": True})[0] == "rsd"
    alone = views.arrangement(base, "target-only", "target", "draft+target")
    assert alone.verifier is None and alone.colocate is None
    assert views.flag_conflicts(alone) == {}


# ------------------------------------------------------------------------------ margins

def fake(cat, **metrics):
    _, r = design_report(cat, state())
    return replace(r, **metrics)


def test_margins_by_hand(cat):
    """design 2 s, 1.5 J/token, 70%; target alone 4 s, 1.2 J/token, 80%: the design is
    2 s (50%) faster, 0.3 J/token (25%) costlier and 10 pts less accurate."""
    d = fake(cat, latency_s_per_problem=2.0, j_per_token=1.5, accuracy=70.0)
    a = fake(cat, latency_s_per_problem=4.0, j_per_token=1.2, accuracy=80.0)
    joint = {"latency_s_per_problem": (-2.5, -1.5), "j_per_token": (-0.1, 0.7),
             "accuracy": (-12.0, -8.0)}
    lat, jpt, acc = views.margins(d, a, joint)
    assert (lat.difference, lat.relative, lat.better, lat.decided) == (-2.0, -0.5, True, True)
    assert jpt.difference == pytest.approx(0.3) and jpt.relative == pytest.approx(0.25)
    assert (jpt.better, jpt.decided) == (False, False)  # 0 inside [-0.1, 0.7]
    assert (acc.difference, acc.relative, acc.better, acc.decided) == (-10.0, None, False, True)
    rows = views.margin_rows([lat, jpt, acc])
    assert rows[0] == {"metric": "latency per problem (s)", "this design": "2",
                       "target alone": "4", "this - alone": "-2 s (-50.0%)",
                       "this design is": "better",
                       "joint 90% interval of the difference":
                           "[-2.5, -1.5] s: 0 outside (decided)"}
    assert rows[1]["joint 90% interval of the difference"] == (
        "[-0.1, 0.7] J/token: 0 inside (not decided)")
    assert rows[2]["this - alone"] == "-10 pts"
    assert views.margin_sentence([lat, jpt, acc]) == (
        "Against the target alone: 50.0% faster (-2 s per problem), 25.0% more energy per "
        "token (not decided: 0 is inside the joint 90% interval), 10 pts less accurate.")
    # without intervals: no interval column, nothing undecided
    plain = views.margins(d, a)
    assert "joint 90% interval of the difference" not in views.margin_rows(plain)[0]
    assert all(m.decided is None for m in plain)


def test_joint_intervals_hold_the_difference(cat):
    """The default design against its target alone: each joint interval holds the central
    difference (closed-form moves; mean-value moves within a few percent of them)."""
    s = state()
    w = cat.get("workload", s.workload)
    d, a = design_report(cat, s), design_report(cat, s.target_alone())
    joint = views.joint_intervals(d, a, w)
    assert set(joint) == {"latency_s_per_problem", "j_per_token", "accuracy"}
    for m in views.margins(d[1], a[1], joint):
        lo, hi = m.interval
        assert lo <= m.difference <= hi, m.metric
    quick = views.joint_intervals(d, a, w, moves_by="mean-value")
    lo, hi = joint["latency_s_per_problem"]
    qlo, qhi = quick["latency_s_per_problem"]
    assert math.isclose(qhi - qlo, hi - lo, rel_tol=0.2)


# ------------------------------------------------------------------------------ figures

def test_energy_split_books_a_shared_devices_idle_once(cat):
    """Draft and target on one RTX 3090: the draft (first of the group) carries the idle draw,
    the target none; every role's parts sum to its energy, none negative."""
    d, r = design_report(cat, state("rsd", colocate="draft+target", **DRAFT_ON_3090))
    split = views.energy_split(d, r)
    assert split["target"]["idle_j"] == 0.0
    assert split["draft"]["idle_j"] == pytest.approx(
        float(d.draft.power_w("idle")) * r.latency_s_per_problem)
    for role, parts in split.items():
        assert parts["idle_j"] + parts["active_j"] == pytest.approx(
            r.energy_by_device_j[role])
        assert parts["active_j"] >= 0


def test_target_only_figures_have_the_target_only(cat):
    s = state(workflow="target-only")
    d, r = design_report(cat, s)
    w = cat.get("workload", s.workload)
    assert list(views.energy_split(d, r)) == ["target"]
    tl = views.problem_timeline(d, w, seed=0)
    assert {i["device"] for i in tl.intervals} == {"target"} and tl.decisions == []
    assert tl.intervals[-1]["end_s"] == pytest.approx(tl.latency_s)
    (roof,) = views.rooflines(d, w)
    assert roof.role == "target" and [p.op for p in roof.points] == ["decode token"]


def test_a_judging_target_has_its_own_roofline_point(cat):
    """The target judges: its verifier point is the judge's step (no zero-time target
    prefill: the judge prefilled the step already)."""
    s = state("rsd", verifier="target")
    d, _ = design_report(cat, s)
    roofs = {r.role: r for r in views.rooflines(d, cat.get("workload", s.workload))}
    assert [p.op for p in roofs["prm"].points] == ["judge step"]
    assert [p.op for p in roofs["target"].points] == ["decode token"]
    for r in roofs.values():
        assert all(p.time_s > 0 and p.achieved_flops_per_s <= r.peak_flops_per_s
                   for p in r.points)


def test_explain_a_judged_design_against_its_baseline(cat):
    s = state("rsd", verifier="target", colocate="draft+target", **DRAFT_ON_3090)
    d, r = design_report(cat, s)
    b, rb = design_report(cat, s.gpu_baseline(cat, "rsd"))
    w = cat.get("workload", s.workload)
    for x, rx, y, ry in ((d, r, b, rb), (b, rb, d, r)):  # either way round, no missing role
        lines = views.explain_vs_baseline(x, rx, y, ry, "base", prompt_tokens=w.prompt_tokens,
                                          step_tokens=w.draft_step_tokens_mean)
        assert all(isinstance(line, str) for line in lines)


# ------------------------------------------------------------------------------ compare

def test_compare_rows_for_a_target_alone_and_a_speculative_design(cat):
    spec_s, alone_s = state(), state().target_alone()
    reports = {"spec": design_report(cat, spec_s)[1], "alone": design_report(cat, alone_s)[1]}
    rows = views.metric_rows(reports)
    assert rows[1]["schedule"] == "target-only" and rows[1]["p_accept"] == 0.0
    delta = {d["design"]: d for d in views.deltas(rows, "alone")}
    joint = {"spec": {"latency_s_per_problem": (-4.0, -3.0)}}
    table = views.compare_table(rows, delta, {"spec": spec_s.spec(cat),
                                              "alone": alone_s.spec(cat)}, joint)
    assert table[1]["draft"] == "none (target alone)" and table[1]["workflow"] == (
        "target alone")
    assert table[0]["workflow"] == "speculative, PRM verifier"
    diff = rows[0]["latency_s_per_problem"] - rows[1]["latency_s_per_problem"]
    assert table[0]["Δ latency per problem, joint 90%"] == (
        f"{diff:+.4g} [-4, -3] s: 0 outside")
    assert "Δ latency per problem, joint 90%" not in table[1]
    assert views.joint_csv_columns(joint["spec"]) == {"latency_s_per_problem_diff_low": -4.0,
                                                      "latency_s_per_problem_diff_high": -3.0}
    judged = state("rsd", verifier="target").spec(cat)
    assert views.compare_table(rows[:1], delta, {"spec": judged})[0]["PRM"] == (
        "none (the target judges)")


# ------------------------------------------------------------------------------ families

SPACE = """schema_version = 1
kind = "space"
name = "families-test"
description = "the target alone, a 3090 or U280/V80 draft, a PRM or the target judging"
max_context_tokens = 4096
lifetime_years = 3.0
usd_per_kwh = 0.15

[workloads]
math500 = 1.0

[draft]
models = ["qwen2.5-0.5b-instruct"]
gpus = ["rtx-3090"]
gpu_precisions = ["bf16"]
gpu_serving = ["vllm-cudagraph"]
fpgas = ["u280", "v80"]
fpga_precisions = ["w8a8"]
fpga_engines = ["flexllm"]
fpga_clock_MHz = [300.0]
fpga_mac_lanes = [2048]

[prm]
models = ["qwen2.5-math-prm-7b"]
gpus = ["rtx-3090"]
precisions = ["bf16"]
serving = ["vllm-cudagraph"]

[target]
models = ["qwen2.5-math-7b-instruct"]
gpus = ["rtx-3090"]
tp = [1]
precisions = ["bf16"]
serving = ["vllm-cudagraph"]

[algorithm]
accept_threshold = [0.6, 0.8]
backtrack_threshold = [0.7]
max_backtracks = [0]
backtrack_window = [3]
step_ahead = [false, true]
shadow_sync = [false]

[workflows]
workflow = ["speculative", "target-only"]
verifier = ["prm", "target"]
colocate = ["none", "draft+target"]

[constraints]
min_accuracy = 60.0

[sources]
max_context_tokens = "test"
lifetime_years = "test"
usd_per_kwh = "test"
"constraints.min_accuracy" = "test"
fpga_clock_MHz = "test"
fpga_mac_lanes = "test"
"""


@pytest.fixture(scope="module")
def small_space(tmp_path_factory, cat):
    """A space of 9 hardware choices over every family (about a second to sweep)."""
    from dse.search import load_space

    path = tmp_path_factory.mktemp("space") / "families.toml"
    path.write_text(SPACE)
    return load_space(cat, str(path))


def test_family_rows_of_a_small_sweep(cat, small_space):
    from dse.search import sweep

    res = sweep(cat, small_space, ["j_per_token"])
    rows = vf.family_rows(res.by_family, ["j_per_token"])
    assert [r["family"] for r in rows] == ["target alone", "GPU-draft speculation",
                                           "FPGA-draft speculation"]
    by = {f.family: f for f in res.by_family}
    alone, row = by["target-only"], rows[0]
    cf = alone.candidate.metrics
    lo, hi = alone.candidate.intervals["j_per_token"]
    assert row["energy per token (J/token)"] == (
        f"{cf['j_per_token']:.4g} [{lo:.4g}-{hi:.4g}] J/token")
    assert row["accept probability"] == "0.000" and row["steps the target writes"] == "100%"
    m = alone.margin["j_per_token"]
    mlo, mhi = alone.margin_interval["j_per_token"]
    assert row["energy per token vs winner [joint 90%]"] == (
        f"{m:+.4g} [{mlo:+.4g}, {mhi:+.4g}] J/token")
    assert row["decided on energy per token"] == (
        "yes (0 outside)" if alone.decided("j_per_token") else "no (0 inside)")
    winner = next(r for r, f in zip(rows, res.by_family, strict=True) if f.is_winner)
    assert winner["decided on energy per token"] == "winner"
    pa = winner["accept probability"]
    assert winner["steps the target writes"] == f"{1 - float(pa):.0%}"
    # a speculative design wins here: the line says by how much it beats the target alone
    assert vf.families_verdict(res.by_family, ["j_per_token"]) is None
    assert vf.winner_vs_target_alone(res.by_family, ["j_per_token"]).startswith(
        "The winner (")
    # measured devices only: the V80 (a projection) is left out
    measured = sweep(cat, small_space, ["j_per_token"], measured_only=True)
    assert measured.measured_only
    assert all("v80" not in r.get("design", "")
               for r in vf.family_rows(measured.by_family, ["j_per_token"]))


def family(name, value, *, winner=False, margin=None, interval=None):
    """A FamilyBest with a stand-in candidate carrying only its (closed-form) metrics."""
    cand = SimpleNamespace(metrics={"accuracy": value, "p_accept": 0.5}, intervals={},
                           label=name)
    return FamilyBest(name, cand, {} if margin is None else {"accuracy": margin},
                      {} if interval is None else {"accuracy": interval}, (), winner)


def test_the_statement_when_the_target_alone_wins():
    """Accuracy maximised: the target alone (83%) beats both speculative families (78%,
    80%); the GPU family's margin is decided, the FPGA family's is not."""
    fams = [family("target-only", 83.0, winner=True),
            family("gpu-speculative", 78.0, margin=-5.0, interval=[-7.0, -3.0]),
            family("fpga-speculative", 80.0, margin=-3.0, interval=[-6.0, 1.0])]
    assert vf.families_verdict(fams, ["accuracy"]) == (
        "No speculative design beats the best target-only design (the target model alone) "
        "on accuracy in this space. Decided (0 outside the joint 90% interval) for "
        "GPU-draft speculation. Not decided (0 inside the joint 90% interval) for "
        "FPGA-draft speculation.")
    assert vf.winner_vs_target_alone(fams, ["accuracy"]) is None
    # a speculative family ahead: no such statement
    fams[2] = family("fpga-speculative", 84.0, margin=1.0, interval=[-1.0, 3.0])
    assert vf.families_verdict(fams, ["accuracy"]) is None
    # a family without a feasible design reads so
    (row,) = vf.family_rows([FamilyBest("target-only", None, note="none here")], ["accuracy"])
    assert row == {"family": "target alone", "design": "none here"}


def test_a_speculative_best_that_accepts_no_draft_step_is_said():
    """A speculative family whose best accepts no draft step (here the target judging at
    threshold 1.0) is the target alone with a draft and a verifier added: one line says so,
    in the dashboard and the CLI; a family that accepts 1% or more, the target alone and a
    width design (p_accept 0: no draft) get none."""
    from dse.cli.search import _families_text
    from dse.search.families import idle_drafts

    def with_accept(f, pa):
        return replace(f, candidate=SimpleNamespace(**{**vars(f.candidate),
                                                       "metrics": {"accuracy": 80.0,
                                                                   "p_accept": pa}}))

    fams = [with_accept(family("target-only", 83.0, winner=True), 0.0),
            with_accept(family("gpu-speculative", 80.0, margin=-3.0, interval=[-4, -2]), 0.0),
            with_accept(family("fpga-speculative", 80.0, margin=-3.0, interval=[-4, -2]),
                        0.004),
            with_accept(family("width", 80.0, margin=-3.0, interval=[-4, -2]), 0.0)]
    fams[3].candidate.design = SimpleNamespace(system=SimpleNamespace(
        workflow_name="best-of-n", samples=4))
    assert [f.family for f in idle_drafts(fams)] == ["gpu-speculative", "fpga-speculative"]
    gpu, fpga = vf.idle_draft_notes(fams, ["accuracy"])
    assert gpu.startswith("GPU-draft speculation: its best design accepts no draft step "
                          "(p_accept 0): the target writes every step")
    assert fpga.startswith("FPGA-draft speculation: its best design accepts under 1% of its "
                           "draft's steps (p_accept 0.004)")
    assert gpu.endswith("does better on accuracy.")
    fams[2] = with_accept(fams[2], 0.01)
    assert [f.family for f in idle_drafts(fams)] == ["gpu-speculative"]
    for f in fams[:3]:  # the CLI's table reads the candidate's label and design
        f.candidate.design = SimpleNamespace(system=None)
    text = _families_text(["accuracy"], fams, None)
    assert "\ngpu-speculative: its best design accepts no draft step (p_accept 0)" in text
    assert "fpga-speculative: its best" not in text


def test_a_width_best_as_accurate_as_its_policy_alone_is_said():
    """Majority voting over 2 samples is one sample's accuracy (a 1-1 tie is split at random):
    a width family whose best is that design is the target alone with a second sample, and one
    line says so; majority over 4, or best-of-2, gets none."""
    from dse.cli.search import _families_text
    from dse.search.families import idle_widths

    def width(workflow, n):
        f = family("width", 74.2, margin=0.01, interval=[0.007, 0.012])
        f.candidate.design = SimpleNamespace(system=SimpleNamespace(workflow_name=workflow,
                                                                    samples=n))
        return f

    target = family("target-only", 74.2, winner=True)
    target.candidate.design = SimpleNamespace(system=None)
    for workflow, n, idle in (("majority", 2, True), ("majority", 4, False),
                              ("best-of-n", 2, False)):
        fams = [target, width(workflow, n)]
        assert [f.family for f in idle_widths(fams)] == (["width"] if idle else [])
        notes = vf.idle_draft_notes(fams, ["accuracy"])
        text = _families_text(["accuracy"], fams, None)
        if idle:
            (note,) = notes
            assert note.startswith("width (N samples ranked or voted): its best design, "
                                   "majority voting over 2 samples, is exactly as accurate "
                                   "as its policy alone")
            assert "\nwidth: its best design, majority voting over 2 samples" in text
        else:
            assert notes == [] and "its best design, majority" not in text
