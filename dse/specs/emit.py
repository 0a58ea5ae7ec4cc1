"""The one deterministic emitter of TOML, JSON and YAML text (no dependency).

`value_text(v, fmt)` writes one scalar or flat list in the chosen format; `toml_text` and
`yaml_text` write nested tables of them; `json_text` a whole JSON document. Strings are written
with JSON's escapes, which TOML basic strings and YAML double-quoted scalars both accept; YAML
leaves a string plain only when it cannot be read as anything else (a bool, a number, null, a
special character). Non-finite floats are an error in every format (JSON documents write them as
null through `jsonable`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

Format = Literal["toml", "json", "yaml"]

_YAML_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_./-]*$")
# YAML 1.1 / 1.2 words a plain scalar would turn into a bool or null.
_YAML_RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}
_YAML_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_TOML_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def value_text(v: Any, fmt: Format) -> str:
    """One value (None, bool, int, finite float, str, flat list or tuple) in `fmt`."""
    if v is None:
        if fmt == "toml":
            raise ValueError("TOML has no null: leave the key out")
        return "null"
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        if not math.isfinite(v):
            raise ValueError(f"cannot write non-finite {v!r} to {fmt.upper()}")
        return repr(float(v))
    if isinstance(v, str):
        if fmt == "yaml" and _YAML_PLAIN.match(v) and v.lower() not in _YAML_RESERVED:
            return v
        return json.dumps(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value_text(x, fmt) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to {fmt.upper()}")


def toml_value(v: Any) -> str:
    return value_text(v, "toml")


def yaml_scalar(v: Any) -> str:
    return value_text(v, "yaml")


def toml_text(data: Mapping[str, Any], header: str = "") -> str:
    """TOML for nested tables of scalars (scalars first, then each sub-table); None values are
    left out (TOML has no null: an absent optional key)."""
    lines: list[str] = []

    def emit(table: Mapping[str, Any], path: list[str]) -> None:
        subs = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
        for k, v in table.items():
            if not isinstance(v, Mapping) and v is not None:
                lines.append(f"{_toml_key(k)} = {toml_value(v)}")
        for k, v in subs:
            lines.append("")
            lines.append("[" + ".".join(_toml_key(x) for x in [*path, k]) + "]")
            emit(v, [*path, k])

    emit(data, [])
    return header + "\n".join(lines) + "\n"


def _toml_key(k: str) -> str:
    return k if _TOML_BARE_KEY.fullmatch(k) else json.dumps(k)


def yaml_text(data: Mapping[str, Any], header: str = "",
              comments: Mapping[str, str] | None = None) -> str:
    """A YAML block mapping; `comments` maps a dotted key path to a trailing comment."""
    lines: list[str] = [f"# {h}" if h else "#" for h in header.splitlines()]
    notes = comments or {}

    def emit(table: Mapping[str, Any], path: tuple[str, ...], indent: int) -> None:
        for k, v in table.items():
            if not _YAML_KEY.match(k):
                raise ValueError(f"unsafe YAML key {k!r}")
            note = notes.get(".".join((*path, k)))
            tail = f"  # {note}" if note else ""
            if isinstance(v, Mapping):
                lines.append(f"{' ' * indent}{k}:{tail}")
                emit(v, (*path, k), indent + 2)
            else:
                lines.append(f"{' ' * indent}{k}: {yaml_scalar(v)}{tail}")

    emit(data, (), 0)
    return "\n".join(lines) + "\n"


def jsonable(x: Any) -> Any:
    """Plain JSON types: numpy scalars and arrays unwrapped, non-finite floats as null."""
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def json_text(data: Any) -> str:
    """Deterministic JSON: sorted keys, two-space indent, trailing newline."""
    return json.dumps(jsonable(data), indent=2, sort_keys=True, allow_nan=False) + "\n"
