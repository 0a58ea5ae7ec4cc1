"""The GPU model's batch terms (dse/devices/gpu_batch.py): the shipped values are the ones the
calibration wrote (scripts/calibrate_serving.py --check refits them, about five minutes), and
each rests on a batched source."""

from __future__ import annotations

import json
import tomllib
from importlib import resources

from dse.devices.gpu_batch import batch_terms, soft_max


def _read(name: str) -> str:
    return resources.files("dse.data").joinpath(name).read_text(encoding="utf-8")


def test_shipped_values_are_the_cross_validated_ones() -> None:
    costs = tomllib.loads(_read("batched_costs.toml"))
    cv = json.loads(_read("serving_cv.json"))
    assert abs(costs["gemm"]["knee_exponent"] - cv["knee_exponent"]) < 1e-3
    for stack, v in cv["values"].items():
        t = batch_terms(stack)
        assert t.fitted
        assert abs(t.sequence_overhead_s * 1e6 - v["sequence_overhead_us"]) < 1e-2
        assert t.attention_bw_efficiency_many is not None
        assert abs(t.attention_bw_efficiency_many - v["attention_bw_efficiency_many"]) < 1e-3
    pooled = batch_terms("a-stack-without-batched-rows")
    assert not pooled.fitted
    assert abs(pooled.sequence_overhead_s * 1e6 - cv["pooled"]["sequence_overhead_us"]) < 1e-2
    for table in (costs["pooled"], *costs["profiles"].values()):
        assert table["source"].startswith("fitted: LLM-Inference-Bench")


def test_the_knee_by_hand() -> None:
    """(3^2 + 4^2)^(1/2) = 5; p = inf is the max; a zero side leaves the other."""
    assert float(soft_max(3.0, 4.0, 2.0)) == 5.0
    assert float(soft_max(3.0, 4.0, float("inf"))) == 4.0
    assert float(soft_max(0.0, 4.0, 2.44)) == 4.0


def test_the_batched_measurements_name_their_sources() -> None:
    data = tomllib.loads(_read("batched_measurements.toml"))
    assert data["vidur"] and data["lib"]
    for b in data["vidur"]:
        assert b["source"].startswith("microsoft/vidur ") and " @ " in b["source"]
        assert len(b["tokens"]) == len(b["linear_ms_per_layer"])
    for b in data["lib"]:
        assert "LLM-Inference-Bench" in b["source"] and " @ " in b["source"]
        assert len(b["batch"]) == len(b["latency_s"]) == len(b["input_output_tokens"])
    for b in data["lib_ttft"]:
        assert "LLM-Inference-Bench" in b["source"] and " @ " in b["source"]
        assert b["output_tokens"] == 1 and b["ttft_s"] > 0


def test_prefill_half_width_is_the_larger_of_the_two_errors() -> None:
    """The prefill side of a serving interval: the batch terms' 90% error, or the unfitted
    check of prompts at a batch where that is larger (its stack's own rows, else the worst
    stack's); the decode side keeps the batch terms' own."""
    from types import SimpleNamespace
    from typing import Any, cast

    from dse.serving import batched_half_width, prefill_half_width

    cv = json.loads(_read("serving_cv.json"))
    by_stack = cv["prefill_at_batch"]["by_stack"]
    assert set(by_stack) == {"tensorrt-llm", "vllm-cudagraph"}
    worst = max(e["q90_abs_log_error"] for e in by_stack.values())
    for stack in ("vllm-cudagraph", "tensorrt-llm", "vllm-v1", "sglang"):
        pl = cast(Any, SimpleNamespace(kind="gpu", serving=stack))
        own = by_stack.get(stack, {"q90_abs_log_error": worst})["q90_abs_log_error"]
        assert prefill_half_width(pl) == max(batched_half_width(pl), own)
    fpga = cast(Any, SimpleNamespace(kind="fpga", serving=None))
    assert prefill_half_width(fpga) == batched_half_width(fpga) == 0.0


def test_the_power_term_is_the_cross_validated_one_and_rests_on_measured_power() -> None:
    """[power] kv_power_fraction is what the calibration fitted (serving_cv.json), within
    [0, 1], read by every stack; the rows it rests on are LLM-Inference-Bench's own, each
    batched row beside its batch-1 row; the term lowers the ratio error it was fitted to."""
    costs = tomllib.loads(_read("batched_costs.toml"))
    cv = json.loads(_read("serving_cv.json"))["batch_power"]
    value = costs["power"]["kv_power_fraction"]
    assert abs(value - cv["kv_power_fraction"]) < 1e-3 and 0.0 <= value <= 1.0
    assert costs["power"]["source"].startswith("fitted")
    for stack in ("vllm-cudagraph", "tensorrt-llm", "a-stack-without-batched-rows"):
        assert batch_terms(stack).kv_power_fraction == value
    data = tomllib.loads(_read("batched_measurements.toml"))
    from dse.validation.batch_power import pairs, power_rows

    rows = power_rows(data)
    assert len(pairs(rows)) == cv["batched_rows"] == sum(r.batch > 1 for r in rows) >= 30
    for b in data["lib_power"]:
        assert "LLM-Inference-Bench" in b["source"] and " @ " in b["source"]
        assert len(b["batch"]) == len(b["latency_s"]) == len(b["avg_power_w"])
        assert all(50.0 < w < 1000.0 for w in b["avg_power_w"])  # watts, not NVML's mW
    assert cv["fit"]["ratio"]["median_abs_rel_error"] < cv["before"]["ratio"][
        "median_abs_rel_error"]
    assert set(cv["cv"]) == {"leave_one_gpu_out", "leave_one_model_out", "leave_one_stack_out"}


def test_power_ratio_residuals_by_hand() -> None:
    """A batch-16 row measured at 1.5 x its batch-1 row and predicted at 1.2 x: log(1.2 / 1.5)
    = -0.22314; the batch-1 rows carry no residual of their own."""
    import math

    import numpy as np
    import pytest

    from dse.validation.batch_power import PowerRow, ratio_residuals

    rows = [PowerRow("s", "g", "m", 1024, 1, 10.0, 4096, 200.0),
            PowerRow("s", "g", "m", 1024, 16, 20.0, 4096, 300.0)]
    res = ratio_residuals(rows, np.array([250.0, 300.0]))
    assert res.shape == (1,) and float(res[0]) == pytest.approx(math.log(1.2 / 1.5), abs=1e-12)
