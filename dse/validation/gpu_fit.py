"""Fitting GPU serving profiles to published measurements, and leave-one-out cross-validation.

Each serving profile (boards/serving/*.toml) has a few physically meaningful terms: the share
of the memory bandwidth its weight-streaming and attention kernels reach, the GPU-side gap per
layer, the CPU-side launch cost per layer (eager stacks), the per-step host time and the fixed
cost of a prefill call, and the share of the tensor peak its prefill GEMMs reach. `FITS` names,
per profile, which of them the published data of that stack decides (the rest are derived from
another profile and say so in the file). A term is fitted per GPU generation only where the
data of that stack covers more than one generation (`by_generation`).

The fit minimises a robust (soft-L1) loss of log(predicted / measured) over the profile's
points (`ROBUST_SCALE`). Cross-validation is leave-one-out: each point is predicted by a fit
made without it, the other profiles' derived values held at the full calibration's. A profile
with `FitSpec.hosts` is fitted jointly with device parameters that follow from it (eager vLLM
and the Orin hosts' slowdown, which the Orin Nano's own point pins for every candidate launch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from dse.devices import gpu as gpu_mod
from dse.devices.shape import precision
from dse.specs import Catalog, GpuServingSpec
from dse.specs.schema import Key, schema_of
from dse.validation import calibrate
from dse.validation.gpu_cv import CvPoint  # re-exported: the fit writes them
from dse.validation.measurements import BUILDS, GpuMeasurement


def predict_s(cat: Catalog, m: GpuMeasurement, serving: GpuServingSpec) -> float:
    """The tool's value of what the measurement timed (see dse.validation.measurements), on
    the measurement's own host CPU where it names one (the board's default otherwise) and on
    its own build of the stack (measurements.BUILDS)."""
    if m.build is not None:  # the build's own keys, from its catalog profile
        build = next(b for b in BUILDS if b.profile == m.build)
        own = cat.serving(m.build)
        serving = replace(serving, **{_key(k).attr: getattr(own, _key(k).attr)
                                      for k in build.keys})
    gpu = cat.gpu(m.device)
    if not m.nvlink:  # e.g. A100 PCIe cards without their optional NVLink bridge
        gpu = replace(gpu, nvlink_bidir_bytes_per_s=0.0)
    if m.host_cpu_slowdown is not None:
        gpu = replace(gpu, host_cpu_slowdown=m.host_cpu_slowdown)
    c = gpu_mod.gpu_cost(cat.model(m.model), gpu, precision(m.precision), serving, tp=m.tp,
                         tp_link=cat.link(gpu.host_link))
    if m.timed == "prefill":
        return float(gpu_mod.prefill_s(c, m.context_tokens))
    n = m.generated_tokens
    decode = float(gpu_mod.decode_s(c, n, m.context_tokens))
    if m.timed == "end_to_end":
        return (float(gpu_mod.prefill_s(c, m.context_tokens)) + decode) / n
    return decode / n


# ------------------------------------------------------------------------------ fit table


@dataclass(frozen=True)
class Param:
    """One fitted term: its TOML key in the profile file, start value and bounds (file units).
    `by_generation`: fitted separately for every GPU generation the data covers."""

    key: str
    x0: float
    lo: float
    hi: float
    by_generation: bool = False


@dataclass(frozen=True)
class FitSpec:
    """What the published data of one serving profile decides."""

    profile: str
    params: tuple[Param, ...]
    note: str  # what the fit rests on, for the profile's [calibration] table
    # measurements of these devices are excluded (their own device parameter is fitted on them)
    exclude_devices: tuple[str, ...] = field(default=())
    # the catalog the profile's predictions use, given a candidate profile: device parameters
    # fitted jointly with the profile (None: the catalog as it is)
    hosts: Callable[[Catalog, GpuServingSpec], Catalog] | None = None

    def catalog(self, cat: Catalog, serving: GpuServingSpec) -> Catalog:
        return cat if self.hosts is None else self.hosts(cat, serving)


E_MEM = Param("mem_bw_efficiency", 0.8, 0.05, 1.0)
E_ATTN = Param("attention_bw_efficiency", 0.5, 0.005, 1.0)
GAP = Param("layer_gap_us", 20.0, 0.0, 2000.0)
STEP = Param("step_overhead_us", 500.0, 0.0, 50000.0)
LAUNCH = Param("launch_per_layer_us", 300.0, 0.0, 5000.0)
QUANT = Param("quantized_layer_overhead_us", 20.0, 0.0, 2000.0)
COMPUTE = Param("compute_efficiency", 0.5, 0.05, 1.0)
FP8 = Param("fp8_compute_efficiency", 0.4, 0.05, 1.0)
PREFILL = Param("prefill_overhead_us", 1000.0, 0.0, 100000.0)
ALLREDUCE = Param("allreduce_latency_us", 20.0, 0.0, 5000.0)
PCIE_AR = Param("pcie_allreduce_latency_us", 20.0, 0.0, 5000.0)
PCIE_AR_CALL = Param("pcie_allreduce_fixed_us", 50.0, 0.0, 5000.0)
EAGER = Param("eager_launch_per_layer_us", 300.0, 0.0, 5000.0)


def _by_gen(p: Param) -> Param:
    return replace(p, by_generation=True)


FITS: dict[str, FitSpec] = {f.profile: f for f in (
    FitSpec("vllm-cudagraph", (_by_gen(E_MEM), E_ATTN, _by_gen(GAP), STEP, QUANT, ALLREDUCE),
            "vLLM >= 0.6 with CUDA graphs: the Qwen speed benchmark on A100 (vLLM 0.6.2/0.6.3, "
            "Qwen2.5 0.5B-72B, BF16/GPTQ/AWQ, inputs 1-129024, TP 1-4)"),
    FitSpec("vllm-v1", (GAP, STEP),
            "vLLM >= 0.10 (the V1 engine) at concurrency 1: SpareCores' vLLM 0.22.1 runs "
            "(GuideLLM synchronous ITL; Llama-3.1-8B, Gemma-2-2B, Qwen2.5-0.5B at 256-4096 "
            "prompt tokens on H100 SXM/NVL, A100 SXM/PCIe/40GB, L40S, L4; each on its "
            "instance's own host CPU, published.toml [[host]]), vllm bench serve "
            "and a closed-loop client on H100 SXM (vLLM 0.11.0 Qwen3-8B, 0.21.0 Llama-3.1-8B, "
            "0.22.1 Qwen2.5-72B at TP 4) and an L4 (0.23.0 Qwen2.5-0.5B); users' runs at "
            "concurrency 1: RTX 4090 (0.25.1 Qwen2.5-7B; 0.19.1 Qwen3-4B FP8) and L4 (0.30.0 "
            "Qwen3-0.6B and Qwen3-4B); vLLM's FP8 KV-cache blog post (0.19.1, Llama-3.1-8B BF16 "
            "on an H100 at 256 and 125,000 input tokens, its published ITL line)"),
    FitSpec("vllm-0.4", (E_ATTN, STEP, EAGER),
            "vLLM 0.4.2 with CUDA graphs: the Qwen2 speed benchmark on A100"),
    FitSpec("vllm-eager", (LAUNCH, PCIE_AR, PCIE_AR_CALL),
            "vLLM without CUDA graphs (before 0.2.5, or --enforce-eager): llm-perf-bench "
            "(Oct 2023, Llama-2-70B FP16, TP 2/4/8 on A100 PCIe; Nov 2023, Llama-2-7B AWQ on an "
            "RTX 3090), Hamel Husain's 2023 benchmarks (RTX A6000, RTX 6000 Ada), "
            "ninehills/llm-inference-benchmark (vLLM 0.2.4, RTX 4090), the Qwen2/Qwen2.5 speed "
            "benchmarks' enforce_eager settings (A100, vLLM 0.4.2/0.6.3), vLLM 0.6.3 on Jetson "
            "AGX Orin and later --enforce-eager runs (RTX 4090, A10); jointly with the Orin "
            "hosts' CPU slowdown, which the Orin Nano's own point pins",
            exclude_devices=("jetson-orin-nano-8gb",), hosts=calibrate.with_jetson_hosts),
    FitSpec("hf-eager", (LAUNCH, E_ATTN, QUANT),
            "HF transformers 4.4x generate(): the Qwen2.5 speed benchmark on A100 "
            "(transformers 4.46, Qwen2.5 0.5B-72B, BF16/GPTQ/AWQ, inputs 1-30720) and "
            "ecocompute-ai's 4.47.0 runs on an RTX 5090 "
            "(TinyLlama-1.1B, Qwen2 1.5B/7B, Qwen2.5-3B; FP16, a short prompt)"),
    FitSpec("hf-4.38", (LAUNCH, E_ATTN, QUANT),
            "HF transformers 4.38 generate(): the Qwen2 speed benchmark on A100, premAI's "
            "4.39.3 Llama-2-7B on A100 and ecocompute-ai's 4.36.0 Qwen2.5-14B on an A800"),
    FitSpec("hf-4.51", (LAUNCH, QUANT),
            "HF transformers 4.51 generate(): the Qwen3 speed benchmark on H20 (input 1)"),
    FitSpec("sglang", (E_MEM, GAP, STEP, QUANT),
            "SGLang 0.4.6: the Qwen3 speed benchmark on H20 (Qwen3 0.6B-32B, input 1); "
            "SGLang of March 2025: the EAGLE-3 paper's batch-1 baseline on an H100 "
            "(Llama-3.1-8B-Instruct, MT-bench)"),
    FitSpec("tensorrt-llm", (COMPUTE, FP8, _by_gen(PREFILL), ALLREDUCE),
            "TensorRT-LLM 0.5 time to first token (GPT-J 6B, A100 FP16, H100/L40S FP8)"),
    FitSpec("llama.cpp", (_by_gen(E_MEM), STEP, COMPUTE, PCIE_AR, PCIE_AR_CALL),
            "llama.cpp CUDA llama-bench tg128/pp512 and llm-perf-bench (RTX 3090/4090, "
            "A100 PCIe; f16, q8_0, q4_0; the pre-2024 row split of Llama-2-70B over 2/4/8 A100 "
            "PCIe and 2 RTX 4090); llama-bench of May 2024 builds, Llama-3-8B F16 tg512 and "
            "pp512-pp8192 on RTX 3090/4080/4090, RTX A6000, RTX 6000 Ada, A100 PCIe/SXM, "
            "H100 PCIe and L40S (XiongjieDai/GPU-Benchmarks-on-LLM-Inference)"),
    FitSpec("mlc-llm", (_by_gen(E_MEM), GAP, STEP, PCIE_AR, PCIE_AR_CALL),
            "MLC-LLM from October 2023: llm-perf-bench 8e94910 (RTX 3090/3090 Ti/4090; "
            "Llama-2-70B FP16 and q4f16_1 at TP 2/4/8 over A100 PCIe and TP 2 over RTX 4090) and "
            "the February 2024 SLM build on an RTX 4090 (mlc-llm PR #1799)"),
    FitSpec("mlc-llm-2023-08", (_by_gen(E_MEM), GAP, STEP),
            "MLC-LLM builds of July-August 2023: llm-perf-bench's first README and PR #1 (RTX "
            "3090 Ti/4090), the MLC AMD blog post's NVIDIA rows, Hamel Husain's RTX A6000 run "
            "and a user's RTX 3090/4090 run (mlc-llm issue #15)"),
    FitSpec("mlc-llm-jetson", (E_MEM, STEP),
            "MLC-LLM jetson-containers builds: Jetson AI Lab benchmarks on Orin Nano (original "
            "and Super mode) and AGX Orin, INT4, 1B-9B models; jetson-containers' MLC docs "
            "(AGX Orin, Llama-2 7B/13B); a NixOS cross-framework benchmark (AGX Orin)"),
    FitSpec("torch-compile", (E_MEM, GAP, QUANT, ALLREDUCE),
            "gpt-fast (torch.compile, CUDA graphs): README benchmarks on A100 80GB"),
    FitSpec("exllamav2", (_by_gen(E_MEM), STEP),
            "ExLlamaV2 4-bit: llm-perf-bench on RTX 3090 Ti/4090, and its layer split of "
            "Llama-2-70B over 2/4/8 A100 PCIe and 2 RTX 4090"),
    FitSpec("tinychat", (_by_gen(E_MEM), GAP, LAUNCH),
            "TinyChat W4A16 (llm-awq tinychat/README.md): per-token generation latency of "
            "LLaMA-2 7B/13B, LLaMA-3-8B and Vicuna 7B/13B on RTX A6000, RTX 4090 and Jetson Orin"),
    FitSpec("autoawq", (E_MEM, LAUNCH, COMPUTE, PREFILL),
            "AutoAWQ 0.1.6 fused modules with its GEMM-format kernels (its README's benchmark): "
            "Llama 2 13B and Mistral 7B on an RTX 4090, decode and prefill at 64 and 2048 "
            "tokens"),
    FitSpec("autoawq-gemv", (E_MEM, LAUNCH, COMPUTE, PREFILL),
            "AutoAWQ 0.1.6 fused modules with its GEMV-format kernels (its README's benchmark): "
            "Vicuna 7B and Mistral 7B on an RTX 4090, decode and prefill at 64 and 2048 tokens"),
    # Ollama: llama.cpp's kernels (ON_TOP_OF) under its Go runner, which samples each token on
    # the CPU over the whole vocabulary (llama-bench, most of llama.cpp's points, samples none)
    FitSpec("ollama", (STEP,),
            "Ollama's eval rate (ollama run --verbose, the library's Q4_K_M and Q4_0 GGUFs, its "
            "default sampler): geerlingguy/ai-benchmarks' obench.sh rows (Llama 3.2 3B and 3.1 "
            "8B on RTX 4070, 4070 Ti SUPER, 4080, 4090 and 5090) and ollama/ollama issue #9415 "
            "(0.5.12, Gemma 2 9B on an RTX 5090); every other value is llama.cpp's fit"),
    FitSpec("lmdeploy-turbomind", (E_MEM, STEP, COMPUTE, PREFILL, ALLREDUCE),
            "LMDeploy 0.1.0a1 TurboMind FP16 (docs/en/benchmark/a100_fp16.md): Llama-2 7B/13B "
            "(TP 1) and 70B (TP 4) on A100-80G, end-to-end throughput at prompts 1-2048 and "
            "outputs 128/2048, and first-token latencies"),
    FitSpec("fastertransformer", (E_MEM, GAP, COMPUTE),
            "FasterTransformer FP16 GPT (docs/gpt_guide.md): whole-call latency of GPT-350M, "
            "1.3B and 6.7B (TP 1) on A100-SXM4-80GB, input 128/output 8 and input 512/output 32"),
)}


# Values a profile takes from another profile's fit (its file says "derived: <profile>'s
# fitted value"): (profile, key) -> source profile. Fits run in FIT_ORDER so sources come first.
DERIVED: dict[tuple[str, str], str] = {
    **{(p, k): "vllm-cudagraph" for p in ("vllm-0.4", "vllm-eager", "hf-eager", "hf-4.38",
                                            "hf-4.51", "llama.cpp")
       for k in ("mem_bw_efficiency", "layer_gap_us")},
    # V1 keeps 0.6's weight-streaming GEMVs, paged-attention share, quantised GEMMs and custom
    # all-reduce as far as its short-context, unquantised, mostly TP 1 points can tell
    **{("vllm-v1", k): "vllm-cudagraph"
       for k in ("mem_bw_efficiency", "attention_bw_efficiency", "quantized_layer_overhead_us",
                 "allreduce_latency_us")},
    ("vllm-0.4", "quantized_layer_overhead_us"): "vllm-cudagraph",
    ("vllm-0.4", "allreduce_latency_us"): "vllm-cudagraph",
    ("sglang", "allreduce_latency_us"): "vllm-cudagraph",
    ("vllm-eager", "attention_bw_efficiency"): "vllm-cudagraph",
    ("vllm-eager", "step_overhead_us"): "vllm-cudagraph",
    ("vllm-eager", "quantized_layer_overhead_us"): "vllm-cudagraph",
    ("vllm-eager", "allreduce_latency_us"): "vllm-cudagraph",
    **{(p, "attention_bw_efficiency"): "vllm-cudagraph"
       for p in ("sglang", "tensorrt-llm", "llama.cpp", "mlc-llm", "mlc-llm-2023-08",
                 "mlc-llm-jetson", "torch-compile", "exllamav2")},
    ("tensorrt-llm", "quantized_layer_overhead_us"): "vllm-cudagraph",
    ("exllamav2", "layer_gap_us"): "vllm-cudagraph",
    ("mlc-llm-2023-08", "pcie_allreduce_latency_us"): "mlc-llm",
    ("mlc-llm-2023-08", "pcie_allreduce_fixed_us"): "mlc-llm",
    ("mlc-llm-jetson", "layer_gap_us"): "mlc-llm",
    ("mlc-llm-jetson", "pcie_allreduce_latency_us"): "mlc-llm",
    ("mlc-llm-jetson", "pcie_allreduce_fixed_us"): "mlc-llm",
    ("hf-4.51", "attention_bw_efficiency"): "hf-eager",
    **{(p, "attention_bw_efficiency"): "vllm-cudagraph"
       for p in ("tinychat", "autoawq", "autoawq-gemv", "lmdeploy-turbomind",
                 "fastertransformer")},
    **{(p, "layer_gap_us"): "vllm-cudagraph"
       for p in ("autoawq", "autoawq-gemv", "lmdeploy-turbomind")},
    ("lmdeploy-turbomind", "quantized_layer_overhead_us"): "vllm-cudagraph",
    ("fastertransformer", "quantized_layer_overhead_us"): "vllm-cudagraph",
    ("fastertransformer", "allreduce_latency_us"): "tensorrt-llm",
    ("tensorrt-llm", "mem_bw_efficiency"): "torch-compile",
    ("tensorrt-llm", "layer_gap_us"): "torch-compile",
}
FIT_ORDER = ("vllm-cudagraph", "vllm-v1", "vllm-0.4", "vllm-eager", "hf-eager", "hf-4.38",
             "hf-4.51", "torch-compile", "sglang", "tensorrt-llm", "llama.cpp", "mlc-llm",
             "mlc-llm-2023-08", "mlc-llm-jetson", "exllamav2", "tinychat", "autoawq",
             "autoawq-gemv", "lmdeploy-turbomind", "fastertransformer", "ollama")

# A profile built on another stack's fit: it takes every value that fit wrote (fitted or derived,
# per GPU generation too) and fits only its own FitSpec's terms on top (its file says
# "derived: <stack>'s fitted value"). Ollama runs llama.cpp's ggml CUDA kernels (its
# repository vendors llama.cpp; CUDA graphs compiled in, flash attention off by default).
ON_TOP_OF: dict[str, str] = {"ollama": "llama.cpp"}


# ------------------------------------------------------------------------------ fitting

# The fit is robust (soft-L1 on the log error, quadratic within ROBUST_SCALE, linear beyond): a
# few points the profile's physics does not describe (a model family with kernels of its own, a
# benchmark's odd row) should not drag the terms that describe the rest.
ROBUST_SCALE = 0.1


_KEYS: dict[str, Key] = {k.toml: k for k in schema_of(GpuServingSpec)}


def _key(toml: str) -> Key:
    """The schema key of a serving profile's TOML key (its attribute and unit scale)."""
    return _KEYS[toml]


