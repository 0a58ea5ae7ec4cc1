"""Vectorised evaluation of a hardware choice over every algorithm-knob combination of a space.

Search ranks designs with the mean-value model (dse.model.symbolic), in which a problem's latency
and energy are linear in the expected attempts N and backtracks B:

    metric = c0(hw, schedule, p_a) + cN(hw, schedule, p_a) N + cB(hw, schedule, p_a) B

The coefficients depend on the hardware, the schedule flags and the accept probability only;
N, B and the accuracy depend on the models, the thresholds, the backtrack budget and window
only. So `PairTables` holds N, B, tokens and accuracy for every (accept, knob) pair of a
(workload, draft model, target model), `hardware_metrics` computes the coefficients of one
hardware choice at every accept threshold and every schedule, and one broadcast gives every
design of that hardware: array axes [flags F, accept A, knob column K].

Knob columns: column 0 is forward-only (max_backtracks 0) when the space includes it; the
others are (backtrack threshold, max_backtracks > 0, window) combinations.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dse.errors import DseError
from dse.io.design_files import DesignFile, design_file_text
from dse.model.design import Design, build_design, infeasibility, schedule_conflicts
from dse.model.schedules import PRESETS, Costs
from dse.model.symbolic import (
    COMPONENTS,
    components_grid,
    expected_counts,
    linear_forms,
    pa_context,
    select,
)
from dse.model.verifiers import VERIFIERS
from dse.model.workflow import chain_accuracy_pct, max_steps, step_probabilities, steps_distribution
from dse.search.candidates import Candidate
from dse.search.objectives import active
from dse.search.space import Hardware, Space
from dse.specs import Catalog, build_spec
from dse.specs.model import ModelSpec
from dse.specs.scenario import SystemSpec, WorkloadSpec

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
SECONDS_PER_YEAR = 365.25 * 86400.0

@dataclass(frozen=True)
class KnobGrid:
    accept: F64  # [A]
    backtrack: F64  # [K]
    max_backtracks: I64  # [K]; 0: forward-only
    window: I64  # [K]
    flags: tuple[tuple[bool, bool], ...]  # (step_ahead, shadow_sync) per F

    @property
    def shape(self) -> tuple[int, int, int]:
        return len(self.flags), len(self.accept), len(self.backtrack)

    @property
    def size(self) -> int:
        f, a, k = self.shape
        return f * a * k


def knob_grid(space: Space) -> KnobGrid:
    cols: list[tuple[float, int, int]] = []
    if 0 in space.max_backtracks:
        cols.append((space.backtrack_thresholds[0], 0, space.backtrack_windows[0]))
    cols += [(b, m, w) for m in space.max_backtracks if m > 0
             for b in space.backtrack_thresholds for w in space.backtrack_windows]
    flags = tuple((sa, sh) for sa in space.step_ahead for sh in space.shadow_sync)
    return KnobGrid(np.asarray(space.accept_thresholds, dtype=float),
                    np.array([c[0] for c in cols], dtype=float),
                    np.array([c[1] for c in cols], dtype=np.int64),
                    np.array([c[2] for c in cols], dtype=np.int64), flags)


@dataclass(frozen=True)
class PairTables:
    """Model-pair quantities on one workload: per accept threshold [A] and knob column
    [A, K]."""

    pa: F64
    m_c: F64
    s_mean: F64
    resp: F64
    tokens: F64  # committed tokens per problem [A]
    attempts: F64  # N [A, K]
    backtracks: F64  # B [A, K]
    accuracy: F64  # percent [A, K]


def pair_tables(w: WorkloadSpec, draft: str, target: str, g: KnobGrid, max_context: int,
                verifier: str = "prm", prm: ModelSpec | None = None) -> PairTables:
    """prm: the PRM's spec (its discrimination enters the scores); None for a target judge."""
    scores = VERIFIERS[verifier].scores(w, draft, target, prm)
    pr = step_probabilities(w, draft, target, g.accept[:, None], g.backtrack[None, :], scores)
    pa = np.asarray(pr.p_accept, dtype=float)[:, 0]
    m_c, s_mean, resp = pa_context(w, pa, max_context)
    bt_on = g.max_backtracks > 0
    pf = np.broadcast_to(np.asarray(pr.p_fail, dtype=float), (len(pa), len(g.backtrack)))
    n_on, b_on, _ = expected_counts(s_mean[:, None], pa[:, None], pf,
                                    g.window[None, :].astype(float),
                                    np.maximum(g.max_backtracks, 1)[None, :].astype(float), True)
    n = np.where(bt_on, n_on, s_mean[:, None])
    b = np.where(bt_on, b_on, 0.0)
    fails = n * (1 - pa[:, None]) * pf
    beta = np.where(bt_on & (fails > 0), b / np.maximum(fails, 1e-300), 0.0)
    acc = np.empty_like(beta)
    for i, m in enumerate(m_c):  # over the difficulty bins and the budget-truncated steps
        s_vals, s_p = steps_distribution(w, max_steps(w, max_context, float(m)))
        acc[i] = chain_accuracy_pct(w, draft, target, g.accept[i], g.backtrack, scores,
                                    beta[i], s_vals, s_p)
    return PairTables(pa, m_c, s_mean, resp, s_mean * m_c, n, b, acc)


