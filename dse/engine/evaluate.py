"""`evaluate(design, workload) -> Report`: the one entry point of the evaluators.

It dispatches on the design's workflow (speculative: dse.engine.closed_form and the
simulator; target-only: dse.engine.target_only; the width workflows: dse.engine.width) and on
the evaluator ("closed-form": expected values; "simulator": `problems` synthetic problems
drawn with `seed`, with latency percentiles), and refuses a report with a NaN or an infinity
(dse.engine.report.finite).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from dse.engine.report import Report, finite, report_from_replay
from dse.model.design import Design
from dse.model.schedules import Costs
from dse.specs.scenario import WorkloadSpec

EVALUATORS: tuple[str, ...] = ("closed-form", "simulator")
EvaluatorName = Literal["closed-form", "simulator"]


def evaluate(design: Design, workload: WorkloadSpec, *, evaluator: str = "closed-form",
             problems: int = 5000, seed: int = 0) -> Report:
    """The metrics of a design on a workload (module docstring)."""
    c = Costs(design, workload)
    if evaluator not in EVALUATORS:
        raise ValueError(f"unknown evaluator {evaluator!r}; valid: {', '.join(EVALUATORS)}")
    if design.is_width:
        from dse.engine.width import width_closed_form, width_replay

        if evaluator == "closed-form":
            return finite(width_closed_form(c))
        return finite(report_from_replay(c, width_replay(c, problems, seed,
                                                         timeline_problem=None)))
    if not design.is_speculative:
        from dse.engine.target_only import target_only_closed_form, target_only_replay

        if evaluator == "closed-form":
            return finite(target_only_closed_form(c))
        return finite(report_from_replay(c, target_only_replay(c, problems, seed,
                                                               timeline_problem=None)))
    if evaluator == "closed-form":
        from dse.engine.closed_form import closed_form

        return finite(closed_form(c))
    from dse.engine.simulator import replay, synthetic_trace

    return finite(report_from_replay(c, replay(c, synthetic_trace(c, problems, seed),
                                                timeline_problem=None)))


def evaluate_batch(batch: Design, members: Sequence[Design], workload: WorkloadSpec,
                   rows: Sequence[int] | None = None) -> list[Report]:
    """The closed-form reports of designs that differ only in their placements' cost
    multipliers (an uncertainty factor's ends) in one vectorised pass: `batch` carries the
    multipliers along a batch axis (dse.uncertainty.perturb.scale_design_batch), `members` are
    the designs one by one, `rows` each member's row of the batch (None: member i is row i;
    members that share a row have equal attempts, dse.uncertainty.perturb.scale_design_rows).
    Equal to `evaluate` of each member."""
    if not batch.is_speculative:
        return [evaluate(m, workload) for m in members]
    from dse.engine.closed_form import closed_form_batch

    return [finite(r) for r in closed_form_batch(Costs(batch, workload),
                                                 [Costs(m, workload) for m in members], rows)]


def evaluate_headline_batch(batch: Design, members: Sequence[Design], workload: WorkloadSpec,
                            rows: Sequence[int] | None = None, *,
                            quadrature: tuple[int, int] | None = None
                            ) -> list[dict[str, float]]:
    """`evaluate_batch`'s headline metrics alone (dse.engine.closed_form.HEADLINE_METRICS:
    latency, goodput, energy, J/token, tokens, accuracy, p_accept), equal to its to the bit
    with less work: what an interval's factor ends need. quadrature: a speculative design's
    quadrature points (token-count axes, context), e.g. closed_form.COARSE_QUADRATURE; None:
    the closed form's own (the other workflows' closed forms have no such grid)."""
    from dse.engine.closed_form import closed_form_headline_batch, headline_of

    if not batch.is_speculative:
        return [headline_of(evaluate(m, workload)) for m in members]
    return closed_form_headline_batch(Costs(batch, workload),
                                      [Costs(m, workload) for m in members], rows,
                                      **({} if quadrature is None
                                         else {"quadrature": quadrature}))
