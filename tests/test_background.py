"""Work in a forked process while this one goes on (dse.search.background.Background, as `dse
optimize` at a load sweeps the target-only and width designs during its study): the value, or
the exception, is the one the work gives in this process; a process never asked for its result
is stopped when the block ends."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

import dse.search.background as bg
from dse.api import load_catalog
from dse.search.background import Background


def _pid_and_spec() -> tuple[int, Any]:
    return os.getpid(), load_catalog().model("qwen2.5-math-1.5b-instruct")


def test_the_value_comes_back_from_another_process() -> None:
    """A frozen spec comes back equal, its read-only mappings read-only again."""
    with Background(_pid_and_spec) as job:
        forked = job.forked
        pid, spec = job.result()
    assert forked == (bg.FORKS and bg.default_processes() >= 2)
    here = load_catalog().model("qwen2.5-math-1.5b-instruct")
    assert spec == here and spec is not here
    assert isinstance(spec.sources, MappingProxyType)
    if bg.FORKS and bg.default_processes() >= 2:
        assert pid != os.getpid()


def test_in_this_process_where_there_is_one_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bg, "default_processes", lambda: 1)
    with Background(_pid_and_spec) as job:
        assert not job.forked
        assert job.result()[0] == os.getpid()


def _fails() -> None:
    raise ValueError("no such board: x")


def test_the_exception_comes_back() -> None:
    with Background(_fails) as job, pytest.raises(ValueError, match="no such board: x"):
        job.result()


def _sleeps() -> int:
    time.sleep(60)
    return 1


def test_leaving_the_block_stops_the_process() -> None:
    t0 = time.perf_counter()
    with Background(_sleeps) as job:
        proc = job._proc
    assert time.perf_counter() - t0 < 10
    if proc is not None:
        assert not proc.is_alive()
    with pytest.raises(RuntimeError, match="stopped before its result"):
        job.result()


def test_the_pool_at_load_is_the_same_forked_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """The width and target-only pool of a small space, served at 20 requests/s (as `dse
    optimize --rate` does beside its study): every served design's figures equal."""
    import argparse

    from dse.cli.search import _pool_at_load
    from dse.search import load_space
    from dse.search.loads import LoadSpec
    from dse.search.objectives import NO_CONSTRAINTS

    cat = load_catalog()
    space = load_space(cat, str(Path(__file__).parent / "data" / "load-space.toml"))
    a = argparse.Namespace(confidence=0.5, measured_only=False)
    ld = LoadSpec(20.0)
    with Background(lambda: _pool_at_load(cat, space, ["cost"], NO_CONSTRAINTS, a, ld)) as job:
        there = job.result()
    monkeypatch.setattr(bg, "default_processes", lambda: 1)
    here = _pool_at_load(cat, space, ["cost"], NO_CONSTRAINTS, a, ld)
    assert there.feasible
    assert [s.candidate.to_dict() for s in there.feasible] == \
        [s.candidate.to_dict() for s in here.feasible]
    assert (there.n_jobs, there.n_served, there.reasons) == \
        (here.n_jobs, here.n_served, here.reasons)
