"""The width model (dse/width/) fitted to published best-of-N, voting and pass@N accuracies, with
cross-validation and the held-out rows predicted (pure: scripts/calibrate_width.py does the I/O).

Data: dse/validation/width_rows.py (fit rows = fit-allowed `[[row]]`s with a solo accuracy;
held-out rows = `[[held_out]]`, never fitted). Parameters (dse/width/params.py): a concentration
per dataset, the agreement, the deception share, the F1 line of PRM separations with its
aggregation factors, and a separation per verifier without a published F1. Least squares on the
accuracy points (unweighted: the model's error, several points, dwarfs the rows' binomial
spread of 0.3-2 points), from each of `STARTS` (fixed), the best cost kept. Every
cross-validation fold refits from the same starts on its training rows and predicts its left-
out rows with what it fitted; a parameter its training rows cannot pin (a dataset, a verifier
or an aggregation they lack) takes the model's default (dse.width.params).

Intervals (90%) of a held-out prediction: h = sqrt(h_model(gain)^2 + (1.645 se)^2) where se =
100 sqrt(P (1 - P) / n) is the row's own binomial spread (P the prediction, n its test-set
size) and h_model(gain) (dse.uncertainty.width_accuracy.model_half_width_points) is the 90%
quantile line of the absolute cross-validation residuals pooled over every scheme against
the fold's predicted gain over the policy alone, intercept + per_gain |gain| (linear quantile
regression: least absolute weighted deviations, a linear programme), less (in quadrature)
1.645 x the median binomial spread of those residuals' rows (their own sampling noise is in
the residuals already). Why a line: the residuals grow with the predicted gain (a method that
adds little is a small step from a measured solo accuracy, pass@64 a long one), so one pooled
quantile is too wide for the first and too narrow for the second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.core.arrays import F64
from dse.uncertainty.width_accuracy import model_half_width_points
from dse.validation.width_rows import Row, answer_chance, row_groups
from dse.width.accuracy import accuracy_pct
from dse.width.params import DATASET_ALIASES, FITTED_AGGREGATIONS, WidthParams

SCHEMA_VERSION = 1
GENERATED_BY = "scripts/calibrate_width.py"
CV_FILE = "width_cv.json"
VOTES = ("majority", "weighted-best-of-n")
SCHEMES = ("source", "policy", "verifier", "dataset", "samples")
LEVEL = 0.9  # the intervals' coverage
Z90 = 1.6448536269514722  # the two-sided normal quantile at LEVEL
# fixed default starts: (concentration, gamma, agreement, deception, intercept, per F1,
# aggregation factor, verifier separation)
STARTS = ((0.4, 0.3, 0.3, 0.05, 0.5, 1.5, 1.0, 1.0),
          (1.0, 0.0, 0.6, 0.01, 0.0, 3.0, 0.8, 2.0))
BOUNDS = {"concentration": (0.02, 50.0), "gamma": (-1.0, 2.0), "agreement": (0.0, 1.0),
          "deception": (0.0, 0.6),
          "intercept": (-5.0, 5.0), "per_f1": (-5.0, 15.0), "factor": (0.05, 4.0),
          "separation": (-3.0, 8.0)}


@dataclass(frozen=True)
class Layout:
    """Which parameters the training rows can pin, in vector order."""

    datasets: tuple[str, ...]
    vote_datasets: tuple[str, ...]
    aggregations: tuple[str, ...]
    verifiers: tuple[str, ...]

    @classmethod
    def of(cls, rows: Sequence[Row]) -> Layout:
        ds = sorted({DATASET_ALIASES.get(r.dataset, r.dataset) for r in rows})
        vds = sorted({DATASET_ALIASES.get(r.dataset, r.dataset) for r in rows
                      if r.method in VOTES})
        aggs = sorted({r.aggregation for r in rows if r.f1_pct is not None
                       and r.aggregation in FITTED_AGGREGATIONS})
        vs = sorted({r.verifier_key for r in rows if r.f1_pct is None and r.verifier != "none"})
        return cls(tuple(ds), tuple(vds), tuple(aggs), tuple(vs))

    def _offsets(self) -> tuple[int, int, int, int]:
        """Where the shared four (gamma, deception, intercept, per F1), the aggregation
        factors and the verifier separations start."""
        nd, nv = len(self.datasets), len(self.vote_datasets)
        shared = nd + nv
        return nd, shared, shared + 4, shared + 4 + len(self.aggregations)

    def size(self) -> int:
        return self._offsets()[3] + len(self.verifiers)

    def params(self, x: F64) -> WidthParams:
        nd, sh, ag, vs = self._offsets()
        return WidthParams(
            concentration=dict(zip(self.datasets, map(float, x[:nd]), strict=True)),
            concentration_per_log_odds=float(x[sh]),
            agreement=dict(zip(self.vote_datasets, map(float, x[nd:sh]), strict=True)),
            deception=float(x[sh + 1]),
            separation_intercept=float(x[sh + 2]), separation_per_f1=float(x[sh + 3]),
            aggregation_factor=dict(zip(self.aggregations, map(float, x[ag:vs]), strict=True)),
            verifier_separation=dict(zip(self.verifiers, map(float, x[vs:]), strict=True)),
            answer_chance=answer_chance())

    def start(self, s: Sequence[float]) -> tuple[F64, F64, F64]:
        """(x0, lower, upper) from one of STARTS."""
        names = (["concentration"] * len(self.datasets)
                 + ["agreement"] * len(self.vote_datasets)
                 + ["gamma", "deception", "intercept", "per_f1"]
                 + ["factor"] * len(self.aggregations) + ["separation"] * len(self.verifiers))
        value = {"concentration": s[0], "gamma": s[1], "agreement": s[2], "deception": s[3],
                 "intercept": s[4], "per_f1": s[5], "factor": s[6], "separation": s[7]}
        x0 = np.array([value[n] for n in names])
        return (x0, np.array([BOUNDS[n][0] for n in names]),
                np.array([BOUNDS[n][1] for n in names]))

    def sparsity(self, rows: Sequence[Row]) -> F64:
        """Which parameters each row's prediction depends on (rows x parameters), so that the
        finite-difference Jacobian perturbs parameters of disjoint rows together."""
        nd, sh, ag, vs = self._offsets()
        m = np.zeros((len(rows), self.size()))
        multiple_choice = answer_chance()
        for i, r in enumerate(rows):
            ds = DATASET_ALIASES.get(r.dataset, r.dataset)
            m[i, sh] = 1  # gamma
            if ds in self.datasets:
                m[i, self.datasets.index(ds)] = 1
            if ((r.method in VOTES or ds in multiple_choice)  # a guess's chance: (1 - g) / k
                    and ds in self.vote_datasets):
                m[i, nd + self.vote_datasets.index(ds)] = 1
            if r.verifier != "none":
                m[i, sh + 1] = 1
                if r.f1_pct is not None:
                    m[i, sh + 2:sh + 4] = 1
                    if r.aggregation in self.aggregations:
                        m[i, ag + self.aggregations.index(r.aggregation)] = 1
                elif r.verifier_key in self.verifiers:
                    m[i, vs + self.verifiers.index(r.verifier_key)] = 1
        return m


def row_separation(r: Row, p: WidthParams) -> float:
    """The verifier's separation for a row: step searches rank single steps, scored as the
    newest step of the prefix ('last')."""
    if r.verifier == "none":
        return 0.0
    agg = ("last" if r.method in ("step-search", "beam") and r.f1_pct is not None
           else r.aggregation)
    return p.verifier(r.verifier, agg, r.f1_pct)[0]


def predict(rows: Sequence[Row], p: WidthParams) -> F64:
    """The model's accuracy (percent) of each row with parameters p."""
    out = np.empty(len(rows))
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, r in enumerate(rows):  # the top-score grid is finer above 64 samples: apart
        groups.setdefault((r.method, r.samples > 64), []).append(i)
    for (method, _), idx in groups.items():
        sel = [rows[i] for i in idx]
        out[idx] = accuracy_pct(
            solo_accuracy_pct=np.array([r.solo_pct for r in sel]), method=method,
            samples=np.array([r.samples for r in sel]),
            concentration=np.array([p.concentration_for(r.dataset, r.solo_pct)[0]
                                    for r in sel]),
            agreement=np.array([p.agreement_for(r.dataset)[0] for r in sel]),
            separation=np.array([row_separation(r, p) for r in sel]),
            deception=p.deception, beam_width=np.array([max(r.beam_width, 1) for r in sel]),
            steps=np.array([r.steps for r in sel]),
            chance=np.array([p.chance_for(r.dataset) for r in sel]))
    return out


