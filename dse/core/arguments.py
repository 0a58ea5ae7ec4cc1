"""Argument checks at the boundary of the Python API (dse.api): each takes the argument's name
and value and returns the value (converted where the API promises a conversion) or raises
ArgumentError, one line naming the argument and what it takes. Nothing past the boundary then
meets a None, a NaN, a 400-digit integer, a string where a list was meant, or a path with a NUL.

Pure functions; the types the checks compare against (Catalog, Design, Schedule, specs) are
passed in by the caller, so this module imports nothing heavy.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dse.core.limits import MAX_INT, MAX_PATH_CHARS
from dse.errors import ArgumentError

SHOWN_CHARS = 60  # how much of a bad value a message shows


def shown(value: Any) -> str:
    """A short one-line picture of any value, for an error message; never raises (a repr may
    fail, e.g. an integer of more than 4300 digits, or be megabytes long)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:  # a user object whose repr fails
        text = f"a {type(value).__name__}"
    text = " ".join(text.split())
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS] + "..."
    return f"{text} ({type(value).__name__})" if not isinstance(value, str) else text


def flag(name: str, value: Any) -> bool:
    """True or False (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise ArgumentError(name, f"expected True or False, got {shown(value)}")
    return value


def whole(name: str, value: Any, lo: int, hi: int = MAX_INT) -> int:
    """A whole number in lo..hi (an int, not a bool or a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(name, f"expected a whole number in {lo}..{hi}, got {shown(value)}")
    if not lo <= value <= hi:
        raise ArgumentError(name, f"must be a whole number in {lo}..{hi}, got {shown(value)}")
    return value


def real(name: str, value: Any, *, positive: bool = False) -> float:
    """A finite real number (int or float, not a bool); positive: > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentError(name, f"expected a number, got {shown(value)}")
    try:
        v = float(value)
    except OverflowError:  # an int past 1.8e308
        raise ArgumentError(name, f"expected a finite number, got {shown(value)}") from None
    if not math.isfinite(v):
        raise ArgumentError(name, f"expected a finite number, got {shown(value)}")
    if positive and not v > 0:
        raise ArgumentError(name, f"must be > 0, got {shown(value)}")
    return v


def optional_real(name: str, value: Any, *, positive: bool = False) -> float | None:
    return None if value is None else real(name, value, positive=positive)


def text(name: str, value: Any, *, max_chars: int = MAX_PATH_CHARS) -> str:
    """A non-empty string without NUL characters, at most max_chars long."""
    if not isinstance(value, str):
        raise ArgumentError(name, f"expected a string, got {shown(value)}")
    if not value.strip():
        raise ArgumentError(name, "must not be empty")
    if "\0" in value:
        raise ArgumentError(name, f"contains a NUL character: {shown(value)}")
    if len(value) > max_chars:
        raise ArgumentError(name, f"longer than {max_chars} characters ({len(value)})")
    return value


def path(name: str, value: Any) -> Path:
    """A file system path: a str or an os.PathLike naming one (non-empty, no NUL)."""
    if isinstance(value, os.PathLike):
        try:
            raw = os.fspath(value)
        except Exception:  # a PathLike whose __fspath__ fails
            raise ArgumentError(name, f"not a usable path: {shown(value)}") from None
        if isinstance(raw, bytes):
            raise ArgumentError(name, f"expected a str path, got bytes {shown(raw)}")
        value = raw
    if not isinstance(value, str):
        raise ArgumentError(name, f"expected a path (str or pathlib.Path), got {shown(value)}")
    return Path(text(name, value))


def optional_path(name: str, value: Any) -> Path | None:
    return None if value is None else path(name, value)


def name_or_path(name: str, value: Any, spec_type: type, what: str) -> Any:
    """A catalog name, a path, or an object of spec_type (returned as is)."""
    if isinstance(value, spec_type):
        return value
    if isinstance(value, os.PathLike):
        return path(name, value)
    if not isinstance(value, str):
        raise ArgumentError(name, f"expected {what}, got {shown(value)}")
    return text(name, value)


def instance(name: str, value: Any, cls: type, what: str) -> Any:
    """An object of cls (what: how a user gets one)."""
    if not isinstance(value, cls):
        raise ArgumentError(name, f"expected {what}, got {shown(value)}")
    return value


def optional_instance(name: str, value: Any, cls: type, what: str) -> Any:
    return None if value is None else instance(name, value, cls, what)


def choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """One of choices (a string)."""
    if not isinstance(value, str) or value not in choices:
        raise ArgumentError(name, f"expected one of {', '.join(choices)}, got {shown(value)}")
    return value


def choices(name: str, value: Any, valid: Sequence[str]) -> list[str]:
    """A non-empty list or tuple of strings, each one of valid, each once (a bare string is
    refused: it is a sequence of letters, not of names)."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ArgumentError(name, f"expected a list of names ({', '.join(valid)}), got "
                            f"{shown(value)}")
    if not value:
        raise ArgumentError(name, "give at least one")
    for v in value:
        choice(name, v, valid)
    if len(set(value)) != len(value):
        raise ArgumentError(name, "each name once")
    return list(value)


OVERRIDE_VALUE_TYPES = (bool, int, float, str)


def overrides(name: str, value: Any) -> dict[str, Any]:
    """A mapping of system keys (non-empty strings) to plain values (bool, int, float, str, or a
    list of strings); each value is then checked by its key's own check (dse.io.resolve)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ArgumentError(name, f"expected a dict of key -> value, got {shown(value)}")
    out: dict[str, Any] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not k.strip() or "\0" in k:
            raise ArgumentError(name, f"keys must be non-empty key names, got {shown(k)}")
        if isinstance(v, list | tuple):
            if not all(isinstance(x, str) for x in v):
                raise ArgumentError(f"{name}[{k[:SHOWN_CHARS]!r}]",
                                    f"expected a plain value or a list of names, got {shown(v)}")
        elif not isinstance(v, OVERRIDE_VALUE_TYPES):
            raise ArgumentError(f"{name}[{k[:SHOWN_CHARS]!r}]",
                                f"expected a bool, number or string, got {shown(v)}")
        elif isinstance(v, float) and not math.isfinite(v):
            raise ArgumentError(f"{name}[{k[:SHOWN_CHARS]!r}]",
                                f"expected a finite number, got {shown(v)}")
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT:
            raise ArgumentError(f"{name}[{k[:SHOWN_CHARS]!r}]",
                                f"must be at most 2**53 in magnitude, got {shown(v)}")
        elif isinstance(v, str) and "\0" in v:
            raise ArgumentError(f"{name}[{k[:SHOWN_CHARS]!r}]",
                                f"contains a NUL character: {shown(v)}")
        out[k] = v
    return out
