"""Schedule timing: what one attempt at a reasoning step costs under each schedule.

An *attempt* is one pass at step position t: the draft writes the step, the PRM scores it, and
on a reject the target rewrites it (and, with backtracking, the PRM scores the rewrite, which
may send the system back to an anchor). `attempt` returns the attempt's critical-path time split
by role, each device's busy time, energy above idle, speculation stall and wasted work. It is
two steps: `step_costs` (what each operation costs at the inputs) and `compose` (the schedule:
what overlaps, for one outcome). Both evaluators use them: the simulator through `attempt` with
one sampled record per problem, the closed form with quadrature grids of the same random
inputs (costs once per grid, composed for each outcome), so the two agree by construction up
to the expectation of the inputs.

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

from dse.design import Design, Schedule
from dse.devices.link import token_bytes, transfer_s
from dse.devices.protocol import Placement
from dse.scenario import WorkloadSpec

F64 = NDArray[np.float64]
VERDICT_BYTES = 8  # accept/reject flag and reward score
ACCEPT, REFINE, BACKTRACK = 0, 1, 2


@dataclass(frozen=True)
class Costs:
    """Cost of each role's operations for one design on one workload (contexts in response
    tokens; the prompt / problem prefix is added here)."""

    design: Design
    workload: WorkloadSpec

    @property
    def init_gpu(self) -> Placement | None:
        return self.design.init_gpu

    @property
    def prompt(self) -> float:
        return self.workload.prompt_tokens

    def draft_decode(self, n: ArrayLike, resp: ArrayLike) -> F64:
        return self.design.draft.decode_s(n, self.prompt + np.asarray(resp))

    def draft_absorb(self, n: ArrayLike, resp: ArrayLike) -> F64:
        return self.design.draft.absorb_s(n, self.prompt + np.asarray(resp))

    def draft_prefill(self, n: ArrayLike, resp: ArrayLike) -> F64:
        return self.design.draft.prefill_s(n, self.prompt + np.asarray(resp))

    def prm(self, n: ArrayLike, resp: ArrayLike) -> F64:
        """No prefix caching for a pooling model: the PRM reads problem + all steps + the new
        step every call, scoring every position."""
        tokens = self.workload.problem_tokens + np.asarray(resp) + np.asarray(n)
        return self.design.prm.prefill_s(tokens, 0, all_positions=True)

    def target_prefill(self, u: ArrayLike, resp: ArrayLike) -> F64:
        """Prefix caching: prefill only the u tokens the target has not seen."""
        ctx = np.maximum(self.prompt + np.asarray(resp) - np.asarray(u), 0)
        return self.design.target.prefill_s(u, ctx)

    def target_decode(self, n: ArrayLike, resp: ArrayLike) -> F64:
        return self.design.target.decode_s(n, self.prompt + np.asarray(resp))

    def link_draft(self, n_tokens: ArrayLike) -> F64:
        return transfer_s(self.design.draft_link, token_bytes(n_tokens))

    def link_gpu(self, n_tokens: ArrayLike) -> F64:
        n = np.asarray(n_tokens, dtype=float)
        return np.where(n > 0, transfer_s(self.design.gpu_link, token_bytes(n)), 0.0)

    def link_verdict(self) -> float:
        return float(transfer_s(self.design.draft_link, VERDICT_BYTES))

    # ---- power above idle (W), at a context
    def draft_dyn_w(self, resp: ArrayLike) -> F64:
        p = self.design.draft
        ctx = self.prompt + np.asarray(resp)
        return p.power_w("decode", ctx) - p.power_w("idle")

    def prm_dyn_w(self, n_tokens: ArrayLike) -> F64:
        p = self.design.prm
        return p.power_w("prefill", 0, n_new=n_tokens) - p.power_w("idle")

    def target_dyn_w(self, resp: ArrayLike) -> F64:
        p = self.design.target
        return p.power_w("decode", self.prompt + np.asarray(resp)) - p.power_w("idle")

    # ---- once per problem
    def init_s(self) -> float:
        """Prompt prefill for the draft; a non-GPU draft gets its KV cache from a GPU over the
        link (state migration, once per problem)."""
        if self.init_gpu is None:
            return float(self.design.draft.prefill_s(self.prompt, 0))
        kv = self.design.draft.kv_bytes_per_token * self.prompt
        return float(self.init_gpu.prefill_s(self.prompt, 0)
                     + transfer_s(self.design.draft_link, kv))

    def init_energy_j(self) -> float:
        p = self.init_gpu or self.design.draft
        t = float(p.prefill_s(self.prompt, 0))
        dyn = float(p.power_w("prefill", 0, n_new=self.prompt) - p.power_w("idle"))
        return t * max(dyn, 0.0)




def _where(cond: ArrayLike, a: ArrayLike, b: ArrayLike) -> ArrayLike:
    """np.where, except that a scalar condition returns its branch as it is, not broadcast to
    the other's shape: the closed form times one outcome at a time on quadrature grids, and a
    term that does not vary along a grid axis stays small (the simulator passes arrays)."""
    c = np.asarray(cond)
    if c.ndim == 0:
        return a if c else b
    return np.where(c, a, b)


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


@dataclass(frozen=True)
class StepCosts:
    """What each operation of one attempt costs at its inputs (seconds; W above idle), before
    the schedule (`compose`) decides what overlaps and what lies on the critical path. The
    closed form computes them once per grid and composes every outcome from them."""

    z: F64  # tokens of the next draft step (per-token speed of the speculation)
    nt: F64  # target tokens of a rewrite
    n_alt: F64  # tokens of a backtrack's alternative
    d_step: F64  # draft decodes this step
    lk1: F64  # the step to the PRM
    lkv: float  # the verdict back
    p1: F64  # PRM scores the step
    d_next: F64  # draft decodes the next step (speculation)
    lk_u: F64  # uncached tokens to the target
    t_pre: F64  # target prefills them
    t_dec: F64  # target decodes the rewrite
    lk_t: F64  # the rewrite to the draft
    sync_work: F64  # draft absorbs (shadow sync) or prefills the rewrite
    p2: F64  # PRM scores the rewrite (backtracking only; else 0)
    d_next_ref: F64  # draft decodes the next step after the rewrite
    t_alt: F64  # target writes the alternative from the anchor
    lk_a: F64  # the alternative to the draft
    sync2_work: F64  # draft ingests the alternative
    d_next_alt: F64  # draft decodes the next step after the alternative
    draft_w: F64  # power above idle while decoding at this context
    prm_w_step: F64  # ... of the PRM scoring the step
    prm_w_rewrite: F64  # ... scoring the rewrite
    target_w: F64  # ... of the target decoding


def step_costs(c: Costs, s: Schedule, *, resp: ArrayLike, x: ArrayLike, z: ArrayLike,
               nt: ArrayLike, u: ArrayLike, n_alt: ArrayLike, resp_anchor: ArrayLike
               ) -> StepCosts:
    """Cost of every operation an attempt may run (arguments as for `attempt`)."""
    resp = np.asarray(resp, dtype=float)
    x = np.asarray(x, dtype=float)
    z = np.asarray(z, dtype=float)
    nt = np.asarray(nt, dtype=float)
    n_alt = np.asarray(n_alt, dtype=float)
    resp_anchor = np.asarray(resp_anchor, dtype=float)
    ingest = c.draft_absorb if s.shadow_sync else c.draft_prefill
    t_dec = c.target_decode(nt, resp)
    return StepCosts(
        z=z, nt=nt, n_alt=n_alt,
        d_step=c.draft_decode(x, resp), lk1=c.link_draft(x), lkv=c.link_verdict(),
        p1=c.prm(x, resp), d_next=c.draft_decode(z, resp + x),
        lk_u=c.link_gpu(u), t_pre=c.target_prefill(u, resp), t_dec=t_dec,
        lk_t=c.link_draft(nt), sync_work=ingest(nt, resp),
        p2=c.prm(nt, resp) if s.backtracking else np.zeros_like(t_dec),
        d_next_ref=c.draft_decode(z, resp + nt),
        t_alt=c.target_decode(n_alt, resp_anchor), lk_a=c.link_draft(n_alt),
        sync2_work=ingest(n_alt, resp_anchor), d_next_alt=c.draft_decode(z, resp_anchor + n_alt),
        draft_w=c.draft_dyn_w(resp), prm_w_step=c.prm_dyn_w(c.workload.problem_tokens + resp + x),
        prm_w_rewrite=c.prm_dyn_w(c.workload.problem_tokens + resp + nt),
        target_w=c.target_dyn_w(resp),
    )


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


def compose(k: StepCosts, s: Schedule, *, outcome: ArrayLike, spec_ok: ArrayLike,
            ahead: ArrayLike) -> Attempt:
    """The schedule: how an attempt's operations (`k`) overlap, for an outcome (ACCEPT, REFINE
    or BACKTRACK), whether a next step exists (spec_ok) and the draft's head start (ahead)."""
    out = np.asarray(outcome)
    ahead = np.asarray(ahead, dtype=float)
    spec_ok = np.asarray(spec_ok, dtype=bool)
    sa, bt, shadow = s.step_ahead, s.backtracking, s.shadow_sync
    acc = out == ACCEPT
    bk = out == BACKTRACK
    rej = ~acc
    spec_on = spec_ok & sa  # the draft speculates the next step during the verification
    lkv, lk_u, lk_t, lk_a = k.lkv, k.lk_u, k.lk_t, k.lk_a

    # draft and verification
    rem = k.d_step - ahead
    w = k.lk1 + k.p1 + lkv
    verdict = rem + w
    spec = _where(spec_on, np.minimum(k.d_next, w), 0.0)
    stall = _where(spec_on, np.maximum(w - k.d_next, 0.0), 0.0)
    # the paper's speculation stall counts steps: those where the draft finished speculating
    # the next step before the verdict on this one, and waited
    stalled = _where(spec_on & (w > k.d_next), 1.0, 0.0)

    # target
    t_full = k.t_pre + k.t_dec
    ready = np.maximum(verdict, lk_u + t_full) if sa else verdict + lk_u + t_full
    if shadow:
        sync_end = np.maximum(verdict + k.sync_work,
                              ready + lk_t + k.sync_work / np.maximum(k.nt, 1))
    else:
        sync_end = ready + lk_t + k.sync_work
    commit_ref = ready + lk_t + (k.p2 + lkv if bt else 0.0)

    # backtrack: alternative from the anchor (cached prefix), draft rolls back and ingests it
    if np.any(bk):
        t_alt, sync2_work = k.t_alt, k.sync2_work
        alt_end = commit_ref + t_alt
        if shadow:
            sync2 = np.maximum(commit_ref + sync2_work,
                               alt_end + lk_a + sync2_work / np.maximum(k.n_alt, 1))
        else:
            sync2 = alt_end + lk_a + sync2_work
        # speculation the draft did after re-synchronising, before the rewrite's verdict;
        # wasted when that verdict sends the system back
        spec_bt = _where(bk & spec_on, np.clip(commit_ref - sync_end, 0.0, k.d_next_ref), 0.0)
        # the verdict discards the rewrite: the draft stops ingesting it (rolls its KV pointer
        # back) and has done the share of the work that fits before the verdict
        start = verdict if shadow else ready + lk_t
        sync1_work = k.sync_work * np.clip((commit_ref - start)
                                           / np.maximum(sync_end - start, 1e-12), 0.0, 1.0)
    else:  # no backtrack among the inputs: the backtrack-only terms are never selected
        t_alt = sync2_work = spec_bt = sync1_work = 0.0
        alt_end, sync2 = commit_ref, sync_end

    commit = _where(acc, verdict, _where(bk, alt_end + lk_a, commit_ref))
    sync_final = _where(bk, sync2, sync_end)
    # after a reject the draft speculates the next step from its re-synchronisation to the
    # commit (post > 0), or starts late (post < 0)
    if np.any(rej):
        gap = commit - sync_final
        post = _where(spec_on, np.minimum(gap, _where(bk, k.d_next_alt, k.d_next_ref)),
                      np.minimum(gap, 0.0))
        next_ahead = _where(acc, spec, post)
        post_spec = _where(rej, np.maximum(post, 0.0), 0.0)
        # gap - min(gap, d) = max(gap - d, 0): waiting after the speculation of the next step
        stall_after = _where(rej & spec_on, gap - post, 0.0)
    else:
        next_ahead, post_spec, stall_after = spec, 0.0, 0.0

    # critical path by role
    crit_prm = k.p1 + _where(rej, k.p2, 0.0)
    target_wait = ready - verdict if sa else t_full
    crit_target = _where(rej, target_wait + _where(bk, t_alt, 0.0), 0.0)
    crit_link = k.lk1 + lkv + _where(rej, (0.0 if sa else lk_u) + lk_t + (lkv if bt else 0.0)
                                     + _where(bk, lk_a, 0.0), 0.0)

    # busy time and energy above idle
    wasted_s = _where(rej, spec, 0.0) + spec_bt
    # a rewrite committed as the problem's last step needs no re-synchronisation (nothing
    # follows), nor does an alternative that ends the problem (an anchor one step back at
    # the last step); otherwise the problem goes on from the anchor, so the draft ingests it
    sync_busy = _where(bk, sync1_work + _where(spec_ok, sync2_work, 0.0),
                       _where(rej & spec_ok, k.sync_work, 0.0))
    # decode (less what was done ahead) + speculation + re-synchronisation; the terms that
    # vary over every input last
    draft_busy = k.d_step - np.maximum(ahead, 0.0) + spec + sync_busy + spec_bt + post_spec
    if sa:
        prefetch = np.clip(verdict - lk_u, 0.0, t_full)
        target_busy = _where(acc, prefetch, t_full + _where(bk, t_alt, 0.0))
    else:
        target_busy = _where(acc, 0.0, t_full + _where(bk, t_alt, 0.0))
    prm_j = k.p1 * k.prm_w_step + _where(rej, k.p2 * k.prm_w_rewrite, 0.0)
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
        sync_end_s=sync_final,
    )
