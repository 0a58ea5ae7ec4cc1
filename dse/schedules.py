"""Schedule timing: what one attempt at a reasoning step costs under each schedule.

An *attempt* is one pass at step position t: the draft writes the step, the PRM scores it, and
on a reject the target rewrites it (and, with backtracking, the PRM scores the rewrite, which
may send the system back to an anchor). `attempt` returns the attempt's critical-path time split
by role, each device's busy time, energy above idle, speculation stall and wasted work. Both
evaluators call it: the simulator with one sampled record per problem, the closed form with
quadrature grids of the same random inputs, so the two agree by construction up to the
expectation of the inputs.

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
           rolls back its KV pointer and ingests the alternative.
Speculative draft work discarded by a reject or a backtrack is wasted work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.cost.device import Placement
from dse.cost.link import token_bytes, transfer_s
from dse.design import Design, Schedule
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
    resp = np.asarray(resp, dtype=float)
    x = np.asarray(x, dtype=float)
    z = np.asarray(z, dtype=float)
    nt = np.asarray(nt, dtype=float)
    u = np.asarray(u, dtype=float)
    out = np.asarray(outcome)
    ahead = np.asarray(ahead, dtype=float)
    spec_ok = np.asarray(spec_ok, dtype=bool)
    sa, bt, shadow = s.step_ahead, s.backtracking, s.shadow_sync
    acc = out == ACCEPT
    bk = out == BACKTRACK
    rej = ~acc
    spec_on = spec_ok & sa  # the draft speculates the next step during the verification

    # draft and verification
    d_step = c.draft_decode(x, resp)
    rem = d_step - ahead
    lk1 = c.link_draft(x)
    lkv = c.link_verdict()
    p1 = c.prm(x, resp)
    w = lk1 + p1 + lkv
    verdict = rem + w
    d_next = c.draft_decode(z, resp + x)
    spec = _where(spec_on, np.minimum(d_next, w), 0.0)
    stall = _where(spec_on, np.maximum(w - d_next, 0.0), 0.0)
    # the paper's speculation stall counts steps: those where the draft finished speculating
    # the next step before the verdict on this one, and waited
    stalled = _where(spec_on & (w > d_next), 1.0, 0.0)

    # target
    lk_u = c.link_gpu(u)
    t_pre = c.target_prefill(u, resp)
    t_dec = c.target_decode(nt, resp)
    t_full = t_pre + t_dec
    ready = np.maximum(verdict, lk_u + t_full) if sa else verdict + lk_u + t_full
    lk_t = c.link_draft(nt)
    if shadow:
        sync_work = c.draft_absorb(nt, resp)
        sync_end = np.maximum(verdict + sync_work, ready + lk_t + sync_work / np.maximum(nt, 1))
    else:
        sync_work = c.draft_prefill(nt, resp)
        sync_end = ready + lk_t + sync_work
    p2 = c.prm(nt, resp) if bt else np.zeros_like(t_full)
    commit_ref = ready + lk_t + (p2 + lkv if bt else 0.0)
    d_next_ref = c.draft_decode(z, resp + nt)

    # backtrack: alternative from the anchor (cached prefix), draft rolls back and ingests it
    if np.any(bk):
        resp_anchor = np.asarray(resp_anchor, dtype=float)
        t_alt = c.target_decode(n_alt, resp_anchor)
        lk_a = c.link_draft(n_alt)
        alt_end = commit_ref + t_alt
        if shadow:
            sync2_work = c.draft_absorb(n_alt, resp_anchor)
            sync2 = np.maximum(commit_ref + sync2_work,
                               alt_end + lk_a + sync2_work / np.maximum(np.asarray(n_alt), 1))
        else:
            sync2_work = c.draft_prefill(n_alt, resp_anchor)
            sync2 = alt_end + lk_a + sync2_work
        d_next_alt = c.draft_decode(z, resp_anchor + n_alt)
        # speculation the draft did after re-synchronising, before the rewrite's verdict;
        # wasted when that verdict sends the system back
        spec_bt = _where(bk & spec_on, np.clip(commit_ref - sync_end, 0.0, d_next_ref), 0.0)
    else:  # no backtrack among the inputs: the backtrack-only terms are never selected
        t_alt = lk_a = sync2_work = spec_bt = 0.0
        alt_end, sync2, d_next_alt = commit_ref, sync_end, d_next_ref

    commit = _where(acc, verdict, _where(bk, alt_end + lk_a, commit_ref))
    sync_final = _where(bk, sync2, sync_end)
    # after a reject the draft speculates the next step from its re-synchronisation to the
    # commit (post > 0), or starts late (post < 0)
    if np.any(rej):
        gap = commit - sync_final
        post = _where(spec_on, np.minimum(gap, _where(bk, d_next_alt, d_next_ref)),
                      np.minimum(gap, 0.0))
        next_ahead = _where(acc, spec, post)
        post_spec = _where(rej, np.maximum(post, 0.0), 0.0)
        # gap - min(gap, d) = max(gap - d, 0): waiting after the speculation of the next step
        stall_after = _where(rej & spec_on, gap - post, 0.0)
    else:
        next_ahead, post_spec, stall_after = spec, 0.0, 0.0

    # critical path by role
    crit_draft = rem
    crit_prm = p1 + _where(rej, p2, 0.0)
    target_wait = ready - verdict if sa else t_full
    crit_target = _where(rej, target_wait + _where(bk, t_alt, 0.0), 0.0)
    crit_link = lk1 + lkv + _where(rej, (0.0 if sa else lk_u) + lk_t + (lkv if bt else 0.0)
                                   + _where(bk, lk_a, 0.0), 0.0)

    # busy time and energy above idle
    wasted_s = _where(rej, spec, 0.0) + spec_bt
    # a rewrite committed as the problem's last step needs no re-synchronisation (nothing
    # follows); after a backtrack the problem goes on from the anchor, so the draft syncs
    sync_busy = _where(bk, sync_work + sync2_work, _where(rej & spec_ok, sync_work, 0.0))
    # decode (less what was done ahead) + speculation + re-synchronisation; the terms that
    # vary over every input last
    draft_busy = d_step - np.maximum(ahead, 0.0) + spec + sync_busy + spec_bt + post_spec
    prm_busy = p1 + _where(rej, p2, 0.0)
    if sa:
        prefetch = np.clip(verdict - lk_u, 0.0, t_full)
        target_busy = _where(acc, prefetch, t_full + _where(bk, t_alt, 0.0))
    else:
        target_busy = _where(acc, 0.0, t_full + _where(bk, t_alt, 0.0))
    draft_w = c.draft_dyn_w(resp)
    draft_j = draft_busy * draft_w
    prm_j = p1 * c.prm_dyn_w(c.workload.problem_tokens + resp + x) + _where(
        rej, p2 * c.prm_dyn_w(c.workload.problem_tokens + resp + nt), 0.0)
    target_j = target_busy * c.target_dyn_w(resp)
    per_token = d_next / np.maximum(z, 1.0)
    wasted_tokens = wasted_s / np.maximum(per_token, 1e-12)

    # the target starts at the attempt's start with prefetch, else after the verdict; shaped
    # like the other fields for the timeline
    target_start = np.asarray(lk_u if sa else verdict + lk_u) + np.zeros_like(verdict)
    return Attempt(
        time_s=commit, crit_draft_s=crit_draft, crit_prm_s=crit_prm, crit_target_s=crit_target,
        crit_link_s=crit_link, draft_busy_s=draft_busy, prm_busy_s=prm_busy,
        target_busy_s=target_busy, draft_dyn_j=draft_j, prm_dyn_j=prm_j, target_dyn_j=target_j,
        stall_s=stall + stall_after, stalled=stalled, wasted_s=wasted_s,
        wasted_tokens=wasted_tokens, wasted_j=wasted_s * draft_w, next_ahead_s=next_ahead,
        target_called=np.asarray(rej, dtype=float), draft_end_s=rem, prm_start_s=rem + lk1,
        verdict_s=verdict, speculate_s=spec, target_start_s=target_start,
        target_ready_s=ready, refine_verdict_s=commit_ref,
        sync_end_s=sync_final,
    )
