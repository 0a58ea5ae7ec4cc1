"""dse/data/published.toml: the published batch-1 measurements the GPU serving profiles are
fitted to and cross-validated on (dse.validation) are well formed."""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATH = ROOT / "dse" / "data" / "published.toml"

KINDS = {"gpu_decode", "gpu_prefill", "fpga_decode", "fpga_prefill", "power"}
UNITS = {"tokens/s", "ms/token", "s", "W", "J/token"}
REQUIRED = {"kind": str, "device": str, "model": str, "framework": str, "precision": str,
            "batch": int, "points": list, "unit": str, "source": str, "setting": str}
OPTIONAL = {"catalog_device": str, "catalog_device_assumed": str, "catalog_model": str,
            "catalog_model_assumed": str, "catalog_model_assumed_why": str, "quantization": str,
            "tp": int, "gpus": int, "simulated": bool, "served": str,
            "decode_tokens_per_s": float,  # a power row's throughput (dse.validation.gpu_power)
            "host": str,  # the instance it ran on: a [[host]] table's
            "not_fitted": str}  # why the row is cross-validated but never fitted
HOST_REQUIRED = {"instance": str, "cpu": str, "benchmark": str, "single_thread_score": float,
                 "source": str}
HOST_OPTIONAL = {"cross_check": str}
# A kind's allowed units: decode as a rate (or, timed end to end, the whole call's time), prefill
# as a time or a prompt-token rate.
KIND_UNITS = {"gpu_decode": {"tokens/s", "ms/token", "s"}, "fpga_decode": {"tokens/s", "ms/token"},
              "gpu_prefill": {"s", "tokens/s"}, "fpga_prefill": {"s", "tokens/s"},
              "power": {"W", "J/token"}}


@pytest.fixture(scope="module")
def entries() -> list[dict]:
    with PATH.open("rb") as f:
        data = tomllib.load(f)
    assert data.get("schema_version") == 1
    rows = data["measurement"]
    assert isinstance(rows, list)
    return rows


def _catalog_names(sub: str) -> set[str]:
    return {p.stem for p in (ROOT / sub).rglob("*.toml")}


def test_file_has_enough_entries(entries):
    assert len(entries) >= 40
    assert sum(len(e["points"]) for e in entries) >= 40


def test_header_says_how_the_file_is_used():
    head = PATH.read_text(encoding="utf-8").split("[[measurement]]", 1)[0]
    assert "cross-validated" in head and "scripts/calibrate_devices.py" in head


def test_keys_and_types(entries):
    for i, e in enumerate(entries):
        where = f"entry {i} ({e.get('device')}, {e.get('model')})"
        for key, typ in REQUIRED.items():
            assert key in e, (where, key)
            assert type(e[key]) is typ, (where, key, type(e[key]))
        for key, typ in OPTIONAL.items():
            if key in e:
                assert type(e[key]) is typ, (where, key, type(e[key]))
        extra = set(e) - set(REQUIRED) - set(OPTIONAL)
        assert not extra, (where, extra)
        for key in ("device", "model", "framework", "precision", "source", "setting"):
            assert e[key].strip(), (where, key)
        assert e["kind"] in KINDS, where
        assert e["unit"] in UNITS, where
        assert e["unit"] in KIND_UNITS[e["kind"]], (where, e["kind"], e["unit"])
        assert e["batch"] == 1, where
        for key in ("tp", "gpus"):
            if key in e:
                assert e[key] >= 1, (where, key)


def test_points_finite_positive(entries):
    for i, e in enumerate(entries):
        pts = e["points"]
        assert pts, i
        lengths = []
        for p in pts:
            assert isinstance(p, list) and len(p) == 2, (i, p)
            n, v = p
            assert type(n) is int and n >= 0, (i, p)
            assert type(v) in (int, float) and not isinstance(v, bool), (i, p)
            assert math.isfinite(v) and v > 0, (i, p)
            lengths.append(n)
        assert len(set(lengths)) == len(lengths), (i, "repeated context length", lengths)


def test_source_is_specific(entries):
    """A source names a commit, a pull request or issue thread (its URL), or an arXiv id, not
    just a site."""
    for i, e in enumerate(entries):
        s = e["source"]
        assert len(s) >= 20, (i, s)
        assert (" @ " in s or "pull request" in s or "arXiv" in s
                or re.search(r"github\.com/[\w.-]+/[\w.-]+/issues/\d+", s)), (i, s)


