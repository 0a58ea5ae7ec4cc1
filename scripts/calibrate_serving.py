"""Fit the GPU model's batch terms (dse/devices/gpu_batch.py) to the batched measurements
(dse/data/batched_measurements.toml) and cross-validate them (dse/validation/serving_fit.py).

    python scripts/calibrate_serving.py          # fit, write, print
    python scripts/calibrate_serving.py --check  # exit 1 if a written file is not current

Writes dse/data/batched_costs.toml (the values the model reads, each with what it rests on)
and dse/data/serving_cv.json (the cross-validation `dse reproduce` shows and the serving
intervals rest on, the unfitted check of the prefill at a batch on LLM-Inference-Bench's
time to first token, and the power term's fit and folds). About three minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dse.validation import serving_fit  # noqa: E402

COSTS = ROOT / "dse" / "data" / "batched_costs.toml"
CV_JSON = ROOT / "dse" / "data" / "serving_cv.json"


def costs_text(r: dict) -> str:
    v, pooled, k = r["values"], r["pooled"], r["knee"]
    fit, hard = k["fit"]["median_abs_rel_error"], k["hard_max"]["median_abs_rel_error"]
    lines = [
        "schema_version = 1",
        "# The GPU model's batch terms (dse/devices/gpu_batch.py): written by",
        "# scripts/calibrate_serving.py from dse/data/batched_measurements.toml; do not edit.",
        "# knee_exponent: Vidur's profiled linear layers (microsoft/vidur data/profiling/compute",
        f"# mlp.csv, {', '.join(k['gpus'])}, {len(k['models'])} models, {k['rows']} rows, TP 1,",
        "# 1..4096 tokens), p shared, each GPU's bandwidth share, compute share and kernel time",
        "# as nuisance. The stacks' terms: LLM-Inference-Bench's static batches (batch 16-64 over",
        "# batch 1 at the same lengths, A100 / H100 / GH200, four 7-8B models), with this p.",
        "# [pooled]: every stack's rows in one fit, for stacks without batched rows.",
        "",
        "[gemm]",
        f"knee_exponent = {r['knee_exponent']:.4g}",
        f"source = \"fitted: Vidur mlp.csv, {k['rows']} rows; fit median error {fit:.1%} "
        f"(hard max {hard:.1%})\"",
        "",
        "[pooled]",
        f"sequence_overhead_us = {pooled[0]:.4g}",
        f"attention_bw_efficiency_many = {pooled[1]:.4g}",
        "source = \"fitted: LLM-Inference-Bench, every stack's rows (" + ", ".join(
            f"{s} {n}" for s, n in r["batched_rows"].items()) + " batched rows)\"",
        "",
    ]
    for s, (ov, em) in v.items():
        lines += [f"[profiles.{s}]", f"sequence_overhead_us = {ov:.4g}",
                  f"attention_bw_efficiency_many = {em:.4g}",
                  f"source = \"fitted: LLM-Inference-Bench, its {r['batched_rows'][s]} batched "
                  "rows' slowdowns over batch 1\"", ""]
    bp = r["batch_power"]
    bound = " (at its upper bound, the TDP)" if bp["kv_power_fraction"] > 0.995 else ""
    lines += ["[power]", f"kv_power_fraction = {bp['kv_power_fraction']:.4g}",
              f"source = \"fitted{bound}: LLM-Inference-Bench's average board power "
              f"(Fig. 16), {bp['batched_rows']} static batches of 16-64 over batch 1 on "
              f"{', '.join(bp['gpus'])}; ratio median error "
              f"{bp['before']['ratio']['median_abs_rel_error']:.1%} without the term, "
              f"{bp['fit']['ratio']['median_abs_rel_error']:.1%} with it\"", ""]
    return "\n".join(lines)


def cv_text(r: dict) -> str:
    out = {"schema_version": 1, "generated_by": "scripts/calibrate_serving.py",
           "knee_exponent": round(r["knee_exponent"], 4), "knee": r["knee"],
           "values": {s: {"sequence_overhead_us": round(a, 3),
                          "attention_bw_efficiency_many": round(b, 4)}
                      for s, (a, b) in r["values"].items()},
           "pooled": {"sequence_overhead_us": round(r["pooled"][0], 3),
                      "attention_bw_efficiency_many": round(r["pooled"][1], 4)},
           "rows": r["rows"], "batched_rows": r["batched_rows"], "cv": r["cv"],
           "prefill_at_batch": r["prefill_at_batch"],
           "batch_power": {**r["batch_power"],
                           "kv_power_fraction": round(r["batch_power"]["kv_power_fraction"], 4)}}
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="verify, write nothing")
    a = ap.parse_args()
    r = serving_fit.fit_all()
    texts = {COSTS: costs_text(r), CV_JSON: cv_text(r)}
    if a.check:
        stale = [p for p, t in texts.items() if p.read_text(encoding="utf-8") != t]
        for p in stale:
            print(f"{p.relative_to(ROOT)} is not current: run scripts/calibrate_serving.py")
        return 1 if stale else 0
    for p, t in texts.items():
        p.write_text(t, encoding="utf-8")
    print(f"knee exponent {r['knee_exponent']:.3g}; pooled {r['pooled']}; "
          f"kv_power_fraction {r['batch_power']['kv_power_fraction']:.3g}")
    for s, x in r["values"].items():
        print(f"{s}: sequence_overhead_us {x[0]:.3g}, attention_bw_efficiency_many {x[1]:.3g}")
    for scheme, per in r["cv"].items():
        for s, e in per.items():
            print(f"{scheme:32s} {s:16s} slowdown {e['slowdown']['median_abs_rel_error']:6.1%} "
                  f"within25 {e['slowdown']['within_25pct']:5.0%} | absolute "
                  f"{e['absolute']['median_abs_rel_error']:6.1%} within25 "
                  f"{e['absolute']['within_25pct']:5.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
