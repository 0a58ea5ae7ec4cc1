"""`host/scheduler.yaml`: the host scheduler's parameters.

RSD's vocabulary first (main_online.py: prm_threshold, step_word, max_steps,
max_tokens_per_call, the three endpoints), then what HeteroReason adds: backtracking
(threshold, budget per problem, window), step-ahead speculation with target prefetch, shadow
synchronisation, and where the draft runs. Values are the design's; see
shared/reference/build-and-host-formats.md 5 and 6.7.

Where the target verifies (SpecReason), RSD's PRM keys give way to a `judge` section: the
target scores each draft step with one token 0-9 (a judge call: max_tokens 1, temperature 0,
the score token's logprobs), accepted when the score >= SpecReason's k = the accept threshold
x 10, rounded half up (dse.model.verifiers: a score floor(10 u) >= k is u >= k / 10). Servers that
share a GPU are listed with their CUDA_VISIBLE_DEVICES under `gpus`. A target-only design's
file is a plain generation: the target's endpoint and the sampling settings, nothing else.
"""

from __future__ import annotations

import math
from typing import Any

from dse.exporters.exporter import ExportContext, ExportFile, Rendered
from dse.exporters.memory import DraftEngine
from dse.exporters.vitis import xclbin_name
from dse.exporters.vllm import SEED, endpoint, gpu_indices, memory_splits, pooled
from dse.model.design import Design
from dse.model.workflow import max_steps
from dse.specs.emit import yaml_text
from dse.specs.scenario import WorkloadSpec

STEP_WORD = "\n\n"  # RSD's --step_word default; the drafts stop at it
RSD_MAX_STEPS = 100  # RSD's --max_steps default
# Qwen2.5-Math-PRM scores the token <extra_0> placed after each step (model card; vLLM 0.9.2's
# STEP pooler default step_tag_id 151651 is that token).
PRM_STEP_TAGS = {"Qwen/Qwen2.5-Math-PRM-7B": "<extra_0>"}
PURPOSE = "host scheduler: thresholds, backtracking, step-ahead, endpoints"
PLAIN_PURPOSE = "host: plain generation with the target (a target-only design)"
TARGET_ONLY_NOTE = ("target-only design: the target writes the whole answer in one "
                    "generation; no draft, no verifier, no thresholds, so only the target's "
                    "server")
# SpecReason's judge call (build-and-host-formats.md 5): one score token at temperature 0,
# read from its logprobs; the top 10 cover every digit (vLLM 0.9.2 allows up to max-logprobs,
# default 20).
JUDGE_LOGPROBS = 10
JUDGE_SCORE_MAX = 9


def render(ctx: ExportContext) -> Rendered:
    """The exporter "host": host/scheduler.yaml, for every design."""
    design = ctx.design
    if design.is_width:
        from dse.exporters.width_host import PURPOSE as WIDTH_PURPOSE
        from dse.exporters.width_host import WIDTH_NOTE, width_yaml

        tag = (PRM_STEP_TAGS.get(design.prm.model.hf_id) if design.prm_placement is not None
               else None)
        verifier = ("the PRM's server scores them in one batch" if design.prm_placement
                    is not None else "majority voting: no verifier, no PRM server")
        return Rendered(files=(ExportFile("host/scheduler.yaml", width_yaml(
            design, ctx.workload, ctx.version, tag), WIDTH_PURPOSE),),
            notes=(WIDTH_NOTE.format(n=design.samples, verifier=verifier),))
    if not design.is_speculative:
        return Rendered(files=(ExportFile("host/scheduler.yaml", plain_yaml(
            design, ctx.workload, ctx.version), PLAIN_PURPOSE),), notes=(TARGET_ONLY_NOTE,))
    fd = ctx.fpga_draft
    gpus = {r.value: g for r, g in gpu_indices(design).items()} if memory_splits(
        ctx.cat, design) else None
    text = scheduler_yaml(design, ctx.workload, fd.engine if fd else None,
                          fd.build_dir if fd else None, ctx.version, gpus)
    notes: list[str] = []
    t = design.accept_threshold
    if design.verifier.is_target and not math.isclose(judge_k(t), 10 * t):
        notes.append(f"accept threshold {t:g} is not a multiple of 0.1: the judge's "
                     f"score_threshold {judge_k(t)} accepts a latent score >= "
                     f"{judge_k(t) / 10:g} instead")
    return Rendered(files=(ExportFile("host/scheduler.yaml", text, PURPOSE),),
                    notes=tuple(notes))


def judge_k(threshold: float) -> int:
    """SpecReason's score threshold k (0-9 scale) for an accept threshold on [0, 1]: 10 x the
    threshold, rounded half up (0.7 -> 7)."""
    return math.floor(10 * threshold + 0.5)


def plain_yaml(design: Design, workload: WorkloadSpec, version: str) -> str:
    """host/scheduler.yaml of a target-only design: one generation call per problem."""
    data: dict[str, Any] = {
        "workflow": design.workflow,
        "max_tokens_per_call": design.max_context_tokens,
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": SEED,
        "batch_size": 1,
        "endpoints": {"target": endpoint("target")},
    }
    comments = {
        "workflow": "the target writes the whole answer: no draft, no verifier",
        "max_tokens_per_call": "generation budget, prompt + response (RSD: 4096)",
    }
    header = "\n".join([
        f"scheduler.yaml: generated by hetero-dse {version} for design {design.name} "
        f"(target-only, workload {workload.name}).",
        "Plain generation with the target: RSD's sampling settings, no speculation.",
    ])
    return yaml_text(data, header, comments)


