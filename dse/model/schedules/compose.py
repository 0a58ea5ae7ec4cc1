"""Schedule timing: what one attempt at a reasoning step costs under each schedule.

An *attempt* is one pass at step position t: the draft writes the step, the PRM scores it, and
on a reject the target rewrites it (and, with backtracking, the PRM scores the rewrite, which
may send the system back to an anchor). `attempt` returns the attempt's critical-path time split
by role, each device's busy time, energy above idle, speculation stall and wasted work. It is
two steps: `step_costs` (dse.model.schedules.costs: what each operation costs at the inputs) and
`compose` (the schedule: what overlaps, for one outcome, from the rules of
dse.model.schedules.rules, on which the mean-value form dse.model.symbolic builds too). Both
evaluators use them: the simulator through `attempt` with one sampled record per problem, the closed
form with quadrature grids of the same random inputs (costs once per grid, composed for each
outcome), so the two agree by construction up to the expectation of the inputs.

Timing (all times from the attempt's start, i.e. the previous commit):
- draft:   D = decode(x tokens); with step-ahead some of it was done early (`ahead` > 0); a late
           re-synchronised draft starts after the commit (`ahead` < 0): on the path: D - ahead.
- verify:  W = link(x) + PRM(whole context + x) + link(verdict); verdict V = (D - ahead) + W.
- step-ahead: during W the draft speculates the next step (progress min(D', W); stall
           max(W - D', 0)); the target prefetches this step from the attempt's start.
- reject:  the target's step is ready at R = max(V, T) with prefetch, else V + link + T;
           T = prefill(uncached tokens) + decode(target tokens). The draft re-synchronises:
           shadow sync absorbs the tokens as they stream (done at max(V + A, R + link + A/n)),
           otherwise it prefills them after R. With backtracking the PRM scores the rewrite
           (commit at R + link + PRM + link); without, the rewrite commits at R + link.
- backtrack: the target writes an alternative from the anchor (its prefix is cached), the draft
           rolls back its KV pointer (stopping the rewrite's ingestion at that verdict) and
           ingests the alternative.
Speculative draft work discarded by a reject or a backtrack is wasted work.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.model.schedules import rules as r
from dse.model.schedules.costs import Costs, StepCosts, step_costs
from dse.model.schedules.registry import Schedule
from dse.model.schedules.rules import ACCEPT, BACKTRACK, NUMPY

F64 = NDArray[np.float64]
_where = NUMPY.where


@dataclass(frozen=True)
class Attempt:
    """One attempt, itemised. Critical-path parts sum to `time_s`."""

    time_s: F64
    crit_draft_s: F64
    crit_prm_s: F64
    crit_target_s: F64
    crit_link_s: F64
    draft_busy_s: F64  # decode + speculation + re-synchronisation
    prm_busy_s: F64
    target_busy_s: F64
    draft_dyn_j: F64
    prm_dyn_j: F64
    target_dyn_j: F64
    stall_s: F64
    stalled: F64  # 1 when the draft's step-ahead speculation ended before the verdict
    wasted_s: F64
    wasted_tokens: F64
    wasted_j: F64
    next_ahead_s: F64
    target_called: F64
    # times from the attempt's start, for timelines
    draft_end_s: F64
    prm_start_s: F64
    verdict_s: F64
    speculate_s: F64
    target_start_s: F64
    target_ready_s: F64
    refine_verdict_s: F64
    sync_end_s: F64
    # where the closed form's booking differs from the mean-value form's (dse.model.schedules.rules)
    speculated_s: F64  # draft speculation run in this attempt (step-ahead), kept or not
    sync_cut_s: F64  # ingestion of a rewrite a backtrack discarded, not run


def attempt(
    c: Costs,
    s: Schedule,
    *,
    resp: ArrayLike,
    x: ArrayLike,
    z: ArrayLike,
    spec_ok: ArrayLike,
    nt: ArrayLike,
    u: ArrayLike,
    outcome: ArrayLike,
    n_alt: ArrayLike,
    resp_anchor: ArrayLike,
    ahead: ArrayLike,
) -> Attempt:
    """Time one attempt. Arrays broadcast; see the module docstring for the rules.

    resp: committed response tokens before the step; x: draft tokens of this step; z: draft
    tokens of the next step (speculated); spec_ok: a next step exists; nt: target tokens of a
    rewrite; u: tokens the target has not prefilled; outcome: ACCEPT, REFINE or BACKTRACK;
    n_alt, resp_anchor: the alternative's tokens and the anchor's context; ahead: draft work
    done early (> 0) or late start (< 0), seconds.
    """
    k = step_costs(c, s, resp=resp, x=x, z=z, nt=nt, u=u, n_alt=n_alt, resp_anchor=resp_anchor)
    return compose(k, s, outcome=outcome, spec_ok=spec_ok, ahead=ahead)


@dataclass(frozen=True)
class _Path:
    """The commit path of one attempt: the times up to its commit and the head start it hands
    on (what the closed form's head-start fixed point iterates; `compose` books the rest)."""

    acc: NDArray[np.bool_]
    bk: NDArray[np.bool_]
    rej: NDArray[np.bool_]
    spec_on: NDArray[np.bool_]
    speculates: bool
    rem: F64
    w: F64
    verdict: F64
    spec: F64
    t_full: F64
    ready: F64
    sync_end: F64
    commit_ref: F64
    t_alt: F64 | float
    sync2_work: F64 | float
    commit: F64
    sync_final: F64
    gap: F64 | None  # commit - sync_final; None where nothing is rejected
    post: F64 | None  # the head start after a reject
    next_ahead: F64


def _commit_path(k: StepCosts, s: Schedule, *, outcome: ArrayLike, spec_ok: ArrayLike,
                 ahead: ArrayLike) -> _Path:
    """The times of an attempt up to its commit and its next head start (rules as `compose`)."""
    o = NUMPY
    out = np.asarray(outcome)
    ahead = np.asarray(ahead, dtype=float)
    spec_ok = np.asarray(spec_ok, dtype=bool)
    sa, bt, shadow = s.step_ahead, s.backtracking, s.shadow_sync
    acc = out == ACCEPT
    bk = out == BACKTRACK
    rej = ~acc
    # the draft speculates the next step during the verification (never without step-ahead:
    # then nothing below varies with spec_ok but the re-synchronisation it books)
    spec_on = spec_ok & sa if sa else np.asarray(False)
    speculates = bool(np.any(spec_on))
    lkv, lk_u, lk_t, lk_a = k.lkv, k.lk_u, k.lk_t, k.lk_a

    # draft and verification
    rem = r.draft_on_path_s(decode=k.d_step, ahead=ahead)
    w = r.verification_s(to_verifier=k.lk1, score=k.p1, verdict_back=lkv)
    verdict = r.verdict_s(on_path=rem, verification=w)
    spec = _where(spec_on, r.speculation_s(o, next_decode=k.d_next, verification=w), 0.0)

    # target; the shadow-sync lag is the rewrite's mean per-token absorb time
    t_full = k.t_pre + k.t_dec
    ready = r.target_ready_s(o, verdict=verdict, to_target=lk_u, rewrite=t_full, step_ahead=sa)
    sync_end = r.resync_end_s(o, start=verdict, ready=ready, to_draft=lk_t, ingest=k.sync_work,
                              lag=k.sync_work / np.maximum(k.nt, 1), shadow_sync=shadow)
    commit_ref = r.refine_commit_s(ready=ready, to_draft=lk_t, verify_rewrite=k.p2 + lkv,
                                   backtracking=bt)

    # backtrack: alternative from the anchor (cached prefix), draft rolls back and ingests it
    t_alt: F64 | float
    sync2_work: F64 | float
    if np.any(bk):
        t_alt, sync2_work = k.t_alt, k.sync2_work
        alt_end = r.alternative_end_s(refine_commit=commit_ref, alternative=t_alt)
        sync2 = r.resync_end_s(o, start=commit_ref, ready=alt_end, to_draft=lk_a,
                               ingest=sync2_work, lag=sync2_work / np.maximum(k.n_alt, 1),
                               shadow_sync=shadow)
        commit_bk = r.backtrack_commit_s(alternative_end=alt_end, to_draft=lk_a)
    else:  # no backtrack among the inputs: the backtrack-only terms are never selected
        t_alt = sync2_work = 0.0
        sync2, commit_bk = sync_end, commit_ref

    commit = _where(acc, verdict, _where(bk, commit_bk, commit_ref))
    sync_final = _where(bk, sync2, sync_end)
    # after a reject the draft speculates the next step from its re-synchronisation to the
    # commit (post > 0), or starts late (post < 0)
    gap = post = None
    next_ahead = spec
    if np.any(rej):
        gap = commit - sync_final
        # the next step's decode matters only where the draft speculates (else a late start)
        post = r.head_start_after_reject_s(
            o, gap=gap, next_decode=_where(bk, k.d_next_alt, k.d_next_ref) if speculates
            else 0.0, speculates=spec_on)
        next_ahead = _where(acc, spec, post)
    return _Path(acc, bk, rej, spec_on, speculates, rem, w, verdict, spec, t_full, ready,
                 sync_end, commit_ref, t_alt, sync2_work, commit, sync_final, gap, post,
                 next_ahead)


def next_ahead_s(k: StepCosts, s: Schedule, *, outcome: ArrayLike, spec_ok: ArrayLike,
                 ahead: ArrayLike) -> F64:
    """The head start an attempt hands to the next one (`compose(...).next_ahead_s`, without
    the rest of the attempt)."""
    return _commit_path(k, s, outcome=outcome, spec_ok=spec_ok, ahead=ahead).next_ahead


@dataclass(frozen=True)
class _Busy:
    """What an attempt books beside its commit path: the draft's speculation before a
    backtracking verdict and its cut ingestion, the speculation after a reject, the busy
    times and the PRM's energy (shared by `compose` and `compose_headline`)."""

    spec_bt: F64 | float
    sync1_work: F64 | float
    post_spec: F64 | float
    speculated: F64 | float
    draft_busy: F64
    target_busy: F64
    prm_j: F64


def _busy(k: StepCosts, s: Schedule, p: _Path, *, spec_ok: NDArray[np.bool_], ahead: F64
          ) -> _Busy:
    o = NUMPY
    sa, shadow = s.step_ahead, s.shadow_sync
    bk, rej, spec_on = p.bk, p.rej, p.spec_on
    spec_bt: F64 | float
    sync1_work: F64 | float
    if np.any(bk):
        # speculation the draft did after re-synchronising, before the rewrite's verdict;
        # wasted when that verdict sends the system back (none where nothing speculates)
        spec_bt = (_where(bk & spec_on, np.minimum(np.maximum(p.commit_ref - p.sync_end, 0.0),
                                                   k.d_next_ref), 0.0)
                   if p.speculates else 0.0)
        # the verdict discards the rewrite: the draft stops ingesting it (rolls its KV pointer
        # back) and has done the share of the work that fits before the verdict
        start = p.verdict if shadow else p.ready + k.lk_t
        sync1_work = k.sync_work * np.minimum(np.maximum(
            (p.commit_ref - start) / np.maximum(p.sync_end - start, 1e-12), 0.0), 1.0)
    else:
        spec_bt = sync1_work = 0.0
    post_spec = (_where(rej, np.maximum(p.post, 0.0), 0.0) if p.post is not None
                 and p.gap is not None else 0.0)
    # a rewrite committed as the problem's last step needs no re-synchronisation (nothing
    # follows), nor does an alternative that ends the problem (an anchor one step back at
    # the last step); otherwise the problem goes on from the anchor, so the draft ingests it
    sync_busy = _where(bk, sync1_work + _where(spec_ok, p.sync2_work, 0.0),
                       _where(rej & spec_ok, k.sync_work, 0.0))
    # speculation: of the next step during the verification, after a re-synchronisation
    # before a backtracking verdict, and after a reject's re-synchronisation
    speculated = p.spec + spec_bt + post_spec
    draft_busy = r.draft_busy_s(o, decode=k.d_step, ahead=ahead, ingest=sync_busy,
                                speculated=speculated)
    prefetch = (r.prefetch_s(o, verdict=p.verdict, to_target=k.lk_u, rewrite=p.t_full) if sa
                else 0.0)
    target_busy = r.target_busy_s(o, accepted=p.acc, backtracked=bk, prefetch=prefetch,
                                  rewrite=p.t_full, alternative=p.t_alt)
    prm_j = k.p1 * k.prm_w_step + _where(rej, k.p2 * k.prm_w_rewrite, 0.0)
    return _Busy(spec_bt, sync1_work, post_spec, speculated, draft_busy, target_busy, prm_j)


@dataclass(frozen=True)
class Headline:
    """The fields of an attempt the headline metrics need (latency, energy: `compose`'s
    time_s, the devices' energy above idle and the next head start), nothing else."""

    time_s: F64
    draft_dyn_j: F64
    prm_dyn_j: F64
    target_dyn_j: F64
    next_ahead_s: F64


def compose_headline(k: StepCosts, s: Schedule, *, outcome: ArrayLike, spec_ok: ArrayLike,
                     ahead: ArrayLike) -> Headline:
    """`compose`'s time_s, dynamic energies and next head start alone (the same rules and
    arithmetic, so equal to compose's to the bit), for evaluations whose other fields nobody
    reads: an interval's factor ends (dse.engine.closed_form.closed_form_headline_batch)."""
    p = _commit_path(k, s, outcome=outcome, spec_ok=spec_ok, ahead=ahead)
    b = _busy(k, s, p, spec_ok=np.asarray(spec_ok, dtype=bool),
              ahead=np.asarray(ahead, dtype=float))
    return Headline(time_s=p.commit, draft_dyn_j=b.draft_busy * k.draft_w, prm_dyn_j=b.prm_j,
                    target_dyn_j=b.target_busy * k.target_w, next_ahead_s=p.next_ahead)


def compose(k: StepCosts, s: Schedule, *, outcome: ArrayLike, spec_ok: ArrayLike,
            ahead: ArrayLike) -> Attempt:
    """The schedule: how an attempt's operations (`k`) overlap, for an outcome (ACCEPT, REFINE
    or BACKTRACK), whether a next step exists (spec_ok) and the draft's head start (ahead).
    Each time is one rule of dse.model.schedules.rules on numpy arrays."""
    o = NUMPY
    p = _commit_path(k, s, outcome=outcome, spec_ok=spec_ok, ahead=ahead)
    ahead = np.asarray(ahead, dtype=float)
    spec_ok = np.asarray(spec_ok, dtype=bool)
    sa, bt = s.step_ahead, s.backtracking
    bk, rej, spec_on = p.bk, p.rej, p.spec_on
    lkv, lk_u, lk_t, lk_a = k.lkv, k.lk_u, k.lk_t, k.lk_a
    rem, w, verdict, spec, t_full, ready = p.rem, p.w, p.verdict, p.spec, p.t_full, p.ready
    t_alt, commit, sync_final, next_ahead = p.t_alt, p.commit, p.sync_final, p.next_ahead
    commit_ref = p.commit_ref
    stall = _where(spec_on, np.maximum(w - k.d_next, 0.0), 0.0)
    # the paper's speculation stall counts steps: those where the draft finished speculating
    # the next step before the verdict on this one, and waited
    stalled = _where(spec_on & (w > k.d_next), 1.0, 0.0)
    b = _busy(k, s, p, spec_ok=spec_ok, ahead=ahead)
    sync1_work, speculated = b.sync1_work, b.speculated
    draft_busy, target_busy, prm_j = b.draft_busy, b.target_busy, b.prm_j
    if p.post is not None and p.gap is not None:
        # gap - min(gap, d) = max(gap - d, 0): waiting after the speculation of the next step
        stall_after = _where(rej & spec_on, p.gap - p.post, 0.0)
    else:
        stall_after = 0.0

    # critical path by role
    crit_prm = r.verifier_busy_s(o, score=k.p1, rewrite=k.p2, rejected=rej)
    target_wait = ready - verdict if sa else t_full
    crit_target = _where(rej, target_wait + _where(bk, t_alt, 0.0), 0.0)
    crit_link = k.lk1 + lkv + _where(rej, (0.0 if sa else lk_u) + lk_t + (lkv if bt else 0.0)
                                     + _where(bk, lk_a, 0.0), 0.0)

    # the speculation a reject or a backtrack discards
    wasted_s = r.wasted_speculation_s(o, rejected=rej, speculated=spec,
                                      before_backtrack=b.spec_bt)
    per_token = k.d_next / np.maximum(k.z, 1.0)

    # the target starts at the attempt's start with prefetch, else after the verdict; shaped
    # like the other fields for the timeline
    target_start = np.asarray(lk_u if sa else verdict + lk_u) + np.zeros_like(verdict)
    return Attempt(
        time_s=commit, crit_draft_s=rem, crit_prm_s=crit_prm, crit_target_s=crit_target,
        crit_link_s=crit_link, draft_busy_s=draft_busy, prm_busy_s=crit_prm,
        target_busy_s=target_busy, draft_dyn_j=draft_busy * k.draft_w, prm_dyn_j=prm_j,
        target_dyn_j=target_busy * k.target_w, stall_s=stall + stall_after, stalled=stalled,
        wasted_s=wasted_s, wasted_tokens=wasted_s / np.maximum(per_token, 1e-12),
        wasted_j=wasted_s * k.draft_w, next_ahead_s=next_ahead,
        target_called=np.asarray(rej, dtype=float), draft_end_s=rem, prm_start_s=rem + k.lk1,
        verdict_s=verdict, speculate_s=spec, target_start_s=target_start,
        target_ready_s=ready, refine_verdict_s=commit_ref,
        sync_end_s=sync_final, speculated_s=np.asarray(speculated, dtype=float),
        sync_cut_s=_where(bk, k.sync_work - sync1_work, 0.0),
    )
