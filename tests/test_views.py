"""dse.views, the dashboard's figure data: URL round trip, parts that sum to the report's
totals, roofline points under their roofs, tornado slopes equal to the symbolic sensitivities."""

from __future__ import annotations

import io
import zipfile
from dataclasses import replace
from types import SimpleNamespace

import pytest

from dse import views
from dse.engine.evaluate import evaluate
from dse.errors import SpecError, UnknownNameError
from dse.io.design_files import DesignFile, system_to_toml
from dse.io.resolve import override_spec as with_overrides
from dse.model.design import build_design
from dse.model.schedules import PRESETS


def _design(cat, state):
    return build_design(cat, state.spec(cat), state.schedule)


def test_params_round_trip(cat):
    sched = PRESETS["brsd"].with_flags(shadow_sync=True)  # custom: brsd + shadow sync
    s = views.DesignState("paper-config2-v80", "gsm8k", sched,
                          {"accept_threshold": 0.8, "fpga_clock_MHz": 250.0,
                           "target_device": "a100-80gb-pcie"})
    p = s.params()
    assert p["schedule"] == "brsd" and p["shadow_sync"] == "true"
    assert p["accept_threshold"] == "0.8" and p["target_device"] == "a100-80gb-pcie"
    back = views.state_from_params(cat, p)
    assert back.schedule == sched
    assert back.spec(cat) == s.spec(cat)
    assert back.params() == p


def test_params_take_cli_aliases_and_defaults(cat):
    s = views.state_from_params(cat, {"fpga.clock_mhz": "250", "step_ahead": "off"})
    assert (s.system, s.workload) == (views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD)
    assert s.overrides == {"fpga_clock_MHz": 250.0}
    assert not s.schedule.step_ahead and s.schedule.shadow_sync
    assert "fpga_clock_MHz=250.0" in s.set_args()
    assert views.state_from_params(cat, s.params()) == s


@pytest.mark.parametrize("params, err", [
    ({"system": "nope"}, UnknownNameError), ({"workload": "nope"}, UnknownNameError),
    ({"schedule": "fast"}, UnknownNameError), ({"accept_threshold": "2"}, SpecError),
    ({"bogus": "1"}, SpecError), ({"backtracking": "maybe"}, SpecError),
])
def test_bad_params_name_the_parameter(cat, params, err):
    with pytest.raises(err) as e:
        views.state_from_params(cat, params)
    assert next(iter(params)) in str(e.value) or params[next(iter(params))] in str(e.value)


def test_state_from_design_finds_the_closest_system(cat):
    base = cat.get("system", "paper-config1-v80")
    spec = replace(with_overrides(base, {"accept_threshold": 0.65, "max_backtracks": 2}),
                   name="sweep-best-3")
    st = views.state_from_design(cat, DesignFile(spec, PRESETS["brsd"], "olympiadbench"))
    assert st.system == "paper-config1-v80"
    assert st.overrides == {"accept_threshold": 0.65, "max_backtracks": 2}
    assert (st.workload, st.schedule) == ("olympiadbench", PRESETS["brsd"])
    strip = ("name", "description", "sources")
    got = {k: v for k, v in system_to_toml(st.spec(cat)).items() if k not in strip}
    assert got == {k: v for k, v in system_to_toml(spec).items() if k not in strip}


@pytest.mark.parametrize("cfg", ["config1", "config2"])
def test_gpu_baselines_are_the_papers_gpu_systems(cat, cfg):
    """An FPGA design's baselines move its draft to the PRM's GPU: the paper's 3 x RTX 3090
    systems, to the last digit; a GPU design keeps its hardware."""
    w = cat.get("workload", "gsm8k")
    fpga = views.DesignState(f"paper-{cfg}-u280", "gsm8k", PRESETS["heteroreason"],
                             {"fpga_clock_MHz": 250.0})
    gpu = views.DesignState(f"paper-{cfg}-3090", "gsm8k", PRESETS["heteroreason"])
    for b in views.BASELINES:
        fb, gb = fpga.gpu_baseline(cat, b), gpu.gpu_baseline(cat, b)
        assert gb == gpu.with_schedule(PRESETS[b])
        got, want = (evaluate(_design(cat, x), w).to_dict() for x in (fb, gb))
        assert {**got, "system": ""} == {**want, "system": ""}


