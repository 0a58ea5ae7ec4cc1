"""docs/validation.md's serving-at-load section: the batch terms' cross-validation
(dse/data/serving_cv.json, scripts/calibrate_serving.py) and the held-out serving rows of
dse/data/published_serving.toml, each predicted by `dse serve` at its own load beside the
measured figure (nothing is fitted to them)."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from typing import Any, Literal

SCHEMES = (("before", "no batch terms (the batch-1 physics)"), ("fit", "in-sample fit"),
           ("leave_one_gpu_out", "leave one GPU out"),
           ("leave_one_model_out", "leave one model out"),
           ("leave_one_stack_out", "leave one stack out (the other stack's fit)"),
           ("leave_out_vidur", "leave Vidur out (hard roofline max)"),
           ("leave_out_llm_inference_bench", "leave LLM-Inference-Bench out (no stack terms)"))
# `dse serve`'s closed-form figure -> the measured figures it is compared with, the first a row
# states (the closed form gives means, so a source's mean is taken before its median; a
# streamed decode step, TPOT, stands for ITL where a source gives no ITL) and the tolerance of
# "within" (TTFT 50%, the rest 25%)
COMPARED: dict[str, tuple[tuple[str, ...], float]] = {
    "mean_itl_ms": (("mean_itl_ms", "median_itl_ms", "mean_tpot_ms", "median_tpot_ms"), 0.25),
    "mean_ttft_ms": (("mean_ttft_ms", "median_ttft_ms"), 0.5),
    "output_throughput": (("output_throughput",), 0.25)}


def rows() -> list[dict[str, Any]]:
    """dse/data/published_serving.toml's rows."""
    out: list[dict[str, Any]] = tomllib.loads(
        resources.files("dse.data").joinpath("published_serving.toml")
        .read_text(encoding="utf-8"))["measurement"]
    return out


def load_of(r: dict[str, Any]) -> tuple[Literal["concurrency", "rate"], float]:
    """A row's load: ("concurrency", C) for closed-loop clients, ("rate", R) for arrivals at R
    requests/s (inf: every request at once)."""
    if "concurrency" in r:
        return "concurrency", float(r["concurrency"])
    return "rate", float(r["rate"])


def serve_argv(r: dict[str, Any]) -> list[str]:
    """The `dse serve` command line that predicts a row (tests/test_published_serving.py runs
    it; held_out_rows computes the same through the API)."""
    kind, _ = load_of(r)
    argv = ["serve", "--model", r["catalog_model_assumed"], "--device",
            r["catalog_device_assumed"], "--serving", r.get("serving", "vllm-v1"),
            "--precision", r["precision"], "--kv-precision", r["kv_precision"],
            f"--{kind}", str(r[kind]), "--requests", str(r["requests"]),
            "--input-tokens", str(r["input_tokens"]), "--output-tokens", str(r["output_tokens"])]
    if "tp" in r:
        argv += ["--tp", str(r["tp"])]
    for key in ("max_num_seqs", "max_num_batched_tokens"):
        if key in r:
            argv += ["--" + key.replace("_", "-"), str(r[key])]
    return [*argv, "--json"]


