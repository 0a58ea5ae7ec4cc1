"""The speculative chain's accuracy over the problems' difficulty
(dse.model.workflow.chain_accuracy_pct, dse.width.difficulty.solve_rate_bins): its limits and the
laws that keep a PRM-checked rewrite from gaining what sampling cannot reach (issue 38, section
1)."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.model.discrimination import ScoreStats, shipped
from dse.model.workflow import (
    beta_cdf,
    chain_accuracy_pct,
    problem_solve_rates,
    quality_max_steps,
    steps_distribution,
    steps_pgf,
)
from dse.specs import Catalog
from dse.width.difficulty import beta_quantile, solve_rate_bins

DATASETS = ("gaokao2023en", "gsm8k", "math500", "olympiadbench")


@functools.cache
def catalog() -> Catalog:
    return Catalog.load()


def scores_of(good_mean: float, bad_mean: float, kappa: float = 8.0) -> ScoreStats:
    return ScoreStats(good_mean * kappa, (1 - good_mean) * kappa, bad_mean * kappa,
                      (1 - bad_mean) * kappa, "test")


def test_solve_rate_bins_by_hand():
    """A 0.5, c 2 is the uniform: 2 bins [0, 1/2], [1/2, 1] have means 1/4 and 3/4; 4 bins
    1/8, 3/8, 5/8, 7/8. No spread (c = inf) or A at 0 or 1: every bin at A."""
    assert solve_rate_bins(0.5, 2.0, 2) == pytest.approx([0.25, 0.75])
    assert solve_rate_bins(0.5, 2.0, 4) == pytest.approx([0.125, 0.375, 0.625, 0.875])
    assert solve_rate_bins(0.3, float("inf"), 4) == pytest.approx([0.3] * 4)
    assert solve_rate_bins(1.0, 0.5, 3) == pytest.approx([1.0] * 3)


@settings(max_examples=40, deadline=None)
@given(a=st.floats(0.001, 0.999), c=st.floats(0.001, 30.0))
def test_solve_rate_bins_keep_the_mean_and_the_order(a, c):
    """The bins' average is A (their conditional means), they rise with the bin (a quantile
    order) and lie in [0, 1], for the small concentrations the width fit gives (0.02: nearly
    every problem always or never solved) up to nearly i.i.d. ones."""
    b = solve_rate_bins(a, c)
    assert float(b.mean()) == pytest.approx(a, abs=1e-9)
    assert np.all(np.diff(b) >= -1e-12)
    assert np.all((b >= 0) & (b <= 1))


def test_beta_quantile_matches_scipy_where_scipy_resolves_it():
    from scipy import stats

    for a, b in ((0.3, 0.7), (2.0, 5.0), (0.062, 0.013)):
        u = np.array([0.05, 0.2, 0.5, 0.8, 0.95])
        x, y = beta_quantile(a, b, u)
        assert x == pytest.approx(stats.beta.ppf(u, a, b), rel=1e-6, abs=1e-12)
        assert x + y == pytest.approx(1.0)


def _chain(w, draft, target, ta, tb, scores, beta, params=None):
    s_vals, s_p = steps_distribution(w, quality_max_steps(w))
    return float(chain_accuracy_pct(w, draft, target, ta, tb, scores, beta, s_vals, s_p,
                                    params))


def _step_search_pct(w, model: str, scores: ScoreStats, candidates: int) -> float:
    """Step-level search under the same verifier: each step keeps the best-scored of N
    candidates of the policy, drawn at the problem's own rate (dse.model.workflow's bins and steps);
    P(best is good) = N r int f_g(z) F(z)^(N - 1) dz with F = r F_g + (1 - r) F_b, by the
    midpoint rule on 20,000 cells of the score range. The reference the laws compare with."""
    from dse.model.workflow import problem_step_error_rates

    s_vals, s_p = steps_distribution(w, quality_max_steps(w))
    r = 1 - problem_step_error_rates(w, model)  # per bin
    z = (np.arange(20000) + 0.5) / 20000
    f_g = np.diff(beta_cdf(np.linspace(0, 1, 20001), scores.good_alpha, scores.good_beta))
    cdf_g = beta_cdf(z, scores.good_alpha, scores.good_beta)
    cdf_b = beta_cdf(z, scores.bad_alpha, scores.bad_beta)
    big_f = r[:, None] * cdf_g + (1 - r[:, None]) * cdf_b
    best = candidates * r * (f_g * big_f ** (candidates - 1)).sum(axis=1)
    ok = np.clip(best, 0, 1)[:, None] ** s_vals
    return float(100 * (ok * s_p).sum(axis=1).mean())


@settings(max_examples=25, deadline=None)
@given(data=st.data(), dataset=st.sampled_from(DATASETS), beta=st.floats(0.0, 1.0))
def test_accept_all_is_the_draft_and_reject_all_the_target(data, dataset, beta):
    """Threshold 0 keeps every draft step (the draft's solo accuracy, exactly, whatever the
    backtrack share, the backtrack threshold and the in-chain factor); threshold 1 rewrites
    every one: forward only, the target's solo accuracy exactly. (With backtracking a rewrite
    scored below the backtrack threshold is replaced by another sample: the target with a
    PRM-gated retry, at least the target alone.)"""
    w = catalog().workload(dataset)
    models = sorted(w.accuracy)
    draft = data.draw(st.sampled_from(models))
    target = data.draw(st.sampled_from(models))
    tb = data.draw(st.floats(0.0, 1.0))
    sc = scores_of(data.draw(st.floats(0.55, 0.95)), data.draw(st.floats(0.05, 0.5)))
    p = replace(shipped(), in_chain_error_factor={f"{draft} -> {target}": 1.7})
    assert _chain(w, draft, target, 0.0, tb, sc, beta, p) == pytest.approx(
        w.accuracy[draft], abs=1e-6)
    assert _chain(w, draft, target, 1.0, tb, sc, 0.0, p) == pytest.approx(
        w.accuracy[target], abs=1e-6)
    assert _chain(w, draft, target, 1.0, tb, sc, beta, p) >= w.accuracy[target] - 1e-6


# derandomized: a random search found the law broken by 0.15 points in one corner (the
# expected failure below); CI must not fail at random on it
@settings(max_examples=25, deadline=None, derandomize=True)
@given(data=st.data(), dataset=st.sampled_from(DATASETS), ta=st.floats(0.01, 0.99),
       nesting=st.floats(0.0, 1.0))
def test_self_speculation_is_at_most_a_step_search(data, dataset, ta, nesting):
    """The draft equal to the target: forward RSD at any threshold keeps a step or replaces it
    with another sample of the same policy, so it is at most a step search with 2 candidates
    ranked by the same verifier; with backtracking (any share, any backtrack threshold) a
    failed rewrite gets one more sample, at most a step search with 3. The old model, with
    errors independent of the problem, gave the Math-7B +9.4 points here (issue 38)."""
    w = catalog().workload(dataset)
    model = data.draw(st.sampled_from(sorted(w.accuracy)))
    sc = scores_of(data.draw(st.floats(0.55, 0.95)), data.draw(st.floats(0.05, 0.5)))
    p = replace(shipped(), error_nesting=nesting)
    forward = _chain(w, model, model, ta, ta, sc, 0.0, p)
    assert forward <= _step_search_pct(w, model, sc, 2) + 0.02
    tb = data.draw(st.floats(0.0, 1.0))
    beta = data.draw(st.floats(0.0, 1.0))
    assert _chain(w, model, model, ta, tb, sc, beta, p) <= _step_search_pct(w, model, sc, 3) + 0.02


@pytest.mark.xfail(strict=True, reason="the law is not a theorem: a threshold keeps a good "
                   "first sample that a best-of-2 ranking can lose to a higher-scored bad one")
def test_self_speculation_above_a_step_search_in_one_corner():
    """A random search (hypothesis, 2026-12-07) found forward RSD above step search with 2
    candidates: Llama-3.1-70B-Instruct (94.1% on GSM8K) as its own draft, accept threshold
    0.5, a PRM whose good steps score 0.945 on average and bad ones 0.25, errors not nested:
    96.155% against 96.001%. Accepting a first sample that clears the threshold keeps a good
    step that a ranking of two can lose to a bad one scored higher, so RSD is not below step
    search everywhere; by 0.15 points here, on a strong policy (docs/model.md)."""
    w = catalog().workload("gsm8k")
    m = "llama-3.1-70b-instruct"
    sc = scores_of(0.9453125, 0.25)
    p = replace(shipped(), error_nesting=0.0)
    assert _chain(w, m, m, 0.5, 0.5, sc, 0.0, p) <= _step_search_pct(w, m, sc, 2) + 0.02


def test_self_speculation_gains_little_on_math500():
    """The issue's case: Qwen2.5-Math-7B-Instruct as its own draft with the Qwen PRM at
    threshold 0.8 on MATH500 gains less than the width model's step search with 3 candidates
    of the same policy can (a few points), not the 9-13 points of the old model."""
    from dse.width.accuracy import accuracy_pct
    from dse.width.params import shipped as width_params

    w = catalog().workload("math500")
    m = "qwen2.5-math-7b-instruct"
    sc = scores_of(0.82, 0.3)
    gain = _chain(w, m, m, 0.8, 0.8, sc, 1.0) - w.accuracy[m]
    wp = width_params()
    c, _ = wp.concentration_for("math500", w.accuracy[m])
    d, _ = wp.verifier("qwen2.5-math-prm-7b", "product", 77.6)
    search3 = float(accuracy_pct(solo_accuracy_pct=w.accuracy[m], method="step-search",
                                 samples=3, concentration=c, separation=d,
                                 deception=wp.deception, steps=w.steps_mean))
    assert 0.0 <= gain <= max(search3 - w.accuracy[m], 0.0) + 1.0
    assert gain < 3.0


def test_problem_solve_rates_use_the_width_models_spread():
    """Each model's bins come from its solo accuracy and the width model's concentration for
    the dataset (MATH500 shares MATH's): their mean is the solo accuracy, and a model's pass@8
    over them is the width model's closed form within the bins' resolution."""
    from dse.width.difficulty import pass_at_n
    from dse.width.params import shipped as width_params

    w = catalog().workload("math500")
    m = "qwen2.5-math-1.5b-instruct"
    p = problem_solve_rates(w, m)
    assert float(p.mean()) * 100 == pytest.approx(w.accuracy[m])
    c, fitted = width_params().concentration_for("math500", w.accuracy[m])
    assert fitted
    exact = float(pass_at_n(w.accuracy[m] / 100, c, 8))
    assert float(np.mean(1 - (1 - p) ** 8)) == pytest.approx(exact, abs=0.02)


def test_held_out_rsd_file_is_current():
    """scripts/validate_accuracy.py --check (a few seconds): dse/data/accuracy_held_out.json
    holds what the shipped model predicts for the held-out RSD rows, with their intervals."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, str(root / "scripts" / "validate_accuracy.py"),
                        "--check"], capture_output=True, text=True, cwd=root, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "current" in r.stdout


