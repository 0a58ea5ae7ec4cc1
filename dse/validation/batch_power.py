"""The batch terms' power: how a GPU's draw rises with the sequences a decode pass serves,
fitted to LLM-Inference-Bench's average board power of static batches
(dse/data/batched_measurements.toml `[[lib_power]]`, its Fig. 16: A100, H100 and GH200; vLLM
and TensorRT-LLM; Llama-2-7B and Llama-3-8B; 1,024 prompt and 1,024 output tokens;
batches 1, 16, 32 and 64).

The model (dse.devices.power.decode_fraction): a decode pass's share of the dynamic range
moves from the profile's decode fraction towards `kv_power_fraction` with the pass's batched
KV share, k = (the share of its DRAM streaming spent on the KV caches) x (1 - 1/s) for s
sequences. At batch 1, k = 0: the single-stream model is untouched. The measured rise is
large (an A100 running Llama-2-7B under vLLM: 222 W at batch 1, 344 W at 64) where the model
without the term keeps the decode fraction (about 250 W at every batch).

One value for every stack and GPU, bounded to [0, 1] (a board draws at most its TDP). Each row's
residual is log of the predicted over the measured ratio P(B) / P(1) at the same stack, GPU,
model and lengths, so the batch-1 level (the batch-1 power model's business: the profile's
decode fraction and the board's wait fraction, fitted elsewhere) does not enter. Each run is
predicted as the static batch it was (dse.serving.closed_form.static_batch: the prompts'
prefill at the prefill fraction, then the decodes), with the stack's fitted timing terms.

Cross-validation: leave one GPU, one model, one stack out; each fold refits from nothing (a
bounded one-dimensional search needs no start). Errors on the ratios and on the absolute
power of the batched rows, before (no term: the decode fraction at every batch) and after.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from dse.validation.serving_fit import LibRow, batched_engine, pairs

BOUNDS = (0.0, 1.0)


@dataclass(frozen=True)
class PowerRow(LibRow):
    watts: float  # the run's average board power


def power_rows(data: dict[str, Any]) -> list[PowerRow]:
    return [PowerRow(b["serving"], b["catalog_device"], b["catalog_model"], n, bb, t,
                     b["max_num_batched_tokens"], w)
            for b in data.get("lib_power", [])
            for n, bb, t, w in zip(b["input_output_tokens"], b["batch"], b["latency_s"],
                                   b["avg_power_w"], strict=True)]


def predict_w(rows: Sequence[PowerRow], kv_power_fraction: float | None,
              timing: dict[str, tuple[float, float, float]]) -> np.ndarray:
    """Each row's average power (W) over its static batch, with this kv_power_fraction (None:
    the decode fraction at every batch) and each stack's timing terms
    (knee exponent, sequence overhead in us, attention_bw_efficiency_many)."""
    from dse.serving.closed_form import static_batch
    from dse.serving.load import Load

    f_kv = np.nan if kv_power_fraction is None else kv_power_fraction
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        e = batched_engine(r, 2 * r.tokens, *timing[r.stack], kv_power_fraction=f_kv)
        out[i] = static_batch(e, Load("batch", float(r.batch), r.tokens, r.tokens,
                                      r.batch)).power_w
    return out


def ratio_residuals(rows: Sequence[PowerRow], pred: np.ndarray) -> np.ndarray:
    """log(predicted / measured) of P(B) / P(1), one per batched row."""
    return np.array([np.log(pred[i] / pred[j]) - np.log(rows[i].watts / rows[j].watts)
                     for i, j in pairs(rows)])


def fit(rows: Sequence[PowerRow], timing: dict[str, tuple[float, float, float]]) -> float:
    """kv_power_fraction minimising the squared log-ratio residuals, within BOUNDS."""
    s = minimize_scalar(lambda f: float(np.sum(ratio_residuals(rows, predict_w(
        rows, f, timing)) ** 2)), bounds=BOUNDS, method="bounded",
        options={"xatol": 1e-3})
    return float(s.x)


def _stats(rel: np.ndarray) -> dict[str, Any]:
    a = np.abs(rel)
    return {"n": int(a.size), "median_abs_rel_error": round(float(np.median(a)), 4),
            "max_abs_rel_error": round(float(np.max(a)), 4),
            "within_10pct": round(float(np.mean(a <= 0.10)), 4)}


def _errors(rows: Sequence[PowerRow], pred: np.ndarray) -> dict[str, Any]:
    absolute = np.array([pred[i] / r.watts - 1 for i, r in enumerate(rows) if r.batch > 1])
    return {"ratio": _stats(np.expm1(ratio_residuals(rows, pred))),
            "absolute": _stats(absolute)}


def fit_all(data: dict[str, Any], timing: dict[str, tuple[float, float, float]]
            ) -> dict[str, Any]:
    """The value, its fit and before errors, and the folds (module docstring)."""
    rows = power_rows(data)
    value = fit(rows, timing)
    cv: dict[str, Any] = {}
    for key, attr in (("leave_one_gpu_out", "gpu"), ("leave_one_model_out", "model"),
                      ("leave_one_stack_out", "stack")):
        pred = np.empty(len(rows))
        folds = {}
        for g in sorted({getattr(r, attr) for r in rows}):
            idx = [i for i, r in enumerate(rows) if getattr(r, attr) == g]
            x = fit([r for r in rows if getattr(r, attr) != g], timing)
            pred[idx] = predict_w([rows[i] for i in idx], x, timing)
            folds[g] = round(x, 4)
        cv[key] = {**_errors(rows, pred), "values": folds}
    return {"kv_power_fraction": value, "rows": len(rows),
            "batched_rows": sum(r.batch > 1 for r in rows),
            "gpus": sorted({r.gpu for r in rows}), "stacks": sorted({r.stack for r in rows}),
            "models": sorted({r.model for r in rows}),
            "before": _errors(rows, predict_w(rows, None, timing)),
            "fit": _errors(rows, predict_w(rows, value, timing)), "cv": cv}
