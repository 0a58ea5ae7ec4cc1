"""The Load page's view-model: the current design and its alternatives served at a range of
request rates (`dse serve --system ... --rate R`: dse.serving.designs.serve_system), the
latencies, goodput and cost per million tokens against the rate (the knee), and at the rate the
user chose, the margin against the simplest alternative (the target alone) in plain words.

The load's own state (`LoadState`): the rate to compare at (None: none chosen; What-if then
stays single-stream), the top of the rate axis, the SLOs (ms), the request lengths and the
evaluator. It rides in the URL beside the design's keys (`LOAD_PARAMS`), each only where it
differs from its default.

Alternatives (`alternatives`): the design itself, its target alone (`workflow = target-only`
on the same target placement), the target alone with n-gram token speculation and, for a
design whose draft is not on a GPU, the paper's strong GPU baseline (brsd with step-ahead,
the draft moved to the PRM's GPU): one design of each family the search at load weighs that
the current design names (dse.search.at_load).

Each curve stops at the design's capacity (one replica's largest stable rate): past it the
queue grows with the run's length and the figures describe the run, not a steady state.
Light: no numpy, Streamlit or plotly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dse.core.limits import MIN_RATE_PER_S
from dse.errors import DseError

if TYPE_CHECKING:
    from dse.model.design import Design
    from dse.specs import Catalog
    from dse.specs.scenario import WorkloadSpec
    from dse.views.state import DesignState

EVALUATOR_LABELS = {"closed-form": "closed form (means and their 90% intervals; fast)",
                    "simulator": "request-level simulator (p50/p90/p99; seconds a point)"}
LENGTH_LABELS = {"fixed": "the workload's (fixed: its prompt in, tokens per problem out)",
                 "sharegpt": "ShareGPT (drawn per request; the target alone only)"}
DEFAULT_RATE_MAX = 2.0  # requests/s at the right of the rate axis
DEFAULT_TTFT_MS = 1000.0
DEFAULT_TPOT_MS = 100.0
POINTS = {"closed-form": 16, "simulator": 6}  # rates per curve
REQUESTS = {"closed-form": 1000, "simulator": 300}  # a run's requests (vLLM's --num-prompts)
MAX_RATE = 1000.0
# the token-speculative family's representative: the target alone with n-gram lookup, k
# proposed tokens a pass, the closest published acceptance (dse.search.at_load's defaults)
NGRAM_K = 4
NGRAM = f"target alone + n-gram (k={NGRAM_K})"
# URL parameter -> LoadState field
LOAD_PARAMS = {"rate": "rate", "rate_max": "rate_max", "slo_ttft": "ttft_ms",
               "slo_tpot": "tpot_ms", "lengths": "lengths", "evaluator": "evaluator"}
# the figures a point keeps (dse serve's names)
LATENCIES = ("ttft", "tpot", "itl", "e2el")
PERCENTILE_TAGS = ("mean", "median", "p90", "p99")
POINT_KEYS = ("request_throughput", "output_throughput", "request_goodput",
              "cost_usd_per_mtok", "j_per_token", "saturated", "capacity_request_rate",
              *(f"{p}_{n}_ms" for n in LATENCIES for p in PERCENTILE_TAGS))


@dataclass(frozen=True)
class LoadState:
    """The Load page's controls (and What-if's load control: `rate`)."""

    rate: float | None = None  # requests/s to compare at; None: single stream
    rate_max: float = DEFAULT_RATE_MAX
    ttft_ms: float | None = DEFAULT_TTFT_MS
    tpot_ms: float | None = DEFAULT_TPOT_MS
    lengths: str = "fixed"
    evaluator: str = "closed-form"

    def curve_params(self) -> dict[str, str]:
        """The parameters the curves depend on (all but the chosen rate)."""
        return {k: v for k, v in self.params().items() if k != "rate"}

    def params(self) -> dict[str, str]:
        """Query parameters: the fields that differ from their defaults (0: an SLO off)."""
        out = {}
        for name, f in LOAD_PARAMS.items():
            v, default = getattr(self, f), getattr(LoadState(), f)
            if v != default:
                out[name] = "0" if v is None else v if isinstance(v, str) else f"{v:g}"
        return out


def load_state(params: Mapping[str, str]) -> tuple[LoadState, list[str]]:
    """The load state in a link's parameters (others ignored), forgiving: a bad value is
    dropped with one warning naming it."""
    got: dict[str, Any] = {}
    warnings: list[str] = []
    for name, f in LOAD_PARAMS.items():
        if name not in params:
            continue
        raw = str(params[name])
        try:
            if f == "lengths":
                if raw not in LENGTH_LABELS:
                    raise ValueError(f"unknown; valid: {', '.join(LENGTH_LABELS)}")
                got[f] = raw
            elif f == "evaluator":
                if raw not in EVALUATOR_LABELS:
                    raise ValueError(f"unknown; valid: {', '.join(EVALUATOR_LABELS)}")
                got[f] = raw
            else:
                v = float(raw)
                if not (math.isfinite(v) and 0 <= v <= MAX_RATE * 1000):
                    raise ValueError("not a finite number >= 0")
                if f == "rate_max" and not 0 < v <= MAX_RATE:
                    raise ValueError(f"the rate axis ends above 0 and at most {MAX_RATE:g}/s")
                if f == "rate" and v > MAX_RATE:
                    raise ValueError(f"at most {MAX_RATE:g} requests/s")
                if f in ("rate", "rate_max") and 0 < v < MIN_RATE_PER_S:
                    raise ValueError(f"{'0 or ' if f == 'rate' else ''}at least "
                                     f"{MIN_RATE_PER_S:g} requests/s")
                got[f] = None if v == 0 and f != "rate_max" else v
        except ValueError as e:
            warnings.append(f"URL parameter {name}={raw[:40]!r} ignored: {e}")
    return LoadState(**got), warnings


def rate_grid(state: LoadState) -> list[float]:
    """The rates of the curves, evenly spaced up to the axis' end (the chosen rate is served
    on its own: `with_rate`)."""
    n = POINTS[state.evaluator]
    return [round(state.rate_max * (i + 1) / n, 9) for i in range(n)]


def alternatives(cat: Catalog, state: DesignState, design: Design) -> dict[str, DesignState]:
    """Name -> state: this design, its target alone, the target alone with token-level
    speculation by n-gram lookup (`NGRAM`: the cheapest proposer, no device of its own) and
    (a draft off the GPUs) the strong GPU baseline, each that resolves."""
    out: dict[str, DesignState] = {"this design": state}
    if design.workflow != "target-only":
        out["target alone"] = state.target_alone()
    out[NGRAM] = state.target_alone()
    if design.is_speculative and design.family == "fpga-speculative":
        try:
            b = state.gpu_baseline(cat, "brsd_stepahead")
            b.design(cat)
            out["brsd_stepahead (GPU draft)"] = b
        except DseError:  # the draft does not fit the PRM's GPU: no such alternative
            pass
    return out


@dataclass(frozen=True)
class Curve:
    """One design at each rate of the grid below its capacity (`points`: rate -> figures;
    their "intervals": the 90% ends); `family`, `capacity` (requests/s, one replica)."""

    name: str
    family: str
    capacity: float
    points: dict[float, dict[str, Any]] = field(default_factory=dict)
    note: str = ""


def _slo(state: LoadState) -> Any:
    from dse.serving import Slo

    return Slo(state.ttft_ms, state.tpot_ms)


def _keep(r: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: r.get(k) for k in POINT_KEYS}
    out["intervals"] = dict(r.get("intervals") or {})
    return out


def proposer(name: str, d: Design, w: WorkloadSpec) -> Any:
    """The token-level speculation a curve's name asks for (None: none): n-gram lookup at
    NGRAM_K with its default acceptance for the target on the workload (ValueError without
    one)."""
    if name != NGRAM:
        return None
    from dse.serving import Speculation
    from dse.serving.acceptance import default_rate

    got = default_rate("ngram", d.target.model.name, w.name)
    return Speculation("ngram", NGRAM_K, got.acceptance_rate, got.basis)


def serve_at(d: Design, w: WorkloadSpec, rate: float, state: LoadState, *, rep: Any = None,
             capacity: float | None = None, speculation: Any = None) -> dict[str, Any]:
    """One design at one rate (one replica; `dse serve --system/--design ... --rate R --goodput
    ttft:MS tpot:MS`): the figures dse serve prints, their 90% intervals under "intervals".
    ShareGPT lengths serve the target alone through the one-model engine (`dse serve --model
    ... --dataset sharegpt`)."""
    from dse.serving import LIFETIME_YEARS, USD_PER_KWH, Load, serve
    from dse.serving.designs import serve_system

    requests = REQUESTS[state.evaluator]
    if state.lengths == "sharegpt":
        from dse.serving.datasets import dataset

        if d.workflow != "target-only":
            raise ValueError("ShareGPT lengths: a speculative or width design's requests are "
                             "its workload's problems")
        ds = dataset("sharegpt")
        load = Load("rate", rate, round(ds.mean_input_tokens), round(ds.mean_output_tokens),
                    requests, 0, "sharegpt")
        t = d.target
        price = getattr(t.device, "list_price_usd", None)
        r = serve(t, load, evaluator=state.evaluator, slo=_slo(state),
                  capex_usd=(price or 0.0) * t.tp, capacity=capacity,
                  speculation=speculation)
        if price is None:
            r["cost_usd_per_mtok"] = None
            r["intervals"].pop("cost_usd_per_mtok", None)
        return _keep(r)
    r = serve_system(d, w, Load("rate", rate, 1, 1, requests), evaluator=state.evaluator,
                     slo=_slo(state), lifetime_years=LIFETIME_YEARS, usd_per_kwh=USD_PER_KWH,
                     capacity=capacity, rep=rep, speculation=speculation,
                     engine_extra={} if speculation is not None else None)
    return _keep(r)


def serve_curve(name: str, d: Design, w: WorkloadSpec, state: LoadState, *,
                rep: Any = None) -> Curve:
    """The design at every rate of `rate_grid` below its capacity (the closed form's, found
    at the first rate and passed on)."""
    from dse.io.resolve import report

    rep = rep if rep is not None else report(d, w)
    spec = proposer(name, d, w)
    rates = rate_grid(state)
    first = serve_at(d, w, rates[0], replace(state, evaluator="closed-form"), rep=rep,
                     speculation=spec)
    cap = float(first["capacity_request_rate"])
    pts: dict[float, dict[str, Any]] = {}
    for rate in rates:
        if not rate < cap * (1 - 1e-6):
            break
        pts[rate] = (first if rate == rates[0] and state.evaluator == "closed-form" else
                     serve_at(d, w, rate, state, rep=rep, capacity=cap, speculation=spec))
    return Curve(name, "token-speculative" if spec is not None else d.family, cap, pts,
                 note="" if spec is None else spec.basis)


def with_rate(c: Curve, d: Design, w: WorkloadSpec, state: LoadState, *, rep: Any = None
              ) -> Curve:
    """The curve with the chosen rate's point added (none past the capacity)."""
    rate = state.rate
    if rate is None or rate in c.points or not rate < c.capacity * (1 - 1e-6):
        return c
    p = serve_at(d, w, rate, state, rep=rep, capacity=c.capacity,
                 speculation=proposer(c.name, d, w))
    return replace(c, points=dict(sorted({**c.points, rate: p}.items())))


