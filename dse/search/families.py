"""The answer beside its alternatives: each family's best design against the search's winner.

A search's winner is shown with the best design of each family (`target-only`,
`gpu-speculative`, `fpga-speculative`, `width`: dse.search.space.FAMILIES), each re-evaluated by the
accurate closed form with its 90% intervals (dse.search.shown), its margin against the winner
(family minus winner, closed form) and the joint 90% interval of that difference
(dse.uncertainty.joint, the factors' moves by the closed form: errors the two designs share
move both). A margin is *decided* when its interval excludes zero. Each design
carries its evidence: the devices without a published measurement (projections) and the
components whose numbers are extrapolated.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dse.engine.evaluate import evaluate
from dse.io.resolve import resolve_design
from dse.model.design import Design
from dse.search.candidates import Candidate
from dse.search.shown import checked_value
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
    # no feasible design: the family's most accurate design under every other constraint,
    # where the accuracy bound is what it misses, and a line saying so, after the family's
    # name (dse.search.exhaustive.with_nearest, `nearest_note`)
    nearest: Candidate | None = None
    nearest_line: str = ""
    # a study that sampled this family too little to say (dse.search.optuna_study.
    # study_families): "no feasible design" is then the study's, not the space's
    unreached: bool = False

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
                "note": self.note,
                "nearest": None if self.nearest is None else {
                    "design": self.nearest.to_dict()["design"],
                    "metrics": self.nearest.metrics, "intervals": self.nearest.intervals,
                    "line": f"{self.family}: {self.nearest_line}"}}


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
    from dse.io.design_files import system_to_toml

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


def difference(cat: Catalog, workloads: Sequence[tuple[str, float]], a: Candidate,
               b: Candidate, metrics: Sequence[str] = MARGIN_METRICS
               ) -> tuple[dict[str, float], dict[str, list[float]]]:
    """a minus b on each metric, weighted over the workloads as the search weighs them (closed
    form), and the joint 90% interval of that difference (dse.uncertainty.joint: the factors
    the two designs share move both; their evaluations reused where the candidates carry
    them). A metric either design lacks is left out."""
    from dse.uncertainty.joint import difference_interval

    da, db = _design(cat, a), _design(cat, b)
    margin = {m: 0.0 for m in metrics}
    lo_hi = {m: [0.0, 0.0] for m in metrics}
    for n, wt in workloads:
        w = cat.workload(n)
        (ra, at_a), (rb, at_b) = _report_and_at(a, da, w), _report_and_at(b, db, w)
        iv = difference_interval((da, ra), (db, rb), w, metrics, at_a=at_a, at_b=at_b)
        for m in metrics:
            x, y = getattr(ra, m), getattr(rb, m)
            if x is None or y is None:
                margin[m] = math.nan
                continue
            margin[m] += wt * (float(x) - float(y))
            lo_hi[m][0] += wt * iv[m][0]
            lo_hi[m][1] += wt * iv[m][1]
    keep = [m for m in metrics if math.isfinite(margin[m])]
    return {m: margin[m] for m in keep}, {m: lo_hi[m] for m in keep}


def verdict_scope(fams: Sequence[FamilyBest], labels: Mapping[str, str] | None = None) -> str:
    """Where "no speculative design beats the target alone" holds: the space, or, where a
    study left a family unreached, only the designs it evaluated."""
    gaps = [(labels or {}).get(f.family, f.family) for f in fams if f.unreached]
    if not gaps:
        return "in this space"
    return (f"among the designs this study evaluated (it found no feasible "
            f"{' or '.join(gaps)} design to weigh)")


def family_bests(cat: Catalog, workloads: Sequence[tuple[str, float]], winner: Candidate,
                 bests: Mapping[str, Candidate | None],
                 families: Sequence[str] = FAMILIES,
                 unreached: Mapping[str, str] | None = None) -> list[FamilyBest]:
    """Each family's best against the winner (bests: family -> its best candidate, already
    carrying the closed form's metrics and intervals); families: those the space has
    (dse.search.space.families_of); unreached: for a family a study found no feasible design
    of, why that says nothing of the space (its note)."""
    from dse.uncertainty.evidence import measured_devices

    measured = measured_devices()
    out = []
    for fam in families:
        c = bests.get(fam)
        if c is None:
            why = (unreached or {}).get(fam)
            out.append(FamilyBest(fam, None, note=why or "no feasible design of this family "
                                  "in the space", unreached=why is not None))
            continue
        ev = evidence(_design(cat, c), c.provenance, measured)
        if identity(c) == identity(winner):
            out.append(FamilyBest(fam, c, {m: 0.0 for m in MARGIN_METRICS},
                                  {m: [0.0, 0.0] for m in MARGIN_METRICS}, ev, True))
            continue
        margin, lo_hi = difference(cat, workloads, c, winner)
        out.append(FamilyBest(fam, c, margin, lo_hi, ev))
    return out


@dataclass(frozen=True)
class FrontTie:
    """Two neighbouring designs of a shown front (positions as shown, from 1) and the joint
    90% interval of their difference on each objective: `tied` when every interval holds
    zero (the front cannot tell them apart at 90%)."""

    a: int
    b: int
    interval: dict[str, list[float]]

    @property
    def tied(self) -> bool:
        return bool(self.interval) and all(lo <= 0.0 <= hi
                                           for lo, hi in self.interval.values())

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "interval": self.interval, "tied": self.tied}


def front_ties(cat: Catalog, workloads: Sequence[tuple[str, float]],
               front: Sequence[Candidate], metrics: Sequence[str], *, shown: int = 20
               ) -> list[FrontTie]:
    """Each pair of neighbours among the first `shown` designs of a front, in its order,
    with the joint 90% interval of their difference on `metrics` (the objectives); none when
    an objective has no joint interval (cost and power are derived from the metrics that do,
    by the search, not by the report)."""
    from dse.uncertainty import INTERVAL_METRICS

    if not set(metrics) <= set(INTERVAL_METRICS):
        return []
    top = list(front[:shown])
    return [FrontTie(i + 1, i + 2, difference(cat, workloads, x, y, metrics)[1])
            for i, (x, y) in enumerate(itertools.pairwise(top))]


def ties_sentence(ties: Sequence[FrontTie], *, first: int = 1) -> str:
    """One line naming the neighbouring designs a front cannot tell apart at 90% ("" when it
    tells every neighbour apart); first: the number the table gives its first design (the
    CLI's 1, the dashboard's 0)."""
    tied = [f"#{t.a - 1 + first} and #{t.b - 1 + first}" for t in ties if t.tied]
    if not tied:
        return ""
    return ("Indistinguishable at 90% (the joint interval of their difference holds zero on "
            "every objective): " + ", ".join(tied) + ".")


IDLE_ACCEPT = 0.01  # a speculative family's best accepting under 1% of draft steps: idle


def idle_drafts(fams: Sequence[FamilyBest]) -> list[FamilyBest]:
    """The speculative families whose best design accepts (almost) no draft step (p_accept
    under IDLE_ACCEPT): the target writes every step, so the design is the target alone with
    a draft and a verifier added, and the search found no design of the family that uses its
    draft's steps, meets the constraints and does better on the objective (each family's
    best is the best feasible one the search found)."""
    out = []
    for f in fams:  # step-level speculation (token speculation's proposer has no p_accept)
        if f.candidate is None or f.family not in ("gpu-speculative", "fpga-speculative"):
            continue
        pa = f.candidate.metrics.get("p_accept")
        if pa is not None and float(pa) < IDLE_ACCEPT:
            out.append(f)
    return out


def idle_draft_note(f: FamilyBest, objective: str, name: str | None = None) -> str:
    """One line for an `idle_drafts` family, e.g. "gpu-speculative: its best design accepts
    no draft step (p_accept 0): ..."; name: how the family is called (its key by default)."""
    assert f.candidate is not None
    pa = float(f.candidate.metrics.get("p_accept", 0.0))
    what = ("accepts no draft step (p_accept 0)" if pa == 0 else
            f"accepts under {IDLE_ACCEPT:.0%} of its draft's steps (p_accept {pa:.2g})")
    return (f"{name or f.family}: its best design {what}: the target writes every step, so "
            "it is the target alone with a draft and a verifier added; the search found no "
            "design of this family that uses its draft's steps, meets the constraints and "
            f"does better on {objective}.")


