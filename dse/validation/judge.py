"""The target judge against SpecReason: its score distributions fitted to published rows, with
cross-validation (pure: scripts/calibrate_target_judge.py does the I/O), and its timing beside
the paper's (`timing_rows`, for `dse reproduce`).

Data (dse/data/specreason_published.toml): a row is usable when one source gives, for one
(small model, base model, dataset, threshold), SpecReason's accuracy and acceptance (the share of
steps the small model wrote) and both models' solo accuracies. Only Lookahead Reasoning's 14
Table 1 and 2 rows qualify; `usable_rows` lists every other row and why.

Model (dse/model/workflow.py, the PRM's form): per-step errors from the solo accuracies, a judge
score u ~ Beta(mu kappa, (1 - mu) kappa) per class (kappa = dse.validation.accuracy.KAPPA), accept
when u >= k / 10, forward only (SpecReason never backtracks): accuracy over the problems'
difficulty, E_i E_S[(1 - q_i)^S] (dse.model.workflow.chain_accuracy_pct, beta 0), acceptance
p_accept at the dataset-average step rates, both fitted (a share in percentage points):
- the tool's form, three parameters: both means fall by `shift` x the draft's relative error
  x = 1 - A_draft / A_target (the judge scores a lagging draft's steps lower, good or bad;
  dse.model.verifiers.judge_means, which `TargetJudge.scores(w, draft, target)` runs, so the fit and
  the tool compute the same distributions). The acceptances (0.08-0.97 at one threshold)
  follow x (p_accept ~ 1 - F_good(tau) when steps are many and rarely bad). A slope per class
  predicts a left-out pair up to 47 points off (tried), so one shared slope. Every
  cross-validation scheme refits this form.
- a diagnostic form, two: one distribution per class for every pair, dataset and threshold
  (shift 0), recorded to show what the shift buys (`one_distribution_form` in the CV file).

Assumptions, with reasons: `ASSUMPTIONS` (the judge file's sources). Cross-validation: leave one
pair out (a new model family), dataset out, threshold out, row out; source out only where two
sources have usable rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from dse.model.discrimination import AccuracyParams, shipped
from dse.model.verifiers import (
    BAD_MEAN_RANGE,
    GOOD_MEAN_RANGE,
    SHIFT_RANGE,
    ScoreStats,
    judge_means,
    judge_score_stats,
)
from dse.model.workflow import (
    chain_accuracy_pct,
    max_steps,
    step_probabilities,
    steps_distribution,
)
from dse.specs.scenario import WorkloadSpec
from dse.uncertainty import evidence
from dse.validation.accuracy import KAPPA

SCHEMA_VERSION = 2
GENERATED_BY = "scripts/calibrate_target_judge.py"
CV_FILE = "judge_cv.json"
STARTS = ((0.9, 0.6, 0.3), (0.8, 0.4, 0.1))
ACCEPTANCE_WEIGHT = 100.0  # points per unit of acceptance: a share in percentage points
# Settings of every row (assumptions, ASSUMPTIONS gives the reasons)
STEPS_MEAN = 100.0
STEPS_CV = 0.5
STEP_TOKENS = 60.0
PROMPT_TOKENS = 150.0
BUDGET_TOKENS = 32768
ERROR_NESTING = 1.0
ASSUMED_THRESHOLD = 0.9  # rows whose source does not state SpecReason's threshold
REFERENCE_THRESHOLD = evidence.JUDGE_REFERENCE_THRESHOLD  # the intervals' reference
SENSITIVITY_STEPS = (30.0, 300.0)
CHECK_THRESHOLDS = (0.7, 0.8)

ASSUMPTIONS = {
    "kappa": f"assumption: kappa = {KAPPA:g} for both classes, as the PRM fit "
    "(dse/validation/accuracy.py): 12 of the 14 rows share one threshold, so the "
    "concentration is not pinned; it moves only predictions at other thresholds",
    "steps_per_problem": f"assumption: {STEPS_MEAN:g} committed steps per problem (lognormal, "
    f"cv {STEPS_CV:g}) of {STEP_TOKENS:g} tokens for every row: thinking traces of thousands "
    "of tokens split on '\\n\\n' (SpecReason caps a step at 512 tokens; Lookahead Reasoning "
    "splits on '\\n\\n'); neither paper gives steps per problem. The accuracy form barely "
    "depends on it (E_S[(1 - h)^S] = A fixes h S), see sensitivity in judge_cv.json",
    "budget_tokens": f"{BUDGET_TOKENS} tokens: Lookahead Reasoning's maximum generation "
    "length (32K for R1-Distill, 37K for Qwen3); it only truncates the step distribution, far "
    "beyond 100 steps",
    "threshold": "published where the row has it (Table 2: 7 and 9; Table 1's R1-Distill rows "
    "inferred as 9 by the data file: Table 2's 'Score (Th. 9)' reproduces them exactly); "
    f"assumption: {ASSUMED_THRESHOLD:g} (k = 9) for the Qwen3 rows, which state none: "
    "Lookahead Reasoning ran one SpecReason configuration; judge_cv.json "
    "qwen3_threshold_check gives the fit at 7 and 8",
    "error_nesting": f"fixed: {ERROR_NESTING:g} (fully nested step errors); fitted free it "
    "goes to its bound 1 in both forms (with and without the shift)",
    "in_chain_error_factor": "fixed: none (rho = 1): a factor per pair trades off against "
    "mu_bad (tried: 1.4-2.0 with mu_bad 0.67, the median error moving by 0.1 point), and the "
    "tool could not use it: rho is keyed by catalog pair on a catalog workload",
    "acceptance": "Lookahead Reasoning's 'Apt.' (accepted draft steps over all steps): "
    "p_accept, as forward-only SpecReason drafts each position once",
}


@dataclass(frozen=True)
class JudgeRow:
    """One usable SpecReason setting: accuracies in percent, acceptance 0-1, threshold k / 10."""

    id: str
    source: str  # the first word of the row id: the publication
    draft: str  # Hugging Face id
    target: str
    dataset: str
    threshold: float
    threshold_basis: str  # "published" or "assumed"
    draft_accuracy_pct: float
    target_accuracy_pct: float
    accuracy_pct: float
    acceptance: float

    @property
    def pair(self) -> str:
        return f"{self.draft} -> {self.target}"

    @property
    def relative_error(self) -> float:
        """x = 1 - A_draft / A_target, e.g. 28.5 / 70.8: 0.597."""
        return 1.0 - self.draft_accuracy_pct / self.target_accuracy_pct


def _source(r: Mapping[str, Any]) -> str:
    return str(r["id"]).split("-", 1)[0]


def usable_rows(published: Mapping[str, Any]) -> tuple[list[JudgeRow], list[dict[str, str]]]:
    """(the usable SpecReason rows, every other SpecReason row with why it is left out)."""
    rows = published["row"]

    def solo(r: Mapping[str, Any], method: str, key: str) -> Mapping[str, Any] | None:
        hits = [s for s in rows if s.get("method") == method and s.get(key) == r.get(key)
                and s.get("dataset") == r.get("dataset") and _source(s) == _source(r)
                and "accuracy_pct" in s]
        if len(hits) > 1:
            raise ValueError(f"{r['id']}: {len(hits)} {method} rows match")
        return hits[0] if hits else None

    used: list[JudgeRow] = []
    left: list[dict[str, str]] = []
    for r in rows:
        if r.get("method") != "specreason":
            continue
        base, small = solo(r, "base-only", "base_model"), solo(r, "small-only", "small_model")
        why = [w for w, bad in (
            ("a secondary source (a third party's summary)", r.get("provenance") != "primary"),
            ("no accuracy for one setting", "accuracy_pct" not in r),
            ("no acceptance (share of steps the small model wrote)",
             "small_step_share" not in r),
            ("no solo accuracy of the base model in the same source and setting", base is None),
            ("no solo accuracy of the small model in the same source and setting",
             small is None)) if bad]
        if why:
            left.append({"id": str(r["id"]), "reason": "; ".join(why)})
            continue
        assert base is not None and small is not None
        published_k = "threshold" in r
        used.append(JudgeRow(
            str(r["id"]), _source(r), str(r["small_model"]), str(r["base_model"]),
            str(r["dataset"]), float(r["threshold"]) / 10 if published_k else ASSUMED_THRESHOLD,
            "published" if published_k else "assumed", float(small["accuracy_pct"]),
            float(base["accuracy_pct"]), float(r["accuracy_pct"]),
            float(r["small_step_share"])))
    return used, left


@dataclass(frozen=True)
class Params:
    """Judge score means of a draft as accurate as the target: a good step's and a bad step's
    latent score, each lowered by `shift` x the draft's relative error (0 in the diagnostic
    one-distribution form). kappa: dse.validation.accuracy.KAPPA."""

    good_mean: float
    bad_mean: float
    shift: float = 0.0

    def means(self, x: float = 0.0) -> tuple[float, float]:
        """(mu_good, mu_bad) at relative error x: dse.model.verifiers.judge_means (clipped to the
        declared ranges, x clipped at 0). E.g. 0.95, 0.85, shift 0.3, x 0.5: (0.80, 0.70)."""
        return judge_means(self.good_mean, self.bad_mean, self.shift, x)

    def scores(self, x: float = 0.0) -> ScoreStats:
        """The ScoreStats TargetJudge.scores gives a pair at relative error x once these
        parameters are the judge file's (dse.model.verifiers.judge_score_stats)."""
        return judge_score_stats(KAPPA, self.good_mean, self.bad_mean, self.shift, x,
                                 "target judge fit (dse.validation.judge)")

    def to_json(self) -> dict[str, float]:
        return {"kappa": KAPPA, "good_mean": self.good_mean, "bad_mean": self.bad_mean,
                "shift": self.shift}


