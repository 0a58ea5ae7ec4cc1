"""Space files are checked at load: precision names per device kind, the space's own name, and
the grid's size per hardware choice (dse.core.limits.MAX_KNOBS_PER_HARDWARE) are one line naming
the file and key, exit 3, instead of a silently shrunk search or an out-of-memory sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from dse.cli import main
from dse.core.limits import MAX_KNOBS_PER_HARDWARE
from tests.fuzzing import write_small_space

ACCEPT = "accept_threshold = { start = 0.5, stop = 0.9, step = 0.1 }"


@pytest.mark.parametrize(("replace", "words"), [
    ({'gpu_precisions = ["bf16"]': 'gpu_precisions = ["bf17"]'},
     "draft.gpu_precisions: unknown name 'bf17'"),
    ({'fpga_precisions = ["w8a8"]': 'fpga_precisions = ["int3"]'},
     "draft.fpga_precisions: unknown name 'int3'"),
    ({'precisions = ["bf16"]\nserving': 'precisions = ["w1a1"]\nserving'},
     "prm.precisions: unknown name 'w1a1'"),
    ({'name = "small"': 'name = "Small Space!"'}, "name: must be lowercase"),
    ({'name = "small"': 'name = "../x"'}, "name: must be lowercase"),
    ({ACCEPT: "accept_threshold = { start = 0.0, stop = 1.0, step = 1e-320 }"},
     "algorithm.accept_threshold.step: must be 0 or at least 1e-30 in magnitude"),
    ({ACCEPT: "accept_threshold = { start = 0.0, stop = 1.0, step = 1e-29 }"},
     "algorithm.accept_threshold: 1e+29 grid points; at most 10000"),
    ({ACCEPT: "accept_threshold = { start = 0.0, stop = 1.0, step = 2e-4 }",
      "backtrack_threshold = [0.5, 0.7]":
      "backtrack_threshold = { start = 0.0, stop = 1.0, step = 2e-4 }"},
     f"knob settings per hardware choice; at most {MAX_KNOBS_PER_HARDWARE:,}"),
    ({"max_backtracks = [0, 5]": "max_backtracks = [0, 65]"},
     "algorithm.max_backtracks: must be <= 64"),
])
def test_bad_space_is_one_line(replace: dict[str, str], words: str, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    space = write_small_space(tmp_path / "s.toml", **replace)
    assert main(["sweep", "--space", str(space)]) == 3
    err = capsys.readouterr().err
    assert words in err and str(space) in err and err.count("\n") == 1, err


def test_shipped_spaces_are_within_the_caps() -> None:
    import dse
    from dse.search import load_space

    root = Path(__file__).resolve().parents[1] / "scenarios" / "spaces"
    for f in sorted(root.glob("*.toml")):
        s = load_space(dse.load_catalog(), f)
        assert 0 < s.knobs_per_hardware <= MAX_KNOBS_PER_HARDWARE