def idle_widths(fams: Sequence[FamilyBest]) -> list[FamilyBest]:
    """The width family's best when it is exactly as accurate as its policy alone: majority
    voting over 2 samples (a 1-1 tie is split at random, so maj@2 is one sample's accuracy,
    dse.width.voting); the search found no width design that adds accuracy, meets the
    constraints and does better on the objective."""
    out = []
    for f in fams:
        if f.candidate is None or f.family != "width":
            continue
        s = f.candidate.design.system
        if s.workflow_name == "majority" and s.samples == 2:
            out.append(f)
    return out


def idle_width_note(f: FamilyBest, objective: str, name: str | None = None) -> str:
    """One line for an `idle_widths` family; name: how the family is called (its key by
    default)."""
    return (f"{name or f.family}: its best design, majority voting over 2 samples, is exactly as "
            "accurate as its policy alone (a 1-1 tie is split at random, so the second vote "
            "changes nothing): it is the target alone with a second sample; the search found "
            "no design of this family that adds accuracy, meets the constraints and does better "
            f"on {objective}.")


def checked_accuracy(c: Candidate, confidence: float) -> float:
    """A design's accuracy where a min_accuracy bound is checked (dse.search.shown)."""
    return float(checked_value(c, "accuracy", "min", confidence) or 0.0)


