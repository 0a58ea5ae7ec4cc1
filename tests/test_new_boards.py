"""The boards added with the RTX 40/50, Orin NX, U250, ZCU104 and VCK190 entries, checked against
numbers computed by hand from their data sheets (the derivations are in each test's docstring).
The device conformance suite (test_device_conformance.py) runs them through the protocol; these
tests pin the figures themselves."""

from __future__ import annotations

import pytest

from dse.devices import fpga, shape
from dse.devices.registry import place
from dse.specs import Catalog
from dse.specs.hardware import NEAREST_FITTED_GENERATION
from dse.validation import calibrate

NEW_GPUS = ("rtx-5090", "rtx-4080", "rtx-4070", "rtx-4070-ti-super", "jetson-orin-nx-16gb")
NEW_FPGAS = ("u250", "zcu104", "vck190")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog.load()


def test_new_boards_are_in_the_catalog(cat: Catalog) -> None:
    assert set(NEW_GPUS) <= set(cat.names("gpu"))
    assert set(NEW_FPGAS) <= set(cat.names("fpga"))


@pytest.mark.parametrize("name,bus_bits,gbps", [
    ("rtx-5090", 512, 28.0),           # 512 x 28 / 8 = 1,792 GB/s
    ("rtx-4080", 256, 22.4),           # 256 x 22.4 / 8 = 716.8 GB/s
    ("rtx-4070", 192, 21.0),           # 192 x 21 / 8 = 504 GB/s
    ("rtx-4070-ti-super", 256, 21.0),  # 256 x 21 / 8 = 672 GB/s
    ("jetson-orin-nx-16gb", 128, 6.4),  # LPDDR5 128 x 6.4 / 8 = 102.4 GB/s
])
def test_gpu_bandwidth_is_bus_width_times_data_rate(cat: Catalog, name: str, bus_bits: int,
                                                   gbps: float) -> None:
    assert cat.gpu(name).mem_bw_bytes_per_s == pytest.approx(bus_bits * gbps * 1e9 / 8, rel=1e-12)


@pytest.mark.parametrize("name,tensor_cores,boost_ghz,flop_per_clk", [
    ("rtx-4080", 304, 2.505, 128),          # 97.47 TFLOPS FP16/BF16, FP32 accumulate
    ("rtx-4070", 184, 2.475, 128),          # 58.29
    ("rtx-4070-ti-super", 264, 2.610, 128),  # 88.20
    ("rtx-5090", 680, 2.407, 128),          # 209.5 (419.0 with FP16 accumulate)
    ("jetson-orin-nx-16gb", 32, 0.918, 512),  # 15.04 (Ampere: FP16 = INT8 / 2 = 512 FLOP/clk/TC)
])
def test_tensor_peak_is_cores_times_clock_times_rate(cat: Catalog, name: str, tensor_cores: int,
                                                     boost_ghz: float, flop_per_clk: int) -> None:
    """Dense BF16 peak = tensor cores x boost clock x FLOP per clock per core, within the
    rounding of the published figure (0.1 TFLOPS)."""
    g = cat.gpu(name)
    expect = tensor_cores * boost_ghz * 1e9 * flop_per_clk
    assert g.bf16_flops_per_s == pytest.approx(expect, abs=0.06e12)
    assert g.fp16_flops_per_s == g.bf16_flops_per_s


def test_geforce_fp16_accumulate_runs_twice_as_fast(cat: Catalog) -> None:
    """GeForce Ada and Blackwell run FP16-accumulate tensor math at twice the FP32-accumulate rate
    (RTX 4090: 330.3 vs 165.2); INT8 is 4x the FP32-accumulate FP16 rate (RTX 4090: 660.6)."""
    for name in ("rtx-5090", "rtx-4080", "rtx-4070", "rtx-4070-ti-super"):
        g = cat.gpu(name)
        assert g.fp16_acc16_flops_per_s == pytest.approx(2 * g.fp16_flops_per_s, rel=2e-3), name
        assert g.int8_ops_per_s == pytest.approx(4 * g.fp16_flops_per_s, rel=2e-3), name
    # RTX 5090: NVIDIA's 3,352 AI TOPS is FP4 with sparsity: / 2 / 2 = 838 dense INT8 TOPS.
    assert cat.gpu("rtx-5090").int8_ops_per_s == 3352e12 / 4


def test_rtx_5090_decode_floor_for_a_7b_bf16_model(cat: Catalog) -> None:
    """Qwen2.5-Math-7B streams, per decoded token, its 28 layers, the final norm and the untied
    LM head (the token table is a row lookup):
      per layer  q 3584*3584 + 3584 (bias) = 12,848,640;  k, v 3584*512 + 512 = 1,835,520 each;
                 o 3584*3584 = 12,845,056;  MLP 3 * 3584 * 18944 = 203,685,888;  2 norms 7,168
                 -> 233,057,792;  x 28 = 6,525,618,176
      + final norm 3,584 + head 152,064 * 3,584 = 544,997,376  -> 7,070,619,136 parameters.
    In bf16: 14.141 GB; over 1,792 GB/s: 7.891 ms per token at batch 1 (126.7 tokens/s at most),
    before the KV cache, overheads and the serving profile's bandwidth share."""
    model = cat.model("qwen2.5-math-7b-instruct")
    params = 28 * 233_057_792 + 3_584 + 544_997_376
    assert params == 7_070_619_136
    assert shape.streamed_params_per_token(model) == params
    floor_s = params * 2 / 1792e9
    assert floor_s == pytest.approx(7.8914e-3, rel=1e-4)

    pl = place(cat, model, "rtx-5090", precision_name="bf16", context_tokens=1024)
    assert not pl.infeasibility()  # 14.1 GB of weights fit in 32 GB
    assert pl.peak_bytes_per_s == 1792e9
    t = float(pl.decode_token_s(0))
    assert t >= floor_s
    assert t < 2 * floor_s  # memory-bound at batch 1: the bandwidth term dominates


