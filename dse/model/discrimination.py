"""How a process reward model scores a draft's steps: its discrimination, for the design's own
draft, PRM and dataset.

A PRM's score of a good step ~ Beta(mu_g kappa, (1 - mu_g) kappa), of a bad step
~ Beta(mu_b kappa, (1 - mu_b) kappa) on [0, 1] (dse.model.workflow turns them into acceptance and
accuracy). The bad-step mean is where discrimination lives, and it follows two published,
physically meaningful quantities of the design (never the workload file's numbers, which are
the dataset's alone):

    mu_b = c0 + c_draft (1 - A_draft / 100) + c_prm (1 - F1_prm / 100)       (clipped 0.02-0.99)

- A_draft: the design's draft's published solo accuracy on the dataset. On material hard for
  the draft its mistakes look more like good steps (ProcessBench, arXiv:2412.06559, finds PRMs'
  error detection weakening as problems get harder), so a weaker draft's bad steps score
  higher and pass the threshold more often.
- F1_prm: the PRM's published ProcessBench F1 (the harmonic mean of its accuracy on erroneous
  and on correct solutions, locating the first wrong step) on the ProcessBench subset of the
  dataset's difficulty (the workload's `processbench_subset`; the model file's
  `processbench_f1`). A PRM that finds fewer errors scores bad steps higher. A PRM without a
  published F1 takes the mean of the catalog PRMs' (`DEFAULT_PRM_F1`), and its accuracy is then
  extrapolated.

mu_g, c0, c_draft, c_prm, the error nesting and the in-chain factors are fitted by
scripts/calibrate_workloads.py (dse/validation/accuracy.py) and shipped in
dse/data/accuracy_model.toml; kappa is an assumption (every calibration row is taken at one
accept threshold, where only the CDFs there matter). A workload may set its own concentration
(`prm_concentration`): the means then move so that both CDFs at the calibration threshold stay
what they were (the calibrated numbers are unchanged; only other thresholds move).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from dse.data import sources_of, versioned_toml
from dse.specs.model import PROCESSBENCH_SUBSETS, ModelSpec
from dse.specs.scenario import WorkloadSpec, solo_accuracy_pct

DATA = Path(__file__).parents[1] / "data" / "accuracy_model.toml"
SCHEMA_VERSION = 1
MU_B_RANGE = (0.02, 0.99)
MU_G_RANGE = (0.5, 0.999)


@dataclass(frozen=True)
class ScoreStats:
    """How a verifier scores good and bad steps (Beta parameters on [0, 1]) and what that
    rests on (a one-line basis for the provenance)."""

    good_alpha: float
    good_beta: float
    bad_alpha: float
    bad_beta: float
    basis: str


@dataclass(frozen=True)
class AccuracyParams:
    """The accuracy model's shared parameters (see the module docstring). Means are on [0, 1]
    score scale; c_draft and c_prm per unit of error (1 - accuracy / 100, 1 - F1 / 100)."""

    kappa: float
    good_mean: float
    bad_mean_c0: float
    bad_mean_draft: float
    bad_mean_prm: float
    error_nesting: float
    in_chain_error_factor: Mapping[str, float]
    calibration_threshold: float
    default_prm_f1: Mapping[str, float]  # subset -> F1 (percent) of a PRM nobody published

    def bad_mean(self, draft_accuracy_pct: float, prm_f1_pct: float) -> float:
        """mu_b of a draft with solo accuracy A (percent) before a PRM with F1 (percent).
        E.g. c0 0.2, c_draft 0.6, c_prm 0.1, A 40%, F1 80%: 0.2 + 0.36 + 0.02 = 0.58."""
        v = (self.bad_mean_c0 + self.bad_mean_draft * (1 - draft_accuracy_pct / 100.0)
             + self.bad_mean_prm * (1 - prm_f1_pct / 100.0))
        return float(min(max(v, MU_B_RANGE[0]), MU_B_RANGE[1]))

    def rho(self, pair: str) -> float:
        """The in-chain rewrite error factor of a "<draft> -> <target>" pair (1: unmeasured)."""
        return float(self.in_chain_error_factor.get(pair, 1.0))

    def to_dict(self) -> dict[str, Any]:
        return {"kappa": self.kappa, "good_mean": self.good_mean,
                "bad_mean_c0": self.bad_mean_c0, "bad_mean_draft": self.bad_mean_draft,
                "bad_mean_prm": self.bad_mean_prm, "error_nesting": self.error_nesting,
                "calibration_threshold": self.calibration_threshold,
                "in_chain_error_factor": dict(self.in_chain_error_factor),
                "default_prm_f1": dict(self.default_prm_f1)}


def from_dict(doc: Mapping[str, Any]) -> AccuracyParams:
    return AccuracyParams(
        kappa=float(doc["kappa"]), good_mean=float(doc["good_mean"]),
        bad_mean_c0=float(doc["bad_mean_c0"]), bad_mean_draft=float(doc["bad_mean_draft"]),
        bad_mean_prm=float(doc["bad_mean_prm"]), error_nesting=float(doc["error_nesting"]),
        in_chain_error_factor={str(k): float(v)
                               for k, v in doc.get("in_chain_error_factor", {}).items()},
        calibration_threshold=float(doc["calibration_threshold"]),
        default_prm_f1={str(k): float(v) for k, v in doc["default_prm_f1"].items()})


@cache
def shipped() -> AccuracyParams:
    """dse/data/accuracy_model.toml, as scripts/calibrate_workloads.py wrote it."""
    return from_dict(versioned_toml(DATA, SCHEMA_VERSION)["parameters"])


@cache
def shipped_sources() -> Mapping[str, str]:
    """What each shipped parameter rests on (the data file's [sources], read once)."""
    return sources_of(DATA)


def prm_f1_pct(prm: ModelSpec | None, subset: str, p: AccuracyParams) -> tuple[float, bool]:
    """(F1 percent, published?) of the PRM on a ProcessBench subset: the model file's
    `processbench_f1`, else the parameters' default for a PRM nobody published."""
    if subset not in PROCESSBENCH_SUBSETS:
        raise ValueError(f"unknown ProcessBench subset {subset!r}; known: "
                         f"{', '.join(PROCESSBENCH_SUBSETS)}")
    table = (prm.processbench_f1 if prm is not None else None) or {}
    if subset in table:
        return float(table[subset]), True
    return float(p.default_prm_f1[subset]), False


def beta_mean_at_cdf(cdf: float, kappa: float, threshold: float) -> float:
    """The mean mu of Beta(mu kappa, (1 - mu) kappa) whose CDF at `threshold` is `cdf` (the CDF
    falls as mu grows; bisection, 60 halvings: 1e-18 of the unit interval)."""
    from dse.core.special import betainc

    lo, hi = 1e-9, 1 - 1e-9
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if betainc(mid * kappa, (1 - mid) * kappa, threshold) > cdf:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def at_concentration(mu: float, kappa_from: float, kappa_to: float, threshold: float) -> float:
    """The mean at concentration kappa_to whose CDF at `threshold` equals that of mean mu at
    kappa_from (mu itself when the two concentrations agree)."""
    if math.isclose(kappa_from, kappa_to, rel_tol=0.0, abs_tol=1e-12):
        return mu
    from dse.core.special import betainc

    cdf = float(betainc(mu * kappa_from, (1 - mu) * kappa_from, threshold))
    return beta_mean_at_cdf(cdf, kappa_to, threshold)


def prm_means(w: WorkloadSpec, draft: str, prm: ModelSpec | None,
              p: AccuracyParams | None = None) -> tuple[float, float]:
    """(mu_g, mu_b) at the shipped concentration for this draft and PRM on this workload."""
    p = p or shipped()
    f1, _ = prm_f1_pct(prm, w.processbench_subset, p)
    return p.good_mean, p.bad_mean(solo_accuracy_pct(w, draft), f1)


def prm_scores(w: WorkloadSpec, draft: str, prm: ModelSpec | None,
               p: AccuracyParams | None = None) -> ScoreStats:
    """The PRM's score distributions of this draft's good and bad steps on this workload, at
    the workload's concentration (its `prm_concentration`, else the parameters' kappa)."""
    p = p or shipped()
    mu_g, mu_b = prm_means(w, draft, prm, p)
    kappa = w.prm_concentration or p.kappa
    mu_g = at_concentration(mu_g, p.kappa, kappa, p.calibration_threshold)
    mu_b = at_concentration(mu_b, p.kappa, kappa, p.calibration_threshold)
    f1, published = prm_f1_pct(prm, w.processbench_subset, p)
    name = prm.name if prm is not None else "an unnamed PRM"
    basis = (f"{name} (ProcessBench {w.processbench_subset} F1 {f1:g}%"
             f"{'' if published else ', unpublished: the catalog PRMs mean'}) scoring "
             f"{draft} steps on {w.name}")
    return ScoreStats(mu_g * kappa, (1 - mu_g) * kappa, mu_b * kappa, (1 - mu_b) * kappa,
                      basis)
