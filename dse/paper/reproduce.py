"""`dse reproduce`: every number the HeteroReason paper reports beside the tool's prediction.

Row ids follow the paths of dse/data/heteroreason_reported.toml plus the setting, e.g.
`accuracy.config2.brsd.math500`, `speedup_vs_brsd.v80.config1.math500`. Where the paper gives
one range over datasets and configs, each dataset/config gets its own row against that range.

Tolerances (the Fidelity issue): ranges widened by 0.05 for speed-up, goodput and energy
ratios; by 1.5 points for accuracy; by 0.05 for shares and ratios below one; the communication
share must be of the same order (at most 0.05%).

Each row carries a label (dse.validation.labels), derived from what the fits and constraints
read of the paper's numbers: `fitted` (Table III config1 and config2 rsd and brsd accuracy, read
by the accuracy model's fit with RSD's Table 2 Qwen2.5-Math rows, scripts/calibrate_workloads.py),
`calibrated` (the rejection rows, whose "typically below 30%" caps the fit's rejection; the V80
rows against the strong baseline, whose "comparable" sets the declared V80 draft range) or
`predicted`. The accuracy model's cross-validated predictions (by row, pair, dataset, PRM and
source) are in dse/data/accuracy_cv.json.

The target judge's section (`target_judge_lines`): its fit to published SpecReason rows
(dse/validation/judge.py, dse/data/judge_cv.json) and SpecReason's timing beside the tool.

Rows follow the paper's definitions where they differ from the tool's own metrics: energy gains
and the wasted-token energy use the paper's accounting (each device's operating power over the
execution time, `paper_energy`), and the speculation stall ratio is a share of steps
(`Report.speculation_stall_step_share`), not of time.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from importlib import resources
from typing import Any

import numpy as np

from dse.engine.evaluate import evaluate
from dse.engine.report import Report
from dse.io.design_files import load_system
from dse.model.design import Design, build_design
from dse.model.schedules import PRESETS
from dse.specs import Catalog
from dse.specs.scenario import WorkloadSpec
from dse.validation.labels import LABELS, Label, Reads, fit_reads, label, paper_datum

CONFIGS = ("config1", "config2")
# Table III's methods and the schedules that run them (brsd_optimized = brsd with step-ahead
# and prefetch on the 3 GPUs)
TABLE3_SCHEDULES = {"rsd": "rsd", "brsd": "brsd", "brsd_optimized": "brsd_stepahead"}
BOARDS = ("u280", "v80")


@dataclass(frozen=True)
class Row:
    id: str
    description: str
    paper_low: float
    paper_high: float
    tool: float
    within: bool
    label: Label  # what happened to the paper's figure (dse.validation.labels)
    tolerance: str
    unit: str  # what the values measure: "%" (accuracy), "x" (a ratio), "fraction" (a share)
    # the tool's 90% interval (dse.paper.coverage.paper_rows; nan until computed) and
    # whether it meets the paper's value or range
    tool_low: float = float("nan")
    tool_high: float = float("nan")

    @property
    def inside(self) -> bool | None:
        """The paper's value (or range) meets the tool's interval; None without one."""
        if not (np.isfinite(self.tool_low) and np.isfinite(self.tool_high)):
            return None
        return bool(self.tool_low - 1e-12 <= self.paper_high
                    and self.tool_high + 1e-12 >= self.paper_low)

    @property
    def calibrated(self) -> bool:
        """A fit or a constraint read the paper's figure: not a prediction."""
        return self.label != "predicted"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"inside": self.inside, "calibrated": self.calibrated}


def reported() -> dict[str, Any]:
    text = resources.files("dse.data").joinpath("heteroreason_reported.toml").read_text(
        encoding="utf-8")
    return tomllib.loads(text)


# The unit of each kind of row (a ratio below one that the paper reports as a share, e.g.
# rsd latency / brsd latency, passes its own)
UNITS = {"accuracy": "%", "ratio": "x", "share": "fraction", "order": "fraction"}


