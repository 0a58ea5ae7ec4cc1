"""The search at a load: each candidate design served at the user's request rate under SLOs.

Without a load a search weighs designs one problem at a time (batch 1, the paper's setting).
With one (`--rate R`, `--slo ttft:MS,tpot:MS`, or a workload's `[load]` table) the objectives
`cost` ($/Mtoken), `j_per_token` and `goodput` (and `latency`: the mean end-to-end latency)
are the serving model's at that load (dse.serving: a target-only design on the one-model
engine, a speculative or width design as batching servers, `serve_system`), on the fewest
replicas that hold it:

- a service at its steady state: below capacity its throughput is the rate (dse.serving.serve's
  steady=True; `dse serve` reports a benchmark's run of --requests, whose last requests drain
  with no new arrivals, so its cost per token is a little higher);
- replicas: the smallest integer r with capacity x r >= rate / TARGET_UTILISATION (capacity:
  one replica's largest stable rate, the serving closed form's); if the mean TTFT, TPOT or
  e2el then misses an SLO, r doubles (a replica's batch shrinks) up to MAX_DOUBLINGS times,
  stopping when a doubling moves the latencies by under 1% (the batch-1 latency misses);
  throughput, power and capital cost scale with r (serve_system's `replicas`);
- infeasible, with a counted reason: a design that cannot serve one request within its caps,
  misses an SLO at every replica count tried, or needs more than MAX_REPLICAS replicas;
- goodput at load: the SLO-meeting output tokens per second of one replica (the rate's
  tokens over the replicas), a design's throughput per copy at this load;
- families: target-only, token-speculative (each target placement the search kept with each
  default proposer: n-gram, an EAGLE head, the space's draft models on the target's GPUs, k =
  DEFAULT_K, acceptance from dse/data/speculative_acceptance.toml), gpu-speculative,
  fpga-speculative, width;
- the pool: the search's feasible designs (accuracy and the other constraints as without a
  load), the best knob setting of each family on each target placement (the sweep's grid, or
  a study's speculative trials plus the target-only and width sweeps); a design's accuracy
  does not change with the load;
- screen: a pool design is served only if a lower bound on its objective could beat its
  family's best so far (cost: its capital cost on one replica over the rate's tokens; J/token:
  its devices' idle power over them; latency: its single-stream latency), in ascending order
  of the bound;
- margins: family minus winner at the load, with the interval of the difference from the
  serving model's 90% ends (the two designs' ends moved together when they share their target
  device, whose factors dominate both; else independent, the half-widths added in
  quadrature).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dse.errors import UsageError
from dse.search.candidates import Candidate
from dse.search.families import FamilyBest, _design, identity
from dse.search.loads import SLO_KEYS, LoadSpec
from dse.specs import Catalog

MAX_DOUBLINGS = 6  # SLO misses: replicas doubled at most 6 times (64x the first count)
MAX_REPLICAS = 4096  # as dse serve's --replicas
DEFAULT_K = 4  # proposed tokens a pass for the default proposers (vLLM's examples use 2-5)
REQUESTS = 1000  # a run's requests (vLLM's --num-prompts), for the closed form past capacity
SHOWN = 5  # the ranked designs an answer at a load shows, each with its 90% intervals
LOAD_FAMILIES = ("target-only", "token-speculative", "gpu-speculative", "fpga-speculative",
                 "width")
# objective -> (the metric at load, +1 minimise / -1 maximise)
LOAD_METRICS = {"cost": ("cost_usd_per_mtok", 1), "j_per_token": ("j_per_token", 1),
                "goodput": ("goodput_tokens_per_s", -1),
                "latency": ("latency_s_per_problem", 1)}
SECONDS_PER_YEAR = 365.25 * 86400  # as dse.serving's


@dataclass(frozen=True)
class Served:
    """One design at the load: its candidate (metrics and intervals at the load, the
    single-stream ones under `single_stream`), family, replicas and proposer; or why not."""

    family: str
    candidate: Candidate
    replicas: int = 0
    proposer: dict[str, Any] | None = None
    reason: str | None = None  # infeasible: the reason's kind (counted)
    detail: str = ""  # the reason in full
    max_num_seqs: int | None = None  # the cap it was served with (None: vLLM's default)

    @property
    def feasible(self) -> bool:
        return self.reason is None


@dataclass
class LoadResult:
    load: LoadSpec
    objective: str
    ranked: list[Served]  # feasible, best first
    by_family: list[FamilyBest]
    served: dict[str, Served]  # family -> its best (the at-load figures)
    infeasible: dict[str, int] = field(default_factory=dict)  # reason -> designs
    examples: dict[str, str] = field(default_factory=dict)
    n_pool: int = 0
    n_served: int = 0
    seconds: float = 0.0

    def family_dicts(self) -> list[dict[str, Any]]:
        out = []
        for f in self.by_family:
            s = self.served.get(f.family)
            out.append(f.to_dict() | {"replicas": None if s is None else s.replicas,
                                      "proposer": None if s is None else s.proposer})
        return out


def _family(cat: Catalog, c: Candidate) -> str:
    from dse.search.optuna_study import trial_family

    return trial_family(cat, c)


@dataclass(frozen=True)
class _Job:
    """A design to serve at the load: its family, candidate, proposer (token speculation),
    the lower bound of its objective and the replicas that bound assumes."""

    bound: float
    family: str
    candidate: Candidate
    speculation: Any = None
    extra: Any = None
    replicas: int = 1
    capacity: float | None = None  # one replica's capacity (one model), requests/s
    engine: Any = None  # one model: its engine and lengths, for the capacity when served
    lengths: Any = None
    usd_per_s: float = 0.0  # one replica's capital and idle power, $/s (the bound's)
    tokens_per_s: float = 1.0  # the rate's output tokens
    max_num_seqs: int | None = None  # the scheduler's cap (None: the GPU's vLLM default)

    def tightened(self, objective: str, load: LoadSpec) -> _Job:
        """One model's job with its capacity solved (`capacity_rate_grid`), its replicas
        and bound from it instead of the caps' rate."""
        from dse.serving.closed_form import capacity_rate_grid

        if self.engine is None or self.capacity is not None:
            return self
        try:
            cap = capacity_rate_grid(self.engine, self.lengths)
        except ValueError:
            return self  # served, then refused with its reason
        if not cap > 0:
            return self
        reps = min(max(1, math.ceil(load.rate / (load.utilisation * cap) - 1e-9)),
                   MAX_REPLICAS + 1)
        bound = self.bound * reps / self.replicas if objective in ("cost", "j_per_token") \
            else self.bound
        return replace(self, bound=bound, replicas=reps, capacity=cap)


