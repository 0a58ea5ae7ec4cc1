"""Fault injection (issue 8): SIGKILL `dse optimize` against the embedded SQLite storage and
PostgreSQL (when DSE_TEST_POSTGRES_URL is set, as .ci/run does), and `dse export`; two exports
racing for one directory. The campaigns live in tests/faults.py (shared with
scripts/reliability_report.py). The kill loops are marked `slow` (about a minute each): the
default run (pyproject.toml's addopts, `-m 'not slow'`) skips them, and `.ci/run` runs them with
`pytest -m slow`.
"""

from __future__ import annotations

import os
import random
import uuid

import pytest

from tests.faults import (
    bundle_state,
    export_kill_campaign,
    export_race,
    optimize_kill_campaign,
    signal_campaign,
)
from tests.fuzzing import write_small_space

KILLS = 20


@pytest.mark.slow
def test_optimize_survives_sigkill_sqlite(tmp_path):
    space = write_small_space(tmp_path / "small.toml")
    url = f"sqlite:///{tmp_path / 's.db'}"
    c = optimize_kill_campaign(url, space, tmp_path, random.Random(8), kills=KILLS)
    assert c.problems == [], c.problems
    assert c.kills == KILLS and c.lost == 0 and c.duplicated == 0
    assert c.studies_completed >= 1


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("DSE_TEST_POSTGRES_URL"),
                    reason="DSE_TEST_POSTGRES_URL not set (.ci/run starts a PostgreSQL server)")
def test_optimize_survives_sigkill_postgres(tmp_path):
    space = write_small_space(tmp_path / "small.toml")
    url = os.environ["DSE_TEST_POSTGRES_URL"]
    c = optimize_kill_campaign(url, space, tmp_path, random.Random(9), kills=KILLS,
                               prefix=f"kill-{uuid.uuid4().hex[:8]}")
    assert c.problems == [], c.problems
    assert c.kills == KILLS and c.lost == 0 and c.duplicated == 0


@pytest.mark.slow
def test_export_sigkill_never_leaves_a_partial_bundle(tmp_path):
    c = export_kill_campaign(tmp_path, random.Random(10), kills=4)
    assert c.problems == [], c.problems
    assert c.kills >= 2 and c.partial == 0


def test_two_exports_racing_for_one_directory(tmp_path):
    c = export_race(tmp_path, rounds=2)
    assert c.problems == [], c.problems


def test_bundle_state_detects_partial_bundles(tmp_path):
    from tests.fuzzing import run_cli

    out = tmp_path / "b"
    assert bundle_state(out) == "absent"
    assert run_cli(["export", "--system", "paper-config1-3090", "--out", str(out)]).rc == 0
    assert bundle_state(out) == "complete"
    (out / "report.json").write_text("{}")
    assert bundle_state(out) == "partial"
    (out / "manifest.json").unlink()
    assert bundle_state(out) == "partial"


@pytest.mark.slow
def test_signals_end_commands_cleanly_and_outputs_whole(tmp_path):
    space = write_small_space(tmp_path / "small.toml")
    c = signal_campaign(tmp_path, space, random.Random(11), signals=8)
    assert c.problems == [], c.problems
    assert c.kills >= 4 and c.partial == 0
