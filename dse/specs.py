"""Frozen spec dataclasses, the strict TOML / config.json loader, and the catalog.

Every catalog item is one TOML file (see docs/catalog-format.md). The loader:
- rejects unknown, missing, mistyped and out-of-range keys, NaN and inf, naming file and key;
- converts keys whose names carry a unit (`clock_MHz`, `mem_bw_GBps`) to SI once;
- requires a `[sources]` entry for every numeric key;
- rejects duplicate names across the catalog.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dse.errors import SpecError, UnknownNameError

SCHEMA_VERSION = 1
# Largest integer a count may hold: 2**53, the last one a float64 represents exactly (numpy
# arithmetic on larger ones loses precision or overflows).
MAX_INT = 2**53
# Largest magnitude of any catalog number (in the file's units): far above every physical
# quantity the catalogs hold (FLOP/s ~1e15, bytes ~1e12), far below where products overflow.
MAX_ABS = 1e18
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

# Unit suffixes of TOML keys -> factor to SI. Decimal prefixes throughout (GB = 1e9 bytes).
UNIT_SCALE = {
    "GB": 1e9,
    "GBps": 1e9,
    "TFLOPS": 1e12,
    "TOPS": 1e12,
    "MHz": 1e6,
    "W": 1.0,
    "us": 1e-6,
    "usd": 1.0,
}


@dataclass(frozen=True)
class Key:
    """One TOML key: its type, its SI attribute name and its valid range."""

    toml: str
    attr: str
    kind: type | tuple[type, ...]
    lo: float | None = None  # inclusive lower bound
    lo_open: bool = False  # True: value must be > lo
    hi: float | None = None
    optional: bool = False
    choices: tuple[str, ...] | None = None

    @property
    def scale(self) -> float:
        suffix = self.toml.rsplit("_", 1)[-1]
        return UNIT_SCALE.get(suffix, 1.0)


def _pos(toml: str, attr: str, kind: type = float, **kw: Any) -> Key:
    """A strictly positive number."""
    return Key(toml, attr, kind, lo=0.0, lo_open=True, **kw)


def _nonneg(toml: str, attr: str, kind: type = float, **kw: Any) -> Key:
    return Key(toml, attr, kind, lo=0.0, **kw)


def _frac(toml: str, attr: str, **kw: Any) -> Key:
    """A fraction in (0, 1]."""
    return Key(toml, attr, float, lo=0.0, lo_open=True, hi=1.0, **kw)


# ----------------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class Spec:
    """Fields every catalog item has."""

    name: str
    description: str
    path: str
    sources: Mapping[str, str]


@dataclass(frozen=True)
class LinkSpec(Spec):
    generation: int
    lanes: int
    theoretical_bytes_per_s: float
    effective_bytes_per_s: float
    latency_s: float


@dataclass(frozen=True)
class GpuSpec(Spec):
    memory_bytes: float
    memory_kind: str
    mem_bw_bytes_per_s: float
    bf16_flops_per_s: float
    fp16_flops_per_s: float
    int8_ops_per_s: float
    tdp_w: float
    idle_w: float
    host_link: str
    nvlink_bidir_bytes_per_s: float
    unified_memory: bool
    host_cpu_slowdown: float
    list_price_usd: float

    kind = "gpu"


@dataclass(frozen=True)
class FpgaSpec(Spec):
    part: str
    vitis_platform: str
    family: str
    process_nm: int
    hbm_bytes: float
    hbm_pseudo_channels: int
    hbm_channel_bytes_per_s: float
    hbm_bytes_per_s: float
    hbm_measured_bytes_per_s: float
    axi_port_bits: int
    ddr_bytes: float
    ddr_channels: int
    ddr_bytes_per_s: float
    lut: int
    ff: int
    dsp: int
    dsp_kind: str
    int8_macs_per_dsp: int
    bram36: int
    uram: int
    clock_min_hz: float
    clock_max_hz: float
    clock_default_hz: float
    static_w: float
    max_w: float
    host_link: str
    list_price_usd: float

    kind = "fpga"

    @property
    def uses_hbm(self) -> bool:
        return self.hbm_bytes > 0

    @property
    def weight_memory_bytes(self) -> float:
        """Memory that holds weights and KV: HBM where the board has it, else DDR."""
        return self.hbm_bytes if self.uses_hbm else self.ddr_bytes

    @property
    def memory_channels(self) -> int:
        return self.hbm_pseudo_channels if self.uses_hbm else self.ddr_channels


@dataclass(frozen=True)
class ModelSpec(Spec):
    hf_id: str
    architecture: str
    tokenizer_family: str
    roles: tuple[str, ...]
    head: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    qkv_bias: bool
    max_position_embeddings: int
    published_params: float | None

    kind = "model"


@dataclass(frozen=True)
class GpuServingSpec(Spec):
    """A GPU serving framework's batch-1 behaviour (vLLM with CUDA graphs, eager, HF, ...).

    Step time = max(roofline / efficiency + layers * layer_gap, layers * launch_per_layer)
                + step_overhead; see dse.devices.gpu.
    """

    mem_bw_efficiency: float
    attention_bw_efficiency: float
    compute_efficiency: float
    decode_power_fraction: float
    prefill_power_fraction: float
    layer_gap_s: float
    launch_per_layer_s: float
    step_overhead_s: float
    prefix_caching: bool
    cuda_graphs: bool
    memory_utilization: float
    runtime_reserve_bytes: float
    allreduce_latency_s: float

    kind = "gpu-serving"


@dataclass(frozen=True)
class FpgaEngineSpec(Spec):
    """A streaming FPGA decoder architecture (FlexLLM-style) and its achieved efficiency."""

    achieved_efficiency: float
    hbm_efficiency: float
    fill_cycles_per_layer: float
    lm_head_fill_cycles: float
    prefill_token_parallel: int
    dsp_per_mac_lane_overhead: float
    lut_per_mac_lane: float
    base_lut: float
    base_dsp: float
    bram36_per_channel: float
    uram_base: float
    dynamic_w_per_ghz_kdsp: float
    memory_pj_per_bit: float

    kind = "fpga-engine"


# ------------------------------------------------------------------------------- schemas

_COMMON = ("schema_version", "kind", "name", "description", "sources")

SCHEMAS: dict[str, tuple[type[Spec], tuple[Key, ...]]] = {
    "link": (
        LinkSpec,
        (
            _pos("generation", "generation", int),
            _pos("lanes", "lanes", int),
            _pos("theoretical_GBps", "theoretical_bytes_per_s"),
            _pos("effective_GBps", "effective_bytes_per_s"),
            _nonneg("latency_us", "latency_s"),
        ),
    ),
    "gpu": (
        GpuSpec,
        (
            _pos("memory_GB", "memory_bytes"),
            Key("memory_kind", "memory_kind", str),
            _pos("mem_bw_GBps", "mem_bw_bytes_per_s"),
            _pos("bf16_TFLOPS", "bf16_flops_per_s"),
            _pos("fp16_TFLOPS", "fp16_flops_per_s"),
            _pos("int8_TOPS", "int8_ops_per_s"),
            _pos("tdp_W", "tdp_w"),
            _nonneg("idle_W", "idle_w"),
            Key("host_link", "host_link", str),
            _nonneg("nvlink_bidir_GBps", "nvlink_bidir_bytes_per_s"),
            Key("unified_memory", "unified_memory", bool),
            _pos("host_cpu_slowdown", "host_cpu_slowdown"),
            _nonneg("list_price_usd", "list_price_usd"),
        ),
    ),
    "fpga": (
        FpgaSpec,
        (
            Key("part", "part", str),
            Key("vitis_platform", "vitis_platform", str),
            Key("family", "family", str, choices=("ultrascale+", "versal")),
            _pos("process_nm", "process_nm", int),
            _nonneg("hbm_GB", "hbm_bytes"),
            _nonneg("hbm_pseudo_channels", "hbm_pseudo_channels", int),
            _nonneg("hbm_channel_GBps", "hbm_channel_bytes_per_s"),
            _nonneg("hbm_GBps", "hbm_bytes_per_s"),
            _nonneg("hbm_measured_GBps", "hbm_measured_bytes_per_s"),
            _pos("axi_port_bits", "axi_port_bits", int),
            _nonneg("ddr_GB", "ddr_bytes"),
            _nonneg("ddr_channels", "ddr_channels", int),
            _nonneg("ddr_GBps", "ddr_bytes_per_s"),
            _pos("lut", "lut", int),
            _pos("ff", "ff", int),
            _pos("dsp", "dsp", int),
            Key("dsp_kind", "dsp_kind", str, choices=("dsp48e2", "dsp58")),
            _pos("int8_macs_per_dsp", "int8_macs_per_dsp", int),
            _nonneg("bram36", "bram36", int),
            _nonneg("uram", "uram", int),
            _pos("clock_min_MHz", "clock_min_hz"),
            _pos("clock_max_MHz", "clock_max_hz"),
            _pos("clock_default_MHz", "clock_default_hz"),
            _nonneg("static_W", "static_w"),
            _pos("max_W", "max_w"),
            Key("host_link", "host_link", str),
            _nonneg("list_price_usd", "list_price_usd"),
        ),
    ),
    "model": (
        ModelSpec,
        (
            Key("hf_id", "hf_id", str),
            Key("architecture", "architecture", str, choices=("qwen2", "llama", "mistral")),
            Key("tokenizer_family", "tokenizer_family", str),
            Key("roles", "roles", list),
            Key("head", "head", str, choices=("lm", "prm-classifier", "value")),
            _pos("hidden_size", "hidden_size", int),
            _pos("num_layers", "num_layers", int),
            _pos("num_attention_heads", "num_attention_heads", int),
            _pos("num_kv_heads", "num_kv_heads", int),
            _pos("head_dim", "head_dim", int),
            _pos("intermediate_size", "intermediate_size", int),
            _pos("vocab_size", "vocab_size", int),
            Key("tie_word_embeddings", "tie_word_embeddings", bool),
            Key("qkv_bias", "qkv_bias", bool),
            _pos("max_position_embeddings", "max_position_embeddings", int),
            _pos("published_params", "published_params", optional=True),
        ),
    ),
    "gpu-serving": (
        GpuServingSpec,
        (
            _frac("mem_bw_efficiency", "mem_bw_efficiency"),
            _frac("attention_bw_efficiency", "attention_bw_efficiency"),
            _frac("compute_efficiency", "compute_efficiency"),
            _frac("decode_power_fraction", "decode_power_fraction"),
            _frac("prefill_power_fraction", "prefill_power_fraction"),
            _nonneg("layer_gap_us", "layer_gap_s"),
            _nonneg("launch_per_layer_us", "launch_per_layer_s"),
            _nonneg("step_overhead_us", "step_overhead_s"),
            Key("prefix_caching", "prefix_caching", bool),
            Key("cuda_graphs", "cuda_graphs", bool),
            _frac("memory_utilization", "memory_utilization"),
            _nonneg("runtime_reserve_GB", "runtime_reserve_bytes"),
            _nonneg("allreduce_latency_us", "allreduce_latency_s"),
        ),
    ),
    "fpga-engine": (
        FpgaEngineSpec,
        (
            _frac("achieved_efficiency", "achieved_efficiency"),
            _frac("hbm_efficiency", "hbm_efficiency"),
            _nonneg("fill_cycles_per_layer", "fill_cycles_per_layer"),
            _nonneg("lm_head_fill_cycles", "lm_head_fill_cycles"),
            _pos("prefill_token_parallel", "prefill_token_parallel", int),
            _nonneg("dsp_per_mac_lane_overhead", "dsp_per_mac_lane_overhead"),
            _nonneg("lut_per_mac_lane", "lut_per_mac_lane"),
            _nonneg("base_lut", "base_lut"),
            _nonneg("base_dsp", "base_dsp"),
            _nonneg("bram36_per_channel", "bram36_per_channel"),
            _nonneg("uram_base", "uram_base"),
            _nonneg("dynamic_w_per_ghz_kdsp", "dynamic_w_per_ghz_kdsp"),
            _nonneg("memory_pj_per_bit", "memory_pj_per_bit"),
        ),
    ),
}

ROLES = ("draft", "target", "prm")
# Extra top-level tables a kind may carry besides [sources] (free-form provenance).
_EXTRA_TABLES = {"gpu-serving": ("calibration",), "fpga-engine": ("calibration",)}


def register_kind(kind: str, cls: type[Spec], keys: tuple[Key, ...]) -> None:
    """Register a new catalog kind (scenario, system, ...). A duplicate kind raises."""
    if kind in SCHEMAS:
        raise ValueError(f"catalog kind {kind!r} is already registered")
    SCHEMAS[kind] = (cls, keys)


# ------------------------------------------------------------------------------ checking


def _type_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return {float: "number", int: "integer", str: "string", bool: "boolean", list: "list"}.get(
        kind, kind.__name__
    )


def check_value(path: object, key: Key, value: Any) -> Any:
    """Type- and range-check one TOML value; return it converted to SI."""
    k = key.toml
    if key.kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SpecError(path, k, f"expected a number, got {type(value).__name__} {value!r}")
        value = float(value)
    elif key.kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and math.isfinite(value):
                value = int(value)
            else:
                raise SpecError(path, k, f"expected an integer, got {value!r}")
    elif key.kind is bool:
        if not isinstance(value, bool):
            raise SpecError(path, k, f"expected true or false, got {value!r}")
    elif key.kind is str:
        if not isinstance(value, str):
            raise SpecError(path, k, f"expected a string, got {value!r}")
        if key.choices is not None and value not in key.choices:
            raise SpecError(path, k, f"{value!r} is not one of {', '.join(key.choices)}")
        return value
    elif key.kind is dict:
        if not isinstance(value, Mapping) or not value:
            raise SpecError(path, k, f"expected a non-empty table, got {value!r}")
        out: dict[str, float] = {}
        for name, v in value.items():
            sub = Key(f"{k}.{name}", name, float, lo=key.lo, lo_open=key.lo_open, hi=key.hi)
            out[name] = check_value(path, sub, v)
        return MappingProxyType(out)
    elif key.kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SpecError(path, k, f"expected a list of strings, got {value!r}")
        return tuple(value)
    if isinstance(value, float | int) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise SpecError(path, k, f"must be finite, got {value!r}")
        if key.lo is not None:
            if key.lo_open and not value > key.lo:
                raise SpecError(path, k, f"must be > {key.lo:g}, got {value!r}")
            if not key.lo_open and not value >= key.lo:
                raise SpecError(path, k, f"must be >= {key.lo:g}, got {value!r}")
        if key.hi is not None and not value <= key.hi:
            raise SpecError(path, k, f"must be <= {key.hi:g}, got {value!r}")
        if key.kind is float and abs(value) > MAX_ABS:
            raise SpecError(path, k, f"must be at most {MAX_ABS:g} in magnitude, got {value!r}")
        scaled = value * key.scale
        if key.kind is int:
            if value > MAX_INT:
                raise SpecError(path, k, f"must be <= {MAX_INT}, got {value!r}")
            return value
        if not math.isfinite(scaled):
            raise SpecError(path, k, f"value {value!r} overflows")
        return scaled
    return value


def _check_name(path: object, name: Any, stem: str | None) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise SpecError(path, "name", f"must be lowercase letters, digits, '.', '-', got {name!r}")
    if stem is not None and name != stem:
        raise SpecError(path, "name", f"{name!r} must equal the file name {stem!r}")
    return name


def build_spec(path: object, data: Mapping[str, Any], *, stem: str | None = None) -> Spec:
    """Validate a parsed TOML table and build its frozen spec (no I/O)."""
    if not isinstance(data, Mapping):
        raise SpecError(path, "", "expected a TOML table")
    for k in ("schema_version", "kind", "name"):
        if k not in data:
            raise SpecError(path, k, "missing key")
    if data["schema_version"] != SCHEMA_VERSION:
        raise SpecError(
            path, "schema_version", f"unsupported {data['schema_version']!r}; expected 1"
        )
    kind = data["kind"]
    if kind not in SCHEMAS:
        raise SpecError(path, "kind", f"unknown kind {kind!r}; valid: {', '.join(SCHEMAS)}")
    cls, keys = SCHEMAS[kind]
    name = _check_name(path, data["name"], stem)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise SpecError(path, "description", "expected a string")
    sources = data.get("sources", {})
    if not isinstance(sources, Mapping) or not all(isinstance(v, str) for v in sources.values()):
        raise SpecError(path, "sources", "expected a table of strings")
    known = {k.toml for k in keys} | set(_COMMON) | set(_EXTRA_TABLES.get(kind, ()))
    for k in data:
        if k not in known:
            raise SpecError(path, k, f"unknown key for kind {kind!r}")
    values: dict[str, Any] = {}
    for key in keys:
        if key.toml not in data:
            if key.optional:
                values[key.attr] = None
                continue
            raise SpecError(path, key.toml, "missing key")
        values[key.attr] = check_value(path, key, data[key.toml])
    sourced: set[str] = set()
    for key in keys:
        if key.toml not in data:
            continue
        if key.kind is dict:
            names = [f"{key.toml}.{n}" for n in data[key.toml]]
        elif key.kind in (float, int):
            names = [key.toml]
        else:
            names = []
        for n in names:
            if n not in sources and key.toml not in sources and "*" not in sources:
                raise SpecError(path, f"sources.{n}", "a number without a source")
        sourced |= {key.toml, *names}
    for k in sources:
        if k != "*" and k not in sourced and k not in {key.toml for key in keys}:
            raise SpecError(path, f"sources.{k}", "names no key of this file")
    for extra in _EXTRA_TABLES.get(kind, ()):
        if extra in data:
            _check_finite(path, extra, data[extra])
    if kind == "model":
        _check_model(path, values)
    if kind == "fpga":
        _check_fpga(path, values)
    return cls(
        name=name,
        description=description,
        path=str(path),
        sources=MappingProxyType(dict(sources)),
        **values,
    )


def _check_model(path: object, v: dict[str, Any]) -> None:
    bad = [r for r in v["roles"] if r not in ROLES]
    if bad or not v["roles"]:
        raise SpecError(path, "roles", f"roles must be a non-empty subset of {ROLES}, got {bad}")
    if v["num_attention_heads"] % v["num_kv_heads"]:
        raise SpecError(path, "num_kv_heads", "must divide num_attention_heads")
    if ("prm" in v["roles"]) != (v["head"] != "lm"):
        raise SpecError(path, "head", "a PRM has a reward head; a generator has head 'lm'")


def _check_finite(path: object, key: str, value: Any) -> None:
    """A free-form provenance table: any values, but no NaN or inf."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _check_finite(path, f"{key}.{k}", v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(path, f"{key}[{i}]", v)
    elif isinstance(value, float) and not math.isfinite(value):
        raise SpecError(path, key, f"must be finite, got {value!r}")


