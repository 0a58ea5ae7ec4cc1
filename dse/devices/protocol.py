"""The device-model protocol: a model placed on one kind of device.

Every device kind (GPU, FPGA, ...) implements `Placement`; the workflow, the schedule timing,
the reports, the search and the dashboard use only this interface and the kind's declared
capabilities (`dse.devices.registry.DeviceKind`), never the concrete class. Each kind's
`place` builder (registered in `dse.devices.registry`) returns one.

Units: seconds, watts, bytes, operations per second. Token counts and contexts broadcast as
numpy arrays; every method returns a float64 array of the broadcast shape.

Invariants every implementation keeps (tests/test_device_conformance.py checks them for every
registered kind and every shipped board of it):
- decode, prefill and absorb times are non-decreasing in the context;
- no time is below its bandwidth floor (bytes moved / `peak_bytes_per_s`) or its compute floor
  (operations / `peak_ops_per_s`);
- an array call equals the scalar calls element by element;
- busy power (decode, prefill) >= idle power > 0, all finite;
- `memory_needed_bytes <= usable_memory_bytes` exactly when `memory_infeasibility()` is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.devices import shape
from dse.devices.shape import Precision
from dse.specs import ModelSpec, Spec
from dse.specs.model import TP_REASON, tp_misfit

F64 = NDArray[np.float64]
PowerState = Literal["idle", "decode", "prefill"]
POWER_STATES: tuple[PowerState, ...] = ("idle", "decode", "prefill")
# What bounds one forward pass: bytes, operations, or neither (launch / pipeline overheads).
Bound = Literal["memory", "compute", "overhead"]


MAX_BATCH = 65_536
"""Sequences one forward pass may serve: far above any serving stack's cap (vLLM's
max_num_seqs defaults to 256-1024) and any width design's samples (N <= 64 x beam), low enough
that a batch's arrays stay small. Every calibration point and the paper measure batch 1; each
kind's forward pass takes the batch (weights read once per pass, KV bytes and FLOPs per
sequence, the busy fraction of the power), and batch 1 is the single-stream model exactly."""


def check_batch(batch: int) -> None:
    """Refuse a batch that is not a whole number of sequences in 1..MAX_BATCH."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch: {batch!r}; a whole number of sequences from 1 to "
                         f"{MAX_BATCH}")


class Placement(Protocol):
    """A model on a device (one board, or tp GPUs together), ready to be timed and powered."""

    # Read-only attributes (fields of the frozen dataclasses that implement it).
    @property
    def model(self) -> ModelSpec: ...

    @property
    def device(self) -> Spec:
        """The board's catalog spec (of the kind's catalog kind)."""
        ...

    @property
    def precision(self) -> Precision:
        """The precision scheme (name and bit widths; see weight_bits, kv_bits)."""
        ...

    @property
    def serving(self) -> str:
        """The software that runs it: a GPU serving profile, an FPGA engine, ..."""
        ...

    @property
    def tp(self) -> int:
        """Devices the model is split over (tensor parallel); 1 for a single board."""
        ...

    @property
    def context_tokens(self) -> int:
        """The largest context the deployment must hold."""
        ...

    @property
    def prefix_caching(self) -> bool:
        """A later call reuses the cached prefix (only new tokens are prefilled)."""
        ...

    @property
    def usable_memory_bytes(self) -> float:
        """Per device, after the software's reserve."""
        ...

    @property
    def kind(self) -> str:
        """The registered device kind (dse.devices.registry) this placement belongs to."""
        ...

    # ---- time (seconds)
    def decode_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        """Decode n tokens one at a time after ctx cached tokens, for each of `batch` sequences
        at once (one pass per step serves them all: `check_batch`)."""
        ...

    def decode_token_s(self, ctx: ArrayLike, *, batch: int = 1) -> F64:
        """One decode step: each of `batch` sequences, its context holding ctx tokens, gains
        one token."""
        ...

    def prefill_s(self, n_new: ArrayLike, ctx: ArrayLike = 0, *, all_positions: bool = False,
                  batch: int = 1) -> F64:
        """Prefill n_new tokens after ctx cached ones (0 s for n_new = 0); all_positions: the
        head runs on every position (a reward model scoring each token)."""
        ...

    def absorb_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        """Ingest n tokens another device wrote, as they stream in (shadow sync)."""
        ...

    def iteration_s(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                    prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                    prefill_chunks: ArrayLike = 1) -> F64:
        """One serving iteration (dse.serving): `decodes` sequences each gain a token after
        decode_ctx cached tokens (their mean context), and prefill_tokens prompt tokens, split
        evenly over prefill_chunks sequences each after prefill_ctx cached tokens, are
        prefilled. With no prefill it is decode_token_s(decode_ctx, batch=decodes); with no
        decodes and one chunk, prefill_s(prefill_tokens, prefill_ctx)."""
        ...

    def iteration_power_w(self, decodes: ArrayLike, decode_ctx: ArrayLike,
                          prefill_tokens: ArrayLike = 0, prefill_ctx: ArrayLike = 0,
                          prefill_chunks: ArrayLike = 1) -> F64:
        """Power of the whole placement over that iteration."""
        ...

    def decode_bound(self, ctx: float) -> tuple[float, Bound]:
        """(roofline seconds of one decoded token at ctx, what bounds it)."""
        ...

    def prefill_bound(self, n_new: int) -> Bound:
        """What bounds a prompt prefill of n_new tokens into an empty cache."""
        ...

    # ---- power (watts)
    def power_w(self, state: PowerState, ctx: ArrayLike = 0, n_new: ArrayLike = 1, *,
                batch: int = 1) -> F64:
        """Power of the whole placement (all tp devices) in a state; n_new is a prefill pass's
        tokens (it sets how busy the device is)."""
        ...

    # ---- peaks: the floors no time may beat, and what the model reaches
    @property
    def peak_bytes_per_s(self) -> float:
        """Datasheet memory bandwidth (x tp)."""
        ...

    @property
    def peak_ops_per_s(self) -> float:
        """Datasheet arithmetic peak at this precision (x tp), in operations (2 per MAC)."""
        ...

    @property
    def effective_bytes_per_s(self) -> float:
        """Bandwidth the model streams weights at (software or build efficiency applied)."""
        ...

    @property
    def effective_ops_per_s(self) -> float:
        ...

    @property
    def clock_hz(self) -> float | None:
        """The build's clock where the kind has a clock knob; None otherwise."""
        ...

    # ---- memory (bytes) and resources
    @property
    def weight_bits(self) -> float:
        """Bits per stored weight (an FPGA design's effective figure may be fractional)."""
        ...

    @property
    def kv_bits(self) -> float:
        """Bits per cached K or V value, scales included (llama.cpp's q4_0 cache: 4.5)."""
        ...

    @property
    def weights_bytes(self) -> float:
        """All stored weights (every device together)."""
        ...

    @property
    def kv_bytes_per_token(self) -> float:
        ...

    @property
    def memory_needed_bytes(self) -> float:
        """Per device: weights and KV at context_tokens, split over tp devices."""
        ...

    @property
    def memory_bytes(self) -> float:
        """Per device: the memory that holds weights and KV (datasheet)."""
        ...

    def resources(self) -> Mapping[str, tuple[float, float]]:
        """Resource name -> (used, available) per device: memory bytes and, where the kind
        has them, fabric resources (DSP, LUT, BRAM, URAM)."""
        ...

    def memory_infeasibility(self) -> list[str]:
        """Why weights + KV do not fit; empty when they do."""
        ...

    def max_batch(self, ctx: int | None = None) -> int:
        """Sequences whose KV caches at ctx tokens each (default context_tokens) fit beside
        the weights in the usable memory (0: the weights alone do not fit; at most
        MAX_BATCH)."""
        ...

    def infeasibility(self) -> list[str]:
        """Every reason this placement cannot run (memory, context, build, resources); empty
        when it can."""
        ...