def fit(rows: Sequence[Row]) -> tuple[WidthParams, float]:
    """Least squares from each of STARTS; (best parameters, their sum of squares)."""
    from scipy.optimize import least_squares

    layout = Layout.of(rows)
    obs = np.array([r.accuracy_pct for r in rows])
    sparsity = layout.sparsity(rows)

    def resid(x: F64) -> F64:
        return predict(rows, layout.params(x)) - obs

    best: tuple[float, F64] | None = None
    for s in STARTS:
        x0, lo, hi = layout.start(s)
        res = least_squares(resid, x0, bounds=(lo, hi), jac_sparsity=sparsity,
                            x_scale="jac", max_nfev=200, ftol=1e-5, xtol=1e-5)
        cost = float(np.sum(res.fun ** 2))
        if best is None or cost < best[0]:
            best = (cost, res.x)
    assert best is not None
    return layout.params(best[1]), best[0]


def summary(err: F64) -> dict[str, Any]:
    a = np.abs(err)
    return {"n": int(a.size), "median_abs_error": float(np.median(a)) if a.size else 0.0,
            "max_abs_error": float(np.max(a)) if a.size else 0.0,
            "within_3_points": float(np.mean(a <= 3.0)) if a.size else 0.0}


def binomial_se_pct(pred_pct: F64, n_problems: F64) -> F64:
    """100 sqrt(P (1 - P) / n): one test set's binomial spread in points (0 where n unknown)."""
    p = np.clip(np.asarray(pred_pct, dtype=float) / 100, 0.0, 1.0)
    n = np.asarray(n_problems, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(n > 0, 100 * np.sqrt(p * (1 - p) / np.where(n > 0, n, 1)),
                                   0.0), dtype=float)


