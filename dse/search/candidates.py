"""The designs a search reports: a Candidate (design, metrics, design-file text), built from one
point of a hardware choice's knob grid or from a stored trial, and the accurate closed form's
metrics of the best one."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dse.arrays import F64
from dse.design import DesignFile, build_design, design_file_text, parse_design_text
from dse.schedules import PRESETS
from dse.search.grid import Evaluator, system_for, workload_spec
from dse.search.space import Hardware
from dse.specs import Catalog


@dataclass(frozen=True)
class Candidate:
    """A design the search reports, with its metrics and its design-file text."""

    design: DesignFile
    metrics: dict[str, Any]  # metric -> value; "closed_form" -> its headline metrics
    toml: str

    @property
    def label(self) -> str:
        s = self.design.system
        sch = self.design.schedule
        flags = sch.name if sch is not None else "?"
        bt = (f", backtrack {s.backtrack_threshold:.2f} x{s.max_backtracks} "
              f"window {s.backtrack_window}" if sch is not None and sch.backtracking else "")
        return f"{s.description} | {flags}: accept {s.accept_threshold:.2f}{bt}"

    def to_dict(self) -> dict[str, Any]:
        from dse.design import system_to_toml
        from dse.schedules import FLAGS

        s = system_to_toml(self.design.system)
        s.pop("sources", None)
        sch = self.design.schedule
        return {"design": {**s, "schedule": ({"name": sch.name, **{f: getattr(sch, f)
                                                                   for f in FLAGS}}
                                             if sch is not None else None),
                           "workload": self.design.workload},
                "metrics": self.metrics}


def spec_name(text: str) -> str:
    """A catalog-valid name (lowercase letters, digits, '.', '-') made from any text."""
    out = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.")
    return out[:80] or "design"


def candidate(ev: Evaluator, hw: Hardware, metrics: Mapping[str, F64], f: int, a: int, k: int,
              name: str, closed_form: bool = False) -> Candidate:
    kn = ev.knobs(f, a, k)
    spec = system_for(ev.space, hw, accept=kn["accept_threshold"],
                      backtrack=kn["backtrack_threshold"],
                      max_backtracks=kn["max_backtracks"], window=kn["backtrack_window"],
                      name=spec_name(name))
    sched = PRESETS["rsd"].with_flags(backtracking=kn["backtracking"],
                                      step_ahead=kn["step_ahead"],
                                      shadow_sync=kn["shadow_sync"])
    wl = ev.space.workloads[0][0] if len(ev.space.workloads) == 1 else None
    m = {k_: float(v[f, a, k]) for k_, v in metrics.items()}
    m["capex_usd"] = ev.capex_usd(hw)
    out_metrics: dict[str, Any] = dict(m)
    if closed_form and wl is not None:
        out_metrics["closed_form"] = closed_form_metrics(ev.cat, spec, sched, wl)
    mix = ", ".join(f"{n} {w:.2f}" for n, w in ev.space.workloads)
    header = (f"# Chosen by hetero-dse over space {ev.space.name!r} (workloads: {mix}).\n"
              "# Metrics are the mean-value model's; `dse evaluate --design` gives the "
              "accurate closed form.\n")
    text = design_file_text(spec, sched, wl or ev.space.workloads[0][0], m, header=header)
    return Candidate(DesignFile(spec, sched, wl), out_metrics, text)


def closed_form_metrics(cat: Catalog, spec: Any, sched: Any, workload: str) -> dict[str, float]:
    """The accurate closed form's headline metrics of one design (dse.engine.closed_form)."""
    from dse.engine.closed_form import evaluate

    rep = evaluate(build_design(cat, spec, sched), workload_spec(cat, workload))
    return {"latency_s_per_problem": float(rep.latency_s_per_problem),
            "j_per_token": float(rep.j_per_token),
            "goodput_tokens_per_s": float(rep.goodput_tokens_per_s),
            "accuracy": float(rep.accuracy) if rep.accuracy is not None else math.nan,
            "energy_j_per_problem": float(rep.energy_j_per_problem)}


def trial_candidate(t: Any) -> Candidate:
    df = parse_design_text(t.user_attrs["design_toml"], f"trial {t.number}")
    return Candidate(df, dict(t.user_attrs.get("metrics", {})), t.user_attrs["design_toml"])
