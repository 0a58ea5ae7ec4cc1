"""Schema checks for dse/data/speculative_acceptance.toml (published speculative-decoding data)."""

import tomllib
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "dse" / "data" / "speculative_acceptance.toml"
KINDS = {"accepted_over_drafted", "vllm_v0_draft_acceptance_rate", "per_token_iid"}


def _rows():
    with DATA.open("rb") as fh:
        doc = tomllib.load(fh)
    assert doc["schema_version"] == 1
    return doc["row"]


def test_rows_exist_and_ids_unique():
    rows = _rows()
    assert len(rows) > 0
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))


def test_source_and_setting_non_empty():
    for r in _rows():
        for key in ("source", "setting", "proposer", "target", "dataset"):
            assert isinstance(r[key], str) and r[key].strip(), (r["id"], key)


def test_value_ranges():
    for r in _rows():
        assert "acceptance_rate" in r or "mean_acceptance_length" in r, r["id"]
        if "acceptance_rate" in r:
            assert 0.0 < r["acceptance_rate"] < 1.0, r["id"]
            assert r["acceptance_rate_kind"] in KINDS, r["id"]
        if "mean_acceptance_length" in r:
            assert r["mean_acceptance_length"] >= 1.0, r["id"]
            assert isinstance(r["length_counts_bonus_token"], bool), r["id"]
        k = r["num_speculative_tokens"]
        assert isinstance(k, int) and k >= 0, r["id"]
        if k > 0 and "mean_acceptance_length" in r and r["length_counts_bonus_token"]:
            assert r["mean_acceptance_length"] <= k + 1, r["id"]
        assert r["temperature"] >= 0.0, r["id"]
        if "speedup" in r:
            assert r["speedup"] > 0.0, r["id"]
        if "batch_size" in r:
            assert isinstance(r["batch_size"], int) and r["batch_size"] >= 1, r["id"]


def test_another_tasks_rows_come_after_a_mixed_benchmark() -> None:
    """No n-gram row measures math: a mixed chat benchmark stands in before an editing
    benchmark, whose copied spans make n-gram lookup accept far more than math would."""
    from dse.serving.acceptance import GENERAL, default_rate, rows

    got = default_rate("ngram", "qwen2.5-math-1.5b-instruct", "math500")
    (row,) = [r for r in rows() if got.basis.startswith(str(r["id"]) + " ")]
    assert row["dataset"] in GENERAL
    assert "blazedit" not in got.basis
