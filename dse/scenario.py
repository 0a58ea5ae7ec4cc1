"""Workloads and systems: the two scenario kinds of the catalog (scenarios/).

A workload is a dataset's statistics: prompt length, steps per problem, tokens per step, how the
PRM scores good and bad steps, and each model's solo accuracy on it (from which the per-step
error rate follows). A system places the draft, PRM and target on devices with their models,
precisions and serving profiles (the draft's FPGA engine when it runs on an FPGA), and holds the
algorithm knobs' defaults. Each field carries its schema (`dse.specs.spec_field`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dse.limits import (
    MAX_BACKTRACK_WINDOW,
    MAX_BACKTRACKS,
    MAX_CONTEXT_TOKENS,
    MAX_CV,
    MAX_IN_CHAIN_ERROR_FACTOR,
    MAX_TP,
)
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
    prm_good_alpha: float = pos(help="PRM score of a good step ~ Beta(alpha, beta)")
    prm_good_beta: float = pos()
    prm_bad_alpha: float = pos(help="PRM score of a bad step ~ Beta(alpha, beta)")
    prm_bad_beta: float = pos()
    error_nesting: float = spec_field(lo=0.0, hi=1.0, help="1: a step the stronger model "
                                      "gets wrong, the weaker gets wrong too")
    max_context_tokens: int = pos(hi=MAX_CONTEXT_TOKENS,
                                  help="generation budget (prompt + response), RSD: 4096")
    accuracy: Mapping[str, float] = spec_field(lo=0.0, hi=100.0,
                                               help="model name -> solo greedy accuracy, %")
    in_chain_error_factor: Mapping[str, float] | None = spec_field(
        lo=0.0, lo_open=True, hi=MAX_IN_CHAIN_ERROR_FACTOR,
        help="'<draft> -> <target>' -> the target's rewrite error inside that draft's chain, "
        "relative to its solo-accuracy form (1: as solo); fitted to Table III, absent: 1")

    kind = "workload"


@dataclass(frozen=True)
class SystemSpec(Spec):
    draft_model: str = spec_field(help="catalog model name, or a model TOML / config.json path")
    prm_model: str = spec_field()
    target_model: str = spec_field()
    draft_device: str = spec_field(help="a GPU or an FPGA board")
    prm_device: str = spec_field(help="a GPU")
    target_device: str = spec_field(help="a GPU")
    target_tp: int = pos(hi=MAX_TP, help="GPUs the target is split over (tensor parallel)")
    draft_precision: str = spec_field()
    prm_precision: str = spec_field()
    target_precision: str = spec_field()
    draft_serving: str | None = spec_field(
        help="the draft's GPU serving profile (a GPU draft; absent: vllm-cudagraph)")
    draft_engine: str | None = spec_field(
        help="the draft's FPGA engine (an FPGA draft; absent: flexllm)")
    prm_serving: str = spec_field()
    target_serving: str = spec_field()
    fpga_clock_hz: float | None = pos("fpga_clock_MHz", legacy_zero=True,
                                      help="FPGA build clock; absent: the board's default")
    fpga_memory_channels: int | None = pos(legacy_zero=True,
                                           help="memory channels used; absent: all of them")
    fpga_mac_lanes: int | None = pos(legacy_zero=True,
                                     help="INT8 MACs per cycle; absent: the engine's default")
    accept_threshold: float = spec_field(lo=0.0, hi=1.0)
    backtrack_threshold: float = spec_field(lo=0.0, hi=1.0)
    max_backtracks: int = nonneg(hi=MAX_BACKTRACKS,
                                 help="backtracks a problem may take (0: forward only)")
    backtrack_window: int = pos(hi=MAX_BACKTRACK_WINDOW,
                                help="how many steps back a backtrack's anchor may be")
    max_context_tokens: int = pos(hi=MAX_CONTEXT_TOKENS)
    prm_tp: int | None = pos(hi=MAX_TP, help="GPUs the PRM is split over (tensor parallel); "
                             "absent: 1")

    kind = "system"


register_kind("workload", WorkloadSpec)
register_kind("system", SystemSpec)
