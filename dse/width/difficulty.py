"""Problem difficulty: each problem of a dataset has its own solve rate for a policy.

A policy's per-problem solve rate p (the chance that one sample of that problem is right) is
spread over the dataset as

    p ~ Beta(A c, (1 - A) c)        mean A (the policy's solo accuracy), concentration c > 0.

Small c puts the mass near 0 and 1 (most problems always or never solved: samples of one
problem are strongly correlated); c -> infinity gives every problem the same rate A (i.i.d.
samples). Every width method is an average over this distribution of a per-problem accuracy
that depends on p alone, taken here by Gauss-Jacobi quadrature in p (exact for polynomials in p
of degree < 2 n under the Beta weight, including its endpoint singularities when A c < 1 or
(1 - A) c < 1).

Gauss-Jacobi nodes (Golub and Welsch 1969): for the weight (1 - x)^alpha (1 + x)^beta on
[-1, 1] the monic Jacobi recurrence gives the symmetric tridiagonal matrix

    J[n, n]     = (beta^2 - alpha^2) / ((2n + s)(2n + s + 2)),     s = alpha + beta
                  (n = 0: (beta - alpha) / (s + 2))
    J[n-1, n]^2 = 4 n (n + alpha)(n + beta)(n + s) / ((2n + s)^2 (2n + s + 1)(2n + s - 1))
                  (n = 1: 4 (1 + alpha)(1 + beta) / ((2 + s)^2 (3 + s)))

whose eigenvalues are the nodes and the squared first components of its eigenvectors the
weights (normalised to 1). With x = 2 p - 1, alpha = (1 - A) c - 1 and beta = A c - 1 the
weight is the Beta density.

Multiple choice. On a dataset whose answers are one of k options a sample that does not solve
its problem still lands on the right option by chance chi (at most 1 / k:
dse.width.params.WidthParams.chance_for): the Beta is then of the solve rate q (mean
E[q] = (A - chi) / (1 - chi), `solve_rate_mean`) and one sample is right with
p = q + (1 - q) chi (dse.width.accuracy).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numpy.typing import ArrayLike

from dse.core.arrays import F64

DEFAULT_NODES = 16  # quadrature nodes in p (tests: within 0.02 points of 100 nodes to N = 1024)
MIN_SHAPE = 1e-9  # Beta shapes are clipped here (A = 0 or 1 is a point mass, handled apart)

_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def lgamma(x: ArrayLike) -> F64:
    """log Gamma(x), elementwise (math.lgamma on each element)."""
    return np.asarray(_lgamma(np.asarray(x, dtype=float)), dtype=float)


@cache
def _log_factorials(n_max: int) -> F64:
    table = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n_max + 1, dtype=float)))])
    table.setflags(write=False)
    return table


def log_choose(n: ArrayLike, k: ArrayLike) -> F64:
    """log C(n, k) for whole numbers 0 <= k <= n (elementwise; a cached table of log n!)."""
    n_ = np.asarray(n, dtype=np.int64)
    k_ = np.asarray(k, dtype=np.int64)
    table = _log_factorials(int(np.max(n_, initial=0)))
    return np.asarray(table[n_] - table[k_] - table[n_ - k_], dtype=float)


def beta_shapes(solo_accuracy: ArrayLike, concentration: ArrayLike) -> tuple[F64, F64]:
    """(A c, (1 - A) c): the Beta shapes of the solve rate (A a fraction in [0, 1])."""
    a = np.asarray(solo_accuracy, dtype=float)
    c = np.asarray(concentration, dtype=float)
    return a * c, (1 - a) * c


def _jacobi_nodes(alpha: F64, beta: F64, n: int) -> tuple[F64, F64]:
    """Gauss-Jacobi nodes on [-1, 1] and weights summing to 1, for arrays of alpha, beta > -1
    (any shape S): arrays of shape S + (n,)."""
    s = alpha + beta
    k = np.arange(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        two = 2 * k + s[..., None]
        diag = (beta[..., None] ** 2 - alpha[..., None] ** 2) / (two * (two + 2))
        diag[..., 0] = (beta - alpha) / (s + 2)
        kk = k[1:]
        two1 = 2 * kk + s[..., None]
        off2 = (4 * kk * (kk + alpha[..., None]) * (kk + beta[..., None]) * (kk + s[..., None])
                / (two1 ** 2 * (two1 + 1) * (two1 - 1)))
    if n > 1:
        off2[..., 0] = 4 * (1 + alpha) * (1 + beta) / ((2 + s) ** 2 * (3 + s))
    jac = np.zeros((*s.shape, n, n))
    idx = np.arange(n)
    jac[..., idx, idx] = diag
    if n > 1:
        off = np.sqrt(np.maximum(off2, 0.0))
        jac[..., idx[1:], idx[:-1]] = off
        jac[..., idx[:-1], idx[1:]] = off
    x, vec = np.linalg.eigh(jac)
    w = vec[..., 0, :] ** 2
    return x, w / w.sum(axis=-1, keepdims=True)


def solve_rate_nodes(solo_accuracy: ArrayLike, concentration: ArrayLike,
                     n_nodes: int = DEFAULT_NODES) -> tuple[F64, F64]:
    """Quadrature over the per-problem solve rate: (nodes p, weights) of shape S + (n_nodes,)
    where S is the broadcast shape of the arguments, so that E[f(p)] = sum(w f(p), axis=-1).

    solo_accuracy: A, a fraction in [0, 1]; concentration: c > 0, np.inf for no spread (every
    node at A, i.e. i.i.d. samples). A = 0 or 1 is a point mass at A whatever c.
    E.g. A 0.5, c 2: Beta(1, 1), uniform: the nodes are Gauss-Legendre's, mapped to [0, 1]."""
    a_, c_ = np.broadcast_arrays(np.asarray(solo_accuracy, dtype=float),
                                 np.asarray(concentration, dtype=float))
    pairs, inverse = np.unique(np.stack([a_.ravel(), c_.ravel()]), axis=1, return_inverse=True)
    if pairs.shape[1] < a_.size:  # many rows share a policy and dataset: solve each pair once
        p_u, w_u = solve_rate_nodes(pairs[0], pairs[1], n_nodes)
        idx = inverse.reshape(a_.shape)
        return p_u[idx], w_u[idx]
    point = ~np.isfinite(c_) | (a_ <= 0) | (a_ >= 1)
    ca = np.where(point, 1.0, c_)
    aa = np.clip(a_, 0.0, 1.0)
    shape_a = np.maximum(np.where(point, 0.5, aa) * ca, MIN_SHAPE)
    shape_b = np.maximum((1 - np.where(point, 0.5, aa)) * ca, MIN_SHAPE)
    x, w = _jacobi_nodes(shape_b - 1, shape_a - 1, n_nodes)
    p = np.clip((1 + x) / 2, 0.0, 1.0)
    first = np.zeros(n_nodes)
    first[0] = 1.0
    p = np.where(point[..., None], aa[..., None], p)
    w = np.where(point[..., None], first, w)
    return p, w


