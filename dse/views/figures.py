"""Report figures: speed-ups over the baselines, the idle/active split of energy, one
simulated problem's timeline, each role's roofline operating points and the tornado of the
mean-value model's terms. The simulator and dse.model.symbolic (sympy) are imported by the functions
that use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.core.arrays import Num
from dse.devices import shape
from dse.engine.report import DEVICES, Report
from dse.model.design import Design
from dse.model.schedules import Costs, fields
from dse.specs.scenario import WorkloadSpec


def speedups(current: Report, baselines: Mapping[str, Report]) -> dict[str, dict[str, float]]:
    """Per baseline: latency speed-up and energy-per-token gain of `current` (x > 1: better)."""
    return {n: {"speedup": b.latency_s_per_problem / current.latency_s_per_problem,
                "energy_gain": b.j_per_token / current.j_per_token}
            for n, b in baselines.items()}


def energy_split(design: Design, report: Report) -> dict[str, dict[str, float]]:
    """Energy per problem by device role, split into idle draw (idle power x latency) and the
    energy above idle; the two sum to `report.energy_by_device_j`. Only the roles the design
    runs (the target alone: "target"); a device that roles share draws its idle power once,
    booked to the first role of its group (as the report books it: Costs.idle_w)."""
    out = {}
    for r in DEVICES:
        if r not in report.energy_by_device_j:
            continue
        idle_w = float(getattr(design, r).power_w("idle")) if design.idle_owner(r) else 0.0
        idle = idle_w * report.latency_s_per_problem
        total = float(report.energy_by_device_j[r])
        out[r] = {"idle_j": idle, "active_j": total - idle, "total_j": total}
    return out


# Interval kinds of a simulated timeline, in legend order, and what each shows.
TIMELINE_KINDS = {
    "prefill": "prompt prefill", "migrate": "prompt prefill on a GPU + KV migration",
    "decode": "draft writes the step", "tokens": "step tokens over the link",
    "verify": "PRM scores the step", "speculate": "step-ahead draft (kept)",
    "discarded": "step-ahead draft (discarded)", "stall": "draft waits for the verdict",
    "prefetch": "target prefetch (interrupted)", "refine": "target rewrites the step",
    "sync": "draft re-synchronises", "verify-rewrite": "PRM scores the rewrite",
    "backtrack": "target writes an alternative after backtracking",
}
TIMELINE_DEVICES: tuple[str, ...] = tuple(r.value for r in fields.TIMELINE_DEVICES)


@dataclass(frozen=True)
class Timeline:
    intervals: list[dict[str, Any]]  # device, kind, start_s, end_s
    latency_s: float
    attempts: int
    decisions: list[str]


def problem_timeline(design: Design, workload: WorkloadSpec, seed: int = 0) -> Timeline:
    """One synthetic problem replayed through the simulator (as `dse simulate
    --timeline-out`), with its per-device intervals. A target-only problem has no decisions:
    the target prefills the prompt and writes every step (`attempts`: its steps)."""
    from dse.engine.simulator import DECISIONS, replay, synthetic_trace

    c = Costs(design, workload)
    if not design.is_speculative:  # the target alone or a width design: no decisions
        from dse.engine.target_only import target_only_replay
        from dse.engine.width import width_replay

        rp = (width_replay if design.is_width else target_only_replay)(
            c, 1, seed, timeline_problem=0)
        return Timeline(rp.timeline, float(rp.latency_s[0]), int(rp.attempts[0]), [])
    tr = synthetic_trace(c, 1, seed)
    rp = replay(c, tr, timeline_problem=0)
    names = {v: k for k, v in DECISIONS.items()}
    dec = [names[int(x)] for x in tr.decision[0][tr.valid[0]]]
    return Timeline(rp.timeline, float(rp.latency_s[0]), len(dec), dec)


@dataclass(frozen=True)
class RooflinePoint:
    op: str
    flops: float
    bytes: float
    time_s: float
    time_low_s: float | None = None  # the time's 90% interval (dse.uncertainty's factor)
    time_high_s: float | None = None

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes

    @property
    def achieved_flops_per_s(self) -> float:
        return self.flops / self.time_s

    @property
    def achieved_interval(self) -> tuple[float, float] | None:
        """The achieved FLOP/s at the ends of the time's interval (low, high)."""
        if self.time_low_s is None or self.time_high_s is None:
            return None
        return self.flops / self.time_high_s, self.flops / self.time_low_s