def cross_validate(rows: Sequence[Row], scheme: str) -> dict[str, Any]:
    """Leave each group of the scheme out, refit from STARTS, predict it."""
    folds = []
    resid = np.full(len(rows), np.nan)
    for key, idx in sorted(row_groups(rows, scheme).items()):
        out = set(idx)
        train = [r for i, r in enumerate(rows) if i not in out]
        p, _ = fit(train)
        err = predict([rows[i] for i in idx], p) - np.array([rows[i].accuracy_pct
                                                              for i in idx])
        resid[idx] = err
        folds.append({"left_out": key, **summary(err)})
    done = ~np.isnan(resid)
    return {"scheme": scheme, **summary(resid[done]), "folds": folds,
            "residuals": {rows[int(i)].id: round(float(resid[i]), 4)
                          for i in np.flatnonzero(done)}}


def quantile_line(x: F64, y: F64, level: float) -> tuple[float, float]:
    """(a, b), both >= 0, minimising the pinball loss of y against a + b x at the quantile
    `level` (linear quantile regression as a linear programme: y - a - b x = u - v, u, v >= 0,
    minimise sum level u + (1 - level) v). E.g. y = x on 0..9 at 0.9: (0, 1)."""
    from scipy.optimize import linprog

    n = len(y)
    cost = np.concatenate([[0.0, 0.0], np.full(n, level), np.full(n, 1 - level)])
    eye = np.eye(n)
    a_eq = np.hstack([np.ones((n, 1)), np.asarray(x, dtype=float)[:, None], eye, -eye])
    res = linprog(cost, A_eq=a_eq, b_eq=np.asarray(y, dtype=float), bounds=(0, None),
                  method="highs")
    if not res.success:
        raise RuntimeError(f"quantile regression failed: {res.message}")
    return float(res.x[0]), float(res.x[1])


def model_half_width(rows: Sequence[Row], cv: Mapping[str, Mapping[str, Any]],
                     pred: Mapping[str, float]) -> dict[str, float]:
    """h_model's line (module docstring) from the pooled CV residuals: {intercept, per_gain,
    noise}, each in points."""
    by_id = {r.id: r for r in rows}
    res, gain, se = [], [], []
    for scheme in SCHEMES:
        for rid, e in cv[scheme]["residuals"].items():
            r = by_id[rid]
            res.append(abs(e))
            gain.append(abs(r.accuracy_pct + e - r.solo_pct))  # the fold's predicted gain
            se.append(float(binomial_se_pct(np.array(pred[rid]), np.array(r.n_problems))))
    a, b = quantile_line(np.array(gain), np.array(res), LEVEL)
    return {"intercept": a, "per_gain": b, "noise": Z90 * float(np.median(se))}


