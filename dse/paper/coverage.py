"""How often the tool's 90% intervals hold what was measured, on data no fit used.

- Paper rows (`paper_rows`): every row of `dse reproduce` gets [tool_low, tool_high], first
  order over the union of the factors of every run the rows use (dse.uncertainty.propagate):
  each factor's evaluation points re-evaluate only the runs that have it, so a ratio of two
  runs that share a factor (the same GPUs under two schedules) moves both together. A row is
  inside when the paper's value, or any of its range, lies in the interval.
- Device points (`device_coverage`): each GPU or FPGA point's leave-one-out prediction with the
  half-width the evidence gives a new point of its group, computed without the point itself
  (the group's other residuals; jackknife split-conformal).

Counted: the rows labelled predicted (dse.validation.labels: no fit read them and no constraint
or declared range was built from them, e.g. not the V80 rows against the strong baseline, whose
"comparable" sets the V80 draft's range).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dse.paper.reproduce import Row, Runs, rows
from dse.specs import Catalog
from dse.uncertainty import design_factors
from dse.uncertainty import evidence as ev
from dse.uncertainty.propagate import combine, moves, points


def paper_rows(cat: Catalog, progress: Callable[[float], None] | None = None) -> list[Row]:
    """The paper rows with the tool's 90% intervals; progress(done share) after each factor's
    evaluations (the central runs are the first share)."""
    central = Runs(cat)
    base = rows(cat, central)
    factors: dict[str, Any] = {}
    for (_, dataset, _, _), (design, _) in list(central.cache.items()):
        for f in design_factors(design, cat.workload(dataset)):
            factors.setdefault(f.key, f)
    pre = _time_factor_runs(cat, central, factors)
    f0 = np.array([r.tool for r in base])
    shift: list[np.ndarray] = []
    up: list[np.ndarray] = []
    down: list[np.ndarray] = []
    for i, f in enumerate(factors.values()):
        if progress is not None:
            progress((i + 1) / (len(factors) + 1))
        at = {v: np.array([r.tool for r in rows(cat, _runs(cat, central, {f.key: v},
                                                            pre.get((f.key, v), {})))])
              for v in points(f)}
        s, u, d = moves(f, f0, {v: np.where(np.isfinite(m), m, f0) for v, m in at.items()})
        shift.append(s)
        up.append(u)
        down.append(d)
    if progress is not None:
        progress(1.0)
    lo, hi = combine(f0, up, down, shift)
    return [replace(r, tool_low=float(a), tool_high=float(b))
            for r, a, b in zip(base, lo, hi, strict=True)]


def _runs(cat: Catalog, central: Runs, values: dict[str, float],
          done: dict[Any, Any]) -> Runs:
    """The runs at the factor values, those already evaluated (`done`: run key -> (design,
    report)) taken as they are."""
    runs = Runs(cat, values, base=central)
    runs.cache.update(done)
    return runs


def _time_factor_runs(cat: Catalog, central: Runs, factors: dict[str, Any]
                      ) -> dict[tuple[str, float], dict[Any, Any]]:
    """Each run at each end of each time and power factor of its design, evaluated a few at a
    time by the batched closed form (dse.engine.evaluate.evaluate_batch): (factor key, value)
    -> run key -> (perturbed design, report), as `Runs` would compute them one by one
    (dse.uncertainty.shifted_report: these factors move neither the workload nor the
    accuracy shift)."""
    from dse.engine.evaluate import evaluate_batch
    from dse.uncertainty import batch_size
    from dse.uncertainty.perturb import batches, is_time_only, scale_design

    out: dict[tuple[str, float], dict[Any, Any]] = {}
    for key, (d, _) in list(central.cache.items()):
        pts = [(f.key, v) for f in design_factors(d, cat.workload(key[1]))
               if f.key in factors and is_time_only({f.key: 1.0}) for v in points(f)]
        for batch, sel, at_row in batches(d, [{k: v} for k, v in pts], batch_size(d)):
            chunk = [pts[i] for i in sel]
            members = [scale_design(d, {k: v}) for k, v in chunk]
            reports = evaluate_batch(batch, members, cat.workload(key[1]), at_row)
            for (k, v), m, r in zip(chunk, members, reports, strict=True):
                out.setdefault((k, v), {})[key] = (m, r)
    return out


@dataclass(frozen=True)
class Coverage:
    group: str
    n: int
    inside: int
    median_rel_width: float  # (high - low) / central

    @property
    def share(self) -> float:
        return self.inside / self.n if self.n else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "n": self.n, "inside": self.inside,
                "share_inside": self.share, "median_relative_width": self.median_rel_width}


def counted(r: Row) -> bool:
    return r.label == "predicted" and r.inside is not None


def paper_coverage(rs: Sequence[Row]) -> Coverage:
    use = [r for r in rs if counted(r)]
    widths = [(r.tool_high - r.tool_low) / abs(r.tool) for r in use if r.tool]
    return Coverage("paper rows (predicted)", len(use), sum(bool(r.inside) for r in use),
                    float(np.median(widths)) if widths else float("nan"))


def _jackknife(log_errors: Sequence[float], level: float) -> tuple[int, list[float]]:
    """(points inside, relative widths): each point against the half-width of the others."""
    e = np.abs(np.asarray(log_errors, dtype=float))
    inside, widths = 0, []
    for i in range(len(e)):
        hw = ev.half_width(list(np.delete(e, i)), level)
        inside += bool(e[i] <= hw)
        widths.append(float(np.exp(hw) - np.exp(-hw)))
    return inside, widths


def device_coverage() -> list[Coverage]:
    """Per GPU serving family (and op) and for the FPGA designs' leave-one-out points."""
    s = ev.settings()
    out = []
    res = ev.gpu_residuals()
    groups: dict[str, list[float]] = {}
    for r in res:
        groups.setdefault(f"GPU {r.family} {r.op}", []).append(r.log_error)
    all_in, all_w = 0, list[float]()
    for g, errs in sorted(groups.items()):
        if len(errs) < s.min_points:  # such a family borrows all stacks' residuals
            continue
        n_in, w = _jackknife(errs, s.level)
        out.append(Coverage(g, len(errs), n_in, float(np.median(w))))
        all_in, all_w = all_in + n_in, all_w + w
    out.append(Coverage("GPU families with >= 9 points", len(all_w), all_in,
                        float(np.median(all_w)) if all_w else float("nan")))
    fres = ev.fpga_residuals()
    classes = sorted({r.engine for r in fres if r.source == "leave-one-source-out"})
    fl = [r.log_error for r in fres if r.source == "leave-one-out" and r.engine not in classes]
    n_in, w = _jackknife(fl, s.level)
    out.append(Coverage("FPGA designs, leave-one-out", len(fl), n_in,
                        float(np.median(w)) if w else float("nan")))
    for name in classes:  # an engine fitted to several documents: its own intervals' evidence
        cl = [r.log_error for r in fres if r.engine == name
              and r.source == "leave-one-source-out"]
        n_in, w = _jackknife(cl, s.level)
        out.append(Coverage(f"FPGA {name}, leave-one-source-out", len(cl), n_in,
                            float(np.median(w)) if w else float("nan")))
    return out


def markdown_section(rs: Sequence[Row]) -> list[str]:
    """docs/validation.md's coverage section: paper rows and device points."""
    p = paper_coverage(rs)
    lines = [
        "How many values no fit used fall inside the tool's 90% interval, and how wide the "
        "intervals are (`dse.paper.coverage`). Paper rows: the rows labelled predicted (not the "
        "fitted or calibrated ones: the V80 rows against the strong baseline, whose paper value "
        "set the declared V80 draft range, are calibrated); a range row counts as inside "
        "when the interval meets the range. Device points: each leave-one-out prediction "
        "against the half-width the rest of its group gives (the point itself left out).", "",
        "| group | values | inside | share | median relative width |", "|---|---|---|---|---|"]
    for c in [p, *device_coverage()]:
        lines.append(f"| {c.group} | {c.n} | {c.inside} | {c.share:.0%} | "
                     f"{c.median_rel_width:.1%} |")
    missed = [r for r in rs if counted(r) and not r.inside]
    if missed:
        lines += ["", "Paper rows outside their interval: "
                  + ", ".join(f"`{r.id}`" for r in missed) + "."]
    return lines
