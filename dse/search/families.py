"""The answer beside its alternatives: each family's best design against the search's winner.

A search's winner is shown with the best design of each family (`target-only`,
`gpu-speculative`, `fpga-speculative`: dse.search.space.FAMILIES), each re-evaluated by the
accurate closed form with its 90% intervals (dse.search.shown), its margin against the winner
(family minus winner, closed form) and the joint 90% interval of that difference
(dse.uncertainty.joint, the factors' moves by the closed form: errors the two designs share
move both). A margin is *decided* when its interval excludes zero. Each design
carries its evidence: the devices without a published measurement (projections) and the
components whose numbers are extrapolated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dse.design import Design
from dse.engine.evaluate import evaluate
from dse.resolve import resolve_design
from dse.search.candidates import Candidate
from dse.search.space import FAMILIES
from dse.specs import Catalog

MARGIN_METRICS: tuple[str, ...] = ("j_per_token", "latency_s_per_problem", "accuracy")


@dataclass(frozen=True)
class FamilyBest:
    """One family's best design (None: the space has no feasible design of it) and its
    margins against the winner."""

    family: str
    candidate: Candidate | None
    margin: dict[str, float] = field(default_factory=dict)  # family - winner, closed form
    margin_interval: dict[str, list[float]] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    is_winner: bool = False
    note: str = ""

    def decided(self, metric: str) -> bool | None:
        iv = self.margin_interval.get(metric)
        if iv is None:
            return None
        return not (iv[0] <= 0.0 <= iv[1])

    def to_dict(self) -> dict[str, Any]:
        c = self.candidate
        return {"family": self.family,
                "design": None if c is None else c.to_dict()["design"],
                "metrics": {} if c is None else c.metrics,
                "intervals": {} if c is None else c.intervals,
                "margin": self.margin, "margin_interval": self.margin_interval,
                "decided": {m: self.decided(m) for m in self.margin},
                "evidence": list(self.evidence), "is_winner": self.is_winner,
                "note": self.note}


def evidence(d: Design, provenance: Mapping[str, Mapping[str, str]],
             measured: frozenset[str]) -> tuple[str, ...]:
    """What a design's numbers rest on that a user should know: each device without a
    published measurement (a projection) and each extrapolated component."""
    out = []
    devices = [("draft", d.draft_placement), ("prm", d.prm_placement), ("target", d.target)]
    for role, p in devices:
        if p is not None and p.device.name not in measured:
            out.append(f"{role} device {p.device.name}: projection only (no published "
                       "measurement)")
    out += [f"{comp}: extrapolated" for comp, p in sorted(provenance.items())
            if p.get("status") == "extrapolated"]
    return tuple(out)


def identity(c: Candidate) -> tuple[Any, ...]:
    """What makes two candidates one design (not their names or descriptions)."""
    from dse.design_files import system_to_toml

    s = system_to_toml(c.design.system)
    for k in ("name", "description", "sources"):
        s.pop(k, None)
    return (tuple(sorted(s.items())), c.design.schedule)


def _design(cat: Catalog, c: Candidate) -> Design:
    assert c.design.schedule is not None
    return resolve_design(cat, c.design.system, schedule=c.design.schedule)


def _report_and_at(c: Candidate, d: Design, w: Any) -> tuple[Any, Any]:
    """The design's closed-form report on the workload and its `evaluate_at` (the factors'
    moves by the closed form): the ones its shown intervals made (dse.search.shown), else
    new."""
    from dse.uncertainty import evaluate_at

    if w.name in c.evaluators:
        return c.evaluators[w.name]
    r = evaluate(d, w)
    return r, evaluate_at(d, w, central=r)


def family_bests(cat: Catalog, workloads: Sequence[tuple[str, float]], winner: Candidate,
                 bests: Mapping[str, Candidate | None]) -> list[FamilyBest]:
    """Each family's best against the winner (bests: family -> its best candidate, already
    carrying the closed form's metrics and intervals)."""
    from dse.uncertainty.evidence import measured_devices
    from dse.uncertainty.joint import difference_interval

    measured = measured_devices()
    dw = _design(cat, winner)
    reports_w = {n: _report_and_at(winner, dw, cat.workload(n)) for n, _ in workloads}
    out = []
    for fam in FAMILIES:
        c = bests.get(fam)
        if c is None:
            out.append(FamilyBest(fam, None, note="no feasible design of this family in the "
                                  "space"))
            continue
        d = _design(cat, c)
        ev = evidence(d, c.provenance, measured)
        same = identity(c) == identity(winner)
        if same:
            out.append(FamilyBest(fam, c, {m: 0.0 for m in MARGIN_METRICS},
                                  {m: [0.0, 0.0] for m in MARGIN_METRICS}, ev, True))
            continue
        margin = {m: 0.0 for m in MARGIN_METRICS}
        lo_hi = {m: [0.0, 0.0] for m in MARGIN_METRICS}
        for n, wt in workloads:
            w = cat.workload(n)
            (rc, at_c), (rw, at_w) = _report_and_at(c, d, w), reports_w[n]
            iv = difference_interval((d, rc), (dw, rw), w, MARGIN_METRICS, at_a=at_c,
                                     at_b=at_w)
            for m in MARGIN_METRICS:
                a, b = getattr(rc, m), getattr(rw, m)
                if a is None or b is None:
                    continue
                margin[m] += wt * (float(a) - float(b))
                lo_hi[m][0] += wt * iv[m][0]
                lo_hi[m][1] += wt * iv[m][1]
        margin = {m: v for m, v in margin.items() if math.isfinite(v)}
        out.append(FamilyBest(fam, c, margin, lo_hi, ev))
    return out


def no_speculation_wins(fams: Sequence[FamilyBest], objective_metric: str, sign: float
                        ) -> bool:
    """Whether the best target-only design is at least as good as every speculative family's
    best on the objective (sign: +1 minimise, -1 maximise)."""
    by = {f.family: f for f in fams if f.candidate is not None}
    base = by.get("target-only")
    if base is None or base.candidate is None:
        return False
    v0 = base.candidate.metrics.get(objective_metric)
    for f in by.values():
        if f.family == "target-only" or f.candidate is None:
            continue
        v1 = f.candidate.metrics.get(objective_metric)
        if v0 is None or v1 is None or sign * float(v1) < sign * float(v0):
            return False
    return True
