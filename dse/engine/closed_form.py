"""The closed-form evaluator of a speculative design: expected values.

Closed form: expected values of the attempt costs (dse.model.schedules.attempt) over quadrature
grids of the random token counts, per step position t and previous outcome (accepted with the draft
running ahead, or rejected, with the head start a fixed point over the chain of attempts),
then a forward propagation of probability mass over
(steps per problem S, position t, backtracks used b, previous outcome):
- accept (p_accept): t -> t + 1;
- reject, rewrite kept: t -> t + 1;
- reject, rewrite fails the backtrack threshold, budget left, an anchor j steps back
  (P(j) = p_a (1 - p_a)^(j-1), j <= window): t -> t - j + 2, b -> b + 1.
Expected metrics are the mass-weighted sums of the attempts' expected costs. The grid is laid
out [context point, x, z, nt, batch, t], the long axes innermost; the batch axis carries
designs that differ only in their placements' cost multipliers (`closed_form_batch`: an
uncertainty factor's ends, which share the probabilities and the mass). The simulator
(dse.engine.simulator) replays sampled traces through the same `attempt` and is its referee.
The Report and its assembly are in dse.engine.report; the one entry point, `evaluate`, in
dse.engine.evaluate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dse.core import special
from dse.core.roles import busy_field, crit_field, dyn_field
from dse.engine.report import Report, assemble, finite
from dse.model.design import Design
from dse.model.discrimination import AccuracyParams
from dse.model.schedules import (
    ACCEPT,
    BACKTRACK,
    DEVICE_ROLES,
    PATH_ROLES,
    REFINE,
    Attempt,
    Costs,
    StepCosts,
    compose,
    step_costs,
)
from dse.model.schedules.compose import Headline, compose_headline, next_ahead_s
from dse.model.schedules.costs import rewrite_costs, uncached_costs
from dse.model.schedules.fields import SUMMED_FIELDS
from dse.model.workflow import (
    chain_accuracy_pct,
    design_step_probabilities,
    design_verifier_scores,
    lognormal_params,
    max_steps,
    steps_distribution,
    token_quadrature,
)
from dse.specs.scenario import WorkloadSpec

F64 = NDArray[np.float64]
QUAD_POINTS = 5
RESP_POINTS = 4
# (QUAD_POINTS, RESP_POINTS) of the coarser grid an interval's factor ends may be evaluated on
# (dse.uncertainty.evaluate_at: each end's move relative to the coarse grid's own central value,
# applied to the full grid's): 128 grid points a position (2 x 4 x 4 x 4) instead of 500; 3
# points a token axis misplaced a kink an end moved into the token counts (docs/uncertainty.md)
COARSE_QUADRATURE = (4, 2)
# the head starts after a reject are iterated until they move by less than this share of an
# attempt's mean time
AHEAD_REL_TOL = 1e-3
# a device's busy time may exceed the latency by this share before a report is flagged
BUSY_RTOL = 1e-3
# both values of "a next step exists" on an axis before the grid's: without step-ahead one
# composition of an attempt serves both, the terms that do not depend on it computed once
SPEC_OK = np.array([False, True]).reshape(2, 1, 1, 1, 1, 1, 1)


# ------------------------------------------------------------------------ closed form


def _grid(*axes: tuple[F64, F64]) -> tuple[list[F64], F64]:
    """Outer product of quadrature axes: values shaped for the grid layout (the quadrature
    axes first, then the batch and position axes) and the joint weights [quadrature axes]."""
    n = len(axes)
    vals, w = [], np.ones([1] * n)
    for i, (v, wt) in enumerate(axes):
        shape = [1] * n
        shape[i] = len(v)
        vals.append(v.reshape([*shape, 1, 1]))
        w = w * wt.reshape(shape)
    return vals, w


class _Weights:
    """Expectations over the quadrature axes of arrays laid out [quadrature..., batch, t].

    A value that does not vary along a quadrature axis (e.g. an accepted step's time along the
    rewrite length) is multiplied by the weights already summed over that axis, so no value is
    broadcast to the full grid; the sum over the rest is one matrix product with the batch and
    position axes innermost (contiguous)."""

    def __init__(self, w: F64, lead: tuple[int, int]) -> None:
        self.w, self.lead, self.n = w, lead, w.ndim
        self._reduced: dict[tuple[bool, ...], F64] = {}

    def _mean(self, v: Any) -> F64:
        """E[v] over the quadrature axes, shaped like v's trailing [batch, t] axes (and its
        spec_ok axis, SPEC_OK, where it has one)."""
        v = np.asarray(v, dtype=float)
        if v.ndim > self.n + 2:
            return np.stack([self._mean(u) for u in v.reshape(-1, *v.shape[-self.n - 2:])])
        shape = (1,) * (self.n + 2 - v.ndim) + v.shape
        grid = shape[:self.n]
        wv = self._reduced.get(grid)
        if wv is None:
            red = tuple(a for a in range(self.n) if grid[a] == 1)
            wv = (self.w.sum(axis=red) if red else self.w).reshape(-1)
            self._reduced[grid] = wv
        inner = shape[self.n:]
        return (wv @ v.reshape(-1, inner[0] * inner[1])).reshape(inner)

    def mean(self, v: Any) -> F64:
        """E[v] over the quadrature axes -> [batch, t]."""
        return np.broadcast_to(self._mean(v), self.lead)

    def expect(self, at: Attempt | Headline) -> F64:
        """Expectations of the summed fields of an attempt composed with spec_ok = SPEC_OK
        -> [spec_ok, fields, batch, t] (0 for the fields a Headline does not carry)."""
        out = np.zeros((2, len(SUMMED_FIELDS), *self.lead))
        for i, f in enumerate(SUMMED_FIELDS):
            v = getattr(at, f, None)
            if v is not None:
                out[:, i] = self._mean(v)
        return out


def closed_form_caveats(r: Report) -> list[str]:
    """Where a closed-form report looks outside the closed form's validity, one line each: a
    device busier than the problem lasts (beyond BUSY_RTOL; the head starts between attempts
    are a fixed point iterated to a tolerance). The simulator replays such designs attempt by
    attempt. No shipped design and no design of the fuzz suite triggers it."""
    out = []
    for dev, v in r.devices.items():
        if v["busy_s"] > r.latency_s_per_problem * (1 + BUSY_RTOL):
            out.append(f"the {dev} is busy {v['busy_s']:.3f} s of a {r.latency_s_per_problem:.3f}"
                       " s problem, so the closed form is outside its validity here; "
                       "`dse simulate` replays the design attempt by attempt")
    return out


def closed_form(c: Costs) -> Report:
    """Closed-form expected metrics of the design on the workload."""
    return closed_form_batch(c, (c,))[0]


HEADLINE_METRICS = ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token",
                    "energy_j_per_problem", "tokens_per_problem", "accuracy", "p_accept")


def closed_form_headline_batch(batch: Costs, members: Sequence[Costs],
                               rows: Sequence[int] | None = None, *,
                               quadrature: tuple[int, int] = (QUAD_POINTS, RESP_POINTS)
                               ) -> list[dict[str, float]]:
    """`closed_form_batch`'s HEADLINE_METRICS alone, equal to its to the bit: the attempts
    are composed by `compose_headline` (time, energy above idle, next head start) and the
    step-ahead stall's exact probability is not taken, so the rest of the report (critical
    path split, busy times, stalls, waste) is never computed. What an interval's factor ends
    need (dse.uncertainty.evaluate_at): about a third less work with step-ahead. quadrature:
    the points of each token-count axis and of the context's (COARSE_QUADRATURE: a coarser
    grid)."""
    # only the headline metrics are checked: finite's walk of every field of a report whose
    # other fields are never read was 6% of an interval's time
    return [headline_of(finite(r, HEADLINE_METRICS))
            for r in _batch(batch, members, rows, headline=True, quadrature=quadrature)]


def headline_of(r: Report) -> dict[str, float]:
    """A report's HEADLINE_METRICS."""
    return {m: float(getattr(r, m)) for m in HEADLINE_METRICS}


