"""Intervals and provenance from declared evidence.

Every prediction carries a 90% interval and a provenance: for each component (each device's
cost, the accuracy, the workload statistics) whether it rests on a calibrated setting, a
cross-validated family or an extrapolation, and on what. The evidence is data
(dse/data/uncertainty.toml and the calibration scripts' cross-validation files, `evidence`);
the factors of a design follow from it (`factors`); they perturb the evaluators' inputs
(`perturb`) and are propagated to first order (`propagate`). docs/uncertainty.md has the
method and the coverage it reaches.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from dse.uncertainty.factors import (
    Factor,
    accuracy_factors,
    accuracy_key,
    design_factors,
    provenance,
)
from dse.uncertainty.perturb import (
    batches,
    is_time_only,
    perturb_workload,
    scale_design,
)
from dse.uncertainty.propagate import BatchAt, EvaluateAt, Metrics, intervals, monte_carlo

if TYPE_CHECKING:
    from dse.engine.report import Report
    from dse.model.design import Design
    from dse.specs.scenario import WorkloadSpec

# The headline metrics every report gives an interval for.
INTERVAL_METRICS = ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token",
                    "energy_j_per_problem", "accuracy")

__all__ = [
    "INTERVAL_METRICS",
    "Factor",
    "accuracy_factors",
    "attach",
    "design_factors",
    "dynamic_energy_by_power_key",
    "evaluate_at",
    "intervals",
    "monte_carlo",
    "perturbed",
    "perturbed_workload",
    "provenance",
    "scale_design",
    "shifted_report",
]


def perturbed_workload(w: WorkloadSpec, values: Mapping[str, float]) -> WorkloadSpec:
    """The workload with the factors in `values` (key -> value) that concern it applied."""
    from dse.uncertainty.evidence import settings

    return perturb_workload(w, values, settings().calibration_threshold)


def perturbed(d: Design, w: WorkloadSpec, values: Mapping[str, float]
              ) -> tuple[Design, WorkloadSpec]:
    """The design and workload with the factors in `values` (key -> value) applied."""
    return scale_design(d, values), perturbed_workload(w, values)


def shifted_report(d: Design, w: WorkloadSpec, values: Mapping[str, float]
                   ) -> tuple[Design, Report]:
    """The perturbed design and its closed-form report at the factor values, an accuracy
    shift (`accuracy:<workload>:<draft>:<target>`) added to its accuracy."""
    from dse.engine.evaluate import evaluate
    from dse.uncertainty.propagate import shift_scale

    d2, w2 = perturbed(d, w, values)
    r = evaluate(d2, w2)
    key = accuracy_key(d, w)
    if key in values and r.accuracy is not None:
        (f,) = [f for f in design_factors(d, w) if f.key == key]
        shift = values[key] * float(shift_scale(f, r.p_accept))
        r = replace(r, accuracy=min(max(r.accuracy + shift, 0.0), 100.0))
    return d2, r


def dynamic_energy_by_power_key(d: Design, w: WorkloadSpec, r: Report) -> dict[str, float]:
    """Energy per problem above idle (J) of each power factor's key (`power:<device
    identity>`): every device's energy less its idle draw over the latency, the prompt
    prefill's energy counted with the placement that ran it. Energy is linear in each
    placement's dynamic power (idle + (P - idle) x f), so a power factor f moves the energy by
    exactly (f - 1) x this."""
    from dse.model.schedules import Costs
    from dse.uncertainty.perturb import device_identity

    c = Costs(d, w)
    init = c.init_energy_by_role()
    idle = c.idle_w()
    out: dict[str, float] = {}
    for role in d.roles:
        p = getattr(d, role)
        dyn = r.energy_by_device_j[role] - idle[role] * r.latency_s_per_problem
        if role in init:
            dyn -= init[role][1]
        key = f"power:{device_identity(p)}"
        out[key] = out.get(key, 0.0) + dyn
    for init_p, j in init.values():
        key = f"power:{device_identity(init_p)}"
        out[key] = out.get(key, 0.0) + j
    return out


MOVES = ("mean-value", "closed-form")
GRIDS = ("coarse", "full")  # evaluate_at's closed-form moves: which quadrature grid
# distinct designs per batched closed form: past these the grid arrays (with step-ahead the
# full (x, z, nt) grid) outgrow the caches and a call runs slower per design; with glibc
# keeping freed memory (dse/core/process.py, as the dse command does) a U280 design took 1.1 ms
# in a batch of 8 without step-ahead and 5.5-6 ms in a batch of 4 with it, against 4 ms and
# 9-12 ms alone (one core, CPU time; benchmarks/bench_engine.py)
BATCH = 8
BATCH_STEP_AHEAD = 4
# on the coarse grid (128 points a position against 500) a batch of 32 is about twice one of
# 4 on the full grid: a U280 heteroreason report's intervals took 35-39 ms in batches of 32, 16
# or 8 alike (one core, min of 5, this module's `attach`); with 3 points a token axis, 22-45 ms
# for a U280 design and its GPU baselines with every end in one batch against 30-63 ms in
# batches of 4
BATCH_COARSE = 32


def batch_size(d: Design, grid: str = "full") -> int:
    """Distinct designs per batched closed form of the design's factor ends on the grid."""
    if grid == "coarse":
        return BATCH_COARSE
    return BATCH_STEP_AHEAD if d.is_speculative and d.schedule.step_ahead else BATCH


# the metrics a factor end moves additively on the coarse grid (the rest move by their ratio)
ADDITIVE_MOVES = ("accuracy", "p_accept")


def evaluate_at(d: Design, w: WorkloadSpec, metrics: Sequence[str] = INTERVAL_METRICS, *,
                moves: str = "closed-form", central: Report | None = None,
                grid: str = "coarse") -> EvaluateAt:
    """A function from factor values to the metrics of the perturbed design, around the
    closed form's central report.

    moves: which model evaluates the perturbed designs. "closed-form": the closed form itself
    (4-25 ms each alone; `many` evaluates the points that move only placements' times and
    powers in batches of distinct designs, 1-6 ms a design there). "mean-value": the sweep's
    mean-value model (dse.model.symbolic, about 1 ms), whose relative move of each timing and
    energy metric is applied to the closed form's value (the two share every timing rule,
    dse.model.schedules.rules; for the paper's systems their intervals agree within a few percent
    of the width, tests/test_uncertainty.py, but where the mean-value model's overlaps
    differ, e.g. forward-only at a high threshold, an end can differ by a third of the
    width), the accuracy from the closed form's accuracy-only pass. Power factors alone
    move only the energy, linearly: they are computed from the central report without
    another evaluation (`dynamic_energy_by_power_key`).
    central: the design's closed-form report, where the caller has it.
    grid: with closed-form moves of a speculative design's headline metrics, "coarse" evaluates
    each factor end on the closed form's coarser quadrature (closed_form.COARSE_QUADRATURE,
    128 grid points a position instead of 500: 2-3x faster) and applies its move relative to
    that grid's own central value to the central report (a ratio; accuracy and p_accept, which
    the grid does not change, a difference): the grid's error is common to an end and the
    centre and cancels. "full": each end on the closed form's own grid (the check of
    "coarse", tests/test_closed_form_batch.py)."""
    from dse.engine.closed_form import COARSE_QUADRATURE, HEADLINE_METRICS, accuracy_only
    from dse.engine.evaluate import evaluate, evaluate_batch, evaluate_headline_batch

    if moves not in MOVES:
        raise ValueError(f"moves: {moves!r}; valid: {', '.join(MOVES)}")
    if grid not in GRIDS:
        raise ValueError(f"grid: {grid!r}; valid: {', '.join(GRIDS)}")
    if not d.is_speculative:  # one generation: the closed form is as fast as the mean value
        moves = "closed-form"
    central = central if central is not None else evaluate(d, w)
    dyn = dynamic_energy_by_power_key(d, w, central)
    mv0: dict[str, float] = {}
    if moves == "mean-value":
        from dse.model.symbolic import mean_value

        mv0 = mean_value(d, w)

    def relative(values: Mapping[str, float]) -> Report:
        from dse.model.symbolic import mean_value

        d2, w2 = perturbed(d, w, values)
        mv = mean_value(d2, w2)
        out = {m: getattr(central, m) * mv[m] / mv0[m] for m in
               ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token",
                "energy_j_per_problem")}
        acc = central.accuracy
        if acc is not None and w2 != w:
            acc = accuracy_only(d2, w2)
        return replace(central, accuracy=acc, **out)

    memo: dict[tuple[tuple[str, float], ...], Metrics] = {}
    lean = set(metrics) <= set(HEADLINE_METRICS)  # the headline alone: less to compose
    quad = COARSE_QUADRATURE if grid == "coarse" and lean and d.is_speculative else None
    coarse0: Mapping[str, float] | None = None  # the coarse grid's central headline

    def coarse_central() -> Mapping[str, float]:
        nonlocal coarse0
        if coarse0 is None:  # unless `many` had it evaluated in its first batch
            coarse0 = evaluate_headline_batch(d, [d], w, quadrature=quad)[0]
        return coarse0

    def headline(rs: Sequence[Mapping[str, float]]) -> list[dict[str, float]]:
        """The headline metrics of factor ends: on the coarse grid, each one's move from
        that grid's central value applied to the central report."""
        if quad is None:
            return [pick(r) for r in rs]
        out, b0 = [], coarse_central()
        for r in rs:
            row = {}
            for m in (*metrics, "p_accept"):
                v, b, c = float(r[m]), float(b0[m]), float(getattr(central, m))
                row[m] = c + v - b if m in ADDITIVE_MOVES or b == 0 else c * v / b
            out.append(row)
        return out

    def at(values: Mapping[str, float]) -> Metrics:
        key = tuple(sorted(values.items()))
        if key not in memo:
            memo[key] = evaluated(values)
        return memo[key]

    def evaluated(values: Mapping[str, float]) -> dict[str, float]:
        if not values:
            r = central
        elif all(k.startswith("power:") for k in values):
            e = central.energy_j_per_problem + sum((v - 1.0) * dyn.get(k, 0.0)
                                                   for k, v in values.items())
            r = replace(central, energy_j_per_problem=e,
                        j_per_token=e / central.tokens_per_problem)
        elif moves == "mean-value":
            r = relative(values)
        elif lean:  # the headline alone, as `many`'s batches
            d2, w2 = perturbed(d, w, values)
            return headline(evaluate_headline_batch(d2, [d2], w2, quadrature=quad))[0]
        else:
            r = evaluate(*perturbed(d, w, values))
        return pick(r)

    def pick(r: Report | Mapping[str, float]) -> dict[str, float]:
        if isinstance(r, Mapping):
            return {m: float(r[m]) for m in (*metrics, "p_accept")}
        return {m: float(getattr(r, m)) for m in (*metrics, "p_accept")}

    def many(points: Sequence[Mapping[str, float]]) -> list[Metrics]:
        """`at` of each point; the closed form's points that move only placements' times and
        powers evaluated together (dse.engine.evaluate.evaluate_batch), `batch_size` at a
        time."""
        out: list[Metrics | None] = [None] * len(points)
        batched = [i for i, v in enumerate(points) if moves == "closed-form" and v
                   and is_time_only(v) and not all(k.startswith("power:") for k in v)
                   and tuple(sorted(v.items())) not in memo]
        # on the coarse grid its central value rides in the first batch (a row of ones)
        nonlocal coarse0
        first: list[Mapping[str, float]] = (
            [{}] if quad is not None and batched and coarse0 is None else [])
        todo = [*first, *(points[i] for i in batched)]
        for batch, sel, rows in batches(d, todo,
                                        batch_size(d, "full" if quad is None else "coarse")):
            members = [scale_design(d, todo[j]) for j in sel]
            if not lean:
                rs = [pick(r) for r in evaluate_batch(batch, members, w, rows)]
            else:
                raw = evaluate_headline_batch(batch, members, w, rows, quadrature=quad)
                if first and sel[0] == 0:
                    coarse0, sel, raw = raw[0], sel[1:], raw[1:]
                rs = headline(raw)
            for j, r in zip(sel, rs, strict=True):
                i = batched[j - len(first)]
                out[i] = memo[tuple(sorted(points[i].items()))] = r
        return [o if o is not None else at(v) for o, v in zip(out, points, strict=True)]

    return BatchAt(at, many)


def draw_ends(accuracy_pct: float, problems: int | None) -> tuple[float, float]:
    """How far (points) below and above a simulated accuracy the 90% Wilson interval of its
    own draw reaches: the share of `problems` synthetic problems solved (none: no draw). One
    problem solved of one: (73.0, 0); none of one: (0, 73.0)."""
    from dse.uncertainty.joint import wilson_pct

    if not problems:
        return 0.0, 0.0
    lo, hi = wilson_pct(accuracy_pct / 100.0 * problems, problems)
    return max(accuracy_pct - lo, 0.0), max(hi - accuracy_pct, 0.0)


def attach(report: Report, d: Design, w: WorkloadSpec, *, moves: str = "closed-form",
           at: EvaluateAt | None = None) -> Report:
    """The report with its 90% intervals and provenance: first order over the design's
    factors, around the closed form's value, each factor's moves by the closed form's headline
    pass (about 12 evaluations, 10-60 ms in the `dse` command, more where freed memory goes
    back to the system, dse/core/process.py: what `dse evaluate`, the dashboard and the search's
    shown designs use) or, with moves="mean-value", by the sweep's mean-value model (tens of
    ms, within a few percent of the width). A simulated
    report gets the same relative interval around its own central value (its accuracy, an
    additive shift, the same points either side of the simulated value, each widened in
    quadrature by the Wilson interval of its draw of `problems`: `draw_ends`). at: the design's
    `evaluate_at` where the caller has one (its evaluations are remembered, so a joint
    interval of the same design reuses them); built here otherwise."""
    fs = design_factors(d, w)
    metrics = [m for m in INTERVAL_METRICS if getattr(report, m) is not None]
    if at is None:
        at = evaluate_at(d, w, metrics, moves=moves,
                         central=report if report.evaluator == "closed-form" else None)
    central = at({}) if report.evaluator != "closed-form" else {
        m: float(getattr(report, m)) for m in (*metrics, "p_accept")}
    iv = intervals(fs, central, at, metrics)
    out: dict[str, list[float]] = {}
    for m in metrics:
        lo, hi = (float(x) for x in iv[m])
        c0, v = float(central[m]), float(getattr(report, m))
        if report.evaluator != "closed-form":  # around the simulated value, as wide
            if m == "accuracy":  # an additive shift: the same points either side, each
                # widened by the draw of its problems (`draw_ends`)
                down, up = draw_ends(v, report.problems)
                lo = max(v - math.hypot(c0 - lo, down), 0.0)
                hi = min(v + math.hypot(hi - c0, up), 100.0)
            elif c0 != 0:
                lo, hi = lo * v / c0, hi * v / c0
        out[m] = [lo, hi]
    prov = provenance(fs)
    return replace(report, intervals=out, provenance=prov)
