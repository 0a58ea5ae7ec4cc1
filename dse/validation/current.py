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


# A refit on another machine (other BLAS kernels, other SIMD paths) can walk the optimiser
# along a flat direction of the least squares: a parameter the rows barely pin moves (the width
# model's mean-aggregation factor 2.26 -> 2.00 under OpenBLAS's Haswell kernels) while no
# prediction moves by more than a few hundredths of a point. Such a refit reproduces the shipped
# files: what is compared is what the files predict.
POINTS = 0.1  # accuracy points: the published rows' own rounding (one decimal)
SHARE_ROWS = 2  # a share of rows ("within 3 points", "inside the 90% interval"): two rows
SHARES = ("within_3_points", "coverage_90")


def noise_differences(a: Any, b: Any, *, free: tuple[str, ...] = ("parameters",),
                      rel: float = 1e-3, path: str = "") -> list[str]:
    """Where a refit `b` differs from the shipped `a` by more than fit noise between machines
    (each as `path: shipped -> refit`): the same keys and list lengths everywhere, strings,
    booleans and integers (counts) exactly; a table named in `free` (the fitted parameters) by
    its keys alone; a share in SHARES within SHARE_ROWS rows of its table's `n`; any other
    number (a prediction, a residual, an error, a half-width, in points) within POINTS or `rel`
    relative."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = [f"{path}/{k}: only one side has it" for k in sorted(set(a) ^ set(b), key=str)]
        for k in (k for k in a if k in b):
            p = f"{path}/{k}"
            if k in free:
                out += differences(_keys(a[k]), _keys(b[k]), path=p)
            elif k in SHARES and isinstance(a.get("n"), int) and a.get("n") == b.get("n"):
                if not abs(float(a[k]) - float(b[k])) * a["n"] <= SHARE_ROWS + 1e-9:
                    out.append(f"{p}: {a[k]!r} -> {b[k]!r}")
            else:
                out += noise_differences(a[k], b[k], free=free, rel=rel, path=p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items -> {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in noise_differences(x, y, free=free, rel=rel, path=f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool):
        ok = abs(a - b) <= max(POINTS, rel * max(abs(a), abs(b)))
        return [] if ok else [f"{path}: {a!r} -> {b!r}"]
    return [] if type(a) is type(b) and a == b else [f"{path}: {a!r} -> {b!r}"]


def _keys(x: Any) -> Any:
    """x's tables and lists with every value replaced by None: its shape."""
    if isinstance(x, Mapping):
        return {k: _keys(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_keys(v) for v in x]
    return None


def largest_move(a: Any, b: Any, *, free: tuple[str, ...] = ("parameters",),
                 path: str = "") -> tuple[float, str]:
    """The largest absolute change of a number outside `free` and its path (what a current
    --check reports as the refit's noise); (0.0, "") when none moved."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        moves = [largest_move(a[k], b[k], free=free, path=f"{path}/{k}")
                 for k in a if k in b and k not in free]
    elif isinstance(a, list) and isinstance(b, list):
        moves = [largest_move(x, y, free=free, path=f"{path}[{i}]")
                 for i, (x, y) in enumerate(zip(a, b, strict=False))]
    elif isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        moves = [(abs(float(a) - float(b)), path)] if a != b else []
    else:
        moves = []
    return max(moves, default=(0.0, ""))
