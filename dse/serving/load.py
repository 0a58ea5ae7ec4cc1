"""What a service is asked to do (the load) and how its scheduler may batch (the caps).

A load is exactly one of: a static batch of B requests that start together and run to
completion (vLLM's benchmark_latency), C clients in a closed loop (each sends its next request
when the last one finishes), or Poisson arrivals at a rate (requests/s; infinity: every request
at once, offline throughput, as vLLM's benchmark_serving --request-rate inf). Every request has
the same input and output length, or (`dataset`) each draws its own from a named distribution
(dse.serving.datasets), whose means input_tokens and output_tokens then hold.

Scheduler caps (`Caps`) follow vLLM's V1 engine: continuous batching of at most max_num_seqs
running sequences, at most max_num_batched_tokens new tokens per iteration (decodes first, then
prompt chunks: chunked prefill, always on in V1), paged KV cache blocks of block_size tokens;
a sequence that finds no free block is preempted and later recomputed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dse.core.limits import MIN_RATE_PER_S

LoadKind = Literal["batch", "concurrency", "rate"]
LOAD_KINDS: tuple[LoadKind, ...] = ("batch", "concurrency", "rate")

# vLLM's EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py, 0.9-0.11), the OpenAI
# server's usage context: GPUs of at least 70 GiB that are not A100s (H100, H200, MI300X) get
# max_num_batched_tokens 8192 and max_num_seqs 1024; every other GPU 2048 and 256 ("Setting
# large max_num_batched_tokens for A100 reduces throughput", PR #17885).
LARGE_GPU_BYTES = 70 * 2**30
VLLM_LARGE = (8192, 1024)
VLLM_DEFAULT = (2048, 256)
BLOCK_SIZE_TOKENS = 16  # vLLM's default --block-size


@dataclass(frozen=True)
class Load:
    """kind: batch | concurrency | rate; value: B, C, or requests/s (inf: all at once);
    requests: how many requests the run serves (a batch serves its B)."""

    kind: LoadKind
    value: float
    input_tokens: int
    output_tokens: int
    requests: int
    seed: int = 0
    dataset: str | None = None  # a named length distribution (dse.serving.datasets)

    def __post_init__(self) -> None:
        if self.kind not in LOAD_KINDS:
            raise ValueError(f"load kind {self.kind!r}; valid: {', '.join(LOAD_KINDS)}")
        if not (self.value > 0):
            raise ValueError(f"load value {self.value!r} must be positive")
        if self.kind == "rate" and self.value < MIN_RATE_PER_S:
            raise ValueError(f"a rate of {self.value:g} requests/s is below {MIN_RATE_PER_S:g} "
                             "(one request in 12 days)")
        if self.kind != "rate" and not (math.isfinite(self.value)
                                        and self.value == int(self.value)):
            raise ValueError(f"{self.kind} {self.value!r} must be a whole number")
        if self.input_tokens < 1 or self.output_tokens < 1 or self.requests < 1:
            raise ValueError("input_tokens, output_tokens and requests must be at least 1")

    def lengths(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The n requests' (input, output) tokens: fixed, or drawn from the dataset (seeded by
        the load's seed)."""
        if self.dataset is None:
            return (np.full(n, self.input_tokens, dtype=np.int64),
                    np.full(n, self.output_tokens, dtype=np.int64))
        from dse.serving.datasets import dataset

        i, o = dataset(self.dataset).draw(n, self.seed)
        return i.astype(np.int64), o.astype(np.int64)

    @property
    def offline(self) -> bool:
        """Every request present at once (a static batch, or an infinite rate)."""
        return self.kind == "batch" or (self.kind == "rate" and math.isinf(self.value))


