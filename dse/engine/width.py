"""The width workflows: N samples of the policy (the design's target) ranked or voted by a PRM,
or searched step by step (dse.specs.scenario.WIDTH_WORKFLOWS), with both evaluators.

Costs (a problem of S steps, T = the workload's target step tokens, R = S T response tokens,
S budget-truncated as for the target alone, dse.engine.target_only):
- the policy prefills the prompt once (`Costs.init_s`: its KV cache is shared by the N
  sequences, prefix caching), then decodes the N sequences as ONE batch of N: weights read
  once per pass, each sequence's own KV (`Placement.decode_s(R, prompt, batch=N)`). A step or
  beam search decodes the same N sequences a step at a time (after each step the kept
  candidates are forked, their prefixes cached: no re-prefill), so its decode time is the
  same sum.
- the PRM scores N candidates as one batch, served as for a speculative design (a pooling
  model, prefix caching off: each call re-reads problem + response so far,
  dse.model.verifiers.PrmVerifier): best-of-n and weighted-best-of-n once per problem, the N whole
  responses (`prefill_s(problem + R, 0, all_positions, batch=N)`); step-search and beam after
  every step k, the N candidates of the step with their prefixes (problem + k T tokens each).
  Majority voting has no PRM.
- beam search: `samples` N candidates per step; the beam_width B best are kept and each kept
  beam expands N / B candidates for the next step (B divides N; dse.specs.scenario), so every step
  decodes and scores N sequences, as step search (B = 1).
- the link between the policy's and the PRM's devices carries the N candidates' new tokens to
  the PRM (int32 ids) and the N scores back (8 bytes each), once per scoring round.
- the work is serial: the PRM scores after the policy's batch (per step for the searches,
  the policy waiting for the verdicts), so latency = prefill + decode + scoring + link.
- energy: each device's idle power over the latency (dse.engine.report.assemble), plus the
  decode's power above idle at batch N (at the mean context) and the scoring's at batch N.
- tokens: `tokens_per_problem` is the answer's R tokens (the same count as every other
  workflow, so that J/token and goodput compare per answer token); the other N - 1 samples'
  (N - 1) R tokens are `wasted_tokens_per_problem` (tokens generated = N R), their share of
  the decode energy `wasted_energy_share`.

Accuracy: dse.width.accuracy.accuracy_pct, its parameters from dse.width.params.shipped(); the
policy's solo accuracy A is the target alone's under the design's budget (so N = 1 is the
target-only design exactly, every method), the concentration c(dataset, A), the agreement of
the dataset, the deception, the PRM's separation from its ProcessBench F1 on the workload's
subset (`aggregation`: product for best-of-n and weighted-best-of-n, last for the searches,
the fitted conventions, unless the design names one), S = the workload's steps_mean.
A search's accuracy is capped at pass@N of its N samples (the issue's law: no workflow above
pass@N for its number of samples). The width model's step search treats the N candidates of a
step as independent given the problem's solve rate, so on hard problems it repairs steps the
policy rarely gets right and can pass pass@N (step search at N = 16 on MATH500 with the
Math-7B: 87.1 against a pass@16 of 86.1; beam at N = 16, B = 4: 95.5, an approximation that
also overstates a beam's survival); decoding the same N sequences, it is held to what those
N samples can reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dse.devices.link import token_bytes, transfer_s
from dse.engine.report import ROLES, Report, assemble
from dse.engine.simulator import Replay, lhs, token_ppf
from dse.engine.target_only import target_step_error
from dse.model.schedules import Costs
from dse.model.schedules.costs import VERDICT_BYTES
from dse.model.workflow import max_steps, sample_steps, steps_distribution

F64 = NDArray[np.float64]
SEARCHES = ("step-search", "beam")


@dataclass(frozen=True)
class WidthAccuracy:
    """A width design's predicted accuracy (percent) and what it rests on."""

    accuracy_pct: float
    solo_pct: float  # the policy alone under the design's budget (the target-only design's)
    concentration: float
    concentration_fitted: bool
    separation: float | None  # None: majority voting (no verifier)
    separation_basis: str | None  # processbench-f1, fitted or default
    f1_pct: float | None


def solo_under_budget(c: Costs) -> float:
    """The target alone's accuracy (percent) under the design's budget, as
    dse.engine.target_only computes it (the published solo accuracy at the workload's own
    budget)."""
    s_vals, s_p = _budget_steps(c)
    h = target_step_error(c)
    return float(100.0 * (s_p * (1 - h) ** s_vals).sum())


