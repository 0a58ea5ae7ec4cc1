"""The fit and cross-validation of the GPU model's batch terms (dse/devices/gpu_batch.py) on
the batched measurements of dse/data/batched_measurements.toml (scripts/calibrate_serving.py).

Two fits, each on its own source:
1. the roofline's knee exponent p, on Vidur's profiled linear layers: per row
   t = ((2 P / (B e_mem))^p + (2 P M / (F e_comp))^p)^(1/p) + 4 c0 (P the layer's linear
   parameters, M the tokens, B and F the datasheet bandwidth and FP16 peak, four GEMM kernels
   of c0 each), with e_mem, e_comp and c0 per GPU as nuisance parameters (they describe
   Vidur's PyTorch GEMMs, not a serving profile) and p shared;
2. per serving stack, the KV-read share of many sequences and the host's time per further
   sequence, on LLM-Inference-Bench's static batches, with p from (1): each row's residual is
   log of the predicted over the measured slowdown T(B) / T(1) at the same lengths, so the
   stack's batch-1 level (the batch-1 model's business, fitted elsewhere) does not enter.
   The pooled values (every stack's rows in one fit) serve stacks without batched rows.

Then, with those timing terms, the power of an attention streaming many sequences' caches
(`kv_power_fraction`) on LLM-Inference-Bench's average power of the same kind of static
batches (dse.validation.batch_power, its own fit and folds).

3. not fitted, a check: LLM-Inference-Bench's time to first token of a static batch of
   prompts (its Fig. 21: 16 prompts of 1,024 tokens, one output token), each predicted with its
   stack's fitted terms; its residuals by stack size the serving interval's prefill side where
   they exceed the batch terms' own (`dse.serving.prefill_half_width`).

Every fold of the cross-validation refits from the same default start (DEFAULT_START):
leave one GPU out, leave one model out, leave one stack out (a stack predicted with the other
stacks' pooled fit, as an unfitted stack is) and leave one source out (Vidur left out: the
hard max, p = inf; LLM-Inference-Bench left out: no sequence overhead and the batch-1 KV
share). Errors are reported on the slowdowns and on the absolute latencies of the batched
rows (B > 1), before (no batch terms) and after.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import numpy as np

DATA_FILE = "batched_measurements.toml"
DEFAULT_START = {"p": 4.0, "sequence_overhead_us": 10.0, "attention_bw_efficiency_many": 0.8}
BOUNDS = {"p": (1.0, 50.0), "sequence_overhead_us": (0.0, 200.0),
          "attention_bw_efficiency_many": (0.05, 1.0)}
VIDUR_PEAKS = {"a100": (2.039e12, 312e12), "h100": (3.35e12, 989.4e12)}  # catalog datasheets


def load() -> dict[str, Any]:
    text = resources.files("dse.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    return tomllib.loads(text)


# ------------------------------------------------------------------------------- the knee

@dataclass(frozen=True)
class VidurRow:
    gpu: str
    model: str
    tokens: int
    params: float
    seconds: float


def vidur_rows(data: dict[str, Any]) -> list[VidurRow]:
    return [VidurRow(b["gpu"], b["model"], m, float(b["linear_params_per_layer"]), ms * 1e-3)
            for b in data["vidur"] for m, ms in zip(b["tokens"], b["linear_ms_per_layer"],
                                                    strict=True)]


def _vidur_pred(x: np.ndarray, rows: Sequence[VidurRow], gpus: list[str]) -> np.ndarray:
    from dse.devices.gpu_batch import soft_max

    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        k = gpus.index(r.gpu)
        e_mem, e_comp, c0_us = x[1 + 3 * k: 4 + 3 * k]
        bw, peak = VIDUR_PEAKS[r.gpu]
        mem = 2 * r.params / (bw * e_mem)
        comp = 2 * r.params * r.tokens / (peak * e_comp)
        out[i] = float(soft_max(mem, comp, x[0])) + 4 * c0_us * 1e-6
    return out


def fit_knee(rows: Sequence[VidurRow], *, hard: bool = False) -> tuple[float, np.ndarray]:
    """(p, log residuals); hard: p fixed at inf (the hard max), the nuisance refitted."""
    from scipy.optimize import least_squares

    gpus = sorted({r.gpu for r in rows})
    meas = np.array([r.seconds for r in rows])
    start = [0.8, 0.7, 5.0] * len(gpus)
    lb, ub = [0.1, 0.1, 0.0] * len(gpus), [1.0, 1.0, 50.0] * len(gpus)
    if hard:
        def res_h(y: np.ndarray) -> np.ndarray:
            return np.log(_vidur_pred(np.r_[np.inf, y], rows, gpus) / meas)
        s = least_squares(res_h, start, bounds=(lb, ub), loss="soft_l1", f_scale=0.1)
        return math.inf, s.fun

    def res(x: np.ndarray) -> np.ndarray:
        return np.log(_vidur_pred(x, rows, gpus) / meas)
    s = least_squares(res, [DEFAULT_START["p"], *start], bounds=([BOUNDS["p"][0], *lb],
                      [BOUNDS["p"][1], *ub]), loss="soft_l1", f_scale=0.1)
    return float(s.x[0]), s.fun


# ------------------------------------------------------------------ the static batches

@dataclass(frozen=True)
class LibRow:
    stack: str  # the serving profile
    gpu: str  # catalog device
    model: str  # catalog model
    tokens: int  # input = output tokens
    batch: int
    seconds: float
    budget: int  # max_num_batched_tokens


def lib_rows(data: dict[str, Any]) -> list[LibRow]:
    return [LibRow(b["serving"], b["catalog_device"], b["catalog_model"], n, bb, t,
                   b["max_num_batched_tokens"])
            for b in data["lib"] for n, bb, t in zip(b["input_output_tokens"], b["batch"],
                                                     b["latency_s"], strict=True)]


_PLACED: dict[tuple[str, str, str, int], Any] = {}


def batched_engine(r: LibRow, context_tokens: int, p: float, overhead_us: float,
                   e_many: float | None, **cost: float) -> Any:
    """The row's stack, GPU and model placed for context_tokens (cached) as a serving engine
    with these batch terms (e_many None: the batch-1 KV share at every batch) and any other
    GpuCost fields given."""
    from dse.api import load_catalog
    from dse.devices.registry import place
    from dse.serving.engine import Engine
    from dse.serving.load import Caps

    key = (r.stack, r.gpu, r.model, context_tokens)
    if key not in _PLACED:
        cat = load_catalog()
        _PLACED[key] = place(cat, cat.model(r.model), r.gpu, software=r.stack,
                             context_tokens=context_tokens, tp=1)
    pl = _PLACED[key]
    c = pl.cost
    many = 0.0 if e_many is None else pl.device.mem_bw_bytes_per_s * e_many * c.tp
    pl = replace(pl, cost=replace(c, knee_exponent=p, kv_bw_many_bytes_per_s=many,
                                  sequence_overhead_s=overhead_us * 1e-6, **cost))
    return Engine(pl, Caps(256, r.budget))


def predict(rows: Sequence[LibRow], p: float, overhead_us: float, e_many: float | None
            ) -> np.ndarray:
    """Each row's static-batch wall time (s) with these batch terms (e_many None: the
    batch-1 KV share at every batch)."""
    from dse.serving.closed_form import static_batch
    from dse.serving.load import Load

    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        e = batched_engine(r, 2 * r.tokens, p, overhead_us, e_many)
        s = static_batch(e, Load("batch", float(r.batch), r.tokens, r.tokens, r.batch))
        out[i] = r.batch / s.request_rate
    return out


def pairs(rows: Sequence[LibRow]) -> list[tuple[int, int]]:
    """(batched row, its batch-1 row) index pairs: same stack, GPU, model and lengths."""
    ones = {(r.stack, r.gpu, r.model, r.tokens): i for i, r in enumerate(rows) if r.batch == 1}
    return [(i, ones[k]) for i, r in enumerate(rows)
            if r.batch > 1 and (k := (r.stack, r.gpu, r.model, r.tokens)) in ones]


def slowdown_residuals(rows: Sequence[LibRow], pred: np.ndarray) -> np.ndarray:
    """log(predicted / measured slowdown T(B) / T(1)) of each batched row with a batch-1 row."""
    return np.array([math.log(pred[i] / pred[j] / (rows[i].seconds / rows[j].seconds))
                     for i, j in pairs(rows)])


def fit_stack(rows: Sequence[LibRow], p: float) -> tuple[float, float]:
    """(sequence_overhead_us, attention_bw_efficiency_many) of the rows' slowdowns."""
    from scipy.optimize import least_squares

    def res(x: np.ndarray) -> np.ndarray:
        return slowdown_residuals(rows, predict(rows, p, x[0], x[1]))
    names = ("sequence_overhead_us", "attention_bw_efficiency_many")
    s = least_squares(res, [DEFAULT_START[k] for k in names],
                      bounds=([BOUNDS[k][0] for k in names], [BOUNDS[k][1] for k in names]),
                      loss="soft_l1", f_scale=0.1, diff_step=1e-3)
    return float(s.x[0]), float(s.x[1])


