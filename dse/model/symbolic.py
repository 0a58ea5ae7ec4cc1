"""Mean-value step model, derived with sympy, lambdified for batches and differentiated for
sensitivities.

The accurate closed form (dse.engine.closed_form) takes expectations over token-count
quadrature at every step position; it costs ~0.1 s per design. For screening a million designs
(dse sweep / optimize), this module evaluates the same schedule rules (dse.model.schedules.rules,
which the closed form's numpy composition is built from too) at the mean step and mean
context:

    per problem:  latency = init + N * [p_a * t_acc + (1 - p_a) * t_rej] + B * t_bk
    N (attempts) = S + B (j - 1),   B (backtracks) = E[min(Poisson(S r), B_max)]

with t_acc, t_rej, t_bk the accept / reject / backtrack attempt times of each schedule
(`step_expressions`), and energy likewise from the per-attempt busy times and powers.
`sensitivities` returns d ln(metric) / d ln(component) from the symbolic derivatives. Search
ranks with this model and re-evaluates the designs it reports with the accurate closed form.

The lambdified functions a search evaluates are generated once into dse/model/mean_value_forms.py
(`generated_source`, written by `python scripts/generate_mean_value_forms.py`;
tests/test_symbolic.py fails when the file is not what the rules give now), so that a sweep does
not import sympy (0.5 s) and lambdify 64 expressions (0.6 s) on every run. sympy is imported
here only to derive (`step_expressions`, `sensitivities`, `generated_source`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dse.model.design import Design
from dse.model.schedules import DEVICE_ROLES, Costs, Role, rules
from dse.model.workflow import (
    design_step_probabilities,
    max_steps,
    steps_distribution,
)
from dse.specs.scenario import WorkloadSpec

if TYPE_CHECKING:
    import sympy as sp

F64 = NDArray[np.float64]

# Components of one mean step (seconds, or watts above idle for *_w).
# Components of one mean step (seconds, or watts above idle for w*), with what each is.
COMPONENT_LABELS = {
    "D": "draft decode of a step",  # at the mean context
    "W": "verification (link + PRM + verdict)",  # PRM over the whole context
    "Tf": "target rewrite (prefill + decode)",  # prefill of the uncached tokens
    "Lu": "link: context to the target",  # the uncached context
    "Lt": "link: rewrite to draft and PRM",
    "Sy": "draft re-synchronisation",  # absorb with shadow sync, else prefill
    "a1": "draft absorb of one token",  # shadow sync lag after the last token
    "P2": "PRM scores the rewrite",  # + verdict link
    "Ta": "target alternative after a backtrack",  # decode from the cached anchor prefix
    "init": "prompt prefill / KV migration",
    "wd": "draft dynamic power", "wp": "PRM dynamic power", "wt": "target dynamic power",
    "Pp": "PRM busy time per verification",  # W without links
}
COMPONENTS = tuple(COMPONENT_LABELS)
PROBS = ("pa", "pb")  # accept probability; backtrack probability per reject
COUNTS = ("N", "B")  # attempts, backtracks per problem

FLAG_SETS = tuple((sa, sh, bt) for sa in (False, True) for sh in (False, True)
                  for bt in (False, True))  # (step_ahead, shadow, backtracking)


@dataclass(frozen=True)
class StepExpressions:
    """One schedule's mean-value model. Per attempt (seconds): t_acc, t_rej (commit of an
    accepted / rejected step), t_bk (what a backtrack adds to a reject), `ahead` (the draft's
    mean head start); busy time per device role after an accept (`busy_acc`), a reject
    (`busy_rej`) and what a backtrack adds (`busy_bk`); `wasted_rej` the speculation a reject
    discards. Per problem: latency (s), energy_dyn (J above idle), wasted (J)."""

    t_acc: sp.Expr
    t_rej: sp.Expr
    t_bk: sp.Expr
    ahead: sp.Expr
    busy_acc: dict[Role, sp.Expr]
    busy_rej: dict[Role, sp.Expr]
    busy_bk: dict[Role, sp.Expr]
    wasted_rej: sp.Expr
    latency: sp.Expr
    energy_dyn: sp.Expr
    wasted: sp.Expr
    symbols: dict[str, sp.Symbol]


@cache
def step_expressions(step_ahead: bool, shadow: bool, backtracking: bool) -> StepExpressions:
    """Symbolic per-attempt and per-problem latency, busy time and dynamic energy of one
    schedule (mean-value), from the rules of dse.model.schedules.rules at the mean step. Where it
    differs from the closed form's composition (dse.model.schedules.compose), the difference is in
    what it feeds the rules: the mean head start below, the shadow-sync lag `a1`, the rewrite's
    score P2 that includes the verdict link, and the draft's busy booking (rules.draft_busy_s).
    """
    import sympy as sp

    o = rules.Ops(max=sp.Max, min=sp.Min, where=rules.select_bool)
    sym = {n: sp.Symbol(n, nonnegative=True) for n in (*COMPONENTS, *PROBS, *COUNTS)}
    D, W, Tf, Lu, Lt, Sy, a1, P2, Ta, init = (sym[n] for n in
                                              ("D", "W", "Tf", "Lu", "Lt", "Sy", "a1", "P2",
                                               "Ta", "init"))
    pa, N, B = sym["pa"], sym["N"], sym["B"]
    wd, wp, wt, Pp = sym["wd"], sym["wp"], sym["wt"], sym["Pp"]

    def reject_path(verdict: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
        """(commit, end of the draft's re-synchronisation) of a reject with this verdict."""
        ready = rules.target_ready_s(o, verdict=verdict, to_target=Lu, rewrite=Tf,
                                     step_ahead=step_ahead)
        sync_end = rules.resync_end_s(o, start=verdict, ready=ready, to_draft=Lt, ingest=Sy,
                                      lag=a1, shadow_sync=shadow)
        commit = rules.refine_commit_s(ready=ready, to_draft=Lt, verify_rewrite=P2,
                                       backtracking=backtracking)
        return commit, sync_end

    def verdict_at(ahead: sp.Expr | int) -> sp.Expr:
        return rules.verdict_s(on_path=rules.draft_on_path_s(decode=D, ahead=ahead),
                               verification=W)

    # head start of the draft on an attempt (the mean-value form's, in place of the closed
    # form's fixed point over the chain of attempts): after an accept it speculated min(D, W);
    # after a reject that itself started on time, it is early (step-ahead) or late by the gap
    # between commit and re-synchronisation; the two mixed by p_accept
    spec = rules.speculation_s(o, next_decode=D, verification=W) if step_ahead else 0
    commit0, sync0 = reject_path(verdict_at(0))
    after_rej = rules.head_start_after_reject_s(o, gap=commit0 - sync0, next_decode=D,
                                                speculates=step_ahead)
    ahead = pa * spec + (1 - pa) * after_rej
    t_acc = verdict_at(ahead)
    t_rej, _ = reject_path(verdict_at(ahead))
    t_alt_end = rules.alternative_end_s(refine_commit=t_rej, alternative=Ta)
    t_bk = rules.backtrack_commit_s(alternative_end=t_alt_end, to_draft=Lt) - t_rej
    latency = init + (N - B) * (pa * t_acc + (1 - pa) * t_rej) + B * (t_rej + t_bk)

    # busy time per attempt: the draft decodes every step (booked in full: ahead = speculated
    # = 0) and ingests rewrites and alternatives in full; the verifier scores every step and,
    # with backtracking, every rewrite; the target's prefetch (step-ahead) runs until the
    # verdict of an attempt that follows an accept
    rewrite_score = P2 if backtracking else 0
    prefetch = (rules.prefetch_s(o, verdict=verdict_at(spec), to_target=Lu, rewrite=Tf)
                if step_ahead else 0)

    def busy(accepted: bool, backtracked: bool) -> dict[Role, sp.Expr]:
        ingest = (0 if accepted else Sy) + (Sy if backtracked else 0)
        return {
            Role.DRAFT: rules.draft_busy_s(o, decode=D, ahead=0, ingest=ingest, speculated=0),
            Role.VERIFIER: rules.verifier_busy_s(o, score=Pp, rewrite=rewrite_score,
                                                 rejected=not accepted),
            Role.TARGET: rules.target_busy_s(o, accepted=accepted, backtracked=backtracked,
                                             prefetch=prefetch, rewrite=Tf, alternative=Ta),
        }

    busy_acc, busy_rej = busy(True, False), busy(False, False)
    busy_bk = {r: v - busy_rej[r] for r, v in busy(False, True).items()}
    # every reject re-synchronises the draft except a rewrite committed as the last step
    last_step = {Role.DRAFT: -(1 - pa) * Sy, Role.VERIFIER: 0, Role.TARGET: 0}
    per_problem = {r: N * (pa * busy_acc[r] + (1 - pa) * busy_rej[r]) + B * busy_bk[r]
                   + last_step[r] for r in DEVICE_ROLES}
    power = {Role.DRAFT: wd, Role.VERIFIER: wp, Role.TARGET: wt}
    energy_dyn = sum((power[r] * per_problem[r] for r in DEVICE_ROLES), sp.Integer(0))
    wasted_rej = rules.wasted_speculation_s(o, rejected=True, speculated=spec,
                                            before_backtrack=0)
    wasted = (1 - pa) * N * wasted_rej
    return StepExpressions(t_acc, t_rej, t_bk, ahead, busy_acc, busy_rej, busy_bk, wasted_rej,
                           latency, energy_dyn, wasted * wd, sym)


@cache
def _lambdified(step_ahead: bool, shadow: bool, backtracking: bool
                ) -> dict[str, Callable[..., Any]]:
    """latency, energy_dyn and wasted_j of one schedule as functions of (COMPONENTS, PROBS,
    COUNTS), from the generated module."""
    from dse.model import mean_value_forms as g

    return dict(g.METRICS[(step_ahead, shadow, backtracking)])


@cache
def _derivative(step_ahead: bool, shadow: bool, backtracking: bool, metric: str, wrt: str
                ) -> sp.Expr:
    import sympy as sp

    e = step_expressions(step_ahead, shadow, backtracking)
    expr = {"latency": e.latency, "energy_dyn": e.energy_dyn}[metric]
    return sp.diff(expr, e.symbols[wrt])


def _expressions(flags: tuple[bool, bool, bool]) -> dict[str, tuple[list[str], sp.Expr]]:
    """The generated module's functions of one schedule: name -> (argument names, expression):
    the three metrics of `_lambdified` and the linear forms' coefficients c0, cN, cB of
    latency and dynamic energy (`linear_forms`), each checked linear in the counts."""
    import sympy as sp

    e = step_expressions(*flags)
    n, b = e.symbols["N"], e.symbols["B"]
    full = [*COMPONENTS, *PROBS, *COUNTS]
    coef = [*COMPONENTS, "pa"]
    tag = "".join(str(int(f)) for f in flags)
    out = {f"{m}_{tag}": (full, x) for m, x in
           (("latency", e.latency), ("energy_dyn", e.energy_dyn), ("wasted_j", e.wasted))}
    for name, expr in (("latency", e.latency), ("energy_dyn", e.energy_dyn)):
        if not (sp.diff(expr, n, 2) == 0 and sp.diff(expr, b, 2) == 0
                and sp.diff(expr, n, b) == 0):
            raise AssertionError(f"{name} is not linear in the counts")
        for c, x in (("c0", expr.subs({n: 0, b: 0})), ("cN", sp.diff(expr, n)),
                     ("cB", sp.diff(expr, b))):
            out[f"{name}_{c}_{tag}"] = (coef, x)
    return out


def generated_source() -> str:
    """The text of dse/model/mean_value_forms.py: every schedule's mean-value functions as sympy's
    lambdify prints them (Max and Min as numpy's maximum and minimum), wrapped to 100 columns
    between tokens."""
    import inspect
    import textwrap

    import sympy as sp

    mods = [{"Max": np.maximum, "Min": np.minimum}, "numpy"]
    blocks, names = [], set()
    for flags in FLAG_SETS:
        for fname, (args, expr) in _expressions(flags).items():
            e = step_expressions(*flags)
            # cse: each common subexpression once (a sweep calls these on small arrays, where
            # every numpy operation's overhead counts)
            fn = sp.lambdify([e.symbols[a] for a in args], expr, mods, cse=True)
            names |= set(fn.__code__.co_names)
            lines = inspect.getsource(fn).splitlines()[1:]
            head = textwrap.fill(f"def {fname}({', '.join(f'{a}:@A' for a in args)}) -> A:",
                                 100, subsequent_indent=" " * (len(fname) + 5)
                                 ).replace(":@", ": ")  # a line breaks after a comma only
            body = []
            for line in (ln.strip() for ln in lines if ln.strip()):
                lhs, rhs = (("return", line[len("return "):]) if line.startswith("return ")
                            else line.split(" = ", 1))
                body.append(textwrap.fill(
                    f"{lhs} ({rhs})" if lhs == "return" else f"{lhs} = ({rhs})", 100,
                    initial_indent="    ", subsequent_indent="        ",
                    break_long_words=False, break_on_hyphens=False))
            blocks.append("\n".join([head, *body]))
    unknown = names - {"reduce", "maximum", "minimum"}
    if unknown:
        raise AssertionError(f"generated code needs names not imported: {sorted(unknown)}")
    table = []
    for flags in FLAG_SETS:
        tag = "".join(str(int(f)) for f in flags)
        table.append(f"    {flags}: {{\"latency\": (latency_c0_{tag}, latency_cN_{tag}, "
                     f"latency_cB_{tag}),\n" + " " * 25 + f"\"energy_dyn\": (energy_dyn_c0_{tag}, "
                     f"energy_dyn_cN_{tag}, energy_dyn_cB_{tag})}},")
    metrics = [f"    {flags}: {{\"latency\": latency_{''.join(str(int(f)) for f in flags)}, "
               f"\"energy_dyn\": energy_dyn_{''.join(str(int(f)) for f in flags)},\n"
               + " " * 25 + f"\"wasted_j\": wasted_j_{''.join(str(int(f)) for f in flags)}}},"
               for flags in FLAG_SETS]
    return ('"""The mean-value model\'s functions (dse.model.symbolic), generated: do not edit.\n\n'
            "Written by `python scripts/generate_mean_value_forms.py` from "
            "dse.model.symbolic.step_expressions\n(the schedule rules in sympy) by sympy's "
            "lambdify; tests/test_symbolic.py fails when this file\nis not what the rules give "
            "now. Suffix: step-ahead, shadow sync, backtracking (0/1).\n"
            '"""\n\nfrom functools import reduce\nfrom typing import Any\n\n'
            "from numpy import maximum, minimum\n\nA = Any\n\n\n"
            + "\n\n\n".join(blocks)
            + "\n\n\n# (step_ahead, shadow, backtracking) -> the linear forms' coefficients\n"
            "LINEAR = {\n" + "\n".join(table) + "\n}\n"
            "# (step_ahead, shadow, backtracking) -> the metrics of (COMPONENTS, PROBS, COUNTS)\n"
            "METRICS = {\n" + "\n".join(metrics) + "\n}\n")


def pa_context(w: WorkloadSpec, pa: F64, max_context_tokens: int
               ) -> tuple[F64, F64, F64]:
    """(mean committed step tokens m_c, mean steps s_mean, mean response context) per accept
    probability: the budget truncates the steps distribution at (budget - prompt) / m_c."""
    pa = np.atleast_1d(np.asarray(pa, dtype=float))
    m_c = pa * w.draft_step_tokens_mean + (1 - pa) * w.target_step_tokens_mean
    s_mean = np.empty_like(pa)
    for i, m in enumerate(m_c.ravel()):
        s_vals, s_p = steps_distribution(w, max_steps(w, max_context_tokens, float(m)))
        s_mean.ravel()[i] = float((s_vals * s_p).sum())
    return m_c, s_mean, (s_mean - 1) / 2 * m_c


def components_grid(c: Costs, pa: F64, resp: F64) -> dict[str, F64]:
    """Mean-step components at arrays of accept probabilities (and their mean contexts), with
    the schedule-dependent ones in both variants: Tf/Lu with and without step-ahead (`*_sa`,
    `*_seq`), Sy with shadow sync and with re-prefill (`Sy_shadow`, `Sy_prefill`). `select`
    picks one schedule's set."""
    w = c.workload
    pa = np.asarray(pa, dtype=float)
    resp = np.asarray(resp, dtype=float)
    xbar, tbar = w.draft_step_tokens_mean, w.target_step_tokens_mean
    u_seq = xbar / np.maximum(1 - pa, 1e-9) * pa
    lkv = c.link_verdict()
    pp = c.prm(xbar, resp)
    ones = np.ones_like(resp)
    td = c.target_decode(tbar, resp)
    return {
        "D": c.draft_decode(xbar, resp), "W": c.link_draft(xbar) + pp + lkv,
        "Tf_sa": c.target_prefill(xbar, resp) + td, "Tf_seq": c.target_prefill(u_seq, resp) + td,
        "Lu_sa": c.link_gpu(xbar) * ones, "Lu_seq": c.link_gpu(u_seq) * ones,
        "Lt": c.link_to_draft(tbar) * ones,
        "Sy_shadow": c.draft_absorb(tbar, resp), "Sy_prefill": c.draft_prefill(tbar, resp),
        "a1": c.draft_absorb(1, resp), "P2": c.prm(tbar, resp) + lkv, "Ta": td,
        "init": c.init_s() * ones, "_init_j": c.init_energy_j() * ones, "wd": c.draft_dyn_w(resp),
        "wp": c.prm_dyn_w(0.0, resp), "wt": c.target_dyn_w(resp), "Pp": pp,
        "_idle_w": sum(c.idle_w().values()) * ones,
    }


def select(grid: dict[str, F64], step_ahead: bool, shadow: bool, backtracking: bool
           ) -> dict[str, F64]:
    """One schedule's COMPONENTS from `components_grid`."""
    v = "sa" if step_ahead else "seq"
    out = {k: grid[k] for k in COMPONENTS if k in grid}
    out.update(Tf=grid[f"Tf_{v}"], Lu=grid[f"Lu_{v}"],
               Sy=grid["Sy_shadow" if shadow else "Sy_prefill"],
               P2=grid["P2"] if backtracking else np.zeros_like(grid["P2"]))
    out["_idle_w"] = grid["_idle_w"]
    out["_init_j"] = grid["_init_j"]
    return out


def components(d: Design, w: WorkloadSpec) -> dict[str, float]:
    """The mean-step components of one design on one workload (numbers for the formulas)."""
    c = Costs(d, w)
    pr = design_step_probabilities(d, w)
    pa = np.atleast_1d(np.asarray(pr.p_accept, dtype=float))
    m_c, s_mean, resp = pa_context(w, pa, d.max_context_tokens)
    s = d.schedule
    comp = select(components_grid(c, pa, resp), s.step_ahead, s.shadow_sync, s.backtracking)
    out = {k: float(np.asarray(v).ravel()[0]) for k, v in comp.items()}
    out.update(_s_mean=float(s_mean[0]), _m_c=float(m_c[0]), _pa=float(pa[0]),
               _pf=float(pr.p_fail))
    return out


@dataclass(frozen=True)
class LinearForm:
    """A per-problem metric as c0 + cN N + cB B (N attempts, B backtracks): the mean-value
    latency and dynamic energy are linear in the counts, with coefficients that depend only on
    the components and p_a. This lets a sweep evaluate every (threshold, budget, window)
    combination of a hardware choice with two multiply-adds."""

    c0: Callable[..., Any]
    cN: Callable[..., Any]
    cB: Callable[..., Any]

    def value(self, args: list[Any], n: F64, b: F64) -> F64:
        """c0 + cN N + cB B with the coefficients at each accept probability (args per row,
        [A]) and the counts per (accept, knob column) [A, K]."""
        rows = np.shape(n)[0]

        def col(fn: Callable[..., Any]) -> F64:
            v = np.asarray(fn(*args), dtype=float)
            return (v if v.shape == (rows,) else np.full(rows, v))[:, None]  # a constant: per row

        return col(self.c0) + col(self.cN) * n + col(self.cB) * b


@cache
def linear_forms(step_ahead: bool, shadow: bool, backtracking: bool) -> dict[str, LinearForm]:
    """Coefficients (arguments: COMPONENTS then p_a) of latency and dynamic energy, from the
    generated module."""
    from dse.model import mean_value_forms as g

    return {name: LinearForm(*fns)
            for name, fns in g.LINEAR[(step_ahead, shadow, backtracking)].items()}


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
    e = f["energy_dyn"](*args) + comp["_idle_w"] * lat + comp.get("_init_j", 0.0)
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
    import sympy as sp

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
