"""The designs a search reports: a Candidate (design, metrics, design-file text), read back from
a stored trial, and the accurate closed form's headline metrics of a design (the search shows
them with intervals: dse.search.shown). (A Candidate of one
point of a hardware choice's knob grid is built by dse.search.grid.candidate.) Light: no
evaluator, so that reading studies does not load the mean-value model."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dse.io.design_files import DesignFile, parse_design_text
from dse.io.resolve import report, resolve_design
from dse.specs import Catalog


@dataclass(frozen=True)
class Candidate:
    """A design the search reports, with its metrics and its design-file text."""

    design: DesignFile
    # metric -> value: the accurate closed form's once shown (dse.search.shown), the mean-value
    # model's before, then kept under "mean_value_diagnostic"
    metrics: dict[str, Any]
    toml: str
    # 90% intervals of the metrics (metric -> [low, high]) and the provenance of each
    # component (dse.uncertainty); empty until dse.search.shown.accurate
    intervals: dict[str, list[float]] = field(default_factory=dict)
    provenance: dict[str, dict[str, str]] = field(default_factory=dict)
    # workload -> (the closed-form report, its `evaluate_at` with the evaluations its intervals
    # made) once dse.search.shown.accurate has run: a joint interval of the design reuses them
    evaluators: dict[str, tuple[Any, Any]] = field(default_factory=dict, compare=False,
                                                   repr=False)

    @property
    def label(self) -> str:
        s = self.design.system
        sch = self.design.schedule
        if s.workflow_name != "speculative":  # the target alone, a width design
            return s.description
        flags = sch.name if sch is not None else "?"
        bt = (f", backtrack {s.backtrack_threshold:.2f} x{s.max_backtracks} "
              f"window {s.backtrack_window}" if sch is not None and sch.backtracking else "")
        return f"{s.description} | {flags}: accept {s.accept_threshold:.2f}{bt}"

    def to_dict(self) -> dict[str, Any]:
        from dse.io.design_files import system_to_toml
        from dse.model.schedules import FLAGS

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
