"""The scheduler's cap on running sequences (vLLM's max_num_seqs) as a search dimension at a
load: `dse sweep/optimize --rate R --max-num-seqs N [N ...]` serves every design with each cap
and keeps the best; without the flag each GPU's vLLM default is the only cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dse import load_catalog
from dse.cli import main
from dse.errors import UsageError
from dse.search import load_space, sweep
from dse.search.at_load import serve_at_load
from dse.search.loads import LoadSpec, load_spec

SPACE = str(Path(__file__).parent / "data" / "load-space.toml")


def sweep_json(*extra: str) -> dict:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["sweep", "--space", SPACE, "--objective", "cost", "--rate", "20",
                     "--json", "--processes", "1", *extra]) == 0
    return json.loads(buf.getvalue())


def test_a_cap_is_a_dimension_that_never_loses_to_the_default():
    """With the GPU's default cap among those tried, every family's best at the load is at
    least as cheap as with the default alone, and every served design names its cap."""
    alone = sweep_json()
    default = alone["best"][0]["metrics"]["max_num_seqs"]  # the RTX 3090's vLLM default
    assert default == 256
    both = sweep_json("--max-num-seqs", "2", str(default))
    assert both["load"]["max_num_seqs"] == [2, default]
    by_alone = {f["family"]: f for f in alone["by_family"]}
    for f in both["by_family"]:
        if by_alone[f["family"]]["design"] is None:
            continue
        assert f["design"] is not None, f["family"]
        assert f["metrics"]["cost_usd_per_mtok"] <= \
            by_alone[f["family"]]["metrics"]["cost_usd_per_mtok"] * (1 + 1e-9)
    caps = {b["metrics"]["max_num_seqs"] for b in both["best"]}
    assert caps <= {2, default}  # cap 2 costs more replicas: ranked below, or pruned


def test_a_cap_of_one_serves_one_sequence_at_a_time():
    """Cap 1: one replica runs one request at a time, so its capacity falls below the default
    cap's (continuous batching's gain) and its TPOT is the single stream's."""
    cat = load_catalog()
    space = load_space(cat, SPACE)
    pool = sweep(cat, space, ["cost"], pool=True, families=False).pool
    c = next(x for x in pool if x.design.system.workflow_name == "target-only")
    one = serve_at_load(cat, space, c, LoadSpec(2.0, max_num_seqs=(1,)), "target-only",
                        max_num_seqs=1)
    free = serve_at_load(cat, space, c, LoadSpec(2.0), "target-only")
    assert one.feasible and free.feasible and one.max_num_seqs == 1
    assert one.candidate.metrics["max_num_seqs"] == 1
    assert one.candidate.metrics["capacity_request_rate"] < \
        0.5 * free.candidate.metrics["capacity_request_rate"]
    assert one.replicas >= free.replicas


@pytest.mark.parametrize("caps, why", [((0,), "1-65536"), ((4, 4), "given twice"),
                                       ((70_000,), "1-65536")])
def test_bad_caps_are_refused(caps, why):
    with pytest.raises(UsageError, match=why):
        LoadSpec(5.0, max_num_seqs=caps)


def test_caps_need_a_rate():
    with pytest.raises(UsageError, match="give --rate"):
        load_spec(None, None, None, (8,))
