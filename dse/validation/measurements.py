"""Published batch-1 GPU measurements, normalised for fitting and cross-validation.

Sources: dse/data/measured.toml (the project brief's calibration data) and published.toml
(gathered from public documents; each entry names its source and exact setting). The brief's
reference_points.toml is held out: its points are predicted beside the fits
(dse.validation.calibrate.validation_rows), never loaded here, so no fit reads them. Every figure
becomes one `GpuMeasurement`: a catalog device, model, serving profile
and precision, and the measured time in seconds of what the benchmark timed:

- `decode`: seconds per generated token while decoding `generated_tokens` after `context`;
- `end_to_end`: (prefill of `context` + decode of `generated_tokens`) / generated_tokens, the
  Qwen speed benchmark's tokens/s (it times the whole generate call), LMDeploy's
  profile_generation throughput and FasterTransformer's whole-call latency (unit s, divided by
  the generated tokens);
- `prefill`: seconds to prefill `context` prompt tokens (time to first token, or the prompt
  length over llama-bench's pp rate).

An entry is usable when its device, model, framework and precision map onto the catalog; the
others are kept with the reason (`skipped`), so nothing is dropped silently.

A layer (pipeline) split over several GPUs (`gpus` > `tp` in the data) is predicted as one GPU
holding every layer: at batch 1 the GPUs take turns, so the time is one GPU's plus the hops
between GPUs, which are not modelled. A row split (llama.cpp's multi-GPU mode before 2024)
splits every matrix over the GPUs and is entered as tensor parallel (`tp` = `gpus`).

A published row marked `not_fitted` (with its reason) is predicted and cross-validated like
every other point, and its leave-one-source-out residual sizes the intervals, but no fit reads
it: a run on a host the source does not name whose host-side time differs from the calibration
hosts' (HF's Python launches on another CPU and PyTorch), which one launch term cannot hold
beside the calibration points without moving them.

A published row that names its host (`host`, a `[[host]]` table of published.toml with that
host's CPU and a measured single-thread score) carries that host's `host_cpu_slowdown`:
published.toml's `host_cpu_reference_score` (the score the boards' default 1 stands for) over
the host's score. Rows without one are predicted with their board's default.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

Timed = Literal["decode", "end_to_end", "prefill"]

# Serving-stack families: (framework as the source names it, a regex) -> serving profile.
# The profile is the catalog's `gpu-serving` file that models that stack; its family (for the
# cross-validation table) is the profile's name up to a version suffix.
FRAMEWORK_PROFILES: tuple[tuple[str, str], ...] = (
    # 0.10-0.39: the V1 engine (two digits, so 0.2.x and 0.3.x of 2023 do not match)
    (r"^vllm-0\.[123]\d", "vllm-v1"),
    (r"^vllm-0\.6|^vllm-0\.[7-9]", "vllm-cudagraph"),  # 0.6-0.9
    (r"^vllm-0\.[45]", "vllm-0.4"),
    (r"^vllm-acbed3e", "vllm-eager"),  # Oct 2023: before CUDA graphs (vLLM 0.2.5, Dec 2023)
    (r"^vllm \(Nov 2023", "vllm-eager"),  # likewise (the entry says so)
    (r"^vllm-source-build", "vllm-eager"),
    (r"^vllm-eager", "vllm-eager"),
    (r"^hf-transformers-4\.3", "hf-4.38"),
    (r"^hf-transformers-4\.4", "hf-eager"),
    (r"^hf-transformers-4\.5", "hf-4.51"),
    (r"^sglang", "sglang"),
    (r"^tensorrt-llm", "tensorrt-llm"),
    (r"^llama\.cpp", "llama.cpp"),
    (r"^mlc-llm \(jetson-containers", "mlc-llm-jetson"),  # the 2024 JetPack 6 build
    # builds of July-August 2023 (before the October 2023 llm-perf-bench build)
    (r"^mlc-llm-(c40be6a|502f680|nightly-2023-0[78]|unstated-2023-07)", "mlc-llm-2023-08"),
    (r"^mlc-llm", "mlc-llm"),
    (r"^gpt-fast|torch\.compile", "torch-compile"),
    (r"^exllamav2", "exllamav2"),
    (r"^tinychat", "tinychat"),  # MIT Han lab llm-awq's TinyChat (its own W4A16 kernels)
    # AutoAWQ's fused modules: a model quantised in its GEMV format runs the GEMV kernels, whose
    # prompt path differs from the GEMM format's (boards/serving/autoawq-gemv.toml)
    (r"^autoawq-[\d.]+ GEMV", "autoawq-gemv"),
    (r"^autoawq", "autoawq"),  # the GEMM format's kernels
    (r"^lmdeploy", "lmdeploy-turbomind"),  # LMDeploy's TurboMind C++ engine
    (r"^fastertransformer", "fastertransformer"),
    # Ollama runs llama.cpp's ggml CUDA backend under its own Go runner, which samples every
    # token on the CPU over the whole vocabulary (boards/serving/ollama.toml)
    (r"^ollama", "ollama"),
)

# Builds of a fitted stack whose prompt path differs: each is a catalog profile that shares the
# stack's fit whole and differs in `keys` (their values are in its file, boards/serving/), and
# the frameworks (as the sources name them, a regex) that ran it; the stack's fit predicts each
# point on its own build. llama.cpp until PR #8075 (merged 2024-06-24) dequantised a quantised
# prompt of more than MMQ_MAX_BATCH_SIZE (32) tokens to FP16 and ran cuBLAS on the copy
# (ggml_cuda_mul_mat with tensor cores: `use_mul_mat_q` only while src1->ne[1] <= 32); since
# then its int8 MMQ kernels run every prompt.
@dataclass(frozen=True)
class Build:
    profile: str  # the build's catalog profile
    of: str  # the fitted profile whose values it takes
    keys: tuple[str, ...]  # the TOML keys that make it that build
    frameworks: str  # regex


BUILDS: tuple[Build, ...] = (
    Build("llama.cpp-cublas", "llama.cpp", ("prompt_dequantize_min_tokens",),
          r"^llama\.cpp-9476b01|^llama\.cpp \(CUDA backend, master of Jan 2024|"
          r"^llama\.cpp-unstated-2023|^llama\.cpp-b28[234]\d "),
    # llama.cpp with flash attention (-fa 1): fused attention, no score matrix in memory
    # (llama.cpp's own profile is its builds' default, -fa 0: unfused_attention_bytes_per_score)
    Build("llama.cpp-fa", "llama.cpp", ("unfused_attention_bytes_per_score",),
          r"^llama\.cpp .*flash attention on"),
)

# Precision as the source names it -> the catalog precision.
PRECISIONS = {"bf16": "bf16", "fp16": "fp16", "f16": "fp16", "w8a16": "w8a16",
              "w4a16": "w4a16", "int4": "w4a16", "q4_0": "q4_0", "q8_0": "q8_0", "fp8": "fp8",
              "w8a8": "w8a8",
              # llama.cpp's k-quant mix as llama-quantize names it (Ollama's library default)
              "q4_k_m": "q4_k_m"}

# Output lengths and timing conventions written in the sources' settings.
_GENERATED: tuple[tuple[re.Pattern[str], Timed | None], ...] = (
    (re.compile(r"generat\w* (\d+) tokens"), None),
    (re.compile(r"\btg(\d+)\b"), "decode"),
    (re.compile(r"decode (\d+) tokens"), "decode"),
    (re.compile(r"max_new_tokens=(\d+)"), "decode"),
)
# A decode figure that times prefill and decode together (generated tokens / total time, or the
# total time of the call), as LMDeploy's profile_generation and FasterTransformer's tables do.
END_TO_END = "timed end to end (prefill included)"
NO_NVLINK = re.compile(r"not NVLink|no NVLink|without NVLink", re.I)
DEFAULT_GENERATED_TOKENS = 128  # assumption: a decode figure with no stated output length
QWEN_BENCH_GENERATED_TOKENS = 2048  # the Qwen speed benchmarks generate 2048 tokens
JETSON_CONTEXT_TOKENS = 512  # assumption: mid-length step context for the paper's Jetson figure


@dataclass(frozen=True)
class GpuMeasurement:
    id: str
    device: str
    model: str
    profile: str
    framework: str
    precision: str
    tp: int
    timed: Timed
    context_tokens: int  # decode: tokens before generation; prefill: the prompt
    generated_tokens: int  # decode figures (0 for prefill)
    measured_s: float  # see the module docstring
    source: str
    origin: str  # the data file
    nvlink: bool = True  # False: the setting says the GPUs talked over PCIe, not NVLink
    # the measurement's own host CPU (single-thread time relative to the boards' default host,
    # host_cpu_slowdowns); None: the board's default
    host_cpu_slowdown: float | None = None
    # the measured build's profile (BUILDS) whose keys it takes; None: the profile's own
    build: str | None = None
    # False: predicted and cross-validated, never fitted (published.toml `not_fitted`, with
    # its reason: a setting whose host-side time the profile's fit cannot place)
    fitted: bool = True

    @property
    def family(self) -> str:
        return family_of(self.profile)

    @property
    def document(self) -> str:
        """The source document this point comes from (document_of): what leave-one-source-out
        cross-validation leaves out together."""
        return document_of(self.source, self.device)


@dataclass(frozen=True)
class Skipped:
    id: str
    reason: str


_ARXIV = re.compile(r"arXiv[: ]*(\d{4}\.\d{4,5})", re.I)
_REPO = re.compile(r"^([A-Za-z0-9][\w.-]*/[\w.-]+)")


def document_of(source: str, device: str = "") -> str:
    """A source's document: a repository (owner/name) or a paper (its arXiv id), so that the
    points one benchmark, README or paper published are left out together. The brief's
    measured.toml and reference_points.toml copy the Qwen2.5 speed benchmark, except the
    HeteroReason paper's Jetson figure."""
    if source.startswith("dse/data/"):
        return "HeteroReason paper" if device.startswith("jetson") else "QwenLM/Qwen2.5"
    m = _ARXIV.search(source)
    if m:
        return f"arXiv:{m.group(1)}"
    m = _REPO.match(source)
    return m.group(1) if m else " ".join(source.split()[:4])


