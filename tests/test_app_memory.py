"""What-if's memory and host controls under AppTest, by widget key (`wi_<role>_kv_precision`,
`wi_<role>_offload_fraction`, `wi_<role>_host_cpu_slowdown`): each drives exactly what
`dse evaluate --set <key>=<value>` computes, the URL carries the key, Reset clears it, an
unchanged widget makes no override, a control the device's kind does not take is disabled
and makes none (a draft moved to an FPGA), and the header and metrics name the URL's state."""

from __future__ import annotations

import json

from dse import views
from dse.cli import main
from tests.test_app import follow_up, metric, ok
from tests.test_app import run_app as new_session
from tests.test_app_workflows import same_state


def run_app(**query: str):
    """A new session with its follow-up run (Hardware and models open: tests.test_app)."""
    return follow_up(new_session(**query))


DEFAULT = {"system": views.DEFAULT_SYSTEM, "workload": views.DEFAULT_WORKLOAD,
           "schedule": views.DEFAULT_SCHEDULE}


def cli_report(capsys, system: str, *sets: str) -> dict:
    """`dse evaluate --json` of the system on the default workload and schedule with the
    `--set` arguments: its report for that schedule."""
    argv = ["evaluate", "--system", system, "--scenario", views.DEFAULT_WORKLOAD,
            "--schedule", views.DEFAULT_SCHEDULE, "--json"]
    for s in sets:
        argv += ["--set", s]
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["schedules"][views.DEFAULT_SCHEDULE]


def test_target_kv_fp8_is_dse_evaluates_and_reset_clears_it(cat, capsys):
    """An 8-bit target KV cache reads half the KV bytes per token: J/token changes, and equals
    `dse evaluate --set target_kv_precision=fp8` to the printed digit (and exactly in the
    report); the URL carries the key; Reset to preset drops it and the default is back. The
    U280 draft's controls are disabled (an FPGA takes none of them)."""
    at = ok(run_app())
    before = metric(at, "Energy (J/token)")
    assert at.selectbox(key="wi_target_kv_precision").value == views.KV_DEFAULT
    assert dict(at.query_params) == DEFAULT  # the unchanged widgets make no override
    for k in ("wi_draft_kv_precision", "wi_draft_offload_fraction",
              "wi_draft_host_cpu_slowdown"):
        w = at.selectbox(key=k) if k.endswith("precision") else at.number_input(key=k)
        assert w.disabled, k
    assert at.selectbox(key="wi_draft_kv_precision").options == [
        views.kv_label(views.KV_DEFAULT)]
    at.selectbox(key="wi_target_kv_precision").set_value("fp8")
    ok(at.run())
    cli = cli_report(capsys, views.DEFAULT_SYSTEM, "target_kv_precision=fp8")
    assert metric(at, "Energy (J/token)") == f"{cli['j_per_token']:.3f}" != before
    assert metric(at, "Latency (s/problem)") == f"{cli['latency_s_per_problem']:.3f}"
    assert at.session_state["wi_report"]["j_per_token"] == cli["j_per_token"]
    assert dict(at.query_params) == {**DEFAULT, "target_kv_precision": "fp8"}
    assert "(bf16, KV fp8)" in at.caption[0].value
    same_state(cat, at)
    ok(at.button(key="wi_reset").click().run())
    assert dict(at.query_params) == DEFAULT
    assert at.selectbox(key="wi_target_kv_precision").value == views.KV_DEFAULT
    assert metric(at, "Energy (J/token)") == before


def test_host_cpu_of_a_gpu_draft(cat, capsys):
    """The Jetson preset's GPU draft: a host CPU at 1.0 (the board's own is 2.83333, its
    source in the help) is `dse evaluate --set`'s and shortens the draft's launch-bound steps;
    its offload widget is disabled (unified memory: no host memory apart)."""
    at = ok(run_app(system="paper-config1-jetson"))
    host = at.number_input(key="wi_draft_host_cpu_slowdown")
    assert host.value == 0.0 and not host.disabled
    assert "jetson-orin-nano-8gb's own host: 2.83333" in host.help
    assert "3.4 GHz / (1.5 GHz x 0.8)" in host.help  # the board file's source
    assert at.number_input(key="wi_draft_offload_fraction").disabled
    before = at.session_state["wi_report"]
    at.number_input(key="wi_draft_host_cpu_slowdown").set_value(1.0)
    ok(at.run())
    faster = at.session_state["wi_report"]
    cli = cli_report(capsys, "paper-config1-jetson", "draft_host_cpu_slowdown=1.0")
    assert faster["latency_s_per_problem"] == cli["latency_s_per_problem"]
    assert faster["latency_s_per_problem"] < before["latency_s_per_problem"]
    assert at.query_params["draft_host_cpu_slowdown"] == "1.0"
    assert metric(at, "Latency (s/problem)") == f"{cli['latency_s_per_problem']:.3f}"
    same_state(cat, at)
    # back to 0: the board's own host, no override
    at.number_input(key="wi_draft_host_cpu_slowdown").set_value(0.0)
    ok(at.run())
    assert dict(at.query_params) == {**DEFAULT, "system": "paper-config1-jetson"}
    assert at.session_state["wi_report"]["latency_s_per_problem"] == (
        before["latency_s_per_problem"])


