"""dse/data/published_serving.toml: published serving runs at a load (not batch-1 points), each
predicted by `dse serve` at its own load. The measured figures lie inside the 90% intervals the
command prints (the closed form: its means and their intervals; the source's medians are
compared with them). Nothing is fitted to these rows."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from typing import Any

import pytest

from dse.cli import main

ROWS: list[dict[str, Any]] = tomllib.loads(
    resources.files("dse.data").joinpath("published_serving.toml").read_text(encoding="utf-8")
)["measurement"]

# measured figure -> the `dse serve --json` interval it is checked against
COMPARED = {"median_itl_ms": "mean_itl_ms", "median_ttft_ms": "mean_ttft_ms",
            "output_throughput": "output_throughput"}


def test_rows_are_well_formed() -> None:
    assert ROWS
    for r in ROWS:
        assert r["kind"] == "gpu_serving"
        assert " @ " in r["source"] and r["setting"].strip()
        assert r["concurrency"] > 1  # a load; batch-1 rows belong in published.toml
        assert set(COMPARED) <= set(r["measured"])


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['catalog_model_assumed']}-"
                         f"kv{r['kv_precision']}-c{r['concurrency']}")
def test_measured_inside_the_predicted_interval(row: dict[str, Any],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "--model", row["catalog_model_assumed"], "--device",
                 row["catalog_device_assumed"], "--precision", row["precision"],
                 "--kv-precision", row["kv_precision"], "--concurrency",
                 str(row["concurrency"]), "--requests", str(row["requests"]),
                 "--input-tokens", str(row["input_tokens"]), "--output-tokens",
                 str(row["output_tokens"]), "--max-num-batched-tokens",
                 str(row["max_num_batched_tokens"]), "--json"])
    assert code == 0
    r = json.loads(capsys.readouterr().out)
    for measured_key, key in COMPARED.items():
        lo, hi = r["intervals"][key]
        assert lo <= row["measured"][measured_key] <= hi, (measured_key, lo, r[key], hi)
