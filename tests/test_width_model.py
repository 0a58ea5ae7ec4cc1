"""The width model (dse/width/): hand-computed numbers for each term, its laws over random
parameters (hypothesis), the quadratures against finer ones, the data rules (no fit row held out,
no row dropped silently) and the shipped parameters against what they predict."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.width import judge, voting
from dse.width.accuracy import METHODS, accuracy_pct
from dse.width.difficulty import correct_count_pmf, solve_rate_nodes
from dse.width.params import WidthParams

ROOT = Path(__file__).resolve().parents[1]
RESPONSE_LEVEL = ("majority", "best-of-n", "weighted-best-of-n")

solo = st.floats(2.0, 98.0)
conc = st.floats(0.05, 20.0)
agree = st.floats(0.0, 1.0)
sep = st.floats(0.0, 5.0)
decep = st.floats(0.0, 0.4)
samples = st.integers(1, 64)
chance = st.sampled_from([0.0, 0.2, 0.25, 0.5])  # 1 / options of a multiple-choice dataset


def acc(method: str, **kw: float) -> float:
    base = {"solo_accuracy_pct": 60.0, "samples": 8, "concentration": 0.5, "agreement": 0.4,
            "separation": 1.5, "deception": 0.05, "beam_width": 2, "steps": 6.0}
    return float(accuracy_pct(method=method, **{**base, **kw}))


# ---- hand-computed numbers ----------------------------------------------------------------

def test_pass_at_n_by_hand():
    """A 0.5, c 2: p uniform on [0, 1], E[(1 - p)^3] = 1/4, pass@3 = 75%; i.i.d.: 1 - 0.5^3."""
    assert acc("pass-at-n", solo_accuracy_pct=50, concentration=2, samples=3) == pytest.approx(75)
    assert acc("pass-at-n", solo_accuracy_pct=50, concentration=math.inf,
               samples=3) == pytest.approx(87.5)


def test_multiple_choice_by_hand():
    """Four options (chi 0.25), A 62.5%: the mean solve rate is (0.625 - 0.25) / 0.75 = 0.5.
    No spread, N 2: pass@2 = 1 - (0.5 x 0.75)^2 = 85.9375%; a perfect verifier keeps a
    solving sample when one exists (0.75) and else a guess: 0.75 + 0.25 x 0.25 = 81.25%;
    maj@2 of two samples is one of them: A. Free-form (chi 0) is the plain model."""
    kw = {"solo_accuracy_pct": 62.5, "concentration": math.inf, "samples": 2, "chance": 0.25}
    assert acc("pass-at-n", **kw) == pytest.approx(85.9375)
    assert acc("best-of-n", separation=math.inf, deception=0.0, **kw) == pytest.approx(81.25)
    assert acc("majority", **kw) == pytest.approx(62.5)
    assert acc("best-of-n", chance=0.0) == acc("best-of-n")


def test_count_distribution_by_hand():
    """Uniform p: each of 0, 1, 2 correct of 2 has chance 1/3; i.i.d. at 1/2: 1/4, 1/2, 1/4."""
    np.testing.assert_allclose(correct_count_pmf(0.5, 2.0, 2), [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(correct_count_pmf(0.5, math.inf, 2), [0.25, 0.5, 0.25])


def test_majority_wins_by_hand():
    """N 3. g 1: the wrong samples agree, the correct answer needs 2 of 3. g 0: one correct and
    two different wrong answers tie three ways (1/3)."""
    np.testing.assert_allclose(voting.majority_win_given_correct(3, 1.0), [0, 0, 1, 1])
    np.testing.assert_allclose(voting.majority_win_given_correct(3, 0.0), [0, 1 / 3, 1, 1])


def test_majority_iid_by_hand():
    """No spread (c = inf), A 0.6, g 0.5, maj@3: P(K >= 2) = 0.648; K = 1 (0.288) wins a three-way
    tie when no two wrong ones agree, M ~ Bin(2, 0.5) <= 1 (0.75), chance 1/3: 0.072.
    Total 72.0%."""
    assert acc("majority", concentration=math.inf, agreement=0.5,
               samples=3) == pytest.approx(72.0)


def test_best_of_two_by_hand():
    """p 0.5, N 2, d 1, e 0: 2 (0.5) int phi(z - 1) (Phi(z - 1) + Phi(z)) / 2 dz
    = 0.5 (1/2 + Phi(1 / sqrt 2)) = 0.6301."""
    got = judge.best_is_correct(np.array([[0.5]]), np.array([2.0]), np.array([1.0]),
                                np.array([0.0]))
    assert float(got[0, 0]) == pytest.approx(0.5 * (0.5 + 0.7602499389), abs=1e-7)


def test_deception_caps_best_of_n():
    """A perfect ranking (d = inf) with deception e: the top score is a correct sample's with
    chance (p / h)(1 - (1 - h)^N), h = p + e (1 - p). p 0.2, e 0.25, N 4: h 0.4,
    0.5 (1 - 0.6^4) = 0.4352."""
    got = judge.best_is_correct(np.array([[0.2]]), np.array([4.0]), np.array([math.inf]),
                                np.array([0.25]))
    assert float(got[0, 0]) == pytest.approx(0.5 * (1 - 0.6 ** 4))


def test_params_by_hand():
    p = WidthParams(concentration={"math": 0.4, "gsm8k": 1.6}, concentration_per_log_odds=0.5,
                    agreement={"math": 0.3}, deception=0.1, separation_intercept=0.2,
                    separation_per_f1=2.0, aggregation_factor={"min": 0.9},
                    verifier_separation={"orm|outcome": 1.0, "j|llm-pairwise": 3.0})
    assert p.concentration_for("math500", 20.0) == (pytest.approx(0.8), True)
    assert p.default_concentration == pytest.approx(0.8)  # sqrt(0.4 x 1.6)
    assert p.prm_separation(70.0, "min") == pytest.approx(1.44)
    assert p.verifier("x", "product", None) == (pytest.approx(2.0), "default")
    assert p.agreement_for("olympiadbench") == (pytest.approx(0.3), False)
    mc = WidthParams(concentration={"mmlu_stem": 0.4}, concentration_per_log_odds=0.5,
                     agreement={}, deception=0.1, separation_intercept=0.2,
                     separation_per_f1=2.0, aggregation_factor={},
                     answer_chance={"mmlu_stem": 0.25})
    # 4 options, no favourite wrong option (g 0: the default of no fitted agreement is their
    # mean, none here: 0.5, so set it): A 40% is a solve rate of (0.40 - 0.25) / 0.75 = 20%,
    # c = 0.4 x 4^0.5 = 0.8; g 0.4: a guess is right with chance 0.6 x 0.25 = 0.15
    mc = replace(mc, agreement={"mmlu_stem": 0.0})
    assert mc.chance_for("mmlu_stem") == 0.25 and mc.chance_for("math") == 0.0
    assert replace(mc, agreement={"mmlu_stem": 0.4}).chance_for("mmlu_stem") == 0.15
    assert mc.concentration_for("mmlu_stem", 40.0) == (pytest.approx(0.8), True)


def test_model_half_width_line_by_hand():
    """The interval's model part: (3 + 0.6 x 5)^2 - 1.5^2 = 33.75, sqrt 5.81; a line that is
    below the rows' noise gives 0. The quantile line of y = x at 90% is y = x."""
    from dse.uncertainty.width_accuracy import model_half_width_points
    from dse.validation.width import quantile_line

    line = {"intercept": 3.0, "per_gain": 0.6, "noise": 1.5}
    np.testing.assert_allclose(model_half_width_points([-5.0, 5.0], line),
                               [math.sqrt(33.75)] * 2)
    assert float(model_half_width_points(0.0, {**line, "noise": 4.0})) == 0.0
    a, b = quantile_line(np.arange(10.0), np.arange(10.0), 0.9)
    assert (a, b) == (pytest.approx(0.0, abs=1e-9), pytest.approx(1.0))


