"""Hostile and extreme inputs over every input kind (tests/hostile.py): each class of the
Reliability issue's list, many variants each; every run ends in one clean error line naming the
file, line or flag and key (exit 2 for a flag, 3 for a file), or in finite output, and leaves
its input files as they were. scripts/reliability_report.py runs the same generators at scale."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from tests.hostile import GENERATORS, hostile_case, run_case, verdict

PER_CLASS = 10


@pytest.mark.parametrize("gen", GENERATORS, ids=[g.__name__ for g in GENERATORS])
def test_every_class_is_handled(gen, tmp_path: Path) -> None:
    rng = random.Random(gen.__name__)
    bad = []
    for i in range(PER_CLASS):
        d = tmp_path / f"case{i}"
        d.mkdir()
        case = gen(rng, d)
        case.snapshot = {p: p.read_bytes() for p in case.inputs}
        why = verdict(case, run_case(case, d), d)
        if why is not None:
            bad.append(f"{case.cls} [{case.detail}]: {why}")
    assert not bad, "\n".join(bad)


def test_mixed_campaign(tmp_path: Path) -> None:
    rng = random.Random(17)
    bad = []
    for i in range(20):
        d = tmp_path / "case"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        case = hostile_case(rng, d)
        why = verdict(case, run_case(case, d), d)
        if why is not None:
            bad.append(f"{i}: {case.cls} [{case.detail}]: {why}")
    assert not bad, "\n".join(bad)
