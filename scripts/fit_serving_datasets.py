"""Fit the lognormal locations (mu_input, mu_output) of dse/data/serving_datasets.toml so that
the filtered means equal the published means, for the stated spreads (sigma_*).

A draw is kept when it passes the dataset's filter (min/max input, min output, max total), as
the benchmark keeps its requests; the fit moves each mu by log(published / filtered mean) until
both agree to 1e-6, on one fixed set of normal draws (common random numbers: deterministic).

    python scripts/fit_serving_datasets.py          # print the fitted mu per dataset
    python scripts/fit_serving_datasets.py --check  # exit 1 if the file's mu differ by > 1e-3
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "dse" / "data" / "serving_datasets.toml"
DRAWS = 400_000


def fit(row: dict) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    z_in, z_out = rng.standard_normal(DRAWS), rng.standard_normal(DRAWS)
    mu_in, mu_out = np.log(row["mean_input_tokens"]), np.log(row["mean_output_tokens"])
    for _ in range(200):
        i = np.rint(np.exp(mu_in + row["sigma_input"] * z_in))
        o = np.rint(np.exp(mu_out + row["sigma_output"] * z_out))
        keep = ((i >= row["min_input_tokens"]) & (i <= row["max_input_tokens"])
                & (o >= row["min_output_tokens"]) & (i + o <= row["max_total_tokens"]))
        m_in, m_out = i[keep].mean(), o[keep].mean()
        step_in = np.log(row["mean_input_tokens"] / m_in)
        step_out = np.log(row["mean_output_tokens"] / m_out)
        mu_in, mu_out = mu_in + step_in, mu_out + step_out
        if max(abs(step_in), abs(step_out)) < 1e-6:
            break
    return float(mu_in), float(mu_out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    data = tomllib.loads(DATA.read_text(encoding="utf-8"))
    bad = 0
    for name, row in data.items():
        if not isinstance(row, dict):
            continue
        mu_in, mu_out = fit(row)
        print(f"{name}: mu_input = {mu_in:.5f}, mu_output = {mu_out:.5f}")
        if a.check and (abs(mu_in - row["mu_input"]) > 1e-3
                        or abs(mu_out - row["mu_output"]) > 1e-3):
            print(f"{name}: the file has {row['mu_input']}, {row['mu_output']}")
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