# ---- numerics -----------------------------------------------------------------------------

def test_quadrature_against_finer_nodes():
    rng = np.random.default_rng(1)
    a, d, c = rng.uniform(3, 97, 60), rng.uniform(-1, 4, 60), rng.uniform(0.05, 3, 60)
    n = rng.choice([1, 4, 8, 64, 256, 1024], 60)
    saved = judge.Z_NODES
    judge.Z_NODES = (400, 400)
    try:
        ref = accuracy_pct(solo_accuracy_pct=a, method="best-of-n", samples=n, concentration=c,
                           separation=d, deception=0.05, n_nodes=100)
    finally:
        judge.Z_NODES = saved
    got = accuracy_pct(solo_accuracy_pct=a, method="best-of-n", samples=n, concentration=c,
                       separation=d, deception=0.05)
    assert np.max(np.abs(got - ref)) < 0.03


def test_beta_nodes_match_moments():
    p, w = solve_rate_nodes(0.1, 0.3, 16)
    a, b = 0.03, 0.27
    assert float(np.sum(w * p)) == pytest.approx(0.1)
    assert float(np.sum(w * p * p)) == pytest.approx(a * (a + 1) / ((a + b) * (a + b + 1)))


def test_vectorised_equals_scalar():
    a, n = np.array([20.0, 55.0, 90.0]), np.array([1, 8, 32])
    for m in METHODS:
        vec = accuracy_pct(solo_accuracy_pct=a, method=m, samples=n, concentration=0.4,
                           agreement=0.3, separation=1.2, deception=0.05, beam_width=2,
                           steps=6.0)
        one = [acc(m, solo_accuracy_pct=float(x), samples=int(k), concentration=0.4,
                   agreement=0.3, separation=1.2) for x, k in zip(a, n, strict=True)]
        np.testing.assert_allclose(vec, one, rtol=1e-9)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown width method"):
        acc("beam-me-up")
    with pytest.raises(ValueError, match="whole numbers"):
        acc("best-of-n", samples=2.5)
    with pytest.raises(ValueError, match="chance"):
        acc("best-of-n", chance=1.0)


