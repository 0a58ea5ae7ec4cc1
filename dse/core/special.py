"""The four special functions the closed form needs, in numpy alone.

`dse evaluate` used scipy.special for the normal CDF and its inverse, the regularised incomplete
beta function and the inverse of the regularised lower incomplete gamma function. Importing
scipy.special costs 0.2 s, twice numpy's own import and a third of the command's wall time
(issue 27), so these are computed here:

- `ndtr(x)`, the standard normal CDF: Phi(x) = erfc(-x / sqrt 2) / 2 with erfc(z) =
  exp(-z^2) erfcx(z) and erfcx(z) (1 + z) a smooth function of u = 1 / (1 + z) in (0, 1],
  tabulated on first use (about 5 ms) as 64 degree-7 polynomials in u (Chebyshev fits at each
  piece's nodes to erfcx computed by its Taylor series for z < 1 and by Laplace's continued
  fraction, 500 levels deep, above). Agrees with scipy to 1e-15 absolute everywhere and
  1e-12 relative down to Phi = 1e-300 (tests/test_special.py);
- `ndtri(p)`: Abramowitz & Stegun 26.2.23 (error < 4.5e-4) refined by three Halley steps on
  `ndtr`;
- `betainc(a, b, x)`: the continued fraction of Numerical Recipes (3rd ed., section 6.4) by the
  modified Lentz method, on the side of x where it converges fast (x < (a + 1) / (a + b + 2));
  1e-13 absolute for shapes up to 100 (the PRM score betas), 2e-12 up to 2000, where the
  lgamma differences of its prefactor round;
- `gammaincinv(a, q)`: Halley's method on the regularised lower incomplete gamma P(a, x) (its
  series below x = a + 1, Legendre's continued fraction above), started from Wilson and
  Hilferty's cube-root normal approximation (a > 1) or the small-a power law.

scipy stays a dependency: the fits (dse.validation), the simulator's PRM score quantiles and the
tests, which check every function here against scipy over wide grids, use it.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

F64 = NDArray[np.float64]

PIECES = 64  # polynomial pieces of erfcx(z) (1 + z) over u = 1 / (1 + z) in (0, 1]
DEGREE = 7
_SQRT_PI = math.sqrt(math.pi)
_EPS = 1e-15  # relative step at which the iterations below stop
_MAX_TERMS = 10_000
_TINY = 1e-300


def _erfcx_slow(z: F64) -> F64:
    """exp(z^2) erfc(z) for z >= 0 to about 1e-15 relative: Taylor series of erf below 1,
    Laplace's continued fraction erfc(z) = exp(-z^2) / sqrt(pi) / (z + (1/2) / (z + 1 / (z +
    (3/2) / (z + ...)))) at and above. Slow; tabulated once by `_erfcx_pieces`."""
    out = np.empty_like(z)
    lo = z < 1
    zl = z[lo]
    term, total = zl.copy(), zl.copy()
    for n in range(1, 80):  # erf(z) = 2/sqrt(pi) exp(-z^2) sum (2 z^2)^n z / (1 3 5 ... (2n+1))
        term = term * 2 * zl * zl / (2 * n + 1)
        total = total + term
    out[lo] = (1 - 2 / _SQRT_PI * np.exp(-zl * zl) * total) * np.exp(zl * zl)
    zh = z[~lo]
    f = zh.copy()
    for k in range(500, 0, -1):  # evaluated from the tail, 500 levels: converged at z = 1
        f = zh + (k / 2) / f
    out[~lo] = 1 / (_SQRT_PI * f)
    return out


@cache
def _erfcx_pieces() -> F64:
    """Power-basis coefficients [DEGREE + 1, PIECES] (highest power first) of erfcx(z) (1 + z)
    on each piece of u = 1 / (1 + z), in the piece's local variable t in [-1, 1]."""
    nodes = np.cos(np.pi * (np.arange(DEGREE + 1) + 0.5) / (DEGREE + 1))
    u = (np.arange(PIECES)[None, :] + 0.5 + 0.5 * nodes[:, None]) / PIECES  # [node, piece]
    z = (1 - u) / u
    g = (_erfcx_slow(z.ravel()) * (1 + z.ravel())).reshape(z.shape)
    cheb = np.polynomial.chebyshev.chebfit(nodes, g, DEGREE)  # [DEGREE + 1, piece]
    return np.stack([np.polynomial.chebyshev.cheb2poly(cheb[:, k])[::-1]
                     for k in range(PIECES)], axis=1)