def _row(rid: str, desc: str, lo: float, hi: float, tool: float, kind: str,
         unit: str | None = None) -> Row:
    if kind == "accuracy":
        band, tol = (lo - 1.5, hi + 1.5), "+-1.5 points"
    elif kind == "ratio":
        band, tol = (lo - 0.05, hi + 0.05), "range +-0.05"
    elif kind == "share":
        band, tol = (max(lo - 0.05, 0.0), hi + 0.05), "range +-0.05"
    elif kind == "order":
        band, tol = (0.0, 0.0005), "same order: <= 0.05%"
    else:
        raise ValueError(kind)
    within = bool(np.isfinite(tool) and band[0] - 1e-12 <= tool <= band[1] + 1e-12)
    return Row(rid, desc, float(lo), float(hi), float(tool), within, "predicted", tol,
               unit or UNITS[kind])  # labelled by `rows` (`labelled`)


class Runs:
    """Reports of the paper's systems, evaluated once each (closed form).

    values: factor values of dse.uncertainty to evaluate at (key -> value); a run none of
    whose factors is in them is taken from `base` (the central runs) unchanged."""

    def __init__(self, cat: Catalog, values: Mapping[str, float] | None = None,
                 base: Runs | None = None) -> None:
        self.cat = cat
        self.values = dict(values or {})
        self.base = base
        self.cache: dict[tuple[str, str, str, bool], tuple[Design, Report]] = {}
        self._keys: dict[tuple[str, str, str, bool], set[str]] = {}
        self._reads: Reads | None = None

    def reads(self) -> Reads:
        """What the fits and constraints read of the paper's numbers (computed once, by the
        central runs)."""
        if self.base is not None:
            return self.base.reads()
        if self._reads is None:
            self._reads = fit_reads(self.cat, gpu=False)
        return self._reads

    def run(self, system: str, dataset: str, schedule: str, backtracking: bool = True
            ) -> tuple[Design, Report]:
        key = (system, dataset, schedule, backtracking)
        if key not in self.cache:
            if self.base is not None and not self.values.keys() & self.base.factor_keys(key):
                self.cache[key] = self.base.run(*key)
                return self.cache[key]
            sched = PRESETS[schedule]
            if not backtracking:
                sched = sched.with_flags(backtracking=False)
            d = build_design(self.cat, load_system(self.cat, system), sched)
            w = self.cat.workload(dataset)
            if self.values:
                from dse.uncertainty import shifted_report

                self.cache[key] = shifted_report(d, w, self.values)
            else:
                self.cache[key] = (d, evaluate(d, w))
        return self.cache[key]

    def factor_keys(self, key: tuple[str, str, str, bool]) -> set[str]:
        """The keys of the factors of one (central) run."""
        if key not in self._keys:
            from dse.uncertainty import design_factors

            d, _ = self.run(*key)
            self._keys[key] = {f.key for f in design_factors(d, self.cat.workload(key[1]))}
        return self._keys[key]

    def get(self, system: str, dataset: str, schedule: str, backtracking: bool = True
            ) -> Report:
        return self.run(system, dataset, schedule, backtracking)[1]

    def paper_energy(self, system: str, dataset: str, schedule: str) -> PaperEnergy:
        d, r = self.run(system, dataset, schedule)
        from dse.uncertainty import perturbed_workload

        return paper_energy(d, perturbed_workload(self.cat.workload(dataset), self.values), r)


@dataclass(frozen=True)
class PaperEnergy:
    """The paper's energy accounting of one run (see `paper_energy`)."""

    operating_power_w: dict[str, float]
    j_per_token: float
    wasted_energy_share: float


def paper_energy(d: Design, w: WorkloadSpec, r: Report) -> PaperEnergy:
    """Energy as the paper defines its metric (Metrics, (4)): "the total system energy
    consumption integrating the operating power of both the FPGA and GPU over the execution
    time divided by the total generated tokens", with the FPGA's power "estimated based on
    implementation reports" (one figure per build). Each device is charged its operating power
    (the draft and target decoding, the PRM prefilling, at the run's mean context) over the
    whole latency, however busy it is; the difference between systems is then the power of the
    devices they hold and their latency, and the paper's energy gains come from the FPGA's lower
    power than a GPU draft. The tool's own `Report.j_per_token` instead charges idle power plus
    dynamic power for each device's busy time (so a step-ahead target that prefetches on every
    step costs energy there).

    Table IV's "additional energy consumed by these discarded tokens" is, in the same
    accounting, the discarded draft tokens x the draft's time per token x its operating power,
    as a share of the total."""
    ctx = w.prompt_tokens + r.tokens_per_problem / 2
    power = {
        "draft": float(d.draft.power_w("decode", ctx)),
        "prm": float(d.prm.power_w("prefill", 0, n_new=w.problem_tokens
                                   + r.tokens_per_problem / 2)),
        "target": float(d.target.power_w("decode", ctx)),
    }
    total_j = sum(power.values()) * r.latency_s_per_problem
    wasted_j = (r.wasted_tokens_per_problem * float(d.draft.decode_token_s(ctx))
                * power["draft"])
    return PaperEnergy(power, total_j / r.tokens_per_problem,
                       wasted_j / total_j if total_j > 0 else 0.0)