def thinking_workload(name: str, dataset: str, accuracy: Mapping[str, float], *,
                      steps_mean: float = STEPS_MEAN,
                      budget_tokens: int = BUDGET_TOKENS) -> WorkloadSpec:
    """A thinking model's setting as a workload: the models' solo accuracies and the assumed
    step statistics (ASSUMPTIONS). The PRM's difficulty tier is not used (the target judges);
    the test-set size only sizes binomial spreads, which the judge's fit does not use."""
    return WorkloadSpec(
        name=name, description=f"{dataset}, thinking traces (dse.validation.judge)",
        path=f"dse/data/specreason_published.toml#{name}", sources=ASSUMPTIONS,
        dataset=dataset, prompt_tokens=PROMPT_TOKENS, problem_tokens=PROMPT_TOKENS,
        steps_mean=steps_mean, steps_cv=STEPS_CV, draft_step_tokens_mean=STEP_TOKENS,
        draft_step_tokens_cv=1.0, target_step_tokens_mean=STEP_TOKENS,
        target_step_tokens_cv=1.0, processbench_subset="omnimath", test_problems=30,
        prm_concentration=None, max_context_tokens=budget_tokens, accuracy=dict(accuracy),
        load=None)


def judge_workflow_params() -> AccuracyParams:
    """The workflow parameters the judge's fit runs under: fully nested errors
    (ERROR_NESTING) and no in-chain factor (no SpecReason pair has one)."""
    return replace(shipped(), error_nesting=ERROR_NESTING, in_chain_error_factor={})


