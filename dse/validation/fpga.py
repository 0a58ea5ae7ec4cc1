"""Per-design FPGA engine fits and their leave-one-out cross-validation (pure: data in, values out).

Data: dse/data/published_fpga.toml, one [[measurement]] per published setting (schema in its
header). A point belongs to the engine its entry names (`catalog_engine`). What is fitted, per
engine, to that design's own measured (not simulated) points:
- achieved_efficiency: bounded 1-D least squares on log(predicted / measured) decode rates (the
  decode time is max(t_mem, t_mac) / eta + fill, so one parameter moves every point);
- prefill_efficiency: the same least squares on the design's measured prefill times, where it
  has any (StreamTensor: four), at the fitted decode efficiency;
- dynamic_w_per_ghz_kdsp: solved (brentq) so decode power at the fitted efficiency matches the
  design's power point, where it has one.
Simulated points (the authors' own estimates, FlightLLM's prefill times among them) and
measurements of designs without an engine are predicted, never fitted. FlexLLM's engine is
fitted in dse.validation.calibrate (to measured.toml) and is not refitted here unless
published_fpga.toml holds FlexLLM measurements of its own.

`leave_one_out` is generic (any fit/predict pair); `engine_cv` applies it to one engine's fitted
points: each point is predicted by a fit to the others. Nothing here reads files except `load`,
which reads the packaged data file.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, TypeVar, cast

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from dse.devices import fpga as fpga_mod
from dse.specs import Catalog, FpgaEngineSpec

P = TypeVar("P")
DATA_FILE = "published_fpga.toml"
# The build precision a measurement runs at: the engine's weight_bits_per_param, where it has one,
# overrides the streamed weight bits; this picks the rest (activation and KV widths).
PRECISION_OF = {"fp16": "fp16", "bf16": "bf16", "w4a16": "w4a16", "w8a16": "w8a16",
                "fp32": "fp32", "w3a8": "w3a8", "w2a8": "w2a8", "w1.58a8": "w1.58a8"}
DEFAULT_PRECISION = "w8a8"
ETA_BOUNDS = (1e-3, 1.0)


@dataclass(frozen=True)
class FpgaPoint:
    """One published number of one FPGA design (a decode rate, a prefill time or rate, a power)."""

    id: str
    engine: str | None  # catalog_engine: the boards/engines file modelling the design
    kind: str  # fpga_decode | fpga_prefill | power
    board: str | None
    model: str | None
    precision: str
    x: float  # decode: tokens in context; prefill: prompt tokens
    value: float
    unit: str
    simulated: bool
    document: str = ""  # the source document; leave one source out drops all of one document
    build: tuple[tuple[str, float], ...] = ()  # the measured design's own build (BUILD_KEYS)
    not_fitted: bool = False  # a measured figure kept to judge the model, never fitted

    @property
    def fittable(self) -> bool:
        return self.engine is not None and not self.simulated and not self.not_fitted

    @property
    def measured(self) -> bool:
        """Measured on a board (fitted or kept to judge), not the authors' estimate."""
        return not self.simulated