def apply(serving: GpuServingSpec, values: dict[str, float],
          by_generation: dict[str, dict[str, float]] | None = None) -> GpuServingSpec:
    """The profile with `values` (TOML keys, file units) and per-generation overrides set."""
    si: dict[str, Any] = {_key(k).attr: v * _key(k).scale for k, v in values.items()}
    out = replace(serving, **si)
    if by_generation:
        variants = {g: {**out.variants.get(g, {}),
                        **{_key(k).attr: v * _key(k).scale for k, v in over.items()}}
                    for g, over in by_generation.items()}
        out = replace(out, variants={**out.variants, **variants})
    return out


@dataclass(frozen=True)
class Fit:
    profile: str
    values: dict[str, float]  # TOML key -> fitted value (file units), the base generation
    by_generation: dict[str, dict[str, float]]  # other generations' fitted overrides
    base_generation: str
    points: int
    rms_log_error: float
    max_rel_error: float


def _layout(cat: Catalog, spec: FitSpec, pts: Sequence[GpuMeasurement]
            ) -> tuple[str, list[tuple[Param, str | None]]]:
    """(base generation, the parameter vector's entries: (param, generation or None))."""
    gens = [cat.gpu(m.device).generation for m in pts]
    base = max(sorted(set(gens)), key=gens.count)
    layout: list[tuple[Param, str | None]] = [(p, None) for p in spec.params]
    for p in spec.params:
        if p.by_generation:
            layout += [(p, g) for g in sorted(set(gens) - {base})]
    return base, layout


