"""The width model's parameters (dse/data/width_model.toml, written by
scripts/calibrate_width.py) and the two look-ups a caller needs: a dataset's difficulty spread
and a verifier's separation.

- concentration: c of the solve-rate Beta (dse.width.difficulty) of a policy with solo accuracy
  A on a dataset, c = c_dataset ((1 - A) / A)^gamma (A clipped to 0.5-99.5%). c_dataset per
  dataset because the spread is the dataset's (pass@8 alone puts College Math, with many
  problems no policy solves, near 0.1 for every policy); gamma > 0: a weaker policy spreads its
  successes more evenly over the problems (one shared exponent). MATH500 shares MATH's
  (a uniform random subset of the same problems). A dataset the fit never saw gets
  `default_concentration`, the geometric mean of the fitted ones.
- agreement g (per dataset, the answer format's): the share of a problem's wrong samples that
  give its most common wrong answer (dse.width.voting); multiple choice concentrates them. A
  dataset the fit never saw gets the mean of the fitted ones.
- deception e: the share of wrong responses a verifier scores like correct ones
  (dse.width.judge), one for every verifier.
- separation d of a PRM with a published ProcessBench F1 (percent, on the subset matched to the
  dataset's difficulty): d = (separation_intercept + separation_per_f1 F1 / 100) x the
  aggregation's factor (product 1, min, last, mean fitted; unknown: product's). A verifier
  without a published F1 (an ORM, an LLM judge, an unpublished PRM) has a separation of its
  own (`verifier_separation`, keyed "verifier|aggregation") where the fit saw it, else
  `default_separation`, the median of those.
- answer_chance (not fitted: the answer format): 1 / options of a dataset whose every answer
  is one of a fixed set of options (MMLU STEM: 4); free-form datasets 0. A sample that does not
  solve its problem gives the favourite wrong option with the dataset's agreement g, else an
  option at random, so it is right anyway with chance (1 - g) / options (`chance_for`,
  dse.width.accuracy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dse.data import sources_of, versioned_toml
from dse.width.difficulty import solve_rate_mean

DATA = Path(__file__).resolve().parents[1] / "data" / "width_model.toml"
SCHEMA_VERSION = 1
REFERENCE_AGGREGATION = "product"  # factor 1: the response score of 2501.07301's defaults
FITTED_AGGREGATIONS = ("min", "last", "mean")
DATASET_ALIASES = MappingProxyType({"math500": "math"})  # same problems, same spread


@dataclass(frozen=True)
class WidthParams:
    """Fitted parameters of the width model (module docstring). Units: concentration is a
    Beta concentration (dimensionless, > 0), gamma its exponent per log odds of failure;
    agreement and deception are shares in [0, 1];
    separations are in standard deviations of the score (d')."""

    concentration: Mapping[str, float]
    concentration_per_log_odds: float
    agreement: Mapping[str, float]
    deception: float
    separation_intercept: float
    separation_per_f1: float
    aggregation_factor: Mapping[str, float]
    verifier_separation: Mapping[str, float] = field(default_factory=dict)
    answer_chance: Mapping[str, float] = field(default_factory=dict)

    @property
    def default_concentration(self) -> float:
        """c of a dataset the fit never saw: the geometric mean of the fitted ones."""
        vals = list(self.concentration.values())
        return math.exp(sum(math.log(v) for v in vals) / len(vals))

    @property
    def default_separation(self) -> float:
        """d of a verifier with no published F1 that the fit never saw: the median of the
        fitted verifier separations (the line at F1 50 if there are none)."""
        vals = sorted(self.verifier_separation.values())
        if not vals:
            return self.prm_separation(50.0, REFERENCE_AGGREGATION)
        mid = len(vals) // 2
        return vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])

    @property
    def default_agreement(self) -> float:
        """g of a dataset the fit never saw: the mean of the fitted ones."""
        vals = list(self.agreement.values())
        return sum(vals) / len(vals) if vals else 0.5

    def chance_for(self, dataset: str) -> float:
        """The chance that a sample which does not solve its problem is right anyway: 0 on a
        free-form dataset; on a multiple-choice one (1 / options, not fitted: the dataset's
        format, dse/data/width_published.toml [[dataset]]) the sample gives the problem's
        favourite wrong option with the dataset's agreement g (as a vote's wrong answers
        do) and else an option at random: (1 - g) / options. E.g. 4 options, g 0.4: 0.15."""
        options_chance = self.answer_chance.get(DATASET_ALIASES.get(dataset, dataset), 0.0)
        return float(options_chance) * (1 - self.agreement_for(dataset)[0])

    def concentration_for(self, dataset: str, solo_accuracy_pct: float) -> tuple[float, bool]:
        """(c, fitted?) of a policy with solo accuracy A (percent) on a dataset: the dataset's
        own c (or its alias's; else the default) times ((1 - q) / q)^gamma, q the mean solve
        rate (A itself on a free-form dataset; (A - chi) / (1 - chi) on a multiple-choice one).
        E.g. c_dataset 0.4, gamma 0.5, A 20%: 0.4 x 4^0.5 = 0.8."""
        key = DATASET_ALIASES.get(dataset, dataset)
        fitted = key in self.concentration
        base = float(self.concentration[key]) if fitted else self.default_concentration
        q = float(solve_rate_mean(solo_accuracy_pct / 100.0, self.chance_for(dataset)))
        a = min(max(q, 0.005), 0.995)
        return base * ((1 - a) / a) ** self.concentration_per_log_odds, fitted

    def agreement_for(self, dataset: str) -> tuple[float, bool]:
        """(g, fitted?) of a dataset: its own (or its alias's), else the default."""
        key = DATASET_ALIASES.get(dataset, dataset)
        if key in self.agreement:
            return float(self.agreement[key]), True
        return self.default_agreement, False

    def aggregation(self, aggregation: str) -> float:
        """The separation factor of a way of turning step scores into a response score."""
        return float(self.aggregation_factor.get(aggregation, 1.0))

    def prm_separation(self, f1_pct: float, aggregation: str) -> float:
        """d of a PRM from its ProcessBench F1 (percent): the fitted line times the
        aggregation's factor. Below 0 where the line is (a PRM that prefers wrong answers, as
        weak PRMs do out of domain: their Best-of-8 falls below the policy alone on MMLU STEM).
        E.g. intercept 0.2, slope 2.0, F1 70, min factor 0.9: (0.2 + 1.4) 0.9 = 1.44."""
        line = self.separation_intercept + self.separation_per_f1 * f1_pct / 100.0
        return line * self.aggregation(aggregation)

    def verifier(self, name: str, aggregation: str, f1_pct: float | None) -> tuple[float, str]:
        """(d, basis) of a verifier: from its F1 where published, else its own fitted
        separation, else the default; basis says which."""
        if f1_pct is not None:
            return self.prm_separation(f1_pct, aggregation), "processbench-f1"
        key = f"{name}|{aggregation}"
        if key in self.verifier_separation:
            return float(self.verifier_separation[key]), "fitted"
        return self.default_separation, "default"

    def to_dict(self) -> dict[str, Any]:
        return {"concentration": dict(self.concentration),
                "concentration_per_log_odds": self.concentration_per_log_odds,
                "agreement": dict(self.agreement),
                "deception": self.deception,
                "separation_intercept": self.separation_intercept,
                "separation_per_f1": self.separation_per_f1,
                "aggregation_factor": dict(self.aggregation_factor),
                "verifier_separation": dict(self.verifier_separation),
                "answer_chance": dict(self.answer_chance)}


def from_dict(doc: Mapping[str, Any]) -> WidthParams:
    return WidthParams(
        concentration={str(k): float(v) for k, v in doc["concentration"].items()},
        concentration_per_log_odds=float(doc["concentration_per_log_odds"]),
        agreement={str(k): float(v) for k, v in doc["agreement"].items()},
        deception=float(doc["deception"]),
        separation_intercept=float(doc["separation_intercept"]),
        separation_per_f1=float(doc["separation_per_f1"]),
        aggregation_factor={str(k): float(v) for k, v in doc["aggregation_factor"].items()},
        verifier_separation={str(k): float(v)
                             for k, v in doc.get("verifier_separation", {}).items()},
        answer_chance={str(k): float(v) for k, v in doc.get("answer_chance", {}).items()})


@cache
def shipped() -> WidthParams:
    """dse/data/width_model.toml, as scripts/calibrate_width.py wrote it."""
    return from_dict(versioned_toml(DATA, SCHEMA_VERSION)["parameters"])


@cache
def shipped_sources() -> Mapping[str, str]:
    """What each shipped parameter rests on (the data file's [sources])."""
    return sources_of(DATA)
