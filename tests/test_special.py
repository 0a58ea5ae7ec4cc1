"""dse.core.special against scipy.special over wide grids, at the edges, and by property.

The closed form computes its normal CDF and quantile, incomplete beta and inverse incomplete
gamma with dse.core.special (numpy only) so that `dse evaluate` does not import scipy.special (0.2
s, issue 27). These tests hold them to scipy: the golden reports (1e-9 relative) need far less.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special as scipy_special

from dse.core import special

RNG = np.random.default_rng(20261203)


def test_ndtr_matches_scipy_absolutely_and_in_the_lower_tail():
    x = np.linspace(-38.0, 38.0, 200_001)
    ref, got = scipy_special.ndtr(x), special.ndtr(x)
    assert np.max(np.abs(got - ref)) <= 2e-15
    body = np.abs(x) <= 10  # relative, where the closed form's probabilities live
    tail = (x < 0) & (ref > 1e-300)
    assert np.max(np.abs(got[body & (x < 0)] / ref[body & (x < 0)] - 1)) <= 1e-13
    assert np.max(np.abs(got[tail] / ref[tail] - 1)) <= 1e-12


def test_ndtr_by_hand_and_at_the_edges():
    # Phi(0) = 1/2; Phi(1.959963984540054) = 0.975 (the two-sided 95% point)
    assert special.ndtr(0.0) == pytest.approx(0.5, abs=1e-15)
    assert special.ndtr(1.959963984540054) == pytest.approx(0.975, rel=1e-15)
    # Phi(-x) = erfc(x / sqrt 2) / 2, math.erfc from the C library
    for x in (0.3, 1.0, 2.5, 6.0, 12.0, 30.0):
        assert special.ndtr(-x) == pytest.approx(0.5 * math.erfc(x / math.sqrt(2)), rel=1e-12)
    got = special.ndtr(np.array([-np.inf, np.inf, -40.0, 40.0, np.nan]))
    assert got[:4].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert np.isnan(got[4])
    assert special.ndtr(np.zeros((2, 3))).shape == (2, 3)


def test_ndtri_matches_scipy():
    p = np.concatenate([np.logspace(-300, -1, 3000), np.linspace(0.01, 0.99, 999),
                        1 - np.logspace(-16, -2, 200)])
    ref, got = scipy_special.ndtri(p), special.ndtri(p)
    assert np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1.0)) <= 1e-13
    edges = special.ndtri(np.array([0.0, 1.0, 0.5, -0.1, 1.1, np.nan]))
    assert edges[0] == -np.inf and edges[1] == np.inf and abs(edges[2]) <= 1e-15
    assert np.isnan(edges[3:]).all()


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-37.0, max_value=0.5))
def test_ndtri_inverts_ndtr(x):  # (above, 1 - Phi(x) has too few digits left to invert)
    assert float(special.ndtri(special.ndtr(x))) == pytest.approx(x, rel=1e-11, abs=1e-11)


@pytest.mark.parametrize("top, tol", [(100.0, 1e-13), (2000.0, 2e-12)])
def test_betainc_matches_scipy(top, tol):
    n = 20_000
    a = np.exp(RNG.uniform(math.log(0.05), math.log(top), n))
    b = np.exp(RNG.uniform(math.log(0.05), math.log(top), n))
    x = RNG.uniform(0.0, 1.0, n)
    assert np.max(np.abs(special.betainc(a, b, x) - scipy_special.betainc(a, b, x))) <= tol


def test_betainc_by_hand_and_at_the_edges():
    # I_x(1, 1) = x; I_x(2, 3) = 6x^2 - 8x^3 + 3x^4 (so 0.6875 at 1/2); I_x(a, 1) = x^a
    assert special.betainc(1.0, 1.0, 0.3) == pytest.approx(0.3, rel=1e-15)
    assert special.betainc(2.0, 3.0, 0.5) == pytest.approx(0.6875, rel=1e-15)
    assert special.betainc(3.5, 1.0, 0.7) == pytest.approx(0.7 ** 3.5, rel=1e-14)
    got = special.betainc(np.array([2.0, 2.0, 0.0, 2.0]), 3.0, np.array([0.0, 1.0, 0.5, 1.5]))
    assert got[:2].tolist() == [0.0, 1.0] and np.isnan(got[2:]).all()
    assert special.betainc(np.ones((2, 1)), np.ones(3), 0.5).shape == (2, 3)


def test_betainc_memo_returns_what_it_computed(monkeypatch):
    # a stored I_x(a, b) is the continued fraction's value bit for bit, asked again as a
    # scalar or inside an array; the memo is cleared when full; -0.0 keeps its own answer
    monkeypatch.setattr(special, "BETAINC_MEMO", 4)
    special._BETAINC.clear()
    a, b = RNG.uniform(0.5, 50.0, 6), RNG.uniform(0.5, 50.0, 6)
    x = RNG.uniform(0.01, 0.99, 6)
    first = special.betainc(a, b, x)
    assert len(special._BETAINC) <= 4
    direct = [special._betainc1(float(p), float(q), float(y))
              for p, q, y in zip(a, b, x, strict=True)]
    assert first.tolist() == direct
    assert special.betainc(a, b, x).tolist() == direct == [
        float(special.betainc(p, q, y)) for p, q, y in zip(a, b, x, strict=True)]
    assert math.copysign(1.0, float(special.betainc(2.0, 3.0, -0.0))) == -1.0
    special._BETAINC.clear()


@settings(max_examples=200, deadline=None)
@given(st.floats(0.05, 100.0), st.floats(0.05, 100.0), st.floats(0.0, 1.0))
def test_betainc_symmetry(a, b, x):
    # I_x(a, b) + I_{1-x}(b, a) = 1, at an x whose 1 - x is exact in floating point (shapes to
    # 100, the PRM score betas' range and more; above, the lgamma prefactor's rounding reaches
    # 1e-12: test_betainc_matches_scipy's second case)
    x = 1 - (1 - x)
    assert float(special.betainc(a, b, x) + special.betainc(b, a, 1 - x)) == pytest.approx(
        1.0, abs=2e-13)


def test_gammaincinv_matches_scipy():
    a = np.concatenate([np.arange(1, 200, dtype=float), RNG.uniform(0.01, 1.0, 300),
                        np.exp(RNG.uniform(0.0, math.log(5000.0), 500))])
    for q in ((np.arange(8) + 0.5) / 8, RNG.uniform(1e-12, 1 - 1e-12, (8, a.size))):
        aa, qq = np.broadcast_arrays(a[None, :], np.reshape(q, (-1, 1)) if q.ndim == 1 else q)
        ref, got = scipy_special.gammaincinv(aa, qq), special.gammaincinv(aa, qq)
        assert np.max(np.abs(got / ref - 1)) <= 1e-12


def test_gammaincinv_by_hand_and_at_the_edges():
    # shape 1 is the unit exponential: x = -ln(1 - q)
    assert special.gammaincinv(1.0, 0.75) == pytest.approx(math.log(4.0), rel=1e-14)
    # shape 2: P(2, x) = 1 - (1 + x) e^-x, so the quantile of 1 - 2/e is x = 1
    assert special.gammaincinv(2.0, 1 - 2 / math.e) == pytest.approx(1.0, rel=1e-14)
    got = special.gammaincinv(np.array([1e-9, 2.0, 2.0, 0.0, 2.0]),
                              np.array([0.875, 0.0, 1.0, 0.5, 1.5]))
    assert got[:3].tolist() == [0.0, 0.0, np.inf] and np.isnan(got[3:]).all()

