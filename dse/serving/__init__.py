"""Serving many requests at once: one model on R replicas of a device under a load.

`serve(...)` answers what vLLM's benchmark_serving measures, with its result names
(request_throughput, output_throughput, total_token_throughput, {mean,median,p90,p99}_{ttft,
tpot,itl,e2el}_ms, request_goodput) plus mean_in_system (Little's law), j_per_token,
avg_power_w and cost_usd_per_mtok, each with a 90% interval. Two evaluators: `simulator`
(dse.serving.simulator: every request and iteration, percentiles) and `closed-form`
(dse.serving.closed_form: the steady state, means only). R replicas split the load evenly
(each gets rate / R, C / R clients, B / R of a batch); throughput, power and cost add up.

The interval: the closed form at the ends of the placement's decode and prefill time factors
(moved together) and its dynamic-power factor (dse.uncertainty.factors.placement_factors),
applied to the evaluator's central figures as relative ends. The device factors rest on
batch-1 evidence; where the load batches, each time factor is widened in quadrature by the batch
terms' own 90% error (`batched_half_width`: the batched cross-validation, docs/model.md), the
prefill's by the larger of that and the unfitted check of prompts at a batch
(`prefill_half_width`: LLM-Inference-Bench's time to first token).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

import numpy as np

from dse.devices.protocol import Placement
from dse.serving.closed_form import (
    Steady,
    batch_cap,
    capacity_rate,
    closed_loop,
    cohorts,
    open_loop,
    static_batch,
)
from dse.serving.engine import Engine
from dse.serving.load import (
    Caps,
    Load,
    Slo,
    Speculation,
    goodput_interval,
    latencies_s,
    vllm_caps,
)
from dse.serving.simulator import requests_for, simulate

EVALUATORS = ("closed-form", "simulator")
PERCENTILES = (("mean", None), ("median", 50), ("p90", 90), ("p99", 99))
LATENCIES = ("ttft", "tpot", "itl", "e2el")
SECONDS_PER_YEAR = 365.25 * 86400
LIFETIME_YEARS = 3.0  # as the default space (scenarios/spaces/default.toml, with its source)
USD_PER_KWH = 0.15  # likewise

__all__ = ["EVALUATORS", "Caps", "Engine", "Load", "Slo", "Speculation", "serve", "vllm_caps"]


def _share(load: Load, replicas: int) -> Load:
    """One replica's share of the load (the requests rounded up)."""
    if replicas == 1:
        return load
    per = math.ceil(load.requests / replicas)
    if load.kind == "rate":
        return replace(load, value=load.value / replicas, requests=per)
    return replace(load, value=max(1.0, math.ceil(load.value / replicas)), requests=per)


def _steady(e: Engine, load: Load, known: float | None = None, *, limit_needed: bool = True,
            steady: bool = False) -> tuple[Steady, float, float, float]:
    """The replica's steady state, the mean queue wait before a request starts, the run's
    duration from the first arrival to the last completion, and the capacity rate
    (requests/s; nan where the load is not a rate; known: the caller's, not recomputed).
    limit_needed=False (an interval's end, whose figures do not include the capacity): a
    rate with a fixed point is served by it without the capacity's bisection (nan).
    steady=True: a rate below capacity runs for ever (a service, not a benchmark run), so the
    duration is n / rate, without the last requests' drain: the throughput is the rate."""
    n = requests_for(load)

    def run_s(s: Steady) -> float:
        return n / load.value if steady else (n - 1) / load.value + s.e2el_s
    if load.kind == "batch":
        s = static_batch(e, load)
        return s, 0.0, s.e2el_s, float("nan")
    def short(s: Steady) -> bool:  # a run no longer than the steady batch never reaches it:
        # its requests arrive into an emptier engine (the recurrence, arrivals spread evenly;
        # one request runs alone, the simulator's lone request exactly)
        return not steady and n <= s.batch

    if not limit_needed and known is None and load.kind == "rate" and math.isfinite(load.value):
        fixed = open_loop(e, load, load.value)
        if fixed is not None and not short(fixed):
            return fixed, 0.0, run_s(fixed), float("nan")
        if fixed is not None:
            st = cohorts(e, load, 1, n, resend=False, rate=load.value)
            return st, 0.0, n / st.request_rate, float("nan")
    limit = float("nan") if load.kind != "rate" else (
        known if known is not None else capacity_rate(e, load))
    if load.kind == "concurrency":
        s = closed_loop(e, load)
        return s, 0.0, n / s.request_rate, limit
    rate = load.value
    if math.isinf(rate):  # every request at once: the cohort recurrence of all of them
        st = cohorts(e, load, n, n, resend=False)
        return st, 0.0, n / st.request_rate, limit
    below = None if rate > limit else open_loop(e, load, rate)
    if below is not None and not short(below):
        return below, 0.0, run_s(below), limit
    if below is not None:
        st = cohorts(e, load, 1, n, resend=False, rate=rate)
        return st, 0.0, n / st.request_rate, limit
    # past capacity the queue builds: the cohort recurrence with the arrivals spread evenly
    st = replace(cohorts(e, load, 1, n, resend=False, rate=rate), saturated=True)
    return st, 0.0, n / st.request_rate, limit


