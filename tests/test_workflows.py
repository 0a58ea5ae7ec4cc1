"""Workflows, verifiers and shared devices: hand-worked numbers for a target-only design, a
target judge's step cost and a shared device's memory, serialisation and power; one conformance
suite over the verifier kinds; the refusals of bad input."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.cli import main
from dse.engine.evaluate import evaluate
from dse.errors import FlagValueError, SpecError
from dse.io.resolve import resolve_design, runnable_schedules
from dse.model.design import build_design, schedule_conflicts
from dse.model.schedules import PRESETS
from dse.model.verifiers import VERIFIERS, judge_parameters
from dse.model.workflow import model_accuracy


@dataclass(frozen=True)
class RoundPlacement:
    """A placement with round numbers: prefill 1 ms/token, decode 20 ms/token, idle 50 W,
    decoding 250 W, prefilling 300 W. Everything else is the wrapped placement's."""

    inner: object

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def prefill_s(self, n_new, ctx=0, *, all_positions=False):
        return 0.001 * np.asarray(n_new, dtype=float) + 0.0 * np.asarray(ctx)

    def decode_s(self, n, ctx):
        return 0.02 * np.asarray(n, dtype=float) + 0.0 * np.asarray(ctx)

    def power_w(self, state, ctx=0, n_new=1):
        w = {"idle": 50.0, "decode": 250.0, "prefill": 300.0}[state]
        return np.full(np.broadcast_shapes(np.shape(ctx), np.shape(n_new)), w)


@pytest.fixture(scope="module")
def cat():
    return dse.load_catalog()


@pytest.fixture(scope="module")
def math500(cat):
    return cat.workload("math500")


# ------------------------------------------------------------------------------ target-only


def test_target_only_by_hand(cat, math500):
    """One step count (cv 0: S = round(7.4) = 7) of 53 tokens: 371 tokens. Prefill of the
    98.9-token prompt 0.0989 s, decode 0.02 x 371 = 7.42 s: latency 7.5189 s. Energy: idle
    50 W x 7.5189 s = 375.945 J, prefill (300 - 50) x 0.0989 = 24.725 J, decode (250 - 50) x
    7.42 = 1484 J: 1884.67 J, 5.07997 J/token. Accuracy: the published solo accuracy (the
    design's budget is the workload's), p_accept 0, every step a target step."""
    d = dse.load_design("paper-config1-3090", overrides={"workflow": "target-only"})
    d = replace(d, target=RoundPlacement(d.target))
    w = replace(math500, steps_cv=0.0)
    r = evaluate(d, w)
    assert r.schedule == "target-only" and r.p_accept == 0.0
    assert r.tokens_per_problem == pytest.approx(371.0)
    assert r.latency_s_per_problem == pytest.approx(7.5189)
    assert r.latency_breakdown_s["init"] == pytest.approx(0.0989)
    assert r.latency_breakdown_s["target"] == pytest.approx(7.42)
    assert r.latency_breakdown_s["draft"] == r.latency_breakdown_s["prm"] == 0.0
    assert r.energy_j_per_problem == pytest.approx(1884.67)
    assert r.j_per_token == pytest.approx(1884.67 / 371)
    assert set(r.energy_by_device_j) == {"target"} and set(r.devices) == {"target"}
    assert r.accuracy == pytest.approx(model_accuracy(w, d.target.model.name))
    assert r.target_calls_per_problem == pytest.approx(7.0)


def test_target_only_simulator_agrees_with_closed_form(cat, math500):
    d = dse.load_design("paper-config1-u280", overrides={"workflow": "target-only"})
    cf = evaluate(d, math500)
    sim = evaluate(d, math500, evaluator="simulator", problems=4000, seed=1)
    assert sim.latency_s_per_problem == pytest.approx(cf.latency_s_per_problem, rel=0.02)
    assert sim.j_per_token == pytest.approx(cf.j_per_token, rel=0.02)
    assert sim.accuracy == pytest.approx(cf.accuracy, abs=2.0)
    assert sim.percentiles["latency_p95_s"] > sim.percentiles["latency_p50_s"]