def rows(cat: Catalog, runs: Runs | None = None) -> list[Row]:
    """Every paper row beside the tool's central value (runs: the evaluations to use, e.g.
    perturbed ones for the intervals, dse.paper.coverage.paper_rows)."""
    rep = reported()
    datasets = rep["datasets"]
    runs = runs or Runs(cat)
    out: list[Row] = []

    def gpu(cfg: str, ds: str, sched: str) -> Report:
        return runs.get(f"paper-{cfg}-3090", ds, sched)

    # Table III accuracy
    for cfg in CONFIGS:
        for method, sched in TABLE3_SCHEDULES.items():
            for ds in datasets:
                v = rep["accuracy"][cfg][method][ds]
                acc = gpu(cfg, ds, sched).accuracy
                out.append(_row(f"accuracy.{cfg}.{method}.{ds}",
                                f"Table III accuracy, {cfg}, {method}, {ds} (%)", v, v,
                                float("nan") if acc is None else acc, "accuracy"))
    # Fig. 2: per-step latency shares of the 3-GPU rsd workflow
    for role in ("draft", "target", "prm"):
        lo, hi = rep["step_latency_share"][role]
        for ds in datasets:
            r = gpu("config1", ds, "rsd")
            out.append(_row(f"step_latency_share.{role}.config1.{ds}",
                            f"share of rsd step latency spent in the {role}, 3 GPUs, {ds}", lo,
                            hi, r.step_latency_share[role], "share"))
    for cfg in CONFIGS:
        lo, hi = rep["t2_speedup"][cfg]
        for ds in datasets:
            v = (gpu(cfg, ds, "brsd").latency_s_per_problem
                 / gpu(cfg, ds, "brsd_stepahead").latency_s_per_problem)
            out.append(_row(f"t2_speedup.{cfg}.{ds}", f"brsd_stepahead vs brsd, 3 GPUs, {ds} (x)",
                            lo, hi, v, "ratio"))
        lo, hi = rep["brsd_speed_relative_to_rsd"][cfg]
        for ds in datasets:
            v = (gpu(cfg, ds, "rsd").latency_s_per_problem
                 / gpu(cfg, ds, "brsd").latency_s_per_problem)
            out.append(_row(f"brsd_speed_relative_to_rsd.{cfg}.{ds}",
                            f"rsd latency / brsd latency, 3 GPUs, {ds}", lo, hi, v, "share",
                            unit="x"))
    # Fig. 8 and the energy gains: heteroreason on each board vs the 3-GPU baselines
    for board in BOARDS:
        for cfg in CONFIGS:
            for ds in datasets:
                het = runs.get(f"paper-{cfg}-{board}", ds, "heteroreason")
                brsd = gpu(cfg, ds, "brsd")
                strong = gpu(cfg, ds, "brsd_stepahead")
                lo, hi = rep["speedup_vs_brsd"][board]
                out.append(_row(f"speedup_vs_brsd.{board}.{cfg}.{ds}",
                                f"heteroreason on {board} vs brsd on 3 GPUs, {ds} (x)", lo, hi,
                                brsd.latency_s_per_problem / het.latency_s_per_problem, "ratio"))
                lo, hi = rep["goodput_gain_vs_brsd"][board]
                out.append(_row(f"goodput_gain_vs_brsd.{board}.{cfg}.{ds}",
                                f"goodput of heteroreason on {board} / brsd, {ds} (x)", lo, hi,
                                het.goodput_tokens_per_s / brsd.goodput_tokens_per_s, "ratio"))
                if board in rep["speedup_vs_brsd_stepahead"]:
                    lo, hi = rep["speedup_vs_brsd_stepahead"][board]
                    out.append(_row(f"speedup_vs_brsd_stepahead.{board}.{cfg}.{ds}",
                                    f"heteroreason on {board} vs brsd_stepahead on 3 GPUs, {ds} "
                                    "(x)", lo, hi,
                                    strong.latency_s_per_problem / het.latency_s_per_problem,
                                    "ratio"))
                # the paper's energy metric (operating power x execution time, `paper_energy`)
                e_het = runs.paper_energy(f"paper-{cfg}-{board}", ds, "heteroreason")
                e_brsd = runs.paper_energy(f"paper-{cfg}-3090", ds, "brsd")
                e_strong = runs.paper_energy(f"paper-{cfg}-3090", ds, "brsd_stepahead")
                lo, hi = rep["energy_gain"]["vs_gpu_baselines"]
                out.append(_row(f"energy_gain.vs_brsd.{board}.{cfg}.{ds}",
                                f"J/token (paper's accounting) of brsd on 3 GPUs / heteroreason "
                                f"on {board}, {ds} (x); abstract: 1.25-1.57 vs GPU baselines",
                                lo, hi, e_brsd.j_per_token / e_het.j_per_token, "ratio"))
                v = rep["energy_gain"]["vs_brsd_stepahead_approx"]
                out.append(_row(f"energy_gain.vs_brsd_stepahead.{board}.{cfg}.{ds}",
                                f"J/token (paper's accounting) of brsd_stepahead / heteroreason "
                                f"on {board}, {ds} (x); explainer: about 1.1", v, v,
                                e_strong.j_per_token / e_het.j_per_token, "ratio"))
    # ablation: heteroreason without backtracking (U280, the measured board)
    for cfg in CONFIGS:
        lo, hi = rep["no_backtrack_speedup"][cfg]
        for ds in datasets:
            with_bt = runs.get(f"paper-{cfg}-u280", ds, "heteroreason")
            without = runs.get(f"paper-{cfg}-u280", ds, "heteroreason", backtracking=False)
            out.append(_row(f"no_backtrack_speedup.{cfg}.{ds}",
                            f"heteroreason on u280 without / with backtracking, {ds} (x)", lo, hi,
                            with_bt.latency_s_per_problem / without.latency_s_per_problem,
                            "ratio"))
    # communication, stall, waste, rejection, edge GPU
    hets = [runs.get(f"paper-{cfg}-{b}", ds, "heteroreason") for b in BOARDS for cfg in CONFIGS
            for ds in datasets]
    out.append(_row("communication_share.max", "largest link share of latency, heteroreason, "
                    "both boards, configs and datasets", 0.0, rep["communication_share"]["max"],
                    max(r.communication_share for r in hets), "order"))
    lo, hi = rep["speculation_stall_ratio"]["range"]
    for b in BOARDS:
        for cfg in CONFIGS:
            for ds in datasets:
                r = runs.get(f"paper-{cfg}-{b}", ds, "heteroreason")
                out.append(_row(f"speculation_stall_ratio.{b}.{cfg}.{ds}",
                                f"share of steps where the draft finished its step-ahead "
                                f"speculation before the verdict, heteroreason on {b}, {ds}",
                                lo, hi, _stall_steps(r), "share"))
    v = rep["speculation_stall_ratio"]["mean"]
    out.append(_row("speculation_stall_ratio.mean", "mean share of stalled steps, heteroreason",
                    v, v, float(np.mean([_stall_steps(r) for r in hets])), "share"))
    lo, hi = rep["wasted_energy_share"]["config1"]
    for ds in datasets:
        out.append(_row(f"wasted_energy_share.config1.{ds}",
                        f"energy of discarded step-ahead tokens (paper's accounting), "
                        f"3 GPUs, {ds}", lo, hi,
                        runs.paper_energy("paper-config1-3090", ds,
                                          "brsd_stepahead").wasted_energy_share, "share"))
    hi = rep["rejection_probability"]["typical_max"]
    for cfg in CONFIGS:
        for ds in datasets:
            out.append(_row(f"rejection_probability.{cfg}.{ds}",
                            f"PRM rejection probability, {ds}", 0.0, hi,
                            1 - gpu(cfg, ds, "brsd").p_accept, "share"))
    lo, hi = rep["edge_gpu_draft"]["system_slowdown_vs_heteroreason"]
    for cfg in CONFIGS:
        for ds in datasets:
            jet = runs.get(f"paper-{cfg}-jetson", ds, "heteroreason")
            fpga = runs.get(f"paper-{cfg}-u280", ds, "heteroreason")
            out.append(_row(f"edge_gpu_draft.system_slowdown_vs_heteroreason.{cfg}.{ds}",
                            f"heteroreason with a Jetson Orin Nano draft vs the U280, {ds} (x)",
                            lo, hi, jet.latency_s_per_problem / fpga.latency_s_per_problem,
                            "ratio"))
    return labelled(out, runs.reads())


