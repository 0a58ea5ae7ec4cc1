"""Extract the batched measurements the GPU model's batch terms are fitted to, from the
sources' own git repositories, into dse/data/batched_measurements.toml (small: the rules below
choose the rows). Run once per source update; the fit (scripts/calibrate_serving.py) reads the
written file only.

    python scripts/extract_batched_data.py VIDUR_GIT_DIR LLM_INFERENCE_BENCH_GIT_DIR

Rules (also written into the file's header):
- Vidur (microsoft/vidur, data/profiling/compute/<gpu>/<model>/mlp.csv): the A100 and H100
  files (the A40 is not in the catalog), num_tensor_parallel_workers 1, num_tokens at the powers
  of two 1..4096 (the first row of each); per row the sum of the medians of the four linear
  operators (attn_pre_proj, attn_post_proj, mlp_up_proj, mlp_down_proj; ms per layer) and the
  layer's linear parameters from the row's shape columns. The attention.csv files are Git LFS
  objects absent from the repository's snapshot, so no attention timing is used.
- LLM-Inference-Bench (argonne-lcf/LLM-Inference-Bench, Plots/All_results.csv): NVIDIA A100,
  H100 and GH200, one GPU, vLLM and TensorRT-LLM, the four 7-8B models with a catalog shape;
  the first row of each (hardware, framework, model, length, batch); rows whose latency is
  below the datasheet floor (the output tokens' decode steps streaming the FP16 weights at the
  peak bandwidth) are dropped as impossible, each named in the file.
- LLM-Inference-Bench's time to first token (Plots/Fig_21/all_results_TTFT.csv): the same
  hardware, frameworks and models, one GPU, the first row of each (hardware, framework,
  model); a static batch of prompts with one output token, so the prefill at a batch. Not
  fitted: a check of the prefill at a batch (dse.validation.serving_fit.prefill_at_batch).
- LLM-Inference-Bench's power (Plots/Fig_16_a_b/power_results.csv, its Fig. 16): the same
  hardware, frameworks and models, one GPU, the first row of each (hardware, framework,
  model, length, batch); avg_power is the mean of NVML's board power samples over the run
  (the repository's power_utils.py, nvmlDeviceGetPowerUsage: milliwatts), written in watts.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "dse" / "data" / "batched_measurements.toml"
TOKENS = [2 ** i for i in range(13)]
LINEAR = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
VIDUR_GPUS = {"a100": "a100-80gb-sxm", "h100": "h100-sxm"}
LIB_HW = {"Nvidia A100 GPU": "a100-40gb-sxm", "Nvidia H100 GPU": "h100-sxm",
          "Nvidia GH200 GPU": "gh200"}
LIB_FW = {"vLLM": "vllm-cudagraph", "TensorRT-LLM": "tensorrt-llm"}
LIB_MODELS = {"meta-llama/Llama-2-7b-hf": "llama-2-7b",
              "meta-llama/Meta-Llama-3-8B": "llama-3.1-8b-instruct",
              "mistralai/Mistral-7B-v0.1": "mistral-7b-v0.1",
              "Qwen/Qwen2-7B": "qwen2-7b-instruct"}
MAX_LEN = {"llama-2-7b": 4096, "llama-3.1-8b-instruct": 8192, "mistral-7b-v0.1": 32768,
           "qwen2-7b-instruct": 32768}


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def vidur_blocks(repo: str) -> list[str]:
    head = git(repo, "rev-parse", "HEAD").strip()
    out = []
    for path in sorted(git(repo, "ls-tree", "-r", "HEAD", "--name-only").split()):
        parts = path.split("/")
        if not path.endswith("/mlp.csv") or parts[3] not in VIDUR_GPUS:
            continue
        rows: dict[int, tuple[float, int]] = {}
        for r in csv.DictReader(io.StringIO(git(repo, "show", f"HEAD:{path}"))):
            m = int(r["num_tokens"])
            if r["num_tensor_parallel_workers"] != "1" or m not in TOKENS or m in rows:
                continue
            h, e = int(r["n_embd"]), int(r["n_expanded_embd"])
            heads, kv = int(r["n_head"]), int(r["n_kv_head"])
            gated = r["use_gated_mlp"] == "True"
            params = h * (h + 2 * h * kv // heads) + h * h + h * e * (2 if gated else 1) + e * h
            rows[m] = (sum(float(r[f"time_stats.{k}.median"]) for k in LINEAR), params)
        ms = sorted(rows)
        out += ["[[vidur]]", f'gpu = "{parts[3]}"', f'catalog_device = "{VIDUR_GPUS[parts[3]]}"',
                f'model = "{"/".join(parts[4:6])}"',
                f"linear_params_per_layer = {rows[ms[0]][1]}",
                f"tokens = {ms}",
                "linear_ms_per_layer = [" + ", ".join(f"{rows[m][0]:.6g}" for m in ms) + "]",
                f'source = "microsoft/vidur {path} @ {head}"', ""]
    return out


def lib_blocks(repo: str) -> list[str]:
    from dse.api import load_catalog

    cat = load_catalog()
    head = git(repo, "rev-parse", "HEAD").strip()
    blocks: dict[tuple[str, str, str], dict[tuple[int, int], float]] = {}
    dropped = []
    for r in csv.DictReader(io.StringIO(git(repo, "show", "HEAD:Plots/All_results.csv"))):
        hw, fw, model = r["Hardware"], r["Framework"], r["Model"]
        if r["Num of Hardware"] != "1" or hw not in LIB_HW or fw not in LIB_FW or \
                model not in LIB_MODELS:
            continue
        n, b, t = int(r["Input Output Length"]), int(r["Batch Size"]), float(r["Latency"])
        rows = blocks.setdefault((hw, fw, model), {})
        if (n, b) in rows:
            continue
        spec = cat.model(LIB_MODELS[model])
        gpu = cat.gpu(LIB_HW[hw])
        from dse.devices import shape
        from dse.devices.shape import precision

        floor = n * shape.streamed_weight_bytes(spec, precision("fp16")) / gpu.mem_bw_bytes_per_s
        if t < floor:
            dropped.append(f"{hw} / {fw} / {model} / {n} / batch {b}: {t:.3g} s < floor "
                           f"{floor:.3g} s")
            continue
        rows[(n, b)] = t
    out = []
    for (hw, fw, model), rows in sorted(blocks.items()):
        keys = sorted(rows, key=lambda k: (k[1], k[0]))
        out += ["[[lib]]", f'hardware = "{hw}"', f'catalog_device = "{LIB_HW[hw]}"',
                f'framework = "{fw}"', f'serving = "{LIB_FW[fw]}"', f'model = "{model}"',
                f'catalog_model = "{LIB_MODELS[model]}"',
                f"max_num_batched_tokens = {max(MAX_LEN[LIB_MODELS[model]], 2048)}",
                f"input_output_tokens = {[k[0] for k in keys]}",
                f"batch = {[k[1] for k in keys]}",
                "latency_s = [" + ", ".join(f"{rows[k]:.6g}" for k in keys) + "]",
                f'source = "argonne-lcf/LLM-Inference-Bench Plots/All_results.csv @ {head}"', ""]
    return ["# dropped (below the datasheet floor):",
            *[f"#   {d}" for d in dropped], "", *out]


def lib_ttft_blocks(repo: str) -> list[str]:
    head = git(repo, "rev-parse", "HEAD").strip()
    path = "Plots/Fig_21/all_results_TTFT.csv"
    seen: set[tuple[str, str, str]] = set()
    out = []
    for r in csv.DictReader(io.StringIO(git(repo, "show", f"HEAD:{path}"))):
        hw, fw, model = r["Hardware"], r["Framework"], r["Model"]
        if r["Num of Hardware"] != "1" or hw not in LIB_HW or fw not in LIB_FW or \
                model not in LIB_MODELS or (hw, fw, model) in seen:
            continue
        seen.add((hw, fw, model))
        out += ["[[lib_ttft]]", f'hardware = "{hw}"', f'catalog_device = "{LIB_HW[hw]}"',
                f'framework = "{fw}"', f'serving = "{LIB_FW[fw]}"', f'model = "{model}"',
                f'catalog_model = "{LIB_MODELS[model]}"',
                f"max_num_batched_tokens = {max(MAX_LEN[LIB_MODELS[model]], 2048)}",
                f"input_tokens = {int(r['Input Length'])}",
                f"output_tokens = {int(r['Output Length'])}", f"batch = {int(r['Batch Size'])}",
                f"ttft_s = {float(r['Latency']):.6g}",
                f'source = "argonne-lcf/LLM-Inference-Bench {path} @ {head}"', ""]
    return out


def lib_power_blocks(repo: str) -> list[str]:
    head = git(repo, "rev-parse", "HEAD").strip()
    path = "Plots/Fig_16_a_b/power_results.csv"
    blocks: dict[tuple[str, str, str], dict[tuple[int, int], tuple[float, float]]] = {}
    for r in csv.DictReader(io.StringIO(git(repo, "show", f"HEAD:{path}"))):
        hw, fw, model = r["Hardware"], r["Framework"], r["Model"]
        if r["Num of Hardware"] != "1" or hw not in LIB_HW or fw not in LIB_FW or \
                model not in LIB_MODELS:
            continue
        rows = blocks.setdefault((hw, fw, model), {})
        key = (int(r["Input Output Length"]), int(r["Batch Size"]))
        if key not in rows:
            rows[key] = (float(r["Latency"]), float(r["avg_power"]) / 1000.0)  # mW -> W
    out = []
    for (hw, fw, model), rows in sorted(blocks.items()):
        keys = sorted(rows, key=lambda k: (k[1], k[0]))
        out += ["[[lib_power]]", f'hardware = "{hw}"', f'catalog_device = "{LIB_HW[hw]}"',
                f'framework = "{fw}"', f'serving = "{LIB_FW[fw]}"', f'model = "{model}"',
                f'catalog_model = "{LIB_MODELS[model]}"',
                f"max_num_batched_tokens = {max(MAX_LEN[LIB_MODELS[model]], 2048)}",
                f"input_output_tokens = {[k[0] for k in keys]}",
                f"batch = {[k[1] for k in keys]}",
                "latency_s = [" + ", ".join(f"{rows[k][0]:.6g}" for k in keys) + "]",
                "avg_power_w = [" + ", ".join(f"{rows[k][1]:.6g}" for k in keys) + "]",
                f'source = "argonne-lcf/LLM-Inference-Bench {path} @ {head}"', ""]
    return out


HEADER = '''schema_version = 1
# Batched measurements the GPU model's batch terms are fitted to (dse/devices/gpu_batch.py,
# scripts/calibrate_serving.py). Written by scripts/extract_batched_data.py from the sources'
# repositories at the commits in each block's source; the rules that choose the rows are that
# script's docstring, repeated here.
#
# [[vidur]]: Vidur's profiled linear layers (sarathi-serve's PyTorch GEMMs, FP16), one GPU,
# no tensor parallelism: per num_tokens (the GEMMs' rows) the sum of the medians of the four
# linear operators of one layer (QKV, output projection, MLP up (+gate), down), ms. The powers
# of two 1..4096, the first row of each. linear_params_per_layer from the row's shape columns.
# The attention.csv files are Git LFS objects absent from the snapshot: no attention timing.
#
# [[lib]]: LLM-Inference-Bench (arXiv 2411.00136): vLLM's benchmark_latency.py (vLLM about
# 0.5-0.6, V0 engine, CUDA graphs, FP16, no chunked prefill) and TensorRT-LLM's run.py, a
# static batch of `batch` requests, each `input_output_tokens` prompt tokens and as many
# output tokens (ignore_eos), latency_s the mean wall time of the whole batch. Hardware as
# the repository's table: A100 (ALCF Polaris: the catalog's A100 40GB SXM, an assumption), H100
# (JLSE: 80GB, the SXM part assumed), GH200 (96 GB HBM3). Llama-3-8B takes Llama-3.1-8B's
# shape, Qwen2-7B the Instruct model's (same shapes). max_num_batched_tokens: vLLM V0's
# default without chunked prefill, max(max_model_len, 2048).
#
# [[lib_ttft]]: LLM-Inference-Bench's time to first token (its Fig. 21): the same stacks, a
# static batch of `batch` prompts of `input_tokens` with `output_tokens` = 1, ttft_s the
# batch's latency. Not fitted: the check of the prefill at a batch (serving_cv.json).
#
# [[lib_power]]: LLM-Inference-Bench's power (its Fig. 16): the same stacks and static
# batches, avg_power_w the mean of NVML's board power samples over the run (its
# power_utils.py; the file's milliwatts in watts), latency_s that run's wall time. Fits
# the batch terms' kv_power_fraction (dse/validation/batch_power.py).
'''


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    text = HEADER + "\n" + "\n".join(vidur_blocks(sys.argv[1]) + lib_blocks(sys.argv[2])
                                     + lib_ttft_blocks(sys.argv[2])
                                     + lib_power_blocks(sys.argv[2]))
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