def width_accuracy(c: Costs) -> WidthAccuracy:
    """The design's accuracy from the width model (module docstring)."""
    from dse.width.accuracy import accuracy_pct
    from dse.width.params import shipped

    d, w = c.design, c.workload
    p = shipped()
    a = solo_under_budget(c)
    conc, fitted = p.concentration_for(w.dataset, a)
    agreement, _ = p.agreement_for(w.dataset)
    sep: float | None = None
    basis: str | None = None
    f1: float | None = None
    if d.prm_placement is not None:
        f1_table = d.prm_placement.model.processbench_f1 or {}
        f1 = f1_table.get(w.processbench_subset)
        sep, basis = p.verifier(d.prm_placement.model.name, d.aggregation, f1)
    chance = p.chance_for(w.dataset)
    acc = _accuracy_pct(a, d.workflow, d.samples, conc, agreement,
                        0.0 if sep is None else sep, p.deception, d.beam_width, w.steps_mean,
                        chance)
    if policy_alone(d):  # the policy alone, exactly (not to quadrature error)
        acc = a
    elif d.workflow in SEARCHES:  # never above what N whole samples reach (module docstring)
        acc = min(acc, float(accuracy_pct(solo_accuracy_pct=a, method="pass-at-n",
                                          samples=d.samples, concentration=conc,
                                          agreement=agreement, chance=chance)))
    return WidthAccuracy(acc, a, conc, fitted, sep, basis, f1)


def policy_alone(d: Any) -> bool:
    """A width design whose accuracy is its policy's alone by construction: one sample, or a
    majority vote of two (ties split: p^2 + 2 p (1 - p) / 2 = p at every difficulty)."""
    return bool(d.samples == 1 or (d.workflow == "majority" and d.samples == 2))


@lru_cache(maxsize=4096)
def _accuracy_pct(a: float, method: str, samples: int, conc: float, agreement: float,
                  sep: float, deception: float, beam_width: Any, steps: float,
                  chance: float) -> float:
    """dse.width.accuracy.accuracy_pct of one design, each distinct question once (a search's
    intervals move the device factors, which leave it alone, about 12 times a design)."""
    from dse.width.accuracy import accuracy_pct

    return float(accuracy_pct(solo_accuracy_pct=a, method=method, samples=samples,
                              concentration=conc, agreement=agreement, separation=sep,
                              deception=deception, beam_width=beam_width, steps=steps,
                              chance=chance))


def _budget_steps(c: Costs) -> tuple[NDArray[np.int64], F64]:
    w = c.workload
    return steps_distribution(w, max_steps(w, c.design.max_context_tokens,
                                           w.target_step_tokens_mean))


@dataclass(frozen=True)
class ProblemCosts:
    """Per-problem seconds and energy above idle (J) of each part, arrays over problems (or
    step counts)."""

    decode_s: F64
    decode_j: F64
    score_s: F64
    score_j: F64
    link_s: F64
    rounds: F64  # PRM scoring rounds (0 without a PRM)


def _decode(c: Costs, tokens: F64) -> tuple[F64, F64]:
    """(seconds, energy above idle) of the policy decoding N sequences of `tokens` tokens
    each after the shared prompt, one batch."""
    t, n = c.design.target, c.design.samples
    dec = np.asarray(t.decode_s(tokens, c.prompt, batch=n), dtype=float)
    dyn = t.power_w("decode", c.prompt + tokens / 2, batch=n) - t.power_w("idle")
    return dec, dec * dyn


def _score(c: Costs, resp: F64) -> tuple[F64, F64]:
    """(seconds, energy above idle) of the PRM scoring N candidates of `resp` response tokens
    each as one batch: a prefill of problem + resp tokens per candidate, every position (no
    prefix caching, as dse.model.verifiers.PrmVerifier)."""
    p, n = c.design.prm, c.design.samples
    tokens = c.workload.problem_tokens + np.asarray(resp, dtype=float)
    s = np.asarray(p.prefill_s(tokens, 0, all_positions=True, batch=n), dtype=float)
    dyn = p.power_w("prefill", 0, n_new=tokens, batch=n) - p.power_w("idle")
    return s, s * dyn


def _link(c: Costs, new_tokens: F64) -> F64:
    """The N candidates' new tokens to the PRM's device and their N scores back."""
    d = c.design
    n = d.samples
    return np.asarray(transfer_s(d.gpu_link, token_bytes(n * np.asarray(new_tokens)))
                      + transfer_s(d.gpu_link, n * VERDICT_BYTES), dtype=float)


def problem_costs(c: Costs, step_tokens: F64, on: NDArray[np.bool_]) -> ProblemCosts:
    """Costs of problems whose k-th step has step_tokens[:, k] tokens where on[:, k] (shape
    problems x steps; the steps of a problem are a prefix of the row)."""
    d = c.design
    tok = np.where(on, step_tokens, 0.0)
    resp = tok.sum(axis=1)
    dec, dec_j = _decode(c, resp)
    zero = np.zeros_like(resp)
    if d.prm_placement is None:
        return ProblemCosts(dec, dec_j, zero, zero, zero, zero)
    if d.workflow in SEARCHES:
        done = np.cumsum(tok, axis=1)  # response tokens after step k (each candidate's)
        sc, sc_j = _score(c, done)
        lk = _link(c, tok)
        return ProblemCosts(dec, dec_j, np.where(on, sc, 0.0).sum(axis=1),
                            np.where(on, sc_j, 0.0).sum(axis=1),
                            np.where(on, lk, 0.0).sum(axis=1), on.sum(axis=1).astype(float))
    sc, sc_j = _score(c, resp)
    return ProblemCosts(dec, dec_j, sc, sc_j, _link(c, resp), np.ones_like(resp))


