"""The benchmark scripts still run against today's API, on tiny inputs (their figures are
measured by hand: docs/benchmarks.md); a script that raises is stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv", [
    ["bench_engine.py", "--designs", "1000", "--repeats", "1", "--problems", "50"],
    ["bench_cost.py", "--n", "2000", "--repeats", "1"],
])
def test_a_benchmark_script_runs(argv: list[str]) -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / argv[0]), *argv[1:]],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
