"""The steady-state closed form of one replica under a load (means; the simulator is the
referee and the source of percentiles).

Open loop at a rate lambda (requests/s), every request I prompt tokens and O output tokens:
- a decode iteration of b running sequences takes tau = E_k[t(b, k)] with k ~ Poisson(m), m =
  lambda tau, the prompts that arrive during one iteration and join the next (t: the engine's
  iteration, prompts as chunks of one pass; t is not linear in k: the first prompt rides on the
  decodes' weight read, the next ones add their compute whole);
- the busy share u = 1 - exp(-lambda e2el): the chance at least one request is in the system
  (its number is Poisson with mean lambda e2el, Little's law on an infinite-server queue, right
  while the caps do not bind); b = max(1, lambda (O - 1) tau / u): the decoding sequences seen
  by a busy iteration (Little's law on the decode phase);
- TTFT = u x the mean remaining time of the iteration under way when the request arrives
  (E[t^2] / 2 E[t] over the prompt count) + the iteration that carries its prompt beside the
  others that arrived with it; TPOT = ITL = tau; e2el = TTFT + (O - 1) tau. A fixed point in
  tau.
Capacity: the largest rate whose fixed point holds with b within max_num_seqs and the KV cache
(sequences of I + O / 2 tokens on average) and its prompts within max_num_batched_tokens.
Past it the queue builds: the cohort recurrence below with the arrivals spread evenly at the
rate (the knee); every request at once (an infinite rate) is the static batch of all of them.
A static batch of B (vLLM's benchmark_latency) is a deterministic recurrence over cohorts: each
iteration decodes every cohort whose prompts are done and fills the rest of
max_num_batched_tokens with whole prompts; a cohort finishes O - 1 iterations after its prompts.
C clients in a closed loop, all requests alike, are the same recurrence with each finished
cohort sending its next prompts at once (the cohorts' pattern persists: equal requests never
spread out). Batch 1 at a vanishing rate is the single-stream model: a prefill of I
tokens and O - 1 decode steps of one sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dse.serving.engine import Engine
from dse.serving.load import Load

ITERATIONS = 100  # fixed-point steps; the map is a contraction below capacity
TOLERANCE = 1e-6
BISECTIONS = 16  # capacity to 1.5e-5 of the caps' rate


@dataclass(frozen=True)
class Steady:
    """Mean figures of a replica in the steady state (seconds, requests/s, watts)."""

    request_rate: float  # requests/s completed
    ttft_s: float
    tpot_s: float
    e2el_s: float
    busy_share: float
    batch: float  # decoding sequences in a busy iteration
    power_w: float
    saturated: bool
    capacity_rate: float  # requests/s at which the caps bind


POISSON_MAX_MEAN = 64.0  # past this many prompts per iteration their count is its mean


def _poisson_weights(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, P(k)): the prompts that join an iteration, Poisson with mean m (the arrivals during
    the iteration before it), on a grid 0..K wide enough for the largest m (K = m + 5 sqrt(m)
    + 5: the tail past it, under 1.2e-7, folded back by normalising); P has m's shape plus the k
    axis."""
    top = float(np.max(m, initial=0.0))
    k = np.arange(math.ceil(top + 5.0 * math.sqrt(top) + 5.0) + 1, dtype=float)
    mm = np.asarray(m, dtype=float)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = k * np.log(mm) - mm - _LGAMMA[: k.size]
    w = np.where(mm > 0, np.exp(logp), (k == 0).astype(float))
    return k, w / w.sum(axis=-1, keepdims=True)


# log k! for the grid: K is at most 64 + 5 sqrt(64) + 5 + 1 = 110 (POISSON_MAX_MEAN's)
_LGAMMA = np.array([math.lgamma(j + 1.0) for j in range(160)])


