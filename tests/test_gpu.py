"""GPU cost model: hand-computed terms and invariants."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.devices import gpu, shape
from dse.devices.power import gpu_power_w
from dse.devices.shape import precision
from dse.specs import Catalog

from .conftest import make_gpu, make_serving


@pytest.fixture
def qwen05(cat):
    return cat.model("qwen2.5-0.5b-instruct")


def test_decode_by_hand(qwen05):
    """B = 1e12 B/s (e=1, KV at e=0.5), F = 1e14, step overhead 1 ms, no gaps, bf16, ctx 1023.

    weights 494,032,768 x 2 B = 988,065,536 B -> 0.988065536 ms
    KV (1023 + 1) x 12,288 B = 12,582,912 B at 0.5e12 B/s -> 0.025165824 ms
    FLOPs 2*24*14,910,592 + 2*136,134,656 + 4*24*14*64*1024 = 1,076,058,112 -> 0.0108 ms
    memory-bound: 1.013231360 ms + 1 ms step overhead = 2.013231360 ms
    """
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving())
    ft = gpu.forward(c, 1, 1023)
    assert float(ft.memory_s) == pytest.approx(1.013231360e-3, rel=1e-9)
    assert float(ft.compute_s) == pytest.approx(1_076_058_112 / 1e14, rel=1e-9)
    assert float(gpu.decode_token_s(c, 1023)) == pytest.approx(2.013231360e-3, rel=1e-9)
    assert str(ft.bound) == "memory"


def test_batched_decode_by_hand(qwen05):
    """test_decode_by_hand's step for 8 sequences at ctx 1023: the weights once, 8 KV caches.

    weights 988,065,536 B at 1e12 B/s -> 0.988065536 ms
    KV 8 x 12,582,912 B = 100,663,296 B at 0.5e12 B/s -> 0.201326592 ms
    FLOPs 8 x 1,076,058,112 = 8,608,464,896 at 1e14 -> 0.0861 ms (memory-bound)
    1.189392128 ms + 1 ms step overhead = 2.189392128 ms for 8 tokens (0.27 ms a token,
    against 2.01 ms alone). The batch terms (dse.devices.gpu_batch) off: the physics alone.
    """
    c = replace(gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving()),
                knee_exponent=np.inf, kv_bw_many_bytes_per_s=0.0, sequence_overhead_s=0.0)
    ft = gpu.forward(c, 1, 1023, batch=8)
    assert float(ft.memory_s) == pytest.approx(1.189392128e-3, rel=1e-9)
    assert float(ft.compute_s) == pytest.approx(8 * 1_076_058_112 / 1e14, rel=1e-9)
    assert float(gpu.decode_token_s(c, 1023, batch=8)) == pytest.approx(2.189392128e-3,
                                                                          rel=1e-9)
    # a batch's prefill: 4 prompts of 4096 tokens are 4 x the FLOPs of one, in one pass
    one = float(gpu.prefill_s(c, 4096)) - 1e-3
    assert float(gpu.prefill_s(c, 4096, batch=4)) == pytest.approx(4 * one + 1e-3, rel=1e-9)


def test_batch_terms_by_hand(qwen05):
    """test_batched_decode_by_hand's step with batch terms p = 2, a KV share of 1.0 for many
    sequences (0.5 alone) and 10 us per further sequence:

    KV bandwidth at 8 sequences: 0.5e12 + (1e12 - 0.5e12)(1 - 1/8) = 0.9375e12 B/s
    memory 0.988065536 ms + 100,663,296 B / 0.9375e12 = 1.0954397184 ms
    compute 0.08608464896 ms; knee sqrt(1.0954397184^2 + 0.08608464896^2) = 1.098816974 ms
    + 1 ms step overhead + 7 x 10 us = 2.168816974 ms. One sequence: test_decode_by_hand's
    2.013231360 ms exactly (no term applies)."""
    base = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving())
    c = replace(base, knee_exponent=2.0, kv_bw_many_bytes_per_s=1e12, sequence_overhead_s=1e-5)
    assert float(gpu.forward(c, 1, 1023, batch=8).memory_s) == pytest.approx(1.0954397184e-3,
                                                                             rel=1e-9)
    assert float(gpu.decode_token_s(c, 1023, batch=8)) == pytest.approx(2.168816974493e-3,
                                                                        rel=1e-9)
    assert float(gpu.decode_token_s(c, 1023)) == float(gpu.decode_token_s(base, 1023))
    # an iteration of 7 decodes and one prompt chunk is a pass of 8 sequences
    it = gpu.iteration(c, 7, 1023, 64)
    assert float(it.total_s) > float(gpu.iteration(replace(c, sequence_overhead_s=0.0), 7,
                                                   1023, 64).total_s) + 7e-5 - 1e-12


def test_shipped_batch_terms_vanish_at_batch_one(qwen05):
    """Every shipped stack's batch terms leave a pass of one sequence unchanged, bit for bit."""
    from dse.devices.gpu_batch import batch_terms

    for name in ("vllm-cudagraph", "tensorrt-llm", "vllm-v1", "hf-eager"):
        c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving(name=name))
        off = replace(c, knee_exponent=np.inf, kv_bw_many_bytes_per_s=0.0,
                      sequence_overhead_s=0.0)
        for n in (1, 17, 300, 4096):
            assert float(gpu.prefill_s(c, n, 500)) == float(gpu.prefill_s(off, n, 500))
        assert float(gpu.decode_token_s(c, 700)) == float(gpu.decode_token_s(off, 700))
        one = gpu.forward(c, 1, 700)
        assert float(gpu_power_w(c, "decode", one.busy_fraction, one.batched_kv_share)) == \
            float(gpu_power_w(replace(off, kv_power_fraction=np.nan), "decode",
                              one.busy_fraction))
        assert float(gpu.decode_token_s(c, 700, batch=32)) > float(
            gpu.decode_token_s(off, 700, batch=32))
        assert batch_terms(name).knee_exponent > 1