def _stall_steps(r: Report) -> float:
    """The paper's speculation stall ratio "captures cases where the FPGA completes step-ahead
    speculation and becomes idle while waiting for verification results", a "portion across all
    the steps" that grows with "the probability that the draft model finishes before PRM
    verification completes": a share of steps, not of time (`Report.speculation_stall_ratio`
    is the time share)."""
    v = r.speculation_stall_step_share
    return float("nan") if v is None else float(v)


def labelled(rs: Sequence[Row], reads: Reads) -> list[Row]:
    """The rows, each labelled by what the fits and constraints read of its paper figure."""
    rep = reported()
    return [replace(r, label=label(paper_datum(r.id, rep), reads)) for r in rs]


def summary(rs: list[Row]) -> dict[str, int]:
    """Rows and rows within tolerance, in all and by label (`<label>`, `<label>_within`)."""
    out = {"rows": len(rs), "within": sum(r.within for r in rs)}
    for lab in LABELS:
        sel = [r for r in rs if r.label == lab]
        out |= {lab: len(sel), f"{lab}_within": sum(r.within for r in sel)}
    return out


# ------------------------------------------------------------------------------ outputs

V80_DRAFT = ("the V80 draft (FlexLLM's U280 achieved efficiency at 300 MHz over 64 x 256-bit HBM "
             "ports: 3.1 ms/token for the 0.5B draft, 1.3x faster than the 3090 draft at "
             "4.1 ms/token) is faster than the paper's V80 estimate, which it calls comparable to "
             "the strong GPU baseline")
