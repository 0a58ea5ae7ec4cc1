"""The verifier seam: what scores a draft's step, what scoring costs, and how scores fall.

A speculative design's verifier is one of the registered kinds (`VERIFIERS`), each implementing
`Verifier`:
- `prm`: a process reward model on its own placement (RSD, HeteroReason). vLLM 0.9.2 serves it
  as a pooling model without prefix caching, so every call re-reads the problem and every step so
  far and scores every position (a prefill).
- `target`: the target model judges the draft's step (SpecReason): it prefills the new step and a
  short scoring instruction after its cached prefix, and decodes one score token, 0-9. Its prefix
  cache then holds every step, so a rewrite after a reject prefills nothing new (SpecReason
  serves the target with prefix caching on), and it runs on the target's placement, so it shares
  the target's device (dse.design: colocated roles serialise).

Scores: a good step's score ~ Beta(a_g, b_g), a bad step's ~ Beta(a_b, b_b) on [0, 1]; a step is
accepted when its score >= the accept threshold (dse.workflow). A PRM's score is that number; a
target judge's 0-9 token is floor(10 u) of a latent u on [0, 1], so SpecReason's threshold k is
an accept threshold of k / 10 (its default 7 is 0.7).

Adding a kind: a class implementing `Verifier` and one `VERIFIERS.register(...)` line;
tests/test_verifiers.py runs every registered kind through one conformance suite.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.devices.protocol import Placement
from dse.errors import UnknownNameError
from dse.scenario import WorkloadSpec

F64 = NDArray[np.float64]
JUDGE_DATA = Path(__file__).parent / "data" / "target_judge.toml"


@dataclass(frozen=True)
class ScoreStats:
    """How a verifier scores good and bad steps (Beta parameters on [0, 1]) and what that
    rests on (a one-line basis for the provenance)."""

    good_alpha: float
    good_beta: float
    bad_alpha: float
    bad_beta: float
    basis: str


class Verifier(Protocol):
    """A verifier kind. Times in seconds, power in W above idle; token counts broadcast."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def is_target(self) -> bool:
        """The verifier is the target model on the target's placement."""
        ...

    def score_s(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        """Score a step of n tokens written after resp committed response tokens."""
        ...

    def score_dyn_w(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        """Power above idle while scoring that step."""
        ...

    def scores(self, w: WorkloadSpec) -> ScoreStats:
        """The score distributions of good and bad steps on this workload."""
        ...

    def serving_notes(self) -> tuple[str, ...]:
        """What serving it needs (the export's notes)."""
        ...


@dataclass(frozen=True)
class PrmVerifier:
    name: str = "prm"
    description: str = ("a process reward model scores each step (prefill of the whole "
                        "context, every position; no prefix caching: vLLM 0.9.2 pooling)")
    is_target: bool = False

    def _tokens(self, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        # problem + all steps + the new step, every call (no prefix caching for a pooling model)
        return np.asarray(w.problem_tokens + np.asarray(resp) + np.asarray(n), dtype=float)

    def score_s(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        return p.prefill_s(self._tokens(w, n, resp), 0, all_positions=True)

    def score_dyn_w(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        return p.power_w("prefill", 0, n_new=self._tokens(w, n, resp)) - p.power_w("idle")

    def scores(self, w: WorkloadSpec) -> ScoreStats:
        return ScoreStats(w.prm_good_alpha, w.prm_good_beta, w.prm_bad_alpha, w.prm_bad_beta,
                          f"PRM score distributions of workload {w.name}")

    def serving_notes(self) -> tuple[str, ...]:
        return ("the PRM is served as a pooling model (--task reward), prefix caching off",)


@dataclass(frozen=True)
class JudgeParameters:
    """The target judge's data (dse/data/target_judge.toml): the scoring instruction's length
    and the latent score distributions, each with its source."""

    prompt_tokens: float
    good_alpha: float
    good_beta: float
    bad_alpha: float
    bad_beta: float
    sources: Mapping[str, str]


@cache
def judge_parameters() -> JudgeParameters:
    data = tomllib.loads(JUDGE_DATA.read_text(encoding="utf-8"))
    p = data["judge"]
    return JudgeParameters(float(p["prompt_tokens"]), float(p["good_alpha"]),
                           float(p["good_beta"]), float(p["bad_alpha"]), float(p["bad_beta"]),
                           dict(data.get("sources", {})))


@dataclass(frozen=True)
class TargetJudge:
    name: str = "target"
    description: str = ("the target judges each draft step: it prefills the step and a scoring "
                        "instruction after its cached prefix and decodes one 0-9 score token "
                        "(SpecReason)")
    is_target: bool = True

    def score_s(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        ctx = w.prompt_tokens + np.asarray(resp, dtype=float)
        new = np.asarray(n, dtype=float) + judge_parameters().prompt_tokens
        return p.prefill_s(new, ctx) + p.decode_s(1, ctx + new)

    def score_dyn_w(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        new = np.asarray(n, dtype=float) + judge_parameters().prompt_tokens
        return p.power_w("prefill", 0, n_new=new) - p.power_w("idle")

    def scores(self, w: WorkloadSpec) -> ScoreStats:
        j = judge_parameters()
        return ScoreStats(j.good_alpha, j.good_beta, j.bad_alpha, j.bad_beta,
                          j.sources.get("scores", "target judge score distributions"))

    def serving_notes(self) -> tuple[str, ...]:
        return ("the target also judges: served with prefix caching on (a judge call "
                "prefills only the new step), max_tokens=1 with logprobs for the score",)


class VerifierRegistry(Mapping[str, Verifier]):
    """Verifier kinds by name; an unknown name lists the valid ones, a duplicate raises."""

    def __init__(self) -> None:
        self._kinds: dict[str, Verifier] = {}

    def register(self, v: Verifier) -> Verifier:
        if v.name in self._kinds:
            raise ValueError(f"verifier kind {v.name!r} is already registered")
        self._kinds[v.name] = v
        return v

    def __getitem__(self, name: str) -> Verifier:
        try:
            return self._kinds[name]
        except KeyError:
            raise UnknownNameError("verifier", name, list(self._kinds)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)


VERIFIERS = VerifierRegistry()
VERIFIERS.register(PrmVerifier())
VERIFIERS.register(TargetJudge())
