"""FPGA streaming decoder (FlexLLM-style): decode, prefill, absorb, resources, feasibility, power.

Per decoded token (seconds):

    bw_eff  = min(peak x e_hbm, channels x channel_peak x e_hbm, channels x axi_bytes x clock)
    t_mem   = (weights + KV(ctx)) / bw_eff
    t_mac   = MACs(ctx) / (mac_lanes x clock)
    t       = max(t_mem, t_mac) / achieved_efficiency + (layers x fill + lm_head_fill) / clock

e_hbm is the board's measured / theoretical HBM bandwidth where published (Shuhai on U280),
else the engine's. Each engine (boards/engines/*.toml) is one published design: its
achieved_efficiency is fitted to that design's own measurements (dse/validation/fpga.py), and
what distinguishes it physically is data too: the weight bits it streams per parameter after
sparsity and quantisation (weights = params x weight_bits_per_param / 8), the fraction of the KV
cache a token reads (KV bytes and attention MACs x attention_density), its decode MAC lanes and
its clock. Published FPGA decoders run far below the HBM roofline, so a model that stops at
bytes / bandwidth would predict speed-ups the HeteroReason paper does not see.

absorb(n, ctx) is shadow synchronisation: the draft ingests n target tokens one by one as they
stream in, a forward pass per token without the LM head (logits are discarded).

A batch of B sequences streams the weights once per pass for all of them (B width samples, or
B requests, share each weight read), reads B KV caches and does B tokens' MACs on the lanes;
the pipeline fill is paid once per pass. Batch 1 is the single-stream model exactly; the
engines' efficiencies are fitted at batch 1 (no published FPGA decoder measures a batch), so a
batch's time is an extrapolation of the same physics. The KV caches of the batch must fit the
board's memory beside the weights (`max_batch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from dse.core.arrays import F64, Num
from dse.devices import shape
from dse.devices.protocol import (
    Bound,
    ModelMemory,
    PowerState,
    check_batch,
    context_infeasibility,
)
from dse.devices.shape import Precision, precision
from dse.specs import Catalog, FpgaEngineSpec, FpgaSpec, ModelSpec

VALID_BITS = (4, 8, 16, 32)  # activation and KV widths a build may use
# Weight bits per parameter a build may stream: one bit (binary weights) is the least a dense
# weight can be stored in (sparse designs that go below it say so in their engine's
# weight_bits_per_param); 32 is float32. Non-integer widths are averages: ternary 1.58,
# llama.cpp-style block scales (4.5).
WEIGHT_BITS_RANGE = (1.0, 32.0)

# Which precisions an FPGA build supports: (weight bits, activation bits). The sub-4-bit ones
# are how most published FPGA decoders run (FlightLLM ~3.5, TeLLMe ternary 1.58).
FPGA_PRECISIONS: dict[str, tuple[float, int]] = {
    "w8a8": (8, 8), "w4a16": (4, 16), "w8a16": (8, 16), "bf16": (16, 16), "fp16": (16, 16),
    "fp32": (32, 32), "w3a8": (3, 8), "w2a8": (2, 8), "w1.58a8": (1.58, 8)}
# The build knobs a system may set (FpgaBuild fields; the rest follow from the precision).
BUILD_KNOBS = ("clock_hz", "memory_channels", "mac_lanes")


@dataclass(frozen=True)
class FpgaBuild:
    """The build knobs of one FPGA draft engine."""

    board: FpgaSpec
    engine: FpgaEngineSpec
    clock_hz: float
    memory_channels: int  # HBM pseudo-channels (or DDR channels) the decoder streams from
    mac_lanes: int  # INT8 MACs per cycle of the decode GEMV engine
    weight_bits: float = 8  # per parameter, in WEIGHT_BITS_RANGE (1.58: ternary)
    activation_bits: int = 8
    kv_bits: int = 8  # FlexLLM computes attention with int8 K and V (MHA_i8xi8 kernels)
    max_seq_len: int = 4096

    def with_knobs(self, **knobs: object) -> FpgaBuild:
        return replace(self, **knobs)  # type: ignore[arg-type]


# FlexLLM's U280 decode configuration: DEC_QKVO_FFN_W_PARALLEL = 64 weights x
# T_QKVO_FFN_BLOCK_PARALLEL = 32 blocks = 2048 INT8 MACs per cycle
# (Crazy-James26/FlexLLM config_u280_mem_opt_new.h, via shared/reference/hardware-and-models.md).
DEFAULT_MAC_LANES = 2048
URAM_BRAM36 = 8  # one 288 Kb UltraRAM holds what 8 BRAM36 hold (UG573)


def default_build(board: FpgaSpec, engine: FpgaEngineSpec, **knobs: object) -> FpgaBuild:
    """The engine's clock (else the board's default), the engine's memory channels (else every
    channel of the board), the engine's decode parallelism (else FlexLLM's)."""
    build = FpgaBuild(
        board=board,
        engine=engine,
        clock_hz=engine.clock_hz if engine.clock_hz is not None else board.clock_default_hz,
        memory_channels=(board.memory_channels if engine.memory_channels is None
                         else min(engine.memory_channels, board.memory_channels)),
        mac_lanes=engine.mac_lanes if engine.mac_lanes is not None else DEFAULT_MAC_LANES,
    )
    return build.with_knobs(**knobs) if knobs else build


def streamed_weight_bits(b: FpgaBuild) -> float:
    """Bits per weight parameter the decoder stores and streams: the engine's effective figure
    (sparse / mixed-precision designs) where it has one, else the precision's weight bits."""
    e = b.engine.weight_bits_per_param
    return float(b.weight_bits) if e is None else e


