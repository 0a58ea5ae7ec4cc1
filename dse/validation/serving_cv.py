"""docs/validation.md's serving-at-load section: the batch terms' cross-validation
(dse/data/serving_cv.json, scripts/calibrate_serving.py) and the held-out serving rows of
dse/data/published_serving.toml, each predicted by `dse serve` at its own load beside the
measured figure (nothing is fitted to them)."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from typing import Any

SCHEMES = (("before", "no batch terms (the batch-1 physics)"), ("fit", "in-sample fit"),
           ("leave_one_gpu_out", "leave one GPU out"),
           ("leave_one_model_out", "leave one model out"),
           ("leave_one_stack_out", "leave one stack out (the other stack's fit)"),
           ("leave_out_vidur", "leave Vidur out (hard roofline max)"),
           ("leave_out_llm_inference_bench", "leave LLM-Inference-Bench out (no stack terms)"))
COMPARED = {"median_itl_ms": ("mean_itl_ms", 0.25), "median_ttft_ms": ("mean_ttft_ms", 0.5),
            "output_throughput": ("output_throughput", 0.25)}


def load() -> dict[str, Any]:
    return json.loads(resources.files("dse.data").joinpath("serving_cv.json")
                      .read_text(encoding="utf-8"))


def held_out_rows() -> list[dict[str, Any]]:
    """Each held-out row's measured figures beside `dse serve`'s (closed form, with its 90%
    interval)."""
    from dse.api import load_catalog
    from dse.devices.registry import place
    from dse.serving import Load, serve, vllm_caps

    cat = load_catalog()
    rows = tomllib.loads(resources.files("dse.data").joinpath("published_serving.toml")
                         .read_text(encoding="utf-8"))["measurement"]
    out = []
    for r in rows:
        load = Load("concurrency", float(r["concurrency"]), r["input_tokens"],
                    r["output_tokens"], r["requests"])
        pl = place(cat, cat.model(r["catalog_model_assumed"]), r["catalog_device_assumed"],
                   precision_name=r["precision"], software=r.get("serving", "vllm-v1"),
                   context_tokens=r["input_tokens"] + r["output_tokens"],
                   kv_precision=r["kv_precision"])
        caps = vllm_caps(pl.memory_bytes, pl.device.name,
                         max_num_batched_tokens=r.get("max_num_batched_tokens"))
        res = serve(pl, load, caps=caps)
        for key, (pred_key, tol) in COMPARED.items():
            if key not in r["measured"]:
                continue
            lo, hi = res["intervals"][pred_key]
            m, p = r["measured"][key], res[pred_key]
            out.append({"row": f"{r['catalog_model_assumed']} {r['catalog_device_assumed']} "
                        f"kv {r['kv_precision']} c{r['concurrency']}", "figure": key,
                        "measured": m, "predicted": p, "low": lo, "high": hi,
                        "error": p / m - 1, "within": abs(p / m - 1) <= tol,
                        "inside": lo <= m <= hi})
    return out


def markdown_section(cv: dict[str, Any]) -> list[str]:
    v = cv["values"]
    lines = [
        "### Serving at load: the batch terms",
        "",
        f"Batch terms (docs/model.md, GPU): knee exponent p = {cv['knee_exponent']:.3g} "
        f"(Vidur's linear layers, {cv['knee']['rows']} rows, {len(cv['knee']['models'])} "
        "models on A100 and H100; fit median error "
        f"{cv['knee']['fit']['median_abs_rel_error']:.1%} against "
        f"{cv['knee']['hard_max']['median_abs_rel_error']:.1%} for the hard max; leave one "
        f"model out {cv['knee']['leave_one_model_out']['median_abs_rel_error']:.1%}, leave "
        f"one GPU out {cv['knee']['leave_one_gpu_out']['median_abs_rel_error']:.1%}); per "
        "stack the host time per further sequence and the KV-read share of many sequences, "
        "fitted to LLM-Inference-Bench's static batches (16-64 over batch 1): " + "; ".join(
            f"{s} {x['sequence_overhead_us']:.3g} us, {x['attention_bw_efficiency_many']:.3g}"
            for s, x in v.items()) + f"; pooled (stacks without batched rows) "
        f"{cv['pooled']['sequence_overhead_us']:.3g} us, "
        f"{cv['pooled']['attention_bw_efficiency_many']:.3g}.",
        "",
        "Errors on the batched rows: *slowdown* T(B) / T(1) (what the terms decide), "
        "*absolute* the batch's latency (the batch-1 level included). Every fold refits from "
        "the same default start.",
        "",
        "| scheme | stack | rows | slowdown median error | within 25% | absolute median error "
        "| within 25% |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, label in SCHEMES:
        for s, e in cv["cv"][key].items():
            sl, ab = e["slowdown"], e["absolute"]
            lines.append(f"| {label} | {s} | {sl['n']} | {sl['median_abs_rel_error']:.1%} | "
                         f"{sl['within_25pct']:.0%} | {ab['median_abs_rel_error']:.1%} | "
                         f"{ab['within_25pct']:.0%} |")
    rows = held_out_rows()
    n_in = sum(r["within"] for r in rows)
    n_iv = sum(r["inside"] for r in rows)
    lines += ["", "### Serving at load: held-out published runs", "",
              "dse/data/published_serving.toml, no fit reads them; `dse serve`'s closed form "
              "(means) beside the source's medians; within: 25% (TTFT 50%). "
              f"**{n_in} of {len(rows)} within, {n_iv} of {len(rows)} inside the 90% "
              "interval.**", "",
              "| run | figure | measured | predicted [90% interval] | error | within | inside |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['row']} | {r['figure']} | {r['measured']:.4g} | "
                     f"{r['predicted']:.4g} [{r['low']:.4g}-{r['high']:.4g}] | "
                     f"{r['error']:+.1%} | {'yes' if r['within'] else 'no'} | "
                     f"{'yes' if r['inside'] else 'no'} |")
    return lines
