"""The public Python API (dse/api.py): names, keyword-only signatures, the same numbers as the
engine, errors without CLI flag names, no global side effects."""

from __future__ import annotations

import inspect
import json
import logging
import math
from pathlib import Path

import pytest

import dse
from tests.golden_reports import GOLDEN_DIR, compare

PUBLIC_FUNCTIONS = ("load_catalog", "load_workload", "load_design", "load_space", "evaluate",
                    "simulate", "sweep", "optimize", "export")


def test_public_names_are_functions_even_after_importing_the_engine() -> None:
    import dse.engine.closed_form
    import dse.engine.simulator
    import dse.exporters

    for name in PUBLIC_FUNCTIONS:
        assert inspect.isfunction(getattr(dse, name)), name
    for name in ("Report", "Design", "Schedule", "Catalog", "SweepResult", "OptimizeResult",
                 "Simulation", "Bundle", "Trace"):
        assert inspect.isclass(getattr(dse, name)), name
    assert set(dse.__all__) >= set(PUBLIC_FUNCTIONS)
    assert "evaluate" in dir(dse)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dse.nope  # noqa: B018


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_options_are_keyword_only_and_typed(name: str) -> None:
    sig = inspect.signature(getattr(dse, name))
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) <= 2, f"{name}: options must be keyword-only"
    for p in sig.parameters.values():
        assert p.annotation is not inspect.Parameter.empty, f"{name}({p.name}) has no type"
    assert sig.return_annotation is not inspect.Signature.empty


def test_evaluate_is_the_golden_closed_form() -> None:
    """The API's evaluate of a named system equals the golden report of that design, and by
    default adds the intervals and provenance the golden reports leave out."""
    d = dse.load_design("paper-config1-u280", schedule="heteroreason")
    r = dse.evaluate(d, workload="math500", intervals=False)
    golden = json.loads((GOLDEN_DIR / "paper-config1-u280__math500__heteroreason.json")
                        .read_text(encoding="utf-8"))["report"]
    assert compare(golden, r.to_dict()) == []
    full = dse.evaluate(d, workload="math500")
    assert full.latency_s_per_problem == r.latency_s_per_problem
    lo, hi = full.intervals["latency_s_per_problem"]
    assert lo < r.latency_s_per_problem < hi
    assert set(full.provenance) >= {"draft", "prm", "target"}
    assert r.evaluator == "closed-form"
    assert math.isclose(sum(r.latency_breakdown_s.values()), r.latency_s_per_problem,
                        rel_tol=1e-9)


def test_defaults_and_overrides() -> None:
    d = dse.load_design("paper-config1-u280")
    assert d.schedule.name == "heteroreason"  # the default schedule
    o = dse.load_design("paper-config1-u280", overrides={"accept_threshold": 0.8,
                                                          "fpga.clock_mhz": 200,
                                                          "backtracking": False})
    assert o.accept_threshold == 0.8
    assert o.draft.fpga_build is not None and o.draft.fpga_build.clock_hz == 200e6
    assert (o.schedule.backtracking, o.schedule.step_ahead, o.schedule.shadow_sync) == (
        False, True, True)
    assert "overrides" in o.system.sources["accept_threshold"]
    # a slower FPGA clock can only make the draft slower
    assert (dse.evaluate(o, workload="gsm8k").latency_breakdown_s["draft"]
            >= dse.evaluate(dse.load_design("paper-config1-u280", overrides={
                "accept_threshold": 0.8, "backtracking": False}),
                workload="gsm8k").latency_breakdown_s["draft"])


def test_design_file_round_trip(tmp_path: Path) -> None:
    from dse.io.design_files import design_file_text

    d = dse.load_design("paper-config2-v80", schedule="brsd")
    f = tmp_path / "d.toml"
    f.write_text(design_file_text(d.system, d.schedule, "gsm8k"), encoding="utf-8")
    again = dse.load_design(f)
    assert again.schedule == d.schedule  # the file's schedule is the default
    assert dse.evaluate(again, workload="gsm8k") == dse.evaluate(d, workload="gsm8k")
    assert dse.load_design(f, schedule="rsd").schedule.name == "rsd"


