"""The Design space and Studies pages' data: metric labels with units, number formatting, the
results table's columns (metrics, hardware, models, precisions, serving, schedule, thresholds),
the front's zoom and 90% boxes, chart picks, the constraints a search applied, CSV text, and a
study's trial history (best so far in the objective's direction, infeasible trials apart) and
parameter importances.

Light: no numpy, Streamlit or plotly; Optuna only inside `param_importances`.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dse.io.design_files import DesignFile
from dse.search.objectives import CONSTRAINT_TABLE, METRIC_TABLE, OBJECTIVES


@dataclass(frozen=True)
class Label:
    """How a metric reads on an axis or a column: words and a unit."""

    words: str
    unit: str

    @property
    def title(self) -> str:
        """E.g. "energy per token (J/token)"."""
        return f"{self.words} ({self.unit})"


# Every metric a search reports in words; the units are METRIC_TABLE's (the board price,
# which only candidates carry, has its own).
_WORDS = {"latency_s_per_problem": "latency per problem",
          "energy_j_per_problem": "energy per problem",
          "tokens_per_problem": "committed tokens per problem",
          "j_per_token": "energy per token", "goodput_tokens_per_s": "goodput",
          "accuracy": "accuracy", "power_w": "average power",
          "cost_usd_per_mtok": "cost per million tokens"}
LABELS: dict[str, Label] = {m: Label(_WORDS[m], row.unit) for m, row in METRIC_TABLE.items()}
LABELS["capex_usd"] = Label("board list price", "$")
# The headline metrics the closed form and the mean-value model both report (Report fields).
CLOSED_FORM_METRICS = ("latency_s_per_problem", "j_per_token", "goodput_tokens_per_s",
                       "accuracy", "energy_j_per_problem")
# The metric columns of a results table, after the objectives' own.
TABLE_METRICS = ("latency_s_per_problem", "j_per_token", "goodput_tokens_per_s", "accuracy",
                 "power_w", "cost_usd_per_mtok", "capex_usd")


def label(metric: str) -> Label:
    """A metric's label; an objective name (e.g. "latency") is read as its metric. An unknown
    name reads as itself, without a unit."""
    m = OBJECTIVES.get(metric, metric)
    return LABELS.get(m, Label(m, ""))


def title(metric: str) -> str:
    lab = label(metric)
    return lab.title if lab.unit else lab.words


def round_sig(v: float, digits: int = 4) -> float:
    """`v` to `digits` significant digits; values of 10**digits and more to whole units."""
    if not math.isfinite(v) or v == 0:
        return v
    if abs(v) >= 10 ** digits:
        return float(round(v))
    return float(f"{v:.{digits}g}")


def fmt(v: Any, unit: str = "", digits: int = 4) -> str:
    """A number with `digits` significant digits (thousands separated from 10**digits on) and
    its unit; None or NaN is a dash."""
    if v is None or isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        return "–"
    if math.isinf(v):
        text = "∞" if v > 0 else "-∞"
    elif abs(v) >= 10 ** digits:
        text = f"{v:,.0f}"
    else:
        text = f"{v:.{digits}g}"
    return f"{text} {unit}".rstrip()


def fmt_metric(metric: str, v: Any) -> str:
    return fmt(v, label(metric).unit)


def closed_form_row(model: str, values: Mapping[str, Any],
                    intervals: Mapping[str, Sequence[float]]) -> dict[str, str]:
    """One table row of a design's closed-form metrics in words, each with its 90% interval
    where it has one: {"model": model, "<metric words>": "value [low-high]", ...}."""
    row = {"model": model}
    for m in CLOSED_FORM_METRICS:
        iv = intervals.get(m)
        row[label(m).words] = fmt_metric(m, values.get(m)) + (
            f" [{fmt(iv[0], '')}-{fmt(iv[1], '')}]" if iv is not None else "")
    return row


# ------------------------------------------------------------------------------ results table

def workflow_text(s: Any) -> str:
    """A system's workflow, verifier and shared devices in words ("target alone",
    "speculative, PRM verifier", "speculative, target judges, draft+target on one device")."""
    if s.workflow_name == "target-only":
        return "target alone"
    if s.is_width:  # e.g. "width: best-of-n, N = 8, PRM product"
        knobs = f", N = {s.samples}" + (f", B = {s.beam_width}" if s.beam_width else "")
        return (f"width: {s.workflow}{knobs}"
                + (f", PRM {s.aggregation or 'default'}" if s.prm_model else ", no verifier"))
    from dse.model.verifiers import VERIFIERS

    judge = VERIFIERS[str(s.verifier_name)].is_target
    out = "speculative, " + ("target judges" if judge else f"{s.verifier_name.upper()} verifier")
    return out + (f", {s.colocate} on one device" if s.colocate else "")


def design_columns(df: DesignFile) -> dict[str, Any]:
    """A design's workflow, hardware, models, precisions, serving (GPU) or engine (FPGA),
    schedule and thresholds as table columns (a role it does not run: empty)."""
    s, sch = df.system, df.schedule
    fpga = s.draft_engine is not None or s.fpga_clock_hz is not None
    build = ""
    if fpga:
        clock = f"{s.fpga_clock_hz / 1e6:g} MHz" if s.fpga_clock_hz else "board clock"
        ch = f"{s.fpga_memory_channels} channels" if s.fpga_memory_channels else "all channels"
        lanes = (f"{s.fpga_mac_lanes} MACs/cycle" if s.fpga_mac_lanes
                 else "engine's MACs/cycle")
        build = f"{clock}, {ch}, {lanes}"
    backtracks = sch is not None and sch.backtracking and (s.max_backtracks or 0) > 0
    alone = s.workflow_name != "speculative"  # the target alone or a width design: no draft
    return {
        "workflow": workflow_text(s),
        "draft device": s.draft_device, "draft model": s.draft_model,
        "draft precision": s.draft_precision,
        "draft serving / engine": None if alone else (s.draft_engine or s.draft_serving
                                                      or "vllm-cudagraph"),
        "FPGA build": build,
        "PRM device": s.prm_device, "PRM TP": s.prm_tp or 1, "PRM model": s.prm_model,
        "PRM precision": s.prm_precision, "PRM serving": s.prm_serving,
        "target device": s.target_device, "target TP": s.target_tp,
        "target model": s.target_model, "target precision": s.target_precision,
        "target serving": s.target_serving,
        "schedule": (s.workflow_name if alone else (sch.name if sch is not None else "")),
        "accept threshold": s.accept_threshold,
        "backtrack threshold": s.backtrack_threshold if backtracks else None,
        "max backtracks": s.max_backtracks if backtracks else 0,
        "backtrack window (steps)": s.backtrack_window if backtracks else None,
        "workload": df.workload or "mix",
    }


def metric_order(objectives: Sequence[str]) -> list[str]:
    """The objectives' metrics first, then the other table metrics."""
    first = [OBJECTIVES.get(o, o) for o in objectives]
    return [*dict.fromkeys([*first, *TABLE_METRICS])]