# --------------------------------------------------------- the prefill at a batch (a check)

def ttft_rows(data: dict[str, Any]) -> list[LibRow]:
    """LLM-Inference-Bench's time-to-first-token rows as static batches of `batch` prompts,
    each of its input tokens and one output token (LibRow.tokens: the input tokens)."""
    return [LibRow(b["serving"], b["catalog_device"], b["catalog_model"], b["input_tokens"],
                   b["batch"], b["ttft_s"], b["max_num_batched_tokens"])
            for b in data.get("lib_ttft", [])]


def predict_ttft(rows: Sequence[LibRow], p: float, overhead_us: float,
                 e_many: float | None) -> np.ndarray:
    """Each TTFT row's batch latency (s): the static batch's prefill and its one token."""
    from dse.serving.closed_form import static_batch
    from dse.serving.load import Load

    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        s = static_batch(batched_engine(r, r.tokens + 1, p, overhead_us, e_many),
                         Load("batch", float(r.batch), r.tokens, 1, r.batch))
        out[i] = r.batch / s.request_rate
    return out


def prefill_at_batch(rows: Sequence[LibRow], p: float,
                     values: dict[str, tuple[float, float]],
                     pooled: tuple[float, float]) -> dict[str, Any]:
    """The TTFT rows' errors (predicted / measured - 1) with each stack's fitted terms (the
    pooled ones for a stack without them), by stack and by GPU, and row by row."""
    if not rows:
        return {"by_stack": {}, "by_gpu": {}, "rows": []}
    pred = np.concatenate([predict_ttft([r], p, *values.get(r.stack, pooled)) for r in rows])
    rel = pred / np.array([r.seconds for r in rows]) - 1
    return {"by_stack": {s: _stats(rel[[r.stack == s for r in rows]])
                         for s in sorted({r.stack for r in rows})},
            "by_gpu": {g: _stats(rel[[r.gpu == g for r in rows]])
                       for g in sorted({r.gpu for r in rows})},
            "rows": [{"stack": r.stack, "gpu": r.gpu, "model": r.model, "batch": r.batch,
                      "input_tokens": r.tokens, "measured_s": r.seconds,
                      "predicted_s": round(float(x), 5)} for r, x in zip(rows, pred,
                                                                          strict=True)]}