def attention_density(engine: FpgaEngineSpec) -> float:
    """Fraction of the cached keys/values one decoded token reads (1: dense attention)."""
    return 1.0 if engine.attention_density is None else engine.attention_density


def hbm_efficiency(board: FpgaSpec, engine: FpgaEngineSpec) -> float:
    """Measured / theoretical bandwidth where published, else the engine's assumption."""
    if board.uses_hbm and board.hbm_measured_bytes_per_s > 0 and board.hbm_bytes_per_s > 0:
        return board.hbm_measured_bytes_per_s / board.hbm_bytes_per_s
    return engine.hbm_efficiency


def axi_port_bits(b: FpgaBuild) -> int:
    """Data width of the port the decoder streams through, per channel: the engine's (an HLS
    kernel's m_axi port) where it names one, else the board's."""
    e = b.engine.axi_port_bits
    return b.board.axi_port_bits if e is None else e


def effective_bw_bytes_per_s(b: FpgaBuild) -> float:
    """Bandwidth the decoder can stream at: memory, per-channel and AXI-port bounds."""
    board = b.board
    eff = hbm_efficiency(board, b.engine)
    if board.uses_hbm:
        peak, ch_peak = board.hbm_bytes_per_s, board.hbm_channel_bytes_per_s
    else:
        peak = board.ddr_bytes_per_s
        ch_peak = board.ddr_bytes_per_s / max(board.ddr_channels, 1)
    ch = b.memory_channels
    return min(peak * eff, ch * ch_peak * eff, ch * axi_port_bits(b) / 8 * b.clock_hz)


@dataclass(frozen=True)
class FpgaCost:
    """Coefficients of one (model, build) pair; fields may be arrays (see `stack`)."""

    layers: Num
    body_weight_bytes: Num  # layers (their active experts) + final norm, streamed per token
    head_weight_bytes: Num
    kv_bytes_per_token: Num
    body_macs_per_token: Num
    head_macs: Num
    attn_macs_per_pair: Num
    bw_bytes_per_s: Num
    macs_per_s: Num
    achieved_efficiency: Num
    prefill_efficiency: Num  # the share of its bound a prefill pass reaches
    layer_fill_s: Num  # all layers, per forward pass
    head_fill_s: Num
    prefill_token_parallel: Num
    static_w: Num
    fabric_w: Num  # dynamic fabric power while the pipeline runs
    memory_j_per_byte: Num


def fpga_cost(model: ModelSpec, b: FpgaBuild) -> FpgaCost:
    wb = streamed_weight_bits(b) / 8
    dens = attention_density(b.engine)
    body_params = shape.active_body_params(model)  # a token streams its active experts only
    res = resources(b)
    return FpgaCost(
        layers=model.num_layers,
        body_weight_bytes=body_params * wb,
        head_weight_bytes=shape.head_matmul_params(model) * wb,
        kv_bytes_per_token=shape.kv_bytes_per_token(model, b.kv_bits) * dens,
        body_macs_per_token=shape.linear_macs_per_token(model),
        head_macs=shape.head_matmul_params(model),
        attn_macs_per_pair=2 * model.num_layers * model.num_attention_heads * model.head_dim
        * dens,
        bw_bytes_per_s=effective_bw_bytes_per_s(b),
        macs_per_s=b.mac_lanes * b.clock_hz,
        achieved_efficiency=b.engine.achieved_efficiency,
        prefill_efficiency=(b.engine.achieved_efficiency if b.engine.prefill_efficiency is None
                            else b.engine.prefill_efficiency),
        layer_fill_s=model.num_layers * b.engine.fill_cycles_per_layer / b.clock_hz,
        head_fill_s=b.engine.lm_head_fill_cycles / b.clock_hz,
        prefill_token_parallel=b.engine.prefill_token_parallel,
        static_w=b.board.static_w,
        fabric_w=fabric_power_w(b, res["dsp"]),
        memory_j_per_byte=b.engine.memory_pj_per_bit * 8e-12,
    )


