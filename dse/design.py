"""A Design: a system's placements (draft, PRM, target on devices), links, algorithm knobs and
schedule flags, resolved against the catalog and validated.

`--set key=value` overrides any system key (by its TOML name, e.g. `accept_threshold=0.8`,
`fpga_clock_MHz=250`), the aliases `fpga.clock_mhz`, `fpga.channels`, `fpga.mac_lanes`, and the
schedule flags `backtracking`, `step_ahead`, `shadow_sync`. Values are checked by the same strict
loader as the catalog files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dse.devices.protocol import Placement
from dse.devices.registry import DeviceKind, board, kind_of, place, role_devices_label
from dse.errors import FlagValueError, InfeasibleError, SpecError, UnknownNameError
from dse.roles import DEVICE_ROLES
from dse.scenario import SystemSpec
from dse.schedules.registry import FLAGS, Schedule, schedule_for
from dse.specs import (
    MAX_INT,
    SCHEMA_VERSION,
    SCHEMAS,
    Catalog,
    Key,
    LinkSpec,
    ModelSpec,
    build_spec,
    check_value,
)
from dse.specs.emit import toml_text
from dse.specs.schema import check_header, check_keys, parse_toml, read_text


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
        if key in FLAGS:
            if raw.lower() not in _BOOL_WORDS:
                raise FlagValueError("--set", key, f"expected true or false, got {raw[:60]!r}")
            flag_over[key] = _BOOL_WORDS[raw.lower()]
            continue
        if key not in by_name:
            valid = ", ".join(sorted([*by_name, *ALIASES, *FLAGS]))
            raise FlagValueError("--set", key[:60], f"unknown key; valid: {valid}")
        spec_key = by_name[key]
        value: Any = _set_number(spec_key, raw) if spec_key.kind in (int, float) else raw
        try:
            check_value("--set", spec_key, value)
        except SpecError as e:
            raise FlagValueError("--set", key, e.reason) from None
        sys_over[key] = float(value) if spec_key.kind is float else value
    return sys_over, flag_over


@dataclass(frozen=True)
class DesignFile:
    """A design as written by `dse optimize --out` and `dse export`: the system, the schedule
    flags and the workload it was chosen for."""

    system: SystemSpec
    schedule: Schedule | None
    workload: str | None


DESIGN_KEYS = ("schema_version", "kind", "workload", "schedule", "system", "metrics")


def design_file_text(s: SystemSpec, sched: Schedule, workload: str,
                     metrics: Mapping[str, float] | None = None, header: str = "") -> str:
    """The TOML of a design file (`kind = "design"`); `read_design_file` reads it back."""
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": "design",
                            "workload": workload,
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
    return DesignFile(spec, sched, wl)


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


def legacy_draft_engine(cat: Catalog, s: SystemSpec) -> SystemSpec:
    """An old system's `draft_serving` that names an FPGA engine on an FPGA draft is its
    `draft_engine` (the two were one key before); a conflict with `draft_engine` is an
    error."""
    legacy = s.draft_serving
    try:
        kind = kind_of(cat, s.draft_device)
    except UnknownNameError:  # _check_names reports it with the file and key
        return s
    if legacy is None or kind.software_key != "engine" or legacy not in cat.names(
            kind.software_kind):
        return s
    if s.draft_engine is not None and s.draft_engine != legacy:
        raise SpecError(s.path, "draft_serving", f"names the FPGA engine {legacy!r} but "
                        f"draft_engine is {s.draft_engine!r}; give the engine as draft_engine")
    return replace(s, draft_serving=None, draft_engine=legacy)


def software_of(s: SystemSpec, role: str, kind: DeviceKind) -> str | None:
    """The software a role's device runs, from the system key its kind names
    (`<role>_serving` for a GPU serving profile, `<role>_engine` for an FPGA engine); None: the
    kind's default."""
    value = getattr(s, f"{role}_{kind.software_key}", None)
    return value if isinstance(value, str) else None


def build_design(cat: Catalog, s: SystemSpec, sched: Schedule, *, check: bool = True) -> Design:
    """Resolve a system against the catalog. check=True raises InfeasibleError with every reason
    the design cannot run."""
    where = s.path
    s = legacy_draft_engine(cat, s)
    _check_names(cat, s)
    models: dict[str, ModelSpec] = {r: cat.model(getattr(s, f"{r}_model")) for r in DEVICE_ROLES}
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
    # build knobs the system sets (None: the board's or engine's default)
    knobs = {k: v for k, v in (("clock_hz", s.fpga_clock_hz),
                               ("memory_channels", s.fpga_memory_channels),
                               ("mac_lanes", s.fpga_mac_lanes)) if v is not None}
    kinds: dict[str, DeviceKind] = {r: kind_of(cat, getattr(s, f"{r}_device"))
                                    for r in DEVICE_ROLES}
    draft = place(cat, models["draft"], s.draft_device, precision_name=s.draft_precision,
                  software=software_of(s, "draft", kinds["draft"]), context_tokens=ctx,
                  knobs={k: v for k, v in knobs.items() if k in kinds["draft"].build_knobs})
    prm = place(cat, models["prm"], s.prm_device, precision_name=s.prm_precision,
                software=software_of(s, "prm", kinds["prm"]), context_tokens=ctx,
                tp=s.prm_tp or 1)
    target = place(cat, models["target"], s.target_device, precision_name=s.target_precision,
                   software=software_of(s, "target", kinds["target"]), context_tokens=ctx,
                   tp=s.target_tp)
    links = {d: cat.link(board(cat, d).host_link) for d in
             (s.draft_device, s.prm_device, s.target_device)}
    slower = min(links[s.prm_device], links[s.target_device],
                 key=lambda ln: ln.effective_bytes_per_s)
    draft_link = min(links[s.draft_device], slower, key=lambda ln: ln.effective_bytes_per_s)
    init_gpu = None
    # HeteroReason Phase 1: the target GPU prefills the prompt, the KV cache migrates
    if kinds["draft"].prompt_prefill_on_gpu:
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
        if getattr(s, key, None) is None:  # an optional key left at its default
            return
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
        check(f"{role}_{kind.software_key}", lambda name, k=kind: cat.get(k.software_kind, name))


def infeasibility(d: Design) -> list[str]:
    why: list[str] = []
    for role in DEVICE_ROLES:
        why += [f"{role}: {w}" for w in getattr(d, role).infeasibility()]
    return why
