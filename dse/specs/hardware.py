"""Hardware specs: host links, GPUs, FPGA boards, GPU serving profiles and FPGA engines.

Each field carries its schema (`spec_field`: TOML key, range, help); `dse.specs.schema`
derives the checker from it. TOML keys name their unit (`memory_GB`, `clock_MHz`); the
attributes hold SI values (`memory_bytes`, `clock_min_hz`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dse.errors import SpecError
from dse.specs.schema import Spec, frac, nonneg, pos, register_kind, spec_field

GPU_GENERATIONS = ("volta", "ampere", "ada", "hopper", "blackwell")
# A generation no serving profile has published points for takes the per-generation values of
# the nearest fitted one. Assumption: GeForce Blackwell (sm_120, GDDR7; the only Blackwell board
# shipped, rtx-5090) keeps Ada's register-fed HMMA tensor path and GDDR memory system rather than
# datacenter Blackwell's TMEM/tcgen05 path, so Ada's fitted bandwidth share and overheads stand in.
NEAREST_FITTED_GENERATION = {"blackwell": "ada"}


@dataclass(frozen=True)
class LinkSpec(Spec):
    generation: int = pos(help="PCIe generation")
    lanes: int = pos(help="PCIe lanes")
    theoretical_bytes_per_s: float = pos("theoretical_GBps", help="signalling rate, GB/s")
    effective_bytes_per_s: float = pos("effective_GBps", help="measured payload rate, GB/s")
    latency_s: float = nonneg("latency_us", help="per-transfer latency, us")


@dataclass(frozen=True)
class GpuSpec(Spec):
    memory_bytes: float = pos("memory_GB", help="device memory, GB")
    memory_kind: str = spec_field(help="HBM2e, GDDR6X, LPDDR5, ...")
    mem_bw_bytes_per_s: float = pos("mem_bw_GBps", help="peak memory bandwidth, GB/s")
    bf16_flops_per_s: float = pos("bf16_TFLOPS", help="dense BF16 tensor peak, TFLOP/s")
    fp16_flops_per_s: float = pos("fp16_TFLOPS", help="dense FP16 tensor peak, TFLOP/s")
    int8_ops_per_s: float = pos("int8_TOPS", help="dense INT8 tensor peak, TOP/s")
    fp8_flops_per_s: float | None = pos("fp8_TFLOPS", help="dense FP8 tensor peak with FP32 "
                                        "accumulate, TFLOP/s (absent: no FP8 tensor cores)")
    fp16_acc16_flops_per_s: float | None = pos(
        "fp16_acc16_TFLOPS", help="dense FP16 tensor peak with FP16 accumulate, TFLOP/s "
        "(absent: the same as fp16_TFLOPS; GeForce parts run twice as fast)")
    generation: str = spec_field(choices=GPU_GENERATIONS,
                                 help="GPU architecture generation (serving profiles may "
                                 "differ by it)")
    tdp_w: float = pos("tdp_W", help="board power limit, W")
    idle_w: float = nonneg("idle_W", help="idle power, W")
    host_link: str = spec_field(help="the link kind it attaches with (boards/links)")
    nvlink_bidir_bytes_per_s: float = nonneg("nvlink_bidir_GBps", help="0: no NVLink")
    unified_memory: bool = spec_field(help="memory shared with the host CPU (Jetson)")
    host_cpu_slowdown: float = pos(
        help="the host CPU's single-thread time relative to the calibration host (the servers "
        "of the published points, 1): scales every stack's CPU-side work (launches, per-step "
        "and per-prefill host time); a system may name its own host "
        "(`<role>_host_cpu_slowdown`)")
    host_stack_slowdown: Mapping[str, float] | None = pos(
        help="per serving profile: a further factor on that stack's CPU-side work on this "
        "board beyond CPU speed, where the stack's points on the board pin one (a build of "
        "the stack for this platform; absent: 1, CPU speed alone)")
    wait_power_fraction: float = nonneg(
        hi=1.0, help="share of the decode dynamic power the GPU keeps drawing while it waits "
        "on the host between kernels (launch-bound decode: the gaps are microseconds, far shorter "
        "than the power manager's clock and voltage steps, so it stays in its active state)")
    list_price_usd: float = nonneg(help="list price, USD")

    kind = "gpu"
    is_board = True  # a device a role can be placed on (Catalog.device)

    def cpu_slowdown(self, serving: str) -> float:
        """The factor on a serving profile's CPU-side terms on this board: the host CPU's speed
        times the stack's own factor on this board (host_stack_slowdown, 1 where absent)."""
        return self.host_cpu_slowdown * (self.host_stack_slowdown or {}).get(serving, 1.0)


