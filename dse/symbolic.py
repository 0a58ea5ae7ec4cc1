"""Mean-value step model, derived once with sympy, lambdified for batches and differentiated
for sensitivities.

The accurate closed form (dse.evaluate) takes expectations over token-count quadrature at every
step position; it costs ~0.1 s per design. For screening a million designs (dse sweep /
optimize), this module evaluates the same schedule rules at the mean step and mean context:

    per problem:  latency = init + N * [p_a * t_acc + (1 - p_a) * t_rej] + B * t_bk
    N (attempts) = S + B (j - 1),   B (backtracks) = E[min(Poisson(S r), B_max)]

with t_acc, t_rej, t_bk the accept / reject / backtrack attempt times of each schedule
(`step_expressions`), and energy likewise from busy times and powers. `sensitivities` returns
d ln(metric) / d ln(component) from the symbolic derivatives. Search ranks with this model and
re-evaluates the designs it reports with the accurate closed form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from dse.design import Design
from dse.scenario import WorkloadSpec
from dse.schedules import Costs
from dse.workflow import max_steps, step_probabilities, steps_distribution

F64 = NDArray[np.float64]

# Components of one mean step (seconds, or watts above idle for *_w).
COMPONENTS = (
    "D",  # draft decode of a mean step at the mean context
    "W",  # verification: link + PRM over the whole context + verdict
    "Tf",  # target rewrite: prefill of the uncached tokens + decode
    "Lu",  # link carrying the uncached context to the target
    "Lt",  # link carrying the rewrite to the draft and PRM
    "Sy",  # draft re-synchronisation work (absorb with shadow sync, else prefill)
    "a1",  # absorb of one token (shadow sync lag after the last token)
    "P2",  # PRM scoring the rewrite (+ verdict link)
    "Ta",  # alternative step after a backtrack (decode from the cached anchor prefix)
    "init",  # prompt prefill / KV migration
    "wd", "wp", "wt",  # dynamic power of draft (decode), PRM (prefill), target (decode)
    "Pp",  # PRM busy time per verification (W without links)
)
PROBS = ("pa", "pb")  # accept probability; backtrack probability per reject
COUNTS = ("N", "B")  # attempts, backtracks per problem


@dataclass(frozen=True)
class StepExpressions:
    t_acc: sp.Expr
    t_rej: sp.Expr
    t_bk: sp.Expr
    latency: sp.Expr
    energy_dyn: sp.Expr
    wasted: sp.Expr
    symbols: dict[str, sp.Symbol]


@cache
def step_expressions(step_ahead: bool, shadow: bool, backtracking: bool) -> StepExpressions:
    """Symbolic per-problem latency and dynamic energy of one schedule (mean-value)."""
    sym = {n: sp.Symbol(n, nonnegative=True) for n in (*COMPONENTS, *PROBS, *COUNTS)}
    D, W, Tf, Lu, Lt, Sy, a1, P2, Ta, init = (sym[n] for n in
                                              ("D", "W", "Tf", "Lu", "Lt", "Sy", "a1", "P2",
                                               "Ta", "init"))
    pa, N, B = sym["pa"], sym["N"], sym["B"]
    bt = 1 if backtracking else 0

    def reject_path(v: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
        """(commit, sync_end) of a reject whose verdict comes at v."""
        ready = sp.Max(v, Lu + Tf) if step_ahead else v + Lu + Tf
        sync_end = sp.Max(v + Sy, ready + Lt + a1) if shadow else ready + Lt + Sy
        return ready + Lt + bt * P2, sync_end

    # head start of the draft on an attempt: after an accept it speculated min(D, W); after a
    # reject it is early (step-ahead) or late by the gap between commit and re-synchronisation
    commit0, sync0 = reject_path(D + W)
    gap = commit0 - sync0
    after_rej = sp.Min(gap, 0) + (sp.Min(sp.Max(gap, 0), D) if step_ahead else 0)
    after_acc = sp.Min(D, W) if step_ahead else 0
    rem = D - (pa * after_acc + (1 - pa) * after_rej)
    t_acc = rem + W
    t_rej, _ = reject_path(rem + W)
    t_bk = Ta + Lt
    latency = init + (N - B) * (pa * t_acc + (1 - pa) * t_rej) + B * (t_rej + t_bk)
    # dynamic energy: draft decodes every attempt (+ discarded speculation), syncs on rejects;
    # PRM verifies every attempt (+ rewrites); target rewrites (+ prefetch with step-ahead)
    wd, wp, wt, Pp = sym["wd"], sym["wp"], sym["wt"], sym["Pp"]
    spec = sp.Min(D, W) if step_ahead else 0
    wasted = (1 - pa) * N * spec
    draft_busy = N * (D + (1 - pa) * Sy) + B * Sy
    prm_busy = N * (Pp + (1 - pa) * bt * P2)
    prefetch = sp.Min(sp.Max(W + D - spec - Lu, 0), Tf) if step_ahead else 0
    target_busy = N * (pa * prefetch + (1 - pa) * Tf) + B * Ta
    energy_dyn = wd * draft_busy + wp * prm_busy + wt * target_busy
    return StepExpressions(t_acc, t_rej, t_bk, latency, energy_dyn, wasted * wd, sym)


@cache
def _lambdified(step_ahead: bool, shadow: bool, backtracking: bool
                ) -> dict[str, Callable[..., Any]]:
    e = step_expressions(step_ahead, shadow, backtracking)
    args = [e.symbols[n] for n in (*COMPONENTS, *PROBS, *COUNTS)]
    mods = [{"Max": np.maximum, "Min": np.minimum}, "numpy"]
    return {"latency": sp.lambdify(args, e.latency, mods),
            "energy_dyn": sp.lambdify(args, e.energy_dyn, mods),
            "wasted_j": sp.lambdify(args, e.wasted, mods)}


@cache
def _derivative(step_ahead: bool, shadow: bool, backtracking: bool, metric: str, wrt: str
                ) -> sp.Expr:
    e = step_expressions(step_ahead, shadow, backtracking)
    expr = {"latency": e.latency, "energy_dyn": e.energy_dyn}[metric]
    return sp.diff(expr, e.symbols[wrt])


def components(d: Design, w: WorkloadSpec) -> dict[str, float]:
    """The mean-step components of one design on one workload (numbers for the formulas)."""
    c = Costs(d, w)
    pr = step_probabilities(w, d.draft.model.name, d.target.model.name, d.accept_threshold,
                            d.backtrack_threshold)
    pa = float(pr.p_accept)
    xbar, tbar = w.draft_step_tokens_mean, w.target_step_tokens_mean
    m_c = pa * xbar + (1 - pa) * tbar
    s_vals, s_p = steps_distribution(w, max_steps(w, d.max_context_tokens, m_c))
    s_mean = float((s_vals * s_p).sum())
    resp = (s_mean - 1) / 2 * m_c  # mean context over the problem's steps
    u = xbar if d.schedule.step_ahead else xbar / max(1 - pa, 1e-9) * pa
    sy = c.draft_absorb(tbar, resp) if d.schedule.shadow_sync else c.draft_prefill(tbar, resp)
    lkv = c.link_verdict()
    pp = float(c.prm(xbar, resp))
    return {
        "D": float(c.draft_decode(xbar, resp)),
        "W": float(c.link_draft(xbar)) + pp + lkv,
        "Tf": float(c.target_prefill(u, resp) + c.target_decode(tbar, resp)),
        "Lu": float(c.link_gpu(u)), "Lt": float(c.link_draft(tbar)), "Sy": float(sy),
        "a1": float(c.draft_absorb(1, resp)),
        "P2": float(c.prm(tbar, resp)) + lkv if d.schedule.backtracking else 0.0,
        "Ta": float(c.target_decode(tbar, resp)), "init": c.init_s(),
        "wd": float(c.draft_dyn_w(resp)), "wp": float(c.prm_dyn_w(w.problem_tokens + resp)),
        "wt": float(c.target_dyn_w(resp)), "Pp": pp,
        "_s_mean": s_mean, "_m_c": m_c, "_pa": pa, "_pf": float(pr.p_fail),
        "_idle_w": sum(float(getattr(d, r).power_w("idle")) for r in ("draft", "prm", "target")),
    }


def expected_counts(s_mean: F64, pa: F64, pf: F64, window: F64, max_bt: F64,
                    backtracking: bool) -> tuple[F64, F64, F64]:
    """(attempts N, backtracks B, P(backtrack | reject)) per problem, mean-value.

    The anchor is the latest draft-accepted step within the window: distance j ~ geometric(p_a)
    truncated at the window (mean in closed form); it exists with probability 1 - q^min(t, W)
    at position t (q = 1 - p_a), averaged over a mean problem's positions. Backtracks arrive
    at rate r = (1 - p_a) p_fail P(anchor) per attempt; each adds j - 1 attempts; the budget
    caps them: B = E[min(Poisson(lambda), B_max)].
    """
    s_mean, pa, pf, window, max_bt = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (s_mean, pa, pf, window, max_bt)))
    if not backtracking:
        return np.asarray(s_mean, dtype=float), np.zeros(s_mean.shape), np.zeros(s_mean.shape)
    q = np.clip(1 - pa, 0.0, 1.0 - 1e-12)
    qw = q**window
    j_mean = np.where(pa > 1e-9, (1 - (window + 1) * qw + window * qw * q)
                      / np.maximum((1 - q) * (1 - qw), 1e-300), (window + 1) / 2)
    w_eff = np.minimum(window, s_mean)
    no_anchor = ((1 - q**w_eff) / (1 - q) + np.maximum(s_mean - window, 0) * qw) / np.maximum(
        s_mean, 1.0)
    p_anchor = 1 - no_anchor
    r = (1 - pa) * pf * p_anchor
    lam = s_mean * r / np.maximum(1 - r * (j_mean - 1), 1e-9)
    b = np.zeros(s_mean.shape)
    term = np.exp(-lam)  # P(X = k), built up by the recurrence P(X = k) = P(X = k-1) lam / k
    cdf = term.copy()
    for k in range(int(max_bt.max(initial=0))):  # E[min(X, B_max)] = sum_{k < B_max} P(X > k)
        b += np.where(k < max_bt, 1.0 - cdf, 0.0)
        term = term * lam / (k + 1)
        cdf = cdf + term
    n = s_mean + b * (j_mean - 1)
    return n, b, np.where(r > 0, pf * p_anchor, 0.0)


def batch_metrics(comp: dict[str, F64], *, step_ahead: bool, shadow: bool, backtracking: bool,
                  pa: F64, pf: F64, window: F64, max_bt: F64, tokens: F64) -> dict[str, F64]:
    """Latency, energy, J/token and goodput for arrays of designs (one schedule)."""
    f = _lambdified(step_ahead, shadow, backtracking)
    n, b, pb = expected_counts(comp["_s_mean"], pa, pf, window, max_bt, backtracking)
    args = [comp[k] for k in COMPONENTS] + [pa, pb, n, b]
    lat = f["latency"](*args)
    e = f["energy_dyn"](*args) + comp["_idle_w"] * lat
    return {"latency_s_per_problem": lat, "energy_j_per_problem": e,
            "j_per_token": e / tokens, "goodput_tokens_per_s": tokens / lat,
            "attempts_per_problem": n, "backtracks_per_problem": b,
            "wasted_j": f["wasted_j"](*args)}


def mean_value(d: Design, w: WorkloadSpec) -> dict[str, float]:
    """The mean-value metrics of one design (what sweep screens with)."""
    comp = components(d, w)
    arr = {k: np.asarray(v) for k, v in comp.items()}
    s = d.schedule
    out = batch_metrics(arr, step_ahead=s.step_ahead, shadow=s.shadow_sync,
                        backtracking=s.backtracking, pa=np.asarray(comp["_pa"]),
                        pf=np.asarray(comp["_pf"]), window=np.asarray(d.backtrack_window),
                        max_bt=np.asarray(d.max_backtracks),
                        tokens=np.asarray(comp["_s_mean"] * comp["_m_c"]))
    return {k: float(v) for k, v in out.items()}


def sensitivities(d: Design, w: WorkloadSpec) -> dict[str, dict[str, float]]:
    """Elasticities d ln(metric) / d ln(x) of latency and dynamic energy with respect to each
    mean-step component x (and the accept and backtrack probabilities), from the symbolic
    derivatives. E.g. {"latency": {"D": 0.41, ...}}: a 1% longer draft step, 0.41% longer
    problem."""
    comp = components(d, w)
    s = d.schedule
    f = _lambdified(s.step_ahead, s.shadow_sync, s.backtracking)
    n, b, pb = expected_counts(np.asarray(comp["_s_mean"]), np.asarray(comp["_pa"]),
                               np.asarray(comp["_pf"]), np.asarray(d.backtrack_window),
                               np.asarray(d.max_backtracks), s.backtracking)
    vals = {**{k: comp[k] for k in COMPONENTS}, "pa": comp["_pa"], "pb": float(pb)}
    args = [np.atleast_1d(np.asarray(v, dtype=float))
            for v in [vals[k] for k in (*COMPONENTS, *PROBS)] + [float(n), float(b)]]
    out: dict[str, dict[str, float]] = {}
    for metric in ("latency", "energy_dyn"):
        base = float(np.asarray(f[metric](*args)).ravel()[0])
        e = step_expressions(s.step_ahead, s.shadow_sync, s.backtracking)
        subs = {e.symbols[k]: sp.Float(v) for k, v in
                zip((*COMPONENTS, *PROBS, *COUNTS), [*(vals[k] for k in (*COMPONENTS, *PROBS)),
                                                     float(n), float(b)], strict=True)}
        deriv = {k: _derivative(s.step_ahead, s.shadow_sync, s.backtracking, metric, k)
                 for k in (*COMPONENTS, *PROBS)}
        # Max/Min differentiate to Heaviside steps; at a kink take the right derivative
        out[metric] = {k: float(deriv[k].subs(subs).replace(
            sp.Heaviside, lambda x, *_: sp.Heaviside(x, 1)).evalf()) * vals[k] / base
                       for k in (*COMPONENTS, *PROBS) if base > 0}
    return out