def expected_power_of_miss(solo_accuracy: ArrayLike, concentration: ArrayLike,
                           samples: ArrayLike) -> F64:
    """E[(1 - p)^N]: the chance that all N samples of a random problem are wrong, in closed
    form, B(a, b + N) / B(a, b) = Gamma(b + N) Gamma(a + b) / (Gamma(b) Gamma(a + b + N)) with
    a = A c, b = (1 - A) c; (1 - A)^N without spread (c = inf).
    E.g. A 0.5, c 2 (uniform p), N 1: 1/2; N 3: E[(1 - p)^3] = 1/4."""
    a_, c_, n_ = np.broadcast_arrays(np.asarray(solo_accuracy, dtype=float),
                                     np.asarray(concentration, dtype=float),
                                     np.asarray(samples, dtype=float))
    iid = (1 - a_) ** n_
    finite = np.isfinite(c_) & (a_ > 0) & (a_ < 1)
    ca = np.where(finite, c_, 1.0)
    a, b = np.where(finite, a_, 0.5) * ca, (1 - np.where(finite, a_, 0.5)) * ca
    log_e = lgamma(b + n_) + lgamma(a + b) - lgamma(b) - lgamma(a + b + n_)
    return np.asarray(np.where(finite, np.exp(log_e), iid), dtype=float)