@dataclass(frozen=True)
class FpgaSpec(Spec):
    part: str = spec_field(help="device part number")
    vitis_platform: str = spec_field(help="Vitis platform name ('' when none)")
    family: str = spec_field(choices=("ultrascale+", "versal"))
    process_nm: int = pos()
    hbm_bytes: float = nonneg("hbm_GB", help="0: no HBM (the decoder streams from DDR)")
    hbm_pseudo_channels: int = nonneg()
    hbm_channel_bytes_per_s: float = nonneg("hbm_channel_GBps")
    hbm_bytes_per_s: float = nonneg("hbm_GBps")
    hbm_measured_bytes_per_s: float = nonneg("hbm_measured_GBps", help="0: not measured")
    axi_port_bits: int = pos()
    ddr_bytes: float = nonneg("ddr_GB")
    ddr_channels: int = nonneg()
    ddr_bytes_per_s: float = nonneg("ddr_GBps")
    lut: int = pos()
    ff: int = pos()
    dsp: int = pos()
    dsp_kind: str = spec_field(choices=("dsp48e2", "dsp58"))
    int8_macs_per_dsp: int = pos()
    bram36: int = nonneg()
    uram: int = nonneg()
    clock_min_hz: float = pos("clock_min_MHz")
    clock_max_hz: float = pos("clock_max_MHz")
    clock_default_hz: float = pos("clock_default_MHz", help="the build clock when a system "
                                  "gives none")
    static_w: float = nonneg("static_W")
    max_w: float = pos("max_W")
    host_link: str = spec_field(help="the link kind it attaches with (boards/links)")
    list_price_usd: float = nonneg()

    kind = "fpga"
    is_board = True

    @property
    def uses_hbm(self) -> bool:
        return self.hbm_bytes > 0

    @property
    def weight_memory_bytes(self) -> float:
        """Memory that holds weights and KV: HBM where the board has it, else DDR."""
        return self.hbm_bytes if self.uses_hbm else self.ddr_bytes

    @property
    def memory_channels(self) -> int:
        return self.hbm_pseudo_channels if self.uses_hbm else self.ddr_channels