ACCURACY_SHARED = ("calibrated, but with nine parameters shared by 32 rows (four datasets, both "
                   "configs and RSD's four Table 2 settings), not one per number "
                   "(dse/validation/accuracy.py), and every step conditioned on the problem's "
                   "difficulty (docs/model.md): a backtrack buys one more sample of the target "
                   "at the problem's own rate, so the model cannot give config2 the 3-7 points "
                   "Table III's brsd gains over its rsd, and the fit splits the gap (config2's "
                   "in-chain factor at its bound)")
MISS_REASONS = {
    "accuracy.config1.rsd": ACCURACY_SHARED, "accuracy.config1.brsd": ACCURACY_SHARED,
    "accuracy.config2.rsd": ACCURACY_SHARED, "accuracy.config2.brsd": ACCURACY_SHARED,
    "energy_gain.vs_brsd.v80": "the paper's accounting (operating power x latency) scales the "
    "speed-up by the power ratio (3 GPUs vs FPGA + 2 GPUs, about 1.27x); the V80 speed-up is "
    "over-predicted (" + V80_DRAFT + ")",
    "energy_gain.vs_brsd_stepahead.v80": "as energy_gain.vs_brsd.v80: " + V80_DRAFT,
    "energy_gain.vs_brsd_stepahead.u280": "in the paper's accounting the gain is the power "
    "ratio (about 1.27x) x the U280's speed relative to the strong baseline, which the paper's own "
    "figures put at 0.72-0.90 (1.01-1.12x vs brsd over a 1.25-1.40x T2), i.e. a gain of "
    "0.9-1.15x; the explainer's 'about 1.1' reads as a summary over both boards",
    "speedup_vs_brsd_stepahead": V80_DRAFT,
    "speedup_vs_brsd.v80": V80_DRAFT,
    "goodput_gain_vs_brsd.v80": V80_DRAFT,
    "speculation_stall_ratio.v80": "the step share grows with the draft's speed; " + V80_DRAFT,
    "speculation_stall_ratio.mean": "the U280 rows average 0.14, near the paper's 0.175; the "
    "V80 rows (0.27-0.37) raise the mean: " + V80_DRAFT,
    "wasted_energy_share": "discarded speculation is charged at the draft GPU's operating "
    "power for the whole verification window (min(draft step, PRM time))",
    "edge_gpu_draft": "the Jetson's decode rate is fitted to the paper's 17 tokens/s (9.7x "
    "slower per token than the U280 draft); the system slowdown then follows from the share "
    "of the U280 system's critical path the draft holds: near the paper's 5-6x for config1, "
    "larger for config2, whose 1.5B target rewrites faster, so the slow draft dominates more; "
    "the paper does not say how its 'approximately 5-6x' estimate was made or for which config",
    "accuracy.config1.brsd_optimized": "step-ahead and prefetch do not change accuracy in the "
    "model; the paper measured small drops; otherwise as the brsd rows: " + ACCURACY_SHARED,
    "accuracy.config2.brsd_optimized": "step-ahead and prefetch do not change accuracy in the "
    "model; the paper measured a drop of up to 2 points (MATH500 brsd 56.8, optimized 54.8)",
    "t2_speedup": "the config2 gains come out 1.30-1.34 against the paper's 1.35-1.40: the "
    "model's overlap (the PRM's verification behind the next draft step, the target's rewrite "
    "prefetched during the verification) hides a little less than the paper's pipeline; GSM8K, "
    "with the fewest steps per problem (6, an assumption from ProcessBench paragraph counts), "
    "gains least, as the first attempt, which nothing overlaps, weighs most there",
    "no_backtrack_speedup": "backtracks are priced by the anchor-distance and budget model",
    "brsd_speed_relative_to_rsd": "backtracking cost depends on the fitted rewrite-failure rate",
    "step_latency_share": "per-step shares follow from the device models and the rejection rate",
    "rejection_probability": "the rejection rate follows from the fitted PRM distributions",
}


