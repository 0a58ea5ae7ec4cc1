"""How a verifier (PRM or ORM) judges a policy's responses or steps, and what ranking by it buys.

Score model (signal detection, equal variance). A verifier gives each response (or step) a
latent score z on the probit scale:

    correct:                       z ~ Normal(d, 1)
    wrong, "deceptive" (share e):  z ~ Normal(d, 1)   (a wrong answer the verifier cannot tell
                                                       from a right one: reward hacking)
    wrong, the rest:               z ~ Normal(0, 1)

d is the verifier's separation (d' of signal detection theory; below 0 for a verifier that
prefers wrong answers), e in [0, 1) its deception share. Scores of different samples are
independent given the problem; the problem's solve rate p (dse.width.difficulty) decides how
many samples are correct, which is how the scores of one problem's samples are correlated.
With e > 0 ranking saturates: however many samples are drawn, the top score is a correct one
at most p / (p + e (1 - p)) of the time, so best-of-N flattens below pass@N on hard problems
(small p) and can fall below majority voting. A perfect verifier is d = inf, e = 0; an
uninformative one is d = 0 (then e does not matter).

Best-of-N (the argmax of N scores). With h = p + e (1 - p) the chance that a sample's score
comes from Normal(d, 1), F(z) = h Phi(z - d) + (1 - h) Phi(z) the CDF of one sample's score, the
top of N scores is a correct sample with probability

    P_best(p) = N p  integral phi(z - d) F(z)^(N - 1) dz                                 (1)

(N choices of the winner, it is correct with chance p, scores z, the other N - 1 below it).
Checks: N = 1 gives p; d = 0 gives N p int phi Phi^(N-1) = p; d = inf, e = 0 gives
1 - (1 - p)^N. Integrated by Gauss-Legendre on [z_lo, z_hi] where the top score lies but for
1e-12: z_lo = min(d, 0) + Phi^-1(1e-12^(1/N)), z_hi = max(d, 0) + Phi^-1(1 - 1e-12 / N).

Top-B contains a correct sample (beam search keeps B of N candidates): with w(z) the density of
a wrong sample's score times (1 - p) and W(z) its mass above z,

    P(top B all wrong) = N C(N-1, B-1) integral w(z) W(z)^(B-1) F(z)^(N-B) dz            (2)

(the B-th highest score is a wrong sample's at z, B - 1 wrong ones above it, N - B below);
B = 1 is 1 - P_best, B = N is (1 - p)^N.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numpy.typing import ArrayLike

from dse.core.arrays import F64
from dse.core.special import ndtr, ndtri
from dse.width.difficulty import lgamma

Z_NODES = (40, 48)  # Gauss-Legendre nodes over the top score's range, N <= 64 and above
# (tests: within 0.02 points of 400 nodes up to N = 1024)
HERMITE_NODES = 40  # Gauss-Hermite nodes for the moments of vote scores
TAIL = 1e-12  # mass of the top score left outside [z_lo, z_hi]


@cache
def _legendre(n: int) -> tuple[F64, F64]:
    x, w = np.polynomial.legendre.leggauss(n)
    return x, w


@cache
def _hermite(n: int) -> tuple[F64, F64]:
    """Nodes and weights for E[f(X)], X ~ Normal(0, 1) (probabilists' Hermite, weights sum 1)."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


def _phi(z: F64) -> F64:
    return np.asarray(np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi), dtype=float)


def top_score_grid(samples: F64, separation: F64) -> tuple[F64, F64]:
    """Gauss-Legendre nodes z and weights (shape S + (Z_NODES,)) over the range of the top of N
    scores (module docstring); separation finite."""
    n = np.maximum(samples, 1.0)
    lo = np.minimum(separation, 0.0) + ndtri(TAIL ** (1.0 / n))
    hi = np.maximum(separation, 0.0) + ndtri(1 - TAIL / n)
    x, w = _legendre(Z_NODES[0] if np.max(n, initial=1.0) <= 64 else Z_NODES[1])
    half = (hi - lo)[..., None] / 2
    return (lo[..., None] + half * (x + 1)), half * w