@dataclass(frozen=True)
class Caps:
    """The continuous-batching scheduler's caps (vLLM's names)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int = BLOCK_SIZE_TOKENS

    def __post_init__(self) -> None:
        if self.max_num_seqs < 1 or self.max_num_batched_tokens < 1 or self.block_size < 1:
            raise ValueError("max_num_seqs, max_num_batched_tokens and block_size must be at "
                             "least 1")


def vllm_caps(memory_bytes: float, device_name: str, *, max_num_seqs: int | None = None,
              max_num_batched_tokens: int | None = None) -> Caps:
    """vLLM's OpenAI-server defaults for a GPU of this memory and name, unless given."""
    large = memory_bytes >= LARGE_GPU_BYTES and "a100" not in device_name.lower()
    tokens, seqs = VLLM_LARGE if large else VLLM_DEFAULT
    return Caps(max_num_seqs or seqs, max_num_batched_tokens or tokens)


@dataclass(frozen=True)
class Slo:
    """Service-level objectives (ms; None: no bound), as vLLM's --goodput ttft:MS tpot:MS
    e2el:MS."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.e2el_ms))

    def met_share(self, latencies_s: Sequence[Any],
                  scale: Sequence[float] = (1.0, 1.0, 1.0)) -> float:
        """The share of requests that meet every bound: latencies_s the requests' (TTFT,
        TPOT, e2e latency) in seconds (arrays, one value a request; a closed form's means:
        scalars, a share of 0 or 1), each multiplied by its `scale` (an interval end's
        relative move of that latency)."""
        met = np.ones(np.shape(latencies_s[0]), dtype=bool)
        for bound, v, k in zip((self.ttft_ms, self.tpot_ms, self.e2el_ms), latencies_s, scale,
                               strict=True):
            if bound is not None:
                met &= np.asarray(v, dtype=float) * k * 1e3 <= bound
        return float(np.mean(met))


def latencies_s(m: Mapping[str, Any], res: Mapping[str, Any]) -> tuple[Any, ...]:
    """Each request's (TTFT, TPOT, e2e latency) in seconds: a simulated run's, else (the
    closed form) every request at the means."""
    per = m.get("_per_request")
    if per is not None:
        return tuple(per)
    return tuple(res[f"mean_{k}_ms"] / 1e3 for k in ("ttft", "tpot", "e2el"))


def goodput_interval(goodput: float, latencies: Sequence[Any], slo: Slo,
                     ends: Sequence[tuple[float, Sequence[float]]]) -> list[float]:
    """The 90% interval of request_goodput: at each interval end (its served rate and the
    relative moves of the mean TTFT, TPOT and e2e latency) the requests' latencies move by
    those ratios and the share meeting the SLOs is counted again; the interval spans the
    central value and every end."""
    at = [rate * slo.met_share(latencies, scale) for rate, scale in ends]
    return [min(goodput, *at), max(goodput, *at)]


@dataclass(frozen=True)
class Speculation:
    """Token-level speculative decoding (vLLM's --speculative-model, --num-speculative-tokens):
    each decode iteration a proposer proposes k tokens per sequence and one target pass
    verifies k + 1 positions; each proposed token is accepted with probability
    acceptance_rate, independently, until the first rejection (the target's own token then
    replaces it, or follows k accepted ones). proposer: "ngram" (prompt lookup on the host:
    no device time) or a draft model's catalog name (it runs on the target's GPUs)."""

    proposer: str
    num_speculative_tokens: int
    acceptance_rate: float
    basis: str  # where the acceptance rate comes from

    def __post_init__(self) -> None:
        if self.num_speculative_tokens < 1:
            raise ValueError("num_speculative_tokens must be at least 1")
        if not 0.0 <= self.acceptance_rate < 1.0:
            raise ValueError(f"acceptance rate {self.acceptance_rate!r} must be in [0, 1)")

    @property
    def tokens_per_pass(self) -> float:
        """Expected tokens a sequence gains per target pass: (1 - a^(k+1)) / (1 - a)."""
        a, k = self.acceptance_rate, self.num_speculative_tokens
        return (1.0 - a ** (k + 1)) / (1.0 - a)
