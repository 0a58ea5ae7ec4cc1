"""The Report both evaluators produce, and how each assembles one.

A Report holds one design's per-problem metrics on one workload, itemised so that its parts sum
to its totals (latency = sum(latency_breakdown_s), energy = sum(energy_by_device_j)). `assemble`
builds it from an evaluator's per-problem sums (the closed form's expectations, the target-only
evaluator's, or the simulator's means: `report_from_replay`); `finite` refuses one with a NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dse.core.roles import DEVICE_ROLES, PATH_ROLES
from dse.errors import DseError
from dse.model.schedules import Costs
from dse.model.workflow import design_step_probabilities

if TYPE_CHECKING:  # the simulator imports this module
    from dse.engine.simulator import Replay

F64 = NDArray[np.float64]
ROLES: tuple[str, ...] = tuple(r.value for r in PATH_ROLES)  # critical-path roles
DEVICES: tuple[str, ...] = tuple(r.value for r in DEVICE_ROLES)  # per-device report keys
BREAKDOWN_KEYS: tuple[str, ...] = ("init", *ROLES)  # Report.latency_breakdown_s, in plot order


@dataclass(frozen=True)
class Report:
    """Per-problem metrics of one design on one workload. Parts sum to their totals:
    latency = sum(latency_breakdown_s); energy = sum(energy_by_device_j)."""

    system: str
    schedule: str
    workload: str
    evaluator: str  # "closed-form" or "simulator"
    latency_s_per_problem: float
    goodput_tokens_per_s: float
    j_per_token: float
    energy_j_per_problem: float
    tokens_per_problem: float
    accuracy: float | None  # percent of problems solved
    p_accept: float
    latency_breakdown_s: dict[str, float]  # critical path by role + init (prompt/migration)
    step_latency_share: dict[str, float]  # draft, prm, target, link; sums to 1
    energy_by_device_j: dict[str, float]
    devices: dict[str, dict[str, float]]  # busy_s, idle_s, stall_s per device
    communication_share: float
    speculation_stall_ratio: float
    wasted_tokens_per_problem: float
    wasted_energy_share: float
    target_calls_per_problem: float
    backtracks_per_problem: float
    attempts_per_problem: float
    percentiles: dict[str, float] = field(default_factory=dict)
    problems: int | None = None
    # the paper's speculation stall ratio: the share of steps (attempts) in which the draft
    # finished its step-ahead speculation before the verdict and waited (None without
    # step-ahead); `speculation_stall_ratio` is the same stall as a share of the latency
    speculation_stall_step_share: float | None = None
    # 90% intervals {metric: [low, high]} and what each component rests on (dse.uncertainty
    # fills both; empty when a report is made without them)
    intervals: dict[str, list[float]] = field(default_factory=dict)
    provenance: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# The headline columns of a table of reports (`dse evaluate`): (label, Report field).
REPORT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("schedule", "schedule"), ("latency s", "latency_s_per_problem"),
    ("goodput tok/s", "goodput_tokens_per_s"), ("J/token", "j_per_token"),
    ("accuracy %", "accuracy"), ("p_accept", "p_accept"),
)


def assemble(c: Costs, evaluator: str, *, latency: float, crit: dict[str, float],
             init_s: float, busy: dict[str, float], dyn_j: dict[str, float],
             stall: float, stalled: float, wasted_s: float, wasted_tokens: float,
             wasted_j: float, tokens: float,
             target_calls: float, backtracks: float, attempts: float, accuracy: float | None,
             p_accept: float, percentiles: dict[str, float] | None = None,
             problems: int | None = None) -> Report:
    """A Report from an evaluator's per-problem sums (both evaluators, every workflow). A
    device's idle power is counted once over the latency (a shared device's with the first role
    of its group: Costs.idle_w); the prompt prefills' energy goes to the role that ran them.
    Roles the design does not run have no energy or device entry; their critical-path share
    is 0."""
    d, w = c.design, c.workload
    roles = d.roles
    idle_w = c.idle_w()
    energy = {r: idle_w[r] * latency + dyn_j[r] for r in roles}
    for role, (_, j) in c.init_energy_by_role().items():
        energy[role] += j
    total_e = sum(energy.values())
    crit = {r: crit.get(r, 0.0) for r in ROLES}
    breakdown = {**crit, "init": init_s}
    steps_total = sum(crit.values())
    share = {r: (crit[r] / steps_total if steps_total > 0 else 0.0) for r in ROLES}
    devices = {}
    for r in roles:
        st = stall if r == "draft" else 0.0
        devices[r] = {"busy_s": busy[r], "stall_s": st, "idle_s": max(latency - busy[r] - st, 0.0)}
    return Report(
        system=d.system.name, schedule=(d.schedule.name if d.is_speculative
                                             else d.width_label),
        workload=w.name, evaluator=evaluator,
        latency_s_per_problem=latency, goodput_tokens_per_s=tokens / latency,
        j_per_token=total_e / tokens, energy_j_per_problem=total_e, tokens_per_problem=tokens,
        accuracy=accuracy, p_accept=p_accept, latency_breakdown_s=breakdown,
        step_latency_share=share, energy_by_device_j=energy, devices=devices,
        communication_share=crit["link"] / latency, speculation_stall_ratio=stall / latency,
        wasted_tokens_per_problem=wasted_tokens, wasted_energy_share=wasted_j / total_e,
        target_calls_per_problem=target_calls, backtracks_per_problem=backtracks,
        attempts_per_problem=attempts, percentiles=percentiles or {}, problems=problems,
        speculation_stall_step_share=(stalled / attempts if d.is_speculative
                                      and d.schedule.step_ahead and attempts > 0 else None),
    )


def finite(r: Report, only: Sequence[str] | None = None) -> Report:
    """The report, or a DseError naming the first metric that is NaN or infinite (inputs at
    the edge of the model's range must not come out as silent NaNs). only: check these
    fields alone (a headline pass, whose other fields are never read)."""
    def walk(prefix: str, v: Any) -> str | None:
        if is_dataclass(v) and not isinstance(v, type):  # its fields, as to_dict gives them
            v = {f.name: getattr(v, f.name) for f in fields(v)}
        if isinstance(v, dict):
            return next((bad for k, x in v.items() if (bad := walk(f"{prefix}.{k}", x))), None)
        if isinstance(v, float) and not np.isfinite(v):
            return f"{prefix.lstrip('.')} = {v}"
        return None

    # not r.to_dict(): no deep copy of every report the closed form makes
    bad = walk("", r) if only is None else walk("", {m: getattr(r, m) for m in only})
    if bad:
        raise DseError(f"{r.system} on {r.workload} ({r.schedule}): the model gives {bad}; "
                       "an input is outside its valid range")
    return r


def report_from_replay(c: Costs, rp: Replay) -> Report:
    """Aggregate a simulator replay into a Report (means over problems)."""
    d = c.design

    def mean(a: F64) -> float:
        return float(np.mean(a))

    lat = rp.latency_s
    acc = None if np.isnan(rp.correct).any() else 100.0 * mean(rp.correct)
    p_acc = float(rp.accepts.sum() / rp.attempts.sum()) if rp.attempts.sum() else float(
        design_step_probabilities(d, c.workload).p_accept)
    pct = {f"latency_p{q}_s": float(np.percentile(lat, q)) for q in (50, 95, 99)}
    return assemble(
        c, "simulator", latency=mean(lat), crit={r: mean(rp.crit[r]) for r in ROLES},
        init_s=rp.init_s, busy={r: mean(rp.busy[r]) for r in d.roles},
        dyn_j={r: mean(rp.dyn_j[r]) for r in d.roles},
        stall=mean(rp.stall_s), stalled=mean(rp.stalled), wasted_s=mean(rp.wasted_s),
        wasted_tokens=mean(rp.wasted_tokens), wasted_j=mean(rp.wasted_j),
        tokens=mean(rp.committed_tokens), target_calls=mean(rp.target_calls),
        backtracks=mean(rp.backtracks), attempts=mean(rp.attempts), accuracy=acc,
        p_accept=p_acc, percentiles=pct, problems=len(lat),
    )