def test_target_only_is_the_accept_one_limit_in_accuracy(cat, math500):
    """The speculative accuracy model at accept threshold 1 (every step rewritten) is the
    target-only accuracy."""
    spec = dse.load_design("paper-config1-3090", schedule="rsd",
                           overrides={"accept_threshold": 1.0})
    alone = dse.load_design("paper-config1-3090", overrides={"workflow": "target-only"})
    assert evaluate(spec, math500).accuracy == pytest.approx(
        evaluate(alone, math500).accuracy, abs=0.05)


def test_target_only_design_has_no_draft(cat):
    d = dse.load_design("paper-config1-u280", overrides={"workflow": "target-only"})
    assert d.roles == ("target",) and d.family == "target-only"
    with pytest.raises(dse.DseError, match="has no draft"):
        _ = d.draft


# ------------------------------------------------------------------------------ verifiers


def test_target_judge_step_cost_by_hand(cat, math500):
    """The judge prefills the 50-token step and the scoring instruction (20 tokens) after its
    cached prefix and samples the score token from that prefill's last logits (vLLM,
    max_tokens=1: no decode step): 0.001 x 70 = 0.07 s."""
    d = dse.load_design("paper-config1-3090", schedule="rsd", overrides={"verifier": "target"})
    p = RoundPlacement(d.target)
    assert judge_parameters().prompt_tokens == 20.0
    assert float(VERIFIERS["target"].score_s(p, math500, 50, 300)) == pytest.approx(0.07)
    # its power above idle is the prefill's: 300 - 50 W
    assert float(VERIFIERS["target"].score_dyn_w(p, math500, 50, 300)) == pytest.approx(250.0)


def test_target_judge_rewrite_prefills_nothing_and_prm_is_the_target(cat, math500):
    from dse.model.schedules import Costs

    d = dse.load_design("paper-config1-3090", schedule="rsd", overrides={"verifier": "target"})
    c = Costs(d, math500)
    assert d.prm is d.target and d.prm_placement is None
    assert float(c.target_prefill(40.0, 200.0)) == 0.0
    assert float(c.link_gpu(40.0)) == 0.0  # the verifier is on the target's device
    # the prompt is prefilled once by the judge: init adds the target's prompt prefill
    spec = dse.load_design("paper-config1-3090", schedule="rsd")
    extra = float(d.target.prefill_s(math500.prompt_tokens, 0))
    assert c.init_s() == pytest.approx(Costs(spec, math500).init_s() + extra)


@pytest.fixture(scope="module", params=sorted(VERIFIERS))
def verifier_case(request, cat, math500):
    d = dse.load_design("paper-config1-3090", schedule="rsd",
                        overrides={"verifier": request.param})
    return VERIFIERS[request.param], d.prm, math500


@settings(max_examples=25, deadline=None)
@given(n=st.floats(1, 600), resp=st.floats(0, 3000), dn=st.floats(0, 300),
       dr=st.floats(0, 3000))
def test_verifier_conformance(verifier_case, n, resp, dn, dr):
    """Every verifier kind: scoring time positive, finite, non-decreasing in the step's length
    and the context; power above idle finite and >= 0; vectorised equals scalar."""
    v, p, w = verifier_case
    t = float(v.score_s(p, w, n, resp))
    assert np.isfinite(t) and t > 0
    assert float(v.score_s(p, w, n + dn, resp)) >= t * (1 - 1e-12)
    assert float(v.score_s(p, w, n, resp + dr)) >= t * (1 - 1e-12)
    assert 0 <= float(v.score_dyn_w(p, w, n, resp)) < np.inf
    vec = v.score_s(p, w, np.array([n, n + dn]), np.array([resp, resp + dr]))
    assert vec[0] == pytest.approx(t) and vec[1] == pytest.approx(
        float(v.score_s(p, w, n + dn, resp + dr)))