def stack(costs: list[FpgaCost]) -> FpgaCost:
    return FpgaCost(**{
        f.name: np.array([getattr(c, f.name) for c in costs], dtype=float) for f in fields(FpgaCost)
    })


def token_bounds_s(c: FpgaCost, ctx: ArrayLike, *, with_head: bool = True,
                   batch: ArrayLike = 1) -> tuple[F64, F64]:
    """(memory-bound, MAC-bound) seconds of one decode pass after ctx tokens that gives each
    of `batch` sequences one token: the weights stream once for the whole batch (the
    sequences' tokens share each weight read), each sequence reads its own KV cache, and the
    MAC lanes do every sequence's work."""
    k = np.asarray(ctx, dtype=float) + 1  # keys the new token attends to
    b = np.asarray(batch, dtype=float)
    head = 1.0 if with_head else 0.0
    t_mem = (c.body_weight_bytes + head * c.head_weight_bytes
             + b * c.kv_bytes_per_token * k) / c.bw_bytes_per_s
    t_mac = b * (c.body_macs_per_token + head * c.head_macs + c.attn_macs_per_pair * k) / (
        c.macs_per_s)
    return np.asarray(t_mem), np.asarray(t_mac)


def _token_s(c: FpgaCost, ctx: ArrayLike, *, with_head: bool, batch: ArrayLike = 1) -> F64:
    t_mem, t_mac = token_bounds_s(c, ctx, with_head=with_head, batch=batch)
    fill = c.layer_fill_s + (c.head_fill_s if with_head else 0.0)  # once per pass
    return np.asarray(np.maximum(t_mem, t_mac) / c.achieved_efficiency + fill)


def decode_token_s(c: FpgaCost, ctx: ArrayLike, *, batch: ArrayLike = 1) -> F64:
    """Seconds of one decode step after ctx tokens: one token for each of `batch` sequences."""
    return _token_s(c, ctx, with_head=True, batch=batch)


def decode_s(c: FpgaCost, n: ArrayLike, ctx: ArrayLike, *, batch: ArrayLike = 1) -> F64:
    """n tokens after ctx (each of `batch` sequences): affine in context, so n x time at the
    mean context (exact)."""
    n = np.asarray(n, dtype=float)
    return n * decode_token_s(c, np.asarray(ctx, dtype=float) + np.maximum(n - 1, 0) / 2,
                              batch=batch)


def absorb_s(c: FpgaCost, n: ArrayLike, ctx: ArrayLike, *, batch: ArrayLike = 1) -> F64:
    """Shadow sync: ingest n streamed tokens after ctx, one pass each, no LM head (each of
    `batch` sequences)."""
    n = np.asarray(n, dtype=float)
    mid = np.asarray(ctx, dtype=float) + np.maximum(n - 1, 0) / 2
    return n * _token_s(c, mid, with_head=False, batch=batch)


def prefill_s(c: FpgaCost, n_new: ArrayLike, ctx: ArrayLike = 0, *,
              batch: ArrayLike = 1) -> F64:
    """Prefill n_new tokens after ctx, for each of `batch` sequences, in passes of
    prefill_token_parallel tokens (the batch's tokens fill the passes together); logits of
    each sequence's last token only. Each pass streams the weights once; each sequence reads
    its own KV cache once per pass over its tokens. The design reaches prefill_efficiency of
    the bound (its own fit where it has prefill measurements, else achieved_efficiency)."""
    n = np.asarray(n_new, dtype=float)
    k = np.asarray(ctx, dtype=float)
    b = np.asarray(batch, dtype=float)
    passes = np.ceil(n * b / c.prefill_token_parallel)
    own_passes = np.ceil(n / c.prefill_token_parallel)  # passes each sequence's tokens span
    kv_read = b * c.kv_bytes_per_token * own_passes * (k + n / 2)
    t_mem = (passes * c.body_weight_bytes + kv_read) / c.bw_bytes_per_s
    pairs = n * k + n * (n + 1) / 2
    t_mac = b * (n * c.body_macs_per_token + c.attn_macs_per_pair * pairs) / c.macs_per_s
    head = np.maximum(c.head_weight_bytes / c.bw_bytes_per_s, b * c.head_macs / c.macs_per_s)
    t = (np.maximum(t_mem, t_mac) + head) / c.prefill_efficiency + passes * c.layer_fill_s
    t = t + c.head_fill_s
    return np.asarray(np.where(n > 0, t, 0.0))


