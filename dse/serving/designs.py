"""A whole design at load: a speculative or width design serving many problems at once.

The single-stream model (`dse evaluate`, the closed form) gives each role's work per problem at
batch 1: its device's busy seconds S_r (Report.devices[r].busy_s, the prompt's prefill booked to
the device that runs it), its share of the critical path C_r (Report.latency_breakdown_s[r]),
the link's and the latency L1. At a load each device is a continuous-batching server whose
per-request work is its roles' work, modelled as follows:

- a device running b requests' work at once (its batch) takes f_r(b) times as long per request
  as it does alone: f_r(b) = phi_r t_dec(n0 b) / t_dec(n0) + (1 - phi_r) t_pre(n0 b) / t_pre(n0),
  with t_dec one decode step of the role's model at its mean context (`decode_token_s`, batch
  n0 b: weights read once a pass, KV per sequence) and t_pre one prefill call of the role's
  tokens (`prefill_s`, batch n0 b); phi_r is the decode share of the role's batch-1 busy time
  (the draft: decode; the PRM: prefill, it scores whole contexts; a speculative target: its
  rewrite tokens' decode steps over its busy time, the rest the prefill of the tokens committed
  since its last call; a width policy: its N sequences' decode, n0 = N); the prompt's prefill
  (init) is a prefill on the device that runs it;
- a device is a processor-sharing server whose speed depends on how many requests it holds:
  with n of them (up to its cap c) each progresses at 1 / f_g(n) (f_g the work-weighted f_r
  of its roles), so it completes requests at n / (S_g f_g(n)), S_g its roles' busy seconds a
  request; above the cap the others wait. With Poisson arrivals the number it holds is the
  birth-death chain p(n) = p(0) prod_{k<=n} lambda S_g f_g(k) / k (and a geometric tail
  beyond c), solved exactly; such a queue is insensitive to how a request's work is split
  into stages, and an open network of them has the product form (BCMP), so the devices are
  solved one by one. A request's time at the device is S_g F_g with F_g = E[N_g] /
  (lambda S_g) (Little's law), its batch while busy E[min(N_g, c)] / P(N_g > 0);
- the request's latency: L1 + sum_r C_r (F_g(r) - 1), the wait for a full device included;
- capacity: the largest rate at which every device is stable (below c / (S_g f_g(c)), the cap
  c being vLLM's max_num_seqs on a GPU and the KV cache beside the weights at the request's
  mean context on every device: `Placement.max_batch`, in requests of n0 sequences) and the
  requests in the system (lambda x latency) fit the KV caches of the roles that keep a
  request's cache for its whole life (the draft and the target, which cache prefixes; a PRM
  re-reads each context, vLLM's pooling model with prefix caching off). Past capacity the
  throughput is the capacity, the bottleneck device runs at its cap, and a request waits
  (i - 1)(1/mu - 1/lambda) behind the ones before it (the mean over the run's N requests);
- power: each device's idle power, plus each role's batch-1 energy above idle per problem
  scaled by f_r(b) / b (the device's busy time a request takes at batch b) and by the dynamic
  power's rise with the batch (`power_w` at batch n0 b over n0), at the mean batch b;
- a static batch of B: every stage runs at batch B (waves of the cap when B exceeds it); C
  clients in a closed loop: lambda = C / latency(lambda), a fixed point; every request at once
  (rate inf): the capacity, each request waiting behind those before it.

Batch 1 (a static batch of one, or a vanishing rate) is the single-stream report exactly. The
request-level simulator (dse.serving.design_sim) runs the same servers request by request
(percentiles; the referee). What both leave out: a request's draft step-ahead overlapping its
PRM's scoring is kept at its batch-1 share (C_r against S_r), so a device's slowdown stretches
the critical path in proportion; the closed form's problems are all the mean problem (its
queues are insensitive to the spread; the simulator draws each request's problem from the
single-stream replay: `Spread`); the KV caches are admission limits, not paged per token;
colocated roles share one slowdown curve, weighted by their work.

A target-only design is served by `dse.serving.serve` (the one-model engine, both evaluators):
the target placement, the workload's prompt tokens in, its tokens per problem out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.core.arrays import F64
from dse.serving.design_queues import (
    at_rate,
    bottleneck,
    capacity,
    closed_loop,
    point_at,
    power_at,
    static,
)
from dse.serving.load import Load, Slo, goodput_interval, latencies_s

SECONDS_PER_YEAR = 365.25 * 86400


@dataclass(frozen=True)
class RoleWork:
    """One role's work per problem at batch 1 and how it grows with the device's batch."""

    role: str
    device: str  # the device group's name (its first role)
    busy_s: float  # S_r
    critical_s: float  # C_r
    dyn_j: float  # energy above idle per problem at batch 1
    slowdown: Callable[[float], float]  # f_r(b), 1 at b = 1
    power_rise: Callable[[float], float]  # dynamic power at batch b over batch 1


@dataclass(frozen=True)
class Device:
    """A device group (roles sharing one device), its idle power, batch cap, list price."""

    name: str
    roles: tuple[str, ...]
    idle_w: float
    cap: float  # requests it can batch at once
    capex_usd: float | None
    keeps_kv: float  # requests whose KV caches it holds for their whole life (inf: none)


@dataclass(frozen=True)
class Spread:
    """Per-problem work of a sample of problems (the single-stream simulator's replay), each
    relative to the sample's mean: a role's busy and critical-path seconds, the rounds
    (attempts or steps) and the answer's tokens. The design simulator draws a problem for each
    request; the closed form, insensitive to it, needs only the means."""

    busy: dict[str, F64]  # role -> busy seconds over their mean
    critical: dict[str, F64]  # role -> critical-path seconds over their mean
    rounds: F64  # whole rounds, at least 1
    tokens: F64  # answer tokens over their mean


def problem_spread(d: Any, w: Any, problems: int = 2000, seed: int = 0) -> Spread:
    """The design's problems as the single-stream simulator replays them (dse.io.resolve's)."""
    from dse.engine.simulator import replay, synthetic_trace
    from dse.engine.width import width_replay
    from dse.model.schedules import Costs

    c = Costs(d, w)
    rp = (width_replay(c, problems, seed, timeline_problem=None) if d.is_width
          else replay(c, synthetic_trace(c, problems, seed), timeline_problem=None))

    def rel(a: F64) -> F64:
        a = np.asarray(a, dtype=float)
        m = float(a.mean())
        return a / m if m > 0 else np.ones_like(a)

    roles = [r for r in d.roles]
    rounds = np.maximum(np.rint(np.asarray(rp.attempts, dtype=float)), 1.0)
    if not (d.is_speculative or d.workflow in ("step-search", "beam")):
        rounds = np.ones_like(rounds)
    return Spread({r: rel(rp.busy[r]) for r in roles}, {r: rel(rp.crit[r]) for r in roles},
                  rounds, rel(rp.committed_tokens))


@dataclass(frozen=True)
class DesignLoad:
    """A design's work at load (module docstring), from its batch-1 report."""

    family: str
    roles: tuple[RoleWork, ...]
    devices: tuple[Device, ...]
    latency_s: float  # L1
    init_s: float
    tokens_out: float  # tokens a request yields (the answer's)
    tokens_in: float
    accuracy: float | None
    rounds: int = 1  # the simulator's rounds of stages a request makes (attempts, steps)
    spread: Spread | None = None  # the problems' spread, for the simulator (None: all mean)

    def slow(self, role: RoleWork, batches: dict[str, float]) -> float:
        return role.slowdown(batches[role.device])

    def latency(self, batches: dict[str, float]) -> float:
        return self.latency_s + sum(r.critical_s * (self.slow(r, batches) - 1.0)
                                    for r in self.roles)