def width_closed_form(c: Costs) -> Report:
    """Expected metrics of a width design over the workload's budget-truncated step counts
    (module docstring)."""
    w = c.workload
    s_vals, s_p = _budget_steps(c)
    k = np.arange(int(s_vals.max()))
    on = k[None, :] < s_vals[:, None]
    pc = problem_costs(c, np.full(on.shape, float(w.target_step_tokens_mean)), on)

    def mean(a: F64) -> float:
        return float((s_p * a).sum())

    return _assembled(c, "closed-form", pc, mean, float((s_p * s_vals).sum()),
                      width_accuracy(c).accuracy_pct)


def _assembled(c: Costs, evaluator: str, pc: ProblemCosts, mean: object, steps: float,
               accuracy: float | None, percentiles: dict[str, float] | None = None,
               problems: int | None = None, resp_mean: float | None = None) -> Report:
    """The Report from per-problem costs and a way to average them (`mean`)."""
    assert callable(mean)
    d = c.design
    n = d.samples
    init = c.init_s()
    dec, score, link = mean(pc.decode_s), mean(pc.score_s), mean(pc.link_s)
    resp = resp_mean if resp_mean is not None else steps * c.workload.target_step_tokens_mean
    crit = {"target": dec, "prm": score, "link": link}
    busy = {"target": dec}
    dyn = {"target": mean(pc.decode_j)}
    if d.prm_placement is not None:
        busy["prm"] = score
        dyn["prm"] = mean(pc.score_j)
    wasted_j = dyn["target"] * (n - 1) / n
    calls = steps if d.workflow in SEARCHES else 1.0
    return assemble(
        c, evaluator, latency=init + dec + score + link, crit=crit, init_s=init, busy=busy,
        dyn_j=dyn, stall=0.0, stalled=0.0, wasted_s=0.0, wasted_tokens=(n - 1) * resp,
        wasted_j=wasted_j, tokens=resp, target_calls=calls, backtracks=0.0, attempts=steps,
        accuracy=accuracy, p_accept=0.0, percentiles=percentiles, problems=problems)


def width_replay(c: Costs, problems: int, seed: int = 0, *,
                 timeline_problem: int | None = 0) -> Replay:
    """Per-problem totals of `problems` sampled problems: the step count (stratified) and each
    step's length (the workload's lognormal; the N candidates of a step are taken to have
    the step's length) drawn, the same costs per problem; each problem's outcome drawn from the
    width model's accuracy (stratified), as the target alone's simulator draws its outcomes
    from its solo accuracy."""
    d, w = c.design, c.workload
    rng = np.random.default_rng(seed)
    s_max = max_steps(w, d.max_context_tokens, w.target_step_tokens_mean)
    steps = sample_steps(rng, w, s_max, problems)
    k = np.arange(int(steps.max()))
    on = k[None, :] < steps[:, None]
    tok = np.stack([np.rint(token_ppf(lhs(rng, problems), w.target_step_tokens_mean,
                                      w.target_step_tokens_cv)) for _ in k], axis=1)
    pc = problem_costs(c, tok, on)
    acc = width_accuracy(c).accuracy_pct
    correct = np.where(lhs(rng, problems) < acc / 100.0, 1.0, 0.0)
    init = c.init_s()
    resp = np.where(on, tok, 0.0).sum(axis=1)
    zero = np.zeros(problems)
    crit = {r: zero for r in ROLES} | {"target": pc.decode_s, "prm": pc.score_s,
                                        "link": pc.link_s}
    busy = {"target": pc.decode_s}
    dyn = {"target": pc.decode_j}
    if d.prm_placement is not None:
        busy["prm"] = pc.score_s
        dyn["prm"] = pc.score_j
    n = d.samples
    timeline: list[dict[str, object]] = []
    if timeline_problem is not None and timeline_problem < problems:
        i = timeline_problem
        end = init + float(pc.decode_s[i])
        timeline = [{"device": "target", "kind": "prefill", "start_s": 0.0, "end_s": init},
                    {"device": "target", "kind": f"decode x{n}", "start_s": init,
                     "end_s": end}]
        if d.prm_placement is not None:  # the searches' rounds drawn as one block
            timeline.append({"device": "prm", "kind": f"score x{n}",
                             "start_s": end + float(pc.link_s[i]),
                             "end_s": end + float(pc.link_s[i] + pc.score_s[i])})
    s = steps.astype(float)
    calls = s if d.workflow in SEARCHES else np.ones(problems)
    return Replay(latency_s=init + pc.decode_s + pc.score_s + pc.link_s, crit=crit,
                  busy=busy, dyn_j=dyn, init_s=init, stall_s=zero, stalled=zero,
                  wasted_s=zero, wasted_tokens=(n - 1) * resp,
                  wasted_j=pc.decode_j * (n - 1) / n, committed_tokens=resp,
                  target_calls=calls, backtracks=zero, attempts=s, accepts=zero,
                  correct=correct, timeline=timeline)
