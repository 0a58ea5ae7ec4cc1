"""The evidence the intervals rest on, loaded once: the declared ranges and settings of
dse/data/uncertainty.toml and the cross-validated residuals the calibration scripts write
(dse/data/gpu_cv.json, fpga_cv.json, accuracy_cv.json).

Widths are split-conformal: the 90% half-width of a group of leave-one-out residuals r_i
(|ln(predicted / measured)| for times, points for accuracy) is the ceil((n + 1) 0.9)-th smallest
of them. Under exchangeability that holds a new point of the same group with probability
>= 0.9; outside the group (a GPU generation, model size, operation or design its data does not
cover) it says nothing, so the width is widened by the declared extrapolation factor.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from dse.errors import SpecError

DATA = "uncertainty.toml"
QUANTITIES = ("time", "power", "prm_concentration", "steps_mean")
MATCH_KEYS = ("device", "serving", "model", "kind", "workload")
STATUSES = ("calibrated", "cross-validated", "extrapolated")
_TOP = {"schema_version", "level", "device", "accuracy", "declared"}
_DEVICE = {"min_points", "extrapolation_factor", "model_size_margin", "sources"}
_ACCURACY = {"floor_points", "calibration_threshold", "sources"}
_DECLARED = {"name", "quantity", "match", "low", "high", "status", "source"}


@dataclass(frozen=True)
class Declared:
    """A declared 90% range for something no measurement pins down."""

    name: str
    quantity: str
    match: Mapping[str, str]
    low: float
    high: float
    status: str
    source: str

    def applies(self, **what: str) -> bool:
        return all(what.get(k) == v for k, v in self.match.items())


@dataclass(frozen=True)
class Settings:
    level: float
    min_points: int
    extrapolation_factor: float
    model_size_margin: float
    accuracy_floor_points: float
    calibration_threshold: float
    declared: tuple[Declared, ...]


def _fail(key: str, why: str) -> SpecError:
    return SpecError(f"dse/data/{DATA}", key, why)


def _only(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise _fail(f"{where}{extra[0]}", "unknown key")


def parse(data: Mapping[str, Any]) -> Settings:
    """The settings of an uncertainty.toml table, checked strictly (unknown keys, ranges,
    a declared range without a source are errors that name the key)."""
    _only(data, _TOP, "")
    if data.get("schema_version") != 1:
        raise _fail("schema_version", "must be 1")
    level = float(data["level"])
    if not 0.5 <= level < 1:
        raise _fail("level", f"must be in [0.5, 1), got {level}")
    dev, acc = data["device"], data["accuracy"]
    _only(dev, _DEVICE, "device.")
    _only(acc, _ACCURACY, "accuracy.")
    for key in ("min_points", "extrapolation_factor", "model_size_margin"):
        if key not in dev.get("sources", {}):
            raise _fail(f"device.sources.{key}", "missing: every setting needs a source")
    for key in ("floor_points", "calibration_threshold"):
        if key not in acc.get("sources", {}):
            raise _fail(f"accuracy.sources.{key}", "missing: every setting needs a source")
    declared = []
    for i, d in enumerate(data.get("declared", [])):
        where = f"declared[{i}]."
        _only(d, _DECLARED, where)
        missing = sorted(_DECLARED - set(d))
        if missing:
            raise _fail(where + missing[0], "missing")
        if d["quantity"] not in QUANTITIES:
            raise _fail(where + "quantity", f"{d['quantity']!r}; valid: {', '.join(QUANTITIES)}")
        if d["status"] not in STATUSES:
            raise _fail(where + "status", f"{d['status']!r}; valid: {', '.join(STATUSES)}")
        _only(d["match"], set(MATCH_KEYS), where + "match.")
        lo, hi = float(d["low"]), float(d["high"])
        if not 0 < lo <= hi:
            raise _fail(where + "low", f"need 0 < low <= high, got {lo}, {hi}")
        if not str(d["source"]).strip():
            raise _fail(where + "source", "empty")
        declared.append(Declared(d["name"], d["quantity"], dict(d["match"]), lo, hi,
                                 d["status"], d["source"]))
    return Settings(level, int(dev["min_points"]), float(dev["extrapolation_factor"]),
                    float(dev["model_size_margin"]), float(acc["floor_points"]),
                    float(acc["calibration_threshold"]), tuple(declared))


@cache
def settings() -> Settings:
    text = resources.files("dse.data").joinpath(DATA).read_text(encoding="utf-8")
    return parse(tomllib.loads(text))


def half_width(residuals: Sequence[float], level: float) -> float:
    """The split-conformal half-width: the ceil((n + 1) level)-th smallest |residual|, or the
    largest where n is too small for that rank (then it covers n / (n + 1) < level; the
    basis says so, `coverage_note`); 0 for no residual."""
    r = np.sort(np.abs(np.asarray(residuals, dtype=float)))
    if len(r) == 0:
        return 0.0
    k = min(math.ceil((len(r) + 1) * level), len(r))
    return float(r[k - 1])


def coverage_note(n: int, level: float) -> str:
    """'' where n residuals give the level, else what the largest of them covers."""
    if n == 0 or math.ceil((n + 1) * level) <= n:
        return ""
    return f" (the largest of {n}: a {n / (n + 1):.0%} interval)"


# ------------------------------------------------------------------ cross-validated residuals


@dataclass(frozen=True)
class GpuResidual:
    """One measured GPU point, grouped for the widths: its leave-one-source-out residual (the
    profile fitted without every point of its source document predicting it; nan where the
    profile has no other source) and its leave-one-out one (nan: too few points to refit)."""

    profile: str
    family: str
    generation: str
    model: str
    op: str  # "decode" (decode and end-to-end timings) or "prefill"
    log_error: float  # ln(leave-one-source-out prediction / measurement); nan: none
    document: str = ""
    device: str = ""
    tp: int = 1  # GPUs one tensor-parallel pass spans
    loo_log_error: float = math.nan  # ln(leave-one-out prediction / measurement)
    # no other source of its family measured its GPU: its leave-one-source-out prediction
    # extrapolated to a GPU the fit never saw (set by `with_unseen_gpus`)
    unseen_gpu: bool = False


def _log_ratio(num: float | None, den: float) -> float:
    return math.log(num / den) if num is not None and num > 0 else math.nan


def residual_of(c: Mapping[str, Any]) -> GpuResidual:
    """One point of dse/data/gpu_cv.json (a dict, or dataclasses.asdict of a CvPoint)."""
    return GpuResidual(c["profile"], c["family"], c["generation"], c["model"],
                       "prefill" if c["timed"] == "prefill" else "decode",
                       _log_ratio(c.get("loso_s"), c["measured_s"]), c.get("document", ""),
                       c.get("device", ""), int(c.get("tp", 1)),
                       _log_ratio(c.get("loo_s"), c["measured_s"]))


def with_unseen_gpus(points: Sequence[GpuResidual]) -> tuple[GpuResidual, ...]:
    """Each point marked where no other source document of its family measured its GPU (its
    leave-one-source-out prediction is then one for a GPU the family's fit never saw)."""
    seen: dict[tuple[str, str], set[str]] = {}
    for r in points:
        seen.setdefault((r.family, r.device), set()).add(r.document)
    return tuple(replace(r, unseen_gpu=not (seen[(r.family, r.device)] - {r.document}))
                 for r in points)


@dataclass(frozen=True)
class GpuWidth:
    """The log half-width of a GPU time for a source the calibration has not seen, and what
    it rests on (`borrowed`: other stacks' within-source residuals, or too few residuals of
    the extrapolation asked for; the caller widens it)."""

    log_half_width: float
    basis: str
    borrowed: bool


def new_source_width(points: Sequence[GpuResidual], family: str, op: str, *, tp: int = 1,
                     unseen_gpu: bool = False, level: float = 0.9, min_points: int = 9
                     ) -> GpuWidth:
    """The width a new source's GPU time gets: the leave-one-source-out residuals of the
    family's points of the same operation and the same kind of pass (one GPU, or tensor
    parallel: a TP point's residual measures the all-reduce term's extrapolation, which a
    one-GPU pass does not have) where the family has enough (several source documents); else
    every family's; else, for an operation with too few of those (prefill), the family's
    leave-one-out residuals (a within-source width), or every stack's where it has too few
    (`borrowed`). A GPU the family never measured (`unseen_gpu`) takes at least the width of
    the points whose leave-one-source-out prediction was itself for an unseen GPU, across
    families: what predicting another GPU has cost, measured, not a declared factor."""
    kind = "tensor-parallel" if tp > 1 else "one-GPU"
    same = [r for r in points if r.op == op and (r.tp > 1) == (tp > 1)]
    loso = [r for r in same if math.isfinite(r.log_error)]
    own = [r.log_error for r in loso if r.family == family]
    if len(own) >= min_points:
        width = GpuWidth(half_width(own, level), f"{family} leave-one-source-out, {len(own)} "
                         f"{kind} {op} points", False)
    elif len(loso) >= min_points:
        width = GpuWidth(half_width([r.log_error for r in loso], level),
                         f"{family} has {len(own)} {kind} {op} points predicted from other "
                         f"sources: the {len(loso)} leave-one-source-out {kind} {op} residuals "
                         "of the families with several sources", False)
    else:
        loo = [r.loo_log_error for r in same
               if r.family == family and math.isfinite(r.loo_log_error)]
        scope = (f"{len(loso)} leave-one-source-out {kind} {op} residuals in all, too few: "
                 f"{family}'s {len(loo)} leave-one-out {op} residuals (within a source)")
        if len(loo) < min_points:
            loo = [r.loo_log_error for r in same if math.isfinite(r.loo_log_error)]
            scope = (f"{len(loso)} leave-one-source-out {kind} {op} residuals in all, and "
                     f"{family} has too few leave-one-out ones: all stacks' {len(loo)} (other "
                     "stacks' residuals)")
            return GpuWidth(half_width(loo, level), scope, True)
        width = GpuWidth(half_width(loo, level), scope, False)
    if not unseen_gpu:
        return width
    new = [r.log_error for r in loso if r.unseen_gpu]
    if len(new) < min_points:
        return replace(width, basis=f"{width.basis}; a GPU {family} never measured, and only "
                       f"{len(new)} {op} residuals of such a prediction", borrowed=True)
    hw = half_width(new, level)
    return GpuWidth(max(width.log_half_width, hw),
                    f"{width.basis}; a GPU {family} never measured: at least the width of the "
                    f"{len(new)} {kind} {op} points predicted for a GPU no other source of "
                    f"their family measured (90% within x{math.exp(hw):.3f})", width.borrowed)


def _json(name: str) -> dict[str, Any]:
    """A package data file (read here, not through dse.validation.fpga, whose fitting code
    loads scipy.optimize: `dse evaluate` and `dse roofline` never need it)."""
    return dict(json.loads(resources.files("dse.data").joinpath(name).read_text(
        encoding="utf-8")))


@cache
def gpu_points() -> tuple[GpuResidual, ...]:
    """Every measured GPU point of dse/data/gpu_cv.json (read here: the evidence sits below
    the model; dse.validation, which writes the file, fits the model)."""
    return with_unseen_gpus([residual_of(c) for c in _json("gpu_cv.json")["points"]])


@cache
def gpu_residuals() -> tuple[GpuResidual, ...]:
    """The GPU points with a leave-one-source-out residual: what the widths rest on (a new
    source, host or setup is what a user brings; docs/validation.md)."""
    return tuple(r for r in gpu_points() if math.isfinite(r.log_error))


@cache
def gpu_fitted_settings() -> frozenset[tuple[str, str, str, str]]:
    """(profile, device, model, precision) of every measured GPU point a fit used."""
    return frozenset((c["profile"], c["device"], c["model"], c["precision"])
                     for c in _json("gpu_cv.json")["points"])


@dataclass(frozen=True)
class FpgaResidual:
    engine: str
    op: str
    source: str  # "leave-one-out" or "prediction"
    board: str | None
    model: str | None
    log_error: float


@cache
def fpga_residuals() -> tuple[FpgaResidual, ...]:
    """The FPGA designs' residuals (dse/data/fpga_cv.json)."""
    return tuple(FpgaResidual(r["engine"], r["op"], r["source"], r["board"], r["model"],
                              math.log1p(r["rel_error"]))
                 for r in _json("fpga_cv.json")["residuals"] if r["rel_error"] > -1)


@cache
def fpga_measured_settings() -> frozenset[tuple[str, str, str]]:
    """(engine, board, model) of every measured FPGA point (FlexLLM's own: its U280 log)."""
    out = {tuple(m) for m in _json("fpga_cv.json")["measured_settings"]}
    return frozenset(out | {("flexllm", "u280", "llama-3.2-1b-instruct")})


@cache
def accuracy_cv() -> Mapping[str, Any]:
    """dse/data/accuracy_cv.json (scripts/calibrate_workloads.py)."""
    return _json("accuracy_cv.json")


@cache
def width_cv() -> Mapping[str, Any]:
    """dse/data/width_cv.json (scripts/calibrate_width.py): the width model's
    cross-validation and its held-out rows' intervals (`held_out.h_model`)."""
    return _json("width_cv.json")


@cache
def measured_devices() -> frozenset[str]:
    """The catalog devices with at least one published measurement (dse/data/published.toml,
    published_fpga.toml; a simulated board is not a measurement): a design on any other
    device rests on a projection."""
    out: set[str] = set()
    for name in ("published.toml", "published_fpga.toml"):
        text = resources.files("dse.data").joinpath(name).read_text(encoding="utf-8")
        for m in tomllib.loads(text).get("measurement", []):
            if "simulat" in str(m.get("device", "")).lower():
                continue
            for key in ("catalog_device", "catalog_device_assumed"):
                if isinstance(m.get(key), str):
                    out.add(m[key])
    return frozenset(out)


JUDGE_CV = "judge_cv.json"
JUDGE_CV_SCHEMA = 2
# the threshold of most of the judge's fitted rows (SpecReason's k = 9): its accuracy
# interval's reference
JUDGE_REFERENCE_THRESHOLD = 0.9


@cache
def judge_cv() -> Mapping[str, Any]:
    """dse/data/judge_cv.json (written by scripts/calibrate_target_judge.py)."""
    doc = _json(JUDGE_CV)
    if doc.get("schema_version") != JUDGE_CV_SCHEMA:
        raise ValueError(f"{JUDGE_CV}: schema_version {doc.get('schema_version')!r}, "
                         f"expected {JUDGE_CV_SCHEMA}")
    return doc


def _judge_covered(doc: Mapping[str, Any], draft: str, target: str) -> set[str]:
    """The datasets the judge's fit covered for this catalog pair (empty: not covered)."""
    return {c["dataset"] for c in doc["covered"]
            if c["draft"] == draft and c["target"] == target}


def judge_provenance(dataset: str, draft: str, target: str) -> tuple[str, str]:
    """("calibrated" | "extrapolated", basis) of a target-verifier design's accuracy:
    calibrated where the judge's fit had this catalog pair on this dataset."""
    doc = judge_cv()
    lopo = doc["leave_one_pair_out"]
    fit_ = doc["fit"]
    if dataset in _judge_covered(doc, draft, target):
        return "calibrated", (
            f"target judge fitted on the SpecReason rows of this pair on {dataset} "
            f"({doc['generated_by']}, in-sample accuracy error median "
            f"{fit_['median_abs_error']:.1f} points)")
    families = sorted({f"{c['draft_hf_id'].split('/')[-1]}/{c['target_hf_id'].split('/')[-1]}"
                       for c in doc["covered"]})
    return "extrapolated", (
        f"target judge fitted on SpecReason rows of other model families ({', '.join(families)}"
        f"; Lookahead Reasoning's re-runs); score means lowered with the pair's relative error "
        "1 - A_draft / A_target on this workload; "
        f"leave-one-pair-out accuracy error median {lopo['median_abs_error']:.1f}, max "
        f"{lopo['max_abs_error']:.1f} points, acceptance median "
        f"{lopo['acceptance_median_abs_error']:.2f}")


def judge_interval_scheme(status: str, draft: str, target: str) -> str:
    """The cross-validation whose residuals size a target-verifier design's accuracy
    interval: a covered setting's leave one row out, a covered pair's leave one dataset out,
    any other pair's leave one pair out."""
    if status == "calibrated":
        return "leave_one_row_out"
    return ("leave_one_dataset_out" if _judge_covered(judge_cv(), draft, target)
            else "leave_one_pair_out")
