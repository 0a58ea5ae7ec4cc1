"""A model placed on a device: one interface over the GPU and FPGA cost models.

`place(...)` returns a `Placement` whose methods (decode, prefill, absorb, power) broadcast over
token counts and contexts, whichever kind of device holds the model. The workflow and schedule
timing use only this interface.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.devices import fpga, gpu, shape
from dse.devices.power import gpu_power_w
from dse.devices.shape import Precision, precision
from dse.errors import SpecError
from dse.specs import Catalog, FpgaSpec, GpuSpec, ModelSpec

F64 = NDArray[np.float64]

# Which precisions an FPGA build supports: (weight bits, activation bits).
FPGA_PRECISIONS = {"w8a8": (8, 8), "w4a16": (4, 16), "w8a16": (8, 16), "bf16": (16, 16),
                   "fp16": (16, 16)}


@dataclass(frozen=True)
class Placement:
    model: ModelSpec
    device: GpuSpec | FpgaSpec
    precision: Precision
    serving: str  # GPU serving profile or FPGA engine name
    tp: int
    context_tokens: int  # the largest context the deployment must hold
    gpu_cost: gpu.GpuCost | None = None
    fpga_build: fpga.FpgaBuild | None = None
    fpga_cost: fpga.FpgaCost | None = None
    prefix_caching: bool = True
    usable_memory_bytes: float = 0.0

    @property
    def is_fpga(self) -> bool:
        return self.fpga_cost is not None

    # ---- time
    def decode_s(self, n: ArrayLike, ctx: ArrayLike) -> F64:
        if self.fpga_cost is not None:
            return fpga.decode_s(self.fpga_cost, n, ctx)
        assert self.gpu_cost is not None
        return gpu.decode_s(self.gpu_cost, n, ctx)

    def decode_token_s(self, ctx: ArrayLike) -> F64:
        if self.fpga_cost is not None:
            return fpga.decode_token_s(self.fpga_cost, ctx)
        assert self.gpu_cost is not None
        return gpu.decode_token_s(self.gpu_cost, ctx)

    def prefill_s(self, n_new: ArrayLike, ctx: ArrayLike = 0, *, all_positions: bool = False
                  ) -> F64:
        if self.fpga_cost is not None:
            return fpga.prefill_s(self.fpga_cost, n_new, ctx)
        assert self.gpu_cost is not None
        return gpu.prefill_s(self.gpu_cost, n_new, ctx, all_positions=all_positions)

    def absorb_s(self, n: ArrayLike, ctx: ArrayLike) -> F64:
        """Ingest n tokens streamed one at a time (shadow sync). A GPU prefills them at once."""
        if self.fpga_cost is not None:
            return fpga.absorb_s(self.fpga_cost, n, ctx)
        return self.prefill_s(n, ctx)

    # ---- power
    def power_w(self, state: str, ctx: ArrayLike = 0, n_new: ArrayLike = 1) -> F64:
        """Board power in 'idle', 'decode' or 'prefill' (all tp GPUs together); for a prefill,
        n_new is the number of tokens of the pass (it sets how busy the GPU is)."""
        if self.fpga_cost is not None:
            if state == "idle":
                return fpga.idle_power_w(self.fpga_cost)
            return fpga.decode_power_w(self.fpga_cost, ctx)
        assert self.gpu_cost is not None
        if state == "idle":
            return gpu_power_w(self.gpu_cost, "idle")
        ft = gpu.forward(self.gpu_cost, n_new if state == "prefill" else 1, ctx)
        return gpu_power_w(self.gpu_cost, state, ft.busy_fraction)

    # ---- memory
    @property
    def weights_bytes(self) -> float:
        bits = self.fpga_build.weight_bits if self.fpga_build else self.precision.weight_bits
        return shape.total_params(self.model) * bits / 8

    @property
    def kv_bits(self) -> int:
        return self.fpga_build.kv_bits if self.fpga_build else self.precision.kv_bits

    @property
    def kv_bytes_per_token(self) -> float:
        return shape.kv_bytes_per_token(self.model, self.kv_bits)

    @property
    def memory_needed_bytes(self) -> float:
        """Per device: weights and KV at context_tokens (split over tp GPUs)."""
        return (self.weights_bytes + self.kv_bytes_per_token * self.context_tokens) / self.tp

    @property
    def memory_bytes(self) -> float:
        d = self.device
        return d.weight_memory_bytes if isinstance(d, FpgaSpec) else d.memory_bytes

    def infeasibility(self) -> list[str]:
        """Why this placement cannot run; empty when it can."""
        why: list[str] = []
        if self.context_tokens > self.model.max_position_embeddings:
            why.append(f"context {self.context_tokens} beyond {self.model.name} max positions "
                       f"{self.model.max_position_embeddings}")
        if self.fpga_build is not None:
            why += [w for w in fpga.infeasibility(self.model, self.fpga_build)
                    if not w.startswith("max_seq_len")]
        elif self.memory_needed_bytes > self.usable_memory_bytes:
            why.append(
                f"{self.model.name} needs {self.memory_needed_bytes / 1e9:.2f} GB per GPU "
                f"(weights + KV for {self.context_tokens} tokens, tp={self.tp}) but "
                f"{self.device.name} offers {self.usable_memory_bytes / 1e9:.2f} GB usable"
            )
        return why


def place(
    cat: Catalog,
    model: ModelSpec,
    device_name: str,
    *,
    precision_name: str | None = None,
    serving: str = "vllm-cudagraph",
    engine: str = "flexllm",
    context_tokens: int = 4096,
    tp: int | None = None,
    fpga_knobs: dict[str, object] | None = None,
) -> Placement:
    """Place a model on a device. GPU: tp defaults to the smallest power of two that fits
    (1 if none does; `infeasibility` then says why). FPGA: knobs override the default build."""
    device = cat.device(device_name)
    if isinstance(device, FpgaSpec):
        pname = precision_name or "w8a8"
        if pname not in FPGA_PRECISIONS:
            raise SpecError("--precision", "precision",
                            f"{pname!r} not supported on an FPGA; "
                            f"valid: {', '.join(FPGA_PRECISIONS)}")
        wb, ab = FPGA_PRECISIONS[pname]
        knobs: dict[str, object] = {"weight_bits": wb, "activation_bits": ab,
                                    "max_seq_len": context_tokens}
        knobs.update(fpga_knobs or {})
        build = fpga.default_build(device, cat.engine(engine), **knobs)
        return Placement(model, device, precision(pname), engine, 1, build.max_seq_len,
                         fpga_build=build, fpga_cost=fpga.fpga_cost(model, build),
                         prefix_caching=True, usable_memory_bytes=device.weight_memory_bytes)
    p = precision(precision_name or "bf16")
    s = cat.serving(serving)
    if tp is None:
        tp = gpu.min_tp(model, device, p, s, context_tokens) or 1
    link = cat.link(device.host_link)
    cost = gpu.gpu_cost(model, device, p, s, tp=tp, tp_link=link)
    usable = device.memory_bytes * s.memory_utilization - s.runtime_reserve_bytes
    return Placement(model, device, p, serving, tp, context_tokens, gpu_cost=cost,
                     prefix_caching=s.prefix_caching, usable_memory_bytes=usable)
