"""The request-level simulator of a whole design at load (a speculative or width design): the
referee of dse.serving.designs' mean field.

Each request is a chain of stages: the prompt's prefill on the device that runs it, then R
rounds (a speculative design's attempts, a search's steps; 1 for best-of-N and voting), each
visiting the design's roles in order (draft, PRM, target; a width design's policy, then its
PRM) with 1/R of the role's batch-1 busy seconds S_r as its work. A device serves every
request it holds at once, each progressing at 1 / f_r(b) (b: the requests it holds now, the
role's own slowdown at that batch, dse.serving.designs.RoleWork.slowdown), so that a lone
request's stage takes its work; at its cap a request waits in the device's queue (first come,
first served); a request is admitted only while the requests in the system fit the KV caches of
the roles that keep them (the draft and the target). A stage's time counts towards the
request's latency in the proportion C_r / S_r (its role's critical path over its busy time, the
draft's step-ahead overlapping the PRM kept at its batch-1 share), so that a lone request's
latency is the single-stream report's exactly; the run lasts to the last request's latency.
Energy: each device's idle power over the run,
plus a resident's share of its role's batch-1 energy above idle per busy second, times the
dynamic power's rise at the batch, over the batch. Seeded: Poisson arrivals from the load's
seed. Each request is one problem drawn from the single-stream simulator's replay of the design
(`DesignLoad.spread`: its roles' work, rounds and answer tokens relative to the mean), so the
percentiles hold the problems' spread as well as the load's queueing and batching; a static
batch of one is the mean problem.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from dse.core.arrays import F64
from dse.serving.designs import DesignLoad, RoleWork
from dse.serving.load import Load
from dse.serving.simulator import initial_arrivals


@dataclass(frozen=True)
class DesignRun:
    """What a run recorded (seconds from the first arrival; joules above nothing)."""

    arrival_s: F64
    first_token_s: F64  # latency counted to the end of the prompt's prefill
    latency_s: F64  # each request's end-to-end latency (C_r / S_r of each stage's time)
    duration_s: float
    energy_j: float
    batches: dict[str, float]  # each device's mean batch while it serves
    tokens: F64  # each request's answer tokens


Stage = tuple[RoleWork, float, float]  # role, work seconds, latency per second there


def _stages(dl: DesignLoad, rounds: int, busy: dict[str, float] | None = None,
            crit: dict[str, float] | None = None) -> list[Stage]:
    """One request's stages in order: (role, work seconds, the share of its time there that
    counts towards latency, C_r / S_r); busy, crit: the request's problem's work over the
    mean's, by role (None: the mean problem)."""
    init = [r for r in dl.roles if r.role == "init"]
    body = [r for r in dl.roles if r.role != "init" and r.busy_s > 0]
    out: list[Stage] = [(r, r.busy_s, 1.0) for r in init]
    for _ in range(rounds):
        for r in body:
            b = r.busy_s * (busy or {}).get(r.role, 1.0)
            c = r.critical_s * (crit or {}).get(r.role, 1.0)
            out.append((r, b / rounds, c / b if b > 0 else 0.0))
    return out


def _tables(dl: DesignLoad, caps: dict[str, int]) -> dict[str, tuple[F64, F64]]:
    """Each role's slowdown and power rise at batches 0..c of its device (evaluated on a
    geometric grid and interpolated, as the closed form's curves)."""
    out = {}
    for r in dl.roles:
        c = caps[r.device]
        grid = np.unique(np.round(np.geomspace(1, c, 96)).astype(int))
        ks = np.arange(0, c + 1, dtype=float)
        f = np.interp(ks, grid, [r.slowdown(float(k)) for k in grid])
        rise = np.interp(ks, grid, [r.power_rise(float(k)) for k in grid])
        out[r.role] = (f, rise)
    return out