def test_speedups_and_energy_split_sum_to_the_report(cat):
    st = views.default_state()
    d = _design(cat, st)
    w = cat.get("workload", st.workload)
    rep = evaluate(d, w)
    base = evaluate(build_design(cat, st.spec(cat), PRESETS["brsd"]), w)
    g = views.speedups(rep, {"brsd": base})["brsd"]
    assert g["speedup"] == base.latency_s_per_problem / rep.latency_s_per_problem
    assert g["energy_gain"] == base.j_per_token / rep.j_per_token
    split = views.energy_split(d, rep)
    for r, e in split.items():
        assert e["idle_j"] + e["active_j"] == pytest.approx(rep.energy_by_device_j[r])
        assert e["idle_j"] == pytest.approx(float(getattr(d, r).power_w("idle"))
                                            * rep.latency_s_per_problem)
        assert e["active_j"] >= 0


def test_role_options(cat):
    fpga = views.role_options(cat, "draft", "u280")
    assert fpga.kind == "fpga" and fpga.servings == cat.names("fpga-engine")
    assert fpga.serving_label == "FPGA engine" and "clock_hz" in fpga.build_knobs
    assert fpga.default_precision in fpga.precisions and "u280" in fpga.devices
    prm = views.role_options(cat, "prm", "rtx-3090")
    assert prm.kind == "gpu" and "u280" not in prm.devices and prm.build_knobs == ()
    assert prm.models and all("prm" in cat.model(m).roles for m in prm.models)
    assert prm.default_serving in prm.servings
    r = views.build_knob_ranges(cat, "u280")
    assert r["clock_min_mhz"] <= r["clock_default_mhz"] <= r["clock_max_mhz"]
    assert views.build_knob_ranges(cat, "rtx-3090") == {}


def test_timeline_is_one_seeded_problem(cat):
    st = views.default_state()
    d = _design(cat, st)
    w = cat.get("workload", st.workload)
    a, b = views.problem_timeline(d, w, 3), views.problem_timeline(d, w, 3)
    assert a == b and a.attempts == len(a.decisions) > 0
    assert {i["device"] for i in a.intervals} <= set(views.TIMELINE_DEVICES)
    assert {i["kind"] for i in a.intervals} <= set(views.TIMELINE_KINDS)
    assert all(0 <= i["start_s"] < i["end_s"] <= a.latency_s + 1e-9 for i in a.intervals)


@pytest.mark.parametrize("system", ["paper-config1-u280", "paper-config2-3090"])
def test_roofline_points_stay_under_their_roofs(cat, system):
    st = views.DesignState(system, "math500", PRESETS["heteroreason"])
    d = _design(cat, st)
    w = cat.get("workload", "math500")
    rfs = views.rooflines(d, w)
    assert [r.role for r in rfs] == ["draft", "prm", "target"]
    for r in rfs:
        assert r.effective_flops_per_s <= r.peak_flops_per_s
        assert r.effective_bytes_per_s <= r.peak_bytes_per_s
        for p in r.points:
            roof = min(r.peak_flops_per_s, r.peak_bytes_per_s * p.intensity)
            assert 0 < p.achieved_flops_per_s <= roof * (1 + 1e-9), (r.role, p.op)
    # the draft's point is the decode the schedule times
    ctx = w.prompt_tokens + views.operating_context(d, w)
    assert rfs[0].points[0].time_s == pytest.approx(float(d.draft.decode_token_s(ctx)))
    # each point's time carries the interval `dse roofline` gives the same placement's decode
    # (a time factor is one ratio per operation, whatever the context)
    from dse.io.roofline import roofline

    s = d.system
    one = roofline(cat, model=s.draft_model, device=s.draft_device,
                   precision_name=s.draft_precision,
                   **({"serving": s.draft_serving} if s.draft_serving else {}))
    lo, hi = one["decode_s_per_token_interval"]
    p = rfs[0].points[0]
    assert p.time_low_s / p.time_s == pytest.approx(lo / one["decode_s_per_token"])
    assert p.time_high_s / p.time_s == pytest.approx(hi / one["decode_s_per_token"])
    for r in rfs:
        for q in r.points:
            a, b = q.achieved_interval
            assert a < q.achieved_flops_per_s < b