def test_verifier_scores_discriminate(verifier_case):
    """A verifier's good steps score higher on average than its bad ones, for the design's
    (draft, target) pair and for the target judging itself."""
    v, _, w = verifier_case
    d = dse.load_design("paper-config1-3090", schedule="rsd", overrides={"verifier": v.name})
    draft, target = d.draft.model.name, d.target.model.name
    for s in (v.scores(w, draft, target), v.scores(w, target, target)):
        assert min(s.good_alpha, s.good_beta, s.bad_alpha, s.bad_beta) > 0 and s.basis
        assert (s.good_alpha / (s.good_alpha + s.good_beta)
                > s.bad_alpha / (s.bad_alpha + s.bad_beta))
    assert v.serving_notes()


def test_verifier_registry_fails_loudly():
    with pytest.raises(dse.DseError, match="unknown verifier 'pprm'; valid: prm, target"):
        VERIFIERS["pprm"]
    with pytest.raises(ValueError, match="already registered"):
        VERIFIERS.register(VERIFIERS["prm"])


def test_accuracy_factor_key_by_verifier(cat, math500):
    """A PRM design and a target-judge design of one pair rest on different fits: their
    accuracy factors have different keys (a ratio of the two does not cancel them), while two
    target-judge designs of the pair on other hardware share one."""
    from dse.uncertainty.factors import accuracy_key, design_factors

    prm = dse.load_design("paper-config1-3090", schedule="rsd")
    judge = dse.load_design("paper-config1-3090", schedule="rsd", overrides={"verifier": "target"})
    other = dse.load_design("paper-config1-u280", schedule="rsd", overrides={"verifier": "target"})
    assert (prm.draft.model.name, prm.target.model.name) == (judge.draft.model.name,
                                                             judge.target.model.name)
    keys = {name: {f.key for f in design_factors(d, math500) if f.quantity == "accuracy"}
            for name, d in (("prm", prm), ("judge", judge), ("other", other))}
    assert keys["prm"] == {accuracy_key(prm, math500)}
    assert keys["judge"] == {accuracy_key(judge, math500)} == keys["other"]
    assert accuracy_key(judge, math500) == accuracy_key(prm, math500) + ":target-judge"


# ------------------------------------------------------------------------------ shared devices


def _colocated(cat, colocate: str, schedule: str = "rsd", **over):
    over = {"colocate": colocate, "draft_device": "rtx-3090", "draft_precision": "bf16",
            "draft_engine": None, **over}
    over = {k: v for k, v in over.items() if v is not None}
    return dse.load_design("paper-config1-u280", schedule=schedule, overrides=over)


def test_shared_device_memory_adds_up(cat):
    """PRM (7B) and target (7B) together on one 24 GB RTX 3090 need more than it holds; the
    refusal names `colocate` and the sum of the two placements' needs."""
    d = dse.load_design("paper-config1-3090", schedule="rsd", check=False,
                        overrides={"colocate": "prm+target"})
    need = d.prm.memory_needed_bytes + d.target.memory_needed_bytes
    assert need > d.target.usable_memory_bytes  # 14.4 GB + 15.5 GB > 20.6 GB usable
    with pytest.raises(SpecError, match=f"together they need {need / 1e9:.2f} GB") as e:
        dse.load_design("paper-config1-3090", schedule="rsd",
                        overrides={"colocate": "prm+target"})
    assert e.value.key == "colocate" and e.value.exit_code == 3
    # the draft (0.5B) and the target fit together
    d2 = _colocated(cat, "draft+target")
    assert d2.draft.memory_needed_bytes + d2.target.memory_needed_bytes <= \
        d2.target.usable_memory_bytes


