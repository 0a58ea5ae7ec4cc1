"""What each operation of an attempt costs: the cost primitives of each role at a context.

`Costs` binds a design to a workload (contexts are response tokens; the prompt / problem prefix
is added here); `step_costs` evaluates every operation one attempt may run at arrays of inputs,
before a schedule (dse.model.schedules.compose) decides what overlaps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.devices.link import token_bytes, transfer_s
from dse.devices.protocol import Placement
from dse.model.schedules.registry import Schedule
from dse.specs import LinkSpec
from dse.specs.scenario import WorkloadSpec

if TYPE_CHECKING:  # dse.model.design imports the schedules; the costs only read a Design
    from dse.model.design import Design

F64 = NDArray[np.float64]
VERDICT_BYTES = 8  # accept/reject flag and reward score


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
        """The verifier scores a step of n tokens after resp response tokens (dse.model.verifiers:
        a PRM re-reads problem + all steps + the new step every call; a target judge prefills
        the step after its cached prefix; the score token comes from that prefill)."""
        d = self.design
        return d.verifier.score_s(d.prm, self.workload, n, resp)

    def target_prefill(self, u: ArrayLike, resp: ArrayLike) -> F64:
        """Prefix caching: prefill only the u tokens the target has not seen. A target that
        judges every step has prefilled each one when it scored it (and the prompt at the
        start, `init_s`), so a rewrite prefills nothing new."""
        if self.design.verifier.is_target:
            return np.zeros(np.broadcast_shapes(np.shape(u), np.shape(resp)))
        ctx = np.maximum(self.prompt + np.asarray(resp) - np.asarray(u), 0)
        return self.design.target.prefill_s(u, ctx)

    def target_decode(self, n: ArrayLike, resp: ArrayLike) -> F64:
        return self.design.target.decode_s(n, self.prompt + np.asarray(resp))

    # ---- links; no hop between roles that share a device
    def _hop(self, a: str, b: str, link: LinkSpec, n_tokens: ArrayLike) -> F64:
        n = np.asarray(n_tokens, dtype=float)
        if self.design.shares_device(a, b):
            return np.zeros_like(n)
        return np.asarray(transfer_s(link, token_bytes(n)))

    def link_draft(self, n_tokens: ArrayLike) -> F64:
        """A draft step to the verifier."""
        return self._hop("draft", "prm", self.design.draft_link, n_tokens)

    def link_to_draft(self, n_tokens: ArrayLike) -> F64:
        """The target's tokens (a rewrite, an alternative) to the draft."""
        return self._hop("draft", "target", self.design.draft_link, n_tokens)

    def link_gpu(self, n_tokens: ArrayLike) -> F64:
        """Tokens the target has not seen, from the verifier's device to the target's."""
        n = np.asarray(n_tokens, dtype=float)
        return np.where(n > 0, self._hop("prm", "target", self.design.gpu_link, n), 0.0)

    def link_verdict(self) -> float:
        if self.design.shares_device("draft", "prm"):
            return 0.0
        return float(transfer_s(self.design.draft_link, VERDICT_BYTES))

    # ---- power above idle (W), at a context
    def draft_dyn_w(self, resp: ArrayLike) -> F64:
        p = self.design.draft
        ctx = self.prompt + np.asarray(resp)
        return p.power_w("decode", ctx) - p.power_w("idle")

    def prm_dyn_w(self, n: ArrayLike, resp: ArrayLike) -> F64:
        """Power above idle of the verifier scoring n new tokens after resp."""
        d = self.design
        return d.verifier.score_dyn_w(d.prm, self.workload, n, resp)

    def target_dyn_w(self, resp: ArrayLike) -> F64:
        p = self.design.target
        return p.power_w("decode", self.prompt + np.asarray(resp)) - p.power_w("idle")

    def idle_w(self) -> dict[str, float]:
        """Idle power booked to each device role: a shared device's counted once, with the
        first role of its group."""
        d = self.design
        return {r: (float(getattr(d, r).power_w("idle")) if d.idle_owner(r) else 0.0)
                for r in d.roles}

    # ---- once per problem
    def init_s(self) -> float:
        """Prompt prefill for the draft; a non-GPU draft gets its KV cache from a GPU over the
        link (state migration, once per problem). A target that judges also prefills the
        prompt (after the draft's, on one device or not: a few ms either way)."""
        d = self.design
        if not d.is_speculative:
            return float(d.target.prefill_s(self.prompt, 0))
        if self.init_gpu is None:
            t = float(d.draft.prefill_s(self.prompt, 0))
        else:
            kv = d.draft.kv_bytes_per_token * self.prompt
            t = float(self.init_gpu.prefill_s(self.prompt, 0) + transfer_s(d.draft_link, kv))
        if d.verifier.is_target:
            t += float(d.target.prefill_s(self.prompt, 0))
        return t

    def init_energy_by_role(self) -> dict[str, tuple[Placement, float]]:
        """Energy above idle of the prompt prefills, by the device role that runs each (the
        target GPU for a migrated draft's prompt) with the placement that ran it."""
        d = self.design
        out: dict[str, tuple[Placement, float]] = {}

        def add(role: str, p: Placement) -> None:
            t = float(p.prefill_s(self.prompt, 0))
            dyn = float(p.power_w("prefill", 0, n_new=self.prompt) - p.power_w("idle"))
            prev = out.get(role, (p, 0.0))[1]
            out[role] = (p, prev + t * max(dyn, 0.0))

        if not d.is_speculative:
            add("target", d.target)
            return out
        if self.init_gpu is not None:
            add("target", self.init_gpu)
        else:
            add("draft", d.draft)
        if d.verifier.is_target:
            add("target", d.target)
        return out

    def init_energy_j(self) -> float:
        return sum(j for _, j in self.init_energy_by_role().values())


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
    n_alt = np.asarray(n_alt, dtype=float)
    resp_anchor = np.asarray(resp_anchor, dtype=float)
    ingest = c.draft_absorb if s.shadow_sync else c.draft_prefill
    return StepCosts(
        z=z, n_alt=n_alt,
        d_step=c.draft_decode(x, resp), lk1=c.link_draft(x), lkv=c.link_verdict(),
        p1=c.prm(x, resp), d_next=c.draft_decode(z, resp + x),
        t_alt=c.target_decode(n_alt, resp_anchor), lk_a=c.link_to_draft(n_alt),
        sync2_work=ingest(n_alt, resp_anchor), d_next_alt=c.draft_decode(z, resp_anchor + n_alt),
        draft_w=c.draft_dyn_w(resp), prm_w_step=c.prm_dyn_w(x, resp),
        target_w=c.target_dyn_w(resp),
        **uncached_costs(c, resp=resp, u=u), **rewrite_costs(c, s, resp=resp, z=z, nt=nt),
    )