# ---- laws ---------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(a=solo, c=conc, g=agree, d=sep, e=decep, s=st.floats(1.0, 12.0), chi=chance)
def test_one_sample_is_the_policy_alone(a, c, g, d, e, s, chi):
    a = max(a, 100 * chi)  # a multiple-choice policy is at or above chance
    for m in METHODS:
        got = acc(m, solo_accuracy_pct=a, concentration=c, agreement=g, separation=d,
                  deception=e, samples=1, steps=s, chance=chi)
        assert got == pytest.approx(a, abs=1e-6), m


@settings(max_examples=40, deadline=None)
@given(a=solo, c=conc, g=agree, d=st.floats(-2.0, 5.0), e=decep, n=samples, chi=chance)
def test_every_response_method_at_most_pass_at_n(a, c, g, d, e, n, chi):
    top = acc("pass-at-n", solo_accuracy_pct=a, concentration=c, samples=n, chance=chi)
    for m in RESPONSE_LEVEL:
        assert acc(m, solo_accuracy_pct=a, concentration=c, agreement=g, separation=d,
                   deception=e, samples=n, chance=chi) <= top + 1e-6, m


@settings(max_examples=40, deadline=None)
@given(a=solo, c=conc, d=sep, e=decep)
def test_pass_and_best_of_n_do_not_fall_with_n(a, c, d, e):
    ns = [1, 2, 3, 4, 8, 16, 64, 256]
    passes = [acc("pass-at-n", solo_accuracy_pct=a, concentration=c, samples=n) for n in ns]
    best = [acc("best-of-n", solo_accuracy_pct=a, concentration=c, separation=d, deception=e,
                samples=n) for n in ns]
    assert all(y >= x - 1e-9 for x, y in itertools.pairwise(passes))
    assert all(y >= x - 0.02 for x, y in itertools.pairwise(best))  # quadrature's 0.02


@settings(max_examples=40, deadline=None)
@given(p=st.floats(0.02, 0.98), g=agree)
def test_majority_rises_with_odd_n_where_the_correct_answer_is_modal(p, g):
    """Per problem (no spread): maj@N does not fall over odd N when the correct answer is the
    single most likely one, p > g (1 - p); it can fall elsewhere (Condorcet), so no law holds
    for a whole hard dataset."""
    if p <= g * (1 - p) + 1e-3:
        return
    vals = [acc("majority", solo_accuracy_pct=100 * p, concentration=math.inf, agreement=g,
                samples=n) for n in (1, 3, 5, 7, 9, 15, 31, 63)]
    assert all(y >= x - 1e-9 for x, y in itertools.pairwise(vals))