def result_rows(candidates: Sequence[Any], objectives: Sequence[str], *,
                digits: int | None = 4) -> list[dict[str, Any]]:
    """Search candidates (dse.search.Candidate) as table rows: "#", each metric under its
    title with unit (the mean-value model's values, rounded to `digits` significant digits;
    None: unrounded, for CSV), the 90% interval of each objective's metric where the search
    computed one, then the design's columns."""
    order = metric_order(objectives)
    obj = order[:len(objectives)]
    rows = []
    for i, c in enumerate(candidates):
        row: dict[str, Any] = {"#": i}
        for m in order:
            v = c.metrics.get(m)
            ok = isinstance(v, int | float) and not isinstance(v, bool)
            row[title(m)] = (round_sig(float(v), digits) if digits else float(v)) if ok else None
        for m in obj:
            iv = getattr(c, "intervals", {}).get(m)
            if iv is None:
                continue
            lo, hi = iv
            row[f"{label(m).words} 90% low ({label(m).unit})"] = (
                round_sig(lo, digits) if digits else lo)
            row[f"{label(m).words} 90% high ({label(m).unit})"] = (
                round_sig(hi, digits) if digits else hi)
        rows.append(row | design_columns(c.design))
    return rows


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as CSV (the union of their keys, in first-seen order, as the header)."""
    cols = [*dict.fromkeys(k for r in rows for k in r)]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
    return buf.getvalue()


def points_csv(points: Mapping[str, Sequence[float]]) -> str:
    """A sweep's sampled feasible designs (metric -> values) as CSV, one design a row, headed
    by each metric's title with unit."""
    names = [m for m in points if len(points[m])]
    cols = [title(m) for m in names]
    n = len(points[names[0]]) if names else 0
    rows = [{c: float(points[m][i]) for c, m in zip(cols, names, strict=True)}
            for i in range(n)]
    return csv_text(rows) if rows else ",".join(cols) + "\n"