def _closed_metrics(e: Engine, load: Load, known: float | None = None, *,
                    limit_needed: bool = True, steady: bool = False) -> dict[str, Any]:
    s, wait, duration, limit = _steady(e, load, known, limit_needed=limit_needed,
                                       steady=steady)
    n = requests_for(load)
    ttft = s.ttft_s + wait
    e2el = s.e2el_s + wait
    o = load.output_tokens
    # a request's own rate of tokens: (e2el - ttft) / (O - 1), as the simulator measures it
    tpot = (s.e2el_s - s.ttft_s) / (o - 1) if o > 1 else 0.0
    out: dict[str, Any] = {"completed": n, "request_throughput": n / duration,
           "mean_ttft_ms": ttft * 1e3, "mean_tpot_ms": tpot * 1e3,
           "mean_itl_ms": s.tpot_s * 1e3, "mean_e2el_ms": e2el * 1e3,
           "mean_in_system": n * e2el / duration, "avg_power_w": s.power_w,
           "saturated": s.saturated, "batch": s.batch,
           "capacity_request_rate": limit}
    for name in LATENCIES:
        for tag, _ in PERCENTILES[1:]:
            out[f"{tag}_{name}_ms"] = None  # the closed form gives means only
    return out


def _percentiles(prefix: str, values_s: np.ndarray) -> dict[str, float]:
    v = values_s * 1e3
    out = {f"mean_{prefix}_ms": float(v.mean()) if v.size else 0.0}
    for tag, q in PERCENTILES[1:]:
        out[f"{tag}_{prefix}_ms"] = float(np.percentile(v, q)) if v.size else 0.0
    return out


def _sim_metrics(e: Engine, load: Load) -> dict[str, Any]:
    run = simulate(e, load)
    ttft = run.first_token_s - run.arrival_s
    e2el = run.finish_s - run.arrival_s
    o = run.output_tokens
    tpot = np.where(o > 1, (e2el - ttft) / np.maximum(o - 1, 1), 0.0)
    dur = run.duration_s
    out: dict[str, Any] = {"completed": int(e2el.size), "request_throughput": e2el.size / dur,
                           "mean_in_system": float(e2el.sum() / dur),
                           "avg_power_w": run.energy_j / dur, "saturated": None,
                           "batch": None, "capacity_request_rate": float("nan"),
                           "preemptions": run.preemptions, "iterations": run.iterations,
                           "_tokens": (float(run.input_tokens.mean()),
                                       float(run.output_tokens.mean()))}
    for name, v in (("ttft", ttft), ("tpot", tpot), ("itl", run.itl_s), ("e2el", e2el)):
        out |= _percentiles(name, v)
    out["_per_request"] = (ttft, tpot, e2el)
    return out


