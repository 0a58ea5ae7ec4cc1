"""Trace-driven discrete-event simulator: synthetic traces, JSONL traces, replay, timelines.

A trace is one record per attempt and problem (the fields RSD's and SpecReason's logs carry):

    {"problem": 0, "step": 3, "draft_tokens": 41, "draft_reward": 0.82,
     "target_tokens": 0, "target_reward": null, "decision": "accept"}

`decision` is `accept`, `refine` (the target's rewrite is kept) or `backtrack` (the rewrite
failed the backtrack threshold; then `backtrack_to` is the anchor step index, 0-based, and
`alt_tokens` the length of the target's alternative for the step after it). An optional
`"correct": true|false` on a problem's last record gives its answer's correctness.

The replay walks every problem's records in order, vectorised across problems, and times each
attempt with `dse.model.schedules.attempt` using the actual context, the tokens the target has not
seen, and the draft's head start carried from the previous attempt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dse.core import special
from dse.core.limits import MAX_CONTEXT_TOKENS, MAX_PROBLEMS, MAX_TRACE_FILE_BYTES
from dse.core.roles import busy_field, crit_field, dyn_field
from dse.errors import SpecError, UsageError
from dse.model.schedules import (
    ACCEPT,
    BACKTRACK,
    DEVICE_ROLES,
    OUTCOMES,
    PATH_ROLES,
    REFINE,
    Costs,
    attempt,
)
from dse.model.schedules.fields import REPLAY_FIELDS
from dse.model.workflow import (
    chain_success,
    design_scores,
    design_step_probabilities,
    lognormal_params,
    max_steps,
    sample_steps,
)
from dse.specs import Key, check_value
from dse.specs.schema import check_keys, parse_json, read_text
from dse.width.difficulty import DEFAULT_BINS

F64 = NDArray[np.float64]
DECISIONS = OUTCOMES  # a trace record's decision -> outcome


@dataclass(frozen=True)
class Trace:
    """Records as padded arrays [problems, attempts]; `valid` marks real records."""

    valid: NDArray[np.bool_]
    draft_tokens: F64
    draft_reward: F64
    target_tokens: F64
    target_reward: F64
    decision: NDArray[np.int64]
    backtrack_to: NDArray[np.int64]
    alt_tokens: F64
    correct: NDArray[np.float64]  # per problem: 1, 0, or NaN when unknown

    @property
    def problems(self) -> int:
        return int(self.valid.shape[0])


# ---------------------------------------------------------------------- synthetic traces


def lhs(rng: np.random.Generator, n: int) -> F64:
    """n stratified uniforms: one in each of n equal bins, in random order."""
    return (rng.permutation(n) + rng.random(n)) / n


def token_ppf(u: F64, mean: float, cv: float) -> F64:
    """Lognormal token counts (at least 1) at quantiles u."""
    if cv <= 0:
        return np.full(np.shape(u), max(mean, 1.0))
    mu, s = lognormal_params(mean, cv)
    return np.maximum(np.exp(mu + s * special.ndtri(u)), 1.0)


def synthetic_trace(c: Costs, problems: int, seed: int = 0) -> Trace:
    """Sample `problems` problems from the workload with the design's thresholds and the
    workflow rules (accept / refine / backtrack to the latest draft-accepted step in the
    window, at most max_backtracks per problem). The steps' good or bad draws, which set the
    PRM's scores and so the decisions, use the dataset-average step rates (as the closed form's
    timing does); each problem's correctness is drawn at its own difficulty and step count
    (dse.model.workflow.chain_success, the closed form's accuracy term), the problems spread evenly
    over the difficulty bins."""
    from scipy import stats  # local: ~0.5 s to import, and only the PRM score quantiles need it

    if not 1 <= problems <= MAX_PROBLEMS:
        raise UsageError(f"problems: must be in 1..{MAX_PROBLEMS}, got {problems}")

    d, w, s = c.design, c.workload, c.design.schedule
    rng = np.random.default_rng(seed)
    pr = design_step_probabilities(d, w)
    h_d = float(pr.h_draft)
    t_if_bad, t_if_good = float(pr.t_if_bad), float(pr.t_if_good)
    m_c = float(pr.p_accept) * w.draft_step_tokens_mean + (1 - float(pr.p_accept)) * (
        w.target_step_tokens_mean)
    s_max = max_steps(w, d.max_context_tokens, m_c)
    steps = sample_steps(rng, w, s_max, problems)
    cap = int(steps.max()) + 2
    k_max = int(steps.max()) * (1 + (d.max_backtracks if s.backtracking else 0)
                                * d.backtrack_window) + 1
    shape = (problems, k_max)
    rec = {k: np.zeros(shape) for k in ("x", "rd", "nt", "rt", "alt")}
    dec = np.zeros(shape, dtype=np.int64)
    bto = np.full(shape, -1, dtype=np.int64)
    valid = np.zeros(shape, dtype=bool)
    t = np.zeros(problems, dtype=np.int64)
    used = np.zeros(problems, dtype=np.int64)
    from_draft = np.zeros((problems, cap), dtype=bool)
    rows = np.arange(problems)
    fails = backtracks = 0
    # PRM score quantile functions, tabulated once (scipy's beta.ppf is slow per draw)
    q_grid = np.linspace(0.0, 1.0, 4097)
    sc = design_scores(d, w)
    good_ppf = stats.beta.ppf(q_grid, sc.good_alpha, sc.good_beta)
    bad_ppf = stats.beta.ppf(q_grid, sc.bad_alpha, sc.bad_beta)
    for k in range(k_max):
        active = t < steps
        if not active.any():
            break
        n = problems
        # Latin-hypercube draws across problems at each attempt index: exact marginals, much
        # less sampling noise in the means than independent draws
        x = np.rint(token_ppf(lhs(rng, n), w.draft_step_tokens_mean, w.draft_step_tokens_cv))
        nt = np.rint(token_ppf(lhs(rng, n), w.target_step_tokens_mean, w.target_step_tokens_cv))
        alt = np.rint(token_ppf(lhs(rng, n), w.target_step_tokens_mean, w.target_step_tokens_cv))
        bad_d = lhs(rng, n) < h_d
        bad_t = lhs(rng, n) < np.where(bad_d, t_if_bad, t_if_good)  # the rewrite's
        u_d, u_t = lhs(rng, n), lhs(rng, n)
        rd = np.where(bad_d, np.interp(u_d, q_grid, bad_ppf), np.interp(u_d, q_grid, good_ppf))
        rt = np.where(bad_t, np.interp(u_t, q_grid, bad_ppf), np.interp(u_t, q_grid, good_ppf))
        acc = rd >= d.accept_threshold
        fail = s.backtracking & ~acc & (rt < d.backtrack_threshold) & (used < d.max_backtracks)
        # anchor: latest draft-accepted committed step within the window
        anchor = np.full(n, -1)
        for back in range(1, d.backtrack_window + 1):
            idx = t - back
            ok = (idx >= 0) & (anchor < 0)
            hit = ok & from_draft[rows, np.clip(idx, 0, cap - 1)]
            anchor = np.where(hit, idx, anchor)
        bk = fail & (anchor >= 0)
        fails += int((active & ~acc & (rt < d.backtrack_threshold)).sum()) if s.backtracking else 0
        backtracks += int((active & bk).sum())
        outcome = np.where(acc, ACCEPT, np.where(bk, BACKTRACK, REFINE))
        a = active
        valid[a, k] = True
        rec["x"][a, k] = x[a]
        rec["rd"][a, k] = rd[a]
        rec["nt"][a, k] = np.where(acc, 0, nt)[a]
        rec["rt"][a, k] = np.where(acc | ~s.backtracking, np.nan, rt)[a]
        rec["alt"][a, k] = np.where(bk, alt, 0)[a]
        dec[a, k] = outcome[a]
        bto[a, k] = np.where(bk, anchor, -1)[a]
        # commit
        pos = np.where(bk, anchor + 1, t)
        from_draft[rows[a], pos[a]] = acc[a]
        new_t = np.where(a, pos + 1, t)
        used = used + (a & bk).astype(np.int64)
        t = new_t
    # a problem is right with its chain's chance at its difficulty and its number of steps
    # (dse.model.workflow.chain_success; beta: this replay's share of failed rewrites that
    # backtrack), the problems spread evenly over the difficulty bins
    beta = backtracks / fails if fails > 0 else 0.0
    s_vals = np.unique(steps)
    table = chain_success(w, d.draft.model.name, d.target.model.name, d.accept_threshold,
                          d.backtrack_threshold, sc, beta, s_vals)
    bin_of = rng.permutation(np.arange(problems) % DEFAULT_BINS)
    chance = table[bin_of, np.searchsorted(s_vals, steps)]
    correct = (lhs(rng, problems) < chance).astype(float)
    last = int(np.flatnonzero(valid.any(axis=0)).max()) + 1
    return Trace(valid[:, :last], rec["x"][:, :last], rec["rd"][:, :last], rec["nt"][:, :last],
                 rec["rt"][:, :last], dec[:, :last], bto[:, :last], rec["alt"][:, :last], correct)


# --------------------------------------------------------------------------- JSONL I/O


def _reward(x: float) -> float | None:
    """A reward as written to JSONL: 6 decimals, or null where the trace has none (NaN)."""
    return None if np.isnan(x) else round(float(x), 6)


def trace_to_records(tr: Trace) -> Iterable[dict[str, Any]]:
    """The trace as JSONL records (`read_jsonl` reads them back to the same trace)."""
    names = {v: k for k, v in DECISIONS.items()}
    for p in range(tr.problems):
        ks = np.nonzero(tr.valid[p])[0]
        for i, k in enumerate(ks):
            r: dict[str, Any] = {
                "problem": p, "step": int(k), "draft_tokens": int(tr.draft_tokens[p, k]),
                "draft_reward": _reward(tr.draft_reward[p, k]),
                "target_tokens": int(tr.target_tokens[p, k]),
                "target_reward": _reward(tr.target_reward[p, k]),
                "decision": names[int(tr.decision[p, k])],
            }
            if tr.decision[p, k] == BACKTRACK:
                r["backtrack_to"] = int(tr.backtrack_to[p, k])
                r["alt_tokens"] = int(tr.alt_tokens[p, k])
            if i == len(ks) - 1 and not np.isnan(tr.correct[p]):
                r["correct"] = bool(tr.correct[p])
            yield r


# The fields of a trace record and their checks (dse.specs' checker): counts are integers (a
# step's tokens at most the largest context a system may have), rewards finite in [0, 1] or
# absent (null), the decision one of DECISIONS.
TRACE_KEYS: dict[str, Key] = {k.toml: k for k in (
    Key("problem", "problem", int, lo=0, help="problem id"),
    Key("step", "step", int, lo=0, optional=True, help="record order within the problem"),
    Key("decision", "decision", str, choices=tuple(DECISIONS)),
    Key("draft_tokens", "draft_tokens", int, lo=1, hi=MAX_CONTEXT_TOKENS),
    Key("draft_reward", "draft_reward", float, lo=0.0, hi=1.0, optional=True),
    Key("target_tokens", "target_tokens", int, lo=1, hi=MAX_CONTEXT_TOKENS),
    Key("target_reward", "target_reward", float, lo=0.0, hi=1.0, optional=True),
    Key("backtrack_to", "backtrack_to", int, lo=0),
    Key("alt_tokens", "alt_tokens", int, lo=1, hi=MAX_CONTEXT_TOKENS),
    Key("correct", "correct", bool, optional=True),
)}


def _field(where: str, r: dict[str, Any], key: str, *, optional: bool = False) -> Any:
    """One checked record field; an absent or null optional one is None."""
    if key not in r or r[key] is None:
        if optional:
            return None
        raise SpecError(where, key, "missing")
    return check_value(where, TRACE_KEYS[key], r[key])


def _check_steps(path: str, problem: int, recs: list[dict[str, Any]]) -> None:
    """A problem's records order by `step` when every one has it, by line when none has it;
    a mix (the order of the unnumbered ones unknown) or a step given twice is refused."""
    given = [r for r in recs if r["step"] is not None]
    if given and len(given) < len(recs):
        bare = next(r for r in recs if r["step"] is None)
        raise SpecError(f"{path}:{bare['_line']}", "step", f"missing on this record of problem "
                        f"{problem} but given on others: give every record a step, or none")
    seen: dict[int, int] = {}
    for r in given:
        if r["step"] in seen:
            raise SpecError(f"{path}:{r['_line']}", "step", f"{r['step']} again in problem "
                            f"{problem} (first on line {seen[r['step']]})")
        seen[r["step"]] = r["_line"]


def read_jsonl(path: str | Path) -> Trace:
    """Parse a JSONL trace (data only: json.loads, no evaluation). Every record is checked
    by the catalog's checker; a problem is one line naming the file, the line and the key."""
    p = str(path)
    by_problem: dict[int, list[dict[str, Any]]] = {}
    for i, line in enumerate(read_text(Path(path), max_bytes=MAX_TRACE_FILE_BYTES)
                             .splitlines(), 1):
        if not line.strip():
            continue
        where = f"{p}:{i}"
        r = parse_json(line, where)
        if not isinstance(r, dict):
            raise SpecError(where, "", "expected a JSON object per line")
        check_keys(where, r, TRACE_KEYS)
        problem = _field(where, r, "problem")
        _field(where, r, "decision")
        r["step"] = _field(where, r, "step", optional=True)
        r["_line"] = i
        by_problem.setdefault(problem, []).append(r)
    if not by_problem:
        raise SpecError(p, "", "no records")
    n, k = len(by_problem), max(len(v) for v in by_problem.values())
    z = np.zeros((n, k))
    tr = {f.name: z.copy() for f in fields(Trace) if f.name not in ("valid", "decision",
                                                                     "backtrack_to", "correct")}
    for name in ("draft_reward", "target_reward"):  # NaN: no reward recorded (an accepted
        tr[name][:] = np.nan                        # step has no target reward)
    valid = np.zeros((n, k), dtype=bool)
    dec = np.zeros((n, k), dtype=np.int64)
    bto = np.full((n, k), -1, dtype=np.int64)
    correct = np.full(n, np.nan)
    nan = float("nan")
    for pi, (problem, recs) in enumerate(by_problem.items()):
        recs.sort(key=lambda r: (r["step"] or 0, r["_line"]))
        t = 0
        for ki, r in enumerate(recs):
            where = f"{p}:{r['_line']}"
            valid[pi, ki] = True
            tr["draft_tokens"][pi, ki] = _field(where, r, "draft_tokens")
            reward = _field(where, r, "draft_reward", optional=True)
            tr["draft_reward"][pi, ki] = nan if reward is None else reward
            dec[pi, ki] = DECISIONS[r["decision"]]
            if dec[pi, ki] != ACCEPT:
                tr["target_tokens"][pi, ki] = _field(where, r, "target_tokens")
                reward = _field(where, r, "target_reward", optional=True)
                tr["target_reward"][pi, ki] = nan if reward is None else reward
            if dec[pi, ki] == BACKTRACK:
                to = _field(where, r, "backtrack_to")
                if to >= t:
                    raise SpecError(where, "backtrack_to",
                                    f"must be a committed step index < {t}, got {to!r}")
                bto[pi, ki] = to
                tr["alt_tokens"][pi, ki] = _field(where, r, "alt_tokens")
                t = to + 2
            else:
                t += 1
            ok = _field(where, r, "correct", optional=True)
            if ok is not None:
                correct[pi] = float(ok)
        _check_steps(p, problem, recs)  # after each record's own fields
    return Trace(valid, tr["draft_tokens"], tr["draft_reward"], tr["target_tokens"],
                 tr["target_reward"], dec, bto, tr["alt_tokens"], correct)


# ------------------------------------------------------------------------------- replay


@dataclass(frozen=True)
class Replay:
    """Per-problem totals of a replayed trace (arrays of length `problems`)."""

    latency_s: F64
    crit: dict[str, F64]  # role -> critical-path seconds
    busy: dict[str, F64]  # device role -> busy seconds
    dyn_j: dict[str, F64]  # device role -> energy above idle
    init_s: float
    stall_s: F64
    stalled: F64  # attempts whose step-ahead speculation ended before the verdict
    wasted_s: F64
    wasted_tokens: F64
    wasted_j: F64
    committed_tokens: F64
    target_calls: F64
    backtracks: F64
    attempts: F64
    accepts: F64
    correct: F64
    timeline: list[dict[str, Any]]


def replay(c: Costs, tr: Trace, *, timeline_problem: int | None = 0) -> Replay:
    s = c.design.schedule
    n, k_max = tr.valid.shape
    cap = k_max + 2
    tokens = np.zeros((n, cap))  # committed tokens per position
    t = np.zeros(n, dtype=np.int64)
    ahead = np.zeros(n)
    u = np.full(n, c.prompt)
    init = c.init_s()
    clock = np.full(n, init)
    tot: dict[str, F64] = {}
    rows = np.arange(n)

    def add(key: str, v: F64, mask: NDArray[np.bool_]) -> None:
        tot[key] = tot.get(key, np.zeros(n)) + np.where(mask, v, 0.0)

    timeline: list[dict[str, Any]] = []
    if timeline_problem is not None and timeline_problem < n:
        timeline.append(_iv("draft", "prefill" if c.init_gpu is None else "migrate", 0.0, init))
    for k in range(k_max):
        a = tr.valid[:, k]
        if not a.any():
            continue
        nxt_valid = tr.valid[:, k + 1] if k + 1 < k_max else np.zeros(n, dtype=bool)
        z = tr.draft_tokens[:, k + 1] if k + 1 < k_max else np.ones(n)
        z = np.where(nxt_valid, z, 1.0)
        resp = np.cumsum(tokens, axis=1)[rows, np.maximum(t - 1, 0)] * (t > 0)
        anchor = tr.backtrack_to[:, k]
        resp_anchor = np.where(anchor >= 0,
                               np.cumsum(tokens, axis=1)[rows, np.clip(anchor, 0, cap - 1)], resp)
        out = tr.decision[:, k]
        # an accepted step's prefetching target is interrupted before it finishes: its step
        # length is not in the trace, so the workload's mean target step stands in
        nt = np.where(out == ACCEPT, c.workload.target_step_tokens_mean,
                      np.maximum(tr.target_tokens[:, k], 1.0))
        at = attempt(
            c, s, resp=resp, x=tr.draft_tokens[:, k], z=z, spec_ok=nxt_valid,
            nt=nt, u=u, outcome=out,
            n_alt=np.maximum(tr.alt_tokens[:, k], 1.0), resp_anchor=resp_anchor, ahead=ahead)
        for f in REPLAY_FIELDS:
            add(f, np.broadcast_to(getattr(at, f), (n,)), a)
        add("backtracks", (out == BACKTRACK).astype(float), a)
        add("accepts", (out == ACCEPT).astype(float), a)
        add("attempts", np.ones(n), a)
        if timeline_problem is not None and a[timeline_problem]:
            timeline += _attempt_intervals(at, timeline_problem, float(clock[timeline_problem]),
                                           int(out[timeline_problem]))
        clock = clock + np.where(a, at.time_s, 0.0)
        # commit and carry state
        pos = np.where(out == BACKTRACK, anchor + 1, t)
        committed = np.where(out == ACCEPT, tr.draft_tokens[:, k],
                             np.where(out == BACKTRACK, tr.alt_tokens[:, k],
                                      tr.target_tokens[:, k]))
        tokens[rows[a], pos[a]] = committed[a]
        t = np.where(a, pos + 1, t)
        ahead = np.where(a, np.broadcast_to(at.next_ahead_s, (n,)), ahead)
        if s.step_ahead:
            new_u = np.where(out == ACCEPT, tr.draft_tokens[:, k], 0.0)
        else:
            new_u = np.where(out == ACCEPT, u + tr.draft_tokens[:, k], 0.0)
        u = np.where(a, new_u, u)
    committed_tokens = np.cumsum(tokens, axis=1)[rows, np.maximum(t - 1, 0)] * (t > 0)
    crit = {r.value: tot[crit_field(r)] for r in PATH_ROLES}
    return Replay(
        latency_s=clock, crit=crit,
        busy={r.value: tot[busy_field(r)] for r in DEVICE_ROLES},
        dyn_j={r.value: tot[dyn_field(r)] for r in DEVICE_ROLES},
        init_s=init, stall_s=tot["stall_s"], stalled=tot["stalled"],
        wasted_s=tot["wasted_s"], wasted_tokens=tot["wasted_tokens"], wasted_j=tot["wasted_j"],
        committed_tokens=committed_tokens, target_calls=tot["target_called"],
        backtracks=tot["backtracks"], attempts=tot["attempts"], accepts=tot["accepts"],
        correct=tr.correct, timeline=timeline,
    )


def _iv(device: str, kind: str, start: float, end: float) -> dict[str, Any]:
    return {"device": device, "kind": kind, "start_s": float(start), "end_s": float(end)}


def _attempt_intervals(at: Any, i: int, t0: float, outcome: int) -> list[dict[str, Any]]:
    def g(name: str) -> float:
        return float(np.broadcast_to(getattr(at, name), np.shape(at.time_s))[i])

    out = [
        _iv("draft", "decode", t0, t0 + max(g("draft_end_s"), 0.0)),
        _iv("link", "tokens", t0 + g("draft_end_s"), t0 + g("prm_start_s")),
        _iv("prm", "verify", t0 + g("prm_start_s"), t0 + g("verdict_s")),
    ]
    spec = g("speculate_s")
    if spec > 0:
        kind = "speculate" if outcome == ACCEPT else "discarded"
        out.append(_iv("draft", kind, t0 + g("draft_end_s"), t0 + g("draft_end_s") + spec))
        if g("stall_s") > 0:
            out.append(_iv("draft", "stall", t0 + g("draft_end_s") + spec, t0 + g("verdict_s")))
    tgt_start = g("target_start_s")
    if outcome == ACCEPT:
        if g("target_busy_s") > 0:
            out.append(_iv("target", "prefetch", t0 + tgt_start,
                           t0 + tgt_start + g("target_busy_s")))
    else:
        out.append(_iv("target", "refine", t0 + tgt_start, t0 + g("target_ready_s")))
        out.append(_iv("draft", "sync", t0 + g("verdict_s"), t0 + g("sync_end_s")))
        if g("refine_verdict_s") > g("target_ready_s") + 1e-12:
            out.append(_iv("prm", "verify-rewrite", t0 + g("target_ready_s"),
                           t0 + g("refine_verdict_s")))
        if outcome == BACKTRACK:
            out.append(_iv("target", "backtrack", t0 + g("refine_verdict_s"), t0 + g("time_s")))
    return [iv for iv in out if iv["end_s"] > iv["start_s"]]