# ------------------------------------------------------------------ resources and feasibility


def resources(b: FpgaBuild) -> dict[str, float]:
    """DSP, LUT, BRAM36 and URAM the build uses (engine's per-lane / per-channel costs)."""
    e = b.engine
    dsp = e.base_dsp + b.mac_lanes / b.board.int8_macs_per_dsp * (1 + e.dsp_per_mac_lane_overhead)
    use = {
        "dsp": dsp,
        "lut": e.base_lut + e.lut_per_mac_lane * b.mac_lanes,
        "bram36": e.bram36_per_channel * b.memory_channels,
        "uram": e.uram_base,
    }
    if b.board.uram == 0:  # no UltraRAM (ZU9EG): the buffers go to BRAM, 288 Kb = 8 x 36 Kb
        use["bram36"] += URAM_BRAM36 * use.pop("uram")
    return use


def memory_needed_bytes(model: ModelSpec, b: FpgaBuild) -> float:
    """Weights (all, at the streamed bits per parameter) + KV for max_seq_len tokens."""
    weights = shape.total_params(model) * streamed_weight_bits(b) / 8
    return weights + shape.kv_bytes_per_token(model, b.kv_bits) * b.max_seq_len


def memory_infeasibility(model: ModelSpec, b: FpgaBuild) -> list[str]:
    """Why weights + KV for max_seq_len do not fit the board's HBM (or DDR); empty if they do."""
    board = b.board
    need = memory_needed_bytes(model, b)
    if need <= board.weight_memory_bytes:
        return []
    mem_name = "HBM" if board.uses_hbm else "DDR"
    weights_gb = shape.total_params(model) * streamed_weight_bits(b) / 8 / 1e9
    return [f"weights {weights_gb:.2f} GB + KV for "
            f"{b.max_seq_len} tokens = {need / 1e9:.2f} GB do not fit {board.name} {mem_name} "
            f"{board.weight_memory_bytes / 1e9:.0f} GB"]


def bit_width_infeasibility(b: FpgaBuild) -> list[str]:
    """Why the build's bit widths are out of range: weights (and the engine's effective
    weight_bits_per_param, where it has one) in WEIGHT_BITS_RANGE, activations and KV in
    VALID_BITS; empty when they are in range."""
    lo, hi = WEIGHT_BITS_RANGE
    why = []
    if not lo <= b.weight_bits <= hi:
        why.append(f"weight_bits {b.weight_bits:g} outside {lo:g}..{hi:g}")
    e = b.engine.weight_bits_per_param
    if e is not None and not 0 < e <= hi:
        why.append(f"engine {b.engine.name} weight_bits_per_param {e:g} outside (0, {hi:g}]")
    for attr in ("activation_bits", "kv_bits"):
        if getattr(b, attr) not in VALID_BITS:
            why.append(f"{attr} {getattr(b, attr)} not in {VALID_BITS}")
    return why


def infeasibility(model: ModelSpec, b: FpgaBuild) -> list[str]:
    """Reasons the build cannot run the model on the board; empty when it can."""
    board = b.board
    why = memory_infeasibility(model, b)
    if not 1 <= b.memory_channels <= board.memory_channels:
        why.append(f"{b.memory_channels} memory channels outside 1..{board.memory_channels}")
    if not board.clock_min_hz <= b.clock_hz <= board.clock_max_hz:
        why.append(
            f"clock {b.clock_hz / 1e6:g} MHz outside {board.clock_min_hz / 1e6:g}.."
            f"{board.clock_max_hz / 1e6:g} MHz"
        )
    if b.mac_lanes < 1:
        why.append("mac_lanes must be >= 1")
    why += bit_width_infeasibility(b)
    if b.max_seq_len > model.max_position_embeddings:
        why.append(
            f"max_seq_len {b.max_seq_len} beyond {model.name} max positions "
            f"{model.max_position_embeddings}"
        )
    use = resources(b)
    have = {"dsp": board.dsp, "lut": board.lut, "bram36": board.bram36, "uram": board.uram}
    for k, used in use.items():
        if used > have[k]:
            why.append(f"{k.upper()} {used:.0f} exceeds {board.name}'s {have[k]}")
    return why


