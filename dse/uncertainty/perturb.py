"""Perturbing a design and a workload by the uncertain factors of dse.uncertainty.

A factor is a multiplier on one placement's operation times or dynamic power, a change of the
PRM score concentration, a workload statistic, or a shift of the accuracy in points. Each one is
applied here to the inputs of the evaluators (never to their code), so the closed form, the
mean-value model and the simulator see the same perturbed design.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.devices.protocol import Placement, PowerState
from dse.devices.registry import KINDS
from dse.specs.scenario import WorkloadSpec

if TYPE_CHECKING:
    from dse.model.design import Design

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class ScaledPlacement:
    """A placement whose decode times, prefill / absorb times and dynamic power (above idle)
    are multiplied by the given factors; everything else is the inner placement's."""

    inner: Placement
    # floats, or arrays shaped [batch, 1] for a batch of designs (dse.engine.closed_form_batch)
    decode_factor: float | F64 = 1.0
    prefill_factor: float | F64 = 1.0
    power_factor: float | F64 = 1.0
    absorb_factor: float | F64 = 1.0  # the decode or the prefill factor, as the kind absorbs

    def __getattr__(self, name: str) -> Any:  # the Placement attributes not scaled here
        return getattr(self.inner, name)

    def decode_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        return self.inner.decode_s(n, ctx, batch=batch) * self.decode_factor

    def decode_token_s(self, ctx: ArrayLike, *, batch: int = 1) -> F64:
        return self.inner.decode_token_s(ctx, batch=batch) * self.decode_factor

    def prefill_s(self, n_new: ArrayLike, ctx: ArrayLike = 0, *, all_positions: bool = False,
                  batch: int = 1) -> F64:
        return self.inner.prefill_s(n_new, ctx, all_positions=all_positions,
                                    batch=batch) * self.prefill_factor

    def absorb_s(self, n: ArrayLike, ctx: ArrayLike, *, batch: int = 1) -> F64:
        return self.inner.absorb_s(n, ctx, batch=batch) * self.absorb_factor

    def power_w(self, state: PowerState, ctx: ArrayLike = 0, n_new: ArrayLike = 1, *,
                batch: int = 1) -> F64:
        idle = self.inner.power_w("idle", batch=batch)
        return idle + (self.inner.power_w(state, ctx, n_new, batch=batch) - idle) \
            * self.power_factor


def placement_identity(p: Placement) -> str:
    """What a placement's cost-model error is shared by: the same model at the same precision
    and tensor-parallel width, on the same board, under the same software (two designs that
    place it so are wrong together)."""
    return f"{p.device.name}/{p.serving}/{p.model.name}/{p.precision.name}/tp{p.tp}"


def device_identity(p: Placement) -> str:
    """What a placement's power error is shared by: the board and its software."""
    return f"{p.device.name}/{p.serving}"


PLACEMENT_FIELDS = ("draft_placement", "prm_placement", "target", "init_gpu")


def scale_design(d: Design, values: Mapping[str, float]) -> Design:
    """The design with every placement whose factor keys (`time:decode:<identity>`,
    `time:prefill:<identity>`, `time:all:<identity>` for both, `power:<device identity>`)
    appear in `values` scaled by them."""
    changes: dict[str, Any] = {}
    for name in PLACEMENT_FIELDS:
        p = getattr(d, name)
        if p is None:
            continue
        ident = placement_identity(p)
        both = values.get(f"time:all:{ident}", 1.0)
        dec = values.get(f"time:decode:{ident}", 1.0) * both
        pre = values.get(f"time:prefill:{ident}", 1.0) * both
        pw = values.get(f"power:{device_identity(p)}", 1.0)
        if (dec, pre, pw) != (1.0, 1.0, 1.0):
            absorb = dec if KINDS.get(p.kind).absorb_like == "decode" else pre
            changes[name] = ScaledPlacement(p, dec, pre, pw, absorb)
    return replace(d, **changes) if changes else d


def is_time_only(values: Mapping[str, float]) -> bool:
    """Whether the factor values move only placements' operation times and powers (the
    evaluations one batched closed form can share: `scale_design_batch`)."""
    return all(k.startswith(("time:", "power:")) for k in values)