def _finish(m: dict[str, Any], load: Load, replicas: int, capex_usd: float, slo: Slo,
            lifetime_years: float, usd_per_kwh: float) -> dict[str, Any]:
    """Scale one replica's figures to R replicas and derive the totals (a simulated run's
    drawn lengths: their means)."""
    i, o = m.get("_tokens", (load.input_tokens, load.output_tokens))
    rate = m["request_throughput"] * replicas
    power = m["avg_power_w"] * replicas
    out_tok = rate * o
    usd_per_s = capex_usd * replicas / (lifetime_years * SECONDS_PER_YEAR) \
        + power / 1000.0 * usd_per_kwh / 3600.0
    res = {k: v for k, v in m.items() if not k.startswith("_")}
    res |= {"request_throughput": rate, "output_throughput": out_tok,
            "total_token_throughput": rate * (i + o), "avg_power_w": power,
            "mean_in_system": m["mean_in_system"] * replicas,
            "j_per_token": power / out_tok, "cost_usd_per_mtok": usd_per_s / out_tok * 1e6,
            "completed": m["completed"] * replicas}
    res["request_goodput"] = rate * slo.met_share(latencies_s(m, res)) if slo.any else None
    return res


INTERVAL_KEYS = ("request_throughput", "output_throughput", "total_token_throughput",
                 "mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "mean_e2el_ms",
                 "mean_in_system", "j_per_token", "avg_power_w", "cost_usd_per_mtok")


@functools.cache
def _serving_cv() -> dict[str, Any]:
    """dse/data/serving_cv.json, read once (package data; callers only read it)."""
    import json
    from importlib import resources

    out: dict[str, Any] = json.loads(resources.files("dse.data").joinpath("serving_cv.json")
                                     .read_text(encoding="utf-8"))
    return out


def batched_half_width(placement: Placement) -> float:
    """The 90% half-width (log) of the batch terms' error on a placement: the batched
    cross-validation's (dse/data/serving_cv.json) slowdown residuals, leave one GPU out for a
    stack with its own batched rows, else the worst leave-one-stack-out (a stack predicted by
    the others' pooled fit); 0 for a kind without batch terms."""
    if placement.kind != "gpu":
        return 0.0
    cv = _serving_cv()["cv"]
    own = cv["leave_one_gpu_out"].get(placement.serving)
    if own is not None:
        return float(own["slowdown"]["q90_abs_log_error"])
    return max(float(e["slowdown"]["q90_abs_log_error"])
               for e in cv["leave_one_stack_out"].values())


def prefill_half_width(placement: Placement) -> float:
    """The 90% half-width (log) of a prompt's time at a batch: the larger of the batch terms'
    (`batched_half_width`) and the unfitted check's on LLM-Inference-Bench's time to first
    token of a static batch of prompts (serving_cv.json `prefill_at_batch`: the stack's own
    rows, else the worst stack's); 0 for a kind without batch terms."""
    h = batched_half_width(placement)
    if placement.kind != "gpu":
        return h
    by_stack = _serving_cv().get("prefill_at_batch", {}).get("by_stack", {})
    if not by_stack:
        return h
    own = by_stack.get(placement.serving)
    pre = (float(own["q90_abs_log_error"]) if own is not None
           else max(float(e["q90_abs_log_error"]) for e in by_stack.values()))
    return max(h, pre)


def _ends(placement: Placement, batched: bool = True) -> list[tuple[float, float, float]]:
    """(decode, prefill, power) multipliers at the interval's two ends: the placement's
    batch-1 time factors, widened where the load batches (batched) by the batch terms' own
    error in quadrature (log scale)."""
    from dse.uncertainty.factors import placement_factors

    time = {"decode": (1.0, 1.0), "prefill": (1.0, 1.0)}
    power = (1.0, 1.0)
    for f in placement_factors(placement):
        if f.quantity == "time":
            ops = ("decode", "prefill") if ":all:" in f.key else (f.key.split(":")[1],)
            for op in ops:
                time[op] = (f.low, f.high)
        elif f.quantity == "power":
            power = (f.low, f.high)
    widen = {"decode": batched_half_width(placement) if batched else 0.0,
             "prefill": prefill_half_width(placement) if batched else 0.0}
    time = {op: (math.exp(-math.hypot(math.log(lo), widen[op])),
                 math.exp(math.hypot(math.log(hi), widen[op])))
            for op, (lo, hi) in time.items()}
    return [(time["decode"][0], time["prefill"][0], power[0]),
            (time["decode"][1], time["prefill"][1], power[1])]