def test_launch_bound_eager(qwen05):
    """24 layers x 1 ms launch = 24 ms CPU side dominates the ~1 ms GPU side."""
    s = make_serving(launch_per_layer_us=1000.0, step_overhead_us=0.0)
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), s)
    assert float(gpu.decode_token_s(c, 0)) == pytest.approx(24e-3)
    assert str(gpu.forward(c, 1, 0).bound) == "overhead"
    slow = gpu.gpu_cost(qwen05, make_gpu(host_cpu_slowdown=3.0), precision("bf16"), s)
    assert float(gpu.decode_token_s(slow, 0)) == pytest.approx(72e-3)


def test_prefill_compute_bound_by_hand(qwen05):
    """4096 tokens: FLOPs = 2*24*14,910,592*4096 + head 272,269,312 + attention
    4*24*14*64*(4096*4097/2) -> compute time at 1e14 FLOP/s + 1 ms overhead."""
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving())
    flops = 2 * 24 * 14_910_592 * 4096 + 272_269_312 + 4 * 24 * 14 * 64 * (4096 * 4097 / 2)
    assert float(gpu.prefill_s(c, 4096)) == pytest.approx(flops / 1e14 + 1e-3, rel=1e-9)
    assert float(gpu.prefill_s(c, 0)) == 0.0