def load() -> dict[str, Any]:
    text = resources.files("dse.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return tomllib.loads(text)


# A measurement's [build] keys: what its source says of the design's own build. The build knobs
# (clock, lanes, channels, bit widths) set the build; axi_port_bits sets the engine's port width.
BUILD_KEYS = ("clock_MHz", "mac_lanes", "memory_channels", "axi_port_bits", "weight_bits",
              "kv_bits")


def _build(e: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    b = e.get("build", {})
    unknown = set(b) - set(BUILD_KEYS) - {"build_source"}
    if unknown:
        raise ValueError(f"{DATA_FILE}: unknown build keys {sorted(unknown)}")
    if b and "build_source" not in b:
        raise ValueError(f"{DATA_FILE}: a [measurement.build] table needs its build_source")
    return tuple((k, float(b[k])) for k in BUILD_KEYS if k in b)


def points(data: Mapping[str, Any]) -> list[FpgaPoint]:
    """Every point of every entry, in file order."""
    out: list[FpgaPoint] = []
    for i, e in enumerate(data["measurement"]):
        build = _build(e)
        for j, (x, v) in enumerate(e["points"]):
            out.append(FpgaPoint(
                id=f"{e.get('catalog_engine') or e['framework']}.{e.get('catalog_device', '?')}."
                   f"{e['kind']}.{i}.{j}",
                engine=e.get("catalog_engine"), kind=e["kind"], board=e.get("catalog_device"),
                model=e.get("catalog_model"),
                precision=PRECISION_OF.get(e["precision"], DEFAULT_PRECISION), x=float(x),
                value=float(v), unit=e["unit"], simulated=bool(e.get("simulated", False)),
                document=e.get("document", e["framework"]), build=build,
                not_fitted="not_fitted" in e))
    return out


def predictable(cat: Catalog, p: FpgaPoint) -> bool:
    """The catalog holds the point's engine, board and model."""
    return (p.engine is not None and p.board is not None and p.model is not None
            and p.engine in cat.names("fpga-engine") and p.board in cat.names("fpga")
            and p.model in cat.names("model"))


def measured_build(cat: Catalog, p: FpgaPoint, engine: FpgaEngineSpec) -> fpga_mod.FpgaBuild:
    """The engine's default build on the point's board at its precision, with what the point's
    source says of the design's own build (clock, MAC lanes, channels, port width, bits)."""
    wb, ab = fpga_mod.FPGA_PRECISIONS[p.precision]
    b = dict(p.build)
    if "axi_port_bits" in b:
        engine = replace(engine, axi_port_bits=int(b["axi_port_bits"]))
    knobs: dict[str, object] = {"weight_bits": b.get("weight_bits", wb), "activation_bits": ab}
    if "clock_MHz" in b:
        knobs["clock_hz"] = b["clock_MHz"] * 1e6
    for key in ("mac_lanes", "memory_channels", "kv_bits"):
        if key in b:
            knobs[key] = int(b[key])
    return fpga_mod.default_build(cat.fpga(p.board or ""), engine, **knobs)


def predict(cat: Catalog, p: FpgaPoint, engine: FpgaEngineSpec) -> float:
    """The tool's value for the point, in the point's unit."""
    model = cat.model(p.model or "")
    build = measured_build(cat, p, engine)
    c = fpga_mod.fpga_cost(model, build)
    if p.kind == "fpga_decode":
        t = float(fpga_mod.decode_token_s(c, p.x))
        return 1.0 / t if p.unit == "tokens/s" else t * 1e3
    if p.kind == "fpga_prefill":
        t = float(fpga_mod.prefill_s(c, max(p.x, 1.0)))
        return t if p.unit == "s" else max(p.x, 1.0) / t
    if p.kind == "power" and p.unit == "W":
        return float(fpga_mod.decode_power_w(c, p.x))
    raise ValueError(f"{p.id}: no prediction for kind {p.kind!r} in {p.unit!r}")


def rel_error(predicted: float, measured: float) -> float:
    return predicted / measured - 1.0


# ---------------------------------------------------------------------------------- fits


def _fit_share(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec, key: str
               ) -> float:
    """The engine field `key` (an achieved share of a bound) minimising
    sum(log(predicted / measured)^2) over `pts`."""
    def loss(eta: float) -> float:
        e = apply(engine, {key: eta})
        return float(sum(math.log(predict(cat, p, e) / p.value) ** 2 for p in pts))

    r = minimize_scalar(loss, bounds=ETA_BOUNDS, method="bounded", options={"xatol": 1e-9})
    return float(r.x)


def fit_efficiency(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec) -> float:
    """achieved_efficiency minimising sum(log(predicted / measured)^2) over the decode points."""
    decode = [p for p in pts if p.kind == "fpga_decode"]
    if not decode:
        raise ValueError(f"{engine.name}: no decode point to fit achieved_efficiency to")
    return _fit_share(cat, decode, engine, "achieved_efficiency")


def fit_dynamic_power(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec
                      ) -> float | None:
    """dynamic_w_per_ghz_kdsp matching the mean of the design's power points (None: no point).
    0 when static + memory power alone already exceed the measurement."""
    power = [p for p in pts if p.kind == "power"]
    if not power:
        return None

    def g(k: float) -> float:
        e = replace(engine, dynamic_w_per_ghz_kdsp=k)
        return float(np.mean([predict(cat, p, e) - p.value for p in power]))

    if g(0.0) >= 0:
        return 0.0
    return float(brentq(g, 0.0, 1e4, xtol=1e-9))


def fit_prefill_efficiency(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec
                           ) -> float | None:
    """prefill_efficiency minimising sum(log(predicted / measured)^2) over the design's
    measured prefill points (None: it has none)."""
    prefill = [p for p in pts if p.kind == "fpga_prefill"]
    return _fit_share(cat, prefill, engine, "prefill_efficiency") if prefill else None


def fit_engine(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec
               ) -> dict[str, float]:
    """The fitted keys (TOML names) of one engine from its fittable points."""
    eta = fit_efficiency(cat, pts, engine)
    out = {"achieved_efficiency": eta}
    eta_p = fit_prefill_efficiency(cat, pts, replace(engine, achieved_efficiency=eta))
    if eta_p is not None:
        out["prefill_efficiency"] = eta_p
    k = fit_dynamic_power(cat, pts, replace(engine, achieved_efficiency=eta))
    if k is not None:
        out["dynamic_w_per_ghz_kdsp"] = k
    return out


def apply(engine: FpgaEngineSpec, fitted: Mapping[str, float]) -> FpgaEngineSpec:
    return replace(engine, **cast(dict[str, Any], dict(fitted)))


# ---------------------------------------------------------------- cross-validation


@dataclass(frozen=True)
class Residual:
    id: str
    measured: float
    predicted: float

    @property
    def rel_error(self) -> float:
        return rel_error(self.predicted, self.measured)


@dataclass(frozen=True)
class CvRow:
    design: str
    n: int
    median_abs_rel_error: float | None  # None: fewer than two points, no CV
    worst_abs_rel_error: float | None
    note: str


def leave_one_out(pts: Sequence[P], fit: Callable[[Sequence[P]], object],
                  predict_one: Callable[[object, P], float], measured: Callable[[P], float],
                  name: Callable[[P], str]) -> list[Residual]:
    """For each point: fit to all the others, predict it. Needs at least two points."""
    if len(pts) < 2:
        raise ValueError("leave-one-out needs at least two points")
    out = []
    for i, p in enumerate(pts):
        params = fit([q for j, q in enumerate(pts) if j != i])
        out.append(Residual(name(p), measured(p), predict_one(params, p)))
    return out


def cv_row(design: str, residuals: Sequence[Residual], n: int) -> CvRow:
    if n < 2:
        return CvRow(design, n, None, None, "rests on one measurement, no CV")
    errs = np.abs([r.rel_error for r in residuals])
    return CvRow(design, n, float(np.median(errs)), float(np.max(errs)),
                 "leave-one-out: each point predicted by a fit to the others")


def prefill_cv(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec
               ) -> tuple[CvRow, list[Residual]]:
    """LOO over the engine's measured prefill points (prefill_efficiency refitted each time)."""
    prefill = [p for p in pts if p.kind == "fpga_prefill"]
    if len(prefill) < 2:
        return cv_row(engine.name + " prefill", [], len(prefill)), []

    def fit(sub: Sequence[FpgaPoint]) -> FpgaEngineSpec:
        return replace(engine, prefill_efficiency=fit_prefill_efficiency(cat, sub, engine))

    res = leave_one_out(prefill, fit=fit,
                        predict_one=lambda e, p: predict(cat, p, e),  # type: ignore[arg-type]
                        measured=lambda p: p.value, name=lambda p: p.id)
    return cv_row(engine.name + " prefill", res, len(prefill)), res


def engine_cv(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec
              ) -> tuple[CvRow, list[Residual]]:
    """LOO over the engine's fitted decode points (the power fit follows the efficiency)."""
    decode = [p for p in pts if p.kind == "fpga_decode"]
    if len(decode) < 2:
        return cv_row(engine.name, [], len(decode)), []
    res = leave_one_out(
        decode,
        fit=lambda sub: replace(engine, achieved_efficiency=fit_efficiency(cat, sub, engine)),
        predict_one=lambda e, p: predict(cat, p, e),  # type: ignore[arg-type]
        measured=lambda p: p.value, name=lambda p: p.id)
    return cv_row(engine.name, res, len(decode)), res


def engine_loso(cat: Catalog, pts: Sequence[FpgaPoint], engine: FpgaEngineSpec
                ) -> tuple[int, list[Residual]]:
    """Leave one source out within an engine whose fitted decode points come from two or more
    documents (a class of designs, as hls-stream's HLS ports): every measured decode point of
    one document (fitted or kept to judge) predicted by achieved_efficiency fitted to the other
    documents' points alone; a document with no fitted point is out of every fit already, so
    the full fit predicts it. (documents fitted, residuals); no residual below two documents."""
    decode = [p for p in pts if p.kind == "fpga_decode" and p.measured]
    fitted = [p for p in decode if p.fittable]
    docs = list(dict.fromkeys(p.document for p in fitted))
    if len(docs) < 2:
        return len(docs), []
    out: list[Residual] = []
    for doc in docs:
        eta = fit_efficiency(cat, [p for p in fitted if p.document != doc], engine)
        e = replace(engine, achieved_efficiency=eta)
        out += [Residual(p.id, p.value, predict(cat, p, e)) for p in decode if p.document == doc]
    full = replace(engine, achieved_efficiency=fit_efficiency(cat, fitted, engine))
    out += [Residual(p.id, p.value, predict(cat, p, full)) for p in decode
            if p.document not in docs]
    return len(docs), out


@dataclass(frozen=True)
class EngineReport:
    engine: str
    fitted: dict[str, float]
    cv: CvRow
    loo: list[Residual]
    prefill_cv: CvRow
    prefill_loo: list[Residual]
    in_sample: list[Residual]  # fitted points at the full fit
    predictions: list[Residual]  # the design's simulated / unfittable points at the full fit
    skipped: list[str]  # points whose board or model the catalog lacks
    loso_documents: int = 1  # documents among the fitted points
    loso: tuple[Residual, ...] = ()  # leave one source out (two or more documents)


def engine_report(cat: Catalog, all_points: Sequence[FpgaPoint], name: str) -> EngineReport:
    """Fit one engine to its own measured points, cross-validate it, predict the rest."""
    mine = [p for p in all_points if p.engine == name]
    ok = [p for p in mine if predictable(cat, p)]
    skipped = [p.id for p in mine if p not in ok]
    fit_pts = [p for p in ok if p.fittable]
    base = cat.engine(name)
    fitted = fit_engine(cat, fit_pts, base) if fit_pts else {}
    engine = apply(base, fitted)
    cv, loo = engine_cv(cat, fit_pts, base)
    pcv, ploo = prefill_cv(cat, fit_pts, replace(base, achieved_efficiency=engine
                                                  .achieved_efficiency))
    in_sample = [Residual(p.id, p.value, predict(cat, p, engine)) for p in fit_pts]
    preds = [Residual(p.id, p.value, predict(cat, p, engine)) for p in ok if not p.fittable]
    n_docs, loso = engine_loso(cat, ok, base)
    return EngineReport(name, fitted, cv, loo, pcv, ploo, in_sample, preds, skipped, n_docs,
                        tuple(loso))


def fitted_engines(data: Mapping[str, Any]) -> list[str]:
    """Engines with at least one measured (fittable) point in the data, in file order."""
    seen: list[str] = []
    for p in points(data):
        if p.fittable and p.engine not in seen:
            seen.append(p.engine or "")
    return seen


def markdown_section(cat: Catalog) -> list[str]:
    """The FPGA part of docs/validation.md's cross-validation section: one row per design."""
    data = load()
    pts = points(data)
    lines = ["### FPGA decoder designs", "",
             "Each design's achieved efficiency (and fabric power where measured) is fitted to "
             "that design's own published decode points (`scripts/fit_fpga_engines.py`, "
             "`dse.validation.fpga`; FlexLLM's in `dse/validation/calibrate.py`), and its prefill "
             "efficiency to its measured prefill times where it has any (StreamTensor's four: "
             "fitted, leave-one-out below). Simulated figures (FlightLLM's prefill times among "
             "them) are predictions, never fitted.", "",
             "| design | fitted points | LOO median error | LOO worst error | fitted | note |",
             "|---|---|---|---|---|---|"]
    reports = [engine_report(cat, pts, name) for name in fitted_engines(data)
               if name != "flexllm"]
    for r in reports:
        med = "-" if r.cv.median_abs_rel_error is None else f"{r.cv.median_abs_rel_error:.1%}"
        worst = "-" if r.cv.worst_abs_rel_error is None else f"{r.cv.worst_abs_rel_error:.1%}"
        fitted = ", ".join(f"{k} {x:.4g}" for k, x in r.fitted.items())
        lines.append(f"| {r.engine} | {r.cv.n} | {med} | {worst} | {fitted} | {r.cv.note} |")
        if r.prefill_cv.n:
            p = r.prefill_cv
            pmed = "-" if p.median_abs_rel_error is None else f"{p.median_abs_rel_error:.1%}"
            pworst = "-" if p.worst_abs_rel_error is None else f"{p.worst_abs_rel_error:.1%}"
            lines.append(f"| {r.engine} prefill | {p.n} | {pmed} | {pworst} | "
                         f"prefill_efficiency | {p.note} |")
    lines += ["", "Leave one source out: each design's measured decode points predicted by "
              "the default engine (`flexllm`, fitted to the FlexLLM paper alone), what a user "
              "who brings a design unlike the catalog's engines gets. Each design is one paper, "
              "so this is the FPGA side's only cross-source check; the tool marks such a "
              "prediction *extrapolated* and widens it.", "",
              "| design | decode points | default-engine median error | worst |",
              "|---|---|---|---|"]
    for name, n, d_med, d_worst in default_engine_rows(cat):
        lines.append(f"| {name} | {n} | {d_med:.1%} | {d_worst:.1%} |")
    by_id = {p.id: p for p in pts}
    for r in reports:
        if not r.loso:
            continue
        lines += ["", f"Leave one source out within `{r.engine}` ({r.loso_documents} documents "
                  "fitted): each document's measured decode points (fitted, or kept to judge) "
                  "predicted by the efficiency fitted to the other documents, each point at its "
                  "own design's build; its intervals rest on these residuals.", "",
                  "| point | document | fitted | measured | tool | error |",
                  "|---|---|---|---|---|---|"]
        for x in r.loso:
            pt = by_id[x.id]
            lines.append(f"| `{x.id}` | {pt.document} | {'yes' if pt.fittable else 'no'} | "
                         f"{x.measured:.4g} | {x.predicted:.4g} | {x.rel_error:+.1%} |")
    lines += ["", "Predictions of points no fit used (simulated figures, measured figures kept "
              "to judge):", "",
              "| point | measured | tool | error |", "|---|---|---|---|"]
    for r in reports:
        for x in r.predictions:
            lines.append(f"| `{x.id}` | {x.measured:.4g} | {x.predicted:.4g} | "
                         f"{x.rel_error:+.1%} |")
    return lines


def default_engine_rows(cat: Catalog, default: str = "flexllm"
                        ) -> list[tuple[str, int, float, float]]:
    """Leave one source out, FPGA: every other design's measured decode points predicted by
    the catalog's default engine (fitted to FlexLLM's paper alone), as a user who brings a
    design unlike the catalog's engines gets them. Per design: (design, points, median and
    worst relative error)."""
    engine = cat.engine(default)
    rows = []
    pts = [p for p in points(load()) if p.fittable and p.kind == "fpga_decode"
           and p.engine != default and predictable(cat, p)]
    for name in dict.fromkeys(p.engine for p in pts):
        errs = [abs(rel_error(predict(cat, p, engine), p.value)) for p in pts
                if p.engine == name]
        rows.append((name or "", len(errs), float(np.median(errs)), float(np.max(errs))))
    return rows


CV_FILE = "fpga_cv.json"


def cv_residuals(cat: Catalog) -> list[dict[str, Any]]:
    """Every FPGA residual the evidence offers, for the intervals (dse.uncertainty, which reads
    the file itself: this module loads scipy.optimize): each
    design's leave-one-out decode and prefill predictions, its predictions of the points it
    was not fitted to (simulated figures, other boards, measured figures kept to judge) and,
    for an engine fitted to two or more documents, each document's points predicted by a fit
    to the others (leave-one-source-out). One row per point: the engine, the
    operation (decode or prefill), where the residual comes from, the board, the model, and the
    relative error."""
    data = load()
    pts = points(data)
    by_id = {p.id: p for p in pts}
    out: list[dict[str, Any]] = []
    for name in fitted_engines(data):
        if name == "flexllm":
            continue  # fitted to one ratio by dse.validation.calibrate: no residual exists
        r = engine_report(cat, pts, name)
        for source, res in (("leave-one-out", [*r.loo, *r.prefill_loo]),
                            ("prediction", r.predictions), ("leave-one-source-out", r.loso)):
            for x in res:
                p = by_id[x.id]
                out.append({"engine": name,
                            "op": "prefill" if p.kind == "fpga_prefill" else "decode",
                            "source": source, "board": p.board, "model": p.model,
                            "id": x.id, "rel_error": round(x.rel_error, 9)})
    return out


def cv_dumps(rows: Sequence[Mapping[str, Any]]) -> str:
    import json

    measured = sorted({(p.engine, p.board, p.model) for p in points(load())
                       if p.fittable and p.engine and p.board and p.model})
    return json.dumps({"schema_version": 1, "generated_by": "scripts/fit_fpga_engines.py",
                       "measured_settings": [list(m) for m in measured],
                       "residuals": list(rows)}, indent=1) + "\n"


