"""The one strict schema checker every input goes through (catalog TOMLs, space and design
files, `--set`, trace JSONL, Hugging Face config.json).

The schema lives on the spec dataclasses: each field declares its TOML key, range, choices and
help with `spec_field(...)`; its type (and whether it may be absent) comes from the field's
annotation, so a kind's schema is never written twice (`schema_of`). A TOML key whose name ends
in a unit (`clock_MHz`, `mem_bw_GBps`) is converted to SI once, here.

Every problem is one `SpecError` line naming the file (and line, for JSONL) and the key:
unknown, missing and mistyped keys; NaN and inf; values out of range; integers beyond 2**53
(10**400 included: no OverflowError); numbers longer than the parser accepts; nesting deeper
than MAX_DEPTH.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dse.core.limits import MAX_INT  # the largest integer any input may hold (2**53)
from dse.errors import SpecError
from dse.specs.files import read_text  # the one reader of input files (re-exported)

SCHEMA_VERSION = 1

# Largest magnitude of any catalog number (in the file's units): far above every physical
# quantity the catalogs hold (FLOP/s ~1e15, bytes ~1e12), far below where products overflow.
MAX_ABS = 1e18
# Smallest magnitude of a nonzero catalog number: below every physical quantity and fitted
# term the catalogs hold (a fitted overhead at its zero bound, 1.6e-22 us), above where a
# quotient of two catalog numbers overflows (1e18 / 1e-30 and its square stay finite).
MIN_ABS = 1e-30
# Deepest nesting of tables and lists any input may have (the deepest shipped file has 3).
MAX_DEPTH = 16
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

_META = "dse.schema"


@dataclass(frozen=True)
class Key:
    """One input key: its TOML name, SI attribute, type, valid range and help text.

    `legacy_zero`: a build knob whose 0 once meant "the default" (the dashboard's widgets
    still show 0 for it and make no override of it); in a file, a space or `--set` a 0 is out
    of range like any other value <= 0, and the error says to leave the key out."""

    toml: str
    attr: str
    kind: type
    lo: float | None = None  # inclusive lower bound
    lo_open: bool = False  # True: value must be > lo
    hi: float | None = None
    optional: bool = False
    choices: tuple[str, ...] | None = None
    help: str = ""
    legacy_zero: bool = False

    @property
    def unit(self) -> str:
        """The unit the TOML key is written in (its name's suffix), '' when SI or a count."""
        suffix = self.toml.rsplit("_", 1)[-1]
        return suffix if suffix in UNIT_SCALE else ""

    @property
    def scale(self) -> float:
        return UNIT_SCALE.get(self.unit, 1.0)


@dataclass(frozen=True)
class _FieldMeta:
    toml: str | None
    lo: float | None
    lo_open: bool
    hi: float | None
    choices: tuple[str, ...] | None
    help: str
    legacy_zero: bool


def spec_field(toml: str | None = None, *, lo: float | None = None, lo_open: bool = False,
               hi: float | None = None, choices: tuple[str, ...] | None = None,
               help: str = "", legacy_zero: bool = False) -> Any:
    """A spec dataclass field carrying its schema (`toml`: the file's key, default the
    attribute's name)."""
    return field(metadata={_META: _FieldMeta(toml, lo, lo_open, hi, choices, help,
                                             legacy_zero)})


def pos(toml: str | None = None, **kw: Any) -> Any:
    """A strictly positive number."""
    return spec_field(toml, lo=0.0, lo_open=True, **kw)


def nonneg(toml: str | None = None, **kw: Any) -> Any:
    return spec_field(toml, lo=0.0, **kw)


def frac(toml: str | None = None, **kw: Any) -> Any:
    """A fraction in (0, 1]."""
    return spec_field(toml, lo=0.0, lo_open=True, hi=1.0, **kw)


def _base_type(hint: Any) -> tuple[type, bool]:
    """(checker type, optional) of a field annotation: float, int, str, bool, list (a tuple of
    strings), dict (a mapping of names to numbers); `X | None` is optional."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"unsupported spec field type {hint!r}")
        return _base_type(rest[0])[0], True
    if hint in (float, int, str, bool):
        return hint, False
    if origin is tuple:
        return list, False
    if origin is not None and issubclass(origin, Mapping):
        return dict, False
    raise TypeError(f"unsupported spec field type {hint!r}")


def schema_of(cls: type) -> tuple[Key, ...]:
    """The keys of a spec dataclass, from its fields' `spec_field` metadata and annotations."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        meta = f.metadata.get(_META)
        if meta is None:
            continue
        kind, optional = _base_type(hints[f.name])
        out.append(Key(meta.toml or f.name, f.name, kind, lo=meta.lo, lo_open=meta.lo_open,
                       hi=meta.hi, optional=optional, choices=meta.choices, help=meta.help,
                       legacy_zero=meta.legacy_zero))
    return tuple(out)


@dataclass(frozen=True)
class Spec:
    """Fields every catalog item has."""

    name: str
    description: str
    path: str
    sources: Mapping[str, str]

    def __reduce__(self) -> tuple[Any, ...]:
        # a spec sent to a forked worker process (dse.search.background): its read-only
        # mappings go as dicts marked to be made read-only again
        state = {f.name: _sendable(getattr(self, f.name)) for f in fields(self)}
        return _received_spec, (type(self), state)


class _ReadOnly(dict[Any, Any]):
    """A read-only mapping on its way to another process."""


def _sendable(v: Any) -> Any:
    if isinstance(v, MappingProxyType):
        return _ReadOnly({k: _sendable(x) for k, x in v.items()})
    if isinstance(v, tuple):
        return tuple(_sendable(x) for x in v)
    return v


def _received(v: Any) -> Any:
    if isinstance(v, _ReadOnly):
        return MappingProxyType({k: _received(x) for k, x in v.items()})
    if isinstance(v, tuple):
        return tuple(_received(x) for x in v)
    return v


def _received_spec(cls: type[Spec], state: dict[str, Any]) -> Spec:
    return cls(**{k: _received(v) for k, v in state.items()})


@dataclass(frozen=True)
class Kind:
    """A registered catalog kind: its dataclass, keys, extra free-form tables and the
    cross-field check run on the checked values (SI) before the spec is built."""

    cls: type[Spec]
    keys: tuple[Key, ...]
    extra_tables: tuple[str, ...] = ()
    check: Callable[[object, dict[str, Any]], None] | None = None
    variants: tuple[str, tuple[str, ...]] | None = None  # (table, the names it may hold)


SCHEMAS: dict[str, Kind] = {}
COMMON_KEYS = ("schema_version", "kind", "name", "description", "sources")


def register_kind(kind: str, cls: type[Spec], *, extra_tables: tuple[str, ...] = (),
                  check: Callable[[object, dict[str, Any]], None] | None = None,
                  variants: tuple[str, tuple[str, ...]] | None = None) -> Kind:
    """Register a catalog kind; its keys are derived from `cls`. A duplicate kind raises.

    `variants = (table, names)`: the file may hold `[table.<name>]` sub-tables that override
    some of its numeric keys for one variant (a serving profile's values on one GPU
    generation). They are checked like the top-level keys and stored on the spec's `variants`
    attribute as {name: {attribute: SI value}}; each sub-table's `source` string names where
    its numbers come from."""
    if kind in SCHEMAS:
        raise ValueError(f"catalog kind {kind!r} is already registered")
    SCHEMAS[kind] = Kind(cls, schema_of(cls), extra_tables, check, variants)
    return SCHEMAS[kind]


def _variants(path: object, data: Mapping[str, Any], kind: Kind
              ) -> MappingProxyType[str, MappingProxyType[str, Any]]:
    """The checked `[table.<name>]` overrides of a kind with variants (see register_kind)."""
    assert kind.variants is not None
    table, names = kind.variants
    raw = data.get(table, {})
    if not isinstance(raw, Mapping):
        raise SpecError(path, table, "expected a table of tables")
    numeric = {k.toml: k for k in kind.keys if k.kind in (float, int)}
    out: dict[str, MappingProxyType[str, Any]] = {}
    for name, sub in raw.items():
        where = f"{table}.{name}"
        if name not in names:
            raise SpecError(path, where, f"unknown {table} entry; valid: {', '.join(names)}")
        if not isinstance(sub, Mapping):
            raise SpecError(path, where, "expected a table of overrides")
        if not isinstance(sub.get("source"), str) or not sub["source"].strip():
            raise SpecError(path, f"{where}.source", "missing: every override table names "
                            "the source of its numbers")
        overrides = {k: v for k, v in sub.items() if k != "source"}
        if not overrides:
            raise SpecError(path, where, "overrides nothing")
        check_keys(path, overrides, numeric, prefix=f"{where}.", what="to override")
        out[name] = MappingProxyType({
            numeric[k].attr: check_value(path, replace(numeric[k], toml=f"{where}.{k}"), v)
            for k, v in overrides.items()})
    return MappingProxyType(out)


# ------------------------------------------------------------------------------ checking


def _number(path: object, k: str, value: Any, what: str) -> int | float:
    """A JSON/TOML number that is not a bool, an int within 2**53 or a finite float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(path, k, f"expected {what}, got {type(value).__name__} "
                        f"{_short(value)}")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise SpecError(path, k, f"must be at most 2**53 in magnitude, got a "
                        f"{len(str(abs(value)))}-digit integer")
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(path, k, f"must be finite, got {value!r}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_value(path: object, key: Key, value: Any) -> Any:
    """Type- and range-check one input value; return it converted to SI."""
    k = key.toml
    if key.kind in (float, int):
        value = _number(path, k, value, "a number" if key.kind is float else "an integer")
        if key.kind is int and isinstance(value, float):
            if not value.is_integer():
                raise SpecError(path, k, f"expected an integer, got {value!r}")
            if abs(value) > MAX_INT:
                raise SpecError(path, k, f"must be at most 2**53 in magnitude, got {value!r}")
            value = int(value)
        if key.lo is not None:
            if key.lo_open and not value > key.lo:
                hint = (" (leave the key out for its default)" if key.legacy_zero and value == 0
                        else "")
                raise SpecError(path, k, f"must be > {key.lo:g}, got {value!r}{hint}")
            if not key.lo_open and not value >= key.lo:
                raise SpecError(path, k, f"must be >= {key.lo:g}, got {value!r}")
        if key.hi is not None and not value <= key.hi:
            raise SpecError(path, k, f"must be <= {key.hi:g}, got {value!r}")
        if key.kind is int:
            return value
        if abs(value) > MAX_ABS:
            raise SpecError(path, k, f"must be at most {MAX_ABS:g} in magnitude, got {value!r}")
        if 0 < abs(value) < MIN_ABS:
            raise SpecError(path, k, f"must be 0 or at least {MIN_ABS:g} in magnitude, got "
                            f"{value!r}")
        return float(value) * key.scale
    if key.kind is bool:
        if not isinstance(value, bool):
            raise SpecError(path, k, f"expected true or false, got {_short(value)}")
        return value
    if key.kind is str:
        if not isinstance(value, str):
            raise SpecError(path, k, f"expected a string, got {type(value).__name__} "
                            f"{_short(value)}")
        if key.choices is not None and value not in key.choices:
            raise SpecError(path, k, f"{value!r} is not one of {', '.join(key.choices)}")
        return value
    if key.kind is dict:
        if not isinstance(value, Mapping) or not value:
            raise SpecError(path, k, f"expected a non-empty table, got {_short(value)}")
        out: dict[str, float] = {}
        for name, v in value.items():
            sub = Key(f"{k}.{name}", name, float, lo=key.lo, lo_open=key.lo_open, hi=key.hi)
            out[name] = check_value(path, sub, v)
        return MappingProxyType(out)
    if key.kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SpecError(path, k, f"expected a list of strings, got {_short(value)}")
        return tuple(value)
    raise TypeError(f"no check for {key.kind!r}")


def check_depth(path: object, value: Any, key: str = "", depth: int = 0, *,
                values: bool = True) -> None:
    """Tables and lists nested at most MAX_DEPTH deep; with `values`, every float finite and
    every integer within 2**53 (free-form tables such as [calibration] included)."""
    if depth > MAX_DEPTH:
        raise SpecError(path, key, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, Mapping):
        for k, v in value.items():
            check_depth(path, v, f"{key}.{k}" if key else str(k), depth + 1, values=values)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_depth(path, v, f"{key}[{i}]", depth + 1, values=values)
    elif not values:
        return
    elif isinstance(value, float) and not math.isfinite(value):
        raise SpecError(path, key, f"must be finite, got {value!r}")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise SpecError(path, key, "must be at most 2**53 in magnitude, got a "
                        f"{len(str(abs(value)))}-digit integer")


def check_keys(path: object, data: Mapping[str, Any], allowed: Iterable[str], *,
               prefix: str = "", what: str = "") -> None:
    """Every key of `data` is one of `allowed`; the first unknown one is an error that lists
    the valid keys."""
    valid = list(allowed)
    for k in data:
        if k not in valid:
            where = f" {what}" if what else ""
            raise SpecError(path, f"{prefix}{k}",
                            f"unknown key{where}; valid: {', '.join(valid)}")


def check_name(path: object, name: Any, stem: str | None) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise SpecError(path, "name",
                        f"must be lowercase letters, digits, '.', '-', got {_short(name)}")
    if stem is not None and name != stem:
        raise SpecError(path, "name", f"{name!r} must equal the file name {stem!r}")
    return name


def check_header(path: object, data: Any, kinds: Iterable[str]) -> str:
    """A table with `schema_version = 1` and a `kind` among `kinds`; returns the kind."""
    if not isinstance(data, Mapping):
        raise SpecError(path, "", "expected a TOML table")
    for k in ("schema_version", "kind"):
        if k not in data:
            raise SpecError(path, k, "missing key")
    version = data["schema_version"]
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        raise SpecError(path, "schema_version",
                        f"unsupported {_short(version)}; expected {SCHEMA_VERSION}")
    kind = data["kind"]
    valid = list(kinds)
    if kind == "design" and kind not in valid:  # a file of dse's own, read elsewhere
        raise SpecError(path, "kind", "'design': a design file (read with --design), not a "
                        "catalog file")
    if not isinstance(kind, str) or kind not in valid:
        raise SpecError(path, "kind", f"unknown kind {_short(kind)}; valid: {', '.join(valid)}")
    return kind


def build_spec(path: object, data: Mapping[str, Any], *, stem: str | None = None) -> Spec:
    """Validate a parsed TOML table and build its frozen spec (no I/O)."""
    check_depth(path, data)
    kind = check_header(path, data, SCHEMAS)
    if "name" not in data:
        raise SpecError(path, "name", "missing key")
    spec_kind = SCHEMAS[kind]
    keys = spec_kind.keys
    name = check_name(path, data["name"], stem)
    description = data.get("description", "")
    if not isinstance(description, str):
        raise SpecError(path, "description", "expected a string")
    sources = data.get("sources", {})
    if not isinstance(sources, Mapping) or not all(isinstance(v, str) for v in sources.values()):
        raise SpecError(path, "sources", "expected a table of strings")
    known = [*COMMON_KEYS, *(k.toml for k in keys), *spec_kind.extra_tables,
             *((spec_kind.variants[0],) if spec_kind.variants else ())]
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
    _check_sources(path, data, keys, sources)
    if spec_kind.variants is not None:
        values["variants"] = _variants(path, data, spec_kind)
    if spec_kind.check is not None:
        spec_kind.check(path, values)
    return spec_kind.cls(
        name=name,
        description=description,
        path=str(path),
        sources=MappingProxyType(dict(sources)),
        **values,
    )


def _check_sources(path: object, data: Mapping[str, Any], keys: tuple[Key, ...],
                   sources: Mapping[str, str]) -> None:
    """Every number given has a source; every source names a key of the file."""
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


# ------------------------------------------------------------------------------- parsing


def parse_toml(text: str, where: object) -> dict[str, Any]:
    """A TOML document's table; every parser failure is one SpecError line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(where, "", f"malformed TOML: {e}") from None
    except ValueError as e:  # an integer longer than Python converts (4300 digits)
        raise SpecError(where, "", f"malformed TOML: {e}") from None
    except RecursionError:
        raise SpecError(where, "", f"nested deeper than {MAX_DEPTH} levels") from None
    check_depth(where, data)
    return data


def read_toml(path: Path) -> dict[str, Any]:
    return parse_toml(read_text(path), path)


def parse_json(text: str, where: object, *, values: bool = True) -> Any:
    """One JSON value; malformed, over-long numbers and deep nesting are one SpecError line
    (`values`: also every number finite and within 2**53, as `check_depth`)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise SpecError(where, "", f"malformed JSON: {e.msg}") from None
    except ValueError as e:
        raise SpecError(where, "", f"malformed JSON: {e}") from None
    except RecursionError:
        raise SpecError(where, "", f"nested deeper than {MAX_DEPTH} levels") from None
    check_depth(where, value, values=values)
    return value
