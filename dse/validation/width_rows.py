"""The published width rows (dse/data/width_published.toml) made ready for the width model's
fit and its held-out check: each row with the policy's solo accuracy, the verifier's
ProcessBench F1 where published, and steps per problem; every row that cannot be used, with
the reason (no silent drops).

Rules (each stated where it is applied):
- fit set: the `[[row]]`s with fit_allowed = true; judge set: every `[[held_out]]` row (the
  `[[other]]` rows have no N or are post-hoc mixtures of methods: listed as skipped).
- duplicates: 2501.07301 prints its pass@8, maj@8 and Best-of-8 product rows in several tables
  (6, 11, 13); a row equal to an earlier one of its set in (policy, dataset, method, N,
  verifier, aggregation) is skipped as a duplicate, so that no number is fitted twice. A held-
  out row that repeats a fit row's setting and number (Table 1's pass@8 and maj@8 are Table
  6's) is kept but marked `same_as_fit_row`: the held-out results are reported without them.
- solo accuracy A of (policy, dataset), first that exists: (1) a `[[solo]]` of the row's own
  paper (its own sampling setting; the first in file order); (2) the Qwen2.5-Math report's CoT
  figure (the harness 2501.07301 follows); (3) the median of the other CoT (not TIR) figures;
  (4) for MATH500 the same rules on MATH (MATH500 is a uniform random subset of MATH's test
  problems; the row says so); else the row is skipped.
- ProcessBench F1 of a PRM on the subset closest in difficulty to the dataset (`SUBSET`; the
  shipped workloads' `processbench_subset` where one exists, the same rule elsewhere).
- steps per problem (step search only): the shipped workload's steps_mean where one exists,
  else MATH500's (an assumption, said in the row).
"""

from __future__ import annotations

import statistics
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

PUBLISHED = "width_published.toml"
# ProcessBench subset closest in difficulty to each dataset (the workloads' rule: Qwen2.5-Math-
# 7B-Instruct's solo accuracy: GSM8K 95, MATH 84, OlympiadBench 42, Omni-MATH harder still)
SUBSET: Mapping[str, str] = {
    "gsm8k": "gsm8k", "cmath": "gsm8k",  # grade-school word problems (CMATH: 92-95% solo)
    "math": "math", "math500": "math", "gaokao2023en": "math", "mmlu_stem": "math",
    "cn_middle_school24": "math", "gaokao_zh_mix": "math",
    "olympiadbench": "olympiadbench", "minerva_math": "olympiadbench",  # 37-42% solo
    "collegemath": "olympiadbench", "amc23": "olympiadbench", "gpqa": "olympiadbench",
    "aime24": "omnimath",  # 13-20% solo: competition problems as Omni-MATH's
}
STEPS_FALLBACK = "math500"  # workload whose steps_mean stands in for datasets without one
SOLO_SOURCE = {"rsd": "rsd_paper"}  # a row's paper -> its [[solo]] id key where they differ
METHODS_MODELLED = ("pass-at-n", "majority", "best-of-n", "weighted-best-of-n", "step-search",
                    "beam")


@dataclass(frozen=True)
class Row:
    """One published accuracy, ready for the model. f1_pct: the verifier's ProcessBench F1 on
    the matched subset (None: no F1 published, or an ORM); steps: per problem (searches)."""

    id: str
    source: str  # the paper / repository: the id's first part
    policy: str
    dataset: str
    method: str
    samples: int
    beam_width: int
    verifier: str
    aggregation: str
    verifier_kind: str  # prm | orm | judge | none
    f1_pct: float | None
    solo_pct: float
    solo_note: str
    steps: float
    n_problems: int
    accuracy_pct: float
    fit_allowed: bool
    same_as_fit_row: str = ""  # a held-out row that repeats a fit row's setting and number

    @property
    def verifier_key(self) -> str:
        return f"{self.verifier}|{self.aggregation}"


@cache
def published() -> Mapping[str, Any]:
    """dse/data/width_published.toml, read once."""
    text = resources.files("dse.data").joinpath(PUBLISHED).read_text(encoding="utf-8")
    return tomllib.loads(text)


def answer_chance() -> dict[str, float]:
    """chi = 1 / answer_options of each dataset whose `[[dataset]]` entry gives its options
    (multiple choice); free-form datasets are absent (0)."""
    return {str(d["name"]): 1.0 / int(d["answer_options"])
            for d in published()["dataset"] if int(d.get("answer_options", 0)) > 0}


def _solo_key(solo_id: str) -> tuple[str, str]:
    """(paper, prompt) of a [[solo]] id: 'solo.<paper>...' or 'solo.carried.<paper>.<prompt>'."""
    parts = solo_id.split(".")
    if parts[1] == "carried":
        return parts[2], parts[3]
    return parts[1], ""


