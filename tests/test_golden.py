"""Golden reports: every shipped system x workload x schedule, closed form, to 1e-9 relative.

Regenerate with `python scripts/golden.py` only for a reviewed change of the model, and say
why in the commit message."""

from __future__ import annotations

import json

import pytest

from tests.golden_reports import GOLDEN_DIR, SCHEMA_VERSION, compare, golden_reports

REPORTS = golden_reports()


def test_every_golden_file_is_a_current_design() -> None:
    on_disk = {p.stem for p in GOLDEN_DIR.glob("*.json")}
    assert on_disk == set(REPORTS), "run python scripts/golden.py"
    assert len(REPORTS) == 8 * 6 * 4


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_golden_report_unchanged(name: str) -> None:
    data = json.loads((GOLDEN_DIR / f"{name}.json").read_text(encoding="utf-8"))
    assert data["_meta"]["schema_version"] == SCHEMA_VERSION
    assert {"tool_version", "commit"} <= data["_meta"].keys()
    diffs = compare({k: v for k, v in data.items() if k != "_meta"}, REPORTS[name])
    assert not diffs, "\n".join(diffs[:20])


def test_compare_sees_a_change() -> None:
    a = {"x": 1.0, "d": {"y": 2.0, "s": "rsd"}, "n": None}
    assert compare(a, a) == []
    assert compare(a, {"x": 1.0 + 1e-8, "d": {"y": 2.0, "s": "rsd"}, "n": None})
    assert compare(a, {"x": 1.0, "d": {"y": 2.0, "s": "brsd"}, "n": None})
    assert compare(a, {"x": 1.0, "d": {"y": 2.0}, "n": None}) == [".d.s: missing"]
    assert compare(a, {"x": 1.0, "d": {"y": 2.0, "s": "rsd"}, "n": 0.0})