def test_shared_device_serialises_its_roles(cat):
    """Schedules whose overlaps need separate devices are refused on shared ones."""
    groups = (("draft", "target"),)
    assert schedule_conflicts(groups, PRESETS["rsd"]) == []
    assert schedule_conflicts(groups, PRESETS["brsd"]) == []
    assert any("step_ahead" in w for w in schedule_conflicts(groups, PRESETS["heteroreason"]))
    sched = PRESETS["rsd"].with_flags(shadow_sync=True)
    assert any("shadow_sync" in w for w in schedule_conflicts(groups, sched))
    assert any("backtracking" in w for w in schedule_conflicts((("draft", "prm"),),
                                                               PRESETS["brsd"]))
    with pytest.raises(SpecError, match="step_ahead overlaps") as e:
        _colocated(cat, "draft+target", schedule="heteroreason")
    assert e.value.key == "colocate"
    src = dse.load_design("paper-config1-3090").system
    ok, notes = runnable_schedules(replace(src, colocate="draft+target"),
                                   [PRESETS[n] for n in PRESETS])
    assert [s.name for s in ok] == ["rsd", "brsd"] and len(notes) == 2


def test_shared_device_counts_idle_power_once_and_pays_no_hop(cat, math500):
    """PRM and target on one A100 (they fit in 80 GB): the PRM's energy is its dynamic energy
    alone (its device's idle power is booked once, to the PRM's group's first role... the
    PRM), the target's carries no idle; no link hop between them."""
    base = {"prm_device": "a100-80gb-pcie", "target_device": "a100-80gb-pcie"}
    sep = dse.load_design("paper-config1-3090", schedule="rsd", overrides=base)
    col = dse.load_design("paper-config1-3090", schedule="rsd",
                          overrides={**base, "colocate": "prm+target"})
    rs, rc = evaluate(sep, math500), evaluate(col, math500)
    idle = float(sep.target.power_w("idle"))
    target_dyn_sep = rs.energy_by_device_j["target"] - idle * rs.latency_s_per_problem
    assert rc.energy_by_device_j["target"] == pytest.approx(target_dyn_sep, rel=1e-9)
    prm_dyn_sep = rs.energy_by_device_j["prm"] - idle * rs.latency_s_per_problem
    assert rc.energy_by_device_j["prm"] - idle * rc.latency_s_per_problem == pytest.approx(
        prm_dyn_sep, rel=1e-9)
    assert rc.energy_j_per_problem < rs.energy_j_per_problem - 0.9 * idle * \
        rc.latency_s_per_problem
    # no hop between PRM and target: only the draft's transfers remain on the path
    assert rc.latency_breakdown_s["link"] < rs.latency_breakdown_s["link"]


def test_all_on_one_gpu_has_no_link_time(cat, math500):
    d = _colocated(cat, "draft+target", verifier="target")
    r = evaluate(d, math500)
    assert r.communication_share == 0.0 and r.latency_breakdown_s["link"] == 0.0
    assert d.family == "gpu-speculative"


# ------------------------------------------------------------------------------ bad input


def test_bad_workflow_keys_in_a_file_are_one_line_exit_3(tmp_path, capsys):
    text = (tmp_path / "s.toml")
    base = (dse.load_design("paper-config1-3090").system.path)
    src = open(base, encoding="utf-8").read()
    for extra, key in (('workflow = "dreaming"', "workflow"),
                       ('workflow = "target-only"\nverifier = "prm"', "verifier"),
                       ('colocate = "prm+target"', "colocate")):
        text.write_text(src.replace('schema_version = 1', f'schema_version = 1\n{extra}', 1)
                        .replace('name = "paper-config1-3090"', 'name = "s"'),
                        encoding="utf-8")
        code = main(["evaluate", "--design", str(text), "--scenario", "math500"])
        err = capsys.readouterr().err
        assert code == 3, err
        assert err.count("\n") == 1 and key in err and "Traceback" not in err


def test_bad_workflow_flags_are_one_line_exit_2(capsys):
    for item, key in (("workflow=dreaming", "workflow"), ("verifier=oracle", "verifier"),
                      ("colocate=prm+target", "colocate")):
        extra = ["--set", "workflow=target-only"] if key == "verifier" else []
        code = main(["evaluate", "--system", "paper-config1-3090", "--scenario", "math500",
                     "--set", item, *extra])
        err = capsys.readouterr().err
        assert code == 2, err
        assert err.count("\n") == 1 and key in err and "Traceback" not in err
    # a verifier on a target-only design, both from flags
    code = main(["evaluate", "--system", "paper-config1-3090", "--scenario", "math500",
                 "--set", "workflow=target-only", "--set", "verifier=target"])
    err = capsys.readouterr().err
    assert code == 2 and "no verifier" in err