def _interp(fn: Callable[[int], float], b: float) -> float:
    """fn at a fractional batch: linear between the whole batches around it."""
    lo = max(math.floor(b), 1)
    hi = max(math.ceil(b), 1)
    if hi == lo:
        return fn(lo)
    return fn(lo) + (fn(hi) - fn(lo)) * (b - lo)


def _ratio(fn: Callable[[int], float], n0: int) -> Callable[[float], float]:
    from dse.devices.protocol import MAX_BATCH

    base = fn(n0)

    def f(b: float) -> float:
        nb = min(max(n0 * b, float(n0)), float(MAX_BATCH))
        return _interp(fn, nb) / base if base > 0 else 1.0

    return f


def _role_slowdown(p: Any, phi: float, ctx: float, n_pre: float, n0: int,
                   all_positions: bool) -> tuple[Callable[[float], float],
                                                  Callable[[float], float]]:
    """(f_r, the dynamic power's rise) of a role on placement p (module docstring)."""
    dec = _ratio(lambda b: float(p.decode_token_s(ctx, batch=b)), n0)
    pre = _ratio(lambda b: float(p.prefill_s(max(n_pre, 1.0), 0, batch=b,
                                             all_positions=all_positions)), n0)
    idle = float(p.power_w("idle"))
    state = "decode" if phi >= 0.5 else "prefill"
    base = float(p.power_w(state, ctx, batch=n0)) - idle

    def rise(b: float) -> float:
        from dse.devices.protocol import MAX_BATCH

        nb = int(min(max(round(n0 * b), n0), MAX_BATCH))
        return (float(p.power_w(state, ctx, batch=nb)) - idle) / base if base > 0 else 1.0

    return (lambda b: phi * dec(b) + (1.0 - phi) * pre(b)), rise


