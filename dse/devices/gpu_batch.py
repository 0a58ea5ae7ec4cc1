"""The GPU model's batch terms: what a forward pass of more than one sequence costs beyond the
batch-1 physics (dse/devices/gpu.py), calibrated on batched measurements
(`dse/data/batched_costs.toml`, written by scripts/calibrate_serving.py).

Three terms, each exactly absent in a pass of one sequence, so batch 1 is the single-stream
model to the last bit:

- the roofline's knee (`knee_exponent` p, one value for every stack: a GEMM property): a pass
  of s > 1 sequences takes (mem^p + comp^p)^(1/p) instead of max(mem, comp), the smooth
  transition from weight-streaming to compute-bound GEMMs that Vidur's profiled linear layers
  show (A100 and H100, 8 models, 1..4096 tokens: at the ridge the GEMMs take up to 2^(1/p)
  times the roofline); p = inf is the hard max;
- the KV-read share of many sequences (`attention_bw_efficiency_many`, per stack): a decode
  attention kernel over s sequences reads their caches at
  e1 + (e_many - e1) (1 - 1/s) of the datasheet bandwidth, e1 the profile's batch-1 share;
- the host's work per further sequence in a step (`sequence_overhead_us`, per stack:
  scheduling, block tables, sampling, output processing), (s - 1) times it per pass, in series
  with the GPU as the step overhead, scaled by the host's CPU speed;
- the power of an attention streaming many sequences' caches (`kv_power_fraction`, `[power]`,
  one value for every stack): a decode pass's share of the dynamic range moves from the
  profile's decode fraction towards it with the pass's KV share of its DRAM streaming times
  1 - 1/s (dse.devices.power.decode_fraction); fitted to LLM-Inference-Bench's average power
  against the batch (dse.validation.batch_power). Absent (`[power]` missing): the decode
  fraction at every batch.

A stack with no batched measurement takes the pooled values (`[pooled]`: one fit over every
fitted stack's rows); its error is the leave-one-stack-out error the calibration records.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from dse.core.arrays import F64, Num

DATA_FILE = "batched_costs.toml"
TERMS = ("sequence_overhead_us", "attention_bw_efficiency_many")


@dataclass(frozen=True)
class BatchTerms:
    """One stack's batch terms (see the module docstring)."""

    knee_exponent: float
    sequence_overhead_s: float
    attention_bw_efficiency_many: float | None  # None: the batch-1 share at every batch
    fitted: bool  # the stack's own batched rows decided them (else the pooled values)
    kv_power_fraction: float | None = None  # None: the decode fraction at every batch


@cache
def _data() -> dict[str, object]:
    text = resources.files("dse.data").joinpath(DATA_FILE).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    if data.get("schema_version") != 1:
        raise ValueError(f"{DATA_FILE}: schema_version must be 1")
    for name, table in {"pooled": data["pooled"], **data.get("profiles", {})}.items():
        unknown = set(table) - set(TERMS) - {"source"}
        if unknown:
            raise ValueError(f"{DATA_FILE} [{name}]: unknown keys {sorted(unknown)}")
    power = data.get("power", {})
    assert isinstance(power, dict)
    if set(power) - {"kv_power_fraction", "source"}:
        raise ValueError(f"{DATA_FILE} [power]: unknown keys "
                         f"{sorted(set(power) - {'kv_power_fraction', 'source'})}")
    if "kv_power_fraction" in power and not 0.0 <= float(power["kv_power_fraction"]) <= 1.0:
        raise ValueError(f"{DATA_FILE} [power] kv_power_fraction: must be in [0, 1]")
    return data


def batch_terms(profile: str) -> BatchTerms:
    """The batch terms of a serving profile (its own fit, else the pooled one)."""
    data = _data()
    profiles = data.get("profiles", {})
    assert isinstance(profiles, dict)
    own = profiles.get(profile)
    table = own if own is not None else data["pooled"]
    assert isinstance(table, dict)
    gemm = data["gemm"]
    assert isinstance(gemm, dict)
    e_many = table.get("attention_bw_efficiency_many")
    power = data.get("power", {})
    assert isinstance(power, dict)
    kv_pw = power.get("kv_power_fraction")
    return BatchTerms(float(gemm["knee_exponent"]), float(table["sequence_overhead_us"]) * 1e-6,
                      None if e_many is None else float(e_many), own is not None,
                      None if kv_pw is None else float(kv_pw))


def soft_max(a: Num, b: Num, p: Num) -> F64:
    """(a^p + b^p)^(1/p) for a, b >= 0 (p = inf: max(a, b)), computed without overflow."""
    a, b, p = (np.asarray(x, dtype=float) for x in (a, b, p))
    hi = np.maximum(a, b)
    lo = np.minimum(a, b)
    ratio = np.divide(lo, hi, out=np.zeros(np.broadcast(lo, hi).shape), where=hi > 0)
    with np.errstate(over="ignore", under="ignore"):
        grow = np.where(np.isinf(p), 1.0, (1.0 + ratio ** p) ** (1.0 / p))
    return np.asarray(hi * grow)


def kv_bandwidth(one: Num, many: Num, seqs: Num) -> F64:
    """The KV-read bandwidth of a pass of `seqs` sequences: `one` (batch 1) moving towards
    `many` as 1 - 1/seqs (many <= 0: no batched value, `one` at every batch)."""
    s = np.maximum(np.asarray(seqs, dtype=float), 1.0)
    many = np.asarray(many, dtype=float)
    return np.asarray(one + np.where(many > 0, (many - one) * (1.0 - 1.0 / s), 0.0))