@settings(max_examples=40, deadline=None)
@given(a=solo, c=conc, n=samples, s=st.floats(1.0, 12.0))
def test_perfect_verifier_gives_pass_at_n_and_the_step_oracle(a, c, n, s):
    top = acc("pass-at-n", solo_accuracy_pct=a, concentration=c, samples=n)
    assert acc("best-of-n", solo_accuracy_pct=a, concentration=c, samples=n,
               separation=math.inf, deception=0.0) == pytest.approx(top, abs=1e-6)
    p = a / 100
    r = p ** (1 / s)
    oracle = 100 * (1 - (1 - r) ** n) ** s
    assert acc("step-search", solo_accuracy_pct=a, concentration=math.inf, samples=n,
               separation=math.inf, deception=0.0, steps=s) == pytest.approx(oracle, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(a=solo, c=conc, n=samples, e=decep, s=st.floats(1.0, 12.0))
def test_uninformative_verifier_gives_the_policy_alone(a, c, n, e, s):
    for m in ("best-of-n", "step-search"):
        assert acc(m, solo_accuracy_pct=a, concentration=c, samples=n, separation=0.0,
                   deception=e, steps=s) == pytest.approx(a, abs=1e-3), m


@settings(max_examples=30, deadline=None)
@given(a=solo, g=agree, d=sep, e=decep, n=st.integers(1, 16))
def test_no_spread_reduces_to_iid(a, g, d, e, n):
    """c -> inf: the Beta collapses on A, every formula becomes its i.i.d. form (c = inf)."""
    for m in ("pass-at-n", *RESPONSE_LEVEL):
        wide = acc(m, solo_accuracy_pct=a, concentration=1e7, agreement=g, separation=d,
                   deception=e, samples=n)
        iid = acc(m, solo_accuracy_pct=a, concentration=math.inf, agreement=g, separation=d,
                  deception=e, samples=n)
        assert wide == pytest.approx(iid, abs=2e-3), m
    assert acc("pass-at-n", solo_accuracy_pct=a, concentration=math.inf,
               samples=n) == pytest.approx(100 * (1 - (1 - a / 100) ** n))


@settings(max_examples=30, deadline=None)
@given(a=solo, c=conc, d=sep, e=decep, n=st.integers(2, 32))
def test_beam_of_width_one_is_step_search(a, c, d, e, n):
    assert acc("beam", solo_accuracy_pct=a, concentration=c, separation=d, deception=e,
               samples=n, beam_width=1) == pytest.approx(
        acc("step-search", solo_accuracy_pct=a, concentration=c, separation=d, deception=e,
            samples=n), abs=1e-4)


def test_weak_verifier_falls_below_voting_at_large_n():
    """Samples of a hard problem fail together: with a weak verifier and deception, best-of-
    1024 ends below maj@1024, both far below pass@1024."""
    kw = {"solo_accuracy_pct": 45.0, "concentration": 0.4, "agreement": 0.3, "samples": 1024}
    bon = acc("best-of-n", separation=0.5, deception=0.15, **kw)
    maj = acc("majority", **kw)
    assert bon < maj < acc("pass-at-n", **kw) - 10


# ---- data rules and the shipped files ----------------------------------------------------

def test_every_published_row_is_used_or_skipped_with_a_reason():
    from dse.validation.width_rows import build, published

    fit, held, skipped = build({"math500": 7.4, "gsm8k": 6.0})
    doc = published()
    ids = {r["id"] for t in ("row", "held_out", "other") for r in doc.get(t, [])}
    assert {r.id for r in fit} | {r.id for r in held} | {s["id"] for s in skipped} == ids
    assert all(r.fit_allowed for r in fit) and not any(r.fit_allowed for r in held)
    held_ids = {r["id"] for r in doc["held_out"]}
    assert not held_ids & {r.id for r in fit}


def test_shipped_cv_rows_are_what_the_shipped_parameters_predict():
    from dse.specs import Catalog
    from dse.validation import width
    from dse.validation.width_rows import build
    from dse.width.params import shipped

    cv = json.loads((ROOT / "dse" / "data" / "width_cv.json").read_text(encoding="utf-8"))
    cat = Catalog.load()
    fit, held, _ = build({n: float(cat.workload(n).steps_mean) for n in cat.names("workload")})
    pred = width.predict(held, shipped())
    stored = {r["id"]: r["predicted"] for r in cv["held_out"]["rows"]}
    assert len(stored) == len(held)
    for r, x in zip(held, pred, strict=True):
        assert stored[r.id] == pytest.approx(float(x), abs=2e-3), r.id
    fit_pred = width.predict(fit, shipped())
    for r, x in zip(fit, fit_pred, strict=True):
        assert cv["fit"]["rows"][r.id] == pytest.approx(float(x), abs=2e-3), r.id


@pytest.mark.slow
def test_shipped_parameters_are_current():
    """scripts/calibrate_width.py --check (several minutes: every fold refits)."""
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "calibrate_width.py"),
                        "--check"], capture_output=True, text=True, timeout=3600)
    assert p.returncode == 0, p.stdout + p.stderr
