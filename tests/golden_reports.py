"""The golden reports: which designs they cover, how they are computed and compared.

Shared by tests/test_golden.py and scripts/golden.py (which regenerates them)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
SCHEMA_VERSION = 1
REL_TOL = 1e-9
SCHEDULES = ("rsd", "brsd", "brsd_stepahead", "heteroreason")


def golden_reports() -> dict[str, dict[str, Any]]:
    """{"<system>__<workload>__<schedule>": {"report": the closed-form report as a plain dict,
    "mean_value": the mean-value metrics the sweep screens with}}."""
    from dse.engine.evaluate import evaluate
    from dse.model.design import build_design
    from dse.model.schedules import schedule
    from dse.model.symbolic import mean_value
    from dse.specs import Catalog

    cat = Catalog.load()
    out: dict[str, dict[str, Any]] = {}
    for system in cat.names("system"):
        spec = cat.get("system", system)
        for workload in cat.names("workload"):
            w = cat.get("workload", workload)
            for s in SCHEDULES:
                d = build_design(cat, spec, schedule(s))  # type: ignore[arg-type]
                out[f"{system}__{workload}__{s}"] = {
                    "report": evaluate(d, w).to_dict(),  # type: ignore[arg-type]
                    "mean_value": mean_value(d, w),  # type: ignore[arg-type]
                }
    return out


def compare(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where two reports differ: numbers beyond REL_TOL relative, anything else unequal."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        diffs = [f"{path}.{k}: missing" for k in expected if k not in actual]
        diffs += [f"{path}.{k}: new field" for k in actual if k not in expected]
        for k in expected.keys() & actual.keys():
            diffs += compare(expected[k], actual[k], f"{path}.{k}")
        return diffs
    num = (int, float)
    if (isinstance(expected, num) and isinstance(actual, num)
            and not isinstance(expected, bool) and not isinstance(actual, bool)):
        if math.isclose(expected, actual, rel_tol=REL_TOL, abs_tol=1e-300):
            return []
        return [f"{path}: {expected!r} -> {actual!r}"]
    return [] if expected == actual else [f"{path}: {expected!r} -> {actual!r}"]