def _job(cat: Catalog, space: Any, c: Candidate, fam: str, objective: str, load: LoadSpec,
         speculation: Any = None, extra: dict[str, Any] | None = None,
         rep: Any = None, max_num_seqs: int | None = None) -> _Job:
    """The design's job with a lower bound on its objective at the load (direction-signed:
    lower is better; module docstring). One model: its replicas are at least the rate over
    the target-utilised capacity (`capacity_rate_grid`: the closed form's, all its trial
    rates at once), each costing its capital and idle power. A design of several roles: one
    replica's capital. rep: the
    design's single-stream report without intervals, if the caller has it."""
    from dse.io.resolve import report
    from dse.serving import Load, vllm_caps
    from dse.serving.closed_form import capacity
    from dse.serving.engine import Engine

    d = _design(cat, c)
    w = cat.workload(space.workloads[0][0])
    rep = rep if rep is not None else report(d, w, intervals=False)
    out_tokens = max(round(rep.tokens_per_problem), 1)
    tokens = load.rate * out_tokens
    reps, idle_w, e, lengths = 1, 0.0, None, None
    capex = c.metrics.get("capex_usd")
    if d.workflow == "target-only":
        pl = d.target
        lengths = Load("rate", load.rate, max(round(w.prompt_tokens), 1), out_tokens,
                       REQUESTS, 0, None)
        e = Engine(pl, vllm_caps(pl.memory_bytes, pl.device.name, max_num_seqs=max_num_seqs),
                   speculation=speculation, **(extra or {}))
        try:
            top = capacity(e, lengths).request_rate
        except ValueError:
            top = math.inf  # served, then refused with its reason
        reps = min(max(1, math.ceil(load.rate / (load.utilisation * top) - 1e-9)),
                   MAX_REPLICAS + 1)
        idle_w = e.idle_w
    secs = space.lifetime_years * SECONDS_PER_YEAR
    bound = -math.inf
    if objective == "cost" and capex is not None and math.isfinite(capex):
        usd_per_s = reps * (float(capex) / secs + idle_w / 1000.0 * space.usd_per_kwh / 3600)
        bound = usd_per_s / tokens * 1e6
    elif objective == "j_per_token":
        bound = reps * idle_w / tokens
    elif objective == "latency":
        bound = float(rep.latency_s_per_problem)
    return _Job(bound, fam, c, speculation, extra, reps, None, e, lengths,
                max_num_seqs=max_num_seqs)