def _shared_batch(d: Any, roles: tuple[str, ...], ctx: float) -> float:
    """Sequences of ctx tokens whose caches, one in each colocated model, fit the shared
    device beside all the models' weights (per device: weights split over tp)."""
    from dse.devices import shape

    ps = [getattr(d, r) for r in roles]
    usable = min(p.usable_memory_bytes for p in ps)
    weights = sum(p.memory_needed_bytes - p.kv_bytes_per_token * p.context_tokens / p.tp
                  for p in ps)
    per_seq = sum(shape.kv_bytes_per_token(p.model, p.kv_bits) * ctx / p.tp for p in ps)
    return max(usable - weights, 0.0) / per_seq if per_seq > 0 else math.inf


def design_load(d: Any, w: Any, rep: Any, *, max_num_seqs: int | None = None) -> DesignLoad:
    """The design's work at load from its batch-1 closed-form report `rep` (a speculative or
    width design; module docstring); max_num_seqs: every GPU's cap on running sequences
    (default vLLM's for the GPU)."""
    from dse.model.schedules import Costs

    c = Costs(d, w)
    n0 = d.samples if d.is_width else 1
    prompt = float(w.prompt_tokens)
    out = float(rep.tokens_per_problem)
    ctx = prompt + out / 2
    idle = c.idle_w()
    # device groups: colocated roles, and a target that verifies shares the target's device
    group: dict[str, str] = {r: r for r in d.roles}
    for g in d.colocated:
        for r in g:
            group[r] = g[0]
    if d.is_speculative and d.verifier.is_target:
        group["prm"] = group["target"]
    init_role = "target"
    if d.is_speculative and getattr(c, "init_gpu", None) is None:
        init_role = "draft"
    roles: list[RoleWork] = []
    for r in d.roles:
        p = getattr(d, r)
        busy = float(rep.devices[r]["busy_s"])
        crit = float(rep.latency_breakdown_s.get(r, 0.0))
        dyn = float(rep.energy_by_device_j[r]) - idle[r] * float(rep.latency_s_per_problem)
        if r == "draft":
            phi, n_pre, allpos = 1.0, prompt, False
        elif r == "prm":
            phi, allpos = 0.0, True
            n_pre = w.problem_tokens + (out if d.is_width else out / 2)
        elif d.is_width:
            phi, n_pre, allpos = 1.0, prompt, False
        else:  # a speculative target: its rewrites' decode steps, the rest prefill
            calls = float(rep.target_calls_per_problem)
            dec_s = calls * w.target_step_tokens_mean * float(p.decode_token_s(ctx))
            phi = min(1.0, dec_s / busy) if busy > 0 else 1.0
            n_pre, allpos = out / max(float(rep.attempts_per_problem), 1.0), False
        f, rise = _role_slowdown(p, phi, ctx, n_pre, n0, allpos)
        roles.append(RoleWork(r, group[r], busy, crit, max(dyn, 0.0), f, rise))
    init = float(rep.latency_breakdown_s.get("init", 0.0))
    if init > 0:
        p = d.init_gpu if (d.is_speculative and d.init_gpu is not None) else getattr(
            d, init_role)
        f, rise = _role_slowdown(p, 0.0, 0.0, prompt, 1, False)
        roles.append(RoleWork("init", group[init_role], init, init, 0.0, f, rise))
    devices = []
    for name in dict.fromkeys(group.values()):
        members = tuple(r for r in d.roles if group[r] == name)
        caps, kv, price = [], [], 0.0
        priced = True
        shared = _shared_batch(d, members, prompt + out) if len(
            {id(getattr(d, r)) for r in members}) > 1 else None
        for r in members:
            p = getattr(d, r)
            mb = p.max_batch(int(min(prompt + out, p.context_tokens))) / n0
            if shared is not None:  # colocated models: their weights and caches together
                mb = min(mb, shared / n0)
            caps.append(mb)
            if r in ("draft", "target"):
                kv.append(mb)
            lp = getattr(p.device, "list_price_usd", None)
            if lp is None:
                priced = False
            elif r == members[0]:
                price += float(lp) * p.tp
            if p.kind == "gpu":
                from dse.serving.load import vllm_caps

                caps.append(vllm_caps(p.memory_bytes, p.device.name,
                                      max_num_seqs=max_num_seqs).max_num_seqs / n0)
        devices.append(Device(name, members, sum(idle[r] for r in members), max(min(caps), 0.0),
                              price if priced else None, min(kv) if kv else math.inf))
    rounds = 1
    if d.is_speculative or d.workflow in ("step-search", "beam"):
        rounds = max(round(float(rep.attempts_per_problem)), 1)
    return DesignLoad(d.family, tuple(roles), tuple(devices),
                      float(rep.latency_s_per_problem), init, out, prompt,
                      None if rep.accuracy is None else float(rep.accuracy), rounds)