def context_infeasibility(model: ModelSpec, context_tokens: int, tp: int = 1) -> list[str]:
    """A context beyond the model's position embeddings, and a tensor-parallel degree vLLM
    refuses for the model's heads (dse.specs.model.tp_misfit, its reason led by TP_REASON's
    fixed words: a sweep counts reasons by their first 60 characters). Checks every kind
    shares; a kind that holds a model on one board passes tp 1."""
    tp_why = tp_misfit(model, tp)
    why = [] if tp_why is None else [f"{TP_REASON}: {tp_why}"]
    if context_tokens <= model.max_position_embeddings:
        return why
    return [f"context {context_tokens} beyond {model.name} max positions "
            f"{model.max_position_embeddings}", *why]


class _Sized(Protocol):
    @property
    def model(self) -> ModelSpec: ...
    @property
    def weight_bits(self) -> float: ...
    @property
    def kv_bits(self) -> float: ...
    @property
    def context_tokens(self) -> int: ...
    @property
    def tp(self) -> int: ...
    @property
    def usable_memory_bytes(self) -> float: ...
    @property
    def memory_needed_bytes(self) -> float: ...


class ModelMemory:
    """The memory terms every kind shares, from the model, its bit widths, the context the
    deployment holds and the devices it is split over (a mixin of the placement classes)."""

    @property
    def weights_bytes(self: _Sized) -> float:
        return shape.total_params(self.model) * self.weight_bits / 8

    @property
    def kv_bytes_per_token(self: _Sized) -> float:
        return shape.kv_bytes_per_token(self.model, self.kv_bits)

    @property
    def memory_needed_bytes(self: _Sized) -> float:
        """Per device: weights and the KV cache at context_tokens, split over tp devices."""
        total = (shape.total_params(self.model) * self.weight_bits / 8
                 + shape.kv_bytes_per_token(self.model, self.kv_bits) * self.context_tokens)
        return total / self.tp

    def shared_infeasibility(self: _Sized) -> list[str]:
        """The checks every kind shares (context_infeasibility) on this placement."""
        return context_infeasibility(self.model, self.context_tokens, self.tp)

    def max_batch(self: _Sized, ctx: int | None = None) -> int:
        """Sequences whose KV caches at ctx tokens each (default context_tokens) fit beside
        the weights in the usable memory of each device: (usable - weights per device) / KV of
        one sequence per device, whole sequences only, at most MAX_BATCH; 0 where the weights
        alone do not fit."""
        k = self.context_tokens if ctx is None else ctx
        kv_one = shape.kv_bytes_per_token(self.model, self.kv_bits) * self.context_tokens
        weights = self.memory_needed_bytes - kv_one / self.tp  # the kind's own weight terms
        per_seq = shape.kv_bytes_per_token(self.model, self.kv_bits) * k / self.tp
        room = self.usable_memory_bytes - weights
        if room < 0:
            return 0
        if per_seq <= 0:
            return MAX_BATCH
        return int(min(MAX_BATCH, room // per_seq))