def test_offload_of_a_gpu_draft(cat, capsys):
    """The RTX 3090 preset's draft with a quarter of its weights in host memory: the numbers
    are `dse evaluate --set`'s, the URL carries the key, and 0 removes it."""
    at = ok(run_app(system="paper-config1-3090"))
    before = at.session_state["wi_report"]
    assert not at.number_input(key="wi_draft_offload_fraction").disabled
    at.number_input(key="wi_draft_offload_fraction").set_value(0.25)
    ok(at.run())
    cli = cli_report(capsys, "paper-config1-3090", "draft_offload_fraction=0.25")
    assert metric(at, "Latency (s/problem)") == f"{cli['latency_s_per_problem']:.3f}"
    assert metric(at, "Energy (J/token)") == f"{cli['j_per_token']:.3f}"
    assert at.session_state["wi_report"]["latency_s_per_problem"] > before[
        "latency_s_per_problem"]  # the streamed weights cross PCIe every token
    assert at.query_params["draft_offload_fraction"] == "0.25"
    same_state(cat, at)
    at.number_input(key="wi_draft_offload_fraction").set_value(0.0)
    ok(at.run())
    assert dict(at.query_params) == {**DEFAULT, "system": "paper-config1-3090"}
    assert at.session_state["wi_report"]["latency_s_per_problem"] == (
        before["latency_s_per_problem"])


def test_a_link_loads_into_the_widgets_and_an_fpga_draft_drops_them(cat):
    """A link's memory keys load into the widgets; moving the draft to the U280 drops its
    overrides from the URL and the numbers (its widgets disabled, keeping their values);
    moving it back to a GPU applies them again."""
    at = ok(run_app(system="paper-config1-3090", draft_kv_precision="fp8",
                    draft_offload_fraction="0.25", target_host_cpu_slowdown="1.5"))
    assert at.selectbox(key="wi_draft_kv_precision").value == "fp8"
    assert at.number_input(key="wi_draft_offload_fraction").value == 0.25
    assert at.number_input(key="wi_target_host_cpu_slowdown").value == 1.5
    same_state(cat, at)
    at.selectbox(key="wi_draft_device").set_value("u280")
    ok(at.run())
    assert not {"draft_kv_precision", "draft_offload_fraction"} & set(at.query_params)
    assert at.query_params["target_host_cpu_slowdown"] == "1.5"
    assert at.selectbox(key="wi_draft_kv_precision").disabled
    assert at.selectbox(key="wi_draft_kv_precision").value == "fp8"  # kept
    assert at.number_input(key="wi_draft_offload_fraction").disabled
    same_state(cat, at)
    at.selectbox(key="wi_draft_device").set_value("rtx-4090")
    ok(at.run())
    assert at.query_params["draft_kv_precision"] == "fp8"
    assert at.query_params["draft_offload_fraction"] == "0.25"
    same_state(cat, at)


def test_a_link_whose_fpga_draft_refuses_a_key_warns():
    at = ok(new_session(draft_kv_precision="fp8", target_kv_precision="fp8"))
    (w,) = at.warning  # on the first run, which shows the link's warnings
    assert "draft_kv_precision='fp8' ignored" in w.value
    assert dict(at.query_params) == {**DEFAULT, "target_kv_precision": "fp8"}


def test_the_target_alone_keeps_the_targets_memory_keys(cat):
    """Target alone: the target's KV cache stays (its URL key too), the draft's controls are
    disabled; the PRM's keys go when the target judges."""
    at = ok(run_app(system="paper-config1-3090", target_kv_precision="q4_0",
                    prm_offload_fraction="0.5"))
    at.radio(key="wi_workflow").set_value("target-only")
    ok(at.run())
    assert at.query_params["target_kv_precision"] == "q4_0"
    assert "prm_offload_fraction" not in at.query_params
    assert at.selectbox(key="wi_draft_kv_precision").disabled
    assert not at.selectbox(key="wi_target_kv_precision").disabled
    assert at.caption[0].value.startswith("target alone: ") and "KV q4_0" in at.caption[0].value
    same_state(cat, at)
    at.radio(key="wi_workflow").set_value("speculative")
    ok(at.run())
    assert at.query_params["prm_offload_fraction"] == "0.5"
    at.radio(key="wi_verifier").set_value("target")
    ok(at.run())
    assert "prm_offload_fraction" not in at.query_params
    assert at.number_input(key="wi_prm_offload_fraction").disabled
    assert at.number_input(key="wi_prm_offload_fraction").value == 0.5  # kept
    same_state(cat, at)