def closed_form_batch(batch: Costs, members: Sequence[Costs],
                      rows: Sequence[int] | None = None) -> list[Report]:
    """Closed-form expected metrics of a batch of designs in one vectorised pass: designs that
    differ only in their placements' cost multipliers (an uncertainty factor's ends, dse.
    uncertainty.perturb), so they share the step probabilities, the steps distribution and the
    propagated mass. `batch` is the design whose placements return arrays with a batch axis of
    len(members) before the position axis (multipliers shaped [members, 1]); `members` are the
    same designs one by one (their prompt prefills and reports); rows: each member's row of
    the batch (None: member i is row i; members whose attempts are equal share one). Each
    report equals `closed_form(members[i])` (the head-start fixed point is iterated per row)."""
    return _batch(batch, members, rows, headline=False)


def _batch(batch: Costs, members: Sequence[Costs], rows: Sequence[int] | None, *,
           headline: bool, quadrature: tuple[int, int] = (QUAD_POINTS, RESP_POINTS)
           ) -> list[Report]:
    """closed_form_batch; headline=True: only the fields of `Headline` are composed and
    expected (the reports' other fields are 0: they never leave this module). quadrature:
    (points of each token-count axis, points of the context)."""
    n_quad, n_resp = quadrature
    d, w, s = batch.design, batch.workload, batch.design.schedule
    comp = compose_headline if headline else compose
    rows = list(range(len(members))) if rows is None else list(rows)
    nb = max(rows) + 1
    pr = design_step_probabilities(d, w)
    pa, pf = float(pr.p_accept), float(pr.p_fail)
    xbar, tbar = w.draft_step_tokens_mean, w.target_step_tokens_mean
    m_c = pa * xbar + (1 - pa) * tbar
    s_max = max_steps(w, d.max_context_tokens, m_c)
    s_vals, s_p = steps_distribution(w, s_max)
    n_pos = int(s_vals.max())
    tpos = np.arange(n_pos, dtype=float)
    resp = tpos * m_c
    qx = token_quadrature(xbar, w.draft_step_tokens_cv, n_quad)
    qt = token_quadrature(tbar, w.target_step_tokens_cv, n_quad)
    bt_on = s.backtracking
    win = d.backtrack_window

    # expected anchor distance and context for backtracks
    j = np.arange(1, win + 1, dtype=float)
    pj = pa * (1 - pa) ** (j - 1)
    j_mean = float((j * pj).sum() / pj.sum()) if pj.sum() > 0 else 1.0

    # uncached target tokens by previous outcome
    if s.step_ahead:
        u_a = np.full(n_pos, xbar)
    else:
        r = np.arange(1, n_pos + 1)
        u_a = np.zeros(n_pos)
        for t in range(1, n_pos):
            runs = r[:t - 1] if t > 1 else np.zeros(0)
            mass = pa ** runs * (1 - pa)
            if pa > 0:
                u_a[t] = ((mass * runs * xbar).sum() + pa ** t * (t * xbar + batch.prompt)) / pa
    u_a[0] = batch.prompt

    # the context at position t is a sum of t random step lengths: n_resp equal-probability
    # points of a gamma with that mean and variance (the step-length spread inside max())
    cv2 = w.draft_step_tokens_cv ** 2
    pts = _gamma_quantiles(n_pos, cv2, n_resp) * (m_c * cv2)
    pts = np.where(tpos[:, None] > 0, pts * (resp[:, None] / np.maximum(
        pts.mean(axis=1, keepdims=True), 1e-300)), 0.0)
    # grid layout: [context point, x, z, nt, batch, t]: the long axes innermost
    (_, x, z, nt), wgt = _grid((np.zeros(n_resp), np.full(n_resp, 1 / n_resp)),
                               qx, qx, qt)
    ew = _Weights(wgt, (nb, n_pos))
    R = np.ascontiguousarray(pts.T).reshape(n_resp, 1, 1, 1, 1, n_pos)

    anchor = np.maximum(R - (j_mean - 1) * m_c, 0.0)

    # each operation's cost after an accept (u_a uncached tokens) for an accepted step (a
    # prefetch cut short: the mean rewrite) and a rewrite of nt tokens; after a reject (no
    # uncached tokens) the same but for the uncached ones' costs
    k_acc = step_costs(batch, s, resp=R, x=x, z=z, nt=tbar, u=u_a, n_alt=tbar,
                       resp_anchor=anchor)
    k_rej = replace(k_acc, **rewrite_costs(batch, s, resp=R, z=z, nt=nt))
    after_reject = uncached_costs(batch, resp=R, u=np.zeros(n_pos))

    def run(k: StepCosts, outcome: int, ahead: Any) -> F64:  # -> [spec_ok, fields, batch, t]
        if not s.step_ahead:  # only the re-synchronisation varies with spec_ok
            return ew.expect(comp(k, s, outcome=outcome, spec_ok=SPEC_OK, ahead=ahead))
        # with step-ahead nearly every term does (the speculation): one composition each
        off = ew.expect(comp(k, s, outcome=outcome, spec_ok=False, ahead=ahead))[0]
        at = comp(k, s, outcome=outcome, spec_ok=True, ahead=ahead)
        if isinstance(at, Headline):  # no stall field to smooth
            return np.stack([off, ew.expect(at)[1]])
        return np.stack([off, _smooth_stall(batch, at, k, ew.expect(at)[1], ew)])

    def run_ahead(k: StepCosts, outcome: int, ahead: F64) -> F64:  # E[next_ahead] -> [batch, t]
        return ew.mean(next_ahead_s(k, s, outcome=outcome, spec_ok=True, ahead=ahead))

    # head start after an accept: min(D(x), W) of the previous attempt, W its verification: the
    # PRM read the whole context, problem + R (the previous step is the end of R), so the
    # previous step's length enters only through the link's microseconds and is taken at its
    # mean. None for the first attempt (t = 0: empty context, prompt uncached, u_a[0]).
    ahead_a: F64
    if s.step_ahead:
        y = float(qx[0] @ qx[1])
        w_prev = batch.link_draft(y) + batch.prm(0.0, R) + batch.link_verdict()
        ahead_a = np.array(np.minimum(batch.draft_decode(x, R), w_prev))
        ahead_a[..., 0] = 0.0
    else:
        ahead_a = np.zeros(1)
    # without backtracking no mass takes the backtrack outcome (its probability is 0): its
    # attempts are not composed (their row of M stays 0)
    outcomes = (ACCEPT, REFINE, BACKTRACK) if bt_on else (ACCEPT, REFINE)
    # M[prev, outcome, spec_ok] -> [fields, batch, t]; prev 0 = accepted before, 1 = rejected
    # before. An accepted step's prefetch is cut short; its length is the mean target step (as
    # in the simulator, whose traces do not record it).
    m = np.zeros((2, 3, 2, len(SUMMED_FIELDS), nb, n_pos))
    for oi, o in enumerate(outcomes):
        m[0, oi] = run(k_acc if o == ACCEPT else k_rej, o, ahead_a)
    # head start after a reject: the expected next_ahead of the rejected attempt one step back,
    # which itself followed an accept (share p_accept; the first attempt counts as one) or a
    # reject, whose own head start depends on the one before. The head starts are therefore a
    # fixed point, found by iteration (per member of the batch): it matters when the draft
    # cannot keep up with the rewrites and its lateness carries from attempt to attempt.
    i_ahead = SUMMED_FIELDS.index("next_ahead_s")
    # the rejected attempt one step back backtracked with the share of rejects there that
    # do, over the backtrack levels the mass is at (none once the budget is spent)
    flow = _masses(s_vals, s_p, pa, pf, bt_on, d.max_backtracks, win, n_pos)
    p_bk_t = flow.backtrack_share()

    def rejected_next_ahead(refine: F64, backtrack: F64) -> F64:  # [batch, t], E[next_ahead]
        return (1 - p_bk_t) * refine + p_bk_t * backtrack

    def one_step_on(a: F64) -> F64:  # [batch, t] -> the head start one position later
        out = np.zeros_like(a)
        out[:, 1:] = a[:, :-1]
        return out

    after_acc = rejected_next_ahead(m[0, 1, 1, i_ahead], m[0, 2, 1, i_ahead])
    ahead_r = one_step_on(after_acc)
    k_acc, k_rej = replace(k_acc, **after_reject), replace(k_rej, **after_reject)
    tol = AHEAD_REL_TOL * m[0, 0, 1, SUMMED_FIELDS.index("time_s")].mean(axis=-1)  # [batch]
    active = np.ones(nb, dtype=bool)
    for _ in range(n_pos):  # only the head starts: M[1] is composed in full below
        bk_ahead = run_ahead(k_rej, BACKTRACK, ahead_r) if bt_on else m[1, 2, 1, i_ahead]
        mix = pa * after_acc + (1 - pa) * rejected_next_ahead(
            run_ahead(k_rej, REFINE, ahead_r), bk_ahead)
        mix[:, 0] = after_acc[:, 0]
        new = one_step_on(mix)
        step = np.abs(new - ahead_r).max(axis=-1)
        ahead_r = np.where(active[:, None], new, ahead_r)
        active &= step > tol
        if not active.any():
            break
    for oi, o in enumerate(outcomes):
        m[1, oi] = run(k_acc if o == ACCEPT else k_rej, o, ahead_r)
    # a backtrack at a problem's last position ends it only when its anchor is one step back
    # (the alternative is then the last step); from further back the problem goes on, as from
    # any other position
    j1 = np.zeros(n_pos)
    if bt_on:
        pj_cum = np.cumsum(pj)[np.minimum(np.arange(n_pos), win) - 1]
        j1[1:] = pj[0] / np.maximum(pj_cum[1:], 1e-300)
    m[:, 2, 0] = j1 * m[:, 2, 0] + (1 - j1) * m[:, 2, 1]

    totals, counts = flow.totals(m)[:, rows], flow.counts  # [fields, member]
    tokens = float((s_vals * s_p).sum()) * m_c
    accuracy = _accuracy(d, w, s_vals, s_p, bt_on, counts)
    reports = []
    for b, c in enumerate(members):
        tv = {f: float(v) for f, v in zip(SUMMED_FIELDS, totals[:, b], strict=True)}
        init_s = c.init_s()
        reports.append(assemble(
            c, "closed-form", latency=tv["time_s"] + init_s,
            crit={r.value: tv[crit_field(r)] for r in PATH_ROLES}, init_s=init_s,
            busy={r.value: tv[busy_field(r)] for r in DEVICE_ROLES},
            dyn_j={r.value: tv[dyn_field(r)] for r in DEVICE_ROLES},
            stall=tv["stall_s"], stalled=tv["stalled"], wasted_s=tv["wasted_s"],
            wasted_tokens=tv["wasted_tokens"],
            wasted_j=tv["wasted_j"], tokens=tokens, target_calls=tv["target_called"],
            backtracks=counts["backtracks"], attempts=counts["attempts"], accuracy=accuracy,
            p_accept=pa,
        ))
    return reports


