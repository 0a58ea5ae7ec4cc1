"""The file formats of a design: a system as its TOML table, design files (`dse optimize
--out`, `dse export`, search candidates), and `--set key=value` overrides of a system.

`--set key=value` overrides any system key (by its TOML name, e.g. `accept_threshold=0.8`,
`fpga_clock_MHz=250`), the aliases `fpga.clock_mhz`, `fpga.channels`, `fpga.mac_lanes`, and the
schedule flags `backtracking`, `step_ahead`, `shadow_sync`. Values are checked by the same strict
loader as the catalog files; `key=` (nothing after the sign) puts an optional key back to its
default (absent).

A design chosen at a load (`dse sweep/optimize --rate R --out DIR`) also carries how it is
served, its [serving] table (ServingSettings, vLLM's names): `dse export` writes it into the vLLM
files.

These sit beside dse/model/design.py, not in dse/specs: a design file carries a schedule and `--set`
takes the schedule flags, and dse/specs (the bottom of the flow) does not import the schedules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.core.limits import MAX_NUM_SEQS, MAX_RATE_PER_S, MIN_RATE_PER_S
from dse.errors import FlagValueError, SpecError
from dse.model.schedules.registry import FLAGS, Schedule, schedule_for
from dse.specs import (
    MAX_INT,
    SCHEMA_VERSION,
    SCHEMAS,
    Catalog,
    Key,
    build_spec,
    check_value,
)
from dse.specs.emit import toml_text
from dse.specs.scenario import SystemSpec
from dse.specs.schema import check_header, check_keys, parse_toml, read_text

ALIASES = {"fpga.clock_mhz": "fpga_clock_MHz", "fpga.channels": "fpga_memory_channels",
           "fpga.mac_lanes": "fpga_mac_lanes"}


def system_to_toml(s: SystemSpec) -> dict[str, Any]:
    """The TOML table of a system (inverse of the loader's unit conversion); optional keys the
    system leaves at their default (None) are left out."""
    out: dict[str, Any] = {"schema_version": 1, "kind": "system", "name": s.name,
                           "description": s.description}
    for k in SCHEMAS["system"].keys:
        v = getattr(s, k.attr)
        if v is None:
            continue
        out[k.toml] = v / k.scale if k.kind is float else v
    out["sources"] = dict(s.sources)
    return out


_BOOL_WORDS = {"true": True, "1": True, "on": True, "false": False, "0": False, "off": False}
_INT_LITERAL = re.compile(r"[+-]?[0-9][0-9_]*")
_MAX_INT_DIGITS = len(str(MAX_INT))


def _set_number(key: Key, raw: str) -> int | float:
    """A `--set` number as written (an integer literal stays an int); within 2**53."""
    if _INT_LITERAL.fullmatch(raw):
        if len(raw.lstrip("+-").replace("_", "")) > _MAX_INT_DIGITS:
            raise FlagValueError("--set", key.toml, f"must be at most 2**53 in magnitude, got a "
                            f"{len(raw)}-character integer")
        return int(raw)
    try:
        return float(raw)
    except ValueError:
        raise FlagValueError("--set", key.toml, f"expected a number, got {raw[:60]!r}") from None


def parse_set(items: Sequence[str]) -> tuple[dict[str, Any], dict[str, bool]]:
    """`key=value` strings -> (system key overrides in TOML units, schedule flag overrides).
    Each value passes the catalog's checker (type, finite, range), `--set` named as the
    source."""
    by_name = {k.toml: k for k in SCHEMAS["system"].keys}
    sys_over: dict[str, Any] = {}
    flag_over: dict[str, bool] = {}
    for item in items:
        if "=" not in item:
            raise FlagValueError("--set", item[:60], "expected key=value")
        key, raw = (x.strip() for x in item.split("=", 1))
        key = ALIASES.get(key, key)
        if key in sys_over or key in flag_over:  # never the last one silently winning
            raise FlagValueError("--set", key[:60], "given twice; set each key once")
        if key in FLAGS:
            if raw.lower() not in _BOOL_WORDS:
                raise FlagValueError("--set", key, f"expected true or false, got {raw[:60]!r}")
            flag_over[key] = _BOOL_WORDS[raw.lower()]
            continue
        if key not in by_name:
            valid = ", ".join(sorted([*by_name, *ALIASES, *FLAGS]))
            raise FlagValueError("--set", key[:60], f"unknown key; valid: {valid}")
        spec_key = by_name[key]
        if raw == "" and spec_key.optional:  # `--set key=`: back to the default (absent)
            sys_over[key] = ""
            continue
        value: Any = _set_number(spec_key, raw) if spec_key.kind in (int, float) else raw
        try:
            check_value("--set", spec_key, value)
        except SpecError as e:
            raise FlagValueError("--set", key, e.reason) from None
        sys_over[key] = float(value) if spec_key.kind is float else value
    return sys_over, flag_over


# the [serving] table's bounds, as dse serve's flags: --replicas, --max-num-seqs,
# --max-num-batched-tokens, --num-speculative-tokens
MAX_REPLICAS = 4096
MAX_NUM_BATCHED_TOKENS = 1_048_576
MAX_SPECULATIVE_TOKENS = 64


@dataclass(frozen=True)
class ServingSettings:
    """How a design chosen at a load is served: the [serving] table of its design file, in
    vLLM's names (what `dse export` writes into the vLLM files).

    rate: the requests (the workload's problems) per second it was chosen for, Poisson, with
    its SLOs in ms (None: none); replicas: copies of the whole design, each taking rate /
    replicas (one set of servers per replica); max_num_seqs, max_num_batched_tokens: the
    scheduler's caps (vLLM's --max-num-seqs, --max-num-batched-tokens; None: vLLM's default for
    each GPU, as the serving model took them); enable_chunked_prefill: True where the serving
    model priced prompts in chunks (the one-model engine; None: not stated); a token-level
    proposer for a target-only design (`ngram`, `eagle` or a catalog draft model) with its k
    (vLLM's num_speculative_tokens) and the acceptance rate the model assumed."""

    rate: float
    replicas: int = 1
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_chunked_prefill: bool | None = None
    speculative_proposer: str | None = None
    num_speculative_tokens: int | None = None
    speculative_acceptance_rate: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None

    def to_table(self) -> dict[str, Any]:
        """The [serving] table (None values left out)."""
        return {k: v for k, v in vars(self).items() if v is not None}


SERVING_KEYS = tuple(ServingSettings.__dataclass_fields__)
# key -> (type, low, high); a float's bounds exclusive below (a positive number)
_SERVING_RANGES: dict[str, tuple[type, float, float]] = {
    "rate": (float, 0.0, math.inf), "replicas": (int, 1, MAX_REPLICAS),
    "max_num_seqs": (int, 1, MAX_NUM_SEQS),
    "max_num_batched_tokens": (int, 1, MAX_NUM_BATCHED_TOKENS),
    "num_speculative_tokens": (int, 1, MAX_SPECULATIVE_TOKENS),
    "ttft_ms": (float, 0.0, math.inf), "tpot_ms": (float, 0.0, math.inf),
    "e2el_ms": (float, 0.0, math.inf)}


def serving_settings(p: str | Path, table: Any) -> ServingSettings:
    """A design file's [serving] table, strict: unknown keys, a wrong type or a value out of
    range name the file and key; a proposer and its k come together."""
    if not isinstance(table, Mapping):
        raise SpecError(p, "serving", "expected a table")
    check_keys(p, table, SERVING_KEYS, prefix="serving.")
    if "rate" not in table:
        raise SpecError(p, "serving.rate", "missing key (the requests/s the design serves)")
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"serving.{k}"
        if k in _SERVING_RANGES:
            kind, lo, hi = _SERVING_RANGES[k]
            if isinstance(v, bool) or not isinstance(v, int | float) or (
                    kind is int and not isinstance(v, int)):
                raise SpecError(p, key, f"expected {'an integer' if kind is int else 'a number'}"
                                f", got {v!r}"[:120])
            if not (math.isfinite(v) and (lo <= v <= hi if kind is int else lo < v)):
                raise SpecError(p, key, f"must be in {lo:g}..{hi:g}, got {v!r}" if kind is int
                                else f"must be a positive number, got {v!r}")
            if k == "rate" and not MIN_RATE_PER_S <= v <= MAX_RATE_PER_S:
                raise SpecError(p, key, f"must be {MIN_RATE_PER_S:g} to {MAX_RATE_PER_S:g} "
                                f"requests/s, got {v!r}")
            out[k] = float(v) if kind is float else v
        elif k == "enable_chunked_prefill":
            if not isinstance(v, bool):
                raise SpecError(p, key, "expected true or false")
            out[k] = v
        elif k == "speculative_proposer":
            if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:/-]*", v):
                raise SpecError(p, key, "expected ngram, eagle or a catalog model name")
            out[k] = v
        else:  # speculative_acceptance_rate
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1:
                raise SpecError(p, key, f"expected a number in [0, 1), got {v!r}"[:120])
            out[k] = float(v)
    if ("speculative_proposer" in out) != ("num_speculative_tokens" in out):
        raise SpecError(p, "serving.num_speculative_tokens", "a speculative_proposer and its "
                        "num_speculative_tokens come together")
    if "speculative_acceptance_rate" in out and "speculative_proposer" not in out:
        raise SpecError(p, "serving.speculative_acceptance_rate", "needs a "
                        "speculative_proposer")
    return ServingSettings(**out)


@dataclass(frozen=True)
class DesignFile:
    """A design as written by `dse optimize --out` and `dse export`: the system, the schedule
    flags and the workload it was chosen for; a design chosen at a load, how it is served."""

    system: SystemSpec
    schedule: Schedule | None
    workload: str | None
    serving: ServingSettings | None = None


DESIGN_KEYS = ("schema_version", "kind", "workload", "schedule", "system", "serving",
               "metrics")


def design_file_text(s: SystemSpec, sched: Schedule, workload: str,
                     metrics: Mapping[str, float] | None = None, header: str = "",
                     serving: ServingSettings | None = None) -> str:
    """The TOML of a design file (`kind = "design"`); `read_design_file` reads it back."""
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": "design",
                            "workload": workload,
                            "schedule": {"name": sched.name,
                                         **{f: getattr(sched, f) for f in FLAGS}},
                            "system": system_to_toml(s)}
    if serving is not None:
        data["serving"] = serving.to_table()
    if metrics:
        data["metrics"] = {k: float(v) for k, v in metrics.items()
                           if v is not None and math.isfinite(float(v))}
    return toml_text(data, header)