def family_of(profile: str) -> str:
    """A profile's serving family: its name without a version or build suffix (hf-4.38 ->
    hf-transformers, mlc-llm-jetson -> mlc-llm, autoawq-gemv -> autoawq)."""
    if profile.startswith("hf-"):
        return "hf-transformers"
    if profile.startswith("vllm-0.") or profile == "vllm-v1":
        return "vllm-cudagraph"
    if profile.startswith("mlc-llm"):
        return "mlc-llm"
    if profile.startswith("autoawq"):
        return "autoawq"
    return profile


def build_of(framework: str) -> Build | None:
    """The build (BUILDS) the framework ran, None where it ran its profile's own."""
    return next((b for b in BUILDS if re.search(b.frameworks, framework)), None)


def _build_name(framework: str) -> str | None:
    b = build_of(framework)
    return None if b is None else b.profile


def profile_of(framework: str) -> str | None:
    for pattern, profile in FRAMEWORK_PROFILES:
        if re.search(pattern, framework):
            return profile
    return None


def _data(name: str) -> dict[str, Any]:
    return tomllib.loads(resources.files("dse.data").joinpath(name).read_text(encoding="utf-8"))


def _timing(entry: dict[str, Any]) -> tuple[Timed, int]:
    """(what was timed, generated tokens) of a decode entry from its setting."""
    setting = entry.get("setting", "")
    if "speed = (prompt + generated tokens) / time" in setting or (
            "generate 2048 tokens after an input" in setting):
        return "end_to_end", QWEN_BENCH_GENERATED_TOKENS
    if END_TO_END in setting:
        m = _GENERATED[0][0].search(setting)
        if m is None:
            raise ValueError(f"an end-to-end figure without its output length: {setting!r}")
        return "end_to_end", int(m.group(1))
    for rx, timed in _GENERATED:
        m = rx.search(setting)
        if m:
            return (timed or "decode"), int(m.group(1))
    return "decode", DEFAULT_GENERATED_TOKENS