def curve_rows(curves: Sequence[Curve], metric: str) -> list[dict[str, Any]]:
    """Long rows for a chart or a CSV: design, rate, the metric's value and its 90% ends (None
    where the evaluator gives none)."""
    rows = []
    for c in curves:
        for rate, p in c.points.items():
            v = p.get(metric)
            if v is None:
                continue
            iv = p["intervals"].get(metric)
            rows.append({"design": c.name, "family": c.family, "rate": rate, "metric": metric,
                         "value": float(v), "low": None if iv is None else float(iv[0]),
                         "high": None if iv is None else float(iv[1])})
    return rows


def latency_metrics(evaluator: str, name: str) -> list[str]:
    """The latency figures a chart draws for `name` (ttft, tpot or itl): the mean where the
    evaluator gives means only (the closed form), else p50, p90 and p99."""
    if evaluator == "closed-form":
        return [f"mean_{name}_ms"]
    return [f"{p}_{name}_ms" for p in ("median", "p90", "p99")]


def difference(a: Mapping[str, Any], b: Mapping[str, Any], metric: str, shared: bool
               ) -> tuple[float, tuple[float, float]] | None:
    """a - b on the metric with the 90% interval of the difference, as the search at load
    weighs families (dse.search.at_load): the ends moved together where the two share their
    target device (its factors dominate both), else independent (half-widths in
    quadrature)."""
    va, vb = a.get(metric), b.get(metric)
    if va is None or vb is None:
        return None
    m = float(va) - float(vb)
    ia = a["intervals"].get(metric, [va, va])
    ib = b["intervals"].get(metric, [vb, vb])
    if shared:
        ends = (ia[0] - ib[0], ia[1] - ib[1])
        return m, (min(m, *ends), max(m, *ends))
    lo = math.hypot(va - ia[0], ib[1] - vb)
    hi = math.hypot(ia[1] - va, vb - ib[0])
    return m, (m - lo, m + hi)