# ------------------------------------------------------------------------------ the front chart

def zoom_range(values: Iterable[float], *, lows: Iterable[float] = (),
               highs: Iterable[float] = (), margin: float = 0.1) -> list[float] | None:
    """An axis range around the front: its values and interval ends, widened by `margin` of
    their span on each side (a single value: by `margin` of itself); None without a finite
    value (let the chart choose)."""
    vals = [float(v) for v in (*values, *lows, *highs) if v is not None and math.isfinite(v)]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    pad = (hi - lo) * margin if hi > lo else (abs(lo) * margin or 1.0)
    return [lo - pad, hi + pad]


def interval_boxes(xs: Sequence[float], ys: Sequence[float], *,
                   x_iv: Sequence[Sequence[float]] | None,
                   y_iv: Sequence[Sequence[float]] | None
                   ) -> tuple[list[float | None], list[float | None]] | None:
    """Each design's 90% box (its x interval by its y interval; an axis without intervals
    keeps the design's value), as closed outlines separated by None, one trace's worth: boxes
    that overlap mark designs the intervals hardly separate. None when neither axis has
    intervals."""
    if x_iv is None and y_iv is None:
        return None
    bx: list[float | None] = []
    by: list[float | None] = []
    for i in range(len(xs)):
        x0, x1 = (float(x_iv[i][0]), float(x_iv[i][1])) if x_iv is not None else (xs[i],) * 2
        y0, y1 = (float(y_iv[i][0]), float(y_iv[i][1])) if y_iv is not None else (ys[i],) * 2
        bx += [x0, x1, x1, x0, x0, None]
        by += [y0, y0, y1, y1, y0, None]
    return bx, by


def chosen_index(points: Sequence[Mapping[str, Any]], current: int | None) -> int | None:
    """The candidate a chart selection picks: the points that carry a candidate index in their
    customdata (the front's; the cloud and the band carry none). Several (a click on
    overlapping points): the one already picked if it is among them, else the first. None:
    no candidate point selected."""
    found: list[int] = []
    for p in points:
        cd = p.get("customdata")
        if isinstance(cd, list | tuple):
            cd = cd[0] if cd else None
        if isinstance(cd, int | float) and not isinstance(cd, bool):
            found.append(int(cd))
    if not found:
        return None
    return current if current in found else found[0]


# ------------------------------------------------------------------------------ constraints

def constraint_rows(applied: Mapping[str, float], typed: Mapping[str, float | None],
                    confidence: float) -> list[dict[str, str]]:
    """The constraints a search applied (the merged bounds of its result), each with where it
    came from (typed on the page or the space's default) and where it is checked: the
    pessimistic end of the metric's `confidence` interval (the low end for a minimum, the
    high end for a maximum)."""
    pct = f"{confidence:.0%}"
    out = []
    for c in CONSTRAINT_TABLE.values():
        if c.name not in applied:
            continue
        lab = label(c.metric)
        op = "≥" if c.bound == "min" else "≤"
        where = ("central value" if confidence <= 0.5 else
                 f"{'low' if c.bound == 'min' else 'high'} end of its {pct} interval")
        out.append({"constraint": f"{lab.words} {op} {fmt(applied[c.name], lab.unit)}",
                    "from": "typed" if typed.get(c.name) is not None else "space default",
                    "checked at": where})
    return out


# ------------------------------------------------------------------------------ studies

@dataclass(frozen=True)
class TrialPoint:
    number: int
    value: float
    feasible: bool


