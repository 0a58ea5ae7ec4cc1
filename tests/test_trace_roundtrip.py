"""What `dse simulate --trace-out` writes, `--trace` reads back: the same trace (rewards to 6
decimals), including records without rewards (null, never NaN)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

import dse
from dse.engine.simulator import read_jsonl, synthetic_trace, trace_to_records
from dse.model.schedules import Costs


def _write(records: list[dict[str, object]], path: Path) -> None:
    path.write_text("".join(json.dumps(r, allow_nan=False) + "\n" for r in records),
                    encoding="utf-8")


def _same(a: dse.Trace, b: dse.Trace) -> None:
    """Equal records (padding aside); rewards to the 6 decimals written."""
    np.testing.assert_array_equal(a.valid, b.valid)
    v = a.valid
    for name in ("draft_tokens", "decision", "backtrack_to", "alt_tokens"):
        np.testing.assert_array_equal(getattr(a, name)[v], getattr(b, name)[v], err_msg=name)
    rewrite = v & (a.decision != 0)  # the target's tokens and reward exist for a rewrite only
    np.testing.assert_array_equal(a.target_tokens[rewrite], b.target_tokens[rewrite])
    np.testing.assert_allclose(a.draft_reward[v], b.draft_reward[v], atol=5e-7, equal_nan=True)
    np.testing.assert_allclose(a.target_reward[rewrite], b.target_reward[rewrite], atol=5e-7,
                               equal_nan=True)
    np.testing.assert_array_equal(a.correct, b.correct)


def test_synthetic_trace_round_trips(tmp_path: Path) -> None:
    d = dse.load_design("paper-config1-u280")
    tr = synthetic_trace(Costs(d, dse.load_workload("gsm8k")), 200, 5)
    records = list(trace_to_records(tr))
    assert any(r["decision"] == "backtrack" for r in records)
    _write(records, tmp_path / "t.jsonl")  # allow_nan=False: no NaN in what is written
    _same(tr, read_jsonl(tmp_path / "t.jsonl"))


def test_missing_rewards_round_trip_as_null(tmp_path: Path) -> None:
    d = dse.load_design("paper-config1-u280")
    records = list(trace_to_records(synthetic_trace(Costs(d, dse.load_workload("gsm8k")), 20,
                                                    1)))
    for r in records[:7]:
        r.pop("draft_reward")
        r["target_reward"] = None
    _write(records, tmp_path / "a.jsonl")
    first = read_jsonl(tmp_path / "a.jsonl")
    assert math.isnan(float(first.draft_reward[0, 0]))
    again = list(trace_to_records(first))
    assert again[0]["draft_reward"] is None and again[0]["target_reward"] is None
    _write(again, tmp_path / "b.jsonl")
    _same(first, read_jsonl(tmp_path / "b.jsonl"))
    r1 = dse.simulate(d, "gsm8k", trace=tmp_path / "a.jsonl").report
    r2 = dse.simulate(d, "gsm8k", trace=tmp_path / "b.jsonl").report
    assert r1 == r2


def test_token_counts_beyond_any_context_are_refused(tmp_path: Path) -> None:
    from dse.core.limits import MAX_CONTEXT_TOKENS
    from dse.errors import SpecError

    d = dse.load_design("paper-config1-u280")
    records = list(trace_to_records(synthetic_trace(Costs(d, dse.load_workload("gsm8k")), 5,
                                                    2)))
    for value in (MAX_CONTEXT_TOKENS + 1, 10**15, 10**400):
        records[2]["draft_tokens"] = value
        _write(records, tmp_path / "t.jsonl")
        try:
            read_jsonl(tmp_path / "t.jsonl")
        except SpecError as e:
            assert str(e).startswith(f"{tmp_path / 't.jsonl'}:3: draft_tokens: must be")
        else:
            raise AssertionError(f"draft_tokens {value} was accepted")