def _check_fpga(path: object, v: dict[str, Any]) -> None:
    """The memory the decoder streams from must have channels and bandwidth; clocks ordered."""
    if v["hbm_bytes"] > 0:
        need = (("hbm_pseudo_channels", "hbm_pseudo_channels"),
                ("hbm_channel_GBps", "hbm_channel_bytes_per_s"), ("hbm_GBps", "hbm_bytes_per_s"))
        what = "a board with HBM (hbm_GB > 0)"
    else:
        need = (("ddr_GB", "ddr_bytes"), ("ddr_channels", "ddr_channels"),
                ("ddr_GBps", "ddr_bytes_per_s"))
        what = "a board without HBM (hbm_GB = 0) streams from DDR, so it"
    for toml_key, attr in need:
        if not v[attr] > 0:
            raise SpecError(path, toml_key, f"must be > 0 for {what}")
    lo, hi, default = v["clock_min_hz"], v["clock_max_hz"], v["clock_default_hz"]
    if not lo <= default <= hi:
        raise SpecError(path, "clock_default_MHz", f"must lie in clock_min_MHz..clock_max_MHz "
                        f"({lo / 1e6:g}..{hi / 1e6:g}), got {default / 1e6:g}")


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, "", f"malformed TOML: {e}") from None
    except UnicodeDecodeError:
        raise SpecError(path, "", "not UTF-8 text") from None
    except OSError as e:
        raise SpecError(path, "", f"cannot read: {e.strerror}") from None