def test_blackwell_takes_the_nearest_fitted_generation(cat: Catalog) -> None:
    """No serving profile has Blackwell points: a Blackwell GPU gets the Ada values where a
    profile has them, and the profile's base values otherwise."""
    assert NEAREST_FITTED_GENERATION["blackwell"] == "ada"
    assert cat.gpu("rtx-5090").generation == "blackwell"
    with_ada = [n for n in cat.names("gpu-serving") if "ada" in cat.serving(n).variants]
    assert with_ada  # llama.cpp, MLC-LLM, ExLlamaV2, TensorRT-LLM
    for n in cat.names("gpu-serving"):
        s = cat.serving(n)
        expect = s.for_generation("ada") if n in with_ada else s
        assert s.for_generation("blackwell") == expect, n


def test_orin_nx_host_is_its_cpu_speed_and_the_nanos_vllm_factor(cat: Catalog) -> None:
    """The Orin NX 16GB's CPU speed: 3.4 GHz / (2.0 GHz x 0.8) = 2.125 (its source's
    arithmetic); vLLM's Jetson-build factor is the Orin Nano's fitted one, so its eager vLLM
    host factor is the Nano's 21.1252 (2.83333 x the factor) times 1.5 / 2.0 = 15.8439."""
    nano = cat.gpu("jetson-orin-nano-8gb")
    nx = cat.gpu("jetson-orin-nx-16gb")
    assert nx.host_cpu_slowdown == pytest.approx(3.4 / (2.0 * 0.8), rel=1e-5)
    assert nano.host_cpu_slowdown == pytest.approx(3.4 / (1.5 * 0.8), rel=1e-5)
    assert "jetson-orin-nx-16gb" in calibrate.JETSON_DERIVED_HOSTS
    assert nx.host_stack_slowdown == nano.host_stack_slowdown
    assert nx.cpu_slowdown("vllm-eager") == pytest.approx(15.8439, rel=1e-5)
    assert nx.cpu_slowdown("hf-eager") == nx.host_cpu_slowdown  # no factor of its own
    assert nx.unified_memory and nx.generation == "ampere"


def test_u250_streams_from_four_ddr4_2400_channels(cat: Catalog) -> None:
    """U250: no HBM; 4 x DDR4-2400 x 64 bit = 4 x 19.2 GB/s = 76.8 GB/s over 64 GB. At the
    300 MHz default clock the 512-bit AXI ports carry 4 x 64 B x 300 MHz = 76.8 GB/s too, so the
    decoder's bandwidth is the DDR's times the engine's achieved share."""
    b = cat.fpga("u250")
    assert not b.uses_hbm and b.memory_channels == 4
    assert b.ddr_bytes_per_s == pytest.approx(4 * 2400e6 * 8)
    assert b.weight_memory_bytes == 64e9
    build = fpga.default_build(b, cat.engine("flexllm"))
    axi = 4 * 512 / 8 * 300e6
    assert axi == pytest.approx(76.8e9)
    eff = fpga.hbm_efficiency(b, cat.engine("flexllm"))
    assert fpga.effective_bw_bytes_per_s(build) == pytest.approx(min(76.8e9 * eff, axi))
    # INT8 MAC capacity: 12,288 DSP48E2 x 2 MACs (WP486) = 24,576 lanes.
    assert fpga.knob_ranges(b)["mac_lanes_max"] == 24_576


def test_zcu104_and_vck190_memories(cat: Catalog) -> None:
    """ZCU104: 2 GB PS DDR4, one 64-bit channel at 2400 MT/s = 19.2 GB/s (4 HP ports x 128 bit).
    VCK190: DDR4-3200 DIMM (25.6 GB/s) + 2 LPDDR4 x 32 bit x 4266 MT/s (2 x 17.06 GB/s)
    = 59.7 GB/s over 16 GB in three controllers; DSP58 x 3 INT8 MACs = 5,904 lanes."""
    z = cat.fpga("zcu104")
    assert (z.ddr_bytes, z.ddr_channels, z.ddr_bytes_per_s) == (2e9, 1, 19.2e9)
    assert z.dsp == 1728 and z.uram == 96
    v = cat.fpga("vck190")
    assert v.ddr_bytes_per_s == pytest.approx(25.6e9 + 2 * 4 * 4266e6, rel=1e-3)
    assert (v.ddr_bytes, v.ddr_channels, v.family, v.dsp_kind) == (16e9, 3, "versal", "dsp58")
    assert fpga.knob_ranges(v)["mac_lanes_max"] == 1968 * 3


@pytest.mark.parametrize("name", NEW_GPUS + NEW_FPGAS)
def test_every_number_of_a_new_board_has_a_source(cat: Catalog, name: str) -> None:
    spec = cat.gpu(name) if name in NEW_GPUS else cat.fpga(name)
    assert spec.sources
    assert all(v.strip() for v in spec.sources.values())


def test_catalog_page_lists_every_board(cat: Catalog) -> None:
    """docs/commands/catalog-roofline.md names every shipped GPU and FPGA board, and no other."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs/commands/catalog-roofline.md").read_text()
    listed = set(re.findall(r"`([a-z0-9.-]+)`", page[page.index("- FPGAs"):page.index("- links")]))
    assert listed == set(cat.names("gpu")) | set(cat.names("fpga"))