def metrics(dl: DesignLoad, load: Load, limit: float | None = None) -> dict[str, Any]:
    """One replica's figures at the load (closed form), vLLM's names (means); limit: the
    design's capacity (`capacity(dl)`) where the caller has it."""
    n = int(load.value) if load.kind == "batch" else load.requests
    limit = capacity(dl) if limit is None else limit
    saturated = False
    batches: dict[str, float] = {dv.name: 1.0 for dv in dl.devices}
    if load.kind == "batch":
        lat, rate, power = static(dl, int(load.value))
        wait = 0.0
        batches = {k: min(load.value, dv.cap) for k, dv in
                   ((dv.name, dv) for dv in dl.devices)}
    elif load.kind == "concurrency":
        rate, lat, batches = closed_loop(dl, int(load.value))
        wait = 0.0
        if rate > limit:  # the bottleneck throttles the clients: C in the system (Little)
            rate, lat = limit, float(load.value) / limit
            wait = lat - closed_loop(dl, int(load.value))[1]
        power = power_at(dl, rate, batches)
    else:
        rate = load.value
        if rate < limit * (1 - 1e-9):
            pt = at_rate(dl, rate)
            assert pt is not None
            lat, wait, batches = pt.latency_s, 0.0, pt.batches
        else:  # past capacity: served at capacity, each request behind the ones before it
            saturated = True
            if not limit > 0:
                raise ValueError("the design cannot serve one request at a time within its "
                                 "devices' caps")
            neck, mu = bottleneck(dl)
            pt = point_at(dl, limit, full=neck.name if limit >= mu * (1 - 1e-6) else None)
            if pt is None:
                pt = point_at(dl, limit * (1 - 1e-6))
            assert pt is not None
            behind = (n - 1) / 2 * (1 / limit - (0.0 if math.isinf(rate) else 1 / rate))
            lat, wait, batches = pt.latency_s + behind, behind, pt.batches
            rate = limit
        power = power_at(dl, rate, batches)
    o = dl.tokens_out
    ttft = wait + (dl.init_s * _init_slow(dl, batches))
    tpot = (lat - ttft) / (o - 1) if o > 1 else 0.0
    out: dict[str, Any] = {
        "completed": n, "request_throughput": rate, "mean_ttft_ms": ttft * 1e3,
        "mean_tpot_ms": tpot * 1e3, "mean_itl_ms": tpot * 1e3, "mean_e2el_ms": lat * 1e3,
        "mean_in_system": rate * lat, "avg_power_w": power, "saturated": saturated,
        "capacity_request_rate": limit,
        "device_batches": {k: float(v) for k, v in batches.items()}}
    for name in ("ttft", "tpot", "itl", "e2el"):
        for tag in ("median", "p90", "p99"):
            out[f"{tag}_{name}_ms"] = None
    return out