def simulate_design(dl: DesignLoad, load: Load, rounds: int) -> DesignRun:
    """Serve the load's requests (a batch serves its B) with the design (module docstring)."""
    n = int(load.value) if load.kind == "batch" else load.requests
    sp = dl.spread
    if sp is None:
        plans = [_stages(dl, max(rounds, 1))] * n
        tokens = np.full(n, dl.tokens_out)
    else:  # each request one problem of the sample, drawn with the load's seed
        pick = np.random.default_rng([load.seed, 0xD5]).integers(0, sp.rounds.size, n)
        if n == 1:
            pick = np.array([int(np.argmin(np.abs(sp.tokens - 1.0)))])  # a typical problem
            plans = [_stages(dl, max(rounds, 1))]
        else:
            plans = [_stages(dl, int(sp.rounds[i]), {r: float(v[i]) for r, v in
                                                     sp.busy.items()},
                             {r: float(v[i]) for r, v in sp.critical.items()}) for i in pick]
        tokens = dl.tokens_out * sp.tokens[pick] if n > 1 else np.full(1, dl.tokens_out)
    caps = {dv.name: max(math.floor(dv.cap), 1) for dv in dl.devices}
    tables = _tables(dl, caps)
    kv_cap = min((dv.keeps_kv for dv in dl.devices), default=math.inf)
    kv_cap = max(math.floor(kv_cap), 1) if math.isfinite(kv_cap) else n
    closed = load.kind == "concurrency"
    arrival, issued = initial_arrivals(load, n)
    pending = deque(int(i) for i in np.argsort(arrival[:issued], kind="stable"))
    admit: deque[int] = deque()  # arrived, waiting for room in the KV caches
    queues: dict[str, deque[int]] = {dv.name: deque() for dv in dl.devices}
    active: dict[str, dict[int, float]] = {dv.name: {} for dv in dl.devices}  # req -> work left
    stage = np.zeros(n, dtype=np.int64)
    since = np.zeros(n)  # when the request's current stage was queued
    latency = np.zeros(n)
    first = np.full(n, np.nan)
    in_system, done, t, energy = 0, 0, 0.0, 0.0
    finish_t = np.full(n, np.nan)
    idle = sum(dv.idle_w for dv in dl.devices)
    held = {dv.name: 0.0 for dv in dl.devices}  # integral of the batch over time
    busy = {dv.name: 0.0 for dv in dl.devices}

    def enter(r: int) -> None:
        role = plans[r][stage[r]][0]
        since[r] = t
        queues[role.device].append(r)

    def fill() -> None:
        nonlocal in_system
        while admit and in_system < kv_cap:
            r = admit.popleft()
            in_system += 1
            enter(r)
        for dv in dl.devices:
            q, act = queues[dv.name], active[dv.name]
            while q and len(act) < caps[dv.name]:
                r = q.popleft()
                act[r] = plans[r][stage[r]][1]

    while done < n:
        while pending and arrival[pending[0]] <= t:
            admit.append(pending.popleft())
        fill()
        # each resident's slowdown at its device's batch now
        nxt, slow = math.inf, {}
        for _name, act in active.items():
            b = len(act)
            for r in act:
                f = float(tables[plans[r][stage[r]][0].role][0][b])
                slow[r] = f
                nxt = min(nxt, act[r] * f)
        due = float(arrival[pending[0]]) - t if pending else math.inf
        dt = min(nxt, due)
        if not math.isfinite(dt):
            raise ValueError("the design's simulation stalled: a request fits no device")
        dyn = 0.0
        for _name, act in active.items():
            b = len(act)
            for r in act:
                role = plans[r][stage[r]][0]
                if role.busy_s > 0:
                    dyn += role.dyn_j / role.busy_s * float(tables[role.role][1][b]) / b
        energy += dyn * dt  # above idle; the idle power is counted over the run below
        for name, act in active.items():
            if act:
                held[name] += len(act) * dt
                busy[name] += dt
        t += dt
        for _name, act in active.items():
            ended = []
            for r in act:
                act[r] -= dt / slow[r]
                if act[r] <= 1e-12 * max(plans[r][stage[r]][1], 1e-12):
                    ended.append(r)
            for r in ended:
                del act[r]
                latency[r] += (t - since[r]) * plans[r][stage[r]][2]
                if stage[r] == 0:
                    first[r] = latency[r]
                stage[r] += 1
                if stage[r] < len(plans[r]):
                    enter(r)
                else:
                    done += 1
                    in_system -= 1
                    finish_t[r] = t
                    if closed and issued < n:
                        arrival[issued] = t
                        pending.append(issued)
                        issued += 1
    # the link's seconds (no device) and anything not in a role: added as at batch 1
    rest = dl.latency_s - sum(r.critical_s for r in dl.roles)
    latency += rest
    # the run ends as the last request's latency does (its stages' trailing overlapped work
    # is the roles' S_r beyond C_r, done within the latency in the design)
    duration = float(np.max(arrival + latency) - arrival.min())
    energy += idle * duration
    batches = {k: (held[k] / busy[k] if busy[k] > 0 else 0.0) for k in held}
    return DesignRun(arrival, first, latency, duration, energy, batches, tokens)