def _iteration_mix(e: Engine, b: np.ndarray | float, m: np.ndarray | float, inp: int,
                   ctx: float, *, power: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Over the k ~ Poisson(m) prompts that join an iteration of b decodes (each prompt a
    chunk of inp tokens): (E[t], E[t^2], E[t x power], the mean time of an iteration that
    carries one given prompt beside its k others). The time is not linear in k: the first
    prompt rides on the decodes' weight read, the next ones add their compute whole, so the
    mean of t over k is above t at the mean k (arrivals come in bursts). Past
    POISSON_MAX_MEAN prompts the count's spread is a few percent of it and k is its mean."""
    mm = np.asarray(m, dtype=float)
    big = ~(mm <= POISSON_MAX_MEAN)  # a non-finite count (a diverging rate) too
    bb = np.asarray(b, dtype=float)[..., None]
    k, w = _poisson_weights(np.where(big, 0.0, mm))
    w = np.where(big[..., None], 0.0, w)
    kk = np.append(k, k[-1] + 1.0)
    t = e.iteration_s(bb, ctx, inp * kk, 0, np.maximum(kk, 1.0))
    t0, t1 = t[..., :-1], t[..., 1:]
    mean, sq, carrying = (w * t0).sum(-1), (w * t0 ** 2).sum(-1), (w * t1).sum(-1)
    energy = ((w * t0 * e.iteration_power_w(bb, ctx, inp * k, 0, np.maximum(k, 1.0))).sum(-1)
              if power else np.full(mean.shape, np.nan))
    if big.any():  # the count at its mean
        b1, m1 = np.asarray(b, dtype=float), np.maximum(mm, 1.0)
        t_m = e.iteration_s(b1, ctx, inp * m1, 0, m1)
        mean, sq = np.where(big, t_m, mean), np.where(big, t_m ** 2, sq)
        carrying = np.where(big, e.iteration_s(b1, ctx, inp * (m1 + 1), 0, m1 + 1), carrying)
        if power:
            energy = np.where(big, t_m * e.iteration_power_w(b1, ctx, inp * m1, 0, m1), energy)
    return mean, sq, energy, carrying


def _prompt_iteration(e: Engine, b: float, m: float, inp: int, ctx: float) -> float:
    """Mean iteration time with b decodes when m prompts of inp tokens arrive per iteration."""
    return float(_iteration_mix(e, b, m, inp, ctx, power=False)[0])


def _residual_s(mean_s: np.ndarray | float, mean_sq: np.ndarray | float) -> np.ndarray:
    """The mean remaining time of the iteration under way when a request arrives: E[t^2] /
    (2 E[t]) (a random arrival lands in a long iteration more often than in a short one)."""
    return np.asarray(mean_sq) / (2.0 * np.asarray(mean_s))


def _power(e: Engine, b: float, m: float, inp: int, ctx: float) -> float:
    """Mean power over busy time: the iterations with k prompts, weighted by the time each
    kind takes."""
    mean, _, energy, _ = _iteration_mix(e, b, m, inp, ctx)
    return float(energy / mean)


def batch_cap(e: Engine, load: Load) -> float:
    """Sequences the replica can run at once: max_num_seqs, and the KV cache over sequences
    of I + O / 2 tokens on average."""
    kv = e.kv_capacity_tokens / (load.input_tokens + load.output_tokens / 2)
    return float(min(e.caps.max_num_seqs, math.floor(kv)))


def _decode_ctx(load: Load) -> float:
    return load.input_tokens + max(load.output_tokens - 2, 0) / 2


def open_loop(e: Engine, load: Load, rate: float, *, closed: bool = False) -> Steady | None:
    """The fixed point at `rate`, or None where the caps bind (saturated). closed: the
    requests come from clients in a closed loop, each sending its next request as its last
    completes: someone is always in the system (u = 1) and a request arrives at an
    iteration's end (no remaining iteration to wait for)."""
    inp, out = load.input_tokens, load.output_tokens
    ctx = _decode_ctx(load)
    cap = batch_cap(e, load)
    passes = (out - 1) / e.tokens_per_pass  # decode iterations a request lives through
    tau = float(e.iteration_s(1, ctx, 0, 0))
    b, u, m, ttft, e2el = 1.0, 0.0, 0.0, 0.0, 0.0
    for _ in range(ITERATIONS):
        m = rate * tau
        mean, sq, _, carrying = (float(x) for x in _iteration_mix(e, b, m, inp, ctx,
                                                                   power=False))
        ttft = (0.0 if closed else u * float(_residual_s(mean, sq))) + carrying
        e2el = ttft + passes * tau
        u = 1.0 if closed else -math.expm1(-rate * e2el)
        b = max(1.0, rate * passes * tau / u) if out > 1 else 0.0
        if b > cap or m * inp + b > e.caps.max_num_batched_tokens or not math.isfinite(tau):
            return None
        new = _prompt_iteration(e, b, m, inp, ctx)
        if abs(new - tau) <= TOLERANCE * tau:
            tau = new
            break
        tau = new
    else:
        return None
    power = (1 - u) * e.idle_w + u * _power(e, b, m, inp, ctx)
    return Steady(rate, ttft, tau, e2el, u, b, power, False, float("nan"))


def capacity(e: Engine, load: Load) -> Steady:
    """The replica at its caps: b_cap sequences decoding, a prompt joining as one finishes."""
    inp, out = load.input_tokens, load.output_tokens
    ctx = _decode_ctx(load)
    b = batch_cap(e, load)
    if b < 1:
        raise ValueError(f"a request of {inp} + {out} tokens does not fit the replica's KV "
                         f"cache of {e.kv_capacity_tokens} tokens")
    if out == 1:  # prompts only: full chunks of max_num_batched_tokens
        per = max(e.caps.max_num_batched_tokens // inp, 1)
        tau = float(e.iteration_s(0, 0, per * inp, 0, per))
        rate = per / tau
        return Steady(rate, tau, 0.0, tau, 1.0, 0.0,
                      float(e.iteration_power_w(0, 0, per * inp, 0, per)), True, rate)
    passes = (out - 1) / e.tokens_per_pass  # decode iterations a request lives through
    m = b / passes  # prompts per iteration that keep b decoding
    tau, sq, energy, carrying = (float(x) for x in _iteration_mix(e, b, m, inp, ctx))
    rate = b / (passes * tau)
    ttft = float(_residual_s(tau, sq)) + carrying
    return Steady(rate, ttft, tau, ttft + passes * tau, 1.0, b, energy / tau, True, rate)


def capacity_rate(e: Engine, load: Load) -> float:
    """The largest rate with an unsaturated fixed point (bisection up to the caps' rate)."""
    top = capacity(e, load).request_rate
    lo, hi = 0.0, top
    if open_loop(e, load, hi * (1 - 1e-6)) is not None:
        return hi
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if open_loop(e, load, mid) is None:
            hi = mid
        else:
            lo = mid
    return lo



GRID = 256  # rates a round of `capacity_rate_grid` tries at once


def _first_failing(e: Engine, load: Load, rates: np.ndarray, keep: int = 0) -> tuple[int, bool]:
    """(the index of the first of `rates` without a fixed point, or its size; whether the
    last `keep` rates all have one): `open_loop`'s steps, bounds and tolerance for every rate
    at once (the same numbers, elementwise), with the work a bracket does not need left
    out: a rate past one known to fail is dropped (unless among the kept) and a decided rate
    leaves the arrays (a failing rate's prompt count is not averaged over)."""
    inp, out = load.input_tokens, load.output_tokens
    ctx = _decode_ctx(load)
    cap = batch_cap(e, load)
    passes = (out - 1) / e.tokens_per_pass
    r = np.asarray(rates, dtype=float)
    n = r.size
    idx = np.arange(n)  # the live rates' indices
    tau = np.full(n, float(e.iteration_s(1, ctx, 0, 0)))
    b, u = np.ones(n), np.zeros(n)
    first, ok = n - keep, np.zeros(n, dtype=bool)  # the first failure among the scanned
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(ITERATIONS):
            m = r * tau
            mean, sq, _, carrying = _iteration_mix(e, b, m, inp, ctx, power=False)
            ttft = u * _residual_s(mean, sq) + carrying
            e2el = ttft + passes * tau
            u = -np.expm1(-r * e2el)
            b = np.maximum(1.0, r * passes * tau / u) if out > 1 else np.zeros(r.shape)
            dead = (b > cap) | (m * inp + b > e.caps.max_num_batched_tokens) | ~np.isfinite(tau)
            new = _iteration_mix(e, np.where(dead, 1.0, b), np.where(dead, 0.0, m), inp, ctx,
                                 power=False)[0]
            conv = ~dead & (np.abs(new - tau) <= TOLERANCE * tau)
            ok[idx[conv]] = True
            failed = idx[dead & (idx < first)]
            if failed.size:
                first = int(failed[0])
            live = ~dead & ~conv & ((idx < first) | (idx >= n - keep))
            if not live.any():
                break
            idx, r, tau, b, u = (x[live] for x in (idx, r, new, b, u))
        else:  # not converged in ITERATIONS steps: no fixed point
            scanned = idx[idx < first]
            first = int(scanned[0]) if scanned.size else first
            ok[idx] = False
    return first, bool(ok[n - keep:].all())


def capacity_rate_grid(e: Engine, load: Load, rounds: int = 2) -> float:
    """`capacity_rate` by rounds of GRID rates at once (numpy) instead of a bisection: each
    round narrows the bracket GRID-fold; two rounds try the same dyadic rates as the
    bisection's 16 steps (256^2 = 2^16), so the same capacity (tested) in about a third of
    the time; for a search serving many designs. The caps' rate itself is tried with the
    first round (`_first_failing` keeps it to its end)."""
    top = capacity(e, load).request_rate
    lo, hi = 0.0, top
    for i in range(rounds):
        rates = lo + (hi - lo) * np.arange(1, GRID + 1) / GRID
        if i == 0:
            first, top_ok = _first_failing(e, load, np.append(rates, top * (1 - 1e-6)), 1)
            if top_ok:
                return top
        else:
            first, _ = _first_failing(e, load, rates)
        lo = float(rates[first - 1]) if first > 0 else lo
        hi = float(rates[first]) if first < GRID else hi
    return lo


def static_batch(e: Engine, load: Load) -> Steady:
    """B requests together (module docstring): the recurrence over cohorts of prompts."""
    return cohorts(e, load, int(load.value), int(load.value), resend=False)


def closed_loop(e: Engine, load: Load) -> Steady:
    """C clients, load.requests requests in all (module docstring)."""
    return cohorts(e, load, int(min(load.value, load.requests)), load.requests, resend=True)


def cohorts(e: Engine, load: Load, start: int, total: int, *, resend: bool,
            rate: float = math.inf) -> Steady:
    """The cohort recurrence: `start` prompts waiting at 0, `total` requests in all; resend:
    each finished request's client sends the next at once; rate: the others arrive evenly at
    this rate (a rate past capacity: the queue builds and drains as in the simulator)."""
    inp, out = load.input_tokens, load.output_tokens
    budget = e.caps.max_num_batched_tokens
    cap = max(int(batch_cap(e, load)), 1)
    gain = e.tokens_per_pass  # tokens a decoding sequence gains per iteration
    waiting: list[list[float]] = [[float(start), 0.0]]  # [count, sum of their send times]
    running: list[list[float]] = []  # [size, decodes left]
    sent, t, energy, first, finish, done = start, 0.0, 0.0, 0.0, 0.0, 0
    sent_at = 0.0  # the sum of the requests' send times
    while done < total:
        if math.isfinite(rate) and sent < total:  # the arrivals due by now
            due = min(int(t * rate) + 1, total) - sent
            if due > 0:
                sends = (sent * due + due * (due - 1) / 2) / rate
                waiting.append([float(due), sends])
                sent_at += sends
                sent += due
        dec = sum(c[0] for c in running if c[1] > 0)
        ctx = float(np.mean([inp + out - 1 - c[1] * gain for c in running if c[1] > 0])) \
            if dec else 0.0
        room = min((budget - int(dec)) // inp, cap - int(sum(c[0] for c in running)))
        k = 0
        admitted: list[list[float]] = []
        while waiting and k < room:
            take = min(int(waiting[0][0]), room - k)
            share = waiting[0][1] * take / waiting[0][0]
            admitted.append([float(take), share])
            k += take
            waiting[0][0] -= take
            waiting[0][1] -= share
            if waiting[0][0] == 0:
                waiting.pop(0)
        if dec == 0 and k == 0:
            if math.isfinite(rate) and sent < total and not waiting:  # idle until the next
                nxt = sent / rate
                energy += e.idle_w * (nxt - t)
                t = nxt
                continue
            raise ValueError(f"a request of {inp} prompt tokens does not fit "
                             f"max_num_batched_tokens {budget}")
        # with no prompt to run, decode-only iterations until the next cohort ends are one
        # stretch at their mean context (the time is affine in it)
        steps = max(math.ceil(min(c[1] for c in running) - 1e-9), 1) if k == 0 else 1
        if steps > 1 and math.isfinite(rate) and sent < total:  # stop at the next arrival
            t1 = float(e.iteration_s(dec, ctx, 0, 0))
            steps = max(1, min(steps, int((sent / rate - t) / t1)))
        mid = ctx + (steps - 1) * gain / 2
        dt = float(e.iteration_s(dec, mid, k * inp, 0, max(k, 1))) * steps
        energy += float(e.iteration_power_w(dec, mid, k * inp, 0, max(k, 1))) * dt
        t += dt
        ended = 0.0
        for c in running:
            if c[1] > 0:
                c[1] -= steps
                if c[1] <= 1e-9:  # its last pass (a fractional one: fewer tokens needed)
                    c[1] = 0.0
                    ended += c[0]
        running = [c for c in running if c[1] > 0]
        for size, since in admitted:
            first += size * t - since
            if out == 1:
                ended += size
            else:
                running.append([size, (out - 1) / gain])
        finish += ended * t
        done += int(ended)
        if resend and ended and sent < total:
            more = min(int(ended), total - sent)
            waiting.append([float(more), more * t])
            sent += more
            sent_at += more * t
    ttft = first / total
    e2el = (finish - sent_at) / total  # each request from its own send
    tpot = (e2el - ttft) / (out - 1) if out > 1 else 0.0
    return Steady(total / t, ttft, tpot, e2el, 1.0, float(min(start, cap)), energy / t, False,
                  float("nan"))
