"""Named request-length distributions (`dse serve --dataset NAME`), from
dse/data/serving_datasets.toml: each a pair of independent lognormals (prompt and output
tokens) filtered as the defining benchmark filters its requests, their locations fitted so that
the filtered means are the published ones (scripts/fit_serving_datasets.py).

The simulator draws each request's lengths (seeded: the load's seed); the closed form uses the
means (its steady state is in the mean lengths; the spread moves percentiles and the KV cache's
peaks, which it does not model).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from dse.core.arrays import F64


@dataclass(frozen=True)
class Dataset:
    """A named length distribution (keys as dse/data/serving_datasets.toml)."""

    name: str
    source: str
    mean_input_tokens: float
    mean_output_tokens: float
    mu_input: float
    sigma_input: float
    mu_output: float
    sigma_output: float
    min_input_tokens: int
    max_input_tokens: int
    min_output_tokens: int
    max_total_tokens: int

    def draw(self, n: int, seed: int) -> tuple[F64, F64]:
        """n (input, output) token counts, each a filtered lognormal draw (a draw outside the
        filter is replaced by a fresh one)."""
        rng = np.random.default_rng([seed, 0x5EED])
        inp = np.zeros(0)
        out = np.zeros(0)
        while inp.size < n:
            m = 2 * (n - inp.size) + 16
            i = np.rint(np.exp(self.mu_input + self.sigma_input * rng.standard_normal(m)))
            o = np.rint(np.exp(self.mu_output + self.sigma_output * rng.standard_normal(m)))
            keep = ((i >= self.min_input_tokens) & (i <= self.max_input_tokens)
                    & (o >= self.min_output_tokens) & (i + o <= self.max_total_tokens))
            inp = np.concatenate([inp, i[keep]])
            out = np.concatenate([out, o[keep]])
        return inp[:n], out[:n]


@lru_cache(maxsize=1)
def datasets() -> dict[str, Dataset]:
    """Every shipped dataset by name."""
    text = resources.files("dse.data").joinpath("serving_datasets.toml").read_text(
        encoding="utf-8")
    out = {}
    for name, row in tomllib.loads(text).items():
        if isinstance(row, dict):
            out[name] = Dataset(name, row["source"], row["mean_input_tokens"],
                                row["mean_output_tokens"], row["mu_input"], row["sigma_input"],
                                row["mu_output"], row["sigma_output"], row["min_input_tokens"],
                                row["max_input_tokens"], row["min_output_tokens"],
                                row["max_total_tokens"])
    return out


def dataset(name: str) -> Dataset:
    """A shipped dataset by name (a ValueError listing the valid ones)."""
    known = datasets()
    if name not in known:
        raise ValueError(f"unknown dataset {name!r}; valid: {', '.join(sorted(known))}")
    return known[name]