def test_catalog_names_exist(entries):
    boards = _catalog_names("boards")
    models = _catalog_names("models")
    assert boards and models
    for i, e in enumerate(entries):
        for key in ("catalog_device", "catalog_device_assumed"):
            if key in e:
                assert e[key] in boards, (i, key, e[key])
        for key in ("catalog_model", "catalog_model_assumed"):
            if key in e:
                assert e[key] in models, (i, key, e[key])
        assert ("catalog_model_assumed" in e) == ("catalog_model_assumed_why" in e), i


def test_catalog_device_matches_kind(entries):
    gpus = {p.stem for p in (ROOT / "boards" / "gpus").glob("*.toml")}
    fpgas = {p.stem for p in (ROOT / "boards" / "fpgas").glob("*.toml")}
    for i, e in enumerate(entries):
        name = e.get("catalog_device") or e.get("catalog_device_assumed")
        if name is None:
            continue
        if e["kind"].startswith("gpu_"):
            assert name in gpus, (i, name)
        elif e["kind"].startswith("fpga_"):
            assert name in fpgas, (i, name)


def test_prefill_time_grows_with_prompt(entries):
    """A time to first token (unit s) never falls as the prompt grows (more work per call)."""
    for i, e in enumerate(entries):
        if not (e["kind"].endswith("_prefill") and e["unit"] == "s"):
            continue
        pts = sorted(e["points"])
        times = [v for _, v in pts]
        assert times == sorted(times), (i, e["device"], e["model"], pts)


def test_served_marks_only_http_first_token_times(entries):
    """`served = "http"` (an HTTP client's time to first token, kept but not fitted) is the
    only value, and only on prefill entries."""
    for i, e in enumerate(entries):
        if "served" in e:
            assert e["served"] == "http" and e["kind"] == "gpu_prefill", (i, e["served"])


def test_a_vllm_run_without_cuda_graphs_maps_to_eager_vllm(entries):
    """Whatever its version, a vLLM entry whose setting records enforce_eager=True is named (and
    so fitted) as eager vLLM, and one that records enforce_eager=False is not."""
    from dse.validation.measurements import profile_of

    named = 0
    for i, e in enumerate(entries):
        profile = profile_of(e["framework"])
        if "enforce_eager=True" in e["setting"]:
            assert profile == "vllm-eager", (i, e["framework"])
            named += 1
        if "enforce_eager=False" in e["setting"]:
            assert profile != "vllm-eager", (i, e["framework"])
    assert named >= 7


def test_a_decode_time_in_seconds_is_timed_end_to_end(entries):
    """A gpu_decode figure in s is the whole timed call (prefill plus every generated token), so
    its setting says so and names the output length the time is divided by."""
    from dse.validation.measurements import END_TO_END

    for i, e in enumerate(entries):
        if e["kind"] == "gpu_decode" and e["unit"] == "s":
            assert END_TO_END in e["setting"], i
            assert re.search(r"generat\w* (\d+) tokens", e["setting"]), i


def test_only_power_rows_carry_a_throughput(entries):
    for e in entries:
        if "decode_tokens_per_s" in e:
            assert e["kind"] == "power" and e["decode_tokens_per_s"] > 0, e["source"]


def test_hosts_are_sourced_and_every_named_host_has_one(entries):
    """[[host]] tables: one per instance, a positive single-thread score on one benchmark, a
    source at a commit; every row's `host` names one of them, and the reference score
    (host_cpu_slowdown = 1) is positive."""
    with PATH.open("rb") as f:
        data = tomllib.load(f)
    assert data["host_cpu_reference_score"] > 0
    hosts = data["host"]
    names = [h["instance"] for h in hosts]
    assert len(names) == len(set(names)), names
    for h in hosts:
        for key, typ in HOST_REQUIRED.items():
            assert type(h[key]) is typ, (h.get("instance"), key)
        assert not set(h) - set(HOST_REQUIRED) - set(HOST_OPTIONAL), h["instance"]
        assert math.isfinite(h["single_thread_score"]) and h["single_thread_score"] > 0
        assert " @ " in h["source"], h["instance"]
    assert len({h["benchmark"].split(" (")[0] for h in hosts}) == 1  # one benchmark, one scale
    named = {e["host"] for e in entries if "host" in e}
    assert named and named <= set(names), named - set(names)