def scheduler_yaml(design: Design, workload: WorkloadSpec, eng: DraftEngine | None,
                   board_dir: str | None, version: str,
                   gpus: dict[str, str] | None = None) -> str:
    """A speculative design's host/scheduler.yaml; `gpus` (role -> CUDA_VISIBLE_DEVICES) is
    written where servers share a GPU."""
    s = design.schedule
    w = workload
    judge = design.verifier.is_target
    cap = max_steps(w, design.max_context_tokens,
                    min(w.draft_step_tokens_mean, w.target_step_tokens_mean))
    data: dict[str, Any] = {"schedule": s.name}
    if judge:
        data["verifier"] = design.verifier.name
    else:
        data["prm_threshold"] = design.accept_threshold
    data["step_word"] = STEP_WORD
    tag = None if judge else PRM_STEP_TAGS.get(design.prm.model.hf_id)
    if tag:
        data["prm_step_tag"] = tag
    data.update({
        "max_steps": max(RSD_MAX_STEPS, cap),
        "max_tokens_per_call": design.max_context_tokens,
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": SEED,
        "batch_size": 1,
        "backtracking": s.backtracking,
        "backtrack_threshold": design.backtrack_threshold,
        "max_backtracks": design.max_backtracks,
        "backtrack_window": design.backtrack_window,
        "step_ahead": s.step_ahead,
        "shadow_sync": s.shadow_sync,
        "target_prefetch_cache_size": 1 if s.step_ahead else 0,
    })
    endpoints: dict[str, Any] = {}
    if eng is None:
        endpoints["draft"] = endpoint("draft")
    endpoints["target"] = endpoint("target")
    if not judge:
        endpoints["prm"] = endpoint("prm", design.prm.model.head)
    data["endpoints"] = endpoints
    if judge:
        data["judge"] = {
            "endpoint": endpoint("target"),
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": JUDGE_LOGPROBS,
            "score_min": 0,
            "score_max": JUDGE_SCORE_MAX,
            "score_threshold": judge_k(design.accept_threshold),
            "backtrack_score_threshold": judge_k(design.backtrack_threshold),
        }
    if gpus:
        data["gpus"] = gpus
    draft: dict[str, Any] = {"model": design.draft.model.hf_id,
                             "device": design.draft.device.name,
                             "kind": "fpga" if eng is not None else "gpu"}
    if eng is not None:
        xclbin = xclbin_name(eng)
        draft.update({
            "build_dir": board_dir or "",
            "xclbin": f"{board_dir}/{xclbin}" if xclbin else None,
            "clock_mhz": eng.build.clock_hz / 1e6,
            "projection_only": xclbin is None,
            "prompt_prefill": "target-gpu-kv-migration",
        })
    data["draft"] = draft
    comments = {
        "prm_threshold": "accept a draft step when its PRM score >= this (RSD)",
        "step_word": "step separator: the draft and target stop at it (RSD)",
        "max_steps": f"RSD's default {RSD_MAX_STEPS}, or more if the budget allows more steps",
        "max_tokens_per_call": "generation budget, prompt + response (RSD: 4096)",
        "backtrack_threshold": "a rewrite scoring below this triggers a backtrack",
        "max_backtracks": "per problem",
        "backtrack_window": "steps back an anchor may lie",
        "step_ahead": "draft speculates the next step during verification; target prefetches",
        "shadow_sync": "draft absorbs target tokens as they stream",
        "target_prefetch_cache_size": "prefetched target steps kept (the step under "
                                      "verification)",
        "endpoints.prm": ("POST /pooling; score = data[0].data[-1][1]"
                          if judge or pooled("prm", design.prm.model.head)
                          else "POST /v1/completions with prompt_logprobs: the PRM scores "
                          "with its LM head (see the manifest note)"),
        "draft.prompt_prefill": "a GPU prefills the prompt, its KV cache moves to the FPGA",
    }
    if judge:
        comments.update({
            "verifier": "the target judges each draft step with one score token (SpecReason)",
            "backtrack_threshold": "judge.backtrack_score_threshold on the judge's 0-9 scale",
            "judge.endpoint": "the target's server: its prefix cache holds every step",
            "judge.max_tokens": "one score token, 0-9",
            "judge.logprobs": "the score token's top logprobs (every digit)",
            "judge.score_threshold": "SpecReason's k: accept a draft step when its score >= "
                                     f"k (10 x accept threshold {design.accept_threshold:g}, "
                                     "rounded half up)",
            "judge.backtrack_score_threshold": "a rewrite scoring below this triggers a "
                                               "backtrack",
        })
    if gpus:
        comments["gpus"] = ("CUDA_VISIBLE_DEVICES of each server; servers with the same GPUs "
                            "share them (static memory split, gpu/vllm_*.yaml)")
    if tag:
        comments["prm_step_tag"] = "appended after each step in the PRM input"
    header = "\n".join([
        f"scheduler.yaml: generated by hetero-dse {version} for design {design.name} "
        f"(schedule {s.name}, workload {w.name}).",
        "Host scheduler parameters: RSD's names, plus HeteroReason's backtracking, "
        "step-ahead and shadow sync.",
    ])
    return yaml_text(data, header, comments)