# The brief's files of GPU points the fits read; reference_points.toml is held out (its header:
# "used only to check predictions (never fitted)").
BRIEF_FITTED = ("measured.toml",)
BRIEF_HELD_OUT = ("reference_points.toml",)


def point_id(tag: str, context_tokens: int) -> str:
    """A measurement's id: its entry's tag and the context it was measured at (a repeated id
    gets #2, #3 in load order)."""
    return f"{tag}:{context_tokens}"


def brief_tag(fname: str, e: dict[str, Any]) -> str:
    """The tag of a gpu_decode entry of the brief's files (measured.toml,
    reference_points.toml), as load_gpu_measurements writes it."""
    return f"{fname}:{e['framework']}:{e['device']}:{e['model']}:{e['precision']}::tp1"


def brief_context(e: dict[str, Any], inp: float) -> int:
    """The context of a brief point: its input tokens, or the Jetson figure's assumed step
    context where it gives none."""
    return int(inp) if inp or not e["device"].startswith("jetson") else JETSON_CONTEXT_TOKENS


def _brief_entries(files: tuple[str, ...] = BRIEF_FITTED
                   ) -> Iterable[tuple[str, dict[str, Any]]]:
    """The brief's files (default: those the fits read) in the published schema."""
    for fname in files:
        for e in _data(fname).get("gpu_decode", []):
            jetson = e["device"].startswith("jetson")
            yield fname, {
                "kind": "gpu_decode", "catalog_device": e["device"], "catalog_model": e["model"],
                "framework": e["framework"], "precision": e["precision"], "tp": 1,
                "points": e["points"], "unit": "tokens/s",
                # the paper's Jetson figure: a decode rate at a mid-length step context
                "setting": ("decode 128 tokens" if jetson else
                            "generate 2048 tokens after an input of N tokens"),
                "source": f"dse/data/{fname}",
                "context_default": JETSON_CONTEXT_TOKENS if jetson else None,
            }


