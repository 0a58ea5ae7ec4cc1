"""A system's own GPU host CPU (`<role>_host_cpu_slowdown`): the board's default host replaced
for that role's placement, the stack's CPU-side work scaled by it, refused on an FPGA."""

from __future__ import annotations

import pytest

import dse
from dse.devices import gpu as gpu_mod
from dse.devices.registry import place
from dse.errors import FlagValueError, SpecError
from dse.specs import Catalog


def test_the_host_scales_launch_and_step_only(cat: Catalog) -> None:
    """HF eager on an A100 (host 1): launch and per-step host time double on a host half as
    fast; the GPU side (bandwidth, layer gap) is the board's."""
    m = cat.model("qwen2.5-0.5b-instruct")
    a = place(cat, m, "a100-80gb-sxm", software="hf-eager", context_tokens=4096)
    b = place(cat, m, "a100-80gb-sxm", software="hf-eager", context_tokens=4096,
              host_cpu_slowdown=2.0)
    assert isinstance(a, gpu_mod.GpuPlacement) and isinstance(b, gpu_mod.GpuPlacement)
    assert cat.gpu("a100-80gb-sxm").host_cpu_slowdown == 1.0
    assert b.cost.launch_per_layer_s == pytest.approx(2 * a.cost.launch_per_layer_s, rel=1e-12)
    assert b.cost.step_overhead_s == pytest.approx(2 * a.cost.step_overhead_s, rel=1e-12)
    assert b.cost.mem_bw_bytes_per_s == a.cost.mem_bw_bytes_per_s
    assert b.cost.layer_gap_s == a.cost.layer_gap_s
    # a 0.5B model under eager launches is host-bound: the token takes longer
    assert float(b.decode_token_s(500)) > float(a.decode_token_s(500))
    # naming the board's own host changes nothing
    same = place(cat, m, "a100-80gb-sxm", software="hf-eager", context_tokens=4096,
                 host_cpu_slowdown=1.0)
    assert same.cost == a.cost


def test_a_system_names_its_host(cat: Catalog) -> None:
    base = dse.load_design("paper-config1-3090", catalog=cat)
    d = dse.load_design("paper-config1-3090", catalog=cat,
                        overrides={"target_host_cpu_slowdown": 3.0})
    assert d.target.device.host_cpu_slowdown == 3.0  # type: ignore[attr-defined]
    assert d.prm.device.host_cpu_slowdown == 1.0  # type: ignore[union-attr]
    assert d.target.cost.step_overhead_s == pytest.approx(  # type: ignore[attr-defined]
        3 * base.target.cost.step_overhead_s)  # type: ignore[attr-defined]


def test_an_fpga_has_no_host_term(cat: Catalog) -> None:
    with pytest.raises(SpecError, match="draft_host_cpu_slowdown: an FPGA's costs have no host"):
        dse.load_design("paper-config1-u280", catalog=cat,
                        overrides={"draft_host_cpu_slowdown": 2.0})


def test_set_of_a_bad_host_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from dse.cli import main

    code = main(["evaluate", "--system", "paper-config1-3090", "--scenario", "math500",
                 "--set", "target_host_cpu_slowdown=0"])
    err = capsys.readouterr().err.strip()
    assert code == FlagValueError.exit_code, err
    assert "--set: target_host_cpu_slowdown" in err and "\n" not in err


def test_colocated_roles_share_one_host(cat: Catalog) -> None:
    """Roles on one device have one host CPU: different values (or one set, one absent) are
    refused naming the later role's key; the same value on both is the design's host."""
    base = {"colocate": "prm+target", "prm_device": "rtx-3090", "target_device": "rtx-3090"}
    with pytest.raises(SpecError, match="target_host_cpu_slowdown: colocated roles share one "
                                        "device and so one host CPU"):
        dse.load_design("paper-config1-3090", catalog=cat, schedule="rsd", check=False,
                        overrides={**base, "prm_host_cpu_slowdown": 2.0,
                                   "target_host_cpu_slowdown": 3.0})
    with pytest.raises(SpecError, match="prm_host_cpu_slowdown: colocated roles"):
        dse.load_design("paper-config1-3090", catalog=cat, schedule="rsd", check=False,
                        overrides={**base, "prm_host_cpu_slowdown": 2.0})
    d = dse.load_design("paper-config1-3090", catalog=cat, schedule="rsd", check=False,
                        overrides={**base, "prm_host_cpu_slowdown": 2.0,
                                   "target_host_cpu_slowdown": 2.0})
    assert d.prm.device.host_cpu_slowdown == 2.0  # type: ignore[union-attr]
    assert d.target.device.host_cpu_slowdown == 2.0  # type: ignore[attr-defined]


def test_no_offload_on_unified_memory(cat: Catalog) -> None:
    """A Jetson's CPU and GPU share one LPDDR5: there is no host memory apart to offload
    weights to, so the key is refused by name (a discrete GPU takes it)."""
    assert cat.gpu("jetson-orin-nano-8gb").unified_memory
    with pytest.raises(SpecError, match="draft_offload_fraction: jetson-orin-nano-8gb has "
                                        "unified memory"):
        dse.load_design("paper-config1-jetson", catalog=cat,
                        overrides={"draft_offload_fraction": 0.25})
    d = dse.load_design("paper-config1-3090", catalog=cat,
                        overrides={"draft_offload_fraction": 0.25})
    assert d.draft.offload_fraction == 0.25  # type: ignore[union-attr]