def load_spec(path: str | Path) -> Spec:
    """Load one catalog TOML file."""
    p = Path(path)
    return build_spec(p, _load_toml(p), stem=p.stem)


# --------------------------------------------------------------- Hugging Face config.json

_HF_ARCH = {"qwen2": ("qwen2", True), "llama": ("llama", False), "mistral": ("mistral", False)}


def model_from_hf_config(path: str | Path) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face config.json (Llama / Qwen2 / Mistral keys)."""
    p = Path(path)
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(p, "", f"cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise SpecError(p, "", f"malformed JSON: {e}") from None
    if not isinstance(cfg, dict):
        raise SpecError(p, "", "expected a JSON object")
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or model_type not in _HF_ARCH:
        raise SpecError(
            p, "model_type", f"unsupported {model_type!r}; supported: {', '.join(_HF_ARCH)}"
        )
    arch, default_bias = _HF_ARCH[model_type]

    def req(key: str) -> Any:
        if key not in cfg:
            raise SpecError(p, key, "missing key")
        return cfg[key]

    hidden = req("hidden_size")
    heads = req("num_attention_heads")
    archs = " ".join(cfg.get("architectures") or [])
    is_prm = "Reward" in archs or "PRM" in archs or "ProcessReward" in archs
    vocab = req("vocab_size")
    family = {"qwen2": "qwen2", "mistral": "mistral"}.get(
        model_type, "llama3" if isinstance(vocab, int) and vocab >= 128000 else "llama2"
    )
    raw = {
        "hf_id": str(cfg.get("_name_or_path") or p.parent.name),
        "architecture": arch,
        "tokenizer_family": family,
        "roles": ["prm"] if is_prm else ["draft", "target"],
        "head": "prm-classifier" if is_prm else "lm",
        "hidden_size": hidden,
        "num_layers": req("num_hidden_layers"),
        "num_attention_heads": heads,
        "num_kv_heads": cfg.get("num_key_value_heads", heads),
        "head_dim": cfg.get("head_dim")
        or (hidden // heads if isinstance(hidden, int) and isinstance(heads, int) and heads
            else None),
        "intermediate_size": req("intermediate_size"),
        "vocab_size": vocab,
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "qkv_bias": bool(cfg.get("attention_bias", default_bias)),
        "max_position_embeddings": req("max_position_embeddings"),
    }
    if raw["head_dim"] is None:
        raise SpecError(p, "head_dim", "missing and not derivable from hidden_size / heads")
    stem = re.sub(r"[^a-z0-9._-]+", "-", (p.parent.name or p.stem).lower()).strip("-") or "model"
    data = {
        "schema_version": 1,
        "kind": "model",
        "name": stem,
        "description": f"from {p}",
        "sources": {"*": f"Hugging Face config.json at {p}"},
        **raw,
    }
    spec = build_spec(p, data)
    assert isinstance(spec, ModelSpec)
    return spec


# -------------------------------------------------------------------------------- catalog


SPACES_DIR = "spaces"


def default_catalog_dirs() -> list[Path]:
    """The shipped catalog: inside the wheel (dse/_catalog) or the source tree's root."""
    here = Path(__file__).resolve().parent
    packaged = here / "_catalog"
    root = packaged if packaged.is_dir() else here.parent
    return [root / d for d in ("boards", "models", "scenarios") if (root / d).is_dir()]


