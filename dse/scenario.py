"""Workloads and systems: the two scenario kinds of the catalog (scenarios/).

A workload is a dataset's statistics: prompt length, steps per problem, tokens per step, how the
PRM scores good and bad steps, and each model's solo accuracy on it (from which the per-step
error rate follows). A system places the draft, PRM and target on devices with their models,
precisions and serving profiles, and holds the algorithm knobs' defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dse.specs import Key, Spec, _nonneg, _pos, register_kind


@dataclass(frozen=True)
class WorkloadSpec(Spec):
    dataset: str
    prompt_tokens: float  # chat-templated prompt seen by draft and target
    problem_tokens: float  # prefix the PRM reads before the steps
    steps_mean: float  # committed steps per problem (forward-only run)
    steps_cv: float
    draft_step_tokens_mean: float
    draft_step_tokens_cv: float
    target_step_tokens_mean: float
    target_step_tokens_cv: float
    prm_good_alpha: float  # PRM score of a good step ~ Beta(alpha, beta)
    prm_good_beta: float
    prm_bad_alpha: float  # PRM score of a bad step ~ Beta(alpha, beta)
    prm_bad_beta: float
    error_nesting: float  # 1: a step the stronger model gets wrong, the weaker gets wrong too
    max_context_tokens: int  # generation budget (prompt + response), RSD: 4096
    accuracy: Mapping[str, float]  # model name -> solo greedy accuracy, percent

    kind = "workload"


@dataclass(frozen=True)
class SystemSpec(Spec):
    draft_model: str
    prm_model: str
    target_model: str
    draft_device: str
    prm_device: str
    target_device: str
    target_tp: int
    draft_precision: str
    prm_precision: str
    target_precision: str
    draft_serving: str  # GPU serving profile, or the FPGA engine when the draft is on an FPGA
    prm_serving: str
    target_serving: str
    fpga_clock_hz: float  # 0: the board's default
    fpga_memory_channels: int  # 0: every channel
    fpga_mac_lanes: int  # 0: the engine's default
    accept_threshold: float
    backtrack_threshold: float
    max_backtracks: int
    backtrack_window: int
    max_context_tokens: int
    prm_tp: int | None  # GPUs the PRM is split over (tensor parallel); absent: 1

    kind = "system"


# A generation budget beyond any model's positions (the longest in the catalog is 131072);
# the bound keeps the step arrays of the evaluators allocatable.
MAX_CONTEXT_TOKENS = 10_000_000
# Coefficients of variation of step counts and lengths: past ~100 the lognormal's sigma
# overflows the quadrature (cv 1e308 gave NaN metrics); real workloads sit below 2.
MAX_CV = 100.0


def _accuracy_key() -> Key:
    return Key("accuracy", "accuracy", dict, lo=0.0, hi=100.0)


register_kind(
    "workload",
    WorkloadSpec,
    (
        Key("dataset", "dataset", str),
        _pos("prompt_tokens", "prompt_tokens"),
        _pos("problem_tokens", "problem_tokens"),
        Key("steps_mean", "steps_mean", float, lo=1.0),
        _nonneg("steps_cv", "steps_cv", hi=MAX_CV),
        _pos("draft_step_tokens_mean", "draft_step_tokens_mean"),
        _nonneg("draft_step_tokens_cv", "draft_step_tokens_cv", hi=MAX_CV),
        _pos("target_step_tokens_mean", "target_step_tokens_mean"),
        _nonneg("target_step_tokens_cv", "target_step_tokens_cv", hi=MAX_CV),
        _pos("prm_good_alpha", "prm_good_alpha"),
        _pos("prm_good_beta", "prm_good_beta"),
        _pos("prm_bad_alpha", "prm_bad_alpha"),
        _pos("prm_bad_beta", "prm_bad_beta"),
        Key("error_nesting", "error_nesting", float, lo=0.0, hi=1.0),
        _pos("max_context_tokens", "max_context_tokens", int, hi=MAX_CONTEXT_TOKENS),
        _accuracy_key(),
    ),
)

register_kind(
    "system",
    SystemSpec,
    (
        Key("draft_model", "draft_model", str),
        Key("prm_model", "prm_model", str),
        Key("target_model", "target_model", str),
        Key("draft_device", "draft_device", str),
        Key("prm_device", "prm_device", str),
        Key("target_device", "target_device", str),
        _pos("target_tp", "target_tp", int),
        Key("draft_precision", "draft_precision", str),
        Key("prm_precision", "prm_precision", str),
        Key("target_precision", "target_precision", str),
        Key("draft_serving", "draft_serving", str),
        Key("prm_serving", "prm_serving", str),
        Key("target_serving", "target_serving", str),
        _nonneg("fpga_clock_MHz", "fpga_clock_hz"),
        _nonneg("fpga_memory_channels", "fpga_memory_channels", int),
        _nonneg("fpga_mac_lanes", "fpga_mac_lanes", int),
        Key("accept_threshold", "accept_threshold", float, lo=0.0, hi=1.0),
        Key("backtrack_threshold", "backtrack_threshold", float, lo=0.0, hi=1.0),
        _nonneg("max_backtracks", "max_backtracks", int),
        _pos("backtrack_window", "backtrack_window", int),
        _pos("max_context_tokens", "max_context_tokens", int, hi=MAX_CONTEXT_TOKENS),
        _pos("prm_tp", "prm_tp", int, optional=True, hi=64),
    ),
)