def miss_reason(rid: str) -> str:
    matches = [p for p in MISS_REASONS if rid.startswith(p)]
    return MISS_REASONS[max(matches, key=len)] if matches else ""


def accuracy_cv_lines() -> list[str]:
    """docs/validation.md's accuracy cross-validation (from dse/data/accuracy_cv.json), the
    held-out RSD rows (dse/data/accuracy_held_out.json) and the width model's cross-validation
    and held-out rows (dse/data/width_cv.json)."""
    from dse.validation import accuracy, accuracy_held_out, width

    return [*accuracy.markdown_section(accuracy.load()), "",
            *accuracy_held_out.markdown_section(accuracy_held_out.load()), "",
            *width.markdown_section(width.load())]


def cross_validation_lines(cat: Catalog) -> list[str]:
    """docs/validation.md's cost-model cross-validation: the GPU serving profiles (from
    dse/data/gpu_cv.json, written by scripts/calibrate_devices.py) and the FPGA designs."""
    from dse.validation import fpga as fpga_cv
    from dse.validation import gpu_cv, serving_cv

    return [*gpu_cv.markdown_section(gpu_cv.load()), "", *fpga_cv.markdown_section(cat), "",
            *serving_cv.markdown_section(serving_cv.load())]


# ------------------------------------------------------------------------ target judge

JUDGE_TIMING_NOTES = (
    "Every timing row is a prediction (no timing parameter is fitted to SpecReason) on "
    "stand-ins of SpecReason's models (dse.validation.judge.SPECREASON_SYSTEM): target TP 2 on "
    "2 x RTX A6000, the draft on one of them (the catalog has no draft TP; SpecReason runs it at "
    "TP 2), roles taking turns, 100 steps of 60 tokens. A speed-up row takes the published "
    "share of steps the small model wrote as its acceptance (the threshold is set so that "
    "p_accept equals it); *x tokens* widens it by the pair's published 'fewer thinking tokens' "
    "range (App. A.2), which the tool does not model, and *within* asks the paper's value to "
    "meet that range +-0.05. Pairing a range's speed-up ends with its acceptance ends is an "
    "assumption (the paper: most gain where acceptance is highest).",
    "Misses: the AIME main result (1.9x at acceptance 0.408) needs the draft and judge to "
    "cost together at most 0.09 of a target step even with pair (a)'s largest token saving "
    "(1.3 / (0.592 + c) = 1.9), while the same pair's 2.5x at acceptance 0.8 implies about 0.2 "
    "at equal tokens: the two points share no per-step cost unless AIME saved more tokens "
    "than the range says. The stand-ins cost 0.16 (draft 0.14, judge 0.02), so at pair (a)'s "
    "high end the tool (2.77x) is above 2.5x; SpecReason's draft runs at TP 2, whose "
    "all-reduces the tool does not charge (possibly the rest).",
    "The judge call is the prefill alone: vLLM samples a max_tokens=1 request's token from the "
    "prefill's own logits, so TargetJudge.score_s charges no decode step (the first two rows "
    "agree, within the paper's 'comparable to decoding 1-2 tokens').",
    "Not expressed: the threshold-sweep latencies (sec. 5.3: no acceptance, tokens per problem "
    "only in plots); R1-70B on 4 x A100 (App. A.1: the catalog refuses a draft and target "
    "without a shared tokenizer, SpecReason passes text); SpecReason+Decode (token-level "
    "speculation inside a rewrite); GlimpRouter's and TrigReason's rows (secondary sources).")


