"""The designs a search shows: each one re-evaluated by the accurate closed form with its 90%
intervals (as `dse evaluate` reports it: dse.io.resolve, dse.uncertainty, the factors' moves by the
closed form) and the list re-ranked by those numbers before it is shown.

The search screens millions of designs with the mean-value model (dse.search.grid, about a
microsecond each), which can be 10-20% away from the closed form on latency and J/token. So a
shown design carries one set of numbers, the accurate ones; the mean-value figures it was
ranked by stay in `metrics["mean_value_diagnostic"]` (the `--json` output's only trace of them).
A workload mix's figures are the workloads' weighted sums as the sweep forms them (latency,
energy, tokens, accuracy; J/token, goodput, power and cost from those); its intervals the
weighted relative ends of the workloads' intervals (the workloads share the device factors).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dse.io.design_files import design_file_text
from dse.io.resolve import resolve_design
from dse.search.candidates import Candidate
from dse.search.objectives import OBJECTIVES, active, direction
from dse.search.pareto import pareto_mask
from dse.specs import Catalog

if TYPE_CHECKING:
    from dse.search.space import Space

DIAGNOSTIC = "mean_value_diagnostic"  # the mean-value figures the search ranked by
# single objective: the mean-value model's best designs (one per hardware choice, or the
# study's best trials) that the accurate closed form re-ranks
TOP_K = 5
# several objectives: the most designs of the mean-value Pareto front re-evaluated and shown,
# spread evenly along the first objective (the text table shows 20)
FRONT_SHOWN = 20
SECONDS_PER_YEAR = 365.25 * 24 * 3600
_SUMMED = ("latency_s_per_problem", "energy_j_per_problem", "tokens_per_problem")


def accurate(cat: Catalog, space: Space, c: Candidate) -> Candidate:
    """The candidate with the accurate closed form's metrics and 90% intervals on the
    space's workload(s) (module docstring), its provenance and its design file's metrics
    replaced; the mean-value metrics kept under DIAGNOSTIC. A candidate already accurate is
    returned as it is."""
    from dse.engine.evaluate import evaluate
    from dse.uncertainty import attach, evaluate_at

    sched = c.design.schedule
    if sched is None or DIAGNOSTIC in c.metrics:
        return c
    d = resolve_design(cat, c.design.system, schedule=sched)
    sums = dict.fromkeys((*_SUMMED, "accuracy", "p_accept"), 0.0)
    rel: dict[str, list[float]] = {}
    prov: dict[str, dict[str, str]] = {}
    evaluators = {}
    for name, wt in space.workloads:
        w = cat.workload(name)
        r0 = evaluate(d, w)
        at = evaluate_at(d, w, central=r0)
        r = attach(r0, d, w, at=at)
        evaluators[name] = (r, at)
        for m in sums:
            v = getattr(r, m)
            sums[m] = math.nan if v is None else sums[m] + wt * float(v)
        for m, (lo, hi) in r.intervals.items():
            v = float(getattr(r, m))
            ends = rel.setdefault(m, [0.0, 0.0, 0.0])
            ends[0], ends[1], ends[2] = ends[0] + wt * lo, ends[1] + wt * v, ends[2] + wt * hi
        for comp, p in r.provenance.items():
            prov.setdefault(comp, p)
    capex = float(c.metrics.get("capex_usd", 0.0))
    metrics: dict[str, Any] = derived(sums, capex, space)
    metrics["p_accept"] = sums["p_accept"]
    metrics["capex_usd"] = capex
    intervals = {}
    for m, (lo, v, hi) in rel.items():
        shown = metrics.get(m)
        if v <= 0 or not isinstance(shown, float) or not math.isfinite(shown):
            continue
        if m == "accuracy":  # an additive shift: the same points around the value shown
            intervals[m] = [max(shown - (v - lo), 0.0), min(shown + (hi - v), 100.0)]
        else:
            intervals[m] = [shown * lo / v, shown * hi / v]
    metrics[DIAGNOSTIC] = {k: v for k, v in c.metrics.items() if isinstance(v, float)}
    wl = c.design.workload or space.workloads[0][0]
    mix = ", ".join(f"{n} {wt:.2f}" for n, wt in space.workloads)
    header = (f"# Chosen by hetero-dse over space {space.name!r} (workloads: {mix}).\n"
              "# Metrics are the accurate closed form's, as `dse evaluate --design` reports "
              "them.\n")
    toml = design_file_text(c.design.system, sched, wl,
                            {k: v for k, v in metrics.items() if isinstance(v, float)},
                            header=header)
    return replace(c, metrics=metrics, toml=toml, intervals=intervals, provenance=prov,
                   evaluators=evaluators)


def derived(sums: Mapping[str, float], capex_usd: float, space: Space) -> dict[str, float]:
    """The search's metrics from a design's latency, energy and tokens per problem and its
    accuracy (as dse.search.grid derives them): J/token, goodput, power, and the cost per
    million tokens (list prices amortised over the space's lifetime plus energy at its
    $/kWh)."""
    lat, e, tok = (sums[m] for m in _SUMMED)
    power = e / lat
    goodput = tok / lat
    usd_per_s = capex_usd / (space.lifetime_years * SECONDS_PER_YEAR) \
        + power / 1000.0 * space.usd_per_kwh / 3600.0
    return {"latency_s_per_problem": lat, "energy_j_per_problem": e, "tokens_per_problem": tok,
            "j_per_token": e / tok, "goodput_tokens_per_s": goodput,
            "accuracy": sums["accuracy"], "power_w": power,
            "cost_usd_per_mtok": usd_per_s / goodput * 1e6}


def checked_value(c: Candidate, metric: str, bound: str, confidence: float) -> float | None:
    """The value a constraint on `metric` is checked at: the pessimistic end of its 90%
    interval (the low end for a "min" bound, the high end for a "max" one) where the search
    checks there (confidence > 0.5), else the central value; None where the design lacks it."""
    v = c.metrics.get(metric)
    iv = c.intervals.get(metric)
    if confidence > 0.5 and iv is not None:
        v = iv[0] if bound == "min" else iv[1]
    return None if v is None else float(v)


def _meets(c: Candidate, constraints: Mapping[str, float], confidence: float) -> bool:
    """Whether the accurate metrics meet the constraints, each at `checked_value`."""
    for con, bound in active(constraints):
        v = checked_value(c, con.metric, con.bound, confidence)
        if v is None or not con.met(v, bound):
            return False
    return True


def shown(cat: Catalog, space: Space, objectives: Sequence[str],
          candidates: Sequence[Candidate], constraints: Mapping[str, float],
          confidence: float) -> list[Candidate]:
    """The candidates as a search shows them: each re-evaluated by the accurate closed form
    (`accurate`), those the accurate numbers put outside the constraints dropped (unless that
    drops every one), then ranked by the accurate value of the first objective; with several
    objectives only the designs no other shown design dominates on the accurate values
    remain (the front)."""
    acc = [accurate(cat, space, c) for c in candidates]
    if not acc:
        return acc
    ok = [c for c in acc if _meets(c, constraints, confidence)]
    acc = ok or acc
    vals = np.array([[direction(o) * float(c.metrics.get(OBJECTIVES[o], math.nan))
                      for o in objectives] for c in acc])
    vals = np.where(np.isfinite(vals), vals, math.inf)
    keep = np.arange(len(acc)) if len(objectives) == 1 else np.flatnonzero(pareto_mask(vals))
    order = keep[np.argsort(vals[keep, 0], kind="stable")]
    return [acc[i] for i in order]
