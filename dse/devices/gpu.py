"""GPU cost primitives: prefill, decode, fit, power, for one sequence or a batch of them.

Time of one forward pass of `batch` sequences, each with its own n_new tokens after its own
ctx cached tokens (seconds):

    weights   streamed once per pass, whatever the batch (the GEMMs read each weight once);
    kv        = batch x kv_bytes_per_token x (ctx + n_new)   (each sequence's own cache);
    flops     = batch x (linear x n_new + head + attention(ctx, n_new));
    roofline  = max(weights / (B e_mem tp) + kv / (B e_attn tp), flops / (F e_comp tp))
    gpu_side  = roofline + layers * layer_gap + tp_comm
                + scores                            (an unfused attention's score matrix
                                                     through memory: bytes per score x
                                                     query-key pairs x heads x layers /
                                                     (B e_mem tp); 0 where attention is fused)
    cpu_side  = layers * launch_per_layer            (eager launch; 0 with CUDA graphs, or
                                                      the eager cost beyond the context the
                                                      profile's graphs were captured for)
    offload   = host_weights / (host link bandwidth x tp)
    t         = max(gpu_side, cpu_side) + offload + step_overhead   (+ prefill_overhead for a
                                                                     prefill)

Partial offload (`offload_fraction` f of the streamed weights in host memory, a system's
`<role>_offload_fraction`): those weights cross the GPU's host link on every forward pass, in
series with the GPU's own pass, as vLLM's `--cpu-offload-gb` and HF accelerate's CPU offload
copy a layer's weights before its kernels run (FlexGen's overlap would make it max(link, GPU),
at most 2x apart; llama.cpp's --n-gpu-layers, CPU layers, is not modelled; docs/model.md). The
on-device share alone counts toward the GPU's memory.

Dequantising precisions (`dequantises`) add the profile's `quantized_layer_overhead` to the
layer gap (and, on an eager stack, to the per-layer launch): their dequantising GEMM kernels
cost more per call than a 16-bit GEMV. The profile's values for the GPU's generation apply
(Hopper can differ from Ampere), and FP8 prefill uses its own share of the FP8 peak.

B, F: datasheet bandwidth and peak; e_mem, e_attn, e_comp, layer_gap, launch_per_layer and
step_overhead are the serving profile's (calibrated on measured batch-1 points, see
boards/serving/, fitted on the calibration hosts); the CPU-side terms (launch, step and
prefill overhead) scale with the host's CPU speed (`host_cpu_slowdown`, 1 on the calibration
hosts; a system may name its own) times the stack's own factor on that board where its points
there pin one (`host_stack_slowdown`: vLLM's Jetson builds). The two sides overlap (the max), so
a slow host pushes a step above the GPU side only when its launches outlast the GPU's work.
Small models at batch 1 are dominated by the overhead terms, which a pure roofline misses.

At batch B the per-pass terms (layer gaps, launches, the step overhead, the per-layer
all-reduce latency) are paid once per pass and the per-token all-reduce bytes B times; a pass
of more than one sequence adds the batch terms of dse/devices/gpu_batch.py (the roofline's
knee, the KV-read share of many sequences, the host's work per further sequence, the power of
an attention streaming many caches), fitted to batched measurements. A batch of sequences with
different contexts costs what a batch at their mean context costs. `batch = 1` is the
single-stream model exactly.

Every function broadcasts over numpy arrays, and `GpuCost` fields may themselves be arrays
(`stack`), so one code path serves a scalar query and a million-design sweep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.core.arrays import F64, Num
from dse.devices import shape
from dse.devices.gpu_batch import batch_terms, kv_bandwidth, soft_max
from dse.devices.power import gpu_power_w
from dse.devices.protocol import Bound, ModelMemory, PowerState, check_batch
from dse.devices.shape import Precision, precision, with_kv_precision
from dse.specs import Catalog, GpuServingSpec, GpuSpec, LinkSpec, ModelSpec


@dataclass(frozen=True)
class GpuCost:
    """Coefficients of one (model, GPU, precision, serving profile, TP degree) combination."""

    layers: Num
    weight_bytes: Num  # streamed once per forward pass
    kv_bytes_per_token: Num
    linear_flops_per_token: Num
    head_flops_per_position: Num
    attn_flops_per_pair: Num  # per (query, key) pair, all layers
    mem_bw_bytes_per_s: Num  # weight streaming, effective: peak x efficiency x tp
    kv_bw_bytes_per_s: Num  # KV-cache reads by the attention kernel, effective
    flops_per_s: Num  # effective: peak x efficiency x tp
    layer_gap_s: Num
    launch_per_layer_s: Num
    step_overhead_s: Num
    prefill_overhead_s: Num  # fixed host/launch cost of one prefill call
    graph_max_context_tokens: Num  # a longer step runs eager (inf: graphs at every length)
    eager_launch_per_layer_s: Num  # its per-layer CPU launch cost
    allreduce_s_per_layer: Num  # fixed part of TP all-reduces per layer (0 if tp = 1)
    allreduce_s_per_token_layer: Num  # size-proportional part, per token per layer
    idle_w: Num  # all tp GPUs together
    tdp_w: Num
    decode_power_fraction: Num
    prefill_power_fraction: Num
    wait_power_fraction: Num  # share of the state's dynamic power held while waiting on the host
    tp: Num
    host_weight_bytes: Num = 0.0  # offloaded: crosses the host link every forward pass
    host_link_bytes_per_s: Num = np.inf  # effective host-link bandwidth x tp
    # A prompt pass of at least prompt_copy_min_tokens (inf: never) first dequantises the
    # weights to a 16-bit copy (reading the stored bytes, writing the copy: prompt_copy_bytes),
    # a pass of its own before the GEMMs, which then read the copy (prompt_copy_read_bytes
    # more than the stored weights)
    prompt_copy_min_tokens: Num = np.inf
    prompt_copy_bytes: Num = 0.0
    prompt_copy_read_bytes: Num = 0.0
    # and its GEMMs run on the FP16 copy: FP16 compute, whatever the precision's own (w4a16's
    # nominal bf16), at the FP16-accumulate peak where the stack accumulates in FP16 (0 where
    # nothing is copied: never read)
    prompt_copy_flops_per_s: Num = 0.0
    # An unfused attention (no flash-attention kernel) moves its score matrix through memory
    # between kernels: bytes per (query, key) pair, every layer and head (0: fused)
    scores_bytes_per_pair: Num = 0.0
    # The batch terms of a pass of s > 1 sequences (dse.devices.gpu_batch): the roofline's
    # knee exponent (inf: the hard max), the KV-read bandwidth many sequences reach (0: the
    # batch-1 one) and the host time per further sequence
    knee_exponent: Num = np.inf
    kv_bw_many_bytes_per_s: Num = 0.0
    sequence_overhead_s: Num = 0.0
    # and the decode state's power share as attention streams many caches (nan: none)
    kv_power_fraction: Num = np.nan


# The residual stream a TP all-reduce sums stays 16-bit under every scheme (FP8 and INT8 GEMMs
# quantise their inputs per layer; vLLM and TensorRT-LLM all-reduce in the model dtype).
RESIDUAL_BYTES = 2
# A quantised prompt dequantised before its GEMMs (prompt_dequantize_min_tokens) is copied to
# FP16: 2 bytes per weight (llama.cpp's cuBLAS path before its int8 MMQ kernels, ExLlamaV2's
# reconstruct-then-cublasHgemm path), and its GEMMs compute in FP16.
COPY_BYTES_PER_WEIGHT = 2.0


def peak_flops_per_s(gpu: GpuSpec, p: Precision, *, fp16_accumulate: bool = False) -> float:
    """The dense tensor peak the precision's matmuls run at. FP8 on a GPU without FP8 tensor
    cores runs at the 16-bit rate (weights upcast, as vLLM's fp8 Marlin path on Ampere);
    `fp16_accumulate`: FP16 GEMMs accumulate in FP16 (GeForce parts run those at 2x)."""
    if p.compute == "fp8":
        return gpu.fp8_flops_per_s or gpu.bf16_flops_per_s
    if p.compute == "fp16" and fp16_accumulate and gpu.fp16_acc16_flops_per_s is not None:
        return gpu.fp16_acc16_flops_per_s
    return {"bf16": gpu.bf16_flops_per_s, "fp16": gpu.fp16_flops_per_s,
            "int8": gpu.int8_ops_per_s}[p.compute]


def gpu_cost(
    model: ModelSpec,
    gpu: GpuSpec,
    p: Precision,
    serving: GpuServingSpec,
    *,
    tp: int = 1,
    tp_link: LinkSpec | None = None,
    offload_fraction: float = 0.0,
) -> GpuCost:
    """Build the coefficients. tp > 1 splits weights and KV over tp GPUs; the two all-reduces
    per layer go over NVLink where the GPU has it, else over `tp_link` (its PCIe); each is a
    ring of 2 (tp - 1) steps of the profile's `allreduce_latency` (+ the PCIe latency). The serving
    profile's values for the GPU's generation apply (`GpuServingSpec.for_generation`).
    offload_fraction in [0, 1): that share of the streamed weights stays in host memory and
    crosses `tp_link` (each GPU's host link, tp of them in parallel) every forward pass."""
    if not 0.0 <= offload_fraction < 1.0:
        raise ValueError(f"offload_fraction: {offload_fraction!r}; must be in [0, 1)")
    if offload_fraction and tp_link is None:
        raise ValueError("offload_fraction > 0 needs the GPU's host link spec (tp_link)")
    serving = serving.for_generation(gpu.generation)
    if serving.quantizes_head:
        p = replace(p, table_bits=p.weight_bits)
    extra = dequantises(gpu, p) or (p.compute == "fp8" and bool(serving.fp8_extra_kernels))
    quant_s = (serving.quantized_layer_overhead_s or 0.0) if extra else 0.0
    quant_launch_s = 0.0 if serving.cuda_graphs else quant_s
    h = model.hidden_size
    if tp > 1:
        if gpu.nvlink_bidir_bytes_per_s > 0:
            link_bw = gpu.nvlink_bidir_bytes_per_s / 2
            latency = serving.allreduce_latency_s
            call_s = 0.0
        else:
            if tp_link is None:
                raise ValueError("tp > 1 without NVLink needs the PCIe link spec")
            link_bw = tp_link.effective_bytes_per_s
            step = serving.pcie_allreduce_latency_s
            latency = (serving.allreduce_latency_s if step is None else step) + tp_link.latency_s
            call_s = serving.pcie_allreduce_fixed_s or 0.0
        # two all-reduces per layer; a ring all-reduce takes 2 (tp-1) latency-bound steps and
        # moves 2 (tp-1)/tp of the activation (small messages at batch 1: the steps dominate);
        # over PCIe each call also has a fixed cost whatever tp (launch, host-side sync)
        ar_fixed = 2 * (call_s + 2 * (tp - 1) * latency)
        ar_per_token = 2 * (2 * (tp - 1) / tp) * h * RESIDUAL_BYTES / link_bw
    else:
        ar_fixed = ar_per_token = 0.0
    streamed = shape.streamed_weight_bytes(model, p)
    host = streamed * offload_fraction
    cpu = gpu.cpu_slowdown(serving.name)  # the host's CPU speed x the stack's factor on it
    copy_min = serving.prompt_dequantize_min_tokens
    copied = (copy_min is not None and p.weight_bits < 16 and p.activation_bits == 16)
    # the layers' matmul weights (the head's one position runs as a GEMV on the stored bytes)
    body = shape.linear_macs_per_token(model) * (1 - offload_fraction)
    bt = batch_terms(serving.name)
    return GpuCost(
        layers=shape.layers_run(model),  # an implicit PRM runs its reference's layers too
        weight_bytes=streamed - host,
        kv_bytes_per_token=shape.kv_bytes_per_token(model, p.kv_bits),
        linear_flops_per_token=2 * shape.linear_macs_per_token(model),
        head_flops_per_position=2 * shape.head_matmul_params(model),
        attn_flops_per_pair=2 * shape.attention_macs_per_pair(model),
        mem_bw_bytes_per_s=gpu.mem_bw_bytes_per_s * serving.mem_bw_efficiency * tp,
        kv_bw_bytes_per_s=gpu.mem_bw_bytes_per_s * serving.attention_bw_efficiency * tp,
        flops_per_s=(peak_flops_per_s(gpu, p, fp16_accumulate=bool(serving.fp16_accumulate))
                     * compute_efficiency(serving, p) * tp),
        layer_gap_s=serving.layer_gap_s + quant_s,
        launch_per_layer_s=(serving.launch_per_layer_s + quant_launch_s) * cpu,
        step_overhead_s=serving.step_overhead_s * cpu,
        prefill_overhead_s=(serving.prefill_overhead_s or 0.0) * cpu,
        graph_max_context_tokens=(np.inf if serving.graph_max_context_tokens is None
                                  else serving.graph_max_context_tokens),
        eager_launch_per_layer_s=((serving.eager_launch_per_layer_s or 0.0) + quant_s) * cpu,
        allreduce_s_per_layer=ar_fixed,
        allreduce_s_per_token_layer=ar_per_token,
        idle_w=gpu.idle_w * tp,
        tdp_w=gpu.tdp_w * tp,
        decode_power_fraction=serving.decode_power_fraction,
        prefill_power_fraction=serving.prefill_power_fraction,
        wait_power_fraction=gpu.wait_power_fraction,
        tp=tp,
        host_weight_bytes=host,
        host_link_bytes_per_s=(np.inf if tp_link is None
                               else tp_link.effective_bytes_per_s * tp),
        prompt_copy_min_tokens=float(copy_min) if copied and copy_min is not None else np.inf,
        prompt_copy_bytes=(body * (p.weight_bytes_per_param + COPY_BYTES_PER_WEIGHT)
                           if copied else 0.0),
        prompt_copy_read_bytes=(body * (COPY_BYTES_PER_WEIGHT - p.weight_bytes_per_param)
                                if copied else 0.0),
        prompt_copy_flops_per_s=(
            peak_flops_per_s(gpu, replace(p, compute="fp16"),
                             fp16_accumulate=bool(serving.fp16_accumulate))
            * compute_efficiency(serving, p) * tp if copied else 0.0),
        scores_bytes_per_pair=(shape.layers_run(model) * model.num_attention_heads
                               * (serving.unfused_attention_bytes_per_score or 0.0)),
        knee_exponent=bt.knee_exponent,
        kv_bw_many_bytes_per_s=(gpu.mem_bw_bytes_per_s * bt.attention_bw_efficiency_many * tp
                                if bt.attention_bw_efficiency_many is not None else 0.0),
        sequence_overhead_s=bt.sequence_overhead_s * cpu,
        kv_power_fraction=(np.nan if bt.kv_power_fraction is None else bt.kv_power_fraction),
    )


def dequantises(gpu: GpuSpec, p: Precision) -> bool:
    """The GEMMs dequantise stored weights on the fly: weight-only schemes (w8a16, w4a16,
    GGUF blocks), and FP8 on a GPU without FP8 tensor cores (weight-only FP8 kernels). Native
    FP8 and INT8 W8A8 GEMMs read their operands as stored."""
    if p.compute == "fp8":
        return gpu.fp8_flops_per_s is None
    return p.weight_bits < 16 and p.activation_bits == 16


def compute_efficiency(serving: GpuServingSpec, p: Precision) -> float:
    """Share of the tensor peak the profile's prefill GEMMs reach at this precision."""
    if p.compute == "fp8" and serving.fp8_compute_efficiency is not None:
        return serving.fp8_compute_efficiency
    return serving.compute_efficiency


def stack(costs: list[GpuCost]) -> GpuCost:
    """Many combinations as one GpuCost of arrays (for vectorised sweeps)."""
    return GpuCost(**{
        f.name: np.array([getattr(c, f.name) for c in costs], dtype=float) for f in fields(GpuCost)
    })


@dataclass(frozen=True)
class ForwardTime:
    """One forward pass, itemised (seconds). total = max(gpu_side, cpu_side) + offload +
    step_overhead."""

    memory_s: F64
    compute_s: F64
    roofline_s: F64
    gpu_side_s: F64  # time the GPU executes kernels (roofline + gaps + TP communication)
    total_s: F64
    offload_s: F64  # offloaded weights over the host link (0 without offload)
    # KV share of the DRAM streaming x (1 - 1/s): the decode power's batch term (0 at s = 1)
    batched_kv_share: F64 | float = 0.0

    @property
    def busy_fraction(self) -> F64:
        """Share of the pass during which the GPU runs kernels (drives power)."""
        return np.minimum(self.gpu_side_s / self.total_s, 1.0)

    @property
    def overhead_s(self) -> F64:
        return self.total_s - self.roofline_s - self.offload_s

    @property
    def bound(self) -> NDArray[np.str_]:
        """'memory', 'compute' or 'overhead': the largest of the three parts (offloaded
        weights streamed over the host link count as memory)."""
        parts = np.stack(np.broadcast_arrays(self.memory_s + self.offload_s, self.compute_s,
                                             self.overhead_s))
        return np.array(["memory", "compute", "overhead"])[np.argmax(parts, axis=0)]


def _pass(c: GpuCost, tokens: F64, kv_tokens: F64, pairs: F64, heads: F64, longest: F64,
          seqs: F64) -> ForwardTime:
    """One forward pass from its totals: new tokens (the GEMMs' rows), KV tokens read, query-key
    pairs of attention, LM-head positions, the longest sequence (whether the captured graphs
    cover it) and the sequences in it (above 1: the batch terms). Every pass is priced here."""
    kv_bytes = c.kv_bytes_per_token * kv_tokens
    flops = (c.linear_flops_per_token * tokens + c.head_flops_per_position * heads
             + c.attn_flops_per_pair * pairs)
    copied = tokens >= c.prompt_copy_min_tokens  # dequantised to a 16-bit copy first
    weights = c.weight_bytes + np.where(copied, c.prompt_copy_read_bytes, 0.0)
    many = np.asarray(seqs) > 1
    kv_bw = kv_bandwidth(c.kv_bw_bytes_per_s, c.kv_bw_many_bytes_per_s, seqs)
    kv_s = kv_bytes / kv_bw
    mem = weights / c.mem_bw_bytes_per_s + kv_s
    comp = flops / np.where(copied, c.prompt_copy_flops_per_s, c.flops_per_s)
    # the knee, no worse than the sequences one after another: max(mem + (s-1) w, comp)
    cap = np.maximum(mem + (np.asarray(seqs) - 1.0) * weights / c.mem_bw_bytes_per_s, comp)
    roof = np.where(many, np.minimum(soft_max(mem, comp, c.knee_exponent), cap),
                    np.maximum(mem, comp))
    comm = c.layers * (c.allreduce_s_per_layer + c.allreduce_s_per_token_layer * tokens)
    copy_s = np.where(copied, c.prompt_copy_bytes / c.mem_bw_bytes_per_s, 0.0)
    # an unfused attention's score matrix: written, converted and soft-maxed by kernels of
    # their own between its two GEMMs, so in series with the roofline, at the streaming share
    scores_s = c.scores_bytes_per_pair * pairs / c.mem_bw_bytes_per_s
    gpu_side = roof + copy_s + scores_s + c.layers * c.layer_gap_s + comm
    eager = longest > c.graph_max_context_tokens  # beyond the captured graphs' context
    cpu_side = c.layers * np.where(eager, c.eager_launch_per_layer_s, c.launch_per_layer_s)
    offload = np.asarray(c.host_weight_bytes / np.asarray(c.host_link_bytes_per_s, dtype=float))
    total = (np.maximum(gpu_side, cpu_side) + offload + c.step_overhead_s
             + c.sequence_overhead_s * np.maximum(np.asarray(seqs) - 1.0, 0.0))
    kv_share = np.divide(kv_s, mem, out=np.zeros(np.broadcast(kv_s, mem).shape), where=mem > 0)
    many_share = 1.0 - 1.0 / np.maximum(np.asarray(seqs, dtype=float), 1.0)
    return ForwardTime(np.asarray(mem), np.asarray(comp), np.asarray(roof),
                       np.asarray(gpu_side), np.asarray(total), offload,
                       np.asarray(kv_share * many_share))


def forward(
    c: GpuCost, n_new: ArrayLike, ctx: ArrayLike, *, head_positions: ArrayLike = 1,
    batch: ArrayLike = 1,
) -> ForwardTime:
    """One forward pass of `batch` sequences, each of n_new tokens after ctx cached tokens
    (head_positions per sequence)."""
    n = np.asarray(n_new, dtype=float)
    k = np.asarray(ctx, dtype=float)
    b = np.asarray(batch, dtype=float)
    return _pass(c, n * b, b * (k + n), b * (n * k + n * (n + 1) / 2),
                 b * np.asarray(head_positions, dtype=float), k + n, b)


def iteration(c: GpuCost, decodes: ArrayLike, decode_ctx: ArrayLike, prefill_tokens: ArrayLike,
              prefill_ctx: ArrayLike = 0, prefill_chunks: ArrayLike = 1) -> ForwardTime:
    """One continuous-batching iteration as one forward pass (vLLM, Sarathi-Serve's chunked
    prefill): `decodes` sequences each gain a token after decode_ctx cached tokens (their mean
    context), and prefill_tokens prompt tokens, split evenly over prefill_chunks sequences
    each after prefill_ctx cached tokens, run in the same pass (a chunk attends to its own
    sequence only), plus the profile's per-call prefill cost where it holds a prompt. With no
    prefill it is forward(c, 1, decode_ctx, batch=decodes); with no decodes and one chunk,
    prefill_s(c, prefill_tokens, prefill_ctx)."""
    b = np.asarray(decodes, dtype=float)
    kd = np.asarray(decode_ctx, dtype=float)
    n = np.asarray(prefill_tokens, dtype=float)
    kp = np.asarray(prefill_ctx, dtype=float)
    on = np.where(n > 0, 1.0, 0.0)
    m = np.maximum(np.asarray(prefill_chunks, dtype=float), 1.0) * on
    per = np.where(n > 0, n / np.maximum(m, 1.0), 0.0)  # tokens of each chunk
    ft = _pass(c, b + n, b * (kd + 1) + m * kp + n,
               b * (kd + 1) + m * (per * kp + per * (per + 1) / 2), b + m,
               np.maximum(np.where(b > 0, kd + 1, 0.0), np.where(n > 0, kp + per, 0.0)), b + m)
    return replace(ft, total_s=np.asarray(ft.total_s + on * c.prefill_overhead_s))


def decode_token_s(c: GpuCost, ctx: ArrayLike, *, batch: ArrayLike = 1) -> F64:
    """Seconds of one decode step: each of `batch` sequences, its context holding ctx tokens,
    gains one token."""
    return forward(c, 1, ctx, batch=batch).total_s


def decode_s(c: GpuCost, n: ArrayLike, ctx: ArrayLike, *, batch: ArrayLike = 1) -> F64:
    """Seconds to decode n tokens after ctx tokens, for each of `batch` sequences at once:
    the per-step time is affine in the context within one regime, so the sum over the n steps
    is n times the time at the mean context ctx + (n - 1) / 2 (exact within a regime)."""
    n = np.asarray(n, dtype=float)
    return n * decode_token_s(c, np.asarray(ctx, dtype=float) + np.maximum(n - 1, 0) / 2,
                              batch=batch)


def prefill_s(c: GpuCost, n_new: ArrayLike, ctx: ArrayLike = 0, *, all_positions: bool = False,
              batch: ArrayLike = 1) -> F64:
    """Seconds to prefill n_new tokens after ctx cached tokens, for each of `batch` sequences
    in one forward pass, plus the profile's fixed per-call cost (0 if n_new = 0).
    all_positions: the head runs on every position (a reward model scoring each token)."""
    n = np.asarray(n_new, dtype=float)
    t = forward(c, n, ctx, head_positions=n if all_positions else 1, batch=batch).total_s
    return np.where(n > 0, t + c.prefill_overhead_s, 0.0)


# ---------------------------------------------------------------------------------- memory


def memory_needed_bytes(
    model: ModelSpec, p: Precision, context_tokens: ArrayLike, *, tp: int = 1,
    offload_fraction: float = 0.0,
) -> F64:
    """Per-GPU bytes: weights and the KV cache of context_tokens, split over tp GPUs, less the
    offloaded share of the streamed weights (held in host memory)."""
    host = shape.streamed_weight_bytes(model, p) * offload_fraction
    total = (shape.weight_bytes(model, p) - host
             + shape.kv_bytes(model, p.kv_bits, context_tokens))
    return np.asarray(total / tp)


def fits(
    model: ModelSpec, gpu: GpuSpec, p: Precision, serving: GpuServingSpec,
    context_tokens: ArrayLike, *, tp: int = 1, offload_fraction: float = 0.0,
) -> NDArray[np.bool_]:
    """Weights (their on-device share) + KV at context_tokens fit in the memory the framework
    may use.

    Usable = memory x memory_utilization - runtime reserve (CUDA context, activations).
    """
    usable = gpu.memory_bytes * serving.memory_utilization - serving.runtime_reserve_bytes
    return memory_needed_bytes(model, p, context_tokens, tp=tp,
                               offload_fraction=offload_fraction) <= usable


def min_tp(model: ModelSpec, gpu: GpuSpec, p: Precision, serving: GpuServingSpec,
           context_tokens: int, *, max_tp: int = 8, offload_fraction: float = 0.0) -> int | None:
    """Smallest power-of-two TP degree (dividing the KV heads) at which the model fits."""
    tp = 1
    while tp <= max_tp:
        if model.num_kv_heads % tp == 0 and bool(fits(model, gpu, p, serving, context_tokens,
                                                      tp=tp, offload_fraction=offload_fraction)):
            return tp
        tp *= 2
    return None


# ---------------------------------------------------------------------------- placed model


@dataclass(frozen=True)
class GpuPlacement(ModelMemory):
    """A model on tp GPUs of one kind under a serving profile (implements
    dse.devices.protocol.Placement)."""

    model: ModelSpec
    device: GpuSpec
    precision: Precision
    serving: str  # the GPU serving profile's name
    tp: int
    context_tokens: int
    cost: GpuCost
    prefix_caching: bool
    usable_memory_bytes: float  # per GPU: memory x memory_utilization - runtime reserve, >= 0
    offload_fraction: float = 0.0  # share of the streamed weights held in host memory

    kind: ClassVar[str] = "gpu"

    # ---- time
    def decode_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        check_batch(batch)
        return decode_s(self.cost, n, ctx, batch=batch)

    def decode_token_s(self, ctx: ArrayLike, *, batch: int = 1) -> F64:
        check_batch(batch)
        return decode_token_s(self.cost, ctx, batch=batch)

    def prefill_s(self, n_new: ArrayLike, ctx: ArrayLike = 0, *, all_positions: bool = False,
                  batch: int = 1) -> F64:
        check_batch(batch)
        return prefill_s(self.cost, n_new, ctx, all_positions=all_positions, batch=batch)

    def absorb_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        """A GPU ingests streamed tokens in one prefill pass."""
        check_batch(batch)
        return self.prefill_s(n, ctx, batch=batch)

    def iteration_s(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                    prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                    prefill_chunks: ArrayLike = 1) -> F64:
        """One continuous-batching iteration: decodes and prompt chunks in one pass."""
        return iteration(self.cost, decodes, decode_ctx, prefill_tokens, prefill_ctx,
                         prefill_chunks).total_s

    def iteration_power_w(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                          prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                          prefill_chunks: ArrayLike = 1) -> F64:
        """Power over that iteration: the prefill state's share of the dynamic range where
        the pass holds more prompt tokens than decodes, the decode state's otherwise, at the
        pass's busy fraction."""
        ft = iteration(self.cost, decodes, decode_ctx, prefill_tokens, prefill_ctx,
                       prefill_chunks)
        pre = np.asarray(prefill_tokens, dtype=float) > np.asarray(decodes, dtype=float)
        return np.where(pre, gpu_power_w(self.cost, "prefill", ft.busy_fraction),
                        gpu_power_w(self.cost, "decode", ft.busy_fraction,
                                    ft.batched_kv_share))

    def decode_bound(self, ctx: float) -> tuple[float, Bound]:
        ft = forward(self.cost, 1, ctx)
        return float(ft.roofline_s), _bound(ft)

    def prefill_bound(self, n_new: int) -> Bound:
        return _bound(forward(self.cost, n_new, 0))

    # ---- power
    def power_w(self, state: PowerState, ctx: ArrayLike = 0, n_new: ArrayLike = 1, *,
                batch: int = 1) -> F64:
        """All tp GPUs: idle, or the state's share of the dynamic range while kernels run."""
        check_batch(batch)
        if state == "idle":
            return gpu_power_w(self.cost, "idle")
        ft = forward(self.cost, n_new if state == "prefill" else 1, ctx, batch=batch)
        return gpu_power_w(self.cost, state, ft.busy_fraction, ft.batched_kv_share)

    # ---- peaks
    @property
    def peak_bytes_per_s(self) -> float:
        return self.device.mem_bw_bytes_per_s * self.tp

    @property
    def peak_ops_per_s(self) -> float:
        return peak_flops_per_s(self.device, self.precision) * self.tp

    @property
    def effective_bytes_per_s(self) -> float:
        return float(self.cost.mem_bw_bytes_per_s)

    @property
    def effective_ops_per_s(self) -> float:
        return float(self.cost.flops_per_s)

    @property
    def clock_hz(self) -> float | None:
        return None

    # ---- memory
    @property
    def weight_bits(self) -> float:
        return self.precision.weight_bits

    @property
    def kv_bits(self) -> float:
        return self.precision.kv_bits

    @property
    def memory_needed_bytes(self) -> float:
        """Per GPU: weights and KV at context_tokens, split over tp, less the offloaded weights
        (they live in host memory)."""
        return float(super().memory_needed_bytes - self.cost.host_weight_bytes / self.tp)

    @property
    def memory_bytes(self) -> float:
        return self.device.memory_bytes

    def resources(self) -> Mapping[str, tuple[float, float]]:
        return {"memory_bytes": (self.memory_needed_bytes, self.usable_memory_bytes)}

    def memory_infeasibility(self) -> list[str]:
        if self.memory_needed_bytes <= self.usable_memory_bytes:
            return []
        offload = (f", {self.offload_fraction:g} of the streamed weights in host memory"
                   if self.offload_fraction else "")
        if self.usable_memory_bytes <= 0:  # a board too small for the serving stack itself
            return [f"{self.device.name} has no usable memory: {self.serving}'s utilization and "
                    f"reserve take all its {self.device.memory_bytes / 1e9:.2f} GB"]
        return [f"{self.model.name} needs {self.memory_needed_bytes / 1e9:.2f} GB per GPU "
                f"(weights + KV for {self.context_tokens} tokens, tp={self.tp}{offload}) but "
                f"{self.device.name} offers {self.usable_memory_bytes / 1e9:.2f} GB usable"]

    def infeasibility(self) -> list[str]:
        return self.shared_infeasibility() + self.memory_infeasibility()


def _bound(ft: ForwardTime) -> Bound:
    return cast(Bound, str(ft.bound))


def place(cat: Catalog, model: ModelSpec, board: GpuSpec, *, precision_name: str,
          software: str, context_tokens: int, tp: int | None,
          knobs: Mapping[str, object], kv_precision: str | None = None,
          offload_fraction: float = 0.0) -> GpuPlacement:
    """The GPU kind's builder. tp defaults to the smallest power of two that fits (1 if none
    does; `infeasibility` then says why). GPUs have no build knobs. kv_precision: the KV
    cache's precision (shape.KV_PRECISIONS; None: 16-bit); offload_fraction: the share of the
    streamed weights held in host memory and streamed over the board's host link."""
    p = with_kv_precision(precision(precision_name), kv_precision)
    s = cat.serving(software)
    if tp is None:
        tp = min_tp(model, board, p, s, context_tokens, offload_fraction=offload_fraction) or 1
    link = cat.link(board.host_link)
    cost = gpu_cost(model, board, p, s, tp=tp, tp_link=link, offload_fraction=offload_fraction)
    usable = max(0.0, board.memory_bytes * s.memory_utilization - s.runtime_reserve_bytes)
    return GpuPlacement(model, board, p, software, tp, context_tokens, cost,
                        prefix_caching=s.prefix_caching, usable_memory_bytes=usable,
                        offload_fraction=offload_fraction)