def _published_entries() -> Iterable[tuple[str, dict[str, Any]]]:
    for e in _data("published.toml").get("measurement", []):
        yield "published.toml", e


def slowdown_of(reference_score: float, score: float) -> float:
    """Single-thread time relative to the reference host: the inverse ratio of the benchmark's
    scores (a score is work per second, higher is faster), e.g. 2504.87 / 3305.73 = 0.758."""
    if not (reference_score > 0 and score > 0):
        raise ValueError(f"single-thread scores must be positive: {reference_score}, {score}")
    return reference_score / score


def host_cpu_slowdowns(data: dict[str, Any] | None = None) -> dict[str, float]:
    """Each named host of published.toml's [[host]] tables -> its host_cpu_slowdown
    (slowdown_of its score against host_cpu_reference_score)."""
    data = _data("published.toml") if data is None else data
    ref = float(data["host_cpu_reference_score"])
    return {h["instance"]: slowdown_of(ref, float(h["single_thread_score"]))
            for h in data.get("host", [])}


def _host_of(e: dict[str, Any], hosts: dict[str, float]) -> float | None:
    name = e.get("host")
    if name is None:
        return None
    if name not in hosts:
        raise ValueError(f"published.toml row of {e.get('device')!r} names host {name!r}, "
                         f"which no [[host]] table gives; known: {sorted(hosts)}")
    return hosts[name]


