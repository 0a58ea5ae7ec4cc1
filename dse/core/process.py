"""Process-wide settings that the entry points (the `dse` command, the dashboard) apply once
at start; the library never calls them.

`retain_freed_memory`: the closed form's quadrature grids are numpy arrays of a few hundred KB
to a few MB, made and freed by the hundred per evaluation. glibc's malloc serves such sizes
by mmap (above its threshold, 128 KB to start) or returns the top of its heap to the system
when more than its trim threshold is free, so each evaluation faults the same memory in
again: `dse evaluate` of one system's four schedules took 97,000 page faults and 1.20 s, 0.87 s
and 13,700 faults with both thresholds raised (peak memory 71 MB either way; docs/benchmarks.md).
The thresholds below keep freed arrays for reuse; memory past the process's peak is never
taken.
"""

from __future__ import annotations

import ctypes
import sys

# glibc malloc.h: mallopt parameters
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
TRIM_THRESHOLD_BYTES = 256 * 2**20  # free heap kept before any is returned to the system
MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's largest: arrays below this come from the heap


def retain_freed_memory() -> bool:
    """Raise glibc's trim and mmap thresholds (module docstring); False where the C library
    is not glibc (macOS, Windows, musl), which keep their own policy."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