def _speculations(cat: Catalog, space: Any, d: Any, workload: str
                  ) -> list[tuple[Any, dict[str, Any]]]:
    """The default proposers for a target placement: n-gram, an EAGLE head, each draft model
    of the space smaller than the target and sharing its tokenizer, on the target's GPUs;
    k = DEFAULT_K, the closest published acceptance."""
    from dse.devices.registry import place
    from dse.serving import Speculation
    from dse.serving.acceptance import default_rate
    from dse.serving.engine import Engine, eagle_head, in_engine_step

    pl = d.target
    out = []
    names = ["ngram", "eagle", *dict.fromkeys(p.model for p in space.drafts)]
    for name in names:
        draft = None
        if name == "eagle":
            draft = in_engine_step(place(cat, eagle_head(pl.model), pl.device.name,
                                         precision_name=pl.precision.name,
                                         software=pl.serving,
                                         context_tokens=pl.context_tokens, tp=pl.tp))
        elif name != "ngram":
            dm = cat.model(name)
            if dm.tokenizer_family != pl.model.tokenizer_family:
                continue
            draft = in_engine_step(place(cat, dm, pl.device.name,
                                         precision_name=pl.precision.name,
                                         software=pl.serving,
                                         context_tokens=pl.context_tokens, tp=pl.tp))
            if draft.infeasibility() or (Engine._weights_and_kv(draft)[0]
                                         >= Engine._weights_and_kv(pl)[0]):
                continue  # a draft as large as the target cannot gain
        try:
            got = default_rate(name, pl.model.name, workload)
        except ValueError:
            continue
        spec = Speculation(name, DEFAULT_K, got.acceptance_rate, got.basis)
        out.append((spec, {"draft": draft}))
    return out


def _slo_values(r: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(r[f"mean_{k}_ms"]) for k in SLO_KEYS
            if r.get(f"mean_{k}_ms") is not None}


def _slo_missed(r: Mapping[str, Any], load: LoadSpec) -> list[str]:
    return [f"{k} {r[f'mean_{k}_ms']:.4g} ms > {getattr(load, f'{k}_ms'):g}"
            for k in SLO_KEYS if getattr(load, f"{k}_ms") is not None
            and r.get(f"mean_{k}_ms") is not None
            and r[f"mean_{k}_ms"] > getattr(load, f"{k}_ms")]