def scale_design_batch(d: Design, points: Sequence[Mapping[str, float]]) -> Design:
    """The design whose placements carry each point's multipliers along a batch axis: arrays
    shaped [len(points), 1] (`scale_design` of each point, stacked; time and power factors
    only: `is_time_only`)."""
    designs = [scale_design(d, v) for v in points]
    changes: dict[str, Any] = {}
    for name in PLACEMENT_FIELDS:
        p = getattr(d, name)
        if p is None:
            continue
        scaled = [getattr(x, name) for x in designs]
        if all(q is p for q in scaled):
            continue

        def column(attr: str, scaled: list[Any] = scaled) -> F64:
            return np.array([[getattr(q, attr) if isinstance(q, ScaledPlacement) else 1.0]
                             for q in scaled])

        changes[name] = ScaledPlacement(p, column("decode_factor"), column("prefill_factor"),
                                        column("power_factor"), column("absorb_factor"))
    return replace(d, **changes) if changes else d


# the placements an attempt runs on (the closed form's batch axis); init_gpu prefills the
# prompt once per problem, outside the attempts
ATTEMPT_PLACEMENTS = ("draft_placement", "prm_placement", "target")
_SCALES = ("decode_factor", "prefill_factor", "power_factor", "absorb_factor")


def _attempt_key(d: Design) -> tuple[tuple[float, ...], ...]:
    """The multipliers of the placements an attempt runs on (1 where not scaled)."""
    return tuple(tuple(float(getattr(p, a)) for a in _SCALES) if isinstance(p, ScaledPlacement)
                 else (1.0,) * len(_SCALES) for p in (getattr(d, n) for n in ATTEMPT_PLACEMENTS))


def batches(d: Design, points: Sequence[Mapping[str, float]], size: int
            ) -> list[tuple[Design, list[int], list[int]]]:
    """The points (time and power factors only) as batches of at most `size` distinct rows:
    (the batch design, `scale_design_batch` of one point per row; the indices of its points;
    each one's row). Points whose multipliers of the placements an attempt runs on are equal
    share a row (they differ only in the prompt's prefill on another GPU), so their attempts
    are evaluated once (dse.engine.evaluate.evaluate_batch's `rows`)."""
    first: dict[tuple[tuple[float, ...], ...], int] = {}
    rows = [first.setdefault(_attempt_key(scale_design(d, v)), len(first)) for v in points]
    out = []
    for lo in range(0, len(first), size):
        idx = [i for i, r in enumerate(rows) if lo <= r < lo + size]
        reps = [points[rows.index(r)] for r in range(lo, min(lo + size, len(first)))]
        out.append((scale_design_batch(d, reps), idx, [rows[i] - lo for i in idx]))
    return out


def with_concentration(w: WorkloadSpec, kappa: float, threshold: float) -> WorkloadSpec:
    """The workload with the PRM scores at concentration kappa (alpha + beta): the PRM's
    discrimination (dse.model.discrimination.prm_scores) then moves both means so that each CDF at
    the calibration threshold stays what it was: every calibrated number (taken at that
    threshold) is unchanged, only other thresholds move. This is the direction the calibration
    data cannot see. `threshold` is that calibration threshold (checked against the model's)."""
    from dse.model.discrimination import shipped

    if abs(threshold - shipped().calibration_threshold) > 1e-12:
        raise ValueError(f"the PRM concentration is held at the calibration threshold "
                         f"{shipped().calibration_threshold:g}, not {threshold:g}")
    return replace(w, prm_concentration=float(kappa))


def perturb_workload(w: WorkloadSpec, values: Mapping[str, float], threshold: float
                     ) -> WorkloadSpec:
    """The workload under the factors `prm_concentration:<workload>` (a concentration) and
    `workload:<workload>:<statistic>` (a multiplier on that statistic)."""
    kappa = values.get(f"prm_concentration:{w.name}")
    if kappa is not None:
        w = with_concentration(w, kappa, threshold)
    stats: dict[str, Any] = {k.split(":", 2)[2]: v for k, v in values.items()
             if k.startswith(f"workload:{w.name}:")}
    if stats:
        w = replace(w, **{k: getattr(w, k) * v for k, v in stats.items()})
    return w