# ------------------------------------------------------------------------- the whole fit

TERMS = ("sequence_overhead_us", "attention_bw_efficiency_many")


def _stats(rel: np.ndarray) -> dict[str, Any]:
    a = np.abs(rel)
    return {"n": int(a.size), "median_abs_rel_error": round(float(np.median(a)), 4),
            "within_25pct": round(float(np.mean(a <= 0.25)), 4),
            "q90_abs_log_error": round(float(np.quantile(np.abs(np.log1p(rel)), 0.9)), 4)}


def _errors(rows: Sequence[LibRow], pred: np.ndarray) -> dict[str, Any]:
    """Slowdown and absolute errors of the batched rows (B > 1)."""
    slow = np.expm1(slowdown_residuals(rows, pred))
    absolute = np.array([pred[i] / r.seconds - 1 for i, r in enumerate(rows) if r.batch > 1])
    return {"slowdown": _stats(slow), "absolute": _stats(absolute)}


def fit_batch_power(data: dict[str, Any], timing: dict[str, tuple[float, float, float]]
                    ) -> dict[str, Any]:
    from dse.validation import batch_power  # it builds on this module's engines and pairs

    return batch_power.fit_all(data, timing)


def fit_all() -> dict[str, Any]:
    """Every fit and cross-validation fold (module docstring); the values and the CV."""
    data = load()
    vr = vidur_rows(data)
    p, knee_res = fit_knee(vr)
    _, hard_res = fit_knee(vr, hard=True)
    knee_cv = {}
    for key, attr in (("leave_one_model_out", "model"), ("leave_one_gpu_out", "gpu")):
        errs = []
        for g in sorted({getattr(r, attr) for r in vr}):
            train = [r for r in vr if getattr(r, attr) != g]
            test = [r for r in vr if getattr(r, attr) == g]
            pg, _ = fit_knee(train)
            if attr == "gpu":  # the left-out GPU's own nuisance refitted at the fold's p
                from scipy.optimize import least_squares
                meas = np.array([r.seconds for r in test])
                s = least_squares(lambda y, pg=pg, test=test, meas=meas: np.log(
                    _vidur_pred(np.r_[pg, y], test, [test[0].gpu]) / meas), [0.8, 0.7, 5.0],
                    bounds=([0.1, 0.1, 0.0], [1.0, 1.0, 50.0]), loss="soft_l1", f_scale=0.1)
                errs += list(np.expm1(s.fun))
            else:
                errs += list(np.expm1(np.log(_vidur_pred(
                    _knee_with_nuisance(train, pg), test, sorted({r.gpu for r in train}))
                    / np.array([r.seconds for r in test]))))
        knee_cv[key] = _stats(np.array(errs))
    rows = lib_rows(data)
    stacks = sorted({r.stack for r in rows})
    values = {s: fit_stack([r for r in rows if r.stack == s], p) for s in stacks}
    pooled = fit_stack(rows, p)
    cv: dict[str, Any] = {"before": {}, "fit": {}, "leave_one_gpu_out": {},
                          "leave_one_model_out": {}, "leave_one_stack_out": {},
                          "leave_out_vidur": {}, "leave_out_llm_inference_bench": {}}
    for s in stacks:
        own = [r for r in rows if r.stack == s]
        cv["before"][s] = _errors(own, predict(own, math.inf, 0.0, None))
        cv["fit"][s] = _errors(own, predict(own, p, *values[s]))
        for key, attr in (("leave_one_gpu_out", "gpu"), ("leave_one_model_out", "model")):
            pred = np.empty(len(own))
            for g in sorted({getattr(r, attr) for r in own}):
                idx = [i for i, r in enumerate(own) if getattr(r, attr) == g]
                x = fit_stack([r for r in own if getattr(r, attr) != g], p)
                pred[idx] = predict([own[i] for i in idx], p, *x)
            cv[key][s] = _errors(own, pred)
        x = fit_stack([r for r in rows if r.stack != s], p)
        cv["leave_one_stack_out"][s] = _errors(own, predict(own, p, *x))
        cv["leave_out_vidur"][s] = _errors(own, predict(own, math.inf,
                                                        *fit_stack(own, math.inf)))
        cv["leave_out_llm_inference_bench"][s] = _errors(own, predict(own, p, 0.0, None))
    return {"knee_exponent": p, "values": values, "pooled": pooled,
            "knee": {"rows": len(vr), "gpus": sorted({r.gpu for r in vr}),
                     "models": sorted({r.model for r in vr}),
                     "fit": _stats(np.expm1(knee_res)), "hard_max": _stats(np.expm1(hard_res)),
                     **knee_cv},
            "prefill_at_batch": prefill_at_batch(ttft_rows(data), p, values, pooled),
            "batch_power": fit_batch_power(
                data, {s: (p, *values.get(s, pooled)) for s in
                       {b["serving"] for b in data.get("lib_power", [])}}),
            "rows": {s: sum(r.stack == s for r in rows) for s in stacks},
            "batched_rows": {s: sum(r.stack == s and r.batch > 1 for r in rows)
                             for s in stacks},
            "cv": cv}


def _knee_with_nuisance(rows: Sequence[VidurRow], p: float) -> np.ndarray:
    """The per-GPU nuisance refitted at a fixed p (for a fold's held-out model)."""
    from scipy.optimize import least_squares

    gpus = sorted({r.gpu for r in rows})
    meas = np.array([r.seconds for r in rows])
    s = least_squares(lambda y: np.log(_vidur_pred(np.r_[p, y], rows, gpus) / meas),
                      [0.8, 0.7, 5.0] * len(gpus), bounds=([0.1, 0.1, 0.0] * len(gpus),
                      [1.0, 1.0, 50.0] * len(gpus)), loss="soft_l1", f_scale=0.1)
    return np.r_[p, s.x]