def trial_feasible(t: Any) -> bool:
    """Whether a completed trial met the constraints: the constraint values Optuna's sampler
    stored with it (system attribute "constraints", feasible when all <= 0), else the search's
    own `violation` attribute (<= 0)."""
    cons = getattr(t, "system_attrs", {}).get("constraints")
    if cons is not None:
        return all(float(c) <= 0 for c in cons)
    return float(getattr(t, "user_attrs", {}).get("violation", 0.0)) <= 0


def trial_points(trials: Iterable[Any], index: int) -> list[TrialPoint]:
    """The completed trials' values of objective `index`, in trial order."""
    out = []
    for t in trials:
        if getattr(t.state, "name", "") != "COMPLETE" or not t.values:
            continue
        out.append(TrialPoint(int(t.number), float(t.values[index]), trial_feasible(t)))
    return sorted(out, key=lambda p: p.number)


@dataclass(frozen=True)
class History:
    """A study's history on one objective: the feasible trials, the best so far among them in
    the objective's direction, and the infeasible trials with a finite value apart."""

    numbers: list[int]
    values: list[float]
    best: list[float]
    infeasible_numbers: list[int]
    infeasible_values: list[float]
    n_infeasible: int  # every infeasible trial, with or without a finite value
    y_range: list[float] | None  # the feasible values' range, widened a little


def history(points: Sequence[TrialPoint], direction: int) -> History:
    """Best so far over the feasible trials (`direction` +1: minimised, the running minimum;
    -1: maximised, the running maximum); infeasible trials do not set the best or the axis
    range."""
    ok = [p for p in points if p.feasible and math.isfinite(p.value)]
    bad = [p for p in points if not p.feasible]
    best: list[float] = []
    for p in ok:
        b = p.value if not best else (min if direction > 0 else max)(best[-1], p.value)
        best.append(b)
    finite_bad = [p for p in bad if math.isfinite(p.value)]
    return History([p.number for p in ok], [p.value for p in ok], best,
                   [p.number for p in finite_bad], [p.value for p in finite_bad], len(bad),
                   zoom_range([p.value for p in ok], margin=0.05))


def param_importances(study: Any, index: int, *, seed: int = 0) -> dict[str, float]:
    """Parameter importances for objective `index` of a study, in its direction: Optuna's
    PED-ANOVA (its default evaluator) on the feasible completed trials only, re-read as a
    single-objective study whose direction is the objective's, so the "top 10%" it explains
    are the best trials (highest for a maximised objective). Normalised to sum 1. Raises
    ValueError / RuntimeError when too few trials vary a parameter."""
    import optuna

    ts = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
          if t.values and trial_feasible(t) and math.isfinite(t.values[index])]
    if len(ts) < 2:
        raise ValueError(f"{len(ts)} feasible completed trial(s): at least 2 are needed")
    sub = optuna.create_study(direction=study.directions[index],
                              sampler=optuna.samplers.RandomSampler(seed=seed))
    sub.add_trials([optuna.trial.create_trial(params=t.params, distributions=t.distributions,
                                              value=t.values[index]) for t in ts])
    return optuna.importance.get_param_importances(sub)


def study_rows(listing: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`dse.search.list_studies` as table rows: objectives in words, best values formatted
    with their units."""
    out = []
    for s in listing:
        objs = list(s.get("objectives") or [])
        best = s.get("best_values")
        out.append({
            "study": s["name"], "trials": s["n_trials"], "completed": s["n_complete"],
            "objectives": ", ".join(f"{label(o).words} ({d})" for o, d in
                                    zip(objs, s.get("directions") or [], strict=False)),
            "best (feasible)": ", ".join(fmt_metric(o, v) for o, v in
                                         zip(objs, best, strict=False)) if best else "–",
            "on the front": s.get("n_pareto", 0), "space": s.get("space") or "",
            "created": s.get("created") or ""})
    return out


def trial_choice(number: int, objectives: Sequence[str], values: Sequence[float]) -> str:
    """A best trial in words, e.g. "trial 12: 1.505 J/token, 2.004 s"."""
    return f"trial {number}: " + ", ".join(fmt_metric(o, v)
                                          for o, v in zip(objectives, values, strict=True))