@dataclass(frozen=True)
class Catalog:
    """All specs by kind and name. Build it with `Catalog.load`."""

    items: Mapping[str, Mapping[str, Spec]] = field(default_factory=dict)

    @classmethod
    def load(cls, extra_dirs: Iterable[str | Path] = (), *, shipped: bool = True) -> Catalog:
        dirs = [*default_catalog_dirs()] if shipped else []
        for d in extra_dirs:
            p = Path(d)
            if not p.is_dir():
                raise SpecError(p, "", "--catalog: not a directory")
            dirs.append(p)
        by_kind: dict[str, dict[str, Spec]] = {k: {} for k in SCHEMAS}
        for d in dirs:
            for f in sorted(d.rglob("*.toml")):
                if SPACES_DIR in f.relative_to(d).parts:  # design spaces: dse.space reads them
                    continue
                spec = load_spec(f)
                kind = _kind_of(spec)
                if spec.name in by_kind[kind]:
                    other = by_kind[kind][spec.name].path
                    raise SpecError(
                        f, "name", f"duplicate {kind} name {spec.name!r} (also {other})"
                    )
                by_kind[kind][spec.name] = spec
        for kind, specs in by_kind.items():
            for spec in specs.values():
                _check_references(kind, spec, by_kind)
        return cls({k: MappingProxyType(v) for k, v in by_kind.items()})

    def names(self, kind: str) -> list[str]:
        return sorted(self.items.get(kind, {}))

    def get(self, kind: str, name: str) -> Spec:
        specs = self.items.get(kind, {})
        if name not in specs:
            raise UnknownNameError(kind, name, list(specs))
        return specs[name]

    def gpu(self, name: str) -> GpuSpec:
        return self.get("gpu", name)  # type: ignore[return-value]

    def fpga(self, name: str) -> FpgaSpec:
        return self.get("fpga", name)  # type: ignore[return-value]

    def link(self, name: str) -> LinkSpec:
        return self.get("link", name)  # type: ignore[return-value]

    def serving(self, name: str) -> GpuServingSpec:
        return self.get("gpu-serving", name)  # type: ignore[return-value]

    def engine(self, name: str) -> FpgaEngineSpec:
        return self.get("fpga-engine", name)  # type: ignore[return-value]

    def device(self, name: str) -> GpuSpec | FpgaSpec:
        """A GPU or FPGA board by name."""
        for kind in ("gpu", "fpga"):
            if name in self.items.get(kind, {}):
                return self.items[kind][name]  # type: ignore[return-value]
        raise UnknownNameError("device", name, self.names("gpu") + self.names("fpga"))

    def model(self, name_or_path: str) -> ModelSpec:
        """A model by catalog name, or a path to a model TOML or a HF config.json."""
        if name_or_path in self.items.get("model", {}):
            return self.items["model"][name_or_path]  # type: ignore[return-value]
        p = Path(name_or_path)
        if p.suffix == ".json" or (p.is_dir() and (p / "config.json").is_file()):
            return model_from_hf_config(p / "config.json" if p.is_dir() else p)
        if p.suffix == ".toml":
            spec = load_spec(p)
            if not isinstance(spec, ModelSpec):
                raise SpecError(p, "kind", "expected kind = \"model\"")
            return spec
        raise UnknownNameError("model", name_or_path, self.names("model"))


def _kind_of(spec: Spec) -> str:
    for kind, (cls, _) in SCHEMAS.items():
        if type(spec) is cls:
            return kind
    raise TypeError(type(spec))


_REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "gpu": (("host_link", "link"),),
    "fpga": (("host_link", "link"),),
}


def _check_references(kind: str, spec: Spec, by_kind: Mapping[str, Mapping[str, Spec]]) -> None:
    for attr, target in _REFERENCES.get(kind, ()):
        ref = getattr(spec, attr)
        if ref not in by_kind.get(target, {}):
            valid = ", ".join(sorted(by_kind.get(target, {}))) or "(none)"
            raise SpecError(spec.path, attr, f"unknown {target} {ref!r}; valid: {valid}")


def spec_fields(spec: Spec) -> dict[str, Any]:
    """A spec's fields as a plain dict (for --json), without provenance."""
    return {
        f.name: getattr(spec, f.name) for f in fields(spec) if f.name not in ("sources", "path")
    }