def test_evaluate_of_a_target_only_design_prints_one_row(capsys):
    assert main(["evaluate", "--system", "paper-config1-u280", "--scenario", "math500",
                 "--set", "workflow=target-only"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("target-only")]
    heads = [ln for ln in out.splitlines() if ln.startswith("schedule ")]
    # one row in each part of the table (split to fit 100 columns)
    assert len(rows) == len(heads) >= 1 and "heteroreason" not in out


def test_overrides_are_checked_per_field_without_a_round_trip(cat):
    """resolve_design replaces fields of the frozen spec after each one's check."""
    d = resolve_design(cat, "paper-config1-u280", overrides={"fpga.clock_mhz": 250,
                                                             "step_ahead": False})
    assert d.system.fpga_clock_hz == 250e6 and not d.schedule.step_ahead
    assert d.system.sources["fpga_clock_MHz"] == "set by overrides"
    with pytest.raises(SpecError, match="accept_threshold"):
        resolve_design(cat, "paper-config1-u280", overrides={"accept_threshold": 1.7})
    with pytest.raises(FlagValueError):
        from dse.io.resolve import override_spec

        override_spec(d.system, {"workflow": "target-only", "verifier": "prm"},
                      source="--set")
    assert build_design(cat, d.system, PRESETS["rsd"]).schedule.name == "rsd"


def test_cost_primitives_take_a_batch(cat):
    """Every placement kind takes `batch`: 1 is the single-stream call exactly, a whole number
    of sequences up to MAX_BATCH is priced, anything else is refused in one line."""
    from dse.devices.protocol import MAX_BATCH

    d = dse.load_design("paper-config1-u280")
    for p in (d.draft, d.prm, d.target):
        assert float(p.decode_s(10, 100, batch=1)) == float(p.decode_s(10, 100))
        assert float(p.prefill_s(10, 100, batch=1)) == float(p.prefill_s(10, 100))
        assert float(p.power_w("decode", 100, batch=1)) == float(p.power_w("decode", 100))
        assert float(p.decode_s(10, 100, batch=8)) > float(p.decode_s(10, 100))
        for bad in (0, MAX_BATCH + 1, 2.0, True):
            with pytest.raises(ValueError, match="a whole number of sequences"):
                p.decode_s(10, 100, batch=bad)


@pytest.mark.parametrize("over", [
    {"verifier": "target"},
    {"colocate": "draft+target"},
    {"verifier": "target", "colocate": "draft+target"},
    {"prm_device": "a100-80gb-pcie", "target_device": "a100-80gb-pcie", "draft_device":
     "a100-80gb-pcie", "colocate": "draft+prm+target"},
])
def test_judge_and_shared_designs_closed_form_agrees_with_simulator(cat, math500, over):
    """The simulator (the referee) and the closed form agree within 2% on latency and J/token
    for target-judge and shared-device designs, as for the shipped ones."""
    for system in ("paper-config1-3090", "paper-config2-3090"):
        for sched in ("rsd", "brsd"):
            draft_on_verifier = over.get("colocate") == "draft+prm+target" or (
                over.get("verifier") == "target" and "draft" in over.get("colocate", ""))
            if sched == "brsd" and draft_on_verifier:
                continue  # backtracking needs the draft and the verifier apart
            d = dse.load_design(system, schedule=sched, overrides=over)
            a = evaluate(d, math500)
            b = evaluate(d, math500, evaluator="simulator", problems=4000, seed=0)
            for k in ("latency_s_per_problem", "j_per_token"):
                assert getattr(b, k) == pytest.approx(getattr(a, k), rel=0.02), (system, k)
