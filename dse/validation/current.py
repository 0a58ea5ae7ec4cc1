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