def serve_at_load(cat: Catalog, space: Any, c: Candidate, load: LoadSpec, family: str, *,
                  speculation: Any = None, extra: dict[str, Any] | None = None,
                  replicas: int = 1, intervals: bool = True,
                  capacity: float | None = None, rep: Any = None,
                  max_num_seqs: int | None = None) -> Served:
    """One design served at the load on the fewest replicas that hold it (module docstring),
    trying `replicas` first (a lower bound: the caps' rate). intervals=False: the central
    figures only (a target-only design's 90% ends cost two more closed-form solutions).
    capacity: one replica's capacity rate, known from an earlier run; rep: the design's
    single-stream report with its intervals, if the caller has it; max_num_seqs: the
    scheduler's cap on its GPUs (None: each GPU's vLLM default)."""
    from dse.serving import Load, Slo, vllm_caps
    from dse.serving.designs import serve_system

    d = _design(cat, c)
    w = cat.workload(space.workloads[0][0])
    slo = Slo(load.ttft_ms, load.tpot_ms, load.e2el_ms)
    prop = None if speculation is None else {
        "proposer": speculation.proposer,
        "num_speculative_tokens": speculation.num_speculative_tokens,
        "acceptance_rate": speculation.acceptance_rate, "basis": speculation.basis}

    known: list[float] = []  # one replica's capacity, once the first run found it
    caps = None if max_num_seqs is None or d.workflow != "target-only" else vllm_caps(
        d.target.memory_bytes, d.target.device.name, max_num_seqs=max_num_seqs)

    def run(n: int) -> dict[str, Any]:
        got = serve_system(d, w, Load("rate", load.rate, 1, 1, REQUESTS, 0, None),
                           replicas=n, slo=slo, lifetime_years=space.lifetime_years,
                           usd_per_kwh=space.usd_per_kwh, speculation=speculation,
                           engine_extra=extra, intervals=intervals,
                           capacity=known[0] if known else capacity, rep=rep, caps=caps,
                           max_num_seqs=max_num_seqs, steady=True)
        known[:] = [got["capacity_request_rate"]]
        return got

    def bad(reason: str, detail: str) -> Served:
        return Served(family, c, 0, prop, reason, detail, max_num_seqs)

    reps = max(1, replicas)
    try:
        r = run(reps)
    except ValueError as e:
        return bad("cannot serve one request within its caps", str(e).splitlines()[0])
    cap = r.get("capacity_request_rate")
    if not (isinstance(cap, float) and cap > 0 and math.isfinite(cap)):
        return bad("cannot serve one request within its caps",
                   f"capacity {cap!r} requests/s")
    need = max(1, math.ceil(load.rate / (load.utilisation * cap) - 1e-9))
    if need > MAX_REPLICAS:
        return bad(f"needs more than {MAX_REPLICAS} replicas",
                   f"{need} replicas of {cap:.3g} requests/s each")
    if need != reps:
        reps = need
        r = run(reps)
    for _ in range(MAX_DOUBLINGS):
        missed = _slo_missed(r, load)
        if not missed:
            break
        before = _slo_values(r)
        reps *= 2
        r = run(reps)
        if all(abs(_slo_values(r)[k] - v) <= 0.01 * v for k, v in before.items()):
            break  # fewer requests a replica no longer helps: the batch-1 latency misses
    missed = _slo_missed(r, load)
    if missed:
        return bad("misses the SLOs at every replica count tried",
                   "; ".join(missed) + f" on {reps} replicas")
    tokens = float(r["output_throughput"]) / float(r["request_throughput"])
    goodput = r["request_goodput"] if r["request_goodput"] is not None \
        else r["request_throughput"]
    m: dict[str, Any] = {
        "cost_usd_per_mtok": r.get("cost_usd_per_mtok"), "j_per_token": r["j_per_token"],
        "goodput_tokens_per_s": float(goodput) * tokens / reps,
        "latency_s_per_problem": r["mean_e2el_ms"] / 1e3,
        "mean_ttft_ms": r["mean_ttft_ms"], "mean_tpot_ms": r["mean_tpot_ms"],
        "mean_e2el_ms": r["mean_e2el_ms"], "avg_power_w": r["avg_power_w"],
        "request_throughput": r["request_throughput"],
        "capacity_request_rate": cap, "replicas": reps,
        # the scheduler's caps the one-model engine ran (None: each GPU's vLLM default)
        "max_num_seqs": r.get("max_num_seqs") or max_num_seqs,
        "max_num_batched_tokens": r.get("max_num_batched_tokens"),
        "utilisation": load.rate / (reps * cap), "accuracy": r.get("accuracy"),
        "tokens_per_problem": tokens,
        # a sweep's pool candidates carry the mean-value model's metrics: the report's then
        "p_accept": c.metrics.get("p_accept", None if rep is None else rep.p_accept),
        "single_stream": {k: v for k, v in c.metrics.items()
                          if isinstance(v, float | int) and not isinstance(v, bool)}}
    iv = {k: list(v) for k, v in r.get("intervals", {}).items()
          if k in ("cost_usd_per_mtok", "j_per_token", "mean_ttft_ms", "mean_tpot_ms",
                   "mean_e2el_ms", "avg_power_w")}
    if "mean_e2el_ms" in iv:
        iv["latency_s_per_problem"] = [x / 1e3 for x in iv["mean_e2el_ms"]]
    if r.get("accuracy_interval"):
        iv["accuracy"] = list(r["accuracy_interval"])
    return Served(family, replace(c, metrics=m, intervals=iv), reps, prop,
                  max_num_seqs=max_num_seqs)