def pass_at_n(solo_accuracy: ArrayLike, concentration: ArrayLike, samples: ArrayLike) -> F64:
    """pass@N as a fraction: 1 - E[(1 - p)^N] (a problem counts if any of N samples is right).
    Hand check: A 0.5, c 2, N 3: 1 - 1/4 = 0.75; i.i.d. (c = inf): 1 - 0.5^3 = 0.875."""
    return 1 - expected_power_of_miss(solo_accuracy, concentration, samples)


def correct_count_pmf(solo_accuracy: ArrayLike, concentration: ArrayLike, samples: int) -> F64:
    """P(K = k), k = 0..N: how many of N samples of a random problem are correct, exactly:
    beta-binomial C(N, k) B(k + a, N - k + b) / B(a, b) with a = A c, b = (1 - A) c (binomial
    at A without spread: c = inf, or A = 0 or 1). Shape S + (N + 1,).
    E.g. A 0.5, c 2 (uniform p), N 2: [1/3, 1/3, 1/3]; c = inf: [1/4, 1/2, 1/4]."""
    a_, c_ = np.broadcast_arrays(np.asarray(solo_accuracy, dtype=float),
                                 np.asarray(concentration, dtype=float))
    n = float(samples)
    k = np.arange(samples + 1, dtype=float)
    logc = log_choose(samples, np.arange(samples + 1))
    iid = ~np.isfinite(c_) | (a_ <= 0) | (a_ >= 1)
    aa = np.clip(a_, 0.0, 1.0)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_iid = logc + np.where(k > 0, k * np.log(aa), 0.0) + np.where(
            k < n, (n - k) * np.log1p(-aa), 0.0)
    ca = np.where(iid, 1.0, c_)[..., None]
    sa = np.where(iid, 0.5, aa[..., 0])[..., None] * ca
    sb = ca - sa
    log_bb = (logc + lgamma(k + sa) + lgamma(n - k + sb) - lgamma(n + ca)
              + lgamma(ca) - lgamma(sa) - lgamma(sb))
    return np.asarray(np.exp(np.where(iid[..., None], log_iid, log_bb)), dtype=float)


def solve_rate_mean(solo_accuracy: ArrayLike, chance: ArrayLike) -> F64:
    """The mean solve rate E[q] behind a solo accuracy A on a multiple-choice dataset: a sample
    that does not solve its problem still picks the right option with chance chi (1 / options;
    0 for a free-form answer), so A = E[q] + (1 - E[q]) chi and E[q] = (A - chi) / (1 - chi),
    clipped to [0, 1] (a policy at or below chance solves nothing). E.g. A 0.72, chi 0.25:
    0.47 / 0.75 = 0.6267."""
    a = np.asarray(solo_accuracy, dtype=float)
    chi = np.asarray(chance, dtype=float)
    return np.asarray(np.clip((a - chi) / np.where(chi < 1, 1 - chi, 1.0), 0.0, 1.0),
                      dtype=float)


DEFAULT_BINS = 32  # equal-probability bins of the solve rate (dse.model.workflow's chain accuracy)
TAIL_EDGE = 1e-12  # a bin edge this close to 0 or 1 is taken as at it (solve_rate_bins)