def fabric_power_w(b: FpgaBuild, dsp_used: float) -> float:
    """Dynamic fabric power while the decoder runs: scales with DSPs used and clock."""
    return b.engine.dynamic_w_per_ghz_kdsp * dsp_used / 1000 * b.clock_hz / 1e9


def decode_power_w(c: FpgaCost, ctx: ArrayLike = 0, *, batch: ArrayLike = 1) -> F64:
    """Board power while decoding: static + fabric + memory energy x achieved byte rate (the
    weights once per step, each of `batch` sequences' KV)."""
    k = np.asarray(ctx, dtype=float) + 1
    b = np.asarray(batch, dtype=float)
    bytes_ = c.body_weight_bytes + c.head_weight_bytes + b * c.kv_bytes_per_token * k
    rate = bytes_ / decode_token_s(c, ctx, batch=batch)
    return np.asarray(c.static_w + c.fabric_w + c.memory_j_per_byte * rate)


def idle_power_w(c: FpgaCost) -> F64:
    return np.asarray(c.static_w, dtype=float)


def knob_ranges(board: FpgaSpec) -> dict[str, float]:
    """Clock range and default (MHz), memory channels and the most MAC lanes the DSPs hold
    (DSPs x INT8 MACs per DSP) of a board (0 in a system file means the board default / every
    channel)."""
    return {"clock_min_mhz": board.clock_min_hz / 1e6, "clock_max_mhz": board.clock_max_hz / 1e6,
            "clock_default_mhz": board.clock_default_hz / 1e6,
            "channels_max": board.memory_channels,
            "mac_lanes_max": board.dsp * board.int8_macs_per_dsp}


# ---------------------------------------------------------------------------- placed model