def _diff(a: Served, b: Served, metric: str) -> tuple[float, list[float]] | None:
    """a minus b on the metric and its interval (module docstring)."""
    from dse.uncertainty.joint import difference_of_ends

    va, vb = a.candidate.metrics.get(metric), b.candidate.metrics.get(metric)
    if va is None or vb is None:
        return None
    return difference_of_ends(
        va, a.candidate.intervals.get(metric, [va, va]), vb,
        b.candidate.intervals.get(metric, [vb, vb]),
        shared=a.candidate.design.system.target_device == b.candidate.design.system.target_device)


MARGINS = ("cost_usd_per_mtok", "j_per_token", "goodput_tokens_per_s",
           "latency_s_per_problem")


@dataclass
class LoadPart:
    """A share of a pool served at the load (`serve_pool`): its feasible designs (its SHOWN
    best with their 90% ends), each of its families' best (with its 90% ends), the families it
    had jobs for, the infeasible designs by reason, its jobs and the designs it served.
    `combine` makes the answer of one or several parts; parts with disjoint families give
    exactly one pass's answer (the screen is within a family), so `dse optimize --rate` serves
    the target-only and width sweep's pool in its background process while its study runs and
    the study's speculative designs after it."""

    feasible: list[Served]
    best: dict[str, Served]
    pooled: set[str]
    reasons: Counter[str]
    examples: dict[str, str]
    n_jobs: int
    n_served: int
    seconds: float


def check_load_search(objective: str, space: Any) -> None:
    """A search at a load ranks one workload's problems by a metric the load changes."""
    if objective not in LOAD_METRICS:
        raise UsageError(f"--rate: objective {objective} does not depend on the load; rank by "
                         f"one of {', '.join(LOAD_METRICS)} (a design's accuracy is the same "
                         "at any load)")
    if len(space.workloads) != 1:
        raise UsageError(f"--rate: space {space.name} weighs a mix of workloads; at a load a "
                         "search serves one workload's problems (a space with one workload)")


def search_at_load(cat: Catalog, space: Any, objective: str, pool: Sequence[Candidate],
                   load: LoadSpec, *, token_speculative: bool = True) -> LoadResult:
    """The pool's designs at the load, ranked by the objective there, and each family's best
    with its margin against the winner (module docstring)."""
    part = serve_pool(cat, space, objective, pool, load, token_speculative=token_speculative)
    return combine(load, objective, [part], token_speculative=token_speculative)


