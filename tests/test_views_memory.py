"""dse.views for a role's memory and host options (`<role>_kv_precision`,
`<role>_offload_fraction`, `<role>_host_cpu_slowdown`): what each device kind offers, the
widgets' words for an absent key (no override unless the preset sets the key), the overrides
dropped when a role moves to a kind that does not take them, the URL round trip, the keys the
target alone and a judging target keep, the GPU baselines' moved draft and the design label.
Expected values are the catalog's, checked by hand in the comments."""

from __future__ import annotations

import pytest

from dse import views
from dse.engine.evaluate import evaluate
from dse.io.design_files import system_to_toml
from dse.io.resolve import override_spec
from dse.model.design import build_design, memory_options
from dse.model.schedules import PRESETS

ALL_KV = ("16", "fp8", "int8", "q8_0", "q4_0")  # dse.specs.model.KV_PRECISIONS


def state(system: str = views.DEFAULT_SYSTEM, sched: str = "heteroreason", **over
          ) -> views.DesignState:
    return views.DesignState(system, views.DEFAULT_WORKLOAD, PRESETS[sched], over)


# ------------------------------------------------------------------------ options per kind

def test_an_fpga_draft_takes_no_memory_option(cat):
    """The U280 (an FPGA kind): its build fixes the KV width, it holds every weight and has no
    host CPU term; the KV widget offers only its word for absent."""
    o = views.role_options(cat, "draft", "u280")
    assert (o.kv_precisions, o.offloads, o.hosted) == ((), False, False)
    assert (o.host_cpu_slowdown, o.host_cpu_source) == (None, "")
    assert o.kv_choices == ["16"]
    assert not any(views.supports(o, m) for m in views.MEMORY_OPTIONS)


def test_a_gpu_takes_every_memory_option_with_its_boards_host(cat):
    """An RTX 3090 (boards/gpus/rtx-3090.toml: host_cpu_slowdown = 1.0, an x86 host assumed
    like the calibration servers); a Jetson Orin Nano 8GB: 3.4 GHz / (1.5 GHz x 0.8) = 2.833,
    written 2.83333 in its file."""
    o = views.role_options(cat, "target", "rtx-3090")
    assert o.kv_precisions == ALL_KV and o.kv_choices == list(ALL_KV)
    assert o.offloads and o.hosted
    assert all(views.supports(o, m) for m in views.MEMORY_OPTIONS)
    assert o.host_cpu_slowdown == 1.0
    assert o.host_cpu_source.startswith("assumption: hosted by an x86")
    j = views.role_options(cat, "draft", "jetson-orin-nano-8gb")
    assert j.host_cpu_slowdown == 2.83333
    assert "3.4 GHz / (1.5 GHz x 0.8) = 2.833" in j.host_cpu_source


def test_kv_labels():
    assert [views.kv_label(k) for k in ALL_KV] == [
        "16-bit (default)", "fp8 (8 bits)", "int8 (8 bits)",
        "q8_0 (8.5 bits)", "q4_0 (4.5 bits)"]


def test_memory_options_are_the_designs(cat):
    """views.MEMORY_OPTIONS names the keys dse.model.design.memory_options reads."""
    spec = state().spec(cat)
    assert tuple(memory_options(spec, "target")) == views.MEMORY_OPTIONS


# ------------------------------------------------------------------------ absent handling

def test_widget_values_of_a_system(cat):
    """A key the system leaves out loads as the widget's word for absent ("16", 0.0, 0.0); a
    key it sets (as a preset that set one would) loads as its value."""
    vals = views.memory_widget_values(state().spec(cat))
    assert vals == {f"{r}_{o}": v for r in ("draft", "prm", "target")
                    for o, v in zip(views.MEMORY_OPTIONS, ("16", 0.0, 0.0), strict=True)}
    spec = state("paper-config1-jetson", target_kv_precision="fp8",
                 draft_offload_fraction=0.25, prm_host_cpu_slowdown=1.5).spec(cat)
    vals = views.memory_widget_values(spec)
    assert (vals["target_kv_precision"], vals["draft_offload_fraction"],
            vals["prm_host_cpu_slowdown"]) == ("fp8", 0.25, 1.5)
    assert vals["draft_kv_precision"] == "16" and vals["target_host_cpu_slowdown"] == 0.0


def test_unchanged_widgets_make_no_override(cat):
    preset = system_to_toml(cat.get("system", "paper-config1-3090"))
    o = views.role_options(cat, "target", "rtx-3090")
    assert views.memory_overrides(o, "target", dict(views.MEMORY_ABSENT), preset) == {}
    assert views.memory_overrides(o, "target", {}, preset) == {}  # not drawn: absent
    got = views.memory_overrides(o, "target", {"kv_precision": "fp8", "offload_fraction": 0.25,
                                               "host_cpu_slowdown": 1.5}, preset)
    assert got == {"target_kv_precision": "fp8", "target_offload_fraction": 0.25,
                   "target_host_cpu_slowdown": 1.5}


def test_absent_words_against_a_preset_that_sets_the_keys(cat):
    """No shipped preset sets these keys; one that did (here: an override standing in for
    it) is undone by the widgets' words for absent as explicit values ("16", 0.0 and the
    board's own host, 1.0 on the RTX 3090), which evaluate as the system without the keys."""
    base = cat.get("system", "paper-config1-3090")
    set_ = {"target_kv_precision": "fp8", "target_offload_fraction": 0.25,
            "target_host_cpu_slowdown": 1.5}
    preset = {**system_to_toml(base), **set_}
    o = views.role_options(cat, "target", "rtx-3090")
    undo = views.memory_overrides(o, "target", dict(views.MEMORY_ABSENT), preset)
    assert undo == {"target_kv_precision": "16", "target_offload_fraction": 0.0,
                    "target_host_cpu_slowdown": 1.0}
    same = {"kv_precision": "fp8", "offload_fraction": 0.25, "host_cpu_slowdown": 1.5}
    assert views.memory_overrides(o, "target", same, preset) == {}
    w = cat.get("workload", views.DEFAULT_WORKLOAD)
    plain = evaluate(build_design(cat, base, PRESETS["brsd"]), w)
    undone = override_spec(override_spec(base, set_), undo)
    again = evaluate(build_design(cat, undone, PRESETS["brsd"]), w)
    assert (again.latency_s_per_problem, again.j_per_token) == (
        plain.latency_s_per_problem, plain.j_per_token)