def uncached_costs(c: Costs, *, resp: ArrayLike, u: ArrayLike) -> dict[str, Any]:
    """The step costs that depend on the tokens the target has not prefilled (u): sending
    and prefilling them (`dataclasses.replace` of a StepCosts with these moves its u)."""
    return {"lk_u": c.link_gpu(u), "t_pre": c.target_prefill(u, resp)}


def rewrite_costs(c: Costs, s: Schedule, *, resp: ArrayLike, z: ArrayLike, nt: ArrayLike
                  ) -> dict[str, Any]:
    """The step costs that depend on the rewrite's length (nt): writing it, sending it to the
    draft, ingesting and scoring it, the next step after it (`dataclasses.replace` of a
    StepCosts with these moves its nt)."""
    resp = np.asarray(resp, dtype=float)
    nt = np.asarray(nt, dtype=float)
    ingest = c.draft_absorb if s.shadow_sync else c.draft_prefill
    t_dec = c.target_decode(nt, resp)
    return {"nt": nt, "t_dec": t_dec, "lk_t": c.link_to_draft(nt),
            "sync_work": ingest(nt, resp),
            "p2": c.prm(nt, resp) if s.backtracking else np.zeros_like(t_dec),
            "d_next_ref": c.draft_decode(z, resp + nt), "prm_w_rewrite": c.prm_dyn_w(nt, resp)}