@dataclass(frozen=True)
class FpgaPlacement(ModelMemory):
    """A model on one FPGA board under a streaming-decoder build (implements
    dse.devices.protocol.Placement). `precision` names the scheme; the build holds the bit
    widths the engine runs at (KV at kv_bits)."""

    model: ModelSpec
    device: FpgaSpec
    precision: Precision
    serving: str  # the FPGA engine's name
    context_tokens: int  # the build's max_seq_len
    fpga_build: FpgaBuild
    fpga_cost: FpgaCost
    usable_memory_bytes: float  # the board's HBM (or DDR): no runtime reserves it
    tp: int = 1
    prefix_caching: bool = True  # the KV cache stays on the board between calls

    kind: ClassVar[str] = "fpga"

    # ---- time
    def decode_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        check_batch(batch)
        return decode_s(self.fpga_cost, n, ctx, batch=batch)

    def decode_token_s(self, ctx: ArrayLike, *, batch: int = 1) -> F64:
        check_batch(batch)
        return decode_token_s(self.fpga_cost, ctx, batch=batch)

    def prefill_s(self, n_new: ArrayLike, ctx: ArrayLike = 0, *, all_positions: bool = False,
                  batch: int = 1) -> F64:
        """all_positions is not modelled: an FPGA draft only ever needs the last logits."""
        check_batch(batch)
        return prefill_s(self.fpga_cost, n_new, ctx, batch=batch)

    def absorb_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        check_batch(batch)
        return absorb_s(self.fpga_cost, n, ctx, batch=batch)

    def iteration_s(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                    prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                    prefill_chunks: ArrayLike = 1) -> F64:
        """One serving iteration: the decode pass of `decodes` sequences, then the prompt
        chunks' passes, the chunks as one batch (a streaming decoder runs prompts and decode
        steps as passes of their own; FlexLLM builds separate prefill and decode stages)."""
        b = np.asarray(decodes, dtype=float)
        m = np.maximum(np.asarray(prefill_chunks, dtype=float), 1.0)
        dec = np.where(b > 0, decode_token_s(self.fpga_cost, decode_ctx,
                                             batch=np.maximum(b, 1.0)), 0.0)
        pre = prefill_s(self.fpga_cost, np.asarray(prefill_tokens, dtype=float) / m,
                        prefill_ctx, batch=m)
        return np.asarray(dec + pre)

    def iteration_power_w(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                          prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                          prefill_chunks: ArrayLike = 1) -> F64:
        """Decode power at the batch (a prefill pass draws decode power too)."""
        b = np.maximum(np.asarray(decodes, dtype=float), 1.0)
        return decode_power_w(self.fpga_cost, decode_ctx, batch=b)

    def decode_bound(self, ctx: float) -> tuple[float, Bound]:
        """The decoder runs at achieved_efficiency of its bound; when more than half of the
        time lies above the bound it is 'overhead' (pipeline stalls, fill), like launch
        overhead on a GPU."""
        t_mem, t_mac = (float(t) for t in token_bounds_s(self.fpga_cost, ctx))
        roof = max(t_mem, t_mac)
        bound: Bound = "memory" if t_mem >= t_mac else "compute"
        if float(self.decode_token_s(ctx)) - roof > roof:
            bound = "overhead"
        return roof, bound

    def prefill_bound(self, n_new: int) -> Bound:
        """A pass shorter than prefill_token_parallel streams the weights for few tokens."""
        return "memory" if n_new < self.fpga_build.engine.prefill_token_parallel else "compute"

    # ---- power
    def power_w(self, state: PowerState, ctx: ArrayLike = 0, n_new: ArrayLike = 1, *,
                batch: int = 1) -> F64:
        """Static when idle; decode power (static + fabric + memory traffic) while running,
        for a prefill pass too."""
        check_batch(batch)
        if state == "idle":
            return idle_power_w(self.fpga_cost)
        return decode_power_w(self.fpga_cost, ctx, batch=batch)

    # ---- peaks
    @property
    def peak_bytes_per_s(self) -> float:
        b = self.device
        return b.hbm_bytes_per_s if b.uses_hbm else b.ddr_bytes_per_s

    @property
    def peak_ops_per_s(self) -> float:
        return 2 * self.fpga_build.mac_lanes * self.fpga_build.clock_hz

    @property
    def effective_bytes_per_s(self) -> float:
        b = self.fpga_build
        return effective_bw_bytes_per_s(b) * b.engine.achieved_efficiency

    @property
    def effective_ops_per_s(self) -> float:
        return self.peak_ops_per_s * self.fpga_build.engine.achieved_efficiency

    @property
    def clock_hz(self) -> float | None:
        return self.fpga_build.clock_hz

    # ---- memory and resources
    @property
    def weight_bits(self) -> float:
        """Bits per stored weight: the engine's effective figure where it has one."""
        return streamed_weight_bits(self.fpga_build)

    @property
    def kv_bits(self) -> int:
        return self.fpga_build.kv_bits

    @property
    def memory_bytes(self) -> float:
        return self.device.weight_memory_bytes

    def resources(self) -> Mapping[str, tuple[float, float]]:
        b = self.device
        have = {"dsp": b.dsp, "lut": b.lut, "bram36": b.bram36, "uram": b.uram}
        used = resources(self.fpga_build)
        return {"memory_bytes": (self.memory_needed_bytes, self.usable_memory_bytes),
                **{k: (used[k], float(have[k])) for k in used}}

    def memory_infeasibility(self) -> list[str]:
        return memory_infeasibility(self.model, self.fpga_build)

    def infeasibility(self) -> list[str]:
        """The context check, then the build's reasons (its max_seq_len check is the same
        context check)."""
        return context_infeasibility(self.model, self.context_tokens) + [
            w for w in infeasibility(self.model, self.fpga_build)
            if not w.startswith("max_seq_len")]


def place(cat: Catalog, model: ModelSpec, board: FpgaSpec, *, precision_name: str,
          software: str, context_tokens: int, tp: int | None,
          knobs: Mapping[str, object], kv_precision: str | None = None,
          offload_fraction: float = 0.0) -> FpgaPlacement:
    """The FPGA kind's builder: the engine `software` on the board's default build at the
    precision's bit widths, holding context_tokens; knobs (BUILD_KNOBS) override the build.
    One board: tp is not used. The build fixes its KV width and holds every weight in its
    own memory: a KV precision or an offload is refused by the registry before this runs."""
    wb, ab = FPGA_PRECISIONS[precision_name]
    build = default_build(board, cat.engine(software), **{
        "weight_bits": wb, "activation_bits": ab, "max_seq_len": context_tokens, **knobs})
    return FpgaPlacement(model, board, precision(precision_name), software, build.max_seq_len,
                         build, fpga_cost(model, build), board.weight_memory_bytes)