@pytest.mark.parametrize("device", ["u280", "v80"])
def test_a_draft_moved_to_an_fpga_drops_its_memory_overrides(cat, device):
    """The widgets keep fp8, 0.25 and 1.5 (disabled); the FPGA takes none of them, so they
    make no override (the resolver would refuse each)."""
    preset = system_to_toml(cat.get("system", "paper-config1-jetson"))
    o = views.role_options(cat, "draft", device)
    values = {"kv_precision": "fp8", "offload_fraction": 0.25, "host_cpu_slowdown": 1.5}
    assert views.memory_overrides(o, "draft", values, preset) == {}
    gpu = views.role_options(cat, "draft", "rtx-4090")  # back on a GPU: they apply again
    assert views.memory_overrides(gpu, "draft", values, preset) == {
        "draft_kv_precision": "fp8", "draft_offload_fraction": 0.25,
        "draft_host_cpu_slowdown": 1.5}


# ------------------------------------------------------------------------ URL and states

def test_memory_keys_round_trip_through_the_url(cat):
    s = state("paper-config1-3090", target_kv_precision="fp8", prm_kv_precision="q4_0",
              draft_offload_fraction=0.25, draft_host_cpu_slowdown=1.5)
    p = s.params()
    assert (p["target_kv_precision"], p["prm_kv_precision"], p["draft_offload_fraction"],
            p["draft_host_cpu_slowdown"]) == ("fp8", "q4_0", "0.25", "1.5")
    assert views.state_from_params(cat, p) == s
    assert views.url_state(cat, p) == (s, [])
    assert views.decode_pins(cat, [views.encode_pin(s)]) == ([s], [])
    assert "target_kv_precision=fp8" in s.set_args()


def test_a_link_with_a_memory_key_the_device_refuses(cat):
    """The U280 preset's FPGA draft takes no KV precision, offload or host CPU: each such link
    parameter is dropped with a warning naming it (not silently by the page), the rest kept;
    an offload of 0 is no offload, which any kind takes."""
    s, warnings = views.url_state(cat, {"draft_kv_precision": "fp8",
                                        "draft_host_cpu_slowdown": "1.5",
                                        "draft_offload_fraction": "0",
                                        "target_kv_precision": "fp8"})
    assert s.overrides == {"draft_offload_fraction": 0.0, "target_kv_precision": "fp8"}
    assert warnings == [
        "URL parameter draft_kv_precision='fp8' ignored: 'fp8' not supported on an FPGA; "
        "an FPGA fixes its KV width in its build; remove the key",
        "URL parameter draft_host_cpu_slowdown='1.5' ignored: an FPGA's costs have no host "
        "CPU term (its build runs the model); remove the key"]
    s.design(cat)  # what is left runs


def test_the_target_alone_keeps_the_targets_memory_keys():
    s = state(target_kv_precision="fp8", target_offload_fraction=0.25,
              target_host_cpu_slowdown=1.5, prm_kv_precision="fp8")
    assert s.target_alone().overrides == {
        "target_kv_precision": "fp8", "target_offload_fraction": 0.25,
        "target_host_cpu_slowdown": 1.5, "workflow": "target-only"}
    # the target judges: the PRM's memory keys do not apply
    judged = views.applicable(state(verifier="target", prm_kv_precision="fp8",
                                    prm_offload_fraction=0.5, prm_host_cpu_slowdown=2.0,
                                    target_kv_precision="int8"))
    assert judged.overrides == {"verifier": "target", "target_kv_precision": "int8"}


def test_gpu_baselines_move_the_draft_without_its_memory_options(cat):
    """The Jetson draft moves to the PRM's RTX 3090 in the GPU kind's defaults: its KV cache,
    offload and host CPU go with the Jetson; the target's stay."""
    s = state("paper-config1-jetson", draft_kv_precision="fp8", draft_offload_fraction=0.25,
              draft_host_cpu_slowdown=1.5, target_kv_precision="fp8")
    b = s.gpu_baseline(cat, "brsd")
    assert b.overrides["draft_device"] == "rtx-3090"
    assert not any(k.startswith("draft_") and k.removeprefix("draft_") in views.MEMORY_OPTIONS
                   for k in b.overrides)
    assert b.overrides["target_kv_precision"] == "fp8"
    b.design(cat)  # it runs


def test_design_label_names_the_memory_options(cat):
    s = state("paper-config1-jetson", draft_offload_fraction=0.25, draft_host_cpu_slowdown=1.5,
              prm_kv_precision="q4_0", target_kv_precision="fp8").spec(cat)
    assert views.design_label(s) == (
        "draft qwen2.5-0.5b-instruct on jetson-orin-nano-8gb (w8a8, 25% of weights in host "
        "memory, host CPU 1.5x) | PRM qwen2.5-math-prm-7b on rtx-3090 (KV q4_0) | target "
        "qwen2.5-math-7b-instruct on rtx-3090 (bf16, KV fp8) | accept 0.7, backtrack 0.7")
    # a system without them reads as before
    assert "KV" not in views.design_label(state().spec(cat))
