"""The target-only workflow: the target writes every step, no draft, no verifier.

This is the baseline every speculative answer is weighed against. A problem is one generation:
the target prefills the prompt (`Costs.init_s`), then decodes the response, S steps of the
workload's target step length, within the design's generation budget. Both evaluators:
- closed form: over the workload's distribution of S (budget-truncated as for a speculative
  design), latency(S) = prefill(prompt) + decode(S x mean step tokens, after the prompt);
  energy = the device's idle power over the latency + the prefill's and the decode's power above
  idle (the decode's at its mean context);
- simulator: S sampled (stratified) and every step's length drawn from the workload's lognormal,
  the same costs per problem; percentiles come from it.
Accuracy is the target's solo accuracy under the design's budget: a problem is solved when none
of its S steps is bad, each bad with the per-step rate that gives the published solo accuracy at
the workload's own budget (dse.model.workflow.step_error_rate), so at that budget it is the
published number exactly. p_accept is 0 (no draft step is kept) and every step is a target step.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dse.engine.report import ROLES, Report, assemble
from dse.engine.simulator import Replay, lhs, token_ppf
from dse.model.schedules import Costs
from dse.model.workflow import (
    max_steps,
    model_accuracy,
    quality_max_steps,
    sample_steps,
    step_error_rate,
    steps_distribution,
)

F64 = NDArray[np.float64]


def target_step_error(c: Costs) -> float:
    """The target's per-step error rate on the workload (from its solo accuracy)."""
    w = c.workload
    s_vals, s_p = steps_distribution(w, quality_max_steps(w))
    return step_error_rate(model_accuracy(w, c.design.target.model.name), s_vals, s_p)


def _problem_costs(c: Costs, tokens: F64) -> tuple[F64, F64]:
    """(decode seconds, decode energy above idle) of responses of `tokens` tokens."""
    t = c.design.target
    dec = t.decode_s(tokens, c.prompt)
    dyn = t.power_w("decode", c.prompt + tokens / 2) - t.power_w("idle")
    return dec, dec * dyn


def _budget_steps(c: Costs) -> tuple[NDArray[np.int64], F64]:
    w = c.workload
    return steps_distribution(w, max_steps(w, c.design.max_context_tokens,
                                           w.target_step_tokens_mean))


def target_only_closed_form(c: Costs) -> Report:
    """Expected metrics of a target-only design (module docstring)."""
    w = c.workload
    s_vals, s_p = _budget_steps(c)
    tokens = np.asarray(s_vals * w.target_step_tokens_mean, dtype=float)
    dec, dyn_j = _problem_costs(c, tokens)
    decode = float((s_p * dec).sum())
    init = c.init_s()
    h = target_step_error(c)
    steps = float((s_p * s_vals).sum())
    return assemble(
        c, "closed-form", latency=init + decode, crit={"target": decode}, init_s=init,
        busy={"target": decode}, dyn_j={"target": float((s_p * dyn_j).sum())},
        stall=0.0, stalled=0.0, wasted_s=0.0, wasted_tokens=0.0, wasted_j=0.0,
        tokens=float((s_p * tokens).sum()), target_calls=steps, backtracks=0.0,
        attempts=steps, accuracy=float(100.0 * (s_p * (1 - h) ** s_vals).sum()),
        p_accept=0.0)


def target_only_replay(c: Costs, problems: int, seed: int = 0, *,
                       timeline_problem: int | None = 0) -> Replay:
    """Per-problem totals of `problems` sampled target-only problems (a Replay, as the
    speculative simulator's)."""
    w = c.workload
    rng = np.random.default_rng(seed)
    s_max = max_steps(w, c.design.max_context_tokens, w.target_step_tokens_mean)
    steps = sample_steps(rng, w, s_max, problems)
    h = target_step_error(c)
    tokens = np.zeros(problems)
    correct = np.ones(problems)
    for k in range(int(steps.max())):
        on = k < steps
        n = np.rint(token_ppf(lhs(rng, problems), w.target_step_tokens_mean,
                              w.target_step_tokens_cv))
        tokens += np.where(on, n, 0.0)
        correct *= np.where(on & (lhs(rng, problems) < h), 0.0, 1.0)
    dec, dyn_j = _problem_costs(c, tokens)
    init = c.init_s()
    zero = np.zeros(problems)
    crit = {r: (dec if r == "target" else zero) for r in ROLES}
    timeline: list[dict[str, object]] = []
    if timeline_problem is not None and timeline_problem < problems:
        i = timeline_problem
        timeline = [{"device": "target", "kind": "prefill", "start_s": 0.0, "end_s": init},
                    {"device": "target", "kind": "decode", "start_s": init,
                     "end_s": init + float(dec[i])}]
    s = steps.astype(float)
    return Replay(latency_s=init + dec, crit=crit, busy={"target": dec},
                  dyn_j={"target": dyn_j}, init_s=init, stall_s=zero, stalled=zero,
                  wasted_s=zero, wasted_tokens=zero, wasted_j=zero, committed_tokens=tokens,
                  target_calls=s, backtracks=zero, attempts=s, accepts=zero, correct=correct,
                  timeline=timeline)