def compared(r: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(measured figure, predicted figure, tolerance) for each figure a row can be judged on."""
    out = []
    for pred_key, (keys, tol) in COMPARED.items():
        got = [k for k in keys if k in r["measured"]]
        if got:
            out.append((got[0], pred_key, tol))
    return out


def label(r: dict[str, Any]) -> str:
    kind, value = load_of(r)
    load = f"c{int(value)}" if kind == "concurrency" else f"rate {r['rate']}"
    tp = f" tp{r['tp']}" if "tp" in r else ""
    return (f"{r['catalog_model_assumed']} {r['precision']} {r['catalog_device_assumed']}{tp} "
            f"{r.get('serving', 'vllm-v1')} kv {r['kv_precision']} {load} "
            f"{r['input_tokens']}/{r['output_tokens']}")


def load() -> dict[str, Any]:
    return json.loads(resources.files("dse.data").joinpath("serving_cv.json")
                      .read_text(encoding="utf-8"))


def held_out_rows() -> list[dict[str, Any]]:
    """Each held-out row's measured figures beside `dse serve`'s (closed form, with its 90%
    interval): the same placement, caps and load as serve_argv's command line."""
    from dse.api import load_catalog
    from dse.devices.registry import place
    from dse.serving import Load, serve, vllm_caps

    cat = load_catalog()
    out = []
    for r in rows():
        kind, value = load_of(r)
        load = Load(kind, value, r["input_tokens"], r["output_tokens"], r["requests"])
        pl = place(cat, cat.model(r["catalog_model_assumed"]), r["catalog_device_assumed"],
                   precision_name=r["precision"], software=r.get("serving", "vllm-v1"),
                   context_tokens=r["input_tokens"] + r["output_tokens"], tp=r.get("tp"),
                   kv_precision=r["kv_precision"])
        caps = vllm_caps(pl.memory_bytes, pl.device.name, max_num_seqs=r.get("max_num_seqs"),
                         max_num_batched_tokens=r.get("max_num_batched_tokens"))
        res = serve(pl, load, caps=caps)
        for key, pred_key, tol in compared(r):
            lo, hi = res["intervals"][pred_key]
            m, p = r["measured"][key], res[pred_key]
            out.append({"row": label(r), "source": r["source"].split(" @ ")[0],
                        "figure": key, "measured": m, "predicted": p, "low": lo, "high": hi,
                        "error": p / m - 1, "within": abs(p / m - 1) <= tol,
                        "inside": lo <= m <= hi})
    return out


def prefill_lines(cv: dict[str, Any]) -> list[str]:
    """The unfitted check of prompts at a batch (serving_cv.json `prefill_at_batch`)."""
    pre = cv.get("prefill_at_batch", {})
    if not pre.get("rows"):
        return []
    lines = ["", "Prompts at a batch, not fitted (LLM-Inference-Bench's time to first token, "
             "Plots/Fig_21/all_results_TTFT.csv: a static batch of 16 prompts of 1,024 tokens, "
             "one output token; each stack's fitted batch terms). Where its stack's 90% error "
             "exceeds the batch terms' own it widens the prefill side of the serving interval "
             "(`dse.serving.prefill_half_width`).", "",
             "| stack | GPU | model | measured s | predicted s | error |",
             "|---|---|---|---|---|---|"]
    for r in pre["rows"]:
        lines.append(f"| {r['stack']} | {r['gpu']} | {r['model']} | {r['measured_s']:.3g} | "
                     f"{r['predicted_s']:.3g} | {r['predicted_s'] / r['measured_s'] - 1:+.1%} |")
    lines += ["", "| group | rows | median error | q90 abs log error |", "|---|---|---|---|"]
    for kind in ("by_stack", "by_gpu"):
        for name, e in pre[kind].items():
            lines.append(f"| {name} | {e['n']} | {e['median_abs_rel_error']:.1%} | "
                         f"{e['q90_abs_log_error']:.3f} |")
    return lines


def power_lines(cv: dict[str, Any]) -> list[str]:
    """The power term's fit and folds (serving_cv.json `batch_power`)."""
    bp = cv.get("batch_power")
    if not bp:
        return []
    bound = ", at its upper bound (the TDP)" if bp["kv_power_fraction"] > 0.995 else ""
    lines = ["", "Power against the batch (`kv_power_fraction` = "
             f"{bp['kv_power_fraction']:.3g}{bound}; dse/validation/batch_power.py): "
             "LLM-Inference-Bench's average board power (NVML) over static batches of 1,024 + "
             f"1,024 tokens ({bp['batched_rows']} runs of 16-64 over batch 1 on "
             f"{', '.join(bp['gpus'])}; {', '.join(bp['stacks'])}; "
             f"{', '.join(bp['models'])}). *Ratio*: P(B) / P(1) (what the term decides); "
             "*absolute*: the batch's power, the batch-1 level included. Without the term a "
             "decode pass draws the same share of the dynamic range at every batch.", "",
             "| scheme | rows | ratio median error | max | within 10% | absolute median "
             "error | within 10% | fold values |", "|---|---|---|---|---|---|---|---|"]
    schemes = [("without the term", bp["before"], ""), ("in-sample fit", bp["fit"], "")]
    schemes += [(k.replace("_", " "), e, ", ".join(f"{g} {x:.3g}" for g, x in
                                                     e["values"].items()))
                for k, e in bp["cv"].items()]
    for label, e, folds in schemes:
        r, a = e["ratio"], e["absolute"]
        lines.append(f"| {label} | {r['n']} | {r['median_abs_rel_error']:.1%} | "
                     f"{r['max_abs_rel_error']:.1%} | {r['within_10pct']:.0%} | "
                     f"{a['median_abs_rel_error']:.1%} | {a['within_10pct']:.0%} | "
                     f"{folds or '-'} |")
    return lines


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
    lines += prefill_lines(cv)
    lines += power_lines(cv)
    held = held_out_rows()
    n_in = sum(r["within"] for r in held)
    n_iv = sum(r["inside"] for r in held)
    lines += ["", "### Serving at load: held-out published runs", "",
              "dse/data/published_serving.toml, no fit reads them; `dse serve`'s closed form "
              "(means, the stack's serving profile, vLLM's scheduler caps) beside the source's "
              "figures: its mean where it states one, else its median (ITL: a streamed TPOT "
              "where no ITL is given); within: 25% (TTFT 50%). "
              f"**{n_in} of {len(held)} within, {n_iv} of {len(held)} inside the 90% "
              "interval.**", "",
              "| source | figures | within | inside | median abs error |",
              "|---|---|---|---|---|"]
    for src in dict.fromkeys(r["source"] for r in held):
        sub = [r for r in held if r["source"] == src]
        errs = sorted(abs(r["error"]) for r in sub)
        med = (errs[(len(errs) - 1) // 2] + errs[len(errs) // 2]) / 2
        lines.append(f"| {src} | {len(sub)} | {sum(r['within'] for r in sub)} | "
                     f"{sum(r['inside'] for r in sub)} | {med:.1%} |")
    lines += ["", "| run | figure | measured | predicted [90% interval] | error | within "
              "| inside |", "|---|---|---|---|---|---|---|"]
    for r in held:
        lines.append(f"| {r['row']} | {r['figure']} | {r['measured']:.4g} | "
                     f"{r['predicted']:.4g} [{r['low']:.4g}-{r['high']:.4g}] | "
                     f"{r['error']:+.1%} | {'yes' if r['within'] else 'no'} | "
                     f"{'yes' if r['inside'] else 'no'} |")
    return lines
