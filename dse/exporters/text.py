"""Small deterministic text emitters shared by the exporters: YAML, JSON, safe path names.

YAML is written by hand (no dependency): block mappings of scalars, nested at most a few levels,
which is all `vllm serve --config` (a flat mapping) and the host scheduler file need. Strings
that YAML could read as something else (booleans, numbers, null, anything with special
characters) are double-quoted with JSON's escapes, which YAML double-quoted scalars accept.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from dse.errors import SpecError

_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_./-]*$")
# YAML 1.1 / 1.2 words a plain scalar would turn into a bool or null.
_RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
SAFE_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A word written unquoted into a shell script or a v++ config (part numbers, platform names).
SAFE_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]*$")


def yaml_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot write non-finite {v!r} to YAML")
        return repr(v)
    if isinstance(v, str):
        if _PLAIN.match(v) and v.lower() not in _RESERVED:
            return v
        return json.dumps(v)
    raise TypeError(f"cannot write {type(v).__name__} to YAML")


def yaml_text(data: Mapping[str, Any], header: str = "",
              comments: Mapping[str, str] | None = None) -> str:
    """A YAML block mapping; `comments` maps a dotted key path to a trailing comment."""
    lines: list[str] = [f"# {h}" if h else "#" for h in header.splitlines()]
    notes = comments or {}

    def emit(table: Mapping[str, Any], path: tuple[str, ...], indent: int) -> None:
        for k, v in table.items():
            if not _KEY.match(k):
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


def safe_component(name: str, what: str) -> str:
    """A name from the design used as one path component: letters, digits, '.', '_', '-',
    starting with a letter or digit (so never '..', absolute or containing a separator)."""
    if not isinstance(name, str) or not SAFE_COMPONENT.match(name) or ".." in name:
        raise SpecError(what, "name", f"{name!r} cannot be used in a file path (letters, "
                        "digits, '.', '_', '-' only, starting with a letter or digit)")
    return name


def safe_token(value: str, path: object, key: str, *, empty_ok: bool = False) -> str:
    """A catalog string written unquoted into build.sh or a v++ config: a single word of
    letters, digits and '._:+-', so it cannot inject commands or config lines."""
    if (empty_ok and value == "") or SAFE_TOKEN.match(value):
        return value
    raise SpecError(path, key, f"{value!r} cannot be written into a build script (one word of "
                    "letters, digits, '.', '_', ':', '+', '-' expected)")


def comment_text(text: str) -> str:
    """Text for a one-line // or # comment: characters that could end the line or splice the
    next one into it (newlines, backslashes, control characters) become '?'."""
    return re.sub(r"[^ -\[\]-~]", "?", text)