@dataclass(frozen=True)
class GpuServingSpec(Spec):
    """A GPU serving framework's batch-1 behaviour (vLLM with CUDA graphs, eager, HF, ...).

    Step time = max(roofline / efficiency + layers * layer_gap, layers * launch_per_layer)
                + step_overhead; see dse.devices.gpu. `variants` holds the values that differ
    on one GPU generation (`[by_generation.hopper]` in the file); `for_generation` applies them.
    """

    mem_bw_efficiency: float = frac()
    attention_bw_efficiency: float = frac()
    compute_efficiency: float = frac()
    decode_power_fraction: float = frac()
    prefill_power_fraction: float = frac()
    layer_gap_s: float = nonneg("layer_gap_us")
    launch_per_layer_s: float = nonneg("launch_per_layer_us")
    step_overhead_s: float = nonneg("step_overhead_us")
    prefix_caching: bool = spec_field()
    cuda_graphs: bool = spec_field()
    memory_utilization: float = frac(help="fraction of device memory the framework may use")
    runtime_reserve_bytes: float = nonneg("runtime_reserve_GB")
    allreduce_latency_s: float = nonneg(
        "allreduce_latency_us", help="latency of one ring step of a tensor-parallel "
        "all-reduce, us (a ring all-reduce over tp GPUs takes 2 (tp - 1) steps)")
    pcie_allreduce_latency_s: float | None = nonneg(
        "pcie_allreduce_latency_us", help="ring-step latency of an all-reduce between GPUs "
        "without NVLink (over PCIe, often staged through the host), us (absent: "
        "allreduce_latency_us)")
    pcie_allreduce_fixed_s: float | None = nonneg(
        "pcie_allreduce_fixed_us", help="fixed cost of one all-reduce between GPUs without "
        "NVLink, whatever the TP degree (launch and host-side synchronisation), us, on top of "
        "its 2 (tp - 1) ring steps (absent: 0)")
    prefill_overhead_s: float | None = nonneg(
        "prefill_overhead_us", help="fixed host and launch cost of one prefill call, us "
        "(absent: 0)")
    fp8_compute_efficiency: float | None = frac(
        help="share of the FP8 tensor peak reached in prefill (absent: compute_efficiency)")
    quantized_layer_overhead_s: float | None = nonneg(
        "quantized_layer_overhead_us", help="extra cost per layer of weight-only quantised "
        "linear layers (dequantisation kernels), us, on the GPU side and, for an eager "
        "stack, on the CPU's launch side (absent: 0)")
    graph_max_context_tokens: int | None = pos(
        help="longest context a captured CUDA graph covers; a longer step runs eager "
        "(vLLM's max_context_len_to_capture; absent: graphs at every length)")
    eager_launch_per_layer_s: float | None = nonneg(
        "eager_launch_per_layer_us", help="per-layer CPU launch cost of a step that runs "
        "eager beyond graph_max_context_tokens, us")
    fp8_extra_kernels: bool | None = spec_field(
        help="FP8 linear layers run extra per-layer kernels (activation quantisation, block "
        "scales) and so pay quantized_layer_overhead even on FP8 tensor cores (absent: false)")
    quantizes_head: bool | None = spec_field(
        help="the stack's quantised models quantise the LM head and token table like the "
        "body (MLC-LLM, gpt-fast); absent: false, they stay 16-bit (GPTQ/AWQ checkpoints)")
    fp16_accumulate: bool | None = spec_field(
        help="FP16 GEMMs accumulate in FP16 (llama.cpp's cuBLAS path, ExLlamaV2's "
        "cublasHgemm; absent: false)")
    prompt_dequantize_min_tokens: int | None = pos(
        help="a prompt pass of at least this many tokens with weight-only quantised weights "
        "first dequantises them to a 16-bit copy (reading the stored bytes, writing 2 per "
        "weight), then runs its GEMMs on the copy, in FP16 (llama.cpp before PR #8075 of June "
        "2024: 33, above MMQ_MAX_BATCH_SIZE; ExLlamaV2: 33, above MAX_Q_GEMM_ROWS); absent: "
        "quantised prompts run on their own kernels")
    unfused_attention_bytes_per_score: float | None = nonneg(
        help="bytes each attention score (one query, one key, one head, one layer) moves "
        "through GPU memory where the stack's attention is not fused: the score matrix is "
        "written, converted and soft-maxed between separate kernels, at the weight-streaming "
        "bandwidth (llama.cpp without flash attention: 24, ggml_cuda_mul_mat_batched_cublas "
        "and ggml_cuda_soft_max; absent: 0, a fused flash-attention kernel keeps the scores "
        "on chip)")
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    kind = "gpu-serving"

    def for_generation(self, generation: str) -> GpuServingSpec:
        """This profile with its values for one GPU generation applied (a generation without
        values of its own takes those of NEAREST_FITTED_GENERATION, if it names one)."""
        over = self.variants.get(generation)
        if over is None and generation in NEAREST_FITTED_GENERATION:
            over = self.variants.get(NEAREST_FITTED_GENERATION[generation])
        return replace(self, **over) if over else self