@lru_cache(maxsize=64)
def _gamma_quantiles(n_pos: int, cv2: float, n: int = RESP_POINTS) -> F64:
    """n equal-probability points (quantiles (i + 1/2) / n) of unit-scale gammas of shape
    t / cv2 for positions t = 0..n_pos-1 [n_pos, n] (read-only: shared by every design of a
    workload)."""
    qs = (np.arange(n) + 0.5) / n
    shape_t = np.maximum(np.arange(n_pos, dtype=float) / max(cv2, 1e-9), 1e-9)
    pts = special.gammaincinv(shape_t[:, None], qs[None, :])
    pts.flags.writeable = False
    return pts


def _smooth_stall(c: Costs, at: Attempt, k: StepCosts, e: F64, ew: _Weights) -> F64:
    """Replace the expectation of `stalled` (an indicator over a few quadrature points of the
    next step's length z) by the exact probability over z's lognormal: the speculation of z
    tokens ends before the verdict when z < window / (time per token). at: a step-ahead
    attempt with a next step; e: its expectations [fields, batch, t]."""
    w = c.workload
    window = np.asarray(at.verdict_s) - np.asarray(at.draft_end_s)
    per_token = k.d_next / np.maximum(k.z, 1.0)  # the speculation's time per token
    z_star = window / per_token
    if w.draft_step_tokens_cv > 0:
        mu, sig = lognormal_params(w.draft_step_tokens_mean, w.draft_step_tokens_cv)
        p = np.where(z_star > 1.0, special.ndtr(
            (np.log(np.maximum(z_star, 1e-300)) - mu) / sig), 0.0)
    else:
        p = (z_star > max(w.draft_step_tokens_mean, 1.0)).astype(float)
    out = e.copy()
    out[SUMMED_FIELDS.index("stalled")] = ew.mean(p)
    return out