def serve_pool(cat: Catalog, space: Any, objective: str, pool: Sequence[Candidate],
               load: LoadSpec, *, token_speculative: bool = True) -> LoadPart:
    """The pool's designs served at the load, screened within each family (module
    docstring), each family's best and the part's SHOWN best designs served again with their
    90% ends."""
    check_load_search(objective, space)
    from dse.io.resolve import report
    from dse.uncertainty import attach

    t0 = time.perf_counter()
    metric, sign = LOAD_METRICS[objective]
    wl = space.workloads[0][0]
    jobs: list[_Job] = []
    seen: set[Any] = set()
    reports: dict[int, list[Any]] = {}  # a pool design's [design, report, with intervals]
    for c in pool:
        key = identity(c)
        if key in seen:
            continue
        seen.add(key)
        fam = _family(cat, c)
        d = _design(cat, c)
        rep = report(d, cat.workload(wl), intervals=False)
        reports[id(c)] = [d, rep]
        for cap in load.caps:
            jobs.append(_job(cat, space, c, fam, objective, load, rep=rep, max_num_seqs=cap))
            if token_speculative and fam == "target-only":
                for spec, extra in _speculations(cat, space, d, wl):
                    jobs.append(_job(cat, space, c, "token-speculative", objective, load,
                                     spec, extra, rep, max_num_seqs=cap))
    jobs.sort(key=lambda j: j.bound)
    pooled = {j.family for j in jobs}
    best: dict[str, Served] = {}
    feasible: list[Served] = []
    reasons: Counter[str] = Counter()
    examples: dict[str, str] = {}
    n_served = 0
    origin: dict[int, _Job] = {}

    def rep_iv(c: Candidate) -> Any:  # the report serve_system makes, once a design
        got = reports[id(c)]
        if len(got) == 2:
            got.append(attach(got[1], got[0], cat.workload(wl)))
        return got[2]

    def value(s: Served) -> float:
        return _value(s, metric, sign)

    for j in jobs:
        if j.family in best and j.bound >= value(best[j.family]):
            continue  # the bound cannot beat the family's best so far
        j = j.tightened(objective, load)
        if j.family in best and j.bound >= value(best[j.family]):
            continue  # nor can the bound at its solved capacity
        n_served += 1
        s = serve_at_load(cat, space, j.candidate, load, j.family, speculation=j.speculation,
                          extra=j.extra, replicas=j.replicas, intervals=False,
                          capacity=j.capacity, rep=rep_iv(j.candidate),
                          max_num_seqs=j.max_num_seqs)
        if not s.feasible:
            assert s.reason is not None
            why = f"{j.family}: {s.reason}"
            reasons[why] += 1
            examples.setdefault(why, f"{_label(s)}: {s.detail}")
            continue
        origin[id(s)] = j
        feasible.append(s)
        if j.family not in best or value(s) < value(best[j.family]):
            best[j.family] = s
    # each family's best, and each design the answer may show (the SHOWN best of this part),
    # again with its 90% ends, at the replicas it was ranked at
    shown = sorted(feasible, key=value)[:SHOWN]
    best_of_family = {id(s): fam for fam, s in best.items()}
    for s in [*best.values(), *(x for x in shown if id(x) not in best_of_family)]:
        j = origin[id(s)]
        full = serve_at_load(cat, space, j.candidate, load, j.family, speculation=j.speculation,
                             extra=j.extra, replicas=s.replicas, intervals=True,
                             capacity=s.candidate.metrics["capacity_request_rate"],
                             rep=rep_iv(j.candidate), max_num_seqs=j.max_num_seqs)
        if full.feasible:
            feasible[next(i for i, x in enumerate(feasible) if x is s)] = full
            if id(s) in best_of_family:
                best[best_of_family[id(s)]] = full
    return LoadPart(feasible, best, pooled, reasons, examples, len(jobs), n_served,
                    time.perf_counter() - t0)