def system_for(space: Space, hw: Hardware, *, accept: float = 0.7, backtrack: float = 0.7,
               max_backtracks: int = 5, window: int = 3, name: str | None = None
               ) -> SystemSpec:
    """The system of a hardware choice with given knobs (a catalog-valid spec; a target-only
    one names the target alone)."""
    d, p, t, arr = hw.draft, hw.prm, hw.target, hw.arrangement
    data: dict[str, Any] = {
        "schema_version": 1, "kind": "system", "name": name or f"{space.name}-design",
        "description": hw.label(), "target_model": t.model, "target_device": t.device,
        "target_tp": t.tp, "target_precision": t.precision, "target_serving": t.serving,
        "max_context_tokens": space.max_context_tokens,
    }
    if d is None:  # the target alone, or a width design (its policy is the target)
        data["workflow"] = arr.workflow if arr.is_width else "target-only"
        data |= {"samples": arr.samples, "beam_width": arr.beam_width,
                 "aggregation": arr.aggregation}
    else:
        data |= {
            "draft_model": d.model, "draft_device": d.device, "draft_precision": d.precision,
            "draft_serving": d.serving, "draft_engine": d.engine,
            "fpga_clock_MHz": None if d.clock_mhz is None else float(d.clock_mhz),
            "fpga_memory_channels": d.memory_channels,
            "fpga_mac_lanes": d.mac_lanes, "accept_threshold": float(accept),
            "backtrack_threshold": float(backtrack), "max_backtracks": int(max_backtracks),
            "backtrack_window": int(window),
            "verifier": None if arr.verifier == "prm" else arr.verifier,
            "colocate": arr.colocate}
    if p is not None:
        data |= {"prm_model": p.model, "prm_device": p.device, "prm_tp": p.tp,
                 "prm_precision": p.precision, "prm_serving": p.serving}
    data = {k: v for k, v in data.items() if v is not None}  # a knob at its default: absent
    src = f"chosen by dse search over space {space.name!r} ({space.path})"
    data["sources"] = {k: src for k in ("target_tp", "prm_tp", "fpga_clock_MHz",
                                        "fpga_memory_channels",
                                        "fpga_mac_lanes", "accept_threshold",
                                        "backtrack_threshold", "max_backtracks",
                                        "backtrack_window", "max_context_tokens",
                                        "samples", "beam_width")
                       if k in data}
    spec = build_spec(space.path, data)
    assert isinstance(spec, SystemSpec)
    return spec


@dataclass(frozen=True)
class HardwareResult:
    hw: Hardware
    reasons: tuple[str, ...]  # why it cannot run; empty when feasible
    metrics: dict[str, F64]  # each [F, A, K]; empty when infeasible
    capex_usd: float
    # the constrained metrics at the pessimistic end the search checks (Evaluator.checked)
    checked: dict[str, F64] = field(default_factory=dict)
    n_designs: int = 0  # grid cells that are designs of it (Evaluator.valid)

    def for_constraints(self) -> dict[str, F64]:
        """The metrics constraints are checked against: pessimistic where computed."""
        return {**self.metrics, **self.checked}


