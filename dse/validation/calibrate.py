"""Calibration of the device models to published measurements, and their validation table.

Few, physically meaningful parameters are fitted, each to named data:
- every GPU serving profile: see dse.validation.gpu_fit (the published batch-1 points of its
  own stack, leave-one-out cross-validated);
- jetson-orin-nano-8gb: the factor by which vLLM's Jetson builds spend more host time than its
  CPU speed gives (`host_stack_slowdown`), to its 17 tokens/s (dse/data/measured.toml, the
  paper's Jetson figure), jointly with eager vLLM's launch (`with_jetson_hosts`); the other
  Orin modules run the same build (the same factor) at their own CPU speed (a sourced default);
- flexllm: the achieved efficiency, to FlexLLM's U280 decode ratio (1.64x) vs its A100 HF
  baseline (about 40 tokens/s, DESIGN.md), and the fabric power coefficient, to the U280 log.
Each fit reads the published figures through one reader (`flexllm_inputs`, `jetson_point`), so
that `validation_rows` labels each row by what the fits read (dse.validation.labels): fitted,
calibrated, copied (a board value equal to the measurement) or predicted. Pure functions:
reading the data files is the only I/O, and writing fitted values back is
scripts/calibrate_devices.py's job.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import numpy as np
from scipy.optimize import brentq

from dse.devices import fpga as fpga_cost_mod
from dse.devices import gpu as gpu_cost_mod
from dse.devices.power import gpu_power_w
from dse.devices.shape import precision
from dse.specs import Catalog, FpgaEngineSpec, GpuServingSpec, GpuSpec
from dse.validation.labels import QUOTED_FIGURES, Label, Path, Reads, fit_reads, label
from dse.validation.measurements import (
    BRIEF_FITTED,
    BRIEF_HELD_OUT,
    JETSON_CONTEXT_TOKENS,
    QWEN_BENCH_GENERATED_TOKENS,
    brief_context,
    brief_tag,
    point_id,
)

# Which serving profile models each measured framework. The Jetson build is assumed eager: its
# flat ~17 tokens/s "across different prefill and decode lengths" is the signature of a
# launch-bound decoder, and source builds of vLLM on Jetson commonly run --enforce-eager.
FRAMEWORK_PROFILE = {
    "vllm-0.6.3": "vllm-cudagraph",
    "hf-transformers-4.46": "hf-eager",
    "vllm-source-build": "vllm-eager",
}
FLEXLLM_CONTEXT_TOKENS = 1536  # FlexLLM benches 1024 prompt + 1024 new tokens: mean context
FLEXLLM_BASELINE_DEVICE = "a100-80gb-sxm"  # assumption: FlexLLM says only "A100"
# FlexLLM's A100 baseline (HF transformers generate, BF16, sampling, Llama-3.2-1B): "about 40
# tokens/s" (shared/DESIGN.md section 4). The hf-eager profile, fitted to transformers 4.46 greedy
# Qwen runs, extrapolates a faster rate for Llama's 16 layers; the validation table shows both.
FLEXLLM_BASELINE_TOKENS_PER_S = QUOTED_FIGURES["flexllm_baseline_tokens_per_s"]


@dataclass(frozen=True)
class GpuPoint:
    device: str
    model: str
    framework: str
    precision: str
    input_tokens: int
    tokens_per_s: float
    tolerance: float  # relative tolerance on tokens/s the issue sets for this point
    id: str  # the point's measurement id (dse.validation.measurements.point_id)


def load_data(name: str) -> dict[str, Any]:
    return tomllib.loads(resources.files("dse.data").joinpath(name).read_text(encoding="utf-8"))


def _points_of(fname: str, entries: Any) -> list[GpuPoint]:
    out: list[GpuPoint] = []
    for e in entries:
        jetson = e["device"].startswith("jetson")
        for inp, tps in e["points"]:
            pid = point_id(brief_tag(fname, e), brief_context(e, inp))
            out.append(GpuPoint(e["device"], e["model"], e["framework"], e["precision"],
                                int(inp), float(tps), 0.35 if jetson else 0.20, pid))
    return out


def gpu_points() -> list[GpuPoint]:
    """Every batch-1 GPU decode point of the brief: measured.toml (the fits read it) and
    reference_points.toml (held out: predicted, never fitted)."""
    return [p for fname in (*BRIEF_FITTED, *BRIEF_HELD_OUT)
            for p in _points_of(fname, load_data(fname).get("gpu_decode", []))]


def jetson_point(root: Mapping[str, Any]) -> GpuPoint:
    """The Jetson host fit's one input: measured.toml's Orin Nano point (the paper's 17
    tokens/s), read from `root` (dse.validation.labels.published_root)."""
    entries = [e for e in root["measured.toml"]["gpu_decode"]
               if e["device"] == "jetson-orin-nano-8gb"]
    (pt,) = _points_of("measured.toml", entries)
    return pt


def predict_tokens_per_s(cat: Catalog, pt: GpuPoint, serving: GpuServingSpec) -> float:
    """What the benchmark would report: generated tokens / (prefill + decode) seconds for the
    Qwen benchmark; the plain decode rate for the Jetson figure."""
    c = gpu_cost_mod.gpu_cost(cat.model(pt.model), cat.gpu(pt.device), precision(pt.precision),
                              serving)
    if pt.device.startswith("jetson"):
        return float(1.0 / gpu_cost_mod.decode_token_s(c, JETSON_CONTEXT_TOKENS))
    n = QWEN_BENCH_GENERATED_TOKENS
    t = gpu_cost_mod.prefill_s(c, pt.input_tokens) + gpu_cost_mod.decode_s(c, n, pt.input_tokens)
    return float(n / t)


def _rel_errors(cat: Catalog, pts: list[GpuPoint], serving: GpuServingSpec) -> np.ndarray:
    return np.array([predict_tokens_per_s(cat, p, serving) / p.tokens_per_s - 1 for p in pts])


def _with_stack_factor(gpu: GpuSpec, profile: str, k: float) -> GpuSpec:
    return replace(gpu, host_stack_slowdown={**(gpu.host_stack_slowdown or {}), profile: k})


def fit_jetson_host(cat: Catalog, serving: GpuServingSpec | None = None) -> dict[str, float]:
    """The factor by which vLLM's Jetson builds spend more host time than the Orin Nano's CPU
    speed alone gives (its `host_stack_slowdown` for the eager vLLM profile), to its
    measured.toml point (17 tokens/s, vLLM eager on the module's Cortex-A78AE cores), with
    `serving` (default: the catalog's profile of that framework). The board's CPU speed
    (`host_cpu_slowdown`) is a sourced default and stays as it is."""
    from dse.validation.labels import published_root

    pt = jetson_point(published_root())
    profile = FRAMEWORK_PROFILE[pt.framework]
    serving = cat.serving(profile) if serving is None else serving
    gpu0 = cat.gpu(pt.device)

    cpu = gpu0.host_cpu_slowdown

    def f(total: float) -> float:  # solved for the total host factor, then split
        c = gpu_cost_mod.gpu_cost(cat.model(pt.model),
                                  _with_stack_factor(gpu0, profile, total / cpu),
                                  precision(pt.precision), serving)
        return 1.0 / float(gpu_cost_mod.decode_token_s(c, JETSON_CONTEXT_TOKENS)) - pt.tokens_per_s

    return {profile: float(brentq(f, 0.1, 1000.0, xtol=1e-9)) / cpu}


# The other Orin modules run the same vLLM builds on the same Cortex-A78AE cores: the stack's
# factor is the Orin Nano's; their own CPU speed (clock) is in their host_cpu_slowdown.
JETSON_DERIVED_HOSTS = ("jetson-orin-nano-8gb-super", "jetson-agx-orin-64gb",
                        "jetson-orin-nx-16gb")


def jetson_hosts(cat: Catalog, serving: GpuServingSpec | None = None
                 ) -> dict[str, dict[str, float]]:
    """Every Orin module's host_stack_slowdown for eager vLLM, by GPU name: the Orin Nano's
    fitted to its point with `serving` (the eager vLLM profile), the others the same."""
    nano = fit_jetson_host(cat, serving)
    return {"jetson-orin-nano-8gb": nano, **{name: dict(nano) for name in JETSON_DERIVED_HOSTS}}


def with_jetson_hosts(cat: Catalog, serving: GpuServingSpec) -> Catalog:
    """The catalog with the Orin modules' vLLM factor refitted to an eager vLLM profile:
    eager vLLM's per-layer launch and that factor are fitted jointly this way (the Orin Nano
    point pins their product with the Nano's CPU speed; the profile's other points pin the
    launch)."""
    hosts = jetson_hosts(cat, serving)
    out = []
    for name, v in hosts.items():
        ((profile, k),) = v.items()
        out.append(_with_stack_factor(cat.gpu(name), profile, k))
    return cat.replacing("gpu", out)


def hf_a100_llama1b_decode_s(cat: Catalog) -> float:
    """hf-eager's prediction for FlexLLM's baseline: Llama-3.2-1B, BF16, HF, A100."""
    c = gpu_cost_mod.gpu_cost(cat.model("llama-3.2-1b-instruct"), cat.gpu(FLEXLLM_BASELINE_DEVICE),
                              precision("bf16"), cat.serving("hf-eager"))
    return float(gpu_cost_mod.decode_token_s(c, FLEXLLM_CONTEXT_TOKENS))


def _flexllm_u280(cat: Catalog, engine: FpgaEngineSpec) -> fpga_cost_mod.FpgaCost:
    build = fpga_cost_mod.default_build(cat.fpga("u280"), engine, max_seq_len=2048)
    return fpga_cost_mod.fpga_cost(cat.model("llama-3.2-1b-instruct"), build)


@dataclass(frozen=True)
class FlexllmInputs:
    decode_throughput_ratio: float  # FlexLLM U280 decode rate / its A100 HF baseline's
    baseline_tokens_per_s: float  # that baseline's rate (DESIGN.md: about 40)
    running_w: float  # the U280 log's decoding power (midpoint of its range)


def flexllm_inputs(root: Mapping[str, Any]) -> FlexllmInputs:
    """The FlexLLM fit's inputs, read from `root` (dse.validation.labels.published_root)."""
    meas = root["measured.toml"]
    return FlexllmInputs(float(meas["fpga_relative"][0]["decode_throughput_ratio"]),
                         float(root["quoted"]["flexllm_baseline_tokens_per_s"]),
                         float(np.mean(list(meas["fpga_power"][0]["running_w"]))))


def fit_flexllm(cat: Catalog) -> dict[str, float]:
    """achieved_efficiency from the 1.64x decode ratio; fabric power from the U280 power log."""
    from dse.validation.labels import published_root

    inputs = flexllm_inputs(published_root())
    target_s = 1.0 / (inputs.baseline_tokens_per_s * inputs.decode_throughput_ratio)
    base = cat.engine("flexllm")

    def f(eta: float) -> float:
        c = _flexllm_u280(cat, replace(base, achieved_efficiency=eta))
        return float(fpga_cost_mod.decode_token_s(c, FLEXLLM_CONTEXT_TOKENS)) - target_s

    eta = float(brentq(f, 1e-3, 1.0, xtol=1e-9))
    running_w = inputs.running_w

    def g(k: float) -> float:
        c = _flexllm_u280(cat, replace(base, achieved_efficiency=eta, dynamic_w_per_ghz_kdsp=k))
        return float(fpga_cost_mod.decode_power_w(c, FLEXLLM_CONTEXT_TOKENS)) - running_w

    k = float(brentq(g, 0.0, 1000.0, xtol=1e-9))
    return {"achieved_efficiency": eta, "dynamic_w_per_ghz_kdsp": k}


# ------------------------------------------------------------------------ validation table


@dataclass(frozen=True)
class ValidationRow:
    id: str
    description: str
    measured: float
    predicted: float
    tolerance: float  # relative
    label: Label  # what happened to the measured figure (dse.validation.labels)

    @property
    def rel_error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def within(self) -> bool:
        return abs(self.rel_error) <= self.tolerance + 1e-12


def _row(reads: Reads, datum: Path, rid: str, description: str, measured: float,
         predicted: float, tolerance: float) -> ValidationRow:
    return ValidationRow(rid, description, float(measured), float(predicted), tolerance,
                         label(datum, reads, float(measured), float(predicted)))


def validation_rows(cat: Catalog, reads: Reads | None = None) -> list[ValidationRow]:
    """Every published device measurement beside the tool's prediction, labelled by what the
    fits read (`reads`: default dse.validation.labels.fit_reads)."""
    reads = fit_reads(cat) if reads is None else reads
    rows: list[ValidationRow] = []
    for p in gpu_points():
        serving = cat.serving(FRAMEWORK_PROFILE[p.framework])
        rows.append(_row(
            reads, ("gpu", p.id),
            f"gpu_decode.{p.device}.{p.model}.{p.framework}.in{p.input_tokens}",
            f"{p.model} on {p.device}, {p.framework}, {p.precision}, input {p.input_tokens} "
            "(tokens/s)",
            p.tokens_per_s, predict_tokens_per_s(cat, p, serving), p.tolerance))
    meas = load_data("measured.toml")
    engine = cat.engine("flexllm")
    u280 = _flexllm_u280(cat, engine)
    t_fpga = float(fpga_cost_mod.decode_token_s(u280, FLEXLLM_CONTEXT_TOKENS))
    t_a100 = 1.0 / FLEXLLM_BASELINE_TOKENS_PER_S
    rel = meas["fpga_relative"][0]
    rel_at: Path = ("measured.toml", "fpga_relative", 0)
    rows.append(_row(
        reads, (*rel_at, "decode_throughput_ratio"),
        "fpga_relative.u280.llama-3.2-1b-instruct.decode_throughput_ratio",
        "FlexLLM U280 decode throughput / A100 HF BF16 at 40 tokens/s (x)",
        rel["decode_throughput_ratio"], t_a100 / t_fpga, 0.20))
    rows.append(_row(
        reads, ("quoted", "flexllm_baseline_tokens_per_s"),
        "design.a100.llama-3.2-1b-instruct.hf_tokens_per_s",
        "A100 HF transformers Llama-3.2-1B decode (tokens/s; DESIGN.md: about 40; the "
        "baseline FlexLLM's fit divides by)",
        FLEXLLM_BASELINE_TOKENS_PER_S, 1.0 / hf_a100_llama1b_decode_s(cat), 0.20))
    v80 = fpga_cost_mod.fpga_cost(
        cat.model("llama-3.2-1b-instruct"),
        fpga_cost_mod.default_build(cat.fpga("v80"), engine, max_seq_len=2048))
    t_v80 = float(fpga_cost_mod.decode_token_s(v80, FLEXLLM_CONTEXT_TOKENS))
    projected = QUOTED_FIGURES["flexllm_v80_projected_decode_ratio"]
    rows.append(_row(
        reads, ("quoted", "flexllm_v80_projected_decode_ratio"),
        "fpga_relative.v80.llama-3.2-1b-instruct.projected_decode_vs_u280",
        f"FlexLLM's projected V80 decode speed / U280 ({projected:g}x / 1.64x vs A100)",
        projected / rel["decode_throughput_ratio"], t_fpga / t_v80, 0.35))
    a100 = gpu_cost_mod.gpu_cost(cat.model("llama-3.2-1b-instruct"),
                                 cat.gpu(FLEXLLM_BASELINE_DEVICE), precision("bf16"),
                                 cat.serving("hf-eager"))
    busy = gpu_cost_mod.forward(a100, 1, FLEXLLM_CONTEXT_TOKENS).busy_fraction
    # The A100's power is this tool's (busy-scaled) prediction at the baseline's 40 tokens/s.
    busy = np.minimum(busy * hf_a100_llama1b_decode_s(cat) / t_a100, 1.0)
    e_a100 = float(gpu_power_w(a100, "decode", busy)) * t_a100
    e_fpga = float(fpga_cost_mod.decode_power_w(u280, FLEXLLM_CONTEXT_TOKENS)) * t_fpga
    rows.append(_row(
        reads, (*rel_at, "energy_efficiency_ratio"),
        "fpga_relative.u280.llama-3.2-1b-instruct.energy_efficiency_ratio",
        "FlexLLM U280 energy efficiency / A100 HF BF16 (x)",
        rel["energy_efficiency_ratio"], e_a100 / e_fpga, 0.35))
    pw = meas["fpga_power"][0]
    pw_at: Path = ("measured.toml", "fpga_power", 0)
    rows.append(_row(
        reads, (*pw_at, "running_w"),
        "fpga_power.u280.running_w", "U280 board power decoding Llama-3.2-1B (W, midpoint)",
        float(np.mean(pw["running_w"])),
        float(fpga_cost_mod.decode_power_w(u280, FLEXLLM_CONTEXT_TOKENS)), 0.20))
    rows.append(_row(
        reads, (*pw_at, "idle_w"),
        "fpga_power.u280.idle_w", "U280 board power loaded and idle (W)", pw["idle_w"],
        float(fpga_cost_mod.idle_power_w(u280)), 0.05))
    hbm = meas["fpga_memory"][0]
    build = fpga_cost_mod.default_build(cat.fpga("u280"), engine, clock_hz=450e6)
    rows.append(_row(
        reads, ("measured.toml", "fpga_memory", 0, "measured_hbm_bytes_per_s"),
        "fpga_memory.u280.hbm_bytes_per_s", "U280 effective HBM bandwidth, 32 channels at 450 MHz"
        " (bytes/s)", hbm["measured_hbm_bytes_per_s"],
        fpga_cost_mod.effective_bw_bytes_per_s(build), 0.05))
    for i, link in enumerate(meas["link"]):
        spec = cat.link(link["name"])
        lo, hi = link["measured_bytes_per_s"]
        mid = (lo + hi) / 2
        rows.append(_row(
            reads, ("measured.toml", "link", i, "measured_bytes_per_s"),
            f"link.{link['name']}.effective_bytes_per_s",
            f"{link['name']} effective bandwidth (bytes/s, measured {lo:.3g}-{hi:.3g})",
            mid, spec.effective_bytes_per_s, (hi - lo) / 2 / mid))
    return rows
