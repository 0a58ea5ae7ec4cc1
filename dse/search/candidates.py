"""The designs a search reports: a Candidate (design, metrics, design-file text), read back from
a stored trial, and the accurate closed form's metrics of the best one. (A Candidate of one
point of a hardware choice's knob grid is built by dse.search.grid.candidate.) Light: no
evaluator, so that reading studies does not load the mean-value model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dse.design_files import DesignFile, parse_design_text
from dse.resolve import report, resolve_design
from dse.specs import Catalog


@dataclass(frozen=True)
class Candidate:
    """A design the search reports, with its metrics and its design-file text."""

    design: DesignFile
    metrics: dict[str, Any]  # metric -> value; "closed_form" -> its headline metrics
    toml: str
    # 90% intervals of the metrics (metric -> [low, high]) and the provenance of each
    # component (dse.uncertainty); empty until `with_intervals`
    intervals: dict[str, list[float]] = field(default_factory=dict)
    provenance: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        s = self.design.system
        sch = self.design.schedule
        if s.workflow_name == "target-only":
            return s.description
        flags = sch.name if sch is not None else "?"
        bt = (f", backtrack {s.backtrack_threshold:.2f} x{s.max_backtracks} "
              f"window {s.backtrack_window}" if sch is not None and sch.backtracking else "")
        return f"{s.description} | {flags}: accept {s.accept_threshold:.2f}{bt}"

    def to_dict(self) -> dict[str, Any]:
        from dse.design_files import system_to_toml
        from dse.schedules import FLAGS

        s = system_to_toml(self.design.system)
        s.pop("sources", None)
        sch = self.design.schedule
        return {"design": {**s, "schedule": ({"name": sch.name, **{f: getattr(sch, f)
                                                                   for f in FLAGS}}
                                             if sch is not None else None),
                           "workload": self.design.workload},
                "metrics": self.metrics,
                **({"intervals": self.intervals, "provenance": self.provenance}
                   if self.intervals else {})}


def with_intervals(cat: Catalog, workloads: Sequence[tuple[str, float]], c: Candidate
                   ) -> Candidate:
    """The candidate with 90% intervals and provenance. They come from the closed form of its
    design on each workload of the mix, the factors' moves by the mean-value model the search
    ranks with (dse.uncertainty.attach, moves="mean-value"); the mix's relative interval
    is the weighted mean of the workloads' low and high ends over their central values (the
    workloads share the device factors, so their errors move together), applied to each
    metric the candidate shows. Its `closed_form` block gets the closed form's own interval
    (the factors' moves by the closed form, as `dse evaluate` reports it)."""
    from dse.engine.evaluate import evaluate
    from dse.uncertainty import INTERVAL_METRICS, attach

    sched = c.design.schedule
    if sched is None:
        return c
    d = resolve_design(cat, c.design.system, schedule=sched)
    rel: dict[str, list[float]] = {m: [0.0, 0.0, 0.0] for m in INTERVAL_METRICS}
    prov: dict[str, dict[str, str]] = {}
    total = sum(wt for _, wt in workloads)
    for name, wt in workloads:
        w = cat.workload(name)
        r = attach(evaluate(d, w), d, w, moves="mean-value")
        for m, (lo, hi) in r.intervals.items():
            v = float(getattr(r, m))
            rel[m][0] += wt * lo
            rel[m][1] += wt * v
            rel[m][2] += wt * hi
        for comp, p in r.provenance.items():
            prov.setdefault(comp, p)
    out: dict[str, list[float]] = {}
    for m, (lo, v, hi) in rel.items():
        shown = c.metrics.get(m)
        if v <= 0 or not isinstance(shown, float) or not math.isfinite(shown):
            continue
        if m == "accuracy":  # an additive shift: the same points around the value shown
            out[m] = [max(shown - (v - lo) / total, 0.0), min(shown + (hi - v) / total, 100.0)]
        else:
            out[m] = [shown * lo / v, shown * hi / v]
    metrics = dict(c.metrics)
    cf = metrics.get("closed_form")
    if isinstance(cf, dict) and len(workloads) == 1:  # its own interval: closed-form moves
        w = cat.workload(workloads[0][0])
        r = report(d, w)
        metrics["closed_form"] = {**cf, "intervals": dict(r.intervals)}
    return replace(c, metrics=metrics, intervals=out, provenance=prov)


def closed_form_metrics(cat: Catalog, spec: Any, sched: Any, workload: str) -> dict[str, float]:
    """The accurate closed form's headline metrics of one design (dse.engine.closed_form)."""

    rep = report(resolve_design(cat, spec, schedule=sched), cat.workload(workload),
                 intervals=False)
    return {"latency_s_per_problem": float(rep.latency_s_per_problem),
            "j_per_token": float(rep.j_per_token),
            "goodput_tokens_per_s": float(rep.goodput_tokens_per_s),
            "accuracy": float(rep.accuracy) if rep.accuracy is not None else math.nan,
            "energy_j_per_problem": float(rep.energy_j_per_problem),
            "p_accept": float(rep.p_accept)}


def trial_candidate(t: Any) -> Candidate:
    df = parse_design_text(t.user_attrs["design_toml"], f"trial {t.number}")
    return Candidate(df, dict(t.user_attrs.get("metrics", {})), t.user_attrs["design_toml"])
