"""Whether a refit reproduces the shipped files: the one comparison the calibration scripts'
`--check` runs (scripts/calibrate_workloads.py, calibrate_target_judge.py, calibrate_width.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def close(a: Any, b: Any, rel: float = 1e-3) -> bool:
    """Equal up to the optimiser's noise: numbers within `rel` relative (absolute below 1),
    tables and lists item by item, everything else exactly."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(close(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, float | int) and isinstance(b, float | int):
        return abs(a - b) <= rel * max(1.0, abs(a), abs(b))
    return bool(a == b)


def differences(a: Any, b: Any, rel: float = 1e-3, path: str = "") -> list[str]:
    """Where `close` fails: each differing leaf as `path: shipped -> refit` (a --check prints
    them, so a stale verdict on another machine says which values moved and by how much)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = [f"{path}/{k}: only one side has it" for k in sorted(set(a) ^ set(b), key=str)]
        for k in a:
            if k in b:
                out += differences(a[k], b[k], rel, f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items -> {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, rel, f"{path}[{i}]")]
    return [] if close(a, b, rel) else [f"{path}: {a!r} -> {b!r}"]