class Evaluator:
    """Evaluates hardware choices of one space (caches the model-pair tables).

    confidence and checked: the constraints' metrics (metric -> "min" or "max") are also
    computed at the pessimistic end of their interval (dse.uncertainty, first order over the
    hardware's factors), scaled by `pessimism(confidence)`: 0.9 is the end of the 90%
    interval, 0.5 the central value. `HardwareResult.checked` holds them.

    A target-only hardware choice is one design: its metrics sit at grid cell (0, 0, 0) (the
    closed form's, which for one generation is as fast as the mean value), every other cell
    is NaN (not a design). A colocated one cannot run the schedules whose overlaps need its
    roles apart (dse.model.design.schedule_conflicts): those cells are NaN too."""

    def __init__(self, cat: Catalog, space: Space, *, confidence: float = 0.5,
                 checked: Mapping[str, str] | None = None) -> None:
        self.cat, self.space, self.grid = cat, space, knob_grid(space)
        self.workloads = [(cat.workload(n), wt) for n, wt in space.workloads]
        self.confidence = confidence
        self.checked = dict(checked or {})
        self._perturbed_pairs: dict[tuple[Any, ...], PairTables] = {}
        self._valid: dict[tuple[Any, ...], NDArray[np.bool_]] = {}

    @cache  # noqa: B019 - one Evaluator per search; the cache lives as long as it
    def pair(self, wname: str, draft: str, target: str, verifier: str = "prm",
             prm: str | None = None) -> PairTables:
        """prm: the PRM's catalog name (None for a target judge)."""
        return pair_tables(self.cat.workload(wname), draft, target, self.grid,
                           self.space.max_context_tokens, verifier,
                           self.cat.model(prm) if prm is not None else None)

    def _pair_at(self, w: WorkloadSpec, hw: Hardware, values: Mapping[str, float]
                 ) -> PairTables:
        assert hw.draft is not None and hw.arrangement.verifier is not None
        draft, target, ver = hw.draft.model, hw.target.model, hw.arrangement.verifier
        prm = hw.prm.model if hw.prm is not None and ver == "prm" else None
        mine = tuple(sorted((k, v) for k, v in values.items()
                            if k.startswith(("workload:", "prm_concentration:"))
                            and k.split(":")[1] == w.name))
        if not mine:
            return self.pair(w.name, draft, target, ver, prm)
        key = (w.name, draft, target, ver, prm, mine)
        if key not in self._perturbed_pairs:
            from dse.uncertainty import perturbed_workload

            self._perturbed_pairs[key] = pair_tables(
                perturbed_workload(w, dict(mine)), draft, target, self.grid,
                self.space.max_context_tokens, ver,
                self.cat.model(prm) if prm is not None else None)
        return self._perturbed_pairs[key]

    def design(self, hw: Hardware) -> Design:
        sched = PRESETS["heteroreason"] if hw.arrangement.colocate is None and \
            hw.arrangement.verifier != "target" else PRESETS["rsd"]
        return build_design(self.cat, system_for(self.space, hw), sched, check=False)

    def capex_usd(self, hw: Hardware) -> float:
        """List prices of the devices, a shared one counted once."""
        dev = self.cat.device
        total = hw.target.tp * dev(hw.target.device).list_price_usd
        if hw.draft is not None and not hw.arrangement.shares("draft"):
            total += dev(hw.draft.device).list_price_usd
        if hw.prm is not None and not hw.arrangement.shares("prm"):
            total += hw.prm.tp * dev(hw.prm.device).list_price_usd
        return float(total)

    def valid(self, hw: Hardware) -> NDArray[np.bool_]:
        """The grid cells [F, A, K] that are designs of this hardware choice (cached per
        arrangement: they depend on nothing else)."""
        key = (hw.arrangement, hw.draft is None)
        if key not in self._valid:
            self._valid[key] = self._valid_cells(hw)
        return self._valid[key]

    def _valid_cells(self, hw: Hardware) -> NDArray[np.bool_]:
        g = self.grid
        ok = np.zeros(g.shape, dtype=bool)
        if hw.draft is None:
            ok[0, 0, 0] = True
            return ok
        colocated = system_for(self.space, hw).colocated
        for fi, (sa, sh) in enumerate(g.flags):
            for bt in (False, True):
                cols = (g.max_backtracks > 0) == bt
                sched = PRESETS["rsd"].with_flags(backtracking=bt, step_ahead=sa,
                                                  shadow_sync=sh)
                if not schedule_conflicts(colocated, sched):
                    ok[fi, :, cols] = True
        return ok

    def evaluate(self, hw: Hardware) -> HardwareResult:
        valid = self.valid(hw)
        try:
            d = self.design(hw)
        except DseError as err:  # a placement the cost model refuses (e.g. a precision)
            return HardwareResult(hw, (str(err),), {}, 0.0, n_designs=int(valid.sum()))
        why = tuple(infeasibility(d))
        if why:
            return HardwareResult(hw, why, {}, 0.0, n_designs=int(valid.sum()))
        if hw.draft is None:
            return self._target_only(hw, d)
        metrics = self.metrics(hw, d)
        if not valid.all():  # the cells of schedules a shared device cannot run: NaN
            metrics = {k: np.where(valid, v, np.nan) for k, v in metrics.items()}
        checked: dict[str, F64] = {}
        scale = pessimism(self.confidence)
        if scale > 0 and self.checked:
            iv = self.intervals(hw, d, metrics, tuple(self.checked))
            for m, side in self.checked.items():
                lo, hi = iv[m]
                c = metrics[m]
                checked[m] = c - (c - lo) * scale if side == "min" else c + (hi - c) * scale
        return HardwareResult(hw, (), metrics, self.capex_usd(hw), checked,
                              int(valid.sum()))

    def _target_only(self, hw: Hardware, d: Design) -> HardwareResult:
        """The one design of a target-only choice, by the closed form over the space's
        workload mix (its interval ends for the constraints)."""
        from dse.engine.evaluate import evaluate
        from dse.uncertainty import attach

        shape = self.grid.shape
        central: dict[str, float] = {}
        ends: dict[str, list[float]] = {}
        scale = pessimism(self.confidence)
        for w, wt in self.workloads:
            r = evaluate(d, w)
            if scale > 0 and self.checked:
                r = attach(r, d, w)
            for name in ("latency_s_per_problem", "energy_j_per_problem", "tokens_per_problem",
                         "accuracy"):
                v = float(getattr(r, name) or 0.0)
                central[name] = central.get(name, 0.0) + wt * v
                lo, hi = r.intervals.get(name, (v, v))
                e = ends.setdefault(name, [0.0, 0.0])
                e[0] += wt * float(lo)
                e[1] += wt * float(hi)
        cell = (0, 0, 0)
        arrays = {k: np.full(shape, np.nan) for k in central}
        for k, v in central.items():
            arrays[k][cell] = v
        m = self._derived(arrays, hw)
        checked: dict[str, F64] = {}
        for metric, side in self.checked.items():
            if metric in ends and scale > 0:
                lo, hi = ends[metric]
                c = central[metric]
                arr = np.full(shape, np.nan)
                arr[cell] = c - (c - lo) * scale if side == "min" else c + (hi - c) * scale
                checked[metric] = arr
            elif metric in m:
                checked[metric] = m[metric]
        return HardwareResult(hw, (), m, self.capex_usd(hw), checked, 1)

    def factors(self, d: Design, *, accuracy_only: bool = False) -> list[Any]:
        """The hardware's uncertain factors over the space's workloads (an accuracy shift
        weighted by its workload's weight in the mix); accuracy_only: only those that can
        move the accuracy (no device time or power factor is built)."""
        from dataclasses import replace

        from dse.uncertainty import accuracy_factors, design_factors

        of = accuracy_factors if accuracy_only else design_factors
        out: dict[str, Any] = {}
        for w, weight in self.workloads:
            for f in of(d, w, thresholds=(*map(float, self.grid.accept),
                                          *map(float, self.grid.backtrack))):
                if f.additive:
                    f = replace(f, low=f.low * weight, high=f.high * weight)
                out.setdefault(f.key, f)
        return list(out.values())

    def intervals(self, hw: Hardware, d: Design, central: Mapping[str, F64],
                  metrics: tuple[str, ...]) -> dict[str, tuple[F64, F64]]:
        """90% intervals of the given metrics over the whole grid of one hardware choice.
        Accuracy alone (a sweep constrained on it) depends on the models, knobs and workloads
        but not on the timings or the schedule flags: it is propagated over the [1, A, K]
        cells and broadcast over the flags, with the central's NaN (cells this hardware
        cannot run) kept."""
        from dse.uncertainty import intervals, scale_design

        if set(metrics) <= {"accuracy"}:
            def acc_at(values: Mapping[str, float]) -> dict[str, F64]:
                return {"accuracy": self.accuracy_cells(hw, values)}

            cells = {"accuracy": self.accuracy_cells(hw, {}),
                     "p_accept": self.p_accept(hw)[:1]}
            lo, hi = intervals(self.factors(d, accuracy_only=True), cells, acc_at,
                               ("accuracy",))["accuracy"]
            nan = np.isnan(central["accuracy"])
            shape = self.grid.shape
            return {"accuracy": (np.where(nan, np.nan, np.broadcast_to(lo, shape)),
                                 np.where(nan, np.nan, np.broadcast_to(hi, shape)))}

        def at(values: Mapping[str, float]) -> dict[str, F64]:
            return self.metrics(hw, scale_design(d, values), values)

        return intervals(self.factors(d), {**central, "p_accept": self.p_accept(hw)}, at,
                         metrics)

    def accuracy_cells(self, hw: Hardware, values: Mapping[str, float]) -> F64:
        """The accuracy over the knob cells [1, A, K] at the factor values (the space's
        workloads' weighted mean, as `metrics` forms it): the same for every schedule flag."""
        acc: F64 | float = 0.0
        for w0, weight in self.workloads:
            acc = acc + weight * self._pair_at(w0, hw, values).accuracy[None, :, :]
        return np.asarray(acc, dtype=float)

    def p_accept(self, hw: Hardware) -> F64:
        """The accept probability over the grid [F, A, K], the space's workloads' weighted
        mean (what scales an accuracy shift, dse.uncertainty.propagate.shift_scale)."""
        pa = sum(wt * self._pair_at(w, hw, {}).pa for w, wt in self.workloads)
        return np.broadcast_to(np.asarray(pa, dtype=float)[None, :, None], self.grid.shape)

    def metrics(self, hw: Hardware, d: Design, values: Mapping[str, float] | None = None
                ) -> dict[str, F64]:
        """Every metric of a (feasible) speculative design over the knob grid [F, A, K];
        values: factor values of dse.uncertainty whose workload part applies here (the design
        is already scaled)."""
        values = values or {}
        f_n, a_n, k_n = self.grid.shape
        lat = np.full((f_n, a_n, k_n), np.nan)
        e = np.full((f_n, a_n, k_n), np.nan)
        valid = self.valid(hw)  # a schedule a shared device cannot run is not computed
        n_off = int((self.grid.max_backtracks == 0).sum())  # forward-only columns come first
        tok: F64 | float = 0.0
        acc: F64 | float = 0.0
        for wi, (w0, weight) in enumerate(self.workloads):
            pt = self._pair_at(w0, hw, values)
            w = w0
            if values:
                from dse.uncertainty import perturbed_workload

                w = perturbed_workload(w0, values)
            comp_all = components_grid(Costs(d, w), pt.pa, pt.resp)
            for fi, (sa, sh) in enumerate(self.grid.flags):
                for on in (False, True):
                    cols = slice(n_off, k_n) if on else slice(0, n_off)
                    if cols.start == cols.stop or not valid[fi, 0, cols].any():
                        continue
                    comp = select(comp_all, sa, sh, on)
                    forms = linear_forms(sa, sh, on)
                    args = [comp[k] for k in COMPONENTS] + [pt.pa]
                    n, b = pt.attempts[:, cols], pt.backtracks[:, cols]
                    lat_w = forms["latency"].value(args, n, b)
                    e_w = (forms["energy_dyn"].value(args, n, b) + comp["_idle_w"][:, None] * lat_w
                           + comp["_init_j"][:, None])
                    if wi == 0:
                        lat[fi, :, cols] = weight * lat_w
                        e[fi, :, cols] = weight * e_w
                    else:
                        lat[fi, :, cols] += weight * lat_w
                        e[fi, :, cols] += weight * e_w
            tok = tok + weight * pt.tokens[None, :, None]
            acc = acc + weight * pt.accuracy[None, :, :]
        shape = (f_n, a_n, k_n)
        return self._derived({
            "latency_s_per_problem": lat, "energy_j_per_problem": e,
            "tokens_per_problem": np.broadcast_to(np.asarray(tok, dtype=float), shape),
            "accuracy": np.broadcast_to(np.asarray(acc, dtype=float), shape)}, hw)

    def _derived(self, m: dict[str, F64], hw: Hardware) -> dict[str, F64]:
        """The metrics that follow from latency, energy, tokens and accuracy."""
        lat, e, tok_b = m["latency_s_per_problem"], m["energy_j_per_problem"], \
            m["tokens_per_problem"]
        capex = self.capex_usd(hw)
        power = e / lat
        goodput = tok_b / lat
        usd_per_s = capex / (self.space.lifetime_years * SECONDS_PER_YEAR) \
            + power / 1000.0 * self.space.usd_per_kwh / 3600.0
        return {
            "latency_s_per_problem": lat, "energy_j_per_problem": e,
            "tokens_per_problem": tok_b, "j_per_token": e / tok_b,
            "goodput_tokens_per_s": goodput, "accuracy": m["accuracy"],
            "power_w": power, "cost_usd_per_mtok": usd_per_s / goodput * 1e6,
        }

    def knobs(self, f: int, a: int, k: int) -> dict[str, Any]:
        g = self.grid
        sa, sh = g.flags[f]
        mb = int(g.max_backtracks[k])
        return {"accept_threshold": float(g.accept[a]),
                "backtrack_threshold": float(g.backtrack[k]) if mb > 0 else float(g.accept[a]),
                "max_backtracks": mb, "backtrack_window": int(g.window[k]),
                "backtracking": mb > 0, "step_ahead": sa, "shadow_sync": sh}