def load_gpu_measurements(models: Iterable[str], devices: Iterable[str],
                          profiles: Iterable[str]) -> tuple[list[GpuMeasurement], list[Skipped]]:
    """Every GPU decode/prefill figure that maps onto the given catalog names."""
    models, devices, profiles = set(models), set(devices), set(profiles)
    out: list[GpuMeasurement] = []
    skipped: list[Skipped] = []
    seen: dict[str, int] = {}
    hosts = host_cpu_slowdowns()
    for origin, e in [*_brief_entries(), *_published_entries()]:
        if e["kind"] not in ("gpu_decode", "gpu_prefill"):
            continue
        device = e.get("catalog_device") or e.get("catalog_device_assumed")
        model = e.get("catalog_model") or e.get("catalog_model_assumed")
        profile = profile_of(e["framework"])
        prec = PRECISIONS.get(e["precision"])
        if prec is None and e["precision"].startswith("exl2-"):
            from dse.devices.shape import precision_family  # lazy: numpy-free import of this module

            if precision_family(e["precision"]) == "exl2":
                prec = e["precision"]  # exl2-<bits per weight>: the catalog parses it
        tag = (f"{origin}:{e['framework']}:{device or e.get('device')}:"
               f"{model or e.get('model')}:{e['precision']}:{e.get('quantization', '')}:"
               f"tp{e.get('tp', 1)}")
        reason = ("device not in the catalog" if device not in devices else
                  "model not in the catalog" if model not in models else
                  "no serving profile for the framework" if profile not in profiles else
                  f"precision {e['precision']!r} not modelled" if prec is None else
                  "simulated, not measured" if e.get("simulated") else
                  "an HTTP client's time to first token: it includes the server's request "
                  "handling, which the prefill model does not time"
                  if e["kind"] == "gpu_prefill" and e.get("served") == "http" else None)
        if reason is not None:
            skipped.append(Skipped(tag, reason))
            continue
        assert device is not None and model is not None and profile is not None
        assert prec is not None
        if e["kind"] == "gpu_decode":
            timed, generated = _timing(e)
        else:
            timed, generated = "prefill", 0
        for ctx, value in e["points"]:
            ctx = int(ctx) if ctx or e.get("context_default") is None else e["context_default"]
            if e["unit"] == "tokens/s":
                if e["kind"] == "gpu_prefill" and ctx <= 0:
                    skipped.append(Skipped(f"{tag}:{ctx}", "a prefill rate without the prompt "
                                           "length it was measured over"))
                    continue
                n = generated if e["kind"] == "gpu_decode" else ctx
                seconds = (1.0 if e["kind"] == "gpu_decode" else n) / float(value)
            elif e["unit"] == "ms/token":
                seconds = float(value) * 1e-3
            elif e["unit"] == "s" and e["kind"] == "gpu_decode":
                # the whole timed call (its setting says timed end to end): per generated token
                if timed != "end_to_end":
                    skipped.append(Skipped(f"{tag}:{ctx}", "a decode time in s that is not "
                                           "timed end to end"))
                    continue
                seconds = float(value) / generated
            elif e["unit"] == "s":
                seconds = float(value)
            else:
                skipped.append(Skipped(tag, f"unit {e['unit']!r} is not a time or rate"))
                continue
            pid = point_id(tag, ctx)
            seen[pid] = seen.get(pid, 0) + 1
            out.append(GpuMeasurement(
                id=pid if seen[pid] == 1 else f"{pid}#{seen[pid]}", device=device, model=model,
                profile=profile,
                framework=e["framework"], precision=prec, tp=int(e.get("tp", 1) or 1),
                timed=timed, context_tokens=ctx, generated_tokens=generated,
                measured_s=seconds, source=e["source"], origin=origin,
                nvlink=not NO_NVLINK.search(e.get("setting", "")),
                host_cpu_slowdown=_host_of(e, hosts), build=_build_name(e["framework"]),
                fitted=not e.get("not_fitted")))
    return out, skipped