def predict(p: Params, r: JudgeRow, steps_mean: float = STEPS_MEAN) -> tuple[float, float]:
    """(accuracy %, acceptance) of forward-only SpecReason on the row's setting: the closed
    form's forward-only accuracy (dse.engine.closed_form.accuracy_only, beta 0)."""
    sc = p.scores(r.relative_error)
    w = thinking_workload(r.id, r.dataset, {r.draft: r.draft_accuracy_pct,
                                            r.target: r.target_accuracy_pct},
                          steps_mean=steps_mean)
    pr = step_probabilities(w, r.draft, r.target, r.threshold, r.threshold, sc,
                            judge_workflow_params())
    pa = float(pr.p_accept)
    m_c = pa * w.draft_step_tokens_mean + (1 - pa) * w.target_step_tokens_mean
    s_vals, s_p = steps_distribution(w, max_steps(w, w.max_context_tokens, m_c))
    return float(chain_accuracy_pct(w, r.draft, r.target, r.threshold, r.threshold, sc, 0.0,
                                    s_vals, s_p, judge_workflow_params())), pa


def fit(rows: Sequence[JudgeRow], *, shift: bool = True, steps_mean: float = STEPS_MEAN
        ) -> tuple[Params, float, float]:
    """Least squares over accuracy (points) and acceptance (x ACCEPTANCE_WEIGHT) of the tool's
    form (shift: False, the one-distribution diagnostic): (the best of STARTS, the largest
    spread of its parameters across starts that reach its cost, the sum of squares)."""
    from scipy.optimize import least_squares  # local: ~0.2 s to import

    n = 3 if shift else 2

    def unpack(x: np.ndarray) -> Params:
        return Params(float(x[0]), float(x[1]), float(x[2]) if shift else 0.0)

    def residuals(x: np.ndarray) -> np.ndarray:
        p = unpack(x)
        out = []
        for r in rows:
            acc, pa = predict(p, r, steps_mean)
            out += [acc - r.accuracy_pct, ACCEPTANCE_WEIGHT * (pa - r.acceptance)]
        return np.array(out)

    lo = [GOOD_MEAN_RANGE[0], BAD_MEAN_RANGE[0], SHIFT_RANGE[0]][:n]
    hi = [GOOD_MEAN_RANGE[1], BAD_MEAN_RANGE[1], SHIFT_RANGE[1]][:n]
    fits = [least_squares(residuals, x0=list(st[:n]), bounds=(lo, hi), max_nfev=300)
            for st in STARTS]
    best = min(fits, key=lambda f: f.cost)
    spread = max(float(np.abs(f.x - best.x).max()) for f in fits
                 if f.cost < best.cost * (1 + 1e-6) + 1e-9)
    return unpack(best.x), spread, float(2 * best.cost)