def _half_erfc_abs(x: F64) -> F64:
    """erfc(|x| / sqrt 2) / 2: the normal tail beyond |x| (in-place steps: it runs on every
    step-ahead design's grid)."""
    z = np.abs(np.ravel(x))
    z *= 1 / math.sqrt(2)
    u = 1 + z
    np.reciprocal(u, out=u)
    t = u * PIECES
    i = np.fmin(t, PIECES - 0.5).astype(np.intp)  # fmin: NaN takes a piece, t stays NaN
    t -= i
    t *= 2
    t -= 1
    c = np.take(_erfcx_pieces(), i, axis=1)
    g = c[0] * t
    for j in range(1, DEGREE):
        g += c[j]
        g *= t
    g += c[DEGREE]
    g *= u
    z *= z
    np.negative(z, out=z)
    np.exp(z, out=z)
    g *= z
    g *= 0.5
    return g.reshape(np.shape(x))


def ndtr(x: ArrayLike) -> F64:
    """The standard normal CDF Phi(x), elementwise (NaN stays NaN)."""
    xa = np.asarray(x, dtype=float)
    tail = _half_erfc_abs(xa)
    return np.where(xa < 0, tail, 1 - tail)


def ndtri(p: ArrayLike) -> F64:
    """The standard normal quantile Phi^-1(p), elementwise: -inf at 0, +inf at 1, NaN outside."""
    pa = np.asarray(p, dtype=float)
    q = np.clip(np.minimum(pa, 1 - pa), 1e-300, 0.5)  # the smaller tail
    t = np.sqrt(-2 * np.log(q))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t)
          / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t ** 3))  # A&S 26.2.23, < 4.5e-4
    for _ in range(3):  # Halley on Phi(x) = q in the lower tail: cubic from 4.5e-4
        f = ndtr(x) - q
        d = f / (np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi))  # f / Phi'(x)
        x = x - d / (1 + 0.5 * x * d)
    x = np.where(pa < 0.5, x, -x)
    x = np.where(pa == 0, -np.inf, np.where(pa == 1, np.inf, x))
    return np.where((pa < 0) | (pa > 1) | np.isnan(pa), np.nan, x)


def _beta_cf(a: float, b: float, x: float) -> float:
    """Numerical Recipes' continued fraction for I_x(a, b) / (x^a (1-x)^b / (a B(a, b))), by
    the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2)."""
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1) <= _EPS:
            break
    return h


def _betainc1(a: float, b: float, x: float) -> float:
    if not (a > 0 and b > 0 and 0 <= x <= 1):
        return math.nan
    if x == 0 or x == 1:
        return float(x)
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                 + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_cf(b, a, 1 - x) / b  # I_x(a, b) = 1 - I_1-x(b, a)


def _gamma_p(a: F64, x: F64, lga: F64) -> F64:
    """The regularised lower incomplete gamma P(a, x) for a > 0, x > 0 (lga: lgamma(a)),
    elementwise: its series below x = a + 1, 1 - Q(a, x) by Legendre's continued fraction
    (modified Lentz) above (Numerical Recipes 3rd ed., 6.2)."""
    out = np.empty_like(x)
    front = np.exp(a * np.log(x) - x - lga)
    lo = x < a + 1
    if lo.any():  # P = e^-x x^a / Gamma(a) sum_n x^n / (a (a+1) ... (a+n))
        al, xl = a[lo], x[lo]
        ap, term = al.copy(), 1 / al
        total = term.copy()
        for _ in range(_MAX_TERMS):
            ap += 1
            term *= xl / ap
            total += term
            if np.all(term < total * _EPS):
                break
        out[lo] = front[lo] * total
    hi = ~lo
    if hi.any():
        ah, xh = a[hi], x[hi]
        b = xh + 1 - ah
        c, d = np.full_like(xh, 1 / _TINY), 1 / b
        h = d.copy()
        for i in range(1, _MAX_TERMS):
            an = -i * (i - ah)
            b += 2
            d = an * d + b
            d = 1 / np.where(np.abs(d) > _TINY, d, _TINY)
            c = b + an / c
            c = np.where(np.abs(c) > _TINY, c, _TINY)
            delta = d * c
            h *= delta
            if np.all(np.abs(delta - 1) <= _EPS):
                break
        out[hi] = 1 - front[hi] * h
    return out