def test_decode_sum_equals_mean_context(qwen05):
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving())
    n, ctx = 50, 300
    total = sum(float(gpu.decode_token_s(c, ctx + i)) for i in range(n))
    assert float(gpu.decode_s(c, n, ctx)) == pytest.approx(total, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    ctx=st.integers(0, 32_000),
    dctx=st.integers(1, 4000),
    bw=st.floats(50, 5000),
    prec=st.sampled_from(["bf16", "w8a8", "w4a16"]),
    name=st.sampled_from(["qwen2.5-0.5b-instruct", "qwen2.5-7b-instruct",
                          "llama-3.1-8b-instruct", "qwen2.5-math-prm-7b"]),
)
def test_invariants(cat, ctx, dctx, bw, prec, name):
    m = cat.model(name)
    p = precision(prec)
    g = make_gpu(mem_bw_GBps=bw)
    c = gpu.gpu_cost(m, g, p, cat.serving("vllm-cudagraph"))
    t0 = float(gpu.decode_token_s(c, ctx))
    assert float(gpu.decode_token_s(c, ctx + dctx)) >= t0  # non-decreasing in context
    floor_bytes = (shape.streamed_weight_bytes(m, p) + shape.kv_bytes_per_token(m, 16) * (ctx + 1))
    assert t0 >= floor_bytes / g.mem_bw_bytes_per_s  # never beats peak bandwidth
    assert t0 >= float(shape.forward_flops(m, 1, ctx)) / g.int8_ops_per_s * 0.999
    faster = gpu.gpu_cost(m, make_gpu(mem_bw_GBps=bw * 2), p, cat.serving("vllm-cudagraph"))
    assert float(gpu.decode_token_s(faster, ctx)) <= t0  # more bandwidth never slower


def test_vectorised_equals_scalar(cat):
    models = ["qwen2.5-0.5b-instruct", "qwen2.5-7b-instruct", "llama-3.2-1b-instruct"]
    devices = ["rtx-3090", "a100-80gb-sxm", "h100-sxm"]
    costs, scalars = [], []
    ctx = np.array([0, 512, 4096, 100, 30000, 7])
    for i, (m, d) in enumerate((m, d) for m in models for d in devices[:2]):
        c = gpu.gpu_cost(cat.model(m), cat.gpu(d), precision("bf16"), cat.serving("vllm-eager"))
        costs.append(c)
        scalars.append(float(gpu.decode_token_s(c, ctx[i])))
    stacked = gpu.stack(costs)
    np.testing.assert_allclose(gpu.decode_token_s(stacked, ctx), scalars, rtol=1e-12)


def test_fits_and_tp(cat):
    m72 = cat.model("qwen2.5-math-72b-instruct")
    s = cat.serving("vllm-cudagraph")
    h100 = cat.gpu("h100-sxm")
    assert not bool(gpu.fits(m72, h100, precision("bf16"), s, 4096))
    tp = gpu.min_tp(m72, h100, precision("bf16"), s, 4096)
    # 145.4 GB of BF16 weights: 72.7 GB per GPU at tp=2 exceeds 80 x 0.9 - 1 = 71 GB usable
    assert tp == 4
    c1 = gpu.gpu_cost(m72, h100, precision("bf16"), s, tp=2)
    assert float(c1.allreduce_s_per_layer) > 0
    assert bool(gpu.fits(cat.model("qwen2.5-0.5b-instruct"), cat.gpu("rtx-3090"),
                         precision("bf16"), s, 4096))


def test_power_states(cat):
    c = gpu.gpu_cost(cat.model("qwen2.5-7b-instruct"), cat.gpu("rtx-3090"), precision("bf16"),
                     cat.serving("vllm-cudagraph"))
    idle = float(gpu_power_w(c, "idle"))
    dec = float(gpu_power_w(c, "decode"))
    pre = float(gpu_power_w(c, "prefill"))
    assert idle == 27.0
    assert idle < dec < pre <= 350.0
    # waiting on the host the whole pass, the GPU keeps its active state's share of the draw
    waiting = idle + (350.0 - idle) * c.decode_power_fraction * c.wait_power_fraction
    assert float(gpu_power_w(c, "decode", 0.0)) == pytest.approx(waiting, rel=1e-12)
    assert idle < waiting < dec
    with pytest.raises(ValueError):
        gpu_power_w(c, "boost")


