"""The accuracy of the width uses of a verifier: pass@N, majority voting, best-of-N, weighted
best-of-N, step-level search and beam search, as pure vectorised functions.

Every method is E_p[acc(p)] over the per-problem solve rate p ~ Beta(A c, (1 - A) c)
(dse.width.difficulty), with acc(p) the method's accuracy on a problem of solve rate p:

    pass-at-n           1 - (1 - p)^N                     (closed form over p)
    majority            maj@N(p), ties split              (dse.width.voting)
    best-of-n           P_best(p): the top-scored of N is correct   (dse.width.judge, eq. 1)
    weighted-best-of-n  scores summed per answer           (dse.width.voting, normal approx.)
    step-search         per step, N candidate steps, the best-scored kept (no backtracking)
    beam                per step, N candidates, the B best-scored kept; the answer is the
                        best-scored of the B finished beams

Step-level search. A problem of solve rate p has S steps; each step of a correct prefix is
correct with probability r = p^(1/S) (so S correct steps in a row happen with chance p, the
policy alone) and a wrong step is never repaired. Keeping the best-scored of N candidates makes
a step correct with chance P_best(r) (equation 1 at the step level, the verifier's step-level
separation), so step-search(p) = P_best(r)^S: p at N = 1 or d = 0; the per-step oracle
(1 - (1 - r)^N)^S with a perfect verifier.

Beam search (an approximation, extrapolated: no fit-allowed source prints beam-search
accuracies). The beam survives a step when one of its B kept candidates is correct; the N
candidates are treated as if all extended a correct prefix (each correct with chance r), which
overstates the beam's survival when it also holds wrong prefixes. After S - 1 steps the last
step is chosen as in step search: beam(p) = T_B(r)^(S - 1) P_best(r), T_B = P(one of the top B
of N is correct) (judge, eq. 2). B = 1 is step search exactly.

Multiple choice: a sample that does not solve its problem is still right with chance chi
(dse.width.params.WidthParams.chance_for: (1 - g) / options, g the dataset's agreement: it
gives the favourite wrong option with chance g, else an option at random; 0 for a free-form
answer), and the Beta is of the solve rate q, mean (A - chi) / (1 - chi).
pass@N = 1 - E[(1 - q)^N] (1 - chi)^N. Every other method keeps one
response or one answer: where it is a solving sample's (acc(q), the method on the solve rate:
a verifier scores a lucky guess as the wrong response it is; the votes count the solving
samples against the others as for a free-form answer) it is right, else it is a guess, right
with chance chi: acc(q) + (1 - acc(q)) chi. For the votes this is an approximation (stated):
a guess that hits the right option adds no vote to it, and the other options' split is the
agreement's.

Laws (tests/test_width_model.py, hypothesis): one sample = the policy alone (A) for every
method; every response-level method <= pass@N; pass@N and best-of-N non-decreasing in N; a
perfect verifier (d = inf, e = 0) gives pass@N for best-of-N and the per-step oracle for step
search; d = 0 gives A for best-of-N and step search; c -> inf gives the i.i.d. formulas.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike

from dse.core.arrays import F64
from dse.width import voting
from dse.width.difficulty import (
    DEFAULT_NODES,
    correct_count_pmf,
    expected_power_of_miss,
    solve_rate_mean,
    solve_rate_nodes,
)
from dse.width.judge import best_is_correct, top_has_correct

Method = Literal["pass-at-n", "majority", "best-of-n", "weighted-best-of-n", "step-search",
                 "beam"]
METHODS: tuple[str, ...] = get_args(Method)
NEEDS_VERIFIER = frozenset({"best-of-n", "weighted-best-of-n", "step-search", "beam"})


def accuracy_given_rate(method: str, p: F64, *, samples: F64, separation: F64, deception: F64,
                        beam_width: F64, steps: F64) -> F64:
    """acc(p) of a ranking method (pass@N, best-of-N, step search, beam) for solve rates p of
    shape S + (Q,), the other arguments shape S (already broadcast). Fractions. The voting
    methods are computed from the count of correct samples instead (accuracy_pct)."""
    if method == "pass-at-n":
        return np.asarray(1 - (1 - p) ** samples[..., None], dtype=float)
    if method == "best-of-n":
        return best_is_correct(p, samples, separation, deception)
    if method == "step-search":
        r = p ** (1 / steps[..., None])
        return np.asarray(best_is_correct(r, samples, separation, deception)
                          ** steps[..., None], dtype=float)
    if method == "beam":
        r = p ** (1 / steps[..., None])
        last = best_is_correct(r, samples, separation, deception)
        wide = beam_width > 1
        keep = last.copy()  # B = 1 is step search exactly
        if wide.any():
            keep[wide] = top_has_correct(r[wide], samples[wide], beam_width[wide],
                                         separation[wide], deception[wide])
        return np.asarray(keep ** (steps[..., None] - 1) * last, dtype=float)
    raise ValueError(f"not a ranking method: {method!r}")


def accuracy_pct(*, solo_accuracy_pct: ArrayLike, method: Method | str, samples: ArrayLike,
                 concentration: ArrayLike, agreement: ArrayLike = 0.0,
                 separation: ArrayLike = 0.0, deception: ArrayLike = 0.0,
                 beam_width: ArrayLike = 1, steps: ArrayLike = 7.0, chance: ArrayLike = 0.0,
                 n_nodes: int = DEFAULT_NODES) -> F64:
    """Accuracy in percent of a width method over a dataset, broadcast over every array
    argument.

    solo_accuracy_pct: the policy's solo accuracy A on the dataset (percent, 0-100);
    method: one of METHODS; samples: N (samples, or candidates per step for the searches);
    concentration: c of the solve-rate Beta (> 0, inf: no spread); agreement: g in [0, 1]
    (majority and weighted); separation: d of the verifier (inf: perfect; below 0: it prefers
    wrong answers); deception: its e in [0, 1) (dse.width.judge; WidthParams.verifier in
    dse.width.params gives d from a PRM's ProcessBench F1); beam_width: B (beam only); steps:
    S, steps per problem (searches only); chance: chi, the chance that a sample which does not
    solve its problem is right anyway (module docstring; 0 free-form). Hand check: A 50, c 2
    (uniform p), pass-at-n, N 3: 75.0."""
    if method not in METHODS:
        raise ValueError(f"unknown width method {method!r}; known: {', '.join(METHODS)}")
    a, n, c, g, d, e, b, s, chi = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (solo_accuracy_pct, samples, concentration,
                                                agreement, separation, deception,
                                                beam_width, steps, chance))))
    if np.any(n < 1) or np.any(n != np.round(n)):
        raise ValueError("samples must be whole numbers >= 1")
    if np.any((a < 0) | (a > 100)):
        raise ValueError("solo_accuracy_pct must be within 0-100")
    if np.any((chi < 0) | (chi >= 1)):
        raise ValueError("chance must be within [0, 1)")
    shape = a.shape
    a, n, c, g, d, e, b, s, chi = (v.ravel() for v in (a, n, c, g, d, e, b, s, chi))
    q = solve_rate_mean(a / 100, chi)  # the mean solve rate (A itself when free-form)
    if method == "pass-at-n":  # every one of N samples misses: unsolved and a wrong guess
        out = 1 - expected_power_of_miss(q, c, n) * (1 - chi) ** n
    elif method in ("majority", "weighted-best-of-n"):
        out = np.empty(a.shape)
        for value in np.unique(n):  # the count distributions have N + 1 entries
            m = np.flatnonzero(n == value)
            pmf = correct_count_pmf(q[m], c[m], int(value))  # samples solving the problem
            if method == "weighted-best-of-n":
                out[m] = voting.weighted(pmf, g[m], d[m], e[m])
                continue
            for gv in np.unique(g[m]):  # one count table per agreement
                sel = g[m] == gv
                out[m[sel]] = voting.majority(pmf[sel], float(gv))
        out = out + (1 - out) * chi  # else the vote went to a guessed option
    else:
        p, w = solve_rate_nodes(q, c, n_nodes)
        acc = accuracy_given_rate(method, p, samples=n, separation=d, deception=e,
                                  beam_width=b, steps=s)
        solved = np.sum(w * acc, axis=-1)  # the chosen response solves its problem
        out = solved + (1 - solved) * chi  # else its option is a guess
    return np.asarray(100 * out, dtype=float).reshape(shape)
