"""The verifier seam: what scores a draft's step, what scoring costs, and how scores fall.

A speculative design's verifier is one of the registered kinds (`VERIFIERS`), each implementing
`Verifier`:
- `prm`: a process reward model on its own placement (RSD, HeteroReason). vLLM 0.9.2 serves it
  as a pooling model without prefix caching, so every call re-reads the problem and every step so
  far and scores every position (a prefill).
- `target`: the target model judges the draft's step (SpecReason): it prefills the new step and a
  short scoring instruction after its cached prefix and samples one score token, 0-9, from that
  prefill's last logits (vLLM serves a max_tokens=1 request from the prefill pass: no decode
  step). Its prefix cache then holds every step, so a rewrite after a reject prefills nothing
  new (SpecReason serves the target with prefix caching on), and it runs on the target's
  placement, so it shares the target's device (dse.model.design: colocated roles serialise).

Scores: a good step's score ~ Beta(a_g, b_g), a bad step's ~ Beta(a_b, b_b) on [0, 1]; a step is
accepted when its score >= the accept threshold (dse.model.workflow). The distributions depend on
the design: `Verifier.scores(w, draft, target, model)`. A PRM's follow its draft and its own
identity on the dataset (dse.model.discrimination: the draft's solo accuracy, the PRM's ProcessBench
F1 at the dataset's difficulty); a target judge's 0-9 token is floor(10 u) of a
latent u on [0, 1], so SpecReason's threshold k is an accept threshold of k / 10 (its default 7
is 0.7). The judge's latent u ~ Beta(mu kappa, (1 - mu) kappa) per class, both means lowered by
shift x the draft's relative error x = 1 - A_draft / A_target (solo accuracies on the workload):
a judge rejects more of a weaker draft's steps, good or bad (`judge_means`; fitted by
scripts/calibrate_target_judge.py, dse/validation/judge.py). A draft at least as accurate as the
target has x = 0 (x is clipped at 0: the fit saw only weaker drafts, x 0.06-0.85).

Adding a kind: a class implementing `Verifier` and one `VERIFIERS.register(...)` line;
tests/test_workflows.py runs every registered kind through one conformance suite.
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
from dse.errors import SpecError, UnknownNameError
from dse.model.discrimination import ScoreStats, prm_scores
from dse.specs.model import ModelSpec
from dse.specs.scenario import WorkloadSpec, solo_accuracy_pct

F64 = NDArray[np.float64]
JUDGE_DATA = Path(__file__).parents[1] / "data" / "target_judge.toml"
JUDGE_SCHEMA_VERSION = 2
# Declared ranges of the judge's latent score means (the fit's bounds, the clip of a shifted
# mean) and of its shift: a good step's mean stays above 0.5 (a judge that prefers good steps)
# and below 0.999 (Beta(mu kappa, (1 - mu) kappa) keeps (1 - mu) kappa > 0); a bad step's
# within 0.02-0.99; the shift within -1 to 2 per unit of relative error (the fit's bounds).
GOOD_MEAN_RANGE = (0.5, 0.999)
BAD_MEAN_RANGE = (0.02, 0.99)
SHIFT_RANGE = (-1.0, 2.0)


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

    def scores(self, w: WorkloadSpec, draft: str, target: str,
               model: ModelSpec | None = None) -> ScoreStats:
        """The score distributions of good and bad steps of this draft (catalog model name)
        before this target on this workload; model: the verifier's own model (a PRM's spec;
        None where the target verifies)."""
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

    def scores(self, w: WorkloadSpec, draft: str, target: str,
               model: ModelSpec | None = None) -> ScoreStats:
        """This PRM's discrimination of this draft's steps on this workload
        (dse.model.discrimination: the draft's solo accuracy there, the PRM's ProcessBench F1 at the
        dataset's difficulty); the target does not enter."""
        return prm_scores(w, draft, model)

    def serving_notes(self) -> tuple[str, ...]:
        return ("the PRM is served as a pooling model (--task reward), prefix caching off",)


def relative_error(draft_accuracy_pct: float, target_accuracy_pct: float) -> float:
    """The draft's relative error x = 1 - A_draft / A_target (solo accuracies, percent),
    clipped at 0: a draft at least as accurate as the target (or a target at 0%) gives 0.
    E.g. 28.5% before 70.8%: 0.597."""
    if target_accuracy_pct <= 0:
        return 0.0
    return max(0.0, 1.0 - draft_accuracy_pct / target_accuracy_pct)


def judge_means(good_mean: float, bad_mean: float, shift: float, x: float
                ) -> tuple[float, float]:
    """(mu_good, mu_bad) of the judge's latent scores at relative error x: both means lowered
    by shift x max(x, 0), each clipped to its declared range (GOOD_MEAN_RANGE, BAD_MEAN_RANGE).
    E.g. 0.95, 0.85, shift 0.3, x 0.5: (0.80, 0.70); 0.999, 0.894, 0.278, x -0.2: (0.999,
    0.894)."""
    dx = shift * max(float(x), 0.0)
    return (float(np.clip(good_mean - dx, *GOOD_MEAN_RANGE)),
            float(np.clip(bad_mean - dx, *BAD_MEAN_RANGE)))


def judge_score_stats(kappa: float, good_mean: float, bad_mean: float, shift: float, x: float,
                      basis: str) -> ScoreStats:
    """Beta(mu kappa, (1 - mu) kappa) for good and bad steps at relative error x
    (`judge_means`): the one computation the fit (dse.validation.judge.Params) and the tool
    (TargetJudge.scores) share."""
    g, b = judge_means(good_mean, bad_mean, shift, x)
    return ScoreStats(g * kappa, (1 - g) * kappa, b * kappa, (1 - b) * kappa, basis)


@dataclass(frozen=True)
class JudgeParameters:
    """The target judge's data (dse/data/target_judge.toml): the scoring instruction's length
    (tokens), the latent scores' concentration kappa, the good-step and bad-step means of a
    draft as accurate as the target, their shift per unit of the draft's relative error, and
    each one's source."""

    prompt_tokens: float
    kappa: float
    good_mean: float
    bad_mean: float
    shift: float
    sources: Mapping[str, str]


JUDGE_RANGES: Mapping[str, tuple[float, float]] = {
    "prompt_tokens": (0.0, 4096.0), "kappa": (1e-3, 1e4), "good_mean": GOOD_MEAN_RANGE,
    "bad_mean": BAD_MEAN_RANGE, "shift": SHIFT_RANGE}


def parse_judge(text: str, path: object = JUDGE_DATA) -> JudgeParameters:
    """The judge file, strictly: schema_version JUDGE_SCHEMA_VERSION, exactly the keys of
    JUDGE_RANGES under [judge], each a number in its range, and a source for each of them."""
    data = tomllib.loads(text)
    if data.get("schema_version") != JUDGE_SCHEMA_VERSION:
        raise SpecError(path, "schema_version", f"expected {JUDGE_SCHEMA_VERSION}, got "
                        f"{data.get('schema_version')!r}")
    unknown = sorted(set(data) - {"schema_version", "judge", "sources"})
    if unknown:
        raise SpecError(path, unknown[0], "unknown key; valid: schema_version, judge, sources")
    table = data.get("judge", {})
    sources = data.get("sources", {})
    for key in sorted(set(table) | set(JUDGE_RANGES)):
        if key not in JUDGE_RANGES:
            raise SpecError(path, f"judge.{key}", f"unknown key; valid: "
                            f"{', '.join(JUDGE_RANGES)}")
        v = table.get(key)
        lo, hi = JUDGE_RANGES[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
            raise SpecError(path, f"judge.{key}", f"expected a number in [{lo:g}, {hi:g}], "
                            f"got {v!r}")
        if not isinstance(sources.get(key), str) or not sources[key]:
            raise SpecError(path, f"sources.{key}", "missing: say what the value rests on")
    return JudgeParameters(float(table["prompt_tokens"]), float(table["kappa"]),
                           float(table["good_mean"]), float(table["bad_mean"]),
                           float(table["shift"]), {str(k): str(v) for k, v in sources.items()})


@cache
def judge_parameters() -> JudgeParameters:
    """dse/data/target_judge.toml (read once)."""
    return parse_judge(JUDGE_DATA.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class TargetJudge:
    name: str = "target"
    description: str = ("the target judges each draft step: it prefills the step and a scoring "
                        "instruction after its cached prefix and samples one 0-9 score token "
                        "from that prefill's last logits (SpecReason)")
    is_target: bool = True

    def score_s(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        """The prefill of the n-token step and the scoring instruction after the cached
        prompt and resp response tokens: vLLM samples a max_tokens=1 request's token from the
        prefill pass's last logits, so no decode step follows (SpecReason sec. 4.1: a
        verification costs about as much as decoding 1-2 tokens)."""
        ctx = w.prompt_tokens + np.asarray(resp, dtype=float)
        new = np.asarray(n, dtype=float) + judge_parameters().prompt_tokens
        return p.prefill_s(new, ctx)

    def score_dyn_w(self, p: Placement, w: WorkloadSpec, n: ArrayLike, resp: ArrayLike) -> F64:
        new = np.asarray(n, dtype=float) + judge_parameters().prompt_tokens
        return p.power_w("prefill", 0, n_new=new) - p.power_w("idle")

    def scores(self, w: WorkloadSpec, draft: str, target: str,
               model: ModelSpec | None = None) -> ScoreStats:
        """The fitted judge (target_judge.toml) at this pair's relative error on the workload,
        x = 1 - A_draft / A_target, clipped at 0 (a draft stronger than the target is judged
        as one equal to it). A model without a solo accuracy on the workload is a SpecError."""
        j = judge_parameters()
        a_d, a_t = solo_accuracy_pct(w, draft), solo_accuracy_pct(w, target)
        x = relative_error(a_d, a_t)
        g, b = judge_means(j.good_mean, j.bad_mean, j.shift, x)
        return judge_score_stats(
            j.kappa, j.good_mean, j.bad_mean, j.shift, x,
            f"target judge fitted to SpecReason rows (target_judge.toml): {draft} "
            f"({a_d:g}%) before {target} ({a_t:g}%) on {w.name}, x = {x:.3f}: mu_good "
            f"{g:.3f}, mu_bad {b:.3f}")

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