def test_batched_decode_power_by_hand(qwen05):
    """test_batched_decode_by_hand's pass of 8 sequences at ctx 1023 with kv_power_fraction 1:

    KV 0.201326592 ms of the 1.189392128 ms of streaming: share 0.169268475
    batched share 0.169268475 x (1 - 1/8) = 0.148109916
    decode fraction 0.5 + (1 - 0.5) x 0.148109916 = 0.574054958
    busy 1.189392128 / 2.189392128 = 0.543252217 (wait 0: the host's millisecond draws idle)
    P = 20 + 280 x 0.574054958 x 0.543252217 = 107.3199 W, against 96.0553 W without the
    term. One sequence: no batched share, the decode fraction exactly."""
    from dse.devices.power import decode_fraction

    off = replace(gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving()),
                  knee_exponent=np.inf, kv_bw_many_bytes_per_s=0.0, sequence_overhead_s=0.0,
                  kv_power_fraction=np.nan)
    on = replace(off, kv_power_fraction=1.0)
    ft = gpu.forward(on, 1, 1023, batch=8)
    assert float(ft.batched_kv_share) == pytest.approx(0.148109916, rel=1e-8)
    assert float(decode_fraction(on, ft.batched_kv_share)) == pytest.approx(0.574054958,
                                                                            rel=1e-8)
    p_on = float(gpu_power_w(on, "decode", ft.busy_fraction, ft.batched_kv_share))
    p_off = float(gpu_power_w(off, "decode", ft.busy_fraction, ft.batched_kv_share))
    assert p_on == pytest.approx(107.31985604, rel=1e-8)
    assert p_off == pytest.approx(96.05531042, rel=1e-8)  # nan: the decode fraction
    one = gpu.forward(on, 1, 1023)
    assert float(one.batched_kv_share) == 0.0
    assert float(gpu_power_w(on, "decode", one.busy_fraction, one.batched_kv_share)) == float(
        gpu_power_w(off, "decode", one.busy_fraction))


@settings(max_examples=60, deadline=None)
@given(ctx=st.integers(0, 32_000), b=st.integers(1, 255), f_kv=st.floats(0.5, 1.0))
def test_decode_power_does_not_fall_with_the_batch_without_host_time(ctx, b, f_kv):
    """With no host time per sequence, a decode pass of one more sequence streams more KV
    (a larger batched share) and keeps the GPU busy longer: its power does not fall while
    kv_power_fraction is at least the decode fraction (0.5)."""
    model = Catalog.load().model("qwen2.5-0.5b-instruct")
    c = replace(gpu.gpu_cost(model, make_gpu(), precision("bf16"), make_serving()),
                sequence_overhead_s=0.0, kv_power_fraction=f_kv)

    def watts(n: int) -> float:
        ft = gpu.forward(c, 1, ctx, batch=n)
        return float(gpu_power_w(c, "decode", ft.busy_fraction, ft.batched_kv_share))

    assert watts(b + 1) >= watts(b) - 1e-9


def test_a_board_smaller_than_the_serving_reserve_offers_no_memory_not_a_negative_amount(cat):
    """memory_GB = 0.1: 0.1 GB x the profile's utilization less its runtime reserve is
    below zero; the board offers 0 bytes (never "-0.91 GB usable") and the line says why."""
    from dse.io.roofline import roofline

    tiny = cat.replacing("gpu", [replace(cat.gpu("rtx-3090"), memory_bytes=0.1e9)])
    r = roofline(tiny, model="qwen2.5-0.5b-instruct", device="rtx-3090")
    assert r["fits"] is False and r["infeasible"] == [
        "rtx-3090 has no usable memory: vllm-cudagraph's utilization and reserve take all its "
        "0.10 GB"]
    pl = gpu.place(tiny, tiny.model("qwen2.5-0.5b-instruct"), tiny.gpu("rtx-3090"),
                   precision_name="bf16", software="vllm-cudagraph", context_tokens=10,
                   tp=1, knobs={})
    assert pl.usable_memory_bytes == 0.0
