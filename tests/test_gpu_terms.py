"""The serving-family terms of the GPU model (dse.devices.gpu), by hand on round numbers.

Fixture GPU (tests/conftest.py): B = 1e12 B/s, F = 1e14 FLOP/s (BF16 and FP16), INT8 2e14;
fixture profile: e_mem = e_comp = 1, e_attn = 0.5, no gaps, step overhead 1 ms.
Qwen2.5-0.5B: 24 layers; its BF16 decode at ctx 1023 is 2.013231360 ms (tests/test_gpu.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from dse.devices import gpu
from dse.devices.shape import precision
from dse.errors import SpecError

from .conftest import make_gpu, make_serving

DECODE_1023_S = 2.013231360e-3


@pytest.fixture(scope="module")
def qwen05(cat):
    return cat.model("qwen2.5-0.5b-instruct")


def test_prefill_overhead_is_added_once_per_call_and_scales_with_the_host(qwen05):
    """prefill_overhead 2 ms: every prefill call +2 ms (x3 on a host 3x slower), decode and
    an empty prefill unchanged."""
    base = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving())
    over = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"),
                        make_serving(prefill_overhead_us=2000.0))
    for n in (1, 128, 4096):
        assert float(gpu.prefill_s(over, n)) == pytest.approx(float(gpu.prefill_s(base, n))
                                                              + 2e-3, rel=1e-12)
    assert float(gpu.prefill_s(over, 0)) == 0.0
    assert float(gpu.decode_token_s(over, 1023)) == pytest.approx(DECODE_1023_S, rel=1e-9)
    slow = gpu.gpu_cost(qwen05, make_gpu(host_cpu_slowdown=3.0), precision("bf16"),
                        make_serving(prefill_overhead_us=2000.0))
    assert float(slow.prefill_overhead_s) == pytest.approx(6e-3)


def test_fp16_accumulate_uses_the_geforce_rate_only_when_the_profile_says_so():
    g = make_gpu(fp16_acc16_TFLOPS=200.0)
    assert gpu.peak_flops_per_s(g, precision("fp16")) == 1e14
    assert gpu.peak_flops_per_s(g, precision("fp16"), fp16_accumulate=True) == 2e14
    assert gpu.peak_flops_per_s(g, precision("bf16"), fp16_accumulate=True) == 1e14
    # no FP16-accumulate figure: the FP32-accumulate rate
    assert gpu.peak_flops_per_s(make_gpu(), precision("fp16"), fp16_accumulate=True) == 1e14


def test_fp8_runs_at_the_fp8_peak_with_its_own_efficiency(qwen05):
    """FP8 at 4e14 x 0.5 = 2e14 FLOP/s effective; without FP8 tensor cores, the BF16 rate."""
    s = make_serving(fp8_compute_efficiency=0.5)
    c = gpu.gpu_cost(qwen05, make_gpu(fp8_TFLOPS=400.0), precision("fp8"), s)
    assert float(c.flops_per_s) == pytest.approx(2e14)
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("fp8"), s)
    assert float(c.flops_per_s) == pytest.approx(0.5e14)
    c = gpu.gpu_cost(qwen05, make_gpu(fp8_TFLOPS=400.0), precision("fp8"), make_serving())
    assert float(c.flops_per_s) == pytest.approx(4e14)  # absent: compute_efficiency (1.0)


def test_eager_beyond_the_captured_graph_context(qwen05):
    """Graphs up to 8192 tokens; beyond, 24 layers x 400 us = 9.6 ms of CPU launches, which
    exceed the ~1.2 ms GPU side: 9.6 + 1 ms step overhead."""
    s = make_serving(graph_max_context_tokens=8192, eager_launch_per_layer_us=400.0)
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), s)
    assert float(gpu.decode_token_s(c, 1023)) == pytest.approx(DECODE_1023_S, rel=1e-9)
    assert float(gpu.decode_token_s(c, 8191)) < 2.5e-3  # ctx + 1 = 8192: still a graph
    assert float(gpu.decode_token_s(c, 8192)) == pytest.approx(9.6e-3 + 1e-3, rel=1e-9)


def test_quantized_layer_overhead(qwen05):
    """w4a16 on a graph stack: +24 x 50 us = 1.2 ms on the GPU side; on an eager stack the
    same per-layer cost joins the 1 ms launch (24 x 1.05 ms = 25.2 ms). BF16 is unchanged."""
    graph = make_serving(quantized_layer_overhead_us=50.0)
    c16 = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), graph)
    assert float(gpu.decode_token_s(c16, 1023)) == pytest.approx(DECODE_1023_S, rel=1e-9)
    c4 = gpu.gpu_cost(qwen05, make_gpu(), precision("w4a16"), graph)
    plain = gpu.gpu_cost(qwen05, make_gpu(), precision("w4a16"), make_serving())
    assert float(gpu.decode_token_s(c4, 1023)) == pytest.approx(
        float(gpu.decode_token_s(plain, 1023)) + 24 * 50e-6, rel=1e-9)
    eager = make_serving(quantized_layer_overhead_us=50.0, launch_per_layer_us=1000.0,
                         cuda_graphs=False, step_overhead_us=0.0)
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("w4a16"), eager)
    assert float(gpu.decode_token_s(c, 0)) == pytest.approx(24 * 1.05e-3, rel=1e-9)


def test_generation_overrides_apply_on_that_generation_only(qwen05):
    """[by_generation.hopper] step_overhead_us = 3000: a Hopper GPU decodes 2 ms slower."""
    s = make_serving(by_generation={"hopper": {"source": "test", "step_overhead_us": 3000.0}})
    assert s.for_generation("ampere") is s
    amp = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), s)
    hop = gpu.gpu_cost(qwen05, make_gpu(generation="hopper"), precision("bf16"), s)
    assert float(gpu.decode_token_s(amp, 1023)) == pytest.approx(DECODE_1023_S, rel=1e-9)
    assert float(gpu.decode_token_s(hop, 1023)) == pytest.approx(DECODE_1023_S + 2e-3,
                                                                 rel=1e-9)


@pytest.mark.parametrize(("table", "match"), [
    ({"tpu": {"source": "x", "layer_gap_us": 1.0}}, r"by_generation\.tpu: unknown"),
    ({"hopper": {"layer_gap_us": 1.0}}, r"by_generation\.hopper\.source: missing"),
    ({"hopper": {"source": "x"}}, "overrides nothing"),
    ({"hopper": {"source": "x", "prefix_caching": 1.0}}, "unknown key to override"),
    ({"hopper": {"source": "x", "layer_gap_us": -1.0}}, r"layer_gap_us: must be >= 0"),
    ({"hopper": {"source": "x", "mem_bw_efficiency": 1.5}}, r"mem_bw_efficiency: must be <= 1"),
    ({"hopper": 3}, "expected a table of overrides"),
])
def test_bad_generation_overrides_are_one_clear_error(table, match):
    with pytest.raises(SpecError, match=match):
        make_serving(by_generation=table)


def test_override_values_convert_units():
    s = make_serving(by_generation={"ada": {"source": "x", "layer_gap_us": 7.0}})
    assert s.variants["ada"]["layer_gap_s"] == pytest.approx(7e-6)


def test_fp8_pays_the_quantised_overhead_only_where_it_dequantises_or_the_stack_says_so(qwen05):
    """On FP8 tensor cores a native FP8 GEMM has no dequantisation (no overhead); without
    them FP8 is weight-only (overhead); a stack with extra FP8 kernels pays it regardless."""
    s = make_serving(quantized_layer_overhead_us=50.0)
    fp8 = precision("fp8")
    native = gpu.gpu_cost(qwen05, make_gpu(fp8_TFLOPS=400.0), fp8, s)
    ampere = gpu.gpu_cost(qwen05, make_gpu(), fp8, s)
    extra = gpu.gpu_cost(qwen05, make_gpu(fp8_TFLOPS=400.0), fp8,
                         make_serving(quantized_layer_overhead_us=50.0, fp8_extra_kernels=True))
    assert float(native.layer_gap_s) == 0.0
    assert float(ampere.layer_gap_s) == pytest.approx(50e-6)
    assert float(extra.layer_gap_s) == pytest.approx(50e-6)
    assert not gpu.dequantises(make_gpu(), precision("w8a8"))
    assert gpu.dequantises(make_gpu(), precision("q4_0"))


def test_tensor_parallel_all_reduce_is_a_ring_by_hand(qwen05):
    """tp = 4 over PCIe (no NVLink): per layer 2 all-reduces x 2 (4-1) ring steps x (10 us
    profile + the link's latency); the size part 2 x 2 (3/4) x 896 x 2 B / link bandwidth per
    token. Both land in the GPU side of every forward pass."""
    from dse.specs import Catalog

    cat = Catalog.load()
    link = cat.link("pcie-gen4-x16")
    c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving(), tp=4, tp_link=link)
    assert float(c.allreduce_s_per_layer) == pytest.approx(2 * 2 * 3 * (10e-6 + link.latency_s))
    assert float(c.allreduce_s_per_token_layer) == pytest.approx(
        2 * 2 * 0.75 * 896 * 2 / link.effective_bytes_per_s)
    one = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving())
    assert float(one.allreduce_s_per_layer) == 0.0


def test_pcie_all_reduce_fixed_cost_per_call_by_hand(qwen05):
    """A fixed cost per all-reduce over PCIe (90 us, whatever tp) on top of the ring: per layer
    2 x (90 us + 2 (tp-1) x (10 us + link latency)); over NVLink it does not apply."""
    from dse.specs import Catalog

    link = Catalog.load().link("pcie-gen4-x16")
    s = make_serving(pcie_allreduce_latency_us=10.0, pcie_allreduce_fixed_us=90.0)
    for tp in (2, 4, 8):
        c = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), s, tp=tp, tp_link=link)
        assert float(c.allreduce_s_per_layer) == pytest.approx(
            2 * (90e-6 + 2 * (tp - 1) * (10e-6 + link.latency_s)))
    nvlink = gpu.gpu_cost(qwen05, make_gpu(nvlink_bidir_GBps=600.0), precision("bf16"), s,
                          tp=4, tp_link=link)
    assert float(nvlink.allreduce_s_per_layer) == pytest.approx(2 * 2 * 3 * 10e-6)


def test_quantised_models_stream_a_16_bit_head_unless_the_stack_quantises_it(cat):
    """Gemma-2-2B, w4a16: body 2,614,341,888 - 589,824,000 head = 2,024,517,888 params at
    0.5 B, the tied 256000 x 2304 head at 2 B (GPTQ/AWQ keep it 16-bit) = 2,191,898,944 B; a
    stack that quantises the head (MLC-LLM) streams all 2,614,341,888 at 0.5 B."""
    from dse.devices import shape

    g = cat.model("gemma-2-2b")
    head = 256000 * 2304
    streamed = shape.streamed_params_per_token(g)
    w4 = precision("w4a16")
    assert shape.streamed_weight_bytes(g, w4) == pytest.approx(
        (streamed - head) * 0.5 + head * 2)
    c = gpu.gpu_cost(g, make_gpu(), w4, make_serving(quantizes_head=True))
    assert float(c.weight_bytes) == pytest.approx(streamed * 0.5)
    bf16 = precision("bf16")  # 16-bit models are unchanged either way
    assert shape.streamed_weight_bytes(g, bf16) == pytest.approx(streamed * 2)


def test_the_host_cpu_and_the_stacks_own_factor_multiply_the_cpu_side_only(qwen05):
    """A host 2x slower and a stack factor of 3 on this board for one profile: that profile's
    launch (100 us), step (1 ms) and prefill overhead (2 ms) x 6; another profile's x 2; the
    GPU side (layer gap 10 us) unchanged."""
    serving = make_serving(launch_per_layer_us=100.0, layer_gap_us=10.0,
                           prefill_overhead_us=2000.0, cuda_graphs=False)
    host = make_gpu(host_cpu_slowdown=2.0, host_stack_slowdown={"test": 3.0})
    c = gpu.gpu_cost(qwen05, host, precision("bf16"), serving)
    assert float(c.launch_per_layer_s) == pytest.approx(600e-6)
    assert float(c.step_overhead_s) == pytest.approx(6e-3)
    assert float(c.prefill_overhead_s) == pytest.approx(12e-3)
    assert float(c.layer_gap_s) == pytest.approx(10e-6)
    other = gpu.gpu_cost(qwen05, host, precision("bf16"), replace(serving, name="other"))
    assert float(other.launch_per_layer_s) == pytest.approx(200e-6)


def test_a_slow_host_does_not_slow_a_pass_whose_launches_hide_under_the_gpu_side(qwen05):
    """The two sides overlap (max). GPU side 2.013 - 1 = 1.013 ms (no gaps). Launches of
    24 x 20 us = 0.48 ms hide under it: at x1 the pass is 2.013 ms; at x2 (0.96 ms, still
    hidden) only the step doubles: 1.013 + 2 ms. Launches of 24 x 50 us x 1.5 = 1.8 ms exceed
    it: launch-bound, 1.8 + 1.5 ms."""
    eager = make_serving(launch_per_layer_us=20.0, cuda_graphs=False)
    fast = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), eager)
    slow = gpu.gpu_cost(qwen05, make_gpu(host_cpu_slowdown=2.0), precision("bf16"), eager)
    gpu_side = DECODE_1023_S - 1e-3
    assert float(gpu.decode_token_s(fast, 1023)) == pytest.approx(DECODE_1023_S, rel=1e-9)
    assert float(gpu.decode_token_s(slow, 1023)) == pytest.approx(gpu_side + 2e-3, rel=1e-9)
    bound = make_serving(launch_per_layer_us=50.0, cuda_graphs=False)
    c = gpu.gpu_cost(qwen05, make_gpu(host_cpu_slowdown=1.5), precision("bf16"), bound)
    assert float(gpu.decode_token_s(c, 1023)) == pytest.approx(24 * 75e-6 + 1.5e-3, rel=1e-9)


def test_the_launch_bound_power_state_holds_a_share_of_the_decode_draw(qwen05):
    """idle 20 W, TDP 300 W, decode fraction 0.5: the dynamic range drawn is 140 W while
    kernels run. Busy 0.25 with wait 0.4: 20 + 140 x (0.25 + 0.75 x 0.4) = 97 W; wait 0 (the
    GPU idles in every gap): 20 + 140 x 0.25 = 55 W; wait 1: 160 W whatever the host does."""
    from dse.devices.power import gpu_power_w
    for wait, watts in ((0.4, 97.0), (0.0, 55.0), (1.0, 160.0)):
        c = gpu.gpu_cost(qwen05, make_gpu(wait_power_fraction=wait), precision("bf16"),
                         make_serving())
        assert float(gpu_power_w(c, "decode", 0.25)) == pytest.approx(watts, rel=1e-12)
        assert float(gpu_power_w(c, "decode", 1.0)) == pytest.approx(160.0, rel=1e-12)
        assert float(gpu_power_w(c, "idle")) == 20.0


QWEN05_LINEAR_PARAMS = 24 * (896 * 896 * 2 + 896 * 128 * 2 + 896 + 128 * 2  # q, o, k, v, biases
                             + 3 * 896 * 4864)  # gate, up, down: 357,854,208


def test_an_older_llama_cpp_dequantises_a_long_quantised_prompt_to_a_16_bit_copy(qwen05):
    """prompt_dequantize_min_tokens 33: a q4_0 (4.5 bits) prompt of 33 tokens or more first
    reads the stored layer weights and writes a 2-byte copy (357,854,208 x 2.5625 B at 1e12
    B/s = 0.917 ms), then its GEMMs read the copy (x 1.4375 B more, which shows only where the
    pass is memory-bound: at 33 tokens, not at 4096); 32 tokens, FP16 weights and decode as
    without the key."""
    from dse.devices import shape

    assert shape.linear_macs_per_token(qwen05) == QWEN05_LINEAR_PARAMS
    q4 = precision("q4_0")
    base = gpu.gpu_cost(qwen05, make_gpu(), q4, make_serving())
    old = gpu.gpu_cost(qwen05, make_gpu(), q4, make_serving(prompt_dequantize_min_tokens=33))
    copy_s = QWEN05_LINEAR_PARAMS * (4.5 / 8 + 2) / 1e12
    read_s = QWEN05_LINEAR_PARAMS * (2 - 4.5 / 8) / 1e12

    def extra(n: int) -> float:
        return float(gpu.prefill_s(old, n)) - float(gpu.prefill_s(base, n))

    assert extra(32) == 0.0
    assert extra(4096) == pytest.approx(copy_s, rel=1e-9)  # compute-bound: the copy only
    assert extra(33) == pytest.approx(copy_s + read_s, rel=1e-9)  # memory-bound: both
    assert float(gpu.decode_token_s(old, 1023)) == float(gpu.decode_token_s(base, 1023))
    f16 = [gpu.gpu_cost(qwen05, make_gpu(), precision("fp16"), make_serving(**k))
           for k in ({}, {"prompt_dequantize_min_tokens": 33})]
    assert float(gpu.prefill_s(f16[1], 4096)) == float(gpu.prefill_s(f16[0], 4096))


def test_an_unfused_attention_moves_its_score_matrix_through_memory(qwen05):
    """unfused_attention_bytes_per_score 24 (llama.cpp without flash attention): each (query,
    key) pair of each head and layer moves 24 B at the weight-streaming bandwidth, in series
    with the roofline. Qwen2.5-0.5B: 24 layers x 14 heads x 24 B = 8,064 B per pair. A
    1,000-token prompt has 1000 x 1001 / 2 = 500,500 pairs: 4.036032 GB at 1e12 B/s =
    4.036032 ms; 4 such prompts in one pass 4x; one decode step after 1,023 cached tokens
    attends to 1,024 keys: 8.257536 us. Absent (a fused attention): nothing."""
    fused = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"), make_serving())
    unfused = gpu.gpu_cost(qwen05, make_gpu(), precision("bf16"),
                           make_serving(unfused_attention_bytes_per_score=24.0))
    assert fused.scores_bytes_per_pair == 0.0
    assert unfused.scores_bytes_per_pair == 8064.0

    def extra(n: int, ctx: int, batch: int = 1) -> float:
        return (float(gpu.forward(unfused, n, ctx, batch=batch).gpu_side_s)
                - float(gpu.forward(fused, n, ctx, batch=batch).gpu_side_s))

    assert extra(1000, 0) == pytest.approx(4.036032e-3, rel=1e-9)
    assert extra(1000, 0, batch=4) == pytest.approx(4 * 4.036032e-3, rel=1e-9)
    assert extra(1, 1023) == pytest.approx(8.257536e-6, rel=1e-9)


def test_a_dequantised_prompt_computes_in_fp16_at_the_stacks_accumulate_rate(qwen05):
    """The GEMMs of a prompt dequantised to an FP16 copy run in FP16, whatever the precision's
    nominal compute (w4a16: bf16), at the FP16-accumulate peak where the stack accumulates in
    FP16 (ExLlamaV2's reconstruct-then-cublasHgemm path): on a GPU with bf16 = fp16 = 100 and
    FP16-accumulate 200 TFLOPS, a 4096-token w4a16 prompt's compute takes half as long; one of
    32 tokens (its quantised kernels) and FP16 weights (no copy) keep the precision's rate."""
    g = make_gpu(fp16_acc16_TFLOPS=200.0)
    w4 = precision("w4a16")
    assert w4.compute == "bf16"
    base = gpu.gpu_cost(qwen05, g, w4, make_serving())
    hgemm = gpu.gpu_cost(qwen05, g, w4, make_serving(fp16_accumulate=True,
                                                     prompt_dequantize_min_tokens=33))
    assert hgemm.flops_per_s == base.flops_per_s == 1e14
    assert hgemm.prompt_copy_flops_per_s == 2e14
    assert float(gpu.forward(hgemm, 4096, 0).compute_s) == pytest.approx(
        float(gpu.forward(base, 4096, 0).compute_s) / 2, rel=1e-12)
    assert float(gpu.forward(hgemm, 32, 0).compute_s) == float(gpu.forward(base, 32, 0).compute_s)
    f16 = gpu.gpu_cost(qwen05, g, precision("fp16"), make_serving(
        fp16_accumulate=True, prompt_dequantize_min_tokens=33))
    assert f16.prompt_copy_flops_per_s == 0.0 and f16.flops_per_s == 2e14  # its own HGEMM rate


def test_exllamav2_prompts_take_the_reconstruct_and_hgemm_path(cat):
    """ExLlamaV2 dequantises a prompt of more than MAX_Q_GEMM_ROWS (32) tokens to FP16 and runs
    cublasHgemm (exllamav2_ext/config.h, cuda/q_gemm.cu), each key with its source."""
    ex = cat.serving("exllamav2")
    assert ex.prompt_dequantize_min_tokens == 33 and ex.fp16_accumulate is True
    assert "cublasHgemm" in ex.sources["fp16_accumulate"]
    assert "MAX_Q_GEMM_ROWS 32" in ex.sources["prompt_dequantize_min_tokens"]


def test_the_older_llama_cpp_build_is_the_fitted_profile_but_its_prompt_path(cat):
    """llama.cpp-cublas takes llama.cpp's fit whole (measurements.BUILDS, written by
    scripts/calibrate_devices.py); the measurements of builds before PR #8075 are predicted with
    its prompt path, the later ones not."""
    from dataclasses import fields

    from dse.validation.measurements import BUILDS, build_of

    new, old = cat.serving("llama.cpp"), cat.serving("llama.cpp-cublas")
    differ = {f.name for f in fields(new) if getattr(new, f.name) != getattr(old, f.name)}
    # its own file, name and description, its prompt path and that key's source line
    assert differ == {"path", "name", "description", "prompt_dequantize_min_tokens", "sources"}
    assert {k: v for k, v in old.sources.items() if k != "prompt_dequantize_min_tokens"} == \
        dict(new.sources)
    assert old.prompt_dequantize_min_tokens == 33 and new.prompt_dequantize_min_tokens is None
    build = next(b for b in BUILDS if b.profile == "llama.cpp-cublas")
    assert (build.of, build.keys) == ("llama.cpp", ("prompt_dequantize_min_tokens",))
    for framework in ("llama.cpp-9476b01 (CUDA)", "llama.cpp (CUDA backend, master of Jan 2024)",
                      "llama.cpp-unstated-2023-07 (build not stated)",
                      "llama.cpp-b2824 (4426e298, CUDA, May 2024)"):
        assert build_of(framework) is build
    assert build_of("llama.cpp (CUDA backend, master of Mar 2025)") is None
    assert build_of("vllm-0.6.3") is None


def test_llama_cpp_with_flash_attention_is_the_fitted_profile_without_the_score_matrix(cat):
    """llama.cpp-fa is llama.cpp's fit whole (written by scripts/calibrate_devices.py) with a
    fused attention: no unfused_attention_bytes_per_score (llama.cpp's own profile, -fa 0, the
    default of its benchmarks' builds, moves 24 B per score); rows the source runs with flash
    attention are predicted on it."""
    from dataclasses import fields

    from dse.validation.measurements import BUILDS, build_of

    new, fa = cat.serving("llama.cpp"), cat.serving("llama.cpp-fa")
    differ = {f.name for f in fields(new) if getattr(new, f.name) != getattr(fa, f.name)}
    assert differ == {"path", "name", "description", "unfused_attention_bytes_per_score",
                      "sources"}
    assert new.unfused_attention_bytes_per_score == 24.0
    assert fa.unfused_attention_bytes_per_score is None
    build = next(b for b in BUILDS if b.profile == "llama.cpp-fa")
    assert (build.of, build.keys) == ("llama.cpp", ("unfused_attention_bytes_per_score",))
    assert build_of("llama.cpp (CUDA backend, master of Mar 2025, flash attention on, "
                    "presumed)") is build
