"""The request-level discrete-event simulator: every request, every iteration of the replica.

Each iteration, as vLLM's V1 scheduler builds it: every running sequence whose prompt is done
decodes one token; the rest of max_num_batched_tokens goes to prompt chunks, first the
sequences part-way through their prompt, then waiting requests in arrival order, admitted while
fewer than max_num_seqs run and the free cache blocks hold the whole prompt. A request's first
token comes at the end of the iteration that finishes its prompt; each decode iteration adds
one. When the cache cannot hold every decoding sequence's next token, the latest admitted
sequence is preempted and recomputed later (its prompt and the tokens it had, but the one it
feeds next, are prefilled again, and it resumes decoding: vLLM's recompute preemption). The
iteration's time and power are the engine's (`Engine.iteration_s`, `iteration_power_w`);
between iterations with nothing to run the replica idles. Decode-only iterations between two
events (an arrival, a completion, a cache block running out) are identical but for the context,
in which the time is affine: they run as one stretch at their mean context, exactly. Seeded:
Poisson arrival times come from numpy's generator with `Load.seed`; a dataset's lengths are
drawn per request (`Load.lengths`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from dse.core.arrays import F64
from dse.serving.engine import Engine
from dse.serving.load import Load


@dataclass(frozen=True)
class Run:
    """What a run recorded (seconds from the first arrival; joules)."""

    arrival_s: F64
    first_token_s: F64
    finish_s: F64
    itl_s: F64  # every gap between consecutive output tokens of a request
    energy_j: float
    busy_s: float
    iterations: int
    preemptions: int
    input_tokens: F64  # each request's
    output_tokens: F64

    @property
    def duration_s(self) -> float:
        return float(self.finish_s.max() - self.arrival_s.min())


def arrival_times(load: Load, n: int) -> F64:
    """Open-loop arrivals: all at 0 offline, else a Poisson process at load.value."""
    if load.offline:
        return np.zeros(n)
    rng = np.random.default_rng(load.seed)
    gaps = rng.exponential(1.0 / load.value, n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


def initial_arrivals(load: Load, n: int) -> tuple[F64, int]:
    """(arrival time of each of n requests, how many are issued at the start): a closed loop's
    C clients send at 0 and the rest wait for a client (inf until then); an open loop's
    arrivals are `arrival_times`, every one issued."""
    if load.kind != "concurrency":
        return arrival_times(load, n), n
    issued = min(n, int(load.value))
    arrival = np.full(n, np.inf)
    arrival[:issued] = 0.0
    return arrival, issued


def simulate(engine: Engine, load: Load, requests: int | None = None) -> Run:
    """Serve `requests` (default load.requests; a batch serves its B) requests of the load on
    one replica."""
    n = int(load.value) if load.kind == "batch" else (requests or load.requests)
    inp, out = load.lengths(n)  # each request's prompt and output tokens
    caps = engine.caps
    capacity_blocks = engine.kv_capacity_tokens // caps.block_size
    closed = load.kind == "concurrency"
    arrival, issued = initial_arrivals(load, n)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    last_token = np.full(n, np.nan)
    generated = np.zeros(n, dtype=np.int64)
    prefill_left = inp.copy()
    cached = np.zeros(n, dtype=np.int64)  # tokens in the sequence's KV cache
    itl: list[float] = []
    waiting: deque[int] = deque()
    running: list[int] = []
    order = np.argsort(arrival[:issued], kind="stable")
    pending: deque[int] = deque(int(i) for i in order)
    t, energy, busy, iters, preempted, done = 0.0, 0.0, 0.0, 0, 0, 0
    idle_w = engine.idle_w
    spec = engine.speculation
    accept = np.random.default_rng(load.seed + 1)  # accepted proposals (speculation)

    bs = caps.block_size

    def used_blocks(extra: int = 0) -> int:
        return sum(-(-(int(cached[r]) + extra) // bs) for r in running)

    while done < n:
        while pending and arrival[pending[0]] <= t:
            waiting.append(pending.popleft())
        decodes = [r for r in running if prefill_left[r] == 0]
        # the cache must hold each decoding sequence's next token: preempt the latest
        while decodes and used_blocks(1) > capacity_blocks and len(running) > 1:
            r = running.pop()
            preempted += 1
            prefill_left[r] = inp[r] + generated[r] - 1  # all but the token it feeds next
            cached[r] = 0
            waiting.appendleft(r)
            decodes = [q for q in running if prefill_left[q] == 0]
        budget = caps.max_num_batched_tokens - len(decodes)
        chunks: list[tuple[int, int]] = []
        for r in running:
            if prefill_left[r] > 0 and budget > 0:
                take = int(min(prefill_left[r], budget))
                chunks.append((r, take))
                budget -= take
        free = capacity_blocks - used_blocks()
        while waiting and budget > 0 and len(running) < caps.max_num_seqs:
            r = waiting[0]
            need = -(-int(prefill_left[r]) // bs)  # blocks the whole prompt holds
            if need > free:
                break
            waiting.popleft()
            running.append(r)
            free -= need
            take = int(min(prefill_left[r], budget))
            chunks.append((r, take))
            budget -= take
        if not decodes and not chunks:
            if not pending:  # nothing will ever fit: a prompt larger than the cache
                r = waiting[0]
                raise ValueError(f"a request of {inp[r]} + {out[r]} tokens does not fit the "
                                 f"replica's KV cache of {engine.kv_capacity_tokens} tokens")
            nxt = float(arrival[pending[0]])
            energy += idle_w * (nxt - t)
            t = nxt
            continue
        ctx = float(np.mean([cached[r] for r in decodes])) if decodes else 0.0
        p_tokens = sum(take for _, take in chunks)
        p_ctx = float(np.mean([cached[r] for r, _ in chunks])) if chunks else 0.0
        m = max(len(chunks), 1)
        steps = 1
        if not chunks and spec is None:  # decode-only iterations until the next event
            steps = _stretch(engine, decodes, generated, out, cached, capacity_blocks,
                             running, ctx, t, float(arrival[pending[0]]) if pending else np.inf)
        mid = ctx + (steps - 1) / 2  # the iteration time is affine in the context
        dt = float(engine.iteration_s(len(decodes), mid, p_tokens, p_ctx, m)) * steps
        energy += float(engine.iteration_power_w(len(decodes), mid, p_tokens, p_ctx, m)) * dt
        busy += dt
        iters += steps
        t += dt
        finished: list[int] = []
        gained = (np.ones(len(decodes), dtype=np.int64) * steps if spec is None
                  else _accepted(accept, spec.acceptance_rate, spec.num_speculative_tokens,
                                 len(decodes)))
        for r, g in zip(decodes, gained, strict=True):
            g = int(min(g, out[r] - generated[r]))
            cached[r] += g
            generated[r] += g
            gap = dt / steps
            itl.append(t - dt + gap - last_token[r])
            if steps > 1:
                itl.extend([gap] * (steps - 1))
            if spec is not None and g > 1:  # a verified run of tokens arrives at once
                itl.extend([0.0] * (g - 1))
            last_token[r] = t
            if generated[r] >= out[r]:
                finished.append(r)
        for r, take in chunks:
            prefill_left[r] -= take
            cached[r] += take
            if prefill_left[r] == 0 and generated[r] == 0:
                generated[r] = 1
                first[r] = t
                last_token[r] = t
                if out[r] == 1:
                    finished.append(r)
            elif prefill_left[r] == 0:  # a recomputed sequence resumes decoding
                last_token[r] = t
        for r in finished:
            finish[r] = t
            running.remove(r)
            done += 1
            if closed and issued < n:  # the client sends its next request now
                arrival[issued] = t
                pending.append(issued)
                issued += 1
    return Run(arrival, first, finish, np.asarray(itl, dtype=float), energy, busy, iters,
               preempted, inp.astype(float), out.astype(float))


def requests_for(load: Load) -> int:
    """The requests a run serves: a batch's B, else the load's count."""
    return int(load.value) if load.kind == "batch" else load.requests


def _stretch(engine: Engine, decodes: list[int], generated: np.ndarray, out: np.ndarray,
             cached: np.ndarray, capacity_blocks: int, running: list[int], ctx: float,
             t: float, next_arrival: float) -> int:
    """Decode-only iterations that can run before the next event: until a sequence finishes,
    an arrival is due (at the first iteration's time), or the cache would need a block it
    does not have; at least one."""
    k = int(min(out[r] - generated[r] for r in decodes))
    if np.isfinite(next_arrival):
        dt1 = float(engine.iteration_s(len(decodes), ctx, 0, 0))
        k = min(k, max(int((next_arrival - t) / dt1), 1))
    bs = engine.caps.block_size
    while k > 1 and sum(-(-(int(cached[r]) + k) // bs) for r in running) > capacity_blocks:
        k //= 2
    return max(k, 1)


def _accepted(rng: np.random.Generator, a: float, k: int, n: int) -> np.ndarray:
    """Tokens each of n sequences gains from one verifying pass: the accepted proposals
    until the first rejection (each accepted with probability a), plus the target's own
    token: j = 1..k+1 with P(j) = a^(j-1) (1 - a) for j <= k, a^k for k + 1."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    runs = rng.geometric(1.0 - a, n) if a > 0 else np.ones(n, dtype=np.int64)
    return np.minimum(runs, k + 1).astype(np.int64)
