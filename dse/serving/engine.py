"""One replica of a served model: its placement's iteration cost under the scheduler's caps,
the KV cache it can hold, and the time and power multipliers an interval's end applies.

With token-level speculation (`Speculation`) a decode iteration is the proposer's k passes (a
draft model decoding one token for every running sequence per pass, on the target's GPUs; an
n-gram proposer costs no device time) and one target pass verifying k + 1 positions of every
sequence, priced as prompt chunks of k + 1 tokens after each sequence's context in the
iteration's one pass (the LM head runs on one position a chunk there, not k + 1: about 1% of a
7B pass). A draft model prefills each prompt too, and holds weights and a KV cache beside the
target's.

An EAGLE-style proposer (`eagle_head`) is a draft model of one decoder layer of the target's
shape on the target's GPUs (EAGLE's head: an FC of 2h -> h, one decoder layer, the target's
embedding and LM head: SafeAILab/EAGLE eagle/model/cnets1.py, its configs' num_hidden_layers
1): each proposed token costs that layer and the LM head at the batch; its weights are the
layer's alone (the embedding and LM head are the target's, not held twice); the FC (2 h^2, 3%
of the head's streamed bytes for Qwen2.5-7B) is left out. A draft on a device of its own (an
FPGA board: `draft_apart`) runs its k passes while the target's GPUs wait, and the target's
passes while it waits: its KV cache bounds the batch beside the target's, its idle and busy
power add to the GPUs'; its prompts are prefilled by a copy of it on the target's GPUs and
the KV caches sent over the slower host link (HeteroReason's migration: an FPGA engine's own
prefill is far slower).

The iteration is the placement's own (Placement.iteration_s: decodes and prompt chunks in one
pass on a GPU); the KV capacity is what the usable memory holds beside the weights, in whole
blocks of the scheduler's block size (vLLM's paged cache).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from dse.core.arrays import F64
from dse.devices import shape
from dse.devices.protocol import MAX_BATCH, Placement
from dse.serving.load import Caps, Speculation
from dse.specs import LinkSpec, ModelSpec


@dataclass(frozen=True)
class Engine:
    """A placement served with caps; decode_factor / prefill_factor / power_factor scale its
    decode time, the prompt chunks' share of an iteration and the dynamic power (1: central)."""

    placement: Placement
    caps: Caps
    decode_factor: float = 1.0
    prefill_factor: float = 1.0
    power_factor: float = 1.0
    speculation: Speculation | None = None
    draft: Placement | None = None  # a draft model proposer's placement
    draft_apart: bool = False  # the draft runs on a device of its own (an FPGA board)
    # a draft apart's prompt: prefilled by a copy of the draft on the target's GPUs, its KV
    # cache sent over the slower host link (HeteroReason's migration, dse.model.design)
    draft_prompt: Placement | None = None
    draft_link: LinkSpec | None = None

    @staticmethod
    def _weights_and_kv(p: Placement) -> tuple[float, float]:
        """(weight bytes per device, KV bytes per token per device) of a placement."""
        kv_one = p.kv_bytes_per_token * p.context_tokens / p.tp
        return (p.memory_needed_bytes - kv_one,
                shape.kv_bytes_per_token(p.model, p.kv_bits) / p.tp)

    def _shared_bytes(self) -> float:
        """Weight bytes per device the draft shares with the target (an EAGLE head's
        embedding and LM head: the target's own)."""
        if self.draft is None or self.speculation is None or \
                self.speculation.proposer != "eagle":
            return 0.0
        d = self.draft
        return shape.embedding_params(d.model) * d.weight_bits / 8 / d.tp

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the replica holds beside its weights (and a draft's weights and
        cache on the same GPUs; a draft apart holds its own, the smaller bounds), whole blocks
        only."""
        weights, per_token = self._weights_and_kv(self.placement)
        apart = None
        if self.draft is not None:
            w, k = self._weights_and_kv(self.draft)
            if self.draft_apart:
                room_d = max(self.draft.usable_memory_bytes - w, 0.0)
                apart = room_d / max(k, 1e-30)
                if self.draft_prompt is not None:  # the prompt copy's weights on the GPUs
                    weights += self._weights_and_kv(self.draft_prompt)[0]
            else:
                weights, per_token = weights + w - self._shared_bytes(), per_token + k
        room = max(self.placement.usable_memory_bytes - weights, 0.0)
        tokens = room / per_token
        if apart is not None:
            tokens = min(tokens, apart)
        blocks = int(tokens // self.caps.block_size)
        return blocks * self.caps.block_size

    @property
    def tokens_per_pass(self) -> float:
        """Tokens a decoding sequence gains per iteration (1 without speculation)."""
        return 1.0 if self.speculation is None else self.speculation.tokens_per_pass

    def blocks(self, tokens: ArrayLike) -> F64:
        """Cache blocks a sequence of `tokens` tokens holds."""
        return np.ceil(np.asarray(tokens, dtype=float) / self.caps.block_size)

    def _target(self, b: ArrayLike, kd: ArrayLike, n: ArrayLike, kp: ArrayLike,
                m: ArrayLike) -> tuple[ArrayLike, ArrayLike, ArrayLike, ArrayLike, ArrayLike]:
        """The target pass's arguments: with speculation each decoding sequence's k + 1
        verified positions join the prompt chunks."""
        if self.speculation is None:
            return b, kd, n, kp, m
        q = self.speculation.num_speculative_tokens + 1
        b, kd, n, kp, m = (np.asarray(x, dtype=float) for x in (b, kd, n, kp, m))
        m = np.where(n > 0, m, 0.0)
        chunks = b + m
        ctx = np.where(chunks > 0, (b * kd + m * kp) / np.maximum(chunks, 1.0), 0.0)
        return 0, 0, b * q + n, ctx, np.maximum(chunks, 1.0)

    def _proposer_s(self, b: ArrayLike, kd: ArrayLike, n: ArrayLike, kp: ArrayLike,
                    m: ArrayLike) -> F64:
        """A draft model's k decode passes for the b sequences and its prefill of the
        prompts (0 for an n-gram proposer)."""
        if self.draft is None or self.speculation is None:
            return np.asarray(0.0)
        k = self.speculation.num_speculative_tokens
        b = np.asarray(b, dtype=float)
        dec = np.where(b > 0, self.draft.iteration_s(np.maximum(b, 1.0), kd, 0, 0), 0.0)
        n = np.asarray(n, dtype=float)
        if self.draft_prompt is not None and self.draft_link is not None:
            from dse.devices.link import transfer_s

            kv = self.draft.kv_bytes_per_token * n
            pre = np.where(n > 0, self.draft_prompt.iteration_s(0, 0, n, kp, m)
                           + transfer_s(self.draft_link, kv), 0.0)
        else:
            pre = np.where(n > 0, self.draft.iteration_s(0, 0, n, kp, m), 0.0)
        return np.asarray(k * dec + pre)

    def iteration_s(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                    prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                    prefill_chunks: ArrayLike = 1) -> F64:
        """The iteration's time: the decode part at decode_factor, what the prompt chunks add
        at prefill_factor (with speculation: the proposer's passes and the verifying pass)."""
        p = self.placement
        args = (decodes, decode_ctx, prefill_tokens, prefill_ctx, prefill_chunks)
        dec_args = (decodes, decode_ctx, 0, 0, 1)
        dec = p.iteration_s(*self._target(*dec_args)) + self._proposer_s(*dec_args)
        both = p.iteration_s(*self._target(*args)) + self._proposer_s(*args)
        return np.asarray(self.decode_factor * dec + self.prefill_factor * (both - dec))

    def iteration_power_w(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                          prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                          prefill_chunks: ArrayLike = 1) -> F64:
        """Power over the iteration: the target pass's, and a draft's over its passes (one
        device: weighted by the time each runs)."""
        idle = self.idle_w
        args = (decodes, decode_ctx, prefill_tokens, prefill_ctx, prefill_chunks)
        t_args = self._target(*args)
        busy = self.placement.iteration_power_w(*t_args)
        if self.draft is not None and self.speculation is not None:
            t_t = self.placement.iteration_s(*t_args)
            t_d = self._proposer_s(*args)
            d_pw = self.draft.power_w("decode", decode_ctx,
                                      batch=min(max(int(np.max(decodes)), 1), MAX_BATCH))
            if self.draft_apart:  # two devices: each busy over its passes, idle the rest
                g_idle = float(self.placement.power_w("idle"))
                d_idle = float(self.draft.power_w("idle"))
                busy = ((busy * t_t + g_idle * t_d + d_pw * t_d + d_idle * t_t)
                        / np.maximum(t_t + t_d, 1e-30))
            else:
                busy = (busy * t_t + d_pw * t_d) / np.maximum(t_t + t_d, 1e-30)
        return np.asarray(idle + (busy - idle) * self.power_factor)

    @property
    def idle_w(self) -> float:
        """The replica's idle power (a draft apart's board included)."""
        own = float(self.placement.power_w("idle"))
        if self.draft is not None and self.draft_apart:
            own += float(self.draft.power_w("idle"))
        return own


def eagle_head(target: ModelSpec) -> ModelSpec:
    """An EAGLE-style proposer of the target: one decoder layer of its shape, with its
    embedding and LM head (tied: one table, the target's), named eagle-head:<target>."""
    return replace(target, name=f"eagle-head:{target.name}", num_layers=1,
                   tie_word_embeddings=True, published_params=None,
                   description=f"EAGLE-style head of {target.name}: one decoder layer on the "
                   "target's hidden states, the target's embedding and LM head")


def in_engine_step(p: Placement) -> Placement:
    """A proposer on the target's GPUs as it runs: its k passes inside the target's engine
    step (vLLM V1's proposer loop runs the draft's forward passes k times in one step, with
    CUDA graphs), so each pays its forward pass but not the step's scheduling, input
    preparation and output processing (the GPU profile's step_overhead_s and its host work per
    further sequence, sequence_overhead_s, charged once to the step by the target's pass).
    Other kinds as they are."""
    cost = getattr(p, "cost", None)
    if p.kind != "gpu" or cost is None or not hasattr(cost, "step_overhead_s"):
        return p
    return replace(cast(Any, p), cost=replace(cost, step_overhead_s=0.0,
                                              sequence_overhead_s=0.0))