def test_tornado_slopes_are_the_symbolic_sensitivities(cat):
    """For a small step, (high - low) / (2 rel base) is the elasticity d ln L / d ln x that
    dse.model.symbolic.sensitivities derives with sympy (for the step components; the accept
    probability also moves the expected attempt counts in the tornado, which sensitivities
    hold fixed, so only its sign is checked)."""
    from dse.model.symbolic import sensitivities

    st = views.DesignState("paper-config1-3090", "math500", PRESETS["brsd"])
    d = _design(cat, st)
    w = cat.get("workload", "math500")
    rel = 1e-5
    rows = {r["term"]: r for r in views.tornado(d, w, rel=rel)}
    sens = sensitivities(d, w)["latency"]
    checked = 0
    for term in ("D", "W", "Tf", "Ta"):
        r = rows[term]
        slope = (r["latency_high_s"] - r["latency_low_s"]) / (2 * rel * r["latency_base_s"])
        assert slope == pytest.approx(sens[term], rel=1e-3, abs=1e-6), term
        checked += 1
    assert checked == 4
    pa = rows["pa"]
    assert pa["latency_high_s"] < pa["latency_base_s"] < pa["latency_low_s"]
    coarse = views.tornado(d, w)
    swings = [max(abs(r["latency_high_s"] - r["latency_low_s"]) / r["latency_base_s"],
                  abs(r["j_per_token_high"] - r["j_per_token_low"]) / r["j_per_token_base"])
              for r in coarse]
    assert swings == sorted(swings, reverse=True)


def test_bundle_zip_is_deterministic():
    files = {"b/x.txt": b"two", "a.txt": b"one"}
    z1, z2 = views.bundle_zip(files), views.bundle_zip(dict(reversed(files.items())))
    assert z1 == z2
    with zipfile.ZipFile(io.BytesIO(z1)) as z:
        assert z.namelist() == ["a.txt", "b/x.txt"]
        assert z.read("b/x.txt") == b"two"
    with pytest.raises(SpecError):
        views.bundle_zip({"../evil": b""})


def test_sqlite_file():
    assert str(views.sqlite_file("sqlite:///dse-studies.db")) == "dse-studies.db"
    assert str(views.sqlite_file("sqlite:////tmp/a%20b.db")) == "/tmp/a b.db"
    assert views.sqlite_file("postgresql://host/db") is None


def test_paper_points_and_candidate_rows(cat):
    row = SimpleNamespace(id="speedup_vs_brsd.u280.config1.math500", description="d",
                          paper_low=1.0, paper_high=1.2, tool=1.21, within=True,
                          calibrated=False, tolerance="range +-0.05")
    (p,) = views.paper_points([row])
    assert p["group"] == "speedup_vs_brsd" and p["paper_mid"] == pytest.approx(1.1)
    assert p["ratio"] == pytest.approx(1.1)
    spec = cat.get("system", "paper-config1-u280")
    cand = SimpleNamespace(design=DesignFile(spec, PRESETS["rsd"], "math500"),
                           metrics={"j_per_token": 2.0, "mean_value_diagnostic": {"x": 1.0}},
                           toml="")
    (r,) = views.candidate_rows([cand])
    assert r["j_per_token"] == 2.0 and "mean_value_diagnostic" not in r
    assert r["schedule"] == "rsd" and "u280" in r["design"]