def _rows(p: Params, rows: Sequence[JudgeRow], key: str) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        acc, pa = predict(p, r)
        out.append({"id": r.id, "paper": r.accuracy_pct, key: round(acc, 4),
                    "error_points": round(acc - r.accuracy_pct, 4),
                    "acceptance_measured": r.acceptance, f"acceptance_{key}": round(pa, 4),
                    "acceptance_error": round(pa - r.acceptance, 4)})
    return out


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    e = np.abs([r["error_points"] for r in rows])
    a = np.abs([r["acceptance_error"] for r in rows])
    return {"n": len(rows), "median_abs_error": round(float(np.median(e)), 4),
            "max_abs_error": round(float(e.max()), 4),
            "acceptance_median_abs_error": round(float(np.median(a)), 4),
            "acceptance_max_abs_error": round(float(a.max()), 4)}


def _leave_out(rows: Sequence[JudgeRow], group: Callable[[JudgeRow], Any], *,
               shift: bool = True) -> dict[str, Any]:
    """Refit without each group and predict it (a group that is every row is skipped)."""
    out: list[dict[str, Any]] = []
    folds: list[dict[str, Any]] = []
    for g in sorted({group(r) for r in rows}, key=str):
        test = [r for r in rows if group(r) == g]
        train = [r for r in rows if group(r) != g]
        if not train:
            continue
        p = fit(train, shift=shift)[0]
        folds.append({"left_out": g, "train_rows": len(train),
                      "parameters": {k: round(v, 6) for k, v in p.to_json().items()}})
        out += _rows(p, test, "predicted")
    return {**_summary(out), "folds": folds, "rows": out}