def meets(p: Mapping[str, Any], state: LoadState) -> list[str]:
    """The SLOs a point misses (by the mean, the closed form's; p90 where simulated)."""
    tag = "mean" if state.evaluator == "closed-form" else "p90"
    out = []
    for k, bound in (("ttft", state.ttft_ms), ("tpot", state.tpot_ms)):
        v = p.get(f"{tag}_{k}_ms")
        if bound is not None and v is not None and v > bound:
            out.append(f"{'mean' if tag == 'mean' else 'p90'} {k.upper()} {v:.4g} ms > "
                       f"{bound:g} ms")
    return out


def _money(v: float) -> str:
    return f"${v:.3g}/Mtok"


def verdict(this: Curve, alone: Curve | None, state: LoadState, shared: bool) -> list[str]:
    """Plain sentences at the chosen rate: each design's cost and SLOs there, the margin
    against the target alone with its 90% interval, and which wins (said plainly when the
    alternative does)."""
    rate = state.rate
    if rate is None:
        return ["Choose a request rate to compare at (*Rate to compare at*): the curves show "
                "every rate up to the axis' end."]
    if alone is None:
        return [f"This design is the target alone: the simplest alternative itself. At "
                f"{rate:g} requests/s: " + _state_at(this, rate, state) + "."]
    lines = [f"At {rate:g} requests/s, the simplest alternative, the target alone: "
             + _state_at(alone, rate, state) + "; this design: "
             + _state_at(this, rate, state) + "."]
    a, t = alone.points.get(rate), this.points.get(rate)
    if t is None and a is None:
        lines.append("Neither serves this rate on one replica: lower it, or compare their "
                     "capacities.")
        return lines
    if t is None:
        lines.append("**The target alone wins at this rate**: this design cannot serve it on "
                     "one replica.")
        return lines
    if a is None:
        lines.append("**This design wins at this rate**: the target alone cannot serve it on "
                     "one replica.")
        return lines
    miss_t, miss_a = meets(t, state), meets(a, state)
    if miss_t and not miss_a:
        lines.append("**The target alone wins at this rate**: it meets the SLOs, this design "
                     "misses them (" + "; ".join(miss_t) + ").")
        return lines
    if miss_a and not miss_t:
        lines.append("**This design wins at this rate**: it meets the SLOs, the target alone "
                     "misses them (" + "; ".join(miss_a) + ").")
        return lines
    diff = difference(t, a, "cost_usd_per_mtok", shared)
    if diff is None:
        lines.append("No cost to compare (a device without a list price).")
        return lines
    m, (lo, hi) = diff
    rel = m / float(a["cost_usd_per_mtok"]) if a["cost_usd_per_mtok"] else float("nan")
    decided = lo > 0 or hi < 0
    words = (f"this design costs {abs(m):.3g} $/Mtok {'more' if m > 0 else 'less'} "
             f"({rel:+.0%}), 90% interval of the difference {lo:+.3g} to {hi:+.3g} $/Mtok")
    if not decided:
        lines.append(f"Margin: {words}: 0 is inside, so the two cannot be told apart on cost "
                     "at this rate" + (" (both miss the SLOs)" if miss_t else "") + ".")
    elif m > 0:
        lines.append(f"**The target alone wins at this rate**: {words}."
                     + (" Both miss the SLOs." if miss_t else ""))
    else:
        lines.append(f"**This design wins at this rate**: {words}."
                     + (" Both miss the SLOs." if miss_t else ""))
    return lines