@dataclass(frozen=True)
class RoleRoofline:
    role: str
    device: str
    model: str
    peak_flops_per_s: float  # datasheet (GPU, x tp) or MAC lanes x clock x 2 (FPGA)
    peak_bytes_per_s: float  # datasheet memory bandwidth (x tp)
    effective_flops_per_s: float  # what the model reaches: serving efficiency / FPGA build
    effective_bytes_per_s: float
    points: list[RooflinePoint]


def operating_context(design: Design, workload: WorkloadSpec) -> float:
    """Mean response tokens in context over a problem's steps (the mean-value model's); for
    the target alone, over its decoded tokens (half the closed form's tokens per problem)."""
    if not design.is_speculative:
        from dse.engine.evaluate import evaluate

        return evaluate(design, workload).tokens_per_problem / 2
    from dse.model.symbolic import components

    comp = components(design, workload)
    return (comp["_s_mean"] - 1) / 2 * comp["_m_c"]


def rooflines(design: Design, workload: WorkloadSpec) -> list[RoleRoofline]:
    """Each role's roofline and operating points at the mean context: draft and target decode
    one token; the PRM scores a mean step (prefill of problem + context + step, every position
    through its head), or the target judging it scores the step and its instruction after
    its cached prefix; the target prefills a drafted step (prefix cached; not the target
    alone, nor a target that judged the step). Each point's time
    carries its 90% interval (the placement's time factor for that operation). Only the roles
    the design runs; a target that verifies appears twice, as the verifier ("prm": scoring a
    step) and as the target. A width design's points are its batches of N: the policy decoding
    a token of each of its N sequences, the PRM scoring N whole responses."""
    from dse.uncertainty.factors import placement_factors

    c = Costs(design, workload)
    resp = operating_context(design, workload)
    ctx = workload.prompt_tokens + resp
    x = workload.draft_step_tokens_mean
    out = []
    for role in design.roles:
        pl = getattr(design, role)
        m, p = pl.model, pl.precision
        peak_f, peak_b = pl.peak_ops_per_s, pl.peak_bytes_per_s
        eff_f, eff_b = pl.effective_ops_per_s, pl.effective_bytes_per_s
        kvb = pl.kv_bits

        # the time factor of each operation (dse.uncertainty): its 90% range multiplies it
        factor = {o: f for f in placement_factors(pl) if f.quantity == "time"
                  for o in (("decode", "prefill") if f.key.startswith("time:all:")
                            else (f.key.split(":")[1],))}

        def pt(op: str, kind: str, n: float, k: float, t: Num, heads: float = 1.0,
               m: Any = m, p: Any = p, kvb: int = kvb,
               factor: Mapping[str, Any] = factor, batch: int = 1) -> RooflinePoint:
            # a batch of B sequences: every sequence's FLOPs and KV, the weights read once
            f = factor.get(kind)
            one = float(shape.forward_bytes(m, p, n, k, kv_bits=kvb))
            weights = float(shape.forward_bytes(m, p, 0, 0, kv_bits=kvb))
            return RooflinePoint(op, batch * float(shape.forward_flops(
                m, n, k, head_positions=heads)), weights + batch * (one - weights), float(t),
                None if f is None else float(t) * f.low,
                None if f is None else float(t) * f.high)

        if design.is_width:  # N sequences a pass: the policy's decode, the PRM's scoring
            b = design.samples
            if role == "prm":
                n = workload.problem_tokens + 2 * resp  # a whole response (resp: its mean)
                pts = [pt(f"score {b} responses", "prefill", n, 0,
                          pl.prefill_s(n, 0, all_positions=True, batch=b), heads=n, batch=b)]
            else:
                pts = [pt(f"decode token x{b}", "decode", 1, ctx,
                          pl.decode_token_s(ctx, batch=b), batch=b)]
        elif role == "prm" and design.verifier.is_target:
            from dse.model.verifiers import judge_parameters

            # the target judges: the step and the scoring instruction after its cached prefix
            n = x + judge_parameters().prompt_tokens
            pts = [pt("judge step", "prefill", n, ctx, c.prm(x, resp))]
        elif role == "prm":
            n = workload.problem_tokens + resp + x
            pts = [pt("verify step", "prefill", n, 0, c.prm(x, resp), heads=n)]
        else:
            pts = [pt("decode token", "decode", 1, ctx, pl.decode_token_s(ctx))]
            # it prefills drafted steps (a judging target has, when it scored them)
            if role == "target" and design.is_speculative and not design.verifier.is_target:
                pts.append(pt("prefill step", "prefill", x, ctx,
                              c.target_prefill(x, resp + x)))
        out.append(RoleRoofline(role, pl.device.name, m.name, peak_f, peak_b, eff_f, eff_b, pts))
    return out