def serve(placement: Placement, load: Load, *, caps: Caps | None = None, replicas: int = 1,
          evaluator: str = "closed-form", slo: Slo | None = None, capex_usd: float = 0.0,
          lifetime_years: float = LIFETIME_YEARS, usd_per_kwh: float = USD_PER_KWH,
          intervals: bool = True, speculation: Speculation | None = None,
          draft: Placement | None = None, draft_apart: bool = False,
          draft_prompt: Placement | None = None, draft_link: Any = None,
          capacity: float | None = None, steady: bool = False) -> dict[str, Any]:
    """The load's figures on `replicas` replicas of the placement (module docstring);
    speculation: token-level speculative decoding, its draft model's placement where the
    proposer is a model (on the same GPUs, or on a device of its own: draft_apart, its prompts
    prefilled by draft_prompt on the GPUs and sent over draft_link). capacity: one replica's
    capacity rate at these lengths when the caller has it (dse.search.at_load serves a design
    at several replica counts; the closed form's, else its bisection runs again). steady:
    the closed form's steady state below capacity (a service's throughput is its rate; the
    search at a load), not a run of `load.requests` with its drain (vLLM's benchmark)."""
    if evaluator not in EVALUATORS:
        raise ValueError(f"unknown evaluator {evaluator!r}; valid: {', '.join(EVALUATORS)}")
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    caps = caps or vllm_caps(placement.memory_bytes, placement.device.name)
    slo = slo or Slo()
    share = _share(load, replicas)
    e = Engine(placement, caps, speculation=speculation, draft=draft, draft_apart=draft_apart,
               draft_prompt=draft_prompt, draft_link=draft_link)
    if batch_cap(e, share) < 1:
        raise ValueError(f"a request of {load.input_tokens} + {load.output_tokens} tokens does "
                         f"not fit {placement.model.name}'s KV cache on {placement.device.name}"
                         f" ({e.kv_capacity_tokens} tokens beside the weights)")
    metrics = (_closed_metrics(e, share, capacity, steady=steady)
               if evaluator == "closed-form" else _sim_metrics(e, share))
    res = _finish(metrics, load, replicas, capex_usd, slo, lifetime_years, usd_per_kwh)
    res["kv_capacity_tokens"] = e.kv_capacity_tokens
    res["max_num_seqs"], res["max_num_batched_tokens"] = caps.max_num_seqs, \
        caps.max_num_batched_tokens
    if not intervals:
        return res
    central = res if evaluator == "closed-form" else _finish(
        _closed_metrics(e, share, steady=steady), load, replicas, capex_usd, slo,
        lifetime_years, usd_per_kwh)
    ends = [_finish(_closed_metrics(replace(e, decode_factor=d, prefill_factor=p,
                                            power_factor=w), share, limit_needed=False,
                                    steady=steady),
                    load, replicas,
                    capex_usd, slo, lifetime_years, usd_per_kwh)
            for d, p, w in _ends(placement, batched=load.kind == "rate" or load.value > 1)]
    iv: dict[str, list[float]] = {}
    for k in INTERVAL_KEYS:
        c = central[k]
        if not (isinstance(c, float) and math.isfinite(c) and c != 0):
            continue
        rel = [x[k] / c for x in ends]
        iv[k] = [res[k] * min(1.0, *rel), res[k] * max(1.0, *rel)]
    if res["request_goodput"] is not None:
        lat = ("mean_ttft_ms", "mean_tpot_ms", "mean_e2el_ms")
        iv["request_goodput"] = goodput_interval(
            res["request_goodput"], latencies_s(metrics, res), slo,
            [(res["request_throughput"] * x["request_throughput"]
              / central["request_throughput"],
              [x[k] / central[k] if central[k] else 1.0 for k in lat]) for x in ends])
    res["intervals"] = iv
    return res