def _unpack(x: np.ndarray, layout: list[tuple[Param, str | None]]
            ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    values: dict[str, float] = {}
    over: dict[str, dict[str, float]] = {}
    for v, (p, g) in zip(x, layout, strict=True):
        if g is None:
            values[p.key] = float(v)
        else:
            over.setdefault(g, {})[p.key] = float(v)
    return values, over


def _log_errors(cat: Catalog, pts: Sequence[GpuMeasurement], serving: GpuServingSpec
                ) -> np.ndarray:
    return np.array([np.log(predict_s(cat, m, serving) / m.measured_s) for m in pts])


# the profiles whose values a stack's unpinned terms take: eager PyTorch's for a stack without
# CUDA graphs (its per-layer launch is a CPU cost a graph stack does not have), vLLM's else
REFERENCE = {False: "hf-eager", True: "vllm-cudagraph"}
PIN_TOLERANCE = 1e-9  # a term moving no point's log error by more than this is not pinned


def unpinned_value(cat: Catalog, spec: FitSpec, p: Param) -> float:
    """The value (file units) a term takes where the points cannot decide it: the reference
    profile's of its kind (REFERENCE), as the catalog's derived values are (a stack with no
    prefill point runs its prompts at vllm-cudagraph's compute efficiency), or the term's
    start value for a reference profile itself or a term its reference does not set. Never
    the profile's own fitted value, which may rest on the very points a cross-validation
    fold leaves out."""
    k = _key(p.key)
    ref_name = REFERENCE[bool(cat.serving(spec.profile).cuda_graphs)]
    ref = None if spec.profile == ref_name else getattr(cat.serving(ref_name), k.attr)
    return p.x0 if ref is None else float(ref) / k.scale


def pinned(resid: Callable[[np.ndarray], np.ndarray], x: np.ndarray, lo: np.ndarray,
           hi: np.ndarray) -> np.ndarray:
    """Which entries of the parameter vector move some point's log error at x (a 10% step, or
    a step of 0.1% of the range from zero)."""
    r0 = resid(x)
    out = np.zeros(len(x), dtype=bool)
    for i in range(len(x)):
        t = x.copy()
        step = 0.1 * abs(t[i]) + 1e-3 * (hi[i] - lo[i])
        t[i] = t[i] + step if t[i] + step <= hi[i] else t[i] - step
        out[i] = bool(np.max(np.abs(resid(t) - r0)) > PIN_TOLERANCE)
    return out


def hold_unpinned(resid: Callable[[np.ndarray], np.ndarray], x: np.ndarray, held: np.ndarray,
                  lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """x with every term the points do not respond to at the fit set to its held value
    (`unpinned_value`), where that leaves every point's prediction as it was. Least squares
    with x_scale="jac" flings a term no point responds to towards a bound (an infinite scale
    on a zero Jacobian column): llama.cpp's compute efficiency went to 0.05 in a fold without
    its prefill points, which then predicted prefill 6-9x too slow."""
    x = x.copy()
    r0 = resid(x)
    for i in np.flatnonzero(~pinned(resid, x, lo, hi)):
        t = x.copy()
        t[i] = np.clip(held[i], lo[i], hi[i])
        if np.max(np.abs(resid(t) - r0)) <= PIN_TOLERANCE:
            x = t
    return x


def fit_profile(cat: Catalog, spec: FitSpec, pts: Sequence[GpuMeasurement], *,
                base: GpuServingSpec | None = None) -> Fit:
    """Least squares on log(predicted / measured) over the profile's points. `base`: the
    profile before the fit (default the catalog's), e.g. with derived values applied. A term
    the points do not decide is then held at `unpinned_value` (`hold_unpinned`)."""
    base_spec = cat.serving(spec.profile) if base is None else base
    base_gen, layout = _layout(cat, spec, pts)
    start = np.array([p.x0 for p, _ in layout])  # every fit, a fold's too, from here
    lo = np.array([p.lo for p, _ in layout])
    hi = np.array([p.hi for p, _ in layout])

    def serving_of(x: np.ndarray) -> GpuServingSpec:
        values, over = _unpack(x, layout)
        return apply(base_spec, values, over)

    def resid(x: np.ndarray) -> np.ndarray:
        serving = serving_of(x)
        return _log_errors(spec.catalog(cat, serving), pts, serving)

    r = least_squares(resid, x0=np.clip(start, lo, hi), bounds=(lo, hi), x_scale="jac",
                      loss="soft_l1", f_scale=ROBUST_SCALE)
    held = np.array([unpinned_value(cat, spec, p) for p, _ in layout])
    x = hold_unpinned(resid, r.x, held, lo, hi)
    values, over = _unpack(x, layout)
    err = resid(x)
    return Fit(spec.profile, values, over, base_gen, len(pts),
               float(np.sqrt(np.mean(err ** 2))), float(np.max(np.abs(np.expm1(err)))))


def fitted_serving(base: GpuServingSpec, fit: Fit) -> GpuServingSpec:
    return apply(base, fit.values, fit.by_generation)


@dataclass(frozen=True)
class ProfileFit:
    """One profile after the calibration: its derived values, its fit and the result."""

    spec: FitSpec
    base: GpuServingSpec  # the catalog's profile with derived values applied
    derived: dict[str, float]  # TOML key -> value taken from another profile's fit
    fit: Fit
    serving: GpuServingSpec  # the fitted profile
    points: list[GpuMeasurement]
    # generation -> TOML key -> value taken from another profile's fit (ON_TOP_OF)
    derived_by_generation: dict[str, dict[str, float]] = field(default_factory=dict)


def _file_value(serving: GpuServingSpec, key: str) -> float:
    return float(getattr(serving, _key(key).attr)) / _key(key).scale


def fit_selection(pts: Sequence[GpuMeasurement]) -> dict[str, list[GpuMeasurement]]:
    """The points each profile's fit reads (FIT_ORDER; profiles without points left out):
    `fit_all` fits exactly these, and dse.validation.labels labels exactly these fitted. A
    point marked not fitted is cross-validated (ProfileFit.points) but not here."""
    sel = {name: [m for m in points_for(FITS[name], pts) if m.fitted] for name in FIT_ORDER}
    return {name: mine for name, mine in sel.items() if mine}


def fit_all(cat: Catalog, pts: Sequence[GpuMeasurement]) -> dict[str, ProfileFit]:
    """Every profile of FITS with data, in FIT_ORDER, derived values from earlier fits."""
    done: dict[str, ProfileFit] = {}
    selection = fit_selection(pts)
    for name in FIT_ORDER:
        spec = FITS[name]
        mine = selection.get(name, [])
        derived = {}
        for (p, k), src in DERIVED.items():
            if p == name and src in done:
                derived[k] = _file_value(done[src].serving, k)
        derived_gen: dict[str, dict[str, float]] = {}
        if name in ON_TOP_OF and ON_TOP_OF[name] in done:
            derived, derived_gen = _stack_values(done[ON_TOP_OF[name]], spec)
        base = apply(cat.serving(name), derived, derived_gen)
        if not mine:
            continue
        f = fit_profile(cat, spec, mine, base=base)
        done[name] = ProfileFit(spec, base, derived, f, fitted_serving(base, f),
                                points_for(spec, pts), derived_gen)
    return done


def _stack_values(stack: ProfileFit, spec: FitSpec
                  ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The values a profile built on `stack` takes from its fit (ON_TOP_OF): every key the
    stack's fit wrote, less the profile's own fitted ones; (base values, per generation)."""
    own = {p.key for p in spec.params}
    keys = sorted(({p.key for p in stack.spec.params} | set(stack.derived)) - own)
    values = {k: _file_value(stack.serving, k) for k in keys}
    per_gen: dict[str, dict[str, float]] = {}
    for g, over in sorted(stack.serving.variants.items()):
        for k in keys:
            if _key(k).attr in over:
                per_gen.setdefault(g, {})[k] = float(over[_key(k).attr]) / _key(k).scale
    return values, per_gen


def points_for(spec: FitSpec, pts: Sequence[GpuMeasurement]) -> list[GpuMeasurement]:
    return [m for m in pts if m.profile == spec.profile and m.device not in spec.exclude_devices]


# ---------------------------------------------------------------------- cross-validation


def leave_one_out(cat: Catalog, pf: ProfileFit,
                  progress: Callable[[int, int], None] | None = None) -> list[CvPoint]:
    """Each point predicted by the profile fitted without it, from the same default start as
    the full fit (never from the full fit's values, which have seen the point; derived values
    held at the full calibration's). A point whose removal leaves fewer points than
    parameters, or drops its GPU generation's only data, gets loo_s None. A point no fit
    reads (not fitted) is predicted by the full fit, which never saw it."""
    spec, pts, base = pf.spec, pf.points, pf.base
    _, layout = _layout(cat, spec, [q for q in pts if q.fitted])
    serving_full = pf.serving
    cat_full = spec.catalog(cat, serving_full)
    out: list[CvPoint] = []
    for i, m in enumerate(pts):
        rest = [q for j, q in enumerate(pts) if j != i and q.fitted]
        gen = cat.gpu(m.device).generation
        loo: float | None = None
        same_gen = [q for q in rest if cat.gpu(q.device).generation == gen]
        if not m.fitted:
            loo = predict_s(cat_full, m, serving_full)
        elif len(rest) >= len(layout) and same_gen:
            f = fit_profile(cat, spec, rest, base=base)
            serving = fitted_serving(base, f)
            loo = predict_s(spec.catalog(cat, serving), m, serving)
        out.append(CvPoint(m.id, m.profile, m.family, m.device, gen, m.model, m.precision,
                           m.timed, m.context_tokens, m.measured_s,
                           predict_s(cat_full, m, serving_full), loo, m.document,
                           tp=m.tp))
        if progress:
            progress(i + 1, len(pts))
    return out


def _without_generations(serving: GpuServingSpec, spec: FitSpec, keep: set[str]
                         ) -> GpuServingSpec:
    """The profile without the fitted per-generation values of the generations not in `keep`
    (a fit that never saw a generation falls back to its base generation's values, as a GPU
    of a new generation does)."""
    fitted = {_key(p.key).attr for p in spec.params if p.by_generation}
    variants = {g: ({k: v for k, v in over.items() if k not in fitted} if g not in keep
                    else dict(over)) for g, over in serving.variants.items()}
    return replace(serving, variants={g: v for g, v in variants.items() if v})


def leave_one_source_out(cat: Catalog, pf: ProfileFit,
                         progress: Callable[[int, int], None] | None = None
                         ) -> dict[str, float | None]:
    """Each point (by id) predicted by the profile fitted without every point of its source
    document (measurements.document_of): how the profile carries to a benchmark, host or
    setup it has not seen. The generations only that source measured fall back to the fit's
    base generation; derived values and the Jetson hosts stay at the full calibration's (one
    profile is refitted, not the catalog). None where the profile has no other source or
    too few points without it. The left-out points are predicted on their board's default
    host even where their source names its own (the fit without them still uses the others'):
    a new source is a user's setup, predicted on the board's host unless the system names
    one, so these residuals, which size the tool's intervals, include what the host varies."""
    spec, pts, base = pf.spec, pf.points, pf.base
    docs = sorted({m.document for m in pts})
    out: dict[str, float | None] = {m.id: None for m in pts}
    for i, doc in enumerate(docs):
        rest = [q for q in pts if q.document != doc and q.fitted]
        if rest and len(rest) >= len(_layout(cat, spec, rest)[1]):
            gens = {cat.gpu(q.device).generation for q in rest}
            b = _without_generations(base, spec, gens)
            serving = fitted_serving(b, fit_profile(cat, spec, rest, base=b))
            c = spec.catalog(cat, serving)
            for m in pts:
                if m.document == doc:  # on the board's own host, as a user's design is
                    out[m.id] = predict_s(c, replace(m, host_cpu_slowdown=None), serving)
        if progress:
            progress(i + 1, len(docs))
    return out