def beta_quantile(shape_a: float, shape_b: float, u: ArrayLike) -> tuple[F64, F64]:
    """(x, 1 - x) with I_x(a, b) = u, elementwise over u in (0, 1), both to full relative
    precision: x by bisection on log x (60 halvings over [1e-300, 1]: the quantiles lie far
    below 1e-16 when a << 1, where most mass sits at 0) and 1 - x the same way through
    I_{1-x}(b, a) = 1 - u (mass at 1 when b << 1); the smaller of the two is kept and the other
    is 1 minus it."""
    from dse.core.special import betainc

    uu = np.asarray(u, dtype=float)

    def small_root(a: float, b: float, target: F64) -> F64:
        lo = np.full(target.shape, math.log(1e-300))
        hi = np.zeros(target.shape)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            below = betainc(a, b, np.exp(mid)) < target
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return np.asarray(np.exp(0.5 * (lo + hi)), dtype=float)

    x = small_root(shape_a, shape_b, uu)
    y = small_root(shape_b, shape_a, 1 - uu)
    low = x <= y
    return (np.asarray(np.where(low, x, 1 - y), dtype=float),
            np.asarray(np.where(low, 1 - x, y), dtype=float))


@cache
def solve_rate_bins(solo_accuracy: float, concentration: float, bins: int = DEFAULT_BINS
                    ) -> F64:
    """The per-problem solve rate in `bins` equal-probability bins of its Beta (mean A,
    concentration c): each bin's conditional mean E[p | bin], so that their average is A exactly
    (a quantity linear in p is exact; others within a bin's spread). Bins of two policies with
    the same index are the same quantile of difficulty (a comonotone coupling: the problems a
    weaker policy solves are the easier ones for a stronger one too). Read-only, shape (bins,).

    With a = A c, b = (1 - A) c, the mass of p below an edge x is E[p 1{p < x}] =
    A I_x(a + 1, b) and above it A I_{1-x}(b, a + 1); a bin's mean is the difference of the
    lower (or, above the median, the upper) masses at its edges times the number of bins, so
    that bins near p = 1 keep their precision. A = 0 or 1, or c = inf: every bin at A.
    E.g. A 0.5, c 2 (uniform p), 2 bins: [0.25, 0.75]."""
    from dse.core.special import betainc

    a_pct = min(max(solo_accuracy, 0.0), 1.0)
    if not math.isfinite(concentration) or a_pct <= 0.0 or a_pct >= 1.0:
        out = np.full(bins, a_pct)
    else:
        sa, sb = a_pct * concentration, (1 - a_pct) * concentration
        u = np.arange(1, bins) / bins
        x, y = beta_quantile(sa, sb, u)
        # an edge within TAIL_EDGE of 0 (of 1) holds mass at p ~ 0 below it (p ~ 1 above it):
        # E[p 1{p < x}] <= x u and E[p 1{p > 1 - y}] = (1 - u) (1 - O(y)), exact to 1e-12;
        # this is also where the bisection's floor (1e-300) leaves the edge unresolved, which
        # happens for the tiny shapes of datasets most problems of which a strong model
        # always solves (c ~ 0.01)
        low_part = np.where(x < TAIL_EDGE, 0.0, a_pct * betainc(sa + 1, sb, x))
        high_part = np.where(y < TAIL_EDGE, 1 - u, a_pct * betainc(sb, sa + 1, y))
        below = np.concatenate([[0.0], low_part, [a_pct]])
        above = np.concatenate([[a_pct], high_part, [0.0]])
        upper = np.concatenate([[False], y < x, [True]])  # edges nearer 1 than 0
        lo_up, hi_up = upper[:-1], upper[1:]
        mass = np.where(lo_up, above[:-1] - above[1:],
                        np.where(hi_up, a_pct - below[:-1] - above[1:],
                                 below[1:] - below[:-1]))
        out = np.clip(mass * bins, 0.0, 1.0)
    out.setflags(write=False)
    return np.asarray(out, dtype=float)