def pessimism(confidence: float) -> float:
    """How far towards the pessimistic end of the 90% interval a constraint is checked at
    `confidence`: Phi^-1(confidence) / Phi^-1(0.9), so 0.9 is the interval's end, 0.5 the
    central value and 0.95 beyond the end (normal tails assumed between)."""
    from statistics import NormalDist

    n = NormalDist()
    return max(n.inv_cdf(confidence), 0.0) / n.inv_cdf(0.9)


def feasible_mask(metrics: dict[str, F64], constraints: dict[str, float]) -> NDArray[np.bool_]:
    """Designs with every metric finite that meet the constraints given (CONSTRAINT_TABLE
    names -> bounds)."""
    ok = np.ones(next(iter(metrics.values())).shape, dtype=bool)
    for m in metrics.values():
        ok &= np.isfinite(m)
    for c, bound in active(constraints):
        ok &= c.met(metrics[c.metric], bound)
    return ok


def violation(metrics: dict[str, F64], constraints: dict[str, float]) -> F64:
    """How far each design is from the constraints: the largest relative excess
    (Constraint.excess; <= 0 when every one is met, -1 when none is given); +inf where a
    metric is not finite (a cell whose schedule its shared devices cannot run), so that the
    least violating design is always one that runs."""
    v = np.full(next(iter(metrics.values())).shape, -math.inf)
    for c, bound in active(constraints):
        v = np.maximum(v, c.excess(metrics[c.metric], bound))
    runs = np.ones(v.shape, dtype=bool)
    for m in metrics.values():
        runs &= np.isfinite(m)
    return np.where(runs, np.where(np.isfinite(v), v, -1.0), math.inf)