def _judge_misses(doc: Mapping[str, Any]) -> list[str]:
    """What the judge's fit misses, and why (numbers from judge_cv.json)."""
    fit_ = {r["id"]: r for r in doc["fit"]["rows"]}
    lopo = doc["leave_one_pair_out"]
    one = doc["one_distribution_form"]["leave_one_pair_out"]
    he = fit_["lr-t1-humaneval-r1d32b-r1d1.5b-specreason"]
    aime = fit_["lr-t1-aime24-qwen3-32b-qwen3-1.7b-specreason"]
    lcb = fit_["lr-t1-livecodebench-qwen3-32b-qwen3-1.7b-specreason"]
    gpqa = fit_["lr-t1-gpqa-qwen3-32b-qwen3-1.7b-specreason"]
    check = {c["threshold"]: c for c in doc["qwen3_threshold_check"]}
    best = min(check, key=lambda k: check[k]["sum_of_squares"])
    best_one = min(check, key=lambda k: check[k]["one_distribution_sum_of_squares"])
    return [
        "What misses, and why:", "",
        "- **Acceptance** follows the draft's relative error x through one shift of both means "
        f"(leave one pair out: median {lopo['acceptance_median_abs_error']:.2f}, max "
        f"{lopo['acceptance_max_abs_error']:.2f}; one distribution for every pair: "
        f"{one['acceptance_median_abs_error']:.2f}, {one['acceptance_max_abs_error']:.2f}). "
        "What x leaves: at similar x the judge keeps different shares on different datasets "
        f"(R1-Distill on HumanEval, x {he['relative_error']:.2f}: "
        f"{he['acceptance_measured']:.2f} measured, {he['acceptance_fitted']:.2f} fitted; "
        f"Qwen3 on AIME24, x {aime['relative_error']:.2f}: {aime['acceptance_measured']:.2f}, "
        f"{aime['acceptance_fitted']:.2f}). A target-verifier design's latency inherits this "
        "acceptance error.",
        f"- **R1-Distill on HumanEval** ({he['error_points']:+.1f} points in-sample): the largest "
        "accuracy miss, the other side of its acceptance: the fit keeps more of the draft's "
        "steps, bad ones too, than the judge did.",
        f"- **Qwen3 rows**: LiveCodeBench {lcb['error_points']:+.1f} and GPQA "
        f"{gpqa['error_points']:+.1f} points; their threshold is an assumption (9; the tool form "
        f"fits these rows best at {best * 10:g}, the one-distribution diagnostic at "
        f"{best_one * 10:g}).", ""]


def target_judge_lines(cat: Catalog | None = None) -> list[str]:
    """docs/validation.md's target-judge section: the fit's cross-validation (judge_cv.json)
    and SpecReason's timing statements beside the tool (the shipped catalog unless `cat`)."""
    from dse.api import load_catalog
    from dse.validation import judge

    doc = judge.load()
    lines = [*judge.markdown_section(doc), *_judge_misses(doc),
             "### Timing beside SpecReason", "",
             "| id | paper | tool | x tokens | within | kind | what |", "|---" * 7 + "|"]
    for r in judge.timing_rows(cat or load_catalog()):
        paper = (f"{r.paper_low:.4g}" if r.paper_low == r.paper_high
                 else f"{r.paper_low:.4g}-{r.paper_high:.4g}")
        widened = "" if r.tool_low == r.tool_high else f"{r.tool_low:.3g}-{r.tool_high:.3g}"
        lines.append(f"| `{r.id}` | {paper} | {r.tool:.3g} | {widened} | "
                     f"{'yes' if r.within else 'no'} | predicted | {r.description} |")
    return [*lines, "", *(f"- {n}" for n in JUDGE_TIMING_NOTES)]