def sim_metrics(dl: DesignLoad, load: Load) -> dict[str, Any]:
    """One replica's figures at the load from the request-level simulator
    (dse.serving.design_sim), means and percentiles."""
    from dse.serving.design_sim import simulate_design

    run = simulate_design(dl, load, dl.rounds)
    o = run.tokens
    ttft, e2el = run.first_token_s, run.latency_s
    tpot = np.where(o > 1, (e2el - ttft) / np.maximum(o - 1, 1), 0.0)
    out: dict[str, Any] = {"completed": int(e2el.size),
                           "request_throughput": e2el.size / run.duration_s,
                           "mean_in_system": float(e2el.sum() / run.duration_s),
                           "avg_power_w": run.energy_j / run.duration_s, "saturated": None,
                           "capacity_request_rate": capacity(dl),
                           "device_batches": run.batches,
                           "_per_request": (ttft, tpot, e2el)}
    for name, v in (("ttft", ttft), ("tpot", tpot), ("itl", tpot), ("e2el", e2el)):
        ms = v * 1e3
        out[f"mean_{name}_ms"] = float(ms.mean())
        for tag, q in (("median", 50), ("p90", 90), ("p99", 99)):
            out[f"{tag}_{name}_ms"] = float(np.percentile(ms, q))
    return out


def _init_slow(dl: DesignLoad, batches: dict[str, float]) -> float:
    init = next((r for r in dl.roles if r.role == "init"), None)
    return 1.0 if init is None else init.slowdown(batches[init.device])


