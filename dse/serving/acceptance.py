"""Default acceptance rates for token-level speculation, from the published rows of
dse/data/speculative_acceptance.toml (each with its source).

The serving model takes an i.i.d. per-token acceptance a (each proposed token accepted with
probability a until the first rejection: (1 - a^(k+1)) / (1 - a) tokens a target pass). No row
gives that a directly; each is converted, the conversion stated in the basis:
- a chain of k proposals (k > 0) with a mean acceptance length AL (tokens a pass, the bonus
  token counted): a solves (1 - a^(k+1)) / (1 - a) = AL; with only an accepted/drafted rate
  r, AL = 1 + r k first;
- a tree or dynamic draft, or k not stated (k = 0 in the file), with AL: a = 1 - 1/AL, the
  chain without a length limit that gains AL tokens a pass (a tree accepts more than a chain
  of its depth, so this is an upper estimate of a chain's a);
- k not stated and only a rate r: a = r (the accepted/drafted ratio, a lower estimate).
The row chosen is the closest to the request among the rows of the proposer's kind (ngram, the
EAGLE family, or any draft model): the target (its name, else its family: qwen, llama, vicuna,
...), then the proposer's exact name (eagle before eagle-3), then the dataset (math workloads
match gsm8k, the math set among the rows; without one, or where no row has it, a mixed chat
benchmark: Spec-Bench, MT-bench or ShareGPT, before another task's rows), greedy decoding
(temperature 0) and a stated chain length; rows tied at the best score give their median a.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

METHOD_SLUGS = ("eagle", "eagle-2", "eagle-3", "eagle-family", "medusa", "hydra", "ngram",
                "rest", "lookahead")
PROPOSER_KINDS = {"ngram": ("ngram",), "eagle": ("eagle", "eagle-2", "eagle-3",
                                                 "eagle-family")}
# mixed-task chat benchmarks: the rows preferred for fixed lengths (no dataset named)
GENERAL = ("spec-bench", "mt-bench", "sharegpt")
# workloads of this tool whose nearest dataset among the rows is another (math reasoning)
DATASET_NEAR = {"math500": "gsm8k", "math": "gsm8k", "aime24": "gsm8k",
                "gaokao2023en": "gsm8k", "olympiadbench": "gsm8k"}


@dataclass(frozen=True)
class Default:
    """An acceptance rate and where it comes from (one line)."""

    acceptance_rate: float
    basis: str


@lru_cache(maxsize=1)
def rows() -> tuple[dict[str, Any], ...]:
    """The published rows (dse/data/speculative_acceptance.toml)."""
    text = resources.files("dse.data").joinpath("speculative_acceptance.toml").read_text(
        encoding="utf-8")
    return tuple(tomllib.loads(text)["row"])


def iid_rate(tokens_per_pass: float, k: int) -> float:
    """The i.i.d. a with (1 - a^(k+1)) / (1 - a) = tokens_per_pass (in [1, k + 1))."""
    if not 1.0 <= tokens_per_pass < k + 1:
        raise ValueError(f"tokens per pass {tokens_per_pass!r} outside [1, {k + 1})")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(mid ** j for j in range(k + 1)) < tokens_per_pass:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def row_rate(row: dict[str, Any]) -> tuple[float, str] | None:
    """(a, how it was converted) of a row, or None where it gives neither a length nor a
    rate usable (module docstring)."""
    k = int(row.get("num_speculative_tokens", 0))
    al = row.get("mean_acceptance_length")
    r = row.get("acceptance_rate")
    if al is not None and not row.get("length_counts_bonus_token", True):
        al = al + 1.0
    if k > 0:
        length = al if al is not None else (1.0 + r * k if r is not None else None)
        if length is None or not 1.0 <= length < k + 1:
            return None
        return iid_rate(length, k), f"a chain of k={k} gaining {length:.3g} tokens a pass"
    if al is not None and al > 1.0:
        return 1.0 - 1.0 / al, (f"a tree or dynamic draft gaining {al:.3g} tokens a pass, "
                                "read as an unbounded chain: a = 1 - 1/AL")
    if r is not None:
        return float(r), "its accepted/drafted rate taken as a"
    return None


def _family(name: str) -> str:
    m = re.match(r"[a-z]+", name.lower())
    return m.group(0) if m else name.lower()


def _kind(proposer: str) -> tuple[str, ...] | None:
    """The row proposers of the proposer's kind (None: a draft model: any model row)."""
    return PROPOSER_KINDS.get(proposer)


def default_rate(proposer: str, target: str, dataset: str | None) -> Default:
    """The closest published row's a for the proposer (ngram, eagle or a draft model's
    catalog name), the target's catalog name and the dataset (None: fixed lengths)."""
    kind = _kind(proposer)
    want = DATASET_NEAR.get(dataset or "", dataset)
    scored: list[tuple[tuple[int, ...], float, str, dict[str, Any]]] = []
    for row in rows():
        p = str(row["proposer"])
        if kind is not None and p not in kind:
            continue
        if kind is None and p in METHOD_SLUGS:
            continue
        conv = row_rate(row)
        if conv is None:
            continue
        t = str(row["target"])
        # the dataset: its own (or nearest) rows first, then a mixed chat benchmark, before
        # another task's (an editing benchmark's n-gram overlap says nothing of math)
        ds = 2 if want is not None and row["dataset"] == want else int(
            row["dataset"] in GENERAL)
        score = (int(t == target), int(_family(t) == _family(target)), int(p == proposer), ds,
                 int(float(row.get("temperature", 0.0)) == 0.0),
                 int(int(row.get("num_speculative_tokens", 0)) > 0))
        scored.append((score, conv[0], conv[1], row))
    if not scored:
        raise ValueError(f"no published acceptance row for proposer {proposer!r}; give "
                         "--acceptance-rate")
    best = max(s for s, *_ in scored)
    tied = sorted((s for s in scored if s[0] == best), key=lambda s: s[1])
    mid = tied[len(tied) // 2]
    _, a, how, row = mid
    match = [w for w, ok in zip(("target", "target family", "proposer", "dataset"),
                                (*best[:3], best[3] == 2 or (want is None and best[3])),
                                strict=True) if ok]
    near = (f", {dataset} read as {want}" if dataset and want != dataset and best[3] == 2
            else f"; no row on {want}: a mixed chat benchmark stands in"
            if want is not None and best[3] == 1 else "")
    basis = (f"{row['id']} ({row['proposer']} -> {row['target']}, {row['dataset']}): {how}; "
             f"matches {', '.join(match) or 'the proposer kind only'}{near}"
             + (f"; median of {len(tied)} tied rows" if len(tied) > 1 else "")
             + f"; source: {str(row['source']).split(' (')[0].removeprefix('https://')}")
    return Default(float(a), basis)
