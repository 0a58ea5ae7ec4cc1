"""Workloads and systems: the two scenario kinds of the catalog (scenarios/).

A workload is a dataset's statistics: prompt length, steps per problem, tokens per step, its
difficulty tier for PRM error detection (a ProcessBench subset), its test-set size, and each
model's solo accuracy on it (from which the per-step error rate follows). How a PRM scores a
draft's steps belongs to the draft and the PRM, not the dataset (dse.model.discrimination).
A system places the draft, PRM and target on devices with their models, precisions and serving
profiles (the draft's FPGA engine when it runs on an FPGA), and holds the algorithm knobs'
defaults. Each field carries its schema (`dse.specs.spec_field`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dse.core.limits import (
    MAX_BACKTRACK_WINDOW,
    MAX_BACKTRACKS,
    MAX_CONTEXT_TOKENS,
    MAX_CV,
    MAX_SAMPLES,
    MAX_TP,
)
from dse.errors import SpecError
from dse.specs.model import KV_PRECISIONS, PROCESSBENCH_SUBSETS
from dse.specs.schema import Spec, nonneg, pos, register_kind, spec_field


@dataclass(frozen=True)
class WorkloadSpec(Spec):
    dataset: str = spec_field()
    prompt_tokens: float = pos(help="chat-templated prompt seen by draft and target")
    problem_tokens: float = pos(help="prefix the PRM reads before the steps")
    steps_mean: float = spec_field(lo=1.0, help="committed steps per problem (forward-only)")
    steps_cv: float = nonneg(hi=MAX_CV)
    draft_step_tokens_mean: float = pos()
    draft_step_tokens_cv: float = nonneg(hi=MAX_CV)
    target_step_tokens_mean: float = pos()
    target_step_tokens_cv: float = nonneg(hi=MAX_CV)
    processbench_subset: str = spec_field(
        choices=PROCESSBENCH_SUBSETS, help="the ProcessBench subset of this dataset's "
        "difficulty: a PRM's F1 there is its error detection here")
    test_problems: int = pos(help="problems in the test set the accuracies are measured on "
                             "(their binomial spread)")
    prm_concentration: float | None = spec_field(
        lo=0.5, hi=200.0, help="PRM score concentration alpha + beta on this dataset "
        "(assumption); absent: the accuracy model's (dse/data/accuracy_model.toml)")
    max_context_tokens: int = pos(hi=MAX_CONTEXT_TOKENS,
                                  help="generation budget (prompt + response), RSD: 4096")
    accuracy: Mapping[str, float] = spec_field(lo=0.0, hi=100.0,
                                               help="model name -> solo greedy accuracy, %")
    load: Mapping[str, float] | None = spec_field(
        lo=0.0, lo_open=True, help="the load a search weighs designs at (dse sweep/optimize "
        "without --rate): rate (problems/s) and SLOs ttft_ms, tpot_ms, e2el_ms; absent: one "
        "problem at a time")

    kind = "workload"


def solo_accuracy_pct(w: WorkloadSpec, model: str) -> float:
    """A model's published solo greedy accuracy on the workload, percent (0-100); a model the
    workload does not list is a SpecError naming the key and the models it lists."""
    if model not in w.accuracy:
        known = ", ".join(sorted(w.accuracy))
        raise SpecError(w.path, f"accuracy.{model}",
                        f"no solo accuracy for {model!r} on {w.name}; known: {known}")
    return float(w.accuracy[model])


WIDTH_WORKFLOWS: tuple[str, ...] = ("best-of-n", "weighted-best-of-n", "majority",
                                    "step-search", "beam")
"""The width uses of a PRM (dse.width): N samples of the policy (the target keys) ranked by
the PRM (best-of-n), PRM-weighted voting (weighted-best-of-n), plain majority voting (no
verifier), a step-level search (N candidates per step, the best-scored kept) and beam search
(N candidates per step, the beam_width best kept)."""
WORKFLOWS: tuple[str, ...] = ("speculative", "target-only", *WIDTH_WORKFLOWS)
"""`speculative`: a draft writes each step, a verifier scores it, the target rewrites rejected
steps; `target-only`: the target writes every step (the baseline every answer is weighed
against); the width workflows (WIDTH_WORKFLOWS)."""
AGGREGATIONS: tuple[str, ...] = ("last", "min", "product")
"""How a width design's PRM turns step scores into a response's score (the last step's, the
lowest, or their product; dse.width.params' aggregation factors)."""
VERIFIER_KINDS: tuple[str, ...] = ("prm", "target")
"""The verifier of a speculative design: a process reward model, or the target judging the
draft's step with one score token (dse.model.verifiers)."""
COLOCATIONS: tuple[str, ...] = ("draft+target", "prm+target", "draft+prm", "draft+prm+target")
"""Roles that share one device (their work serialises; dse.model.design)."""


@dataclass(frozen=True)
class SystemSpec(Spec):
    draft_model: str | None = spec_field(
        help="catalog model name, or a model TOML / config.json path (a speculative design)")
    prm_model: str | None = spec_field(help="the PRM (verifier = prm)")
    target_model: str = spec_field()
    draft_device: str | None = spec_field(help="a GPU or an FPGA board")
    prm_device: str | None = spec_field(help="a GPU")
    target_device: str = spec_field(help="a GPU")
    target_tp: int = pos(hi=MAX_TP, help="GPUs the target is split over (tensor parallel)")
    draft_precision: str | None = spec_field()
    prm_precision: str | None = spec_field()
    target_precision: str = spec_field()
    draft_serving: str | None = spec_field(
        help="the draft's GPU serving profile (a GPU draft; absent: vllm-cudagraph)")
    draft_engine: str | None = spec_field(
        help="the draft's FPGA engine (an FPGA draft; absent: flexllm)")
    prm_serving: str | None = spec_field()
    target_serving: str = spec_field()
    draft_kv_precision: str | None = spec_field(
        choices=tuple(KV_PRECISIONS), help="the draft's KV-cache precision on a GPU: 16 (the "
        "model dtype), fp8 or int8 (8 bits), q8_0 (8.5 bits), q4_0 (4.5 bits; vLLM "
        "--kv-cache-dtype, llama.cpp --cache-type-k/-v); absent: 16")
    prm_kv_precision: str | None = spec_field(choices=tuple(KV_PRECISIONS),
                                              help="the PRM's KV-cache precision (as draft's)")
    target_kv_precision: str | None = spec_field(
        choices=tuple(KV_PRECISIONS), help="the target's KV-cache precision (as draft's)")
    draft_offload_fraction: float | None = nonneg(
        hi=1.0, help="share of a GPU draft's streamed weights held in host memory and copied "
        "over its host link every forward pass (vLLM --cpu-offload-gb), in [0, 1); absent: 0")
    prm_offload_fraction: float | None = nonneg(hi=1.0, help="the PRM's (as draft's)")
    target_offload_fraction: float | None = nonneg(hi=1.0, help="the target's (as draft's)")
    draft_host_cpu_slowdown: float | None = pos(
        help="a GPU draft's host CPU: its single-thread time relative to the calibration hosts "
        "(the servers of the published A100 points, 1; a Jetson's Cortex-A78AE about 2-3), "
        "scaling the stack's launches and per-step host work; absent: the board's default "
        "(boards/gpus, host_cpu_slowdown, with its source)")
    prm_host_cpu_slowdown: float | None = pos(help="the PRM's GPU host CPU (as draft's)")
    target_host_cpu_slowdown: float | None = pos(help="the target's GPU host CPU (as draft's)")
    fpga_clock_hz: float | None = pos("fpga_clock_MHz", legacy_zero=True,
                                      help="FPGA build clock; absent: the board's default")
    fpga_memory_channels: int | None = pos(legacy_zero=True,
                                           help="memory channels used; absent: all of them")
    fpga_mac_lanes: int | None = pos(legacy_zero=True,
                                     help="INT8 MACs per cycle; absent: the engine's default")
    accept_threshold: float | None = spec_field(lo=0.0, hi=1.0)
    backtrack_threshold: float | None = spec_field(lo=0.0, hi=1.0)
    max_backtracks: int | None = nonneg(hi=MAX_BACKTRACKS,
                                        help="backtracks a problem may take (0: forward only)")
    backtrack_window: int | None = pos(hi=MAX_BACKTRACK_WINDOW,
                                       help="how many steps back a backtrack's anchor may be")
    max_context_tokens: int = pos(hi=MAX_CONTEXT_TOKENS)
    prm_tp: int | None = pos(hi=MAX_TP, help="GPUs the PRM is split over (tensor parallel); "
                             "absent: 1")
    workflow: str | None = spec_field(choices=WORKFLOWS,
                                      help="speculative, target-only or a width method "
                                      "(best-of-n, weighted-best-of-n, majority, step-search, "
                                      "beam); absent: speculative")
    verifier: str | None = spec_field(choices=VERIFIER_KINDS,
                                      help="prm or target (the target judges each step with "
                                      "one score token); absent: prm")
    samples: int | None = pos(hi=MAX_SAMPLES, help="a width design's samples per problem N "
                              "(step-search and beam: candidates per step), 1-64")
    beam_width: int | None = pos(hi=MAX_SAMPLES, help="beams a beam search keeps (1..samples, "
                                 "dividing samples: each kept beam expands samples / "
                                 "beam_width candidates)")
    aggregation: str | None = spec_field(choices=AGGREGATIONS,
                                         help="how a width design's PRM makes a response's "
                                         "score from its step scores; absent: product")
    colocate: str | None = spec_field(choices=COLOCATIONS,
                                      help="roles that share one device (their work "
                                      "serialises); absent: each role on its own device(s)")

    kind = "system"

    @property
    def workflow_name(self) -> str:
        return self.workflow or "speculative"

    @property
    def is_width(self) -> bool:
        """A width design (N samples of the target ranked or voted; WIDTH_WORKFLOWS)."""
        return self.workflow_name in WIDTH_WORKFLOWS

    @property
    def verifier_name(self) -> str | None:
        """The verifier kind of a speculative design; None on a target-only or width one (a
        width design's PRM is `prm_model`, scored by the width model)."""
        return self.verifier or "prm" if self.workflow_name == "speculative" else None

    @property
    def colocated(self) -> tuple[tuple[str, ...], ...]:
        """Groups of roles on one device (a target verifier shares the target's)."""
        groups: list[set[str]] = []
        if self.colocate:
            groups.append(set(self.colocate.split("+")))
        if self.verifier_name == "target":
            hit = next((g for g in groups if "target" in g), None)
            if hit is None:
                groups.append({"prm", "target"})
            else:
                hit.add("prm")
        order = ("draft", "prm", "target")
        return tuple(tuple(r for r in order if r in g) for g in groups)


def context_misfit(budget_tokens: int, prompt_tokens: float, step_tokens: float,
                   whose: str = "the") -> str | None:
    """Why a generation budget cannot hold a prompt and one step, or None. E.g. 100 tokens
    against MATH500's 98.9-token prompt and 53-token steps: '100 tokens cannot hold the
    prompt (98.9 tokens) and one step (53 tokens): at least 152 needed'."""
    need = prompt_tokens + step_tokens
    if budget_tokens >= need:
        return None
    return (f"{budget_tokens} tokens cannot hold {whose} prompt ({prompt_tokens:g} tokens) and "
            f"one step ({step_tokens:g} tokens): at least {math.ceil(need)} needed")


def _check_workload(path: object, v: dict[str, Any]) -> None:
    """A workload's own generation budget holds its prompt and one step (a draft's or the
    target's, the longer), as a design's must (dse.model.design.budget_misfit): its accuracy
    and step counts are for problems that can start."""
    why = context_misfit(v["max_context_tokens"], v["prompt_tokens"],
                         max(v["target_step_tokens_mean"], v["draft_step_tokens_mean"]))
    if why is not None:
        raise SpecError(path, "max_context_tokens", why)


SPECULATIVE_KEYS: tuple[str, ...] = ("draft_model", "draft_device", "draft_precision")
PRM_KEYS: tuple[str, ...] = ("prm_model", "prm_device", "prm_precision", "prm_serving")
KNOB_KEYS: tuple[str, ...] = ("accept_threshold", "backtrack_threshold", "max_backtracks",
                              "backtrack_window")


def _check_system(path: object, v: dict[str, Any]) -> None:
    """What a workflow needs: a speculative design names its draft, its verifier's placement
    (a PRM's; a target verifier is the target) and its thresholds; a target-only design has no
    verifier; colocated roles name one device and one host CPU."""
    for role in ("draft", "prm", "target"):
        if (v[f"{role}_offload_fraction"] or 0.0) >= 1.0:
            raise SpecError(path, f"{role}_offload_fraction", "must be below 1: the GPU keeps "
                            "the activations and the KV cache, and some weights with them")
    workflow = v["workflow"] or "speculative"
    if workflow != "speculative" and v["verifier"] is not None and workflow != "target-only":
        raise SpecError(path, "verifier", f"a {workflow} design's verifier is its prm_model "
                        "(or none, majority); remove the key")
    if workflow in WIDTH_WORKFLOWS:
        _check_width(path, v, workflow)
        return
    for key in WIDTH_KEYS:
        if v[key] is not None:
            raise SpecError(path, key, f"a width design's key (workflow = best-of-n, ...); a "
                            f"{workflow} design has none")
    if workflow == "target-only":
        if v["verifier"] is not None:
            raise SpecError(path, "verifier", "a target-only design has no verifier (the "
                            "target writes every step); remove the key or set workflow = "
                            '"speculative"')
        if v["colocate"] is not None:
            raise SpecError(path, "colocate", "a target-only design runs one role; nothing "
                            "to colocate")
        return
    verifier = v["verifier"] or "prm"
    # every verifier but the target itself runs on a placement of its own (the PRM keys)
    need = [*SPECULATIVE_KEYS, *KNOB_KEYS, *(PRM_KEYS if verifier != "target" else ())]
    for key in need:
        if v[key] is None:
            raise SpecError(path, key, f"missing key (a speculative design with verifier "
                            f"{verifier!r} needs it)")
    if v["colocate"] is not None:
        roles = v["colocate"].split("+")
        if verifier == "target" and "prm" in roles:
            raise SpecError(path, "colocate", "with verifier = \"target\" the target is the "
                            "verifier; name draft+target")
        devices = {r: (v["target_device"] if r == "prm" and verifier == "target"
                       else v[f"{r}_device"]) for r in roles}
        if len(set(devices.values())) > 1:
            raise SpecError(path, "colocate", "colocated roles must name the same device, got "
                            + ", ".join(f"{r}_device = {d!r}" for r, d in devices.items()))
        # one device, one host: a role's own host CPU must be its group's
        hosts = {r: v[f"{r}_host_cpu_slowdown"] for r in roles
                 if not (r == "prm" and verifier == "target")}
        if len(set(hosts.values())) > 1:
            later = next(r for r in reversed(list(hosts)) if hosts[r] is not None)
            raise SpecError(path, f"{later}_host_cpu_slowdown", "colocated roles share one "
                            "device and so one host CPU; give them the same host_cpu_slowdown "
                            "(or none: the board's), got " + ", ".join(
                                f"{r}_host_cpu_slowdown = {hosts[r]!r}" for r in hosts))


WIDTH_KEYS: tuple[str, ...] = ("samples", "beam_width", "aggregation")


def _check_width(path: object, v: dict[str, Any], workflow: str) -> None:
    """A width design: `samples` N; a PRM (its keys) unless it votes by majority; beam_width
    for beam only, within 1..N and dividing N; no colocation (one policy, one PRM, each on its
    own device(s))."""
    if v["samples"] is None:
        raise SpecError(path, "samples", f"missing key (a {workflow} design needs its samples "
                        f"per problem, 1-{MAX_SAMPLES})")
    n = v["samples"]
    if workflow == "beam":
        b = v["beam_width"]
        if b is None:
            raise SpecError(path, "beam_width", "missing key (a beam design keeps beam_width "
                            "beams, 1..samples)")
        if b > n:
            raise SpecError(path, "beam_width", f"{b} beams cannot be kept from {n} candidates "
                            "per step; at most samples")
        if n % b:
            raise SpecError(path, "beam_width", f"must divide samples ({n}): each of the {b} "
                            "kept beams expands samples / beam_width candidates")
    elif v["beam_width"] is not None:
        raise SpecError(path, "beam_width", f"only a beam design keeps beams; a {workflow} "
                        "design has none")
    if v["colocate"] is not None:
        raise SpecError(path, "colocate", "a width design places the policy and its PRM each on "
                        "its own device(s); remove the key")
    if workflow == "majority":
        for key in (*PRM_KEYS, "aggregation", "prm_tp"):
            if v[key] is not None:
                raise SpecError(path, key, "majority voting has no verifier (no PRM keys); "
                                "remove the key or choose a PRM method (best-of-n, ...)")
        return
    for key in PRM_KEYS:
        if v[key] is None:
            raise SpecError(path, key, f"missing key (a {workflow} design's PRM needs it)")


register_kind("workload", WorkloadSpec, check=_check_workload)
register_kind("system", SystemSpec, check=_check_system)