@pytest.mark.parametrize(("call", "match"), [
    (lambda: dse.load_design("nope"), "unknown system 'nope'; valid: paper-config1-3090"),
    (lambda: dse.load_design("paper-config1-u280", overrides={"accept_threshold": 1.7}),
     "accept_threshold: must be <= 1"),
    (lambda: dse.load_design("paper-config1-u280", overrides={"step_ahead": "yes"}),
     "overrides: step_ahead: expected True or False"),
    (lambda: dse.load_design("paper-config1-u280", schedule="fast"), "unknown schedule 'fast'"),
    (lambda: dse.evaluate(dse.load_design("paper-config1-u280"), workload="mmlu"),
     "unknown workload 'mmlu'"),
    (lambda: dse.evaluate(dse.load_design("paper-config1-u280"), workload="gsm8k",
                          evaluator="exact"),
     "evaluator: expected one of closed-form, simulator, got 'exact'"),
    (lambda: dse.simulate(dse.load_design("paper-config1-u280"), "gsm8k", problems=10**9),
     "problems: must be a whole number in 1..100000"),
    (lambda: dse.sweep(objectives=["speed"]),
     "objectives: expected one of j_per_token, .*got 'speed'"),
    (lambda: dse.sweep(min_accuracy=170), "min_accuracy: expected a finite number"),
    (lambda: dse.optimize(trials=0),
     "trials: must be a whole number in 1..9007199254740992, got 0"),
])
def test_errors_are_one_line_without_cli_flags(call, match: str) -> None:
    with pytest.raises(dse.DseError, match=match) as e:
        call()
    assert "\n" not in str(e.value) and "--" not in str(e.value)


def test_simulate_is_seeded_by_its_arguments() -> None:
    d = dse.load_design("paper-config1-u280")
    a = dse.simulate(d, "gsm8k", problems=300, seed=3)
    b = dse.simulate(d, "gsm8k", problems=300, seed=3)
    c = dse.simulate(d, "gsm8k", problems=300, seed=4)
    assert a.report == b.report and a.report != c.report
    assert a.report.problems == 300 and a.timeline
    assert dse.evaluate(d, "gsm8k", evaluator="simulator", problems=300, seed=3) == a.report


def test_optimize_defaults_to_memory_and_leaves_logging_alone() -> None:
    import optuna

    logger = logging.getLogger("optuna")
    before = (optuna.logging.get_verbosity(), logger.level, logging.getLogger().level)
    r = dse.optimize(objectives=["j_per_token"], trials=12, seed=0)
    assert r.storage == "in-memory" and r.n_trials == 12
    assert (optuna.logging.get_verbosity(), logger.level, logging.getLogger().level) == before
    assert not list(Path.cwd().glob("dse-studies.db"))
    assert r.best and r.best[0].metrics["j_per_token"] > 0


def test_export_renders_and_writes(tmp_path: Path) -> None:
    d = dse.load_design("paper-config1-u280")
    rendered = dse.export(d, "math500")
    assert rendered.path is None and "manifest.json" in rendered.files
    written = dse.export(d, "math500", out=tmp_path / "b")
    assert written.path is not None
    assert {p.relative_to(written.path).as_posix() for p in written.path.rglob("*")
            if p.is_file()} == set(rendered.files)
    assert (written.path / "manifest.json").read_bytes() == rendered.files["manifest.json"]
    with pytest.raises(dse.DseError):
        dse.export(d, "math500", out=tmp_path / "b")  # never overwritten without force


def test_user_catalog_directory(tmp_path: Path) -> None:
    src = Path(dse.load_catalog().get("workload", "gsm8k").path).read_text(encoding="utf-8")
    (tmp_path / "mine.toml").write_text(src.replace('name = "gsm8k"', 'name = "mine"'),
                                        encoding="utf-8")
    cat = dse.load_catalog(tmp_path)
    assert "mine" in cat.names("workload")
    d = dse.load_design("paper-config1-u280", catalog=cat)
    assert dse.evaluate(d, "mine", catalog=cat).workload == "mine"
    with pytest.raises(dse.SpecError, match="not a directory"):
        dse.load_catalog(tmp_path / "missing")


def test_functions_that_take_a_design_take_what_the_command_line_takes(tmp_path: Path) -> None:
    """evaluate, simulate and export take a system name or a system/design TOML path (str or
    Path) as every `dse` command does, resolved as load_design resolves them."""
    design = dse.load_design("paper-config1-u280")
    path = tmp_path / "mine.toml"
    path.write_bytes((Path(dse.__file__).parents[1] / "scenarios" / "systems"
                      / "paper-config1-u280.toml").read_bytes())
    by_design = dse.evaluate(design, "math500", intervals=False)
    for ref in ("paper-config1-u280", path, str(path)):
        assert dse.evaluate(ref, "math500", intervals=False) == by_design, ref
    sim = dse.simulate("paper-config1-u280", "math500", problems=20, intervals=False)
    assert sim.report == dse.simulate(design, "math500", problems=20, intervals=False).report
    assert dse.export(path, "math500").files == dse.export(design, "math500").files
    with pytest.raises(dse.UnknownNameError, match="unknown system 'nope'"):
        dse.evaluate("nope", "math500")


def test_dir_lists_the_public_api_only() -> None:
    assert dir(dse) == sorted(dse.__all__)
    assert not {"annotations", "TYPE_CHECKING", "lazy_names"} & set(dir(dse))