def _state_at(c: Curve, rate: float, state: LoadState) -> str:
    p = c.points.get(rate)
    if p is None:
        return (f"past its capacity ({c.capacity:.3g} requests/s on one replica: the queue "
                "grows without bound)")
    cost = p.get("cost_usd_per_mtok")
    iv = p["intervals"].get("cost_usd_per_mtok")
    text = "no list price" if cost is None else _money(cost) + (
        "" if iv is None else f" [{iv[0]:.3g}-{iv[1]:.3g}]")
    miss = meets(p, state)
    return text + (", meets the SLOs" if not miss else ", misses " + "; ".join(miss))


def at_load_rows(p: Mapping[str, Any]) -> list[dict[str, str]]:
    """What-if's load figures (one design at the chosen rate): throughput, mean TTFT and cost,
    each with its 90% interval."""
    rows = []
    for key, words, unit, fmt in (("output_throughput", "output throughput", "tokens/s", ".4g"),
                                  ("request_throughput", "request throughput", "requests/s",
                                   ".3g"),
                                  ("mean_ttft_ms", "mean TTFT", "ms", ".4g"),
                                  ("mean_tpot_ms", "mean TPOT", "ms", ".4g"),
                                  ("cost_usd_per_mtok", "cost", "$/Mtok", ".3g"),
                                  ("j_per_token", "energy", "J/token", ".3g")):
        v = p.get(key)
        iv = p["intervals"].get(key)
        rows.append({"figure": words,
                     "value": "–" if v is None else f"{v:{fmt}} {unit}",
                     # none where it is exact (below capacity the throughput is the rate)
                     "90% interval": "–" if iv is None or iv[0] == iv[1]
                     else f"{iv[0]:{fmt}}-{iv[1]:{fmt}}"})
    return rows