def nearest_note(c: Candidate, min_accuracy: float, confidence: float) -> str:
    """What a family with no feasible design comes closest with (`FamilyBest.nearest_line`,
    without the family's name): its most accurate design `c` under the other constraints,
    what it reaches, and where the accuracy bound is checked."""
    iv = c.intervals.get("accuracy")
    where = ("its 90% interval's low end" if confidence > 0.5 and iv is not None
             else "its central value")
    span = f" [{iv[0]:.4g}-{iv[1]:.4g}]" if iv is not None else ""
    return (f"no design of this family meets the constraints; its most accurate under the "
            f"others, {c.label}, is at {c.metrics['accuracy']:.4g}%{span}, and {where}, "
            f"{checked_accuracy(c, confidence):.4g}, is under min_accuracy {min_accuracy:g}.")


def nearest_notes(fams: Sequence[FamilyBest], names: Mapping[str, str] | None = None
                  ) -> list[str]:
    """The `nearest_line` of each family that has one, after its name (names: how the families
    are called; their keys by default)."""
    return [f"{(names or {}).get(f.family, f.family)}: {f.nearest_line}"
            for f in fams if f.nearest_line]


def idle_notes(fams: Sequence[FamilyBest], objective: str,
               names: Mapping[str, str] | None = None) -> list[str]:
    """The idle-draft and idle-width lines of a search's families, in family order."""
    name = (names or {}).get
    drafts = {id(f) for f in idle_drafts(fams)}
    widths = {id(f) for f in idle_widths(fams)}
    return [idle_draft_note(f, objective, name(f.family)) if id(f) in drafts
            else idle_width_note(f, objective, name(f.family))
            for f in fams if id(f) in drafts | widths]


def no_speculation_wins(fams: Sequence[FamilyBest], objective_metric: str, sign: float
                        ) -> bool:
    """Whether the best target-only design is at least as good as every other family's best
    (speculative and width) on the objective (sign: +1 minimise, -1 maximise)."""
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