def accuracy_only(d: Design, w: WorkloadSpec, params: AccuracyParams | None = None) -> float:
    """The closed-form accuracy (percent) without the timing (for calibration fits; params: a
    fit's candidate accuracy model, None: the shipped one)."""
    pr = design_step_probabilities(d, w, params)
    pa, pf = float(pr.p_accept), float(pr.p_fail)
    m_c = pa * w.draft_step_tokens_mean + (1 - pa) * w.target_step_tokens_mean
    s_vals, s_p = steps_distribution(w, max_steps(w, d.max_context_tokens, m_c))
    n_pos = int(s_vals.max())
    counts = _masses(s_vals, s_p, pa, pf, d.schedule.backtracking, d.max_backtracks,
                     d.backtrack_window, n_pos).counts
    return _accuracy(d, w, s_vals, s_p, d.schedule.backtracking, counts, params)


@dataclass(frozen=True)
class _Mass:
    """The propagated probability mass of the attempts, which does not depend on their costs:
    per backtrack level b, previous outcome and position t, the expected number of attempts
    with a next step (`ok`) and at a problem's last position (`last`), and the outcome
    probabilities at each level and position (`probs`: the backtrack budget is spent at the
    last level)."""

    ok: F64  # [b, prev, t]
    last: F64  # [b, prev, t]
    probs: F64  # [b, t, outcome]
    counts: dict[str, float]

    def totals(self, m: F64) -> F64:
        """Expected field totals [field, batch] of attempt costs
        m[prev, outcome, spec_ok, field, batch, t]."""
        return (np.einsum("bpt,bto,pofst->fs", self.ok, self.probs, m[:, :, 1])
                + np.einsum("bpt,bto,pofst->fs", self.last, self.probs, m[:, :, 0]))

    def backtrack_share(self) -> F64:
        """P(backtrack | reject) at each position, over the levels the attempts there are at:
        0 where the budget is spent (max_backtracks = 0: never)."""
        w = (self.ok + self.last).sum(axis=1)  # [b, t]
        bk = (w * self.probs[:, :, 2]).sum(axis=0)
        rej = (w * self.probs[:, :, 1:].sum(axis=2)).sum(axis=0)
        return np.where(rej > 0, bk / np.maximum(rej, 1e-300), 0.0)


