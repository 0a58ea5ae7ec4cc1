"""The timing rules of an attempt, each written once, generic over the max / min operators.

Both evaluator families build on these functions: the closed form and the simulator through
`dse.model.schedules.compose` (numpy arrays, `NUMPY` operators) and the mean-value model through
`dse.model.symbolic.step_expressions` (sympy expressions, `SYMPY` operators, built there so that
sympy stays a dependency of that module only). A rule takes the schedule's flags as Python bools;
outcome conditions (`accepted`, `rejected`, ...) are arrays for numpy and Python bools for the
mean-value form, which writes one expression per outcome.

All times are seconds from the attempt's start (the previous commit). The two forms differ only
in what they feed the rules, and the differences are explicit at their call sites:
- inputs: the closed form passes per-sample costs (quadrature over token counts and contexts,
  the simulator one record per problem); the mean-value form passes the costs of a mean step at
  the mean context (dse.model.symbolic.COMPONENTS);
- the draft's head start: the closed form carries it from attempt to attempt (a fixed point
  over the chain of attempts); the mean-value form mixes the head start after an accept and
  after a reject by p_accept;
- the re-synchronisation lag after the last streamed token (shadow sync): the closed form uses
  the rewrite's mean per-token absorb time, the mean-value form one token's absorb (`a1`);
- the mean-value form books the draft's decode of a step in full to its attempt and does not
  cut the ingestion of a rewrite that a backtrack discards (see `draft_busy_s`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

ACCEPT, REFINE, BACKTRACK = 0, 1, 2  # outcomes of an attempt
OUTCOMES = {"accept": ACCEPT, "refine": REFINE, "backtrack": BACKTRACK}


@dataclass(frozen=True)
class Ops:
    """The operators a rule may use: elementwise max and min, and a select `where(cond, a, b)`
    (numpy arrays or sympy expressions)."""

    max: Callable[[Any, Any], Any]
    min: Callable[[Any, Any], Any]
    where: Callable[[Any, Any, Any], Any]


def _np_where(cond: Any, a: Any, b: Any) -> Any:
    """np.where, except that a scalar condition returns its branch as it is, not broadcast to
    the other's shape: the closed form times one outcome at a time on quadrature grids, and a
    term that does not vary along a grid axis stays small (the simulator passes arrays)."""
    c = np.asarray(cond)
    if c.ndim == 0:
        return a if c else b
    return np.where(c, a, b)


NUMPY = Ops(max=np.maximum, min=np.minimum, where=_np_where)


def select_bool(cond: Any, a: Any, b: Any) -> Any:
    """`where` for forms whose conditions are Python bools (one expression per outcome)."""
    if not isinstance(cond, bool):
        raise TypeError(f"expected a bool condition, got {type(cond).__name__}")
    return a if cond else b


# ------------------------------------------------------------------ draft and verification


def draft_on_path_s(*, decode: Any, ahead: Any) -> Any:
    """The draft's time on the critical path: its decode of the step less the head start
    (ahead > 0: decoded early during the previous verification; < 0: a late start after a
    re-synchronisation that ended past the previous commit)."""
    return decode - ahead


def verification_s(*, to_verifier: Any, score: Any, verdict_back: Any) -> Any:
    """W: the step over the link, the verifier scores it, the verdict comes back."""
    return to_verifier + score + verdict_back


def verdict_s(*, on_path: Any, verification: Any) -> Any:
    """When the verdict on the step arrives."""
    return on_path + verification


def speculation_s(o: Ops, *, next_decode: Any, verification: Any) -> Any:
    """Step-ahead: the draft speculates the next step while the step is verified, for at most
    the verification; it is the next attempt's head start when the step is accepted."""
    return o.min(next_decode, verification)


# ---------------------------------------------------------------------------- reject path


