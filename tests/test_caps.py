"""Caps that follow from the model hold wherever a knob can come from: a system file, a design
file, `--set`, the Python API's overrides and a space file (backtracking budget and anchor
window: 64 each), and the simulator's problem count (10**5)."""

from __future__ import annotations

from pathlib import Path

import pytest

import dse
from dse.cli import main
from dse.core.limits import MAX_BACKTRACK_WINDOW, MAX_BACKTRACKS, MAX_PROBLEMS
from dse.engine.simulator import synthetic_trace
from dse.errors import SpecError, UsageError
from dse.io.design_files import design_file_text
from dse.model.schedules import Costs

SYSTEM = "paper-config1-u280"
CAPS = {"max_backtracks": MAX_BACKTRACKS, "backtrack_window": MAX_BACKTRACK_WINDOW}


@pytest.mark.parametrize("key", sorted(CAPS))
def test_the_cap_itself_evaluates(key: str) -> None:
    d = dse.load_design(SYSTEM, overrides={key: CAPS[key]})
    assert dse.evaluate(d, "gsm8k").latency_s_per_problem > 0


@pytest.mark.parametrize("key", sorted(CAPS))
@pytest.mark.parametrize("value", [65, 10**6, 10**12])
def test_beyond_the_cap_is_refused_everywhere(key: str, value: int, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SpecError, match=f"{key}: must be <= {CAPS[key]}"):
        dse.load_design(SYSTEM, overrides={key: value})
    assert main(["evaluate", "--system", SYSTEM, "--scenario", "gsm8k", "--set",
                 f"{key}={value}"]) == 2
    err = capsys.readouterr().err
    assert f"--set: {key}: must be <= {CAPS[key]}" in err and err.count("\n") == 1
    good = dse.load_design(SYSTEM)
    text = design_file_text(good.system, good.schedule, "gsm8k")
    f = tmp_path / "d.toml"
    f.write_text(text.replace(f"{key} = {getattr(good.system, key)}\n", f"{key} = {value}\n"),
                 encoding="utf-8")
    assert f.read_text(encoding="utf-8") != text
    assert main(["evaluate", "--design", str(f)]) == 3
    assert f"{key}: must be <= {CAPS[key]}" in capsys.readouterr().err


def test_space_files_share_the_caps() -> None:
    from dse.search import load_space  # the space's algorithm table is checked at load

    space = load_space(dse.load_catalog())
    assert max(space.max_backtracks) <= MAX_BACKTRACKS
    assert max(space.backtrack_windows) <= MAX_BACKTRACK_WINDOW


@pytest.mark.parametrize("problems", [0, MAX_PROBLEMS + 1, 10**12])
def test_simulated_problems_are_capped(problems: int) -> None:
    d = dse.load_design(SYSTEM)
    with pytest.raises(UsageError, match="problems: must be"):
        dse.simulate(d, "gsm8k", problems=problems)
    with pytest.raises(UsageError, match="problems: must be"):
        synthetic_trace(Costs(d, dse.load_workload("gsm8k")), problems, 0)