def _masses(s_vals: NDArray[np.int64], s_p: F64, pa: float, pf: float, bt_on: bool,
            max_bt: int, win: int, n_pos: int) -> _Mass:
    """`_propagate`, remembered for the last designs' inputs: a pure function of the outcome
    probabilities, the steps distribution and the backtracking budget, which a design's
    perturbed timings (its intervals) and its schedules with the same flags share."""
    return _masses_of(np.asarray(s_vals, dtype=np.int64).tobytes(),
                      np.asarray(s_p, dtype=float).tobytes(), pa, pf, bt_on, max_bt, win, n_pos)


@lru_cache(maxsize=64)
def _masses_of(s_vals: bytes, s_p: bytes, pa: float, pf: float, bt_on: bool, max_bt: int,
               win: int, n_pos: int) -> _Mass:
    return _propagate(np.frombuffer(s_vals, dtype=np.int64), np.frombuffer(s_p), pa, pf, bt_on,
                      max_bt, win, n_pos)


def _propagate(s_vals: NDArray[np.int64], s_p: F64, pa: float, pf: float, bt_on: bool,
               max_bt: int, win: int, n_pos: int) -> _Mass:
    """Forward mass propagation over (S, t, b, prev).

    Per backtrack level b: the mass alive at position t (t < S) moves to t + 1 unless it
    backtracks (rate p_bk(t), to level b + 1, positions t - j + 2); the recurrence over t runs
    on [S] vectors, everything else is vectorised over (S, t)."""
    n_s = len(s_vals)
    b_max = max_bt if bt_on else 0
    t = np.arange(n_pos)
    alive = (t[None, :] < s_vals[:, None]).astype(float)  # [S, t]
    spec_ok = (t[None, :] < s_vals[:, None] - 1).astype(float)
    p_rej = 1 - pa
    js = np.arange(1, win + 1)
    pj = pa * (1 - pa) ** (js - 1)  # anchor j steps back
    p_bk_open = p_rej * pf * np.concatenate([[0.0], np.cumsum(pj)])[np.minimum(win, t)]
    ok, last, probs = [], [], []
    attempts = backtracks = fails = 0.0
    inj = np.zeros((2, n_s, n_pos))  # mass entering level b at (S, t) with prev = 0 / 1
    inj[0, :, 0] = 1.0
    for b in range(b_max + 1):
        p_bk = p_bk_open if (bt_on and b < max_bt) else np.zeros(n_pos)
        stay = 1 - p_bk  # accept or keep the rewrite: t -> t + 1
        live = np.zeros((n_s, n_pos))  # mass attempting position t at this level
        run = np.zeros(n_s)
        inj_tot = inj.sum(axis=0)
        for k in range(n_pos):
            run = alive[:, k] * (inj_tot[:, k] + run)
            live[:, k] = run
            run = run * stay[k]
        moved = np.zeros((n_s, n_pos))  # live mass of position t - 1
        moved[:, 1:] = live[:, :-1]
        prev = np.stack([inj[0] + pa * moved,
                         inj[1] + (p_rej - np.concatenate([[0.0], p_bk[:-1]])) * moved]
                        ) * alive  # [prev, S, t]
        w_s = prev * s_p[None, :, None]
        w_ok = (w_s * spec_ok).sum(axis=1)  # [prev, t]
        ok.append(w_ok)
        last.append(w_s.sum(axis=1) - w_ok)
        probs.append(np.stack([np.full(n_pos, pa), p_rej - p_bk, p_bk], axis=1))  # [t, outcome]
        w_t = w_s.sum(axis=(0, 1))
        attempts += float(w_t.sum())
        backtracks += float((w_t * p_bk).sum())
        fails += float(w_t.sum()) * p_rej * pf if bt_on else 0.0
        # backtracks from (S, t) land at level b + 1, position t - j + 2, prev = rejected
        inj = np.zeros((2, n_s, n_pos))
        if bt_on and b < max_bt:
            for j, pjj in zip(js, pj, strict=True):
                n = n_pos - max(int(j), 2)  # sources t >= j whose target t - j + 2 < n_pos
                if n > 0:
                    inj[1, :, 2:2 + n] += live[:, j:j + n] * (p_rej * pf * pjj)
    return _Mass(np.stack(ok), np.stack(last), np.stack(probs),
                 {"attempts": attempts, "backtracks": backtracks, "fails": fails})


def _accuracy(d: Design, w: WorkloadSpec, s_vals: NDArray[np.int64], s_p: F64, bt_on: bool,
              counts: dict[str, float], params: AccuracyParams | None = None) -> float:
    """P(no bad step in the final chain), over the problems' difficulty and the design's steps
    per problem (dse.model.workflow.chain_accuracy_pct), with beta the share of failed rewrites that
    backtrack (from the propagated counts)."""
    beta = counts["backtracks"] / counts["fails"] if bt_on and counts["fails"] > 0 else 0.0
    return float(chain_accuracy_pct(
        w, d.draft.model.name, d.target.model.name, d.accept_threshold,
        d.backtrack_threshold, design_verifier_scores(d, w, params), beta, s_vals, s_p,
        params))