# Labels of the tornado's probability terms (the step components' are dse.model.symbolic's).
PROB_LABELS = {"pa": "accept probability", "pf": "rewrite fails the backtrack threshold"}


def tornado(design: Design, workload: WorkloadSpec, rel: float = 0.1) -> list[dict[str, Any]]:
    """Latency and J/token of the mean-value model (dse.model.symbolic) with each term scaled by
    1 - rel and 1 + rel, the others held: one vectorised call. The probabilities (accept,
    rewrite fails) also move the expected attempt and backtrack counts. Rows sorted by the
    larger relative swing; terms that are zero in this schedule are left out. For small `rel`
    a step component's slope equals `dse.model.symbolic.sensitivities`."""
    from dse.model.symbolic import COMPONENT_LABELS, COMPONENTS, batch_metrics, components

    comp = components(design, workload)
    terms = [k for k in (*COMPONENTS, "pa", "pf")
             if (comp[f"_{k}"] if k in ("pa", "pf") else comp[k]) > 0]
    n = 1 + 2 * len(terms)
    arr = {k: np.full(n, float(v)) for k, v in comp.items() if not isinstance(v, str)}
    probs = {"pa": np.full(n, comp["_pa"]), "pf": np.full(n, comp["_pf"])}
    for i, k in enumerate(terms):
        target = probs[k] if k in probs else arr[k]
        target[1 + 2 * i] *= 1 - rel
        target[2 + 2 * i] *= 1 + rel
    for k in probs:
        probs[k] = np.clip(probs[k], 0.0, 1.0)
    s = design.schedule
    res = batch_metrics(arr, step_ahead=s.step_ahead, shadow=s.shadow_sync,
                        backtracking=s.backtracking, pa=probs["pa"], pf=probs["pf"],
                        window=np.full(n, float(design.backtrack_window)),
                        max_bt=np.full(n, float(design.max_backtracks)),
                        tokens=arr["_s_mean"] * arr["_m_c"])
    lat, jpt = res["latency_s_per_problem"], res["j_per_token"]
    rows = []
    for i, k in enumerate(terms):
        lo, hi = 1 + 2 * i, 2 + 2 * i
        rows.append({"term": k, "label": {**COMPONENT_LABELS, **PROB_LABELS}.get(k, k), "rel": rel,
                     "latency_base_s": float(lat[0]), "latency_low_s": float(lat[lo]),
                     "latency_high_s": float(lat[hi]), "j_per_token_base": float(jpt[0]),
                     "j_per_token_low": float(jpt[lo]), "j_per_token_high": float(jpt[hi])})

    def swing(r: dict[str, Any]) -> float:
        return max(abs(r["latency_high_s"] - r["latency_low_s"]) / r["latency_base_s"],
                   abs(r["j_per_token_high"] - r["j_per_token_low"]) / r["j_per_token_base"])

    return sorted(rows, key=swing, reverse=True)


# The metrics the Uncertainty tab draws with error bars: (Report field, label, unit).
INTERVAL_PANELS = (("latency_s_per_problem", "Latency per problem", "s"),
                   ("j_per_token", "Energy per token", "J/token"),
                   ("accuracy", "Accuracy", "%"))


def interval_rows(reports: Mapping[str, Report]) -> list[dict[str, Any]]:
    """One row per (design, metric): the value and its 90% interval's ends (reports made with
    dse.uncertainty.attach; a metric without an interval is left out)."""
    out = []
    for name, r in reports.items():
        for m, label, unit in INTERVAL_PANELS:
            v = getattr(r, m)
            if v is None or m not in r.intervals:
                continue
            lo, hi = r.intervals[m]
            out.append({"design": name, "metric": m, "label": label, "unit": unit,
                        "value": float(v), "low": float(lo), "high": float(hi)})
    return out


def provenance_rows(report: Report) -> list[dict[str, str]]:
    """The provenance as table rows: component, status, what it rests on."""
    return [{"component": c, "status": p["status"], "rests on": p["basis"]}
            for c, p in report.provenance.items()]