def test_steps_pgf_by_hand_and_against_the_powers():
    """E_S[z^S] by Horner's rule: S in {1, 2} with (0.5, 0.5) at z = 0.9 is 0.45 + 0.405; on
    the workloads' step distributions it equals the sum of powers it replaces to rounding."""
    assert steps_pgf(np.array([0.9]), np.array([1, 2]), np.array([0.5, 0.5]))[0] == \
        pytest.approx(0.855, rel=1e-15)
    z = np.linspace(0.0, 1.0, 41).reshape(41, 1) * np.array([1.0, 0.99])
    for name in DATASETS:
        s_vals, s_p = steps_distribution(catalog().workload(name), 120)
        want = (z[..., None] ** s_vals * s_p).sum(-1)
        np.testing.assert_allclose(steps_pgf(z, s_vals, s_p), want, rtol=1e-12, atol=1e-300)


@given(st.lists(st.integers(1, 60), min_size=1, max_size=8, unique=True),
       st.floats(0.0, 1.0))
def test_steps_pgf_is_the_expectation_for_any_support(support, z):
    """Any set of step counts (not consecutive, any order) with equal weights."""
    s = np.array(support)
    p = np.full(s.size, 1.0 / s.size)
    assert steps_pgf(np.array(z), s, p) == pytest.approx(float((z ** s * p).sum()), rel=1e-12,
                                                         abs=1e-300)