def serve_design(dl: DesignLoad, load: Load, *, replicas: int = 1, slo: Slo | None = None,
                 lifetime_years: float, usd_per_kwh: float, evaluator: str = "closed-form",
                 relative: dict[str, tuple[float, float]] | None = None,
                 capacity: float | None = None) -> dict[str, Any]:
    """The load's figures on `replicas` copies of the design (module docstring): throughput,
    power and cost add up; relative: the single-stream report's relative 90% ends of its
    latency ("time") and energy per token ("energy"), applied to the time and energy
    figures; capacity: one copy's capacity where the caller has it (the closed form's)."""
    slo = slo or Slo()
    share = load
    if replicas > 1:
        from dataclasses import replace

        per = math.ceil(load.requests / replicas)
        share = (replace(load, value=load.value / replicas, requests=per)
                 if load.kind == "rate" else
                 replace(load, value=max(1.0, math.ceil(load.value / replicas)), requests=per))
    m = (metrics(dl, share, capacity) if evaluator == "closed-form"
         else sim_metrics(dl, share))
    rate = m["request_throughput"] * replicas
    power = m["avg_power_w"] * replicas
    out_tok = rate * dl.tokens_out
    prices = [dv.capex_usd for dv in dl.devices]
    capex = None if any(p is None for p in prices) else sum(p or 0.0 for p in prices)
    res = {k: v for k, v in m.items() if not k.startswith("_")}
    res |= {"request_throughput": rate, "output_throughput": out_tok,
            "total_token_throughput": rate * (dl.tokens_in + dl.tokens_out),
            "avg_power_w": power, "mean_in_system": m["mean_in_system"] * replicas,
            "j_per_token": power / out_tok, "completed": m["completed"] * replicas}
    if capex is None:
        res["cost_usd_per_mtok"] = None
    else:
        usd_per_s = capex * replicas / (lifetime_years * SECONDS_PER_YEAR) \
            + power / 1000.0 * usd_per_kwh / 3600.0
        res["cost_usd_per_mtok"] = usd_per_s / out_tok * 1e6
    latencies = latencies_s(m, res)
    res["request_goodput"] = rate * slo.met_share(latencies) if slo.any else None
    iv: dict[str, list[float]] = {}
    rel = relative or {}
    t_lo, t_hi = rel.get("time", (1.0, 1.0))
    e_lo, e_hi = rel.get("energy", (1.0, 1.0))
    for k in ("mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "mean_e2el_ms", "mean_in_system"):
        iv[k] = [res[k] * t_lo, res[k] * t_hi]
    for k in ("request_throughput", "output_throughput", "total_token_throughput"):
        if m["saturated"] is False and load.kind == "rate":
            iv[k] = [res[k], res[k]]  # an open loop below capacity serves what arrives
        else:
            iv[k] = [res[k] / t_hi, res[k] / t_lo]
    iv["j_per_token"] = [res["j_per_token"] * e_lo, res["j_per_token"] * e_hi]
    iv["avg_power_w"] = [res["avg_power_w"] * min(e_lo, 1.0),
                         res["avg_power_w"] * max(e_hi, 1.0)]
    if res["cost_usd_per_mtok"] is not None:
        iv["cost_usd_per_mtok"] = [res["cost_usd_per_mtok"] * min(e_lo, t_lo, 1.0),
                                   res["cost_usd_per_mtok"] * max(e_hi, t_hi, 1.0)]
    if res["request_goodput"] is not None:  # each end: every latency times its time scale
        served = iv["request_throughput"]
        iv["request_goodput"] = goodput_interval(
            res["request_goodput"], latencies, slo,
            [(served[1], (t_lo,) * 3), (served[0], (t_hi,) * 3)])
    res["intervals"] = {k: [float(np.nan_to_num(v[0])), float(np.nan_to_num(v[1]))]
                        for k, v in iv.items() if all(math.isfinite(x) for x in v)}
    return res


def serve_system(d: Any, w: Any, load: Load, *, replicas: int = 1,
                 evaluator: str = "closed-form", slo: Slo | None = None,
                 lifetime_years: float, usd_per_kwh: float, speculation: Any = None,
                 engine_extra: dict[str, Any] | None = None, caps: Any = None,
                 max_num_seqs: int | None = None, intervals: bool = True,
                 capacity: float | None = None, rep: Any = None,
                 steady: bool = False) -> dict[str, Any]:
    """A design at load: its family, accuracy (the single-stream closed form's, with its 90%
    interval) and the load's figures. `load` gives the kind, value, requests and seed; its
    lengths are replaced by the workload's prompt tokens and the design's tokens per problem
    (rounded). A target-only design is served by the one-model engine (dse.serving.serve,
    token-level speculation allowed, engine_extra its draft arguments); a speculative or
    width design by the servers above (both evaluators: the closed form, or the request-level
    simulator of dse.serving.design_sim; max_num_seqs: its GPUs' cap, default vLLM's).
    intervals=False: a target-only design's figures without their 90% ends (a third of the
    work: the ends are two more closed-form solutions; a search ranks by the central
    figures); capacity: one replica's capacity rate when the caller has it (a target-only
    design's dse.serving.serve, the others' closed form); rep: the design's single-stream
    report with its intervals (`dse.io.resolve.report(d, w)`) when the caller has it; steady:
    a target-only design's closed form at its steady state (dse.serving.serve; the design
    servers' closed form is a steady state already)."""
    from dataclasses import replace

    from dse.io.resolve import report
    from dse.serving import serve

    rep = report(d, w) if rep is None else rep
    lengths = replace(load, input_tokens=max(round(w.prompt_tokens), 1),
                      output_tokens=max(round(rep.tokens_per_problem), 1))
    head = {"system": d.name, "workload": w.name, "family": d.family,
            "schedule": rep.schedule, "accuracy": rep.accuracy,
            "accuracy_interval": rep.intervals.get("accuracy"),
            "single_stream": {"latency_s_per_problem": rep.latency_s_per_problem,
                              "j_per_token": rep.j_per_token,
                              "tokens_per_problem": rep.tokens_per_problem}}
    if d.workflow == "target-only":
        price = getattr(d.target.device, "list_price_usd", None)
        extra = engine_extra or {}
        d_price = (getattr(extra["draft"].device, "list_price_usd", None)
                   if extra.get("draft_apart") else 0.0)
        r = serve(d.target, lengths, caps=caps, replicas=replicas, evaluator=evaluator,
                  slo=slo, capex_usd=(price or 0.0) * d.target.tp + (d_price or 0.0),
                  lifetime_years=lifetime_years, usd_per_kwh=usd_per_kwh,
                  speculation=speculation, intervals=intervals, capacity=capacity,
                  steady=steady, **extra)
        if price is None or d_price is None:
            r["cost_usd_per_mtok"] = None
            r.get("intervals", {}).pop("cost_usd_per_mtok", None)
        if speculation is not None:
            head["family"] = "token-speculative"
        return head | {"load": lengths} | r
    if speculation is not None:
        raise ValueError("token-level speculation applies to one model or a target-only "
                         f"design, not to a {d.family} design")
    if evaluator == "simulator" and load.kind == "concurrency":
        # its stages run a request's roles one after another, so a client would wait for all
        # of a request's device work, overlapped roles included (C_r < S_r)
        raise ValueError(f"--concurrency with --evaluator simulator: a {d.family} design's "
                         "closed loop has the closed form only (the simulator runs a "
                         "request's overlapped roles in turn); use --rate or the closed form")
    dl = design_load(d, w, rep, max_num_seqs=max_num_seqs)
    if evaluator == "simulator":
        dl = replace(dl, spread=problem_spread(d, w, seed=load.seed))

    def rel(key: str, central: float) -> tuple[float, float]:
        iv = rep.intervals.get(key)
        if not iv or central <= 0:
            return (1.0, 1.0)
        return (min(iv[0] / central, 1.0), max(iv[1] / central, 1.0))

    r = serve_design(dl, lengths, replicas=replicas, slo=slo, lifetime_years=lifetime_years,
                     usd_per_kwh=usd_per_kwh, evaluator=evaluator,
                     relative={"time": rel("latency_s_per_problem", rep.latency_s_per_problem),
                               "energy": rel("j_per_token", rep.j_per_token)},
                     capacity=capacity)
    r["devices"] = {dv.name: {"roles": list(dv.roles), "batch_cap": dv.cap,
                              "batch": r["device_batches"].get(dv.name, float("nan"))}
                    for dv in dl.devices}
    r.pop("device_batches", None)
    return head | {"load": lengths} | r