def _pairs_by_catalog(rows: Sequence[JudgeRow], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The fitted settings by catalog model names (None where the catalog lacks the model)."""
    seen: dict[tuple[str, str, str], set[float]] = {}
    for r in rows:
        seen.setdefault((r.draft, r.target, r.dataset), set()).add(r.threshold)
    return [{"draft": names.get(d), "target": names.get(t), "draft_hf_id": d,
             "target_hf_id": t, "dataset": ds, "thresholds": sorted(ks)}
            for (d, t, ds), ks in sorted(seen.items())]


def cross_validate(published: Mapping[str, Any], names: Mapping[str, str]
                   ) -> tuple[Params, dict[str, Any]]:
    """The tool form's fit and cross-validations, the one-distribution diagnostic's, and the
    checks of two assumptions: (fitted parameters, the judge_cv.json document). names: Hugging
    Face id -> catalog model name."""
    rows, left = usable_rows(published)
    p, spread, sse = fit(rows)
    fitted = [{**x, "pair": r.pair, "dataset": r.dataset, "threshold": r.threshold,
               "threshold_basis": r.threshold_basis, "relative_error": round(r.relative_error, 4)}
              for x, r in zip(_rows(p, rows, "fitted"), rows, strict=True)]
    sources = sorted({r.source for r in rows})
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "generated_by": GENERATED_BY,
        "form": "both means lowered by shift x (1 - A_draft / A_target), clipped to their "
        "declared ranges (mu_good, mu_bad, shift): the form TargetJudge.scores(w, draft, "
        "target) runs", "assumptions": ASSUMPTIONS,
        "rows_used": [r.id for r in rows], "rows_excluded": left,
        "covered": _pairs_by_catalog(rows, names),
        "fit": {**_summary(fitted), "rows": fitted,
                "parameters": {k: round(v, 6) for k, v in p.to_json().items()},
                "start_spread": round(spread, 6), "sum_of_squares": round(sse, 3)},
        "leave_one_pair_out": _leave_out(rows, lambda r: r.pair),
        "leave_one_dataset_out": _leave_out(rows, lambda r: r.dataset),
        "leave_one_threshold_out": _leave_out(rows, lambda r: r.threshold),
        "leave_one_row_out": _leave_out(rows, lambda r: r.id),
    }
    if len(sources) > 1:
        doc["leave_one_source_out"] = _leave_out(rows, lambda r: r.source)
    else:
        doc["leave_one_source_out"] = {
            "status": "not computed", "reason": f"only one source has usable rows "
            f"({', '.join(sources)}); SpecReason's own rows: see rows_excluded"}
    p1, spread1, sse1 = fit(rows, shift=False)
    fitted1 = _rows(p1, rows, "fitted")
    doc["one_distribution_form"] = {
        "note": "diagnostic, not run by the tool: one distribution per class for every pair, "
        "dataset and threshold (shift 0); what the shift buys",
        "fit": {**_summary(fitted1), "rows": fitted1,
                "parameters": {k: round(v, 6) for k, v in p1.to_json().items()},
                "start_spread": round(spread1, 6), "sum_of_squares": round(sse1, 3)},
        "leave_one_pair_out": _leave_out(rows, lambda r: r.pair, shift=False),
        "leave_one_dataset_out": _leave_out(rows, lambda r: r.dataset, shift=False),
    }
    doc["qwen3_threshold_check"] = _threshold_check(rows)
    doc["sensitivity"] = {"steps_mean": [
        {"steps_mean": s, **{k: round(v, 6) for k, v in fit(rows, steps_mean=s)[0]
                             .to_json().items() if k in ("good_mean", "bad_mean", "shift")}}
        for s in SENSITIVITY_STEPS]}
    return p, doc


def _threshold_check(rows: Sequence[JudgeRow]) -> list[dict[str, Any]]:
    """The sum of squares of both forms with the assumed-threshold rows at other thresholds."""
    out = []
    for k in (*CHECK_THRESHOLDS, ASSUMED_THRESHOLD):
        moved = [r if r.threshold_basis == "published" else replace(r, threshold=k)
                 for r in rows]
        out.append({"threshold": k, "sum_of_squares": round(fit(moved)[2], 3),
                    "one_distribution_sum_of_squares": round(fit(moved, shift=False)[2], 3)})
    return out


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


@cache
def load() -> Mapping[str, Any]:
    """dse/data/judge_cv.json as written by scripts/calibrate_target_judge.py (read by
    dse.uncertainty.evidence, below the model; the provenance and the interval scheme of a
    target-verifier design are read there too)."""
    return evidence.judge_cv()


SCHEMES = {"leave_one_pair_out": "leave one pair out",
           "leave_one_dataset_out": "leave one dataset out",
           "leave_one_threshold_out": "leave one threshold out",
           "leave_one_row_out": "leave one row out"}


def markdown_section(doc: Mapping[str, Any]) -> list[str]:
    """docs/validation.md's target-judge fit and cross-validation (from the json, no refit)."""
    f, p = doc["fit"], doc["fit"]["parameters"]
    d = doc["one_distribution_form"]
    dp = d["fit"]["parameters"]
    bound = " (its upper bound)" if p["good_mean"] >= GOOD_MEAN_RANGE[1] - 1e-6 else ""
    lines = [
        f"Fitted by `{GENERATED_BY}` (`dse/data/judge_cv.json`, `dse/data/target_judge.toml`) "
        f"to the {f['n']} usable SpecReason rows: Lookahead Reasoning's re-runs (Table 1, "
        "threshold 9; Table 2, threshold 7), each with both models' solo accuracy, SpecReason's "
        "accuracy and its acceptance. Three parameters, the form the tool runs: the judge's "
        "latent score ~ Beta(mu kappa, (1 - mu) kappa) per class (kappa "
        f"{p['kappa']:g} fixed), with means good {p['good_mean']:.3g}{bound} and bad "
        f"{p['bad_mean']:.3g} for a draft as accurate as the target, both lowered by shift "
        f"{p['shift']:.3g} x the draft's relative error x = 1 - A_draft / A_target (solo "
        "accuracies on the workload; x clipped at 0, the means at their declared ranges): a "
        "judge rejects more of a weaker draft's steps. Forward only, error nesting 1, no "
        "in-chain factor, 100 steps per problem (assumptions, with reasons, in the data file's "
        "sources). Accuracy in points, acceptance as a share.",
        "",
        "| scheme | rows | accuracy median abs error | accuracy max | acceptance median abs "
        "error | acceptance max |",
        "|---|---|---|---|---|---|",
        _scheme_line("in-sample fit", f)]
    lines += [_scheme_line(name, doc[k]) for k, name in SCHEMES.items()]
    loso = doc["leave_one_source_out"]
    if "status" in loso:
        lines += ["", f"Leave one source out: {loso['status']}; {loso['reason']}."]
    lines += ["", "| id | x | paper acc. | fitted | leave one pair out | leave one dataset out "
              "| paper acc. rate | fitted | leave one pair out |", "|---|---|---|---|---|---|---|"
              "---|---|"]
    lopo = {r["id"]: r for r in doc["leave_one_pair_out"]["rows"]}
    lodo = {r["id"]: r for r in doc["leave_one_dataset_out"]["rows"]}
    for r in f["rows"]:
        lp, ld = lopo[r["id"]], lodo[r["id"]]
        lines.append(f"| `{r['id']}` | {r['relative_error']:.2f} | {r['paper']:.4g} | "
                     f"{r['fitted']:.4g} | {lp['predicted']:.4g} | {ld['predicted']:.4g} | "
                     f"{r['acceptance_measured']:.2f} | {r['acceptance_fitted']:.2f} | "
                     f"{lp['acceptance_predicted']:.2f} |")
    lines += [
        "", "x: the draft's relative error 1 - A_draft / A_target.", "",
        "Diagnostic, not run by the tool: one distribution per class for every pair (shift 0; "
        f"two parameters: good {dp['good_mean']:.3g}, bad {dp['bad_mean']:.3g}):", "",
        "| scheme | rows | accuracy median abs error | accuracy max | acceptance median abs "
        "error | acceptance max |", "|---|---|---|---|---|---|",
        _scheme_line("in-sample fit", d["fit"]),
        _scheme_line("leave one pair out", d["leave_one_pair_out"]),
        _scheme_line("leave one dataset out", d["leave_one_dataset_out"]), ""]
    chk = ", ".join(f"{c['threshold']:g}: {c['sum_of_squares']:.0f} / "
                    f"{c['one_distribution_sum_of_squares']:.0f}"
                    for c in doc["qwen3_threshold_check"])
    sens = ", ".join(f"{s['steps_mean']:g} steps: good {s['good_mean']:.3f}, bad "
                     f"{s['bad_mean']:.3f}, shift {s['shift']:.3f}"
                     for s in doc["sensitivity"]["steps_mean"])
    lines += [f"Checks of two assumptions: the Qwen3 rows' unstated threshold (sum of squares "
              f"of the tool form / the one-distribution diagnostic with them at {chk}); steps "
              f"per problem (refits at {sens}).", ""]
    return lines


def _scheme_line(name: str, s: Mapping[str, Any]) -> str:
    return (f"| {name} | {s['n']} | {s['median_abs_error']:.2f} | {s['max_abs_error']:.2f} | "
            f"{s['acceptance_median_abs_error']:.3f} | {s['acceptance_max_abs_error']:.3f} |")


# ------------------------------------------------------------------ timing beside SpecReason

# SpecReason's setup (arXiv 2504.07891 sec. 5.1): both models on two RTX A6000, vLLM 0.8.2,
# taking turns, forward only. Stand-ins of the same shape: qwen2.5-32b-instruct for QwQ-32B and
# Skywork-OR1-32B-Preview (Qwen2.5-32B fine-tunes), qwen2.5-1.5b-instruct for R1-Distill-1.5B and
# ZR1-1.5B (Qwen2.5-1.5B; the catalog refuses the R1 tokenizer beside a Qwen2.5 target).
SPECREASON_SYSTEM = {
    "verifier": "target", "colocate": "draft+target", "draft_model": "qwen2.5-1.5b-instruct",
    "target_model": "qwen2.5-32b-instruct", "draft_device": "rtx-a6000",
    "target_device": "rtx-a6000", "target_tp": 2, "draft_precision": "bf16",
    "target_precision": "bf16", "draft_serving": "vllm-cudagraph",
    "target_serving": "vllm-cudagraph", "max_context_tokens": 8192, "max_backtracks": 0}
SPEEDUP_ROWS = (("specreason-v2-aime24-qwq32b-r1-1.5b-main", "qwq32b-r1-1.5b.aime24", None),
                *((f"specreason-v2-ranges-{p}", f"{p}.{end}_share", i)
                  for p in ("qwq32b-r1-1.5b", "qwq32b-zr1-1.5b", "skywork32b-r1-1.5b",
                            "skywork32b-zr1-1.5b") for i, end in enumerate(("low", "high"))))
@dataclass(frozen=True)
class TimingRow:
    """A SpecReason timing statement and the tool's value (tool_low/high: widened by the
    published token reduction; equal to `tool` where none applies)."""

    id: str
    description: str
    paper_low: float
    paper_high: float
    tool: float
    tool_low: float
    tool_high: float

    @property
    def within(self) -> bool:
        """The paper's value or range meets the tool's, +-0.05."""
        return self.tool_low - 0.05 <= self.paper_high and self.paper_low <= self.tool_high + 0.05


def published() -> dict[str, Any]:
    """dse/data/specreason_published.toml."""
    import tomllib

    text = resources.files("dse.data").joinpath("specreason_published.toml").read_text(
        encoding="utf-8")
    return tomllib.loads(text)


def _specreason(cat: Any, share: float | None = None, *, alone: bool = False
                ) -> tuple[Any, WorkloadSpec]:
    """The SpecReason stand-in (at acceptance `share`; alone: its target alone) and the
    thinking workload it runs (AIME24 solo accuracies of R1-1.5B 28.9 and QwQ-32B 79.5, which
    only shape p_accept(threshold): it is inverted to the share)."""
    from dse.io.design_files import load_system
    from dse.io.resolve import override_spec
    from dse.model.design import build_design
    from dse.model.schedules import PRESETS
    from dse.model.verifiers import VERIFIERS

    over: dict[str, Any] = dict(SPECREASON_SYSTEM)
    draft, target = over["draft_model"], over["target_model"]
    acc = {draft: 28.9, target: 79.5}
    # the judge's distributions at this pair's relative error on the thinking workload
    w = thinking_workload("specreason", "aime24", acc, budget_tokens=8192)
    sc = VERIFIERS["target"].scores(w, draft, target)
    if alone:
        over = {k: v for k, v in over.items() if k.startswith("target_")} | {
            "workflow": "target-only", "max_context_tokens": 8192}
    elif share is not None:
        lo, hi = 0.0, 1.0  # p_accept falls as the threshold rises
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            pa = float(step_probabilities(w, draft, target, mid, mid, sc,
                                          judge_workflow_params()).p_accept)
            lo, hi = (mid, hi) if pa > share else (lo, mid)
        over["accept_threshold"] = over["backtrack_threshold"] = 0.5 * (lo + hi)
    spec = override_spec(load_system(cat, "paper-config1-3090"), over)
    return build_design(cat, spec, PRESETS["rsd"]), w


def timing_rows(cat: Any) -> list[TimingRow]:
    """SpecReason's timing statements the catalog can express: one judge call against a decode
    step (sec. 4.1: "each verification requires prefilling only ~70 new tokens ... comparable to
    decoding just 1-2 tokens"; TargetJudge.score_s is that prefill alone, the score token
    sampled from its last logits), and its speed-ups at the published acceptances."""
    from dse.engine.evaluate import evaluate
    from dse.model.verifiers import VERIFIERS

    d, w = _specreason(cat)
    ctx, step = 4096.0, 50.0  # mid-budget; + the 20-token instruction: ~70 new tokens
    dec = float(d.target.decode_s(1, ctx))
    pre = float(d.target.prefill_s(step + 20.0, ctx)) / dec
    call = float(VERIFIERS["target"].score_s(d.target, w, step, ctx - w.prompt_tokens)) / dec
    out = [TimingRow("specreason.verify_prefill.qwq-32b.a6000-tp2", "prefill of 70 new tokens "
                     "after 4K (sec. 4.1), in decode steps", 1, 2, pre, pre, pre),
           TimingRow("specreason.verify_call.qwq-32b.a6000-tp2", "TargetJudge.score_s of a "
                     "50-token step (the prefill; the score token from its last logits), in "
                     "decode steps", 1, 2, call, call, call)]
    rows = {r["id"]: r for r in published()["row"]}
    base = evaluate(*_specreason(cat, alone=True)).latency_s_per_problem
    for rid, name, i in SPEEDUP_ROWS:
        r = rows[rid]
        share = r["small_step_share"] if i is None else r["small_step_share_range"][i]
        paper = r["speedup"] if i is None else r["speedup_range"][i]
        v = float(base / evaluate(*_specreason(cat, share)).latency_s_per_problem)
        lo, hi = rows[f"specreason-v2-ranges-{name.rsplit('.', 1)[0]}"]["token_reduction_range"]
        out.append(TimingRow(f"specreason.speedup.{name}", f"speed-up over the base model alone "
                             f"at acceptance {share:g}", paper, paper, v, v * lo, v * hi))
    return out
