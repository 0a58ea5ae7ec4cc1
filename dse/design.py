"""A Design: a system's placements (draft, PRM, target on devices), links, algorithm knobs and
schedule flags, resolved against the catalog and validated.

`--set key=value` overrides any system key (by its TOML name, e.g. `accept_threshold=0.8`,
`fpga_clock_MHz=250`), the aliases `fpga.clock_mhz`, `fpga.channels`, `fpga.mac_lanes`, and the
schedule flags `backtracking`, `step_ahead`, `shadow_sync`. Values are checked by the same strict
loader as the catalog files.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.devices.protocol import Placement
from dse.devices.registry import board, kind_of, place, role_devices_label
from dse.errors import InfeasibleError, SpecError, UnknownNameError
from dse.roles import DEVICE_ROLES
from dse.scenario import SystemSpec
from dse.schedules.registry import FLAGS, Schedule, schedule_for
from dse.specs import SCHEMAS, Catalog, LinkSpec, build_spec


@dataclass(frozen=True)
class Design:
    system: SystemSpec
    schedule: Schedule
    draft: Placement
    prm: Placement
    target: Placement
    draft_link: LinkSpec  # draft device <-> GPUs (tokens, verdicts, KV migration)
    gpu_link: LinkSpec  # PRM GPU <-> target GPU
    accept_threshold: float
    backtrack_threshold: float
    max_backtracks: int
    backtrack_window: int
    max_context_tokens: int
    init_gpu: Placement | None = None  # GPU that prefills a non-GPU draft's prompt (migration)

    @property
    def name(self) -> str:
        return self.system.name


ALIASES = {"fpga.clock_mhz": "fpga_clock_MHz", "fpga.channels": "fpga_memory_channels",
           "fpga.mac_lanes": "fpga_mac_lanes"}


def system_to_toml(s: SystemSpec) -> dict[str, Any]:
    """The TOML table of a system (inverse of the loader's unit conversion)."""
    _, keys = SCHEMAS["system"]
    out: dict[str, Any] = {"schema_version": 1, "kind": "system", "name": s.name,
                           "description": s.description}
    for k in keys:
        v = getattr(s, k.attr)
        if v is None:  # an optional key the file left out (prm_tp: one GPU)
            continue
        out[k.toml] = v / k.scale if k.kind is float else v
    out["sources"] = dict(s.sources)
    return out


def parse_set(items: Sequence[str]) -> tuple[dict[str, Any], dict[str, bool]]:
    """`key=value` strings -> (system key overrides, schedule flag overrides)."""
    _, keys = SCHEMAS["system"]
    by_name = {k.toml: k for k in keys}
    sys_over: dict[str, Any] = {}
    flag_over: dict[str, bool] = {}
    for item in items:
        if "=" not in item:
            raise SpecError("--set", item, "expected key=value")
        key, raw = (x.strip() for x in item.split("=", 1))
        key = ALIASES.get(key, key)
        if key in FLAGS:
            if raw.lower() not in ("true", "false", "1", "0", "on", "off"):
                raise SpecError("--set", key, f"expected true or false, got {raw!r}")
            flag_over[key] = raw.lower() in ("true", "1", "on")
            continue
        if key not in by_name:
            valid = ", ".join(sorted([*by_name, *ALIASES, *FLAGS]))
            raise SpecError("--set", key, f"unknown key; valid: {valid}")
        kind = by_name[key].kind
        try:
            value: Any = (int(raw) if kind is int else float(raw) if kind is float else raw)
        except ValueError:
            raise SpecError("--set", key, f"expected a number, got {raw!r}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise SpecError("--set", key, f"must be finite, got {raw!r}")
        sys_over[key] = value
    return sys_over, flag_over


def toml_value(v: Any) -> str:
    """One TOML value (strings, bools, ints, finite floats, flat lists)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot write non-finite {v!r} to TOML")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON's escapes (\", \\, \n, \uXXXX) are TOML basic-string escapes
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def toml_text(data: Mapping[str, Any], header: str = "") -> str:
    """TOML for nested tables of scalars (scalars first, then each sub-table)."""
    lines: list[str] = []

    def emit(table: Mapping[str, Any], path: list[str]) -> None:
        subs = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
        for k, v in table.items():
            if not isinstance(v, Mapping):
                lines.append(f"{_toml_key(k)} = {toml_value(v)}")
        for k, v in subs:
            lines.append("")
            lines.append("[" + ".".join(_toml_key(x) for x in [*path, k]) + "]")
            emit(v, [*path, k])

    emit(data, [])
    return header + "\n".join(lines) + "\n"


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


@dataclass(frozen=True)
class DesignFile:
    """A design as written by `dse optimize --out` and `dse export`: the system, the schedule
    flags and the workload it was chosen for."""

    system: SystemSpec
    schedule: Schedule | None
    workload: str | None


def design_file_text(s: SystemSpec, sched: Schedule, workload: str,
                     metrics: Mapping[str, float] | None = None, header: str = "") -> str:
    """The TOML of a design file (`kind = "design"`); `read_design_file` reads it back."""
    data: dict[str, Any] = {"schema_version": 1, "kind": "design", "workload": workload,
                            "schedule": {"name": sched.name,
                                         **{f: getattr(sched, f) for f in FLAGS}},
                            "system": system_to_toml(s)}
    if metrics:
        data["metrics"] = {k: float(v) for k, v in metrics.items()
                           if v is not None and math.isfinite(float(v))}
    return toml_text(data, header)


def read_design_file(path: str | Path) -> DesignFile:
    """A design file, or a plain system TOML (schedule and workload then None)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(p, "", f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise SpecError(p, "", f"malformed TOML: {e}") from None
    return parse_design_text(text, p)


def parse_design_text(text: str, where: str | Path) -> DesignFile:
    """A design file's text (or a system TOML's); `where` names it in errors."""
    p = where
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(p, "", f"malformed TOML: {e}") from None
    sched: Schedule | None = None
    workload: str | None = None
    if data.get("kind") == "design":
        if not isinstance(data.get("system"), Mapping):
            raise SpecError(p, "system", "a design file needs a [system] table")
        sd = data.get("schedule", {})
        if not isinstance(sd, Mapping) or any(not isinstance(sd.get(f), bool) for f in FLAGS):
            raise SpecError(p, "schedule", "expected a [schedule] table with true/false "
                            + ", ".join(FLAGS))
        sched = schedule_for(**{f: sd[f] for f in FLAGS})
        wl = data.get("workload")
        if wl is not None and not isinstance(wl, str):
            raise SpecError(p, "workload", "expected a workload name")
        workload = wl
        data = data["system"]
    spec = build_spec(p, data)
    if not isinstance(spec, SystemSpec):
        raise SpecError(p, "kind", 'expected kind = "system" or "design"')
    return DesignFile(spec, sched, workload)


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


def with_overrides(s: SystemSpec, overrides: Mapping[str, Any], *, source: str = "--set"
                   ) -> SystemSpec:
    """The system with some keys replaced, checked by the strict loader; `source` names where
    the values came from (in errors and in the spec's sources)."""
    if not overrides:
        return s
    data = system_to_toml(s)
    data.update(overrides)
    data["sources"] = {**data["sources"], **{k: f"set by {source}" for k in overrides}}
    spec = build_spec(f"{s.path} (with {source})", data)
    assert isinstance(spec, SystemSpec)
    return spec


def build_design(cat: Catalog, s: SystemSpec, sched: Schedule, *, check: bool = True) -> Design:
    """Resolve a system against the catalog. check=True raises InfeasibleError with every reason
    the design cannot run."""
    where = s.path
    _check_names(cat, s)
    models = {r: cat.model(getattr(s, f"{r}_model")) for r in DEVICE_ROLES}
    for role, m in models.items():
        if role not in m.roles:
            raise SpecError(where, f"{role}_model",
                            f"{m.name} cannot be a {role} (its roles: {', '.join(m.roles)})")
    if models["draft"].tokenizer_family != models["target"].tokenizer_family:
        raise SpecError(where, "draft_model",
                        f"draft {models['draft'].name} ({models['draft'].tokenizer_family}) and "
                        f"target {models['target'].name} ({models['target'].tokenizer_family}) "
                        "do not share a tokenizer")
    for role in ("prm", "target"):
        if role not in kind_of(cat, getattr(s, f"{role}_device")).roles:
            raise SpecError(where, f"{role}_device",
                            f"the {role} runs on {role_devices_label(role)} in this model")
    ctx = s.max_context_tokens
    knobs: dict[str, object] = {}
    if s.fpga_clock_hz > 0:
        knobs["clock_hz"] = s.fpga_clock_hz
    if s.fpga_memory_channels > 0:
        knobs["memory_channels"] = s.fpga_memory_channels
    if s.fpga_mac_lanes > 0:
        knobs["mac_lanes"] = s.fpga_mac_lanes
    draft_kind = kind_of(cat, s.draft_device)
    draft = place(cat, models["draft"], s.draft_device, precision_name=s.draft_precision,
                  software=s.draft_serving, context_tokens=ctx,
                  knobs={k: v for k, v in knobs.items() if k in draft_kind.build_knobs})
    prm = place(cat, models["prm"], s.prm_device, precision_name=s.prm_precision,
                software=s.prm_serving, context_tokens=ctx, tp=s.prm_tp or 1)
    target = place(cat, models["target"], s.target_device, precision_name=s.target_precision,
                   software=s.target_serving, context_tokens=ctx, tp=s.target_tp)
    links = {d: cat.link(board(cat, d).host_link) for d in
             (s.draft_device, s.prm_device, s.target_device)}
    slower = min(links[s.prm_device], links[s.target_device],
                 key=lambda ln: ln.effective_bytes_per_s)
    draft_link = min(links[s.draft_device], slower, key=lambda ln: ln.effective_bytes_per_s)
    init_gpu = None
    # HeteroReason Phase 1: the target GPU prefills the prompt, the KV cache migrates
    if draft_kind.prompt_prefill_on_gpu:
        init_gpu = place(cat, models["draft"], s.target_device, precision_name="bf16",
                         software=s.target_serving, context_tokens=ctx)
    d = Design(s, sched, draft, prm, target, draft_link, slower, s.accept_threshold,
               s.backtrack_threshold, s.max_backtracks, s.backtrack_window, ctx, init_gpu)
    if check:
        why = infeasibility(d)
        if why:
            raise InfeasibleError(f"{s.name} is infeasible: " + "; ".join(why))
    return d


def _check_names(cat: Catalog, s: SystemSpec) -> None:
    """Every name the system refers to exists; an unknown one is reported with the file and
    the key that holds it (still an UnknownNameError, exit 2, listing the valid names)."""

    def check(key: str, lookup: Any) -> None:
        try:
            lookup(getattr(s, key))
        except UnknownNameError as e:
            e.args = (f"{s.path}: {key}: {e}",)
            raise

    for role in DEVICE_ROLES:
        check(f"{role}_model", cat.model)
        check(f"{role}_device", lambda name: kind_of(cat, name))
    # a role on a kind that cannot hold it: build_design says so, after the models' checks
    kinds = {r: k for r in DEVICE_ROLES
             if r in (k := kind_of(cat, getattr(s, f"{r}_device"))).roles}
    for role, kind in kinds.items():
        check(f"{role}_precision", lambda name, k=kind, r=role: k.check_precision(
            name, where=s.path, key=f"{r}_precision"))
    for role, kind in kinds.items():  # the serving profile, or the engine, of the role's kind
        check(f"{role}_serving", lambda name, k=kind: cat.get(k.software_kind, name))


def infeasibility(d: Design) -> list[str]:
    why: list[str] = []
    for role in DEVICE_ROLES:
        why += [f"{role}: {w}" for w in getattr(d, role).infeasibility()]
    return why
