"""The reasoning workflow's probabilities: accept, refine-fail, step quality, accuracy.

Step-quality model. The accuracy conditions every step on the problem's difficulty
(`chain_accuracy_pct`): a model's per-problem solve rate p is a bin of the width model's Beta
(the draft's and the target's bins at the same quantile), and on such a problem a step by model
m is bad with the per-step probability h_m,i that gives E_S[(1 - h_m,i)^S] = p_m,i; every
sample on the problem (draft step, rewrite, backtrack alternative) is drawn at those rates. The
timing reads the dataset-average rates h_m instead (`step_probabilities`), the same for every
problem: E_S[(1 - h_m)^S] = A_m, the model's published solo accuracy.
A problem is solved when no bad step stays in the final reasoning chain. Errors are (partly,
by the accuracy model's `error_nesting`) nested, a difficulty ordering: a step the stronger model
gets wrong is one the weaker model gets wrong too. The PRM rejects mostly the draft's bad
steps, so the target rewrites mostly hard steps, where its error rate is up to h_t / h_d (if
h_t < h_d), well above its average h_t.

The verifier scores a good step ~ Beta(a_g, b_g) and a bad one ~ Beta(a_b, b_b)
(dse.model.verifiers; a PRM's for the design's draft and PRM on the dataset,
dse.model.discrimination):
- draft step accepted:        p_accept = (1 - h_d) (1 - F_g(tau_a)) + h_d (1 - F_b(tau_a))
- refined step fails (bt):    p_fail   = (1 - h_rw) F_g(tau_b) + h_rw F_b(tau_b), with h_rw the
                              target's error rate on rejected steps (nested errors, below)
With tau_a -> 1 every draft step is rewritten (target-only accuracy); with tau_a -> 0 every
draft step is kept (draft-only accuracy).

In-chain rewrite quality (one parameter per measured (draft, target) pair): a target that
rewrites a rejected step continues a foreign reasoning chain (the draft's prefix, its style and
its accepted-but-imperfect steps), not its own, so its error on those steps need not be what its
solo accuracy gives. The accuracy model's `in_chain_error_factor` table
(dse/data/accuracy_model.toml), keyed "<draft> -> <target>", gives rho; both conditional rewrite
error rates (given a bad and given a good draft step) are multiplied by 1 + (rho - 1) p_accept
(capped at 1): in full in a chain the draft wrote, not at all when the target writes every step
(tau_a -> 1 keeps the target-only limit). rho = 1 is the solo-accuracy form, rho > 1 a target
that loses more inside the draft's chain than its solo accuracy says. Fitted jointly with the
PRM discrimination to the calibration rows (`dse.validation.accuracy`); a pair without an entry
keeps rho = 1 and its accuracy is *extrapolated* (`accuracy_provenance`). E.g. h_d = 0.1,
h_t = 0.02, nesting 1: P(target bad | draft bad) = 0.02 / 0.1 = 0.2, and with rho = 1.5 at
p_accept 1 it is 0.3 (0.25 at p_accept 0.5); P(target bad | draft good) = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.core import special
from dse.model.discrimination import (
    AccuracyParams,
    ScoreStats,
    prm_scores,
    shipped,
    shipped_sources,
)
from dse.specs.scenario import WorkloadSpec, solo_accuracy_pct
from dse.width.difficulty import DEFAULT_BINS, solve_rate_bins

if TYPE_CHECKING:  # the design imports the workflow's callers, not this module
    from dse.model.design import Design

F64 = NDArray[np.float64]


def beta_cdf(x: ArrayLike, a: ArrayLike, b: ArrayLike) -> F64:
    """Regularised incomplete beta: P(score < x) for score ~ Beta(a, b)."""
    return np.asarray(special.betainc(a, b, np.clip(np.asarray(x, dtype=float), 0.0, 1.0)))


def step_error_rate(accuracy_pct: float, s_vals: NDArray[np.int64], s_p: F64) -> float:
    """Per-step error probability h with E_S[(1 - h)^S] = A (the model's solo accuracy, percent)
    over the workload's distribution of steps per problem.

    E_S[(1 - h)^S] falls from 1 at h = 0 to 0 at h = 1 (every S >= 1), so the root is bracketed
    and found by bisection down to two adjacent doubles (about 60 halvings for h near 0.01,
    a few microseconds each), the end with the smaller residual returned. Done here rather than
    by scipy.optimize.brentq (xtol 1e-12) because importing scipy.optimize costs every
    `dse evaluate` about 0.2 s; the two roots differ by < 3e-11 relative on the shipped
    workloads. Each distinct question is answered once (`_STEP_ERRORS`: a search asks the
    same few for every design and every factor its intervals move)."""
    key = (accuracy_pct, s_vals.dtype.str, s_vals.tobytes(), s_p.dtype.str, s_p.tobytes())
    got = _STEP_ERRORS.get(key)
    if got is None:
        got = _step_error_rate(accuracy_pct, s_vals, s_p)
        if len(_STEP_ERRORS) >= 4096:
            _STEP_ERRORS.clear()
        _STEP_ERRORS[key] = got
    return got


_STEP_ERRORS: dict[tuple[float, str, bytes, str, bytes], float] = {}


def _step_error_rate(accuracy_pct: float, s_vals: NDArray[np.int64], s_p: F64) -> float:
    a = min(max(accuracy_pct / 100.0, 1e-9), 1.0)
    if a >= 1.0:
        return 0.0

    def f(h: float) -> float:
        return float((s_p * (1 - h) ** s_vals).sum()) - a

    lo, hi = 0.0, 1.0
    while (mid := 0.5 * (lo + hi)) > lo and mid < hi:
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return lo if abs(f(lo)) <= abs(f(hi)) else hi


def model_accuracy(w: WorkloadSpec, model: str) -> float:
    """The model's solo accuracy on the workload, percent (dse.specs.scenario.solo_accuracy_pct)."""
    return solo_accuracy_pct(w, model)


@dataclass(frozen=True)
class StepProbabilities:
    """Per-attempt probabilities of one (workload, draft, target, thresholds) combination."""

    h_draft: F64
    h_target: F64
    h_rewrite: F64  # P(a rewrite is bad): the target's error on the steps the PRM rejected
    t_if_bad: F64  # P(rewrite bad | draft step bad), in-chain (factor applied)
    t_if_good: F64  # P(rewrite bad | draft step good), in-chain
    p_accept: F64
    p_fail: F64  # refined step scored below the backtrack threshold
    p_bad_accepted: F64  # P(bad and accepted) for a draft step
    p_bad_pass: F64  # P(bad and passing tau_b) for a refined step
    p_bad_fail: F64  # P(bad and failing tau_b)


def step_probabilities(
    w: WorkloadSpec, draft_model: str, target_model: str,
    accept_threshold: ArrayLike, backtrack_threshold: ArrayLike,
    scores: ScoreStats, params: AccuracyParams | None = None,
) -> StepProbabilities:
    """The dataset-average step probabilities (each model's per-step error from its solo
    accuracy, the same on every problem): what the timing reads (acceptance, failed rewrites).
    scores: the verifier's score distributions (dse.model.verifiers); params: the error nesting
    and in-chain factors (None: the shipped accuracy model's). The accuracy reads
    `chain_accuracy_pct` instead, which conditions every step on the problem's difficulty."""
    n = quality_max_steps(w)
    h_d = _solo_step_error_rate(model_accuracy(w, draft_model), w.steps_mean, w.steps_cv, n)
    h_t = _solo_step_error_rate(model_accuracy(w, target_model), w.steps_mean, w.steps_cv, n)
    return rates_step_probabilities(h_d, h_t, accept_threshold, backtrack_threshold, scores,
                                    params, pair_key(draft_model, target_model))


def rates_step_probabilities(h_d: ArrayLike, h_t: ArrayLike, accept_threshold: ArrayLike,
                             backtrack_threshold: ArrayLike, scores: ScoreStats,
                             params: AccuracyParams | None, pair: str) -> StepProbabilities:
    """The step probabilities of a draft and a target with per-step error rates h_d, h_t
    (broadcast with the thresholds: a problem's rates, or the dataset's average)."""
    p = params or shipped()
    h_d = np.asarray(h_d, dtype=float)
    h_t = np.asarray(h_t, dtype=float)
    sc = scores
    fg_a = beta_cdf(accept_threshold, sc.good_alpha, sc.good_beta)
    fb_a = beta_cdf(accept_threshold, sc.bad_alpha, sc.bad_beta)
    fg_b = beta_cdf(backtrack_threshold, sc.good_alpha, sc.good_beta)
    fb_b = beta_cdf(backtrack_threshold, sc.bad_alpha, sc.bad_beta)
    p_accept = (1 - h_d) * (1 - fg_a) + h_d * (1 - fb_a)
    # nested errors: P(target bad | draft bad) and P(target bad | draft good), in the chain
    t_if_bad, t_if_good = in_chain_rewrite_error(
        *nested_target_error(h_d, h_t, p.error_nesting),
        factor=p.rho(pair), draft_share=p_accept)
    p_rej = 1 - p_accept
    h_rw = np.where(p_rej > 0, (h_d * fb_a * t_if_bad + (1 - h_d) * fg_a * t_if_good)
                    / np.maximum(p_rej, 1e-300), h_t)
    p_fail = (1 - h_rw) * fg_b + h_rw * fb_b
    return StepProbabilities(
        h_draft=np.asarray(h_d), h_target=np.asarray(h_t), h_rewrite=np.asarray(h_rw),
        t_if_bad=np.asarray(t_if_bad), t_if_good=np.asarray(t_if_good),
        p_accept=np.asarray(p_accept), p_fail=np.asarray(p_fail),
        p_bad_accepted=np.asarray(h_d * (1 - fb_a)), p_bad_pass=np.asarray(h_rw * (1 - fb_b)),
        p_bad_fail=np.asarray(h_rw * fb_b),
    )


def chain_bad_rate(pr: StepProbabilities, beta: ArrayLike = 0.0) -> F64:
    """q: P(the step committed at a position is bad).

    q = p_bad_acc + (1 - p_a)[p_bad_pass + p_bad_fail (1 - beta) + p_fail beta h_rw]: a rewrite
    that fails the backtrack threshold is replaced, in a share beta of cases (when a backtrack
    actually happens), by an unscored alternative on an equally hard step. Forward-only is
    beta = 0 (then q = p_bad_acc + (1 - p_a) h_rw)."""
    beta = np.asarray(beta, dtype=float)
    return np.asarray(pr.p_bad_accepted + (1 - pr.p_accept) * (
        pr.p_bad_pass + pr.p_bad_fail * (1 - beta) + pr.p_fail * beta * pr.h_rewrite))


def problem_solve_rates(w: WorkloadSpec, model: str, bins: int = DEFAULT_BINS) -> F64:
    """A model's per-problem solve rates on the workload: `bins` equal-probability bins of its
    difficulty distribution, p ~ Beta(A c, (1 - A) c) with A its solo accuracy and c the width
    model's concentration for the dataset and that accuracy (dse.width.params: fitted to
    pass@N, majority and best-of-N curves), each bin's conditional mean; bin i of every model
    is the same quantile of difficulty (dse.width.difficulty.solve_rate_bins)."""
    from dse.width.params import shipped as width_shipped

    a = model_accuracy(w, model)
    c, _ = width_shipped().concentration_for(w.dataset, a)
    return solve_rate_bins(a / 100.0, float(c), bins)


def problem_step_error_rates(w: WorkloadSpec, model: str, bins: int = DEFAULT_BINS) -> F64:
    """Per-step error rate h_i on the problems of each difficulty bin i: E_S[(1 - h_i)^S] =
    p_i over the workload's steps per problem (its solo budget), so that a solo run of bin i is
    right with chance p_i and over the bins with the model's solo accuracy exactly."""
    n = quality_max_steps(w)
    return _bin_step_error_rates(tuple(problem_solve_rates(w, model, bins)),
                                 float(w.steps_mean), float(w.steps_cv), n)


@lru_cache(maxsize=256)
def _bin_step_error_rates(rates: tuple[float, ...], steps_mean: float, steps_cv: float,
                          max_steps_: int) -> F64:
    """`step_error_rate` for each solve rate at once (vectorised bisection, 60 halvings)."""
    s_vals, s_p = _steps_distribution(steps_mean, steps_cv, max_steps_)
    p = np.asarray(rates, dtype=float)
    lo, hi = np.zeros_like(p), np.ones_like(p)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        ok = (s_p * (1 - mid[:, None]) ** s_vals).sum(axis=1) > p
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    out = np.where(p >= 1.0, 0.0, np.where(p <= 0.0, 1.0, 0.5 * (lo + hi)))
    out.setflags(write=False)
    return np.asarray(out, dtype=float)


def chain_accuracy_pct(w: WorkloadSpec, draft_model: str, target_model: str,
                       accept_threshold: ArrayLike, backtrack_threshold: ArrayLike,
                       scores: ScoreStats, beta: ArrayLike, s_vals: NDArray[np.int64],
                       s_p: F64, params: AccuracyParams | None = None,
                       bins: int = DEFAULT_BINS) -> F64:
    """The accuracy (percent) of a speculative chain, conditioned on each problem's difficulty:
    E_i E_S[(1 - q_i)^S] over the difficulty bins i (`problem_step_error_rates`, the draft's and
    the target's at the same quantile) and the design's steps per problem S ~ (s_vals, s_p),
    with q_i the committed step's bad rate (`chain_bad_rate`, backtrack share beta) from
    the step probabilities at bin i's rates. Every sample, rewrite and alternative on a problem
    is drawn at that problem's rates, so a rewrite cannot fix what the target cannot do on this
    problem: with the draft equal to the target a rejected step is replaced by another sample
    of the same policy, which is at most a step search with 2 candidates ranked by the same
    verifier (3 with a backtrack's alternative). Broadcast over the thresholds and beta (shape
    T); returns shape T. Limits: accept-all gives the draft's solo accuracy, reject-all the
    target's (at the workload's own budget, exactly)."""
    q = _chain_bad_rates(w, draft_model, target_model, accept_threshold, backtrack_threshold,
                         scores, beta, params, bins)  # T + (bins,)
    return np.asarray(100.0 * steps_pgf(1.0 - q, s_vals, s_p).mean(axis=-1), dtype=float)


def steps_pgf(z: ArrayLike, s_vals: NDArray[np.int64], s_p: F64) -> F64:
    """E_S[z^S] for S ~ (s_vals, s_p) at every z (the generating function of the steps per
    problem): Horner's rule over the consecutive values min(S)..max(S), one multiply-add per
    value instead of a power per (z, S); equal to (z[..., None] ** s_vals * s_p).sum(-1) to
    rounding (tested). E.g. S in {1, 2} with p (0.5, 0.5) at z = 0.9: 0.45 + 0.405."""
    z = np.asarray(z, dtype=float)
    s = np.asarray(s_vals)
    lo = int(s.min())
    coef = np.zeros(int(s.max()) - lo + 1)
    np.add.at(coef, s - lo, s_p)
    acc = np.full(z.shape, coef[-1])
    for c in coef[-2::-1]:
        acc *= z
        acc += c
    return np.asarray(acc * z ** lo, dtype=float)


def _chain_bad_rates(w: WorkloadSpec, draft_model: str, target_model: str,
                     accept_threshold: ArrayLike, backtrack_threshold: ArrayLike,
                     scores: ScoreStats, beta: ArrayLike, params: AccuracyParams | None,
                     bins: int) -> F64:
    """q_i, the committed step's bad rate at each difficulty bin (`chain_bad_rate` from the
    step probabilities at the bin's draft and target rates). Shape T + (bins,)."""
    h_d = problem_step_error_rates(w, draft_model, bins)
    h_t = problem_step_error_rates(w, target_model, bins)
    ta = np.asarray(accept_threshold, dtype=float)[..., None]
    tb = np.asarray(backtrack_threshold, dtype=float)[..., None]
    pr = rates_step_probabilities(h_d, h_t, ta, tb, scores, params,
                                  pair_key(draft_model, target_model))
    return np.asarray(chain_bad_rate(pr, np.asarray(beta, dtype=float)[..., None]), dtype=float)


def chain_success(w: WorkloadSpec, draft_model: str, target_model: str,
                  accept_threshold: ArrayLike, backtrack_threshold: ArrayLike,
                  scores: ScoreStats, beta: ArrayLike, s_vals: NDArray[np.int64],
                  params: AccuracyParams | None = None, bins: int = DEFAULT_BINS) -> F64:
    """P(a problem's chain is right) for each difficulty bin and each number of steps S in
    s_vals: (1 - q_i)^S (`chain_accuracy_pct` averages it over S by `steps_pgf`). Shape T +
    (bins, len(S))."""
    q = _chain_bad_rates(w, draft_model, target_model, accept_threshold, backtrack_threshold,
                         scores, beta, params, bins)
    return np.asarray((1 - q[..., None]) ** np.asarray(s_vals), dtype=float)


def nested_target_error(h_d: ArrayLike, h_t: ArrayLike, nesting: float = 1.0
                        ) -> tuple[F64, F64]:
    """(P(target bad | draft bad), P(target bad | draft good)): a mix, by `nesting`, of nested
    errors (a step the stronger model gets wrong is one the weaker gets wrong too: a difficulty
    ordering) and independent errors. The marginals stay h_d and h_t for any mix."""
    h_d = np.asarray(h_d, dtype=float)
    h_t = np.asarray(h_t, dtype=float)
    if_bad = np.where(h_d > 0, np.minimum(1.0, h_t / np.maximum(h_d, 1e-300)), 0.0)
    if_good = np.where(h_t > h_d, (h_t - h_d) / np.maximum(1 - h_d, 1e-300), 0.0)
    return (np.asarray(nesting * if_bad + (1 - nesting) * h_t),
            np.asarray(nesting * if_good + (1 - nesting) * h_t))


def pair_key(draft_model: str, target_model: str) -> str:
    """The key of a (draft, target) pair in the accuracy model's `in_chain_error_factor` table."""
    return f"{draft_model} -> {target_model}"


def in_chain_rewrite_error(t_if_bad: ArrayLike, t_if_good: ArrayLike, *, factor: float,
                           draft_share: ArrayLike = 1.0) -> tuple[F64, F64]:
    """The target's conditional rewrite error rates inside the draft's chain: the solo-form
    rates (`nested_target_error`) times 1 + (rho - 1) s, capped at 1, where s is the share of
    the chain the draft wrote (p_accept): rho applies in full to a chain of draft steps and not
    at all when the target writes every step (its own chain, its solo accuracy). rho = 1 or
    s = 0 returns the rates unchanged. E.g. rates (0.2, 0), rho 1.5, s 0.5: x 1.25 -> (0.25, 0)."""
    if factor <= 0:
        raise ValueError(f"in-chain error factor must be > 0, got {factor!r}")
    k = 1.0 + (factor - 1.0) * np.clip(np.asarray(draft_share, dtype=float), 0.0, 1.0)
    return (np.minimum(1.0, k * np.asarray(t_if_bad, dtype=float)),
            np.minimum(1.0, k * np.asarray(t_if_good, dtype=float)))


def accuracy_provenance(draft_model: str, target_model: str,
                        params: AccuracyParams | None = None) -> tuple[str, str]:
    """("calibrated" | "extrapolated", a one-line basis) of a PRM-verified accuracy
    prediction: calibrated where the accuracy model carries a fitted in-chain factor for the
    pair (it was measured in a chain), extrapolated otherwise (the solo-accuracy form,
    rho = 1). A target judge's rests on its own fit (dse.uncertainty.evidence.judge_provenance).
    """
    p = params or shipped()
    key = pair_key(draft_model, target_model)
    if key in p.in_chain_error_factor:
        src = shipped_sources().get(f"in_chain_error_factor.{key}", "")
        basis = src.split(";")[0].strip() if src else (
            f"fitted in-chain factor ({draft_model} draft, {target_model} target)")
        return "calibrated", basis
    return "extrapolated", (f"no in-chain measurement of {target_model} after a {draft_model} "
                            "draft; solo-accuracy form (in-chain factor 1)")


# --------------------------------------------------------------------- distributions


def lognormal_params(mean: float, cv: float) -> tuple[float, float]:
    """(mu, sigma) of a lognormal with the given mean and coefficient of variation."""
    sigma2 = np.log1p(cv * cv)
    return float(np.log(mean) - sigma2 / 2), float(np.sqrt(sigma2))


def token_quadrature(mean: float, cv: float, k: int = 8) -> tuple[F64, F64]:
    """k equal-probability points (the bins' conditional means) of a lognormal token count, at
    least 1 token; returns (values, weights). Exact in mean for any k."""
    if cv <= 0:
        return np.array([max(mean, 1.0)]), np.array([1.0])
    mu, s = lognormal_params(mean, cv)
    edges = special.ndtri(np.linspace(0, 1, k + 1))  # standard normal quantiles (Phi^-1)
    # E[X | bin] for a lognormal: exp(mu + s^2/2) * (Phi(b - s) - Phi(a - s)) / (Phi(b) - Phi(a))
    cond = np.exp(mu + s * s / 2) * (special.ndtr(edges[1:] - s) - special.ndtr(edges[:-1] - s))
    vals = np.maximum(cond * k, 1.0)
    return vals, np.full(k, 1.0 / k)


def steps_distribution(w: WorkloadSpec, max_steps: int) -> tuple[NDArray[np.int64], F64]:
    """Committed steps per problem: a lognormal rounded to an integer in 1..max_steps
    (read-only arrays, shared by every design of the workload)."""
    return _steps_distribution(float(w.steps_mean), float(w.steps_cv), int(max_steps))


@lru_cache(maxsize=256)
def _steps_distribution(steps_mean: float, steps_cv: float, max_steps: int
                        ) -> tuple[NDArray[np.int64], F64]:
    s_vals = np.arange(1, max_steps + 1)
    if steps_cv <= 0:
        k = min(max(round(steps_mean), 1), max_steps)
        vals, p = np.array([k]), np.array([1.0])
    else:
        mu, s = lognormal_params(steps_mean, steps_cv)
        # lognormal cdf, P(X < x) = Phi(ln(x / e^mu) / s), as scipy.stats.lognorm computes it
        upper = special.ndtr(np.log((s_vals + 0.5) / np.exp(mu)) / s)
        lower = special.ndtr(np.log((s_vals - 0.5) / np.exp(mu)) / s)
        lower[0] = 0.0
        upper[-1] = 1.0
        p = upper - lower
        keep = p > 1e-12
        vals, p = s_vals[keep], p[keep] / p[keep].sum()
    vals.flags.writeable = False
    p.flags.writeable = False
    return vals, p


@lru_cache(maxsize=1024)
def _solo_step_error_rate(accuracy_pct: float, steps_mean: float, steps_cv: float,
                          max_steps: int) -> float:
    """`step_error_rate` over the workload's steps distribution, remembered: a search asks for
    the same model on the same workload for every design (60 bisection halvings each)."""
    return step_error_rate(accuracy_pct, *_steps_distribution(float(steps_mean),
                                                              float(steps_cv), max_steps))


def sample_steps(rng: np.random.Generator, w: WorkloadSpec, max_steps: int, size: int
                 ) -> NDArray[np.int64]:
    """Stratified: each step count appears in proportion to its probability (largest
    remainders), then shuffled. Removes most of the sampling noise of the mean."""
    vals, p = steps_distribution(w, max_steps)
    exact = p * size
    counts = np.floor(exact).astype(int)
    short = size - counts.sum()
    if short > 0:
        counts[np.argsort(exact - counts)[::-1][:short]] += 1
    out = np.repeat(vals, counts)
    rng.shuffle(out)
    return out


def quality_max_steps(w: WorkloadSpec) -> int:
    """Step-count support used to derive per-step error rates (the solo runs' budget)."""
    return max_steps(w, w.max_context_tokens, w.target_step_tokens_mean)


def max_steps(w: WorkloadSpec, budget_tokens: int, mean_step_tokens: float) -> int:
    """Steps that fit the generation budget at the mean step length (at least 1)."""
    return max(1, int((budget_tokens - w.prompt_tokens) // max(mean_step_tokens, 1.0)))


def design_scores(d: Design, w: WorkloadSpec) -> ScoreStats:
    """The design's verifier's score distributions of its draft's steps on the workload (a
    PRM's own model enters; a target judge's is the target)."""
    model = d.prm_placement.model if d.prm_placement is not None else None
    return d.verifier.scores(w, d.draft.model.name, d.target.model.name, model)


def design_verifier_scores(d: Design, w: WorkloadSpec,
                           params: AccuracyParams | None = None) -> ScoreStats:
    """The design's verifier's score distributions (`design_scores`); params: a fit's candidate
    (None: the shipped accuracy model), under which a PRM's discrimination is recomputed (a
    target judge's rests on its own fit)."""
    if params is None or d.verifier.is_target:
        return design_scores(d, w)
    model = d.prm_placement.model if d.prm_placement is not None else None
    return prm_scores(w, d.draft.model.name, model, params)


def design_step_probabilities(d: Design, w: WorkloadSpec,
                              params: AccuracyParams | None = None) -> StepProbabilities:
    """The dataset-average step probabilities of a speculative design (the timing's): its
    draft, target, thresholds and its verifier's score distributions; params: a fit's
    candidate (None: the shipped accuracy model)."""
    return step_probabilities(w, d.draft.model.name, d.target.model.name, d.accept_threshold,
                              d.backtrack_threshold, design_verifier_scores(d, w, params),
                              params)