def missed(metrics: Mapping[str, Any], constraints: Mapping[str, float]) -> list[str]:
    """The names of the constraints one design's metrics (scalars) do not meet."""
    return [c.name for c, bound in active(constraints)
            if not (math.isfinite(float(metrics[c.metric]))
                    and bool(c.met(float(metrics[c.metric]), bound)))]


def spec_name(text: str) -> str:
    """A catalog-valid name (lowercase letters, digits, '.', '-') made from any text."""
    out = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.")
    return out[:80] or "design"


def candidate(ev: Evaluator, hw: Hardware, metrics: Mapping[str, F64], f: int, a: int, k: int,
              name: str) -> Candidate:
    """One point of a hardware choice's knob grid as a Candidate with the mean-value model's
    metrics (the search shows it re-evaluated by the accurate closed form: dse.search.shown)."""
    kn = ev.knobs(f, a, k)
    spec = system_for(ev.space, hw, accept=kn["accept_threshold"],
                      backtrack=kn["backtrack_threshold"],
                      max_backtracks=kn["max_backtracks"], window=kn["backtrack_window"],
                      name=spec_name(name))
    sched = PRESETS["rsd"] if hw.draft is None else PRESETS["rsd"].with_flags(
        backtracking=kn["backtracking"], step_ahead=kn["step_ahead"],
        shadow_sync=kn["shadow_sync"])
    wl = ev.space.workloads[0][0] if len(ev.space.workloads) == 1 else None
    m = {k_: float(v[f, a, k]) for k_, v in metrics.items()}
    m["capex_usd"] = ev.capex_usd(hw)
    out_metrics: dict[str, Any] = dict(m)
    mix = ", ".join(f"{n} {w:.2f}" for n, w in ev.space.workloads)
    header = (f"# Chosen by hetero-dse over space {ev.space.name!r} (workloads: {mix}).\n"
              "# Metrics are the mean-value model's; `dse evaluate --design` gives the "
              "accurate closed form.\n")
    text = design_file_text(spec, sched, wl or ev.space.workloads[0][0], m, header=header)
    return Candidate(DesignFile(spec, sched, wl), out_metrics, text)