def high_share(p: ArrayLike, deception: ArrayLike) -> F64:
    """h = p + e (1 - p): the share of samples scored like correct ones."""
    p_ = np.asarray(p, dtype=float)
    e = np.asarray(deception, dtype=float)
    return np.asarray(p_ + e * (1 - p_), dtype=float)


def best_is_correct(p: F64, samples: F64, separation: F64, deception: F64) -> F64:
    """P_best(p), equation (1): the top of N scores is a correct sample's.

    p: solve rates, shape S + (Q,); samples, separation, deception: shape S (broadcast over the
    last axis of p). separation may be inf (a perfect ranking of the two score classes):
    (p / h) (1 - (1 - h)^N). Hand check (tests): p 0.5, N 2, e 0, d 1:
    P = 2 (0.5) int phi(z - 1) (0.5 Phi(z - 1) + 0.5 Phi(z)) dz = 0.5 (0.5 + Phi(1 / sqrt 2))
    = 0.6301."""
    n, d, e = (np.asarray(v, dtype=float)[..., None] for v in (samples, separation, deception))
    h = high_share(p, e)
    with np.errstate(divide="ignore", invalid="ignore"):
        perfect = np.where(h > 0, p / h * (1 - (1 - h) ** n), 0.0)
    inf = np.isinf(d[..., 0])
    if inf.all():
        return np.asarray(perfect, dtype=float)
    dd = np.where(np.isinf(separation), 0.0, np.asarray(separation, dtype=float))
    z, wz = top_score_grid(np.asarray(samples, dtype=float), dd)
    cdf_hi = ndtr(z - dd[..., None])[..., None, :]
    cdf_lo = ndtr(z)[..., None, :]
    f = h[..., None] * cdf_hi + (1 - h[..., None]) * cdf_lo
    with np.errstate(divide="ignore"):
        power = np.exp((n[..., None] - 1) * np.log(f))
    dens = (_phi(z - dd[..., None]) * wz)[..., None, :]
    out = n * p * np.sum(dens * power, axis=-1)
    return np.asarray(np.where(inf[..., None], perfect, np.clip(out, 0.0, 1.0)), dtype=float)


def one_correct_wins(samples: F64, separation: F64, deception: F64) -> F64:
    """The chance that one correct response outscores N - 1 wrong ones:
    int phi(z - d) (e Phi(z - d) + (1 - e) Phi(z))^(N - 1) dz (1 at N = 1; 1 / N at d = 0;
    shape S)."""
    n = np.asarray(samples, dtype=float)
    d = np.asarray(separation, dtype=float)
    e = np.asarray(deception, dtype=float)
    inf = np.isinf(d)
    dd = np.where(inf, 0.0, d)
    z, wz = top_score_grid(n, dd)
    f = e[..., None] * ndtr(z - dd[..., None]) + (1 - e[..., None]) * ndtr(z)
    with np.errstate(divide="ignore"):
        val = np.sum(_phi(z - dd[..., None]) * wz * np.exp((n[..., None] - 1) * np.log(f)),
                     axis=-1)
    # d = inf: the correct one ties with the deceptive ones above every plain wrong one
    k = n - 1
    tie = np.where(e > 0, (1 - (1 - e) ** (k + 1)) / np.where(e > 0, e * (k + 1), 1.0), 1.0)
    return np.asarray(np.where(inf, tie, np.clip(val, 0.0, 1.0)), dtype=float)


