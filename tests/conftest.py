"""Shared fixtures: the shipped catalog, and synthetic specs with round numbers for hand checks."""

from __future__ import annotations

from typing import Any

import pytest

from dse.specs import Catalog, build_spec


@pytest.fixture(scope="session")
def cat() -> Catalog:
    return Catalog.load()


def make(kind: str, name: str = "test", **fields: Any) -> Any:
    """Build a spec of `kind` from keyword fields (all sourced by a wildcard)."""
    data = {"schema_version": 1, "kind": kind, "name": name, "description": "test",
            "sources": {"*": "test"}, **fields}
    return build_spec("<test>", data)


GPU_FIELDS = dict(
    memory_GB=24.0, memory_kind="gddr6x", mem_bw_GBps=1000.0, bf16_TFLOPS=100.0,
    fp16_TFLOPS=100.0, int8_TOPS=200.0, generation="ampere", tdp_W=300.0, idle_W=20.0,
    host_link="pcie-gen4-x16",
    nvlink_bidir_GBps=0.0, unified_memory=False, host_cpu_slowdown=1.0, wait_power_fraction=0.0,
    list_price_usd=1000.0,
)
SERVING_FIELDS = dict(
    mem_bw_efficiency=1.0, attention_bw_efficiency=0.5, compute_efficiency=1.0,
    decode_power_fraction=0.5, prefill_power_fraction=0.9, layer_gap_us=0.0,
    launch_per_layer_us=0.0, step_overhead_us=1000.0, prefix_caching=True, cuda_graphs=True,
    memory_utilization=0.9, runtime_reserve_GB=1.0, allreduce_latency_us=10.0,
)


def make_gpu(**over: Any) -> Any:
    return make("gpu", **{**GPU_FIELDS, **over})


def make_serving(**over: Any) -> Any:
    return make("gpu-serving", **{**SERVING_FIELDS, **over})
