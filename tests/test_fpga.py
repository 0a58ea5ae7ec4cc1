"""FPGA streaming decoder: hand-computed terms, bounds, feasibility."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.devices import fpga, shape


@pytest.fixture
def u280_build(cat):
    return fpga.default_build(cat.fpga("u280"), cat.engine("flexllm"), max_seq_len=4096)


def test_effective_bandwidth_by_hand(cat, u280_build):
    """32 channels x 256 bit / 8 x 300 MHz = 307.2 GB/s < 425 GB/s measured HBM: AXI-bound."""
    assert fpga.effective_bw_bytes_per_s(u280_build) == pytest.approx(307.2e9)
    fast = u280_build.with_knobs(clock_hz=450e6)  # 460.8 GB/s of ports > 425 measured
    assert fpga.effective_bw_bytes_per_s(fast) == pytest.approx(425e9)
    half = u280_build.with_knobs(memory_channels=16)
    assert fpga.effective_bw_bytes_per_s(half) == pytest.approx(153.6e9)


def test_decode_by_hand(cat, u280_build):
    """Qwen2.5-0.5B W8 KV8 at ctx 511: bytes = 494,032,768 + 6,144 x 512 = 497,178,496;
    t_mem = bytes / 307.2e9; MACs = 357,854,208 + 136,134,656 + 2*24*14*64*512 = 516,008,448;
    t_mac = MACs / (2048 x 300e6); t = max / eta + (24 x fill + head fill) / 300 MHz."""
    m = cat.model("qwen2.5-0.5b-instruct")
    c = fpga.fpga_cost(m, u280_build)
    e = cat.engine("flexllm")
    t_mem = 497_178_496 / 307.2e9
    t_mac = (24 * (shape.layer_params(m) - 2 * 896) + 136_134_656 + 2 * 24 * 14 * 64 * 512) / (
        2048 * 300e6)
    fill = (24 * e.fill_cycles_per_layer + e.lm_head_fill_cycles) / 300e6
    expect = max(t_mem, t_mac) / e.achieved_efficiency + fill
    assert float(fpga.decode_token_s(c, 511)) == pytest.approx(expect, rel=1e-12)


def test_batched_decode_by_hand(cat, u280_build):
    """test_decode_by_hand's step for 4 sequences: bytes = 494,032,768 + 4 x 6,144 x 512 =
    506,615,808 (the weights once); MACs 4 x 516,008,448; the fill once per pass."""
    m = cat.model("qwen2.5-0.5b-instruct")
    c = fpga.fpga_cost(m, u280_build)
    e = cat.engine("flexllm")
    t_mem = 506_615_808 / 307.2e9
    t_mac = 4 * (24 * (shape.layer_params(m) - 2 * 896) + 136_134_656
                 + 2 * 24 * 14 * 64 * 512) / (2048 * 300e6)
    fill = (24 * e.fill_cycles_per_layer + e.lm_head_fill_cycles) / 300e6
    expect = max(t_mem, t_mac) / e.achieved_efficiency + fill
    assert float(fpga.decode_token_s(c, 511, batch=4)) == pytest.approx(expect, rel=1e-12)
    assert float(fpga.decode_token_s(c, 511, batch=4)) < 4 * float(fpga.decode_token_s(c, 511))


def test_absorb_cheaper_than_decode(cat, u280_build):
    c = fpga.fpga_cost(cat.model("qwen2.5-0.5b-instruct"), u280_build)
    assert float(fpga.absorb_s(c, 40, 300)) < float(fpga.decode_s(c, 40, 300))
    assert float(fpga.prefill_s(c, 0, 10)) == 0.0


@settings(max_examples=50, deadline=None)
@given(ctx=st.integers(0, 4000), d=st.integers(1, 4000), clock=st.floats(100e6, 500e6),
       ch=st.integers(1, 32), lanes=st.sampled_from([256, 512, 1024, 2048, 4096]))
def test_invariants(cat, ctx, d, clock, ch, lanes):
    m = cat.model("qwen2.5-0.5b-instruct")
    b = fpga.default_build(cat.fpga("u280"), cat.engine("flexllm"), clock_hz=clock,
                           memory_channels=ch, mac_lanes=lanes)
    c = fpga.fpga_cost(m, b)
    t = float(fpga.decode_token_s(c, ctx))
    assert float(fpga.decode_token_s(c, ctx + d)) >= t
    bytes_ = shape.total_params(m) + shape.kv_bytes_per_token(m, 8) * (ctx + 1)
    assert t >= bytes_ / cat.fpga("u280").hbm_bytes_per_s  # never beats the HBM peak
    more = fpga.fpga_cost(m, b.with_knobs(memory_channels=min(32, ch + 1)))
    assert float(fpga.decode_token_s(more, ctx)) <= t


def test_infeasible_reasons(cat):
    b = fpga.default_build(cat.fpga("u280"), cat.engine("flexllm"), weight_bits=16,
                           max_seq_len=4096)
    why = fpga.infeasibility(cat.model("qwen2.5-7b-instruct"), b)
    assert any("do not fit u280 HBM 8 GB" in w for w in why)
    b2 = b.with_knobs(weight_bits=8, clock_hz=900e6, mac_lanes=100_000)
    why2 = fpga.infeasibility(cat.model("qwen2.5-0.5b-instruct"), b2)
    assert any("clock 900 MHz" in w for w in why2)
    assert any(w.startswith("DSP") for w in why2)
    ok = fpga.default_build(cat.fpga("u280"), cat.engine("flexllm"))
    assert fpga.infeasibility(cat.model("qwen2.5-0.5b-instruct"), ok) == []


def test_power(cat, u280_build):
    c = fpga.fpga_cost(cat.model("qwen2.5-0.5b-instruct"), u280_build)
    assert float(fpga.idle_power_w(c)) == 37.3
    assert 37.3 < float(fpga.decode_power_w(c, 100)) < 225.0
