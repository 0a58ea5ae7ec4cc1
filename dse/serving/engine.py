"""One replica of a served model: its placement's iteration cost under the scheduler's caps,
the KV cache it can hold, and the time and power multipliers an interval's end applies.

The iteration is the placement's own (Placement.iteration_s: decodes and prompt chunks in one
pass on a GPU); the KV capacity is what the usable memory holds beside the weights, in whole
blocks of the scheduler's block size (vLLM's paged cache).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dse.arrays import F64
from dse.devices import shape
from dse.devices.protocol import Placement
from dse.serving.load import Caps


@dataclass(frozen=True)
class Engine:
    """A placement served with caps; decode_factor / prefill_factor / power_factor scale its
    decode time, the prompt chunks' share of an iteration and the dynamic power (1: central)."""

    placement: Placement
    caps: Caps
    decode_factor: float = 1.0
    prefill_factor: float = 1.0
    power_factor: float = 1.0

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the replica holds beside its weights, whole blocks only."""
        p = self.placement
        kv_one = p.kv_bytes_per_token * p.context_tokens / p.tp
        weights = p.memory_needed_bytes - kv_one
        per_token = shape.kv_bytes_per_token(p.model, p.kv_bits) / p.tp
        room = max(p.usable_memory_bytes - weights, 0.0)
        blocks = int(room // (per_token * self.caps.block_size))
        return blocks * self.caps.block_size

    def blocks(self, tokens: ArrayLike) -> F64:
        """Cache blocks a sequence of `tokens` tokens holds."""
        return np.ceil(np.asarray(tokens, dtype=float) / self.caps.block_size)

    def iteration_s(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                    prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                    prefill_chunks: ArrayLike = 1) -> F64:
        """The iteration's time: the decode part at decode_factor, what the prompt chunks add
        at prefill_factor."""
        p = self.placement
        dec = p.iteration_s(decodes, decode_ctx, 0, 0)
        both = p.iteration_s(decodes, decode_ctx, prefill_tokens, prefill_ctx, prefill_chunks)
        return np.asarray(self.decode_factor * dec + self.prefill_factor * (both - dec))

    def iteration_power_w(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                          prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                          prefill_chunks: ArrayLike = 1) -> F64:
        idle = self.idle_w
        busy = self.placement.iteration_power_w(decodes, decode_ctx, prefill_tokens,
                                                prefill_ctx, prefill_chunks)
        return np.asarray(idle + (busy - idle) * self.power_factor)

    @property
    def idle_w(self) -> float:
        return float(self.placement.power_w("idle"))