def read_design_file(path: str | Path) -> DesignFile:
    """A design file, or a plain system TOML (schedule and workload then None)."""
    p = Path(path)
    return parse_design_text(read_text(p), p)


def parse_design_text(text: str, where: str | Path) -> DesignFile:
    """A design file's text (or a system TOML's); `where` names it in errors. Strict: unknown
    top-level or [schedule] keys and a schema_version other than 1 are errors."""
    p = where
    data = parse_toml(text, p)
    if data.get("kind") != "design":
        spec = build_spec(p, data)
        if not isinstance(spec, SystemSpec):
            raise SpecError(p, "kind", 'expected kind = "system" or "design"')
        return DesignFile(spec, None, None)
    check_header(p, data, ("design",))
    check_keys(p, data, DESIGN_KEYS, what='for kind "design"')
    if not isinstance(data.get("system"), Mapping):
        raise SpecError(p, "system", "a design file needs a [system] table")
    sd = data.get("schedule")
    if not isinstance(sd, Mapping):
        raise SpecError(p, "schedule", "a design file needs a [schedule] table with true/false "
                        + ", ".join(FLAGS))
    check_keys(p, sd, ("name", *FLAGS), prefix="schedule.")
    if "name" in sd and not isinstance(sd["name"], str):
        raise SpecError(p, "schedule.name", "expected a string")
    for f in FLAGS:
        if not isinstance(sd.get(f), bool):
            raise SpecError(p, f"schedule.{f}", "expected true or false")
    sched = schedule_for(**{f: sd[f] for f in FLAGS})
    if "name" in sd and sd["name"] != sched.name:  # the flags decide; a name must agree
        raise SpecError(p, "schedule.name", f"{sd['name'][:60]!r}, but the flags ("
                        + ", ".join(f"{f} = {str(sd[f]).lower()}" for f in FLAGS)
                        + f") are the schedule {sched.name!r}; correct one or drop the name")
    wl = data.get("workload")
    if wl is not None and not isinstance(wl, str):
        raise SpecError(p, "workload", "expected a workload name")
    metrics = data.get("metrics", {})
    if not isinstance(metrics, Mapping):
        raise SpecError(p, "metrics", "expected a table of numbers")
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise SpecError(p, f"metrics.{k}", f"expected a number, got {type(v).__name__}")
    spec = build_spec(p, data["system"])
    if not isinstance(spec, SystemSpec):
        raise SpecError(p, "system.kind", 'expected kind = "system"')
    serving = serving_settings(p, data["serving"]) if "serving" in data else None
    return DesignFile(spec, sched, wl, serving)


def load_system(cat: Catalog, system: str | None = None, design_file: str | None = None
                ) -> SystemSpec:
    if (system is None) == (design_file is None):
        raise SpecError("--system/--design", "", "give exactly one of --system or --design")
    if system is not None:
        spec = cat.get("system", system)
    else:
        spec = read_design_file(design_file or "").system
    if not isinstance(spec, SystemSpec):
        raise SpecError(getattr(spec, "path", ""), "kind", 'expected kind = "system"')
    return spec