def top_has_correct(p: F64, samples: F64, keep: F64, separation: F64, deception: F64) -> F64:
    """1 - P(top B all wrong), equation (2): at least one of the B best-scored of N samples
    is correct (p shape S + (Q,); samples, keep = B, separation, deception shape S). B = 1 is
    P_best; B >= N is pass@N of one problem, 1 - (1 - p)^N."""
    n, b, d, e = (np.asarray(v, dtype=float) for v in (samples, keep, separation, deception))
    b = np.minimum(b, n)
    q = 1 - p
    inf = np.isinf(d)
    perfect = _top_has_correct_perfect(p, n, b, e) if inf.any() else 0.0
    dd = np.where(inf, 0.0, d)
    z, wz = top_score_grid(n, dd)
    nn = n[..., None, None]
    h = high_share(p, e[..., None])
    zz, dz = z[..., None, :], dd[..., None, None]
    ee = e[..., None, None]
    qq = q[..., None]
    wrong_dens = qq * (ee * _phi(zz - dz) + (1 - ee) * _phi(zz))
    wrong_above = qq * (ee * ndtr(dz - zz) + (1 - ee) * ndtr(-zz))
    hh = h[..., None]
    f = hh * ndtr(zz - dz) + (1 - hh) * ndtr(zz)
    bb = b[..., None, None]
    log_front = (np.log(n) + lgamma(n) - lgamma(b) - lgamma(n - b + 1))[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.exp(log_front + (bb - 1) * np.log(wrong_above) + (nn - bb) * np.log(f))
    all_wrong = np.sum(np.nan_to_num(wrong_dens * terms) * wz[..., None, :], axis=-1)
    all_wrong = np.where(b[..., None] >= n[..., None], q ** n[..., None], all_wrong)
    out = np.where(inf[..., None], perfect, 1 - all_wrong)
    return np.asarray(np.clip(out, 0.0, 1.0), dtype=float)


def _top_has_correct_perfect(p: F64, n: F64, b: F64, e: F64) -> F64:
    """Equation (2) at d = inf: the J samples scored high (Binomial(N, h)) rank at random above
    the rest, so the top B hold min(J, B) of them, each correct with chance p / h."""
    h = high_share(p, e[..., None])
    j = np.arange(int(np.max(n)) + 1, dtype=float)
    nn = n[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        logc = lgamma(nn + 1) - lgamma(j + 1) - lgamma(np.maximum(nn - j, 0) + 1)
        logpmf = logc + j * np.log(h[..., None]) + (nn - j) * np.log1p(-h[..., None])
        pmf = np.where(j <= nn, np.exp(logpmf), 0.0)
        fool = np.where(h > 0, 1 - p / h, 1.0)[..., None] ** np.minimum(j, b[..., None, None])
    return np.asarray(1 - np.sum(np.nan_to_num(pmf) * fool, axis=-1), dtype=float)


def vote_score_moments(separation: F64, deception: F64) -> tuple[F64, F64, F64, F64]:
    """Moments of the score a weighted vote sums, s = Phi(z - d / 2) in (0, 1) (a probability
    of being right, symmetric: a correct response's s and a plain wrong one's 1 - s are equally
    distributed; d = 0: both uniform): (mean, variance) of a correct response's s and (mean,
    second moment) of a wrong one's (deceptive share e scored as correct). d = inf: 1 and 0
    exactly."""
    d = np.asarray(separation, dtype=float)
    e = np.asarray(deception, dtype=float)
    x, w = _hermite(HERMITE_NODES)
    inf = np.isinf(d)
    half = np.where(inf, 0.0, d / 2)[..., None]
    hi = ndtr(x + half)
    lo = ndtr(x - half)
    m_c, s_c = np.sum(w * hi, axis=-1), np.sum(w * hi * hi, axis=-1)
    m_l, s_l = np.sum(w * lo, axis=-1), np.sum(w * lo * lo, axis=-1)
    m_c, s_c = np.where(inf, 1.0, m_c), np.where(inf, 1.0, s_c)
    m_l, s_l = np.where(inf, 0.0, m_l), np.where(inf, 0.0, s_l)
    m_w = e * m_c + (1 - e) * m_l
    s_w = e * s_c + (1 - e) * s_l
    return m_c, np.maximum(s_c - m_c ** 2, 0.0), m_w, s_w