def solo_accuracy(doc: Mapping[str, Any], policy: str, dataset: str,
                  source: str) -> tuple[float, str] | None:
    """(A percent, note) by the module's rule, or None."""
    def find(ds: str) -> tuple[float, str] | None:
        entries = [s for s in doc["solo"] if s["model"] == policy and s["dataset"] == ds]
        own = [s for s in entries if _solo_key(s["id"])[0] == SOLO_SOURCE.get(source, source)]
        if own:
            return float(own[0]["accuracy_pct"]), f"{own[0]['id']} (the row's own paper)"
        report = [s for s in entries if _solo_key(s["id"]) == ("qwen25math_report", "cot")]
        if report:
            return float(report[0]["accuracy_pct"]), f"{report[0]['id']} (Qwen2.5-Math CoT)"
        cot = [s for s in entries if "tir" not in s["id"].split(".")
               and not s["setting"].startswith("TIR")]
        if cot:
            return (float(statistics.median(float(s["accuracy_pct"]) for s in cot)),
                    "median of " + ", ".join(s["id"] for s in cot))
        return None

    got = find(dataset)
    if got is None and dataset == "math500":
        alt = find("math")
        if alt is not None:
            return alt[0], alt[1] + "; MATH for MATH500 (a uniform random subset)"
    return got


def _f1(doc: Mapping[str, Any], verifier: str, dataset: str) -> tuple[str, float | None]:
    """(kind, F1 percent on the dataset's subset) of a verifier; kind judge for LLM judges."""
    prms = [p for p in doc["prm"] if p["model"] == verifier]
    if not prms:
        return ("none" if verifier == "none" else "unlisted"), None
    kind = str(prms[0]["kind"])
    if kind != "prm":
        return kind, None
    return kind, float(prms[0]["processbench_f1"][SUBSET.get(dataset, "math")])


def _steps(dataset: str, workload_steps: Mapping[str, float]) -> tuple[float, str]:
    key = "math500" if dataset == "math" else dataset
    if key in workload_steps:
        return workload_steps[key], f"steps {workload_steps[key]:g} (workload {key})"
    s = workload_steps[STEPS_FALLBACK]
    return s, f"steps {s:g}: assumption, MATH500's (no workload for {dataset})"


def build(workload_steps: Mapping[str, float]) -> tuple[list[Row], list[Row],
                                                          list[dict[str, str]]]:
    """(fit rows, held-out rows, skipped [{id, reason}]) from the published file."""
    doc = published()
    fit: list[Row] = []
    held: list[Row] = []
    skipped: list[dict[str, str]] = []
    seen: dict[tuple[Any, ...], str] = {}
    for table, fitted in (("row", True), ("held_out", False)):
        for r in doc[table]:
            if fitted and not r["fit_allowed"]:
                skipped.append({"id": r["id"], "reason": "[[row]] with fit_allowed = false"})
                continue
            key = (fitted, r["policy"], r["dataset"], r["method"], r["samples"],
                   r["verifier"], r["aggregation"])
            if key in seen:
                skipped.append({"id": r["id"], "reason": f"duplicate of {seen[key]}"})
                continue
            seen[key] = r["id"]
            if r["method"] not in METHODS_MODELLED:
                skipped.append({"id": r["id"], "reason": f"method {r['method']} not modelled"})
                continue
            source = r["id"].split(".")[0]
            solo = solo_accuracy(doc, r["policy"], r["dataset"], source)
            if solo is None:
                skipped.append({"id": r["id"], "reason": f"no solo accuracy of {r['policy']} "
                                f"on {r['dataset']} in [[solo]]"})
                continue
            kind, f1 = _f1(doc, r["verifier"], r["dataset"])
            if r["aggregation"].startswith("llm-"):
                kind = "judge"
            steps, steps_note = _steps(r["dataset"], workload_steps)
            note = solo[1] + ("; " + steps_note if r["method"] in ("step-search", "beam")
                              else "")
            row = Row(id=r["id"], source=source, policy=r["policy"], dataset=r["dataset"],
                      method=r["method"], samples=int(r["samples"]),
                      beam_width=int(r["beam_width"]), verifier=r["verifier"],
                      aggregation=r["aggregation"], verifier_kind=kind, f1_pct=f1,
                      solo_pct=solo[0], solo_note=note, steps=steps,
                      n_problems=int(r["n_problems"]), accuracy_pct=float(r["accuracy_pct"]),
                      fit_allowed=fitted)
            if not fitted:
                twin = seen.get((True, *key[1:]), "")
                if twin and fit[[f.id for f in fit].index(twin)].accuracy_pct == row.accuracy_pct:
                    row = replace(row, same_as_fit_row=twin)
            (fit if fitted else held).append(row)
    for r in doc.get("other", []):
        skipped.append({"id": r["id"], "reason": "[[other]]: N unknown or a post-hoc mixture "
                        "of methods (judged with care only; not predicted)"})
    return fit, held, skipped


def row_groups(rows: Sequence[Row], scheme: str) -> dict[str, list[int]]:
    """Indices of the rows left out together by a cross-validation scheme: source, policy,
    verifier (rows without one are never left out), dataset, samples."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        key = {"source": r.source, "policy": r.policy, "dataset": r.dataset,
               "samples": str(r.samples),
               "verifier": r.verifier if r.verifier != "none" else ""}[scheme]
        if key:
            out.setdefault(key, []).append(i)
    return out