def _gammaincinv_start(a: F64, q: F64) -> F64:
    """Numerical Recipes' starting point (invgammp): Wilson-Hilferty's cube-root normal
    approximation for a > 1 (the normal quantile by A&S 26.2.22), the small-x power law
    P(a, x) ~ x^a / Gamma(a + 1) or the upper tail ~ e^-x below."""
    pp = np.minimum(q, 1 - q)
    t = np.sqrt(-2 * np.log(pp))
    z = (2.30753 + t * 0.27061) / (1 + t * (0.99229 + t * 0.04481)) - t
    z = np.where(q < 0.5, z, -z)
    with np.errstate(all="ignore"):  # each branch is kept only where it applies
        wh = a * np.maximum(1 - 1 / (9 * a) - z / (3 * np.sqrt(a)), 0.0) ** 3
        t = 1 - a * (0.253 + a * 0.12)
        small = np.where(q < t, (q / t) ** (1 / a), 1 - np.log1p(-(q - t) / (1 - t)))
    return np.where(a > 1, np.maximum(wh, 1e-3), small)


def gammaincinv(a: ArrayLike, q: ArrayLike) -> F64:
    """x with P(a, x) = q, the quantile q of a unit-scale gamma of shape a > 0, elementwise
    with broadcasting: 0 at q = 0, +inf at q = 1, NaN for other arguments. Numerical Recipes'
    invgammp (3rd ed., 6.2.1): Halley's method from `_gammaincinv_start`, each element
    iterated until its own step is below 1e-10 of it (the error after it is far below 1e-16)."""
    a_, q_ = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(q, dtype=float))
    shape = a_.shape
    a_, q_ = a_.ravel(), q_.ravel()
    out = np.where((a_ > 0) & (q_ == 0), 0.0, np.where((a_ > 0) & (q_ == 1), np.inf, np.nan))
    idx = np.flatnonzero((a_ > 0) & (q_ > 0) & (q_ < 1))
    aa, qq = a_[idx], q_[idx]
    lga = _lgamma_f64(aa)
    x = _gammaincinv_start(aa, qq)
    for _ in range(100):
        zero = x <= 0  # underflowed: the quantile is below the smallest double
        out[idx[zero]] = 0.0
        idx, aa, qq, lga, x = idx[~zero], aa[~zero], qq[~zero], lga[~zero], x[~zero]
        if not len(idx):
            break
        dens = np.exp((aa - 1) * np.log(x) - x - lga)  # P'(a, x)
        u = (_gamma_p(aa, x, lga) - qq) / np.where(dens > 0, dens, np.inf)
        step = u / (1 - 0.5 * np.minimum(1.0, u * ((aa - 1) / x - 1)))  # Halley
        new = x - step
        new = np.where(new <= 0, 0.5 * x, new)  # halfway to zero from where it was
        done = np.abs(step) < 1e-10 * new  # Halley is cubic: the next step would be < 1e-20
        out[idx[done]] = new[done]
        idx, aa, qq, lga, x = idx[~done], aa[~done], qq[~done], lga[~done], new[~done]
        if not len(idx):
            break
    out[idx] = x  # not converged in 100 steps (never seen): the last iterate
    return out.reshape(shape)


_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _lgamma_f64(a: F64) -> F64:
    return np.asarray(_lgamma(a), dtype=float)


# I_x(a, b) by its arguments: a search asks for the same few thresholds under the same score
# betas many times over (`dse optimize --rate 20`: 316,400 elements, 11,234 distinct), and the
# continued fraction is the cost; a stored value is the one computed, so nothing moves.
# Cleared when full (BETAINC_MEMO entries, about 200 bytes each).
BETAINC_MEMO = 1 << 17
_BETAINC: dict[tuple[float, float, float], float] = {}


def _betainc_memo(a: float, b: float, x: float) -> float:
    key = (a, b, x)
    got = _BETAINC.get(key)
    if got is None:
        got = _betainc1(a, b, x)
        if 0 < x < 1:  # the ends (and NaN) are cheap, and 0.0 would also match -0.0's key
            if len(_BETAINC) >= BETAINC_MEMO:
                _BETAINC.clear()
            _BETAINC[key] = got
    return got


_betainc_u = np.frompyfunc(_betainc_memo, 3, 1)


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> F64:
    """The regularised incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1],
    elementwise with broadcasting; NaN for other arguments. Each distinct (a, b, x) is
    computed once (`_BETAINC`)."""
    return np.asarray(_betainc_u(a, b, x), dtype=float)