def _value(s: Served, metric: str, sign: int) -> float:
    v = s.candidate.metrics.get(metric)
    return math.inf if v is None else sign * float(v)


def combine(load: LoadSpec, objective: str, parts: Sequence[LoadPart], *,
            token_speculative: bool = True) -> LoadResult:
    """The answer at the load from served parts: every feasible design ranked, each family's
    best (the better of two parts' where both had the family) with its margin against the
    winner; the parts' counts added, their seconds too (the work, wherever it ran)."""
    metric, sign = LOAD_METRICS[objective]

    def value(s: Served) -> float:
        return _value(s, metric, sign)

    feasible = sorted((s for p in parts for s in p.feasible), key=value)
    best: dict[str, Served] = {}
    for p in parts:
        for fam, s in p.best.items():
            if fam not in best or value(s) < value(best[fam]):
                best[fam] = s
    pooled = set().union(*(p.pooled for p in parts))
    reasons: Counter[str] = sum((p.reasons for p in parts), Counter())
    examples: dict[str, str] = {}
    for p in parts:
        for k, v in p.examples.items():
            examples.setdefault(k, v)
    fams: list[FamilyBest] = []
    if feasible:
        win = feasible[0]
        for fam in LOAD_FAMILIES:
            fb = best.get(fam)
            if fb is None:
                if fam == "token-speculative" and not token_speculative:
                    continue
                fams.append(FamilyBest(fam, None, note=(
                    "no design of this family holds the load" if fam in pooled else
                    "no feasible design of this family in the space")))
                continue
            if fb is win:
                fams.append(FamilyBest(fam, fb.candidate, {m: 0.0 for m in MARGINS},
                                       {m: [0.0, 0.0] for m in MARGINS}, is_winner=True))
                continue
            margin, lo_hi = {}, {}
            for m in MARGINS:
                got = _diff(fb, win, m)
                if got is not None:
                    margin[m], lo_hi[m] = got
            fams.append(FamilyBest(fam, fb.candidate, margin, lo_hi))
    return LoadResult(load, objective, feasible, fams, best, dict(reasons), examples,
                      sum(p.n_jobs for p in parts), sum(p.n_served for p in parts),
                      sum(p.seconds for p in parts))


def _label(s: Served) -> str:
    lab = s.candidate.label
    if s.proposer is not None:
        lab += f" + {s.proposer['proposer']} k={s.proposer['num_speculative_tokens']}"
    if s.max_num_seqs is not None:
        lab += f" max_num_seqs={s.max_num_seqs}"
    return lab


def label(s: Served) -> str:
    """A served design's label, its proposer named (token speculation)."""
    return _label(s)


def study_pool(cat: Catalog, space: Any, study: Any, sweep_pool: Sequence[Candidate]
               ) -> list[Candidate]:
    """A study's pool at load: its feasible trials, the best of each family on each target
    placement, with the sweep's pool of the target-only and width arrangements."""
    from dse.search.candidates import trial_candidate
    from dse.search.optuna_study import study_trials

    sign = 1 if study.directions[0].name == "MINIMIZE" else -1
    chosen: dict[tuple[str, str], tuple[float, Candidate]] = {}
    for t in study_trials(study):
        if t.user_attrs.get("violation", 1.0) > 0 or "design_toml" not in t.user_attrs:
            continue
        c = trial_candidate(t)
        fam = _family(cat, c)
        if fam in ("target-only", "width"):
            continue
        key = (fam, _target_key(c))
        v = sign * float(t.values[0])
        if key not in chosen or v < chosen[key][0]:
            chosen[key] = (v, c)
    return [*sweep_pool, *(c for _, c in chosen.values())]


def _target_key(c: Candidate) -> str:
    s = c.design.system
    return f"{s.target_model}@{s.target_device}x{s.target_tp}"