def judge(held: Sequence[Row], p: WidthParams, h_model: Mapping[str, float]
          ) -> dict[str, Any]:
    """The held-out rows predicted by the full fit, with intervals; summaries over the rows
    not repeating a fit row ('new') and over all."""
    pred = predict(held, p)
    obs = np.array([r.accuracy_pct for r in held])
    se = binomial_se_pct(pred, np.array([r.n_problems for r in held]))
    model = model_half_width_points(pred - np.array([r.solo_pct for r in held]), h_model)
    half = np.sqrt(model ** 2 + (Z90 * se) ** 2)
    err = pred - obs
    inside = np.abs(err) <= half
    new = np.array([not r.same_as_fit_row for r in held])

    def stats(mask: F64) -> dict[str, Any]:
        return {**summary(err[mask]), "coverage_90": float(np.mean(inside[mask])),
                "median_half_width": float(np.median(half[mask]))}

    by_method = {m: stats(np.array([r.method == m for r in held]) & new)
                 for m in sorted({r.method for r in held})}
    rows = [{"id": r.id, "method": r.method, "published": r.accuracy_pct,
             "predicted": round(float(pred[i]), 3), "half_width": round(float(half[i]), 3),
             "solo": r.solo_pct, "same_as_fit_row": r.same_as_fit_row,
             "extrapolated": r.method in ("step-search", "beam")}
            for i, r in enumerate(held)]
    return {"new": stats(new), "all": stats(np.ones(len(held), dtype=bool)),
            "by_method": by_method, "h_model": h_model, "rows": rows}


def load() -> dict[str, Any]:
    """dse/data/width_cv.json, as scripts/calibrate_width.py wrote it."""
    import json
    from importlib import resources

    doc: dict[str, Any] = json.loads(
        resources.files("dse.data").joinpath(CV_FILE).read_text("utf-8"))
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"dse/data/{CV_FILE}: schema_version {doc.get('schema_version')!r}, "
                         f"expected {SCHEMA_VERSION}; rerun {GENERATED_BY}")
    return doc


def summary_json(doc: Mapping[str, Any]) -> dict[str, Any]:
    """`dse reproduce --json`'s width_cross_validation: each scheme's and the held-out rows'
    summaries (not the residuals)."""
    keys = ("n", "median_abs_error", "max_abs_error", "within_3_points")
    return {"fit": {k: doc["fit"][k] for k in keys},
            "cross_validation": {s: {k: doc["cv"][s][k] for k in keys} for s in SCHEMES},
            "held_out": {"new": doc["held_out"]["new"], "by_method": doc["held_out"]["by_method"],
                         "h_model": doc["held_out"]["h_model"]}}


def markdown_section(doc: Mapping[str, Any]) -> list[str]:
    """docs/validation.md's width cross-validation and held-out table."""
    out = ["## Width cross-validation", "",
           f"The width model (best-of-N, voting, pass@N, step search; docs/model.md, \"Width: "
           f"what a PRM buys\") fitted to {doc['fit']['n']} fit-allowed published rows "
           f"({GENERATED_BY}, dse/data/width_cv.json); every fold refits from the default "
           "starts. Absolute error in points:", "",
           "| left out | rows | median | max | within 3 points |", "|---|---|---|---|---|"]

    def line(name: str, s: Mapping[str, Any]) -> str:
        return (f"| {name} | {s['n']} | {s['median_abs_error']:.2f} | "
                f"{s['max_abs_error']:.1f} | {s['within_3_points']:.0%} |")

    out.append(line("in-sample", doc["fit"]))
    names = {"source": "one source (paper / repository)", "samples": "one N"}
    out += [line(names.get(s, f"one {s}"), doc["cv"][s]) for s in SCHEMES]
    h = doc["held_out"]
    out += ["", f"Held-out rows (never fitted; {h['new']['n']} that do not repeat a fit row): "
            f"**{h['new']['within_3_points']:.0%} within 3 points, {h['new']['coverage_90']:.0%} "
            f"inside the 90% interval at a median half-width of "
            f"{h['new']['median_half_width']:.1f} points** (the model's own 90% error "
            f"{h['h_model']['intercept']:.2f} + {h['h_model']['per_gain']:.2f} x |predicted "
            f"gain over the policy alone| points, less the rows' noise "
            f"{h['h_model']['noise']:.2f} in quadrature).", "",
            "| method | rows | within 3 pts | in 90% interval | median abs error |",
            "|---|---|---|---|---|"]
    for m, v in sorted(h["by_method"].items()):
        out.append(f"| {m} | {v['n']} | {v['within_3_points']:.0%} | {v['coverage_90']:.0%} | "
                   f"{v['median_abs_error']:.2f} |")
    out.append("")
    return out
