"""Voting over the final answers of N samples of one problem: plain majority and verifier-
weighted (scores summed per answer).

Wrong answers. A wrong sample of a problem gives that problem's one most common wrong answer
with probability g (the agreement), otherwise an answer of its own that no other sample shares
(dispersed). So given K = k correct samples of N, the count M of the top wrong answer is
Binomial(N - k, g), and the other N - k - M wrong samples are singletons. g = 0: every wrong
answer differs; g = 1: all wrong samples agree.

Majority (maj@N), ties split at random. With K = k:
    k = 0:   the correct answer cannot win;
    k = 1:   it wins only in an N-way tie of singletons, M <= 1: P(M <= 1) / N;
    k >= 2:  it beats every singleton; against the top wrong answer P(M < k) + P(M = k) / 2.
maj@N = sum_k P(K = k) W_N[k], exact, with K beta-binomial over the dataset's problems
(dse.width.difficulty.correct_count_pmf). maj@1 = p; maj@2 = p too (a tie
of one correct and one wrong is split). maj@N rises with odd N for every problem on which the
correct answer is the most common one (p > g (1 - p)), and falls towards 0 on the others: that
is voting, and averaged over difficulty maj@N can fall with N on a hard dataset (Condorcet).

Weighted vote (Math-Shepherd's "SC + RM", 2502.06703's "PRM-Vote"): every response's score
s = Phi(z - d / 2) (dse.width.judge.vote_score_moments) is summed per final answer, the largest
sum wins. Given K = k, the correct sum S_c has k terms and the top wrong answer's sum T its M
terms. Normal approximation (stated): S_c - T is taken as normal with the exact mean and
variance of the two sums (given M >= 1, resp. M >= 2 for k = 1), and
    k >= 2: win = P(M = 0) + P(M >= 1) Phi(E[S_c - T | M >= 1] / sd)   (a sum of two or more
            scores is taken to beat every singleton);
    k = 1:  all answers singletons when M <= 1: the correct one wins if its score is the top of
            N (dse.width.judge.one_correct_wins, exact); M >= 2: the normal approximation.
So weighted@1 = p exactly and weighted@N <= pass@N (k = 0 never wins).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dse.core.arrays import F64
from dse.core.special import ndtr
from dse.width.difficulty import log_choose
from dse.width.judge import one_correct_wins, vote_score_moments


@lru_cache(maxsize=64)
def _top_wrong_counts(n_samples: int, agreement: float) -> F64:
    """P(M = m | K = k) for M ~ Binomial(N - k, g): matrix [k, m], k, m = 0..N."""
    n = n_samples
    k = np.arange(n + 1, dtype=float)[:, None]
    m = np.arange(n + 1, dtype=float)[None, :]
    rest = n - k
    g = agreement
    with np.errstate(divide="ignore", invalid="ignore"):
        logc = log_choose(np.maximum(rest, 0), np.minimum(m, np.maximum(rest, 0)))
        hit = np.where(m > 0, m * np.log(g), 0.0) if g > 0 else np.where(m > 0, -np.inf, 0.0)
        miss = (np.where(rest - m > 0, (rest - m) * np.log1p(-g), 0.0) if g < 1
                else np.where(rest - m > 0, -np.inf, 0.0))
        logp = logc + hit + miss
    out = np.where(m <= rest, np.exp(logp), 0.0)
    out.setflags(write=False)
    return np.asarray(out, dtype=float)


@lru_cache(maxsize=64)
def majority_win_given_correct(n_samples: int, agreement: float) -> F64:
    """W_N[k]: the chance that the correct answer wins the majority vote given k correct of N
    samples (module docstring), k = 0..N. E.g. N 3, g 1: [0, 0, 1, 1]; N 3, g 0:
    [0, 1/3, 1, 1]."""
    n = n_samples
    pm = _top_wrong_counts(n, agreement)
    k = np.arange(n + 1)
    below = np.cumsum(pm, axis=1)  # P(M <= m | k)
    win = np.zeros(n + 1)
    for kk in k[2:]:
        win[kk] = below[kk, kk - 1] + 0.5 * pm[kk, kk]
    if n >= 1:
        win[1] = below[1, min(1, n - 1)] / n
    win.setflags(write=False)
    return win


def majority(count_pmf: F64, agreement: float) -> F64:
    """maj@N from the distribution of the number of correct samples (shape S + (N + 1,),
    dse.width.difficulty.correct_count_pmf): sum_k P(K = k) W_N[k], exact."""
    n = count_pmf.shape[-1] - 1
    return np.asarray(count_pmf @ majority_win_given_correct(n, float(agreement)), dtype=float)


def weighted_win_given_correct(n_samples: int, agreement: F64, separation: F64,
                               deception: F64) -> F64:
    """The chance that the correct answer has the largest score sum given k correct of N,
    k = 0..N (module docstring; normal approximation); arguments of shape S, result
    S + (N + 1,)."""
    n = n_samples
    g = np.asarray(agreement, dtype=float)[..., None]
    m_c, v_c, m_w, s_w = (x[..., None] for x in vote_score_moments(separation, deception))
    k = np.arange(n + 1, dtype=float)
    rest = n - k
    none = (1 - g) ** rest  # P(M = 0)
    one = rest * g * (1 - g) ** np.maximum(rest - 1, 0)  # P(M = 1)
    e_t = rest * g * m_w
    e_t2 = rest * g * s_w + rest * (rest - 1) * g * g * m_w * m_w
    with np.errstate(divide="ignore", invalid="ignore"):
        p1 = 1 - none
        mean1 = e_t / p1
        var1 = np.maximum(e_t2 / p1 - mean1 ** 2, 0.0)
        p2 = 1 - none - one
        mean2 = (e_t - one * m_w) / p2
        var2 = np.maximum((e_t2 - one * s_w) / p2 - mean2 ** 2, 0.0)
        z1 = (k * m_c - mean1) / np.sqrt(k * v_c + var1)
        z2 = (m_c - mean2) / np.sqrt(v_c + var2)
    z1 = np.where(np.isnan(z1), 1.0, z1)
    z2 = np.where(np.isnan(z2), 1.0, z2)
    many = np.where(p1 > 0, none + p1 * ndtr(z1), 1.0)
    single = one_correct_wins(np.full(np.shape(g)[:-1], float(n)), separation, deception)
    lone = (none + one) * single[..., None] + np.where(p2 > 0, p2 * ndtr(z2), 0.0)
    win = np.where(k >= 2, many, np.where(k == 1, lone, 0.0))
    return np.asarray(np.clip(win, 0.0, 1.0), dtype=float)


def weighted(count_pmf: F64, agreement: F64, separation: F64, deception: F64) -> F64:
    """Weighted-vote accuracy from the distribution of the number of correct samples (shape
    S + (N + 1,)); the agreement and the verifier's arguments shape S."""
    win = weighted_win_given_correct(count_pmf.shape[-1] - 1, agreement, separation, deception)
    return np.asarray(np.sum(count_pmf * win, axis=-1), dtype=float)