@dataclass(frozen=True)
class FpgaEngineSpec(Spec):
    """A streaming FPGA decoder architecture (FlexLLM-style) and its achieved efficiency."""

    achieved_efficiency: float = frac()
    hbm_efficiency: float = frac()
    fill_cycles_per_layer: float = nonneg()
    lm_head_fill_cycles: float = nonneg()
    prefill_token_parallel: int = pos()
    dsp_per_mac_lane_overhead: float = nonneg()
    lut_per_mac_lane: float = nonneg()
    base_lut: float = nonneg()
    base_dsp: float = nonneg()
    bram36_per_channel: float = nonneg()
    uram_base: float = nonneg()
    dynamic_w_per_ghz_kdsp: float = nonneg()
    memory_pj_per_bit: float = nonneg()
    # What distinguishes one published design from another, as physical quantities. Each is
    # optional; absent means FlexLLM's behaviour (the build's bit widths, dense attention,
    # FlexLLM's decode parallelism, the board's default clock).
    weight_bits_per_param: float | None = pos(
        hi=32, help="weight bits streamed per parameter after sparsity and quantisation (absent: "
        "the precision's weight bits)")
    attention_density: float | None = pos(
        hi=1, help="fraction of the cached keys/values a decoded token reads (sparse attention; "
        "absent: 1, dense)")
    mac_lanes: int | None = pos(help="INT8 MACs per cycle of the design's decode engine (absent: "
                                "FlexLLM's 2048)")
    clock_hz: float | None = pos("clock_MHz", help="the design's kernel clock (absent: the "
                                 "board's default clock)")
    axi_port_bits: int | None = pos(
        help="data width of the memory port the design streams weights through, per memory "
        "channel (an HLS kernel's m_axi port; absent: the board's axi_port_bits)")
    memory_channels: int | None = pos(
        help="memory channels (DDR banks, HBM pseudo-channels) the design streams from by "
        "default (an HLS kernel whose one m_axi bundle maps to one bank: 1; absent: every "
        "channel of the board)")
    prefill_efficiency: float | None = frac(
        help="achieved share of the prefill bound (MACs or bytes), fitted to the design's own "
        "prefill times; prefill is compute-bound where decode is memory-bound, so it need not "
        "equal achieved_efficiency (absent: achieved_efficiency)")

    kind = "fpga-engine"


def _check_gpu(path: object, v: dict[str, Any]) -> None:
    """The idle power lies below the board's power limit (the power model's dynamic range,
    tdp_W - idle_W, is positive)."""
    if not v["idle_w"] < v["tdp_w"]:
        raise SpecError(path, "idle_W", f"must be below tdp_W ({v['tdp_w']:g} W), got "
                        f"{v['idle_w']:g}")


def _check_fpga(path: object, v: dict[str, Any]) -> None:
    """The memory the decoder streams from must have channels and bandwidth; clocks ordered;
    the static power lies below the board's maximum."""
    if not v["static_w"] < v["max_w"]:
        raise SpecError(path, "static_W", f"must be below max_W ({v['max_w']:g} W), got "
                        f"{v['static_w']:g}")
    if v["hbm_bytes"] > 0:
        need = (("hbm_pseudo_channels", "hbm_pseudo_channels"),
                ("hbm_channel_GBps", "hbm_channel_bytes_per_s"), ("hbm_GBps", "hbm_bytes_per_s"))
        what = "a board with HBM (hbm_GB > 0)"
    else:
        need = (("ddr_GB", "ddr_bytes"), ("ddr_channels", "ddr_channels"),
                ("ddr_GBps", "ddr_bytes_per_s"))
        what = "a board without HBM (hbm_GB = 0) streams from DDR, so it"
    for toml_key, attr in need:
        if not v[attr] > 0:
            raise SpecError(path, toml_key, f"must be > 0 for {what}")
    lo, hi, default = v["clock_min_hz"], v["clock_max_hz"], v["clock_default_hz"]
    if not lo <= default <= hi:
        raise SpecError(path, "clock_default_MHz", f"must lie in clock_min_MHz..clock_max_MHz "
                        f"({lo / 1e6:g}..{hi / 1e6:g}), got {default / 1e6:g}")


register_kind("link", LinkSpec)
register_kind("gpu", GpuSpec, check=_check_gpu)
register_kind("fpga", FpgaSpec, check=_check_fpga)
register_kind("gpu-serving", GpuServingSpec, extra_tables=("calibration",),
              variants=("by_generation", GPU_GENERATIONS))
register_kind("fpga-engine", FpgaEngineSpec, extra_tables=("calibration",))
