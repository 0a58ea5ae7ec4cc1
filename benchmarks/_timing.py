"""Shared timing helper for the benchmark scripts."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    """Fastest wall-clock seconds of `repeats` calls."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def wall_s(argv: list[str]) -> float:
    """Seconds from spawn to exit of one fresh interpreter running `argv`; output discarded."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   check=True)
    return time.perf_counter() - t0
