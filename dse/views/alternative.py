"""Every answer framed against the alternative: a design beside its target model alone (the
same target placement with `workflow = "target-only"`, `DesignState.target_alone`), and the
margin on latency, energy per token and accuracy, with the joint 90% interval of each
difference where it was computed (dse.uncertainty.joint: errors the two designs share, such
as the target's own cost model, move both and cancel in the difference).

A margin is `design - alone` (accuracy in points); it is *better* when it moves the metric
the right way (lower latency and J/token, higher accuracy: dse.search.objectives'
directions) and *decided* when its joint interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dse.engine.report import Report
from dse.search.objectives import METRIC_TABLE
from dse.views.search import fmt

if TYPE_CHECKING:
    from dse.model.design import Design
    from dse.specs.scenario import WorkloadSpec

# (Report field, words, unit) of the margins, in display order
MARGIN_METRICS: tuple[tuple[str, str, str], ...] = (
    ("latency_s_per_problem", "latency per problem", "s"),
    ("j_per_token", "energy per token", "J/token"),
    ("accuracy", "accuracy", "%"),
)


@dataclass(frozen=True)
class Margin:
    """One metric of a design against an alternative (None: a report without the metric)."""

    metric: str
    words: str
    unit: str
    design: float | None
    alone: float | None
    interval: tuple[float, float] | None = None  # joint 90% interval of design - alone

    @property
    def difference(self) -> float | None:
        """design - alone (accuracy: points)."""
        if self.design is None or self.alone is None:
            return None
        return self.design - self.alone

    @property
    def relative(self) -> float | None:
        """design / alone - 1 (None for accuracy, which is a share already, or alone 0)."""
        if self.metric == "accuracy" or self.design is None or not self.alone:
            return None
        return self.design / self.alone - 1

    @property
    def better(self) -> bool | None:
        """Whether the design moves the metric the right way (None: equal or unknown)."""
        d = self.difference
        if d is None or d == 0:
            return None
        return METRIC_TABLE[self.metric].direction * d < 0

    @property
    def decided(self) -> bool | None:
        """Whether the joint 90% interval of the difference excludes 0 (None: no
        interval)."""
        if self.interval is None:
            return None
        lo, hi = self.interval
        return not lo <= 0.0 <= hi


def margins(design: Report, alone: Report,
            intervals: Mapping[str, Sequence[float]] | None = None) -> list[Margin]:
    """The design's margins against the alternative on MARGIN_METRICS; `intervals`: the
    joint 90% interval of each difference (`joint_intervals`), where computed."""
    out = []
    for m, words, unit in MARGIN_METRICS:
        a, b = getattr(design, m), getattr(alone, m)
        iv = (intervals or {}).get(m)
        out.append(Margin(m, words, unit, None if a is None else float(a),
                          None if b is None else float(b),
                          None if iv is None else (float(iv[0]), float(iv[1]))))
    return out


def joint_intervals(design: tuple[Design, Report], alone: tuple[Design, Report],
                    workload: WorkloadSpec, *, moves_by: str = "closed-form",
                    at_a: Any = None, at_b: Any = None) -> dict[str, tuple[float, float]]:
    """The joint 90% interval of (design - alone) on each margin metric both reports have
    (dse.uncertainty.joint.difference_interval). moves_by: "closed-form" (about 20 closed-form
    evaluations per design, as `dse evaluate`) or "mean-value" (the factor moves of a
    speculative design by the mean-value model, tens of ms; within a few percent). at_a,
    at_b: each design's `evaluate_at` on the workload where the caller keeps one (its
    evaluations reused)."""
    from dse.uncertainty.joint import difference_interval

    metrics = [m for m, _, _ in MARGIN_METRICS
               if getattr(design[1], m) is not None and getattr(alone[1], m) is not None]
    return difference_interval(design, alone, workload, metrics, moves_by=moves_by,
                               at_a=at_a, at_b=at_b)


def _signed(v: float, unit: str) -> str:
    return f"{'+' if v > 0 else ''}{fmt(v)} {unit}".rstrip()


def difference_text(m: Margin) -> str:
    """E.g. "-3.734 s (-44.7%)", "-15.53 pts"; a dash without both values."""
    d = m.difference
    if d is None:
        return "–"
    if m.metric == "accuracy":
        return f"{'+' if d > 0 else ''}{fmt(d)} pts"
    rel = m.relative
    return _signed(d, m.unit) + ("" if rel is None else f" ({rel:+.1%})")


def interval_text(m: Margin) -> str:
    """The joint interval of the difference and whether 0 lies in it, e.g.
    "[-4.752, -2.789] s: 0 outside"; a dash without an interval."""
    if m.interval is None:
        return "–"
    unit = "pts" if m.metric == "accuracy" else m.unit
    lo, hi = m.interval
    return (f"[{fmt(lo)}, {fmt(hi)}] {unit}: 0 "
            + ("outside (decided)" if m.decided else "inside (not decided)"))


def margin_rows(ms: Sequence[Margin]) -> list[dict[str, str]]:
    """Display rows, one per metric: this design, the target alone, the difference (this -
    alone, relative in brackets), whether this design is better, and (where computed) the
    joint 90% interval of the difference and whether 0 lies outside it."""
    rows = []
    for m in ms:
        row = {"metric": f"{m.words} ({m.unit})", "this design": fmt(m.design),
               "target alone": fmt(m.alone), "this - alone": difference_text(m),
               "this design is": {True: "better", False: "worse", None: "the same"}[m.better]}
        if any(x.interval is not None for x in ms):
            row["joint 90% interval of the difference"] = interval_text(m)
        rows.append(row)
    return rows


def margin_sentence(ms: Sequence[Margin]) -> str:
    """The margins in one sentence, e.g. "Against the target alone: 41.5% faster (-3.471 s
    per problem), 6.6% less energy per token, 19.52 pts less accurate."."""
    parts = []
    for m in ms:
        d = m.difference
        if d is None:
            continue
        if m.metric == "accuracy":
            parts.append("as accurate" if d == 0 else
                         f"{fmt(abs(d))} pts {'more' if d > 0 else 'less'} accurate")
            continue
        rel = m.relative
        size = f"{abs(rel):.1%}" if rel is not None else fmt(abs(d), m.unit)
        if m.metric == "latency_s_per_problem":
            word = "faster" if d < 0 else "slower"
            parts.append(f"{size} {word} ({_signed(d, m.unit)} per problem)" if d else
                         "as fast")
        else:
            parts.append(f"{size} {'less' if d < 0 else 'more'} {m.words}" if d else
                         f"the same {m.words}")
        if m.decided is False:
            parts[-1] += " (not decided: 0 is inside the joint 90% interval)"
    return "Against the target alone: " + ", ".join(parts) + "."