def target_ready_s(o: Ops, *, verdict: Any, to_target: Any, rewrite: Any,
                   step_ahead: bool) -> Any:
    """When the target's rewrite is ready: with prefetch (step-ahead) it started at the
    attempt's start, so max(verdict, link + rewrite); else it starts after the verdict."""
    if step_ahead:
        return o.max(verdict, to_target + rewrite)
    return verdict + to_target + rewrite


def resync_end_s(o: Ops, *, start: Any, ready: Any, to_draft: Any, ingest: Any, lag: Any,
                 shadow_sync: bool) -> Any:
    """When the draft has ingested tokens the target wrote (a rewrite, or an alternative after
    a backtrack). Shadow sync absorbs them as they stream from `start`: done at
    max(start + ingest, ready + link + lag), lag the absorb time after the last token; without
    it the draft prefills them once they arrive: ready + link + ingest."""
    if shadow_sync:
        return o.max(start + ingest, ready + to_draft + lag)
    return ready + to_draft + ingest


def refine_commit_s(*, ready: Any, to_draft: Any, verify_rewrite: Any,
                    backtracking: bool) -> Any:
    """When a rewrite commits: it reaches the draft; with backtracking the verifier scores it
    first (verify_rewrite: score + verdict link)."""
    return ready + to_draft + (verify_rewrite if backtracking else 0.0)


def alternative_end_s(*, refine_commit: Any, alternative: Any) -> Any:
    """After a backtrack the target writes an alternative from the anchor (cached prefix),
    starting at the rewrite's failed verdict."""
    return refine_commit + alternative


def backtrack_commit_s(*, alternative_end: Any, to_draft: Any) -> Any:
    """When the alternative commits: it reaches the draft."""
    return alternative_end + to_draft


def head_start_after_reject_s(o: Ops, *, gap: Any, next_decode: Any, speculates: Any) -> Any:
    """The next attempt's head start after a reject, gap = commit - end of the draft's
    re-synchronisation: with step-ahead the draft speculates the next step in the gap (at most
    next_decode); it starts late by -gap when the re-synchronisation ends after the commit."""
    return o.where(speculates, o.min(gap, next_decode), o.min(gap, 0.0))


# ----------------------------------------------------------------------------- busy time


def draft_busy_s(o: Ops, *, decode: Any, ahead: Any, ingest: Any, speculated: Any) -> Any:
    """The draft's busy time in an attempt: its decode less what it did ahead (booked to the
    attempt that ran it), the ingestion of target tokens and the speculation it runs. The
    mean-value form passes ahead = speculated = 0: it books each step's decode in full to its
    attempt, which equals the closed form's booking once the head start carried into an
    attempt equals the one carried out."""
    return decode - o.max(ahead, 0.0) + ingest + speculated


def verifier_busy_s(o: Ops, *, score: Any, rewrite: Any, rejected: Any) -> Any:
    """The verifier scores the step, and on a reject the rewrite (0 without backtracking)."""
    return score + o.where(rejected, rewrite, 0.0)


def prefetch_s(o: Ops, *, verdict: Any, to_target: Any, rewrite: Any) -> Any:
    """Step-ahead: on an accepted step the target's prefetched rewrite is cut short at the
    verdict, after running from the context's arrival."""
    return o.min(o.max(verdict - to_target, 0.0), rewrite)


def target_busy_s(o: Ops, *, accepted: Any, backtracked: Any, prefetch: Any, rewrite: Any,
                  alternative: Any) -> Any:
    """The target's busy time: the cut prefetch on an accept (0 without step-ahead), else the
    rewrite, and after a backtrack the alternative."""
    return o.where(accepted, prefetch, rewrite + o.where(backtracked, alternative, 0.0))


def wasted_speculation_s(o: Ops, *, rejected: Any, speculated: Any, before_backtrack: Any
                         ) -> Any:
    """Draft speculation discarded: the step-ahead speculation of a rejected step, and the
    speculation after a re-synchronisation that a backtracking verdict throws away."""
    return o.where(rejected, speculated, 0.0) + before_backtrack