def tool_text(r: Row) -> str:
    """The tool's value, with its 90% interval where computed."""
    if not (np.isfinite(r.tool_low) and np.isfinite(r.tool_high)):
        return f"{r.tool:.4g}"
    return f"{r.tool:.4g} [{r.tool_low:.4g}-{r.tool_high:.4g}]"


def markdown(rs: list[Row], device_rows: list[Any],
             accuracy_cv: Sequence[str] = (), cross_validation: Sequence[str] = (),
             coverage: Sequence[str] = (), target_judge: Sequence[str] | None = None) -> str:
    """target_judge: the target-judge section's lines; None: `target_judge_lines()`."""
    s = summary(rs)
    lines = [
        "# Validation: the HeteroReason paper and published device measurements",
        "",
        "Generated by `dse reproduce --markdown docs/validation.md`; a test fails when it is "
        "stale. Paper values: `shared/reference/heteroreason-reported.toml`. Tolerances: "
        "ratio ranges +-0.05, accuracy +-1.5 points, shares +-0.05, communication <= 0.05%. "
        "Energy gains and wasted-token energy use the paper's accounting (each device's "
        "operating power integrated over the execution time, `dse.paper.reproduce.paper_energy`); "
        "the speculation stall ratio is the paper's share of steps in which the draft finished "
        "its step-ahead speculation before the verdict.",
        "",
        f"**{s['within']} of {s['rows']} rows within tolerance**: fitted "
        f"{s['fitted_within']}/{s['fitted']} (Table III config1 and config2 rsd and brsd "
        "accuracy, read by the accuracy model's fit, `scripts/calibrate_workloads.py`), "
        f"calibrated {s['calibrated_within']}/{s['calibrated']} (the rejection rows, whose "
        "'typically below 30%' caps the fit's rejection, and the V80 rows against the strong "
        "baseline, whose 'comparable' sets the declared V80 draft range), predicted "
        f"{s['predicted_within']}/{s['predicted']}. Each label is derived from what the fits "
        "and constraints read (`dse.validation.labels`).",
        "",
        "## Paper rows",
        "",
        "The tool column gives the value and its 90% interval [low-high] (dse.uncertainty, "
        "docs/uncertainty.md); *in interval*: the paper's value, or part of its range, lies "
        "in it.",
        "",
        "| id | paper | tool [90% interval] | within | in interval | label | "
        "if missed: responsible assumption |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rs:
        paper = f"{r.paper_low:.4g}" if r.paper_low == r.paper_high else (
            f"{r.paper_low:.4g}-{r.paper_high:.4g}")
        why = "" if r.within else miss_reason(r.id)
        inside = {None: "", True: "yes", False: "no"}[r.inside]
        lines.append(f"| `{r.id}` | {paper} | {tool_text(r)} | {'yes' if r.within else 'no'} "
                     f"| {inside} | {r.label} | {why} |")
    if accuracy_cv:
        lines += ["", "## Accuracy cross-validation", "", *accuracy_cv]
    judge_lines = target_judge_lines() if target_judge is None else target_judge
    if judge_lines:
        lines += ["", "## Target judge (SpecReason)", "", *judge_lines]
    lines += ["", "## Device measurements (cost-model validation)", "",
              "Labels as the paper rows': `fitted` where a fit read the figure, `copied` where "
              "a board file holds the measurement itself (the tool's value equals it), "
              "`predicted` otherwise. reference_points.toml is held out of every fit.", "",
              "| id | measured | tool | error | label |", "|---|---|---|---|---|"]
    for d in device_rows:
        lines.append(f"| `{d.id}` | {d.measured:.4g} | {d.predicted:.4g} | "
                     f"{d.rel_error:+.1%} | {d.label} |")
    if cross_validation:
        lines += ["", "## Cost-model cross-validation", "", *cross_validation]
    if coverage:
        lines += ["", "## Interval coverage", "", *coverage]
    return "\n".join(lines) + "\n"
