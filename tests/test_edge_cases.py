"""Edge cases, each with the behaviour documented in docs/reliability.md ("Edge cases") and
docs/testing.md ("Reliability")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dse.engine.evaluate import evaluate
from dse.errors import InfeasibleError
from dse.io.resolve import override_spec as with_overrides
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from tests.fuzzing import ROOT, _set_key, one_error_line, run_cli, write_small_space

EVAL = ["evaluate", "--system", "paper-config1-u280", "--scenario", "math500", "--schedule",
        "heteroreason", "--json"]


def report(argv: list[str]) -> dict:
    res = run_cli(argv)
    assert res.rc == 0, res.err
    return json.loads(res.out)["schedules"]["heteroreason"]


def edge_workload(tmp_path: Path, **values: str) -> Path:
    """A copy of math500 named `edge` with some keys set, in a --catalog directory."""
    text = _set_key((ROOT / "scenarios/workloads/math500.toml").read_text(), "name", '"edge"')
    for k, v in values.items():
        text = _set_key(text, k, v)
    d = tmp_path / "cat"
    d.mkdir(exist_ok=True)
    (d / "edge.toml").write_text(text, encoding="utf-8")
    return d


# ------------------------------------------------------------------- thresholds and p_accept


def test_accept_threshold_0_accepts_every_step():
    """accept_threshold 0: p_accept = 1, the target is never called, accuracy = the draft's
    solo accuracy (Qwen2.5-0.5B-Instruct on MATH: 34.4%)."""
    r = report([*EVAL, "--set", "accept_threshold=0"])
    assert r["p_accept"] == 1.0
    assert r["target_calls_per_problem"] == pytest.approx(0.0, abs=1e-12)
    assert r["backtracks_per_problem"] == pytest.approx(0.0, abs=1e-12)
    assert r["accuracy"] == pytest.approx(34.4, abs=0.1)


def test_accept_threshold_1_rewrites_every_step():
    """accept_threshold 1: p_accept = 0, every step is rewritten, accuracy = the target's solo
    accuracy (Qwen2.5-Math-7B-Instruct on MATH500: 83.0%); no anchor is ever accepted, so no
    backtrack either."""
    r = report([*EVAL, "--set", "accept_threshold=1"])
    assert r["p_accept"] == 0.0
    assert r["target_calls_per_problem"] == pytest.approx(r["attempts_per_problem"])
    assert r["backtracks_per_problem"] == 0.0
    assert r["accuracy"] == pytest.approx(83.0, abs=0.1)


def test_backtrack_thresholds_0_and_1():
    """backtrack_threshold 0: a rewrite never fails, so no backtrack; 1: every rewrite fails,
    backtracks up to the budget, and the latency grows."""
    r0 = report([*EVAL, "--set", "backtrack_threshold=0"])
    r1 = report([*EVAL, "--set", "backtrack_threshold=1"])
    assert r0["backtracks_per_problem"] == 0.0
    assert 0 < r1["backtracks_per_problem"] <= 5
    assert r1["latency_s_per_problem"] > r0["latency_s_per_problem"]


@pytest.mark.parametrize("value", ["-0.1", "1.5", "nan", "inf"])
def test_thresholds_outside_0_1_are_refused(value):
    res = run_cli([*EVAL, "--set", f"accept_threshold={value}"])
    line = one_error_line(res)
    assert res.rc == 2 and line is not None and "accept_threshold" in line


# ---------------------------------------------------------------------- steps and tokens


def test_zero_steps_refused_by_the_loader(tmp_path):
    """A workload cannot have zero steps: steps_mean must be >= 1 (exit 3, file and key)."""
    d = edge_workload(tmp_path, steps_mean="0")
    res = run_cli([*EVAL[:4], "edge", "--catalog", str(d)])
    line = one_error_line(res)
    assert res.rc == 3 and line is not None
    assert "edge.toml: steps_mean: must be >= 1" in line


def test_one_step_problems(tmp_path):
    """steps_mean 1 with cv 0: every problem is a single step, one attempt, no backtrack."""
    d = edge_workload(tmp_path, steps_mean="1", steps_cv="0")
    r = report([*EVAL[:4], "edge", "--schedule", "heteroreason", "--json", "--catalog", str(d)])
    assert r["attempts_per_problem"] == pytest.approx(1.0)
    assert r["backtracks_per_problem"] == 0.0


@pytest.mark.slow  # about 35 s
def test_one_token_steps(tmp_path):
    """Steps of one token (draft and target): evaluates, committed tokens = steps."""
    d = edge_workload(tmp_path, draft_step_tokens_mean="1", target_step_tokens_mean="1",
                      draft_step_tokens_cv="0", target_step_tokens_cv="0")
    r = report([*EVAL[:4], "edge", "--schedule", "heteroreason", "--json", "--catalog", str(d)])
    assert r["tokens_per_problem"] == pytest.approx(7.4, rel=1e-3)  # math500 steps_mean
    assert r["latency_s_per_problem"] > 0


def test_huge_cv_refused(tmp_path):
    """A coefficient of variation beyond 100 is refused (cv 1e308 used to give NaN metrics)."""
    d = edge_workload(tmp_path, target_step_tokens_cv="1e308")
    line = one_error_line(run_cli([*EVAL[:4], "edge", "--catalog", str(d)]))
    assert line is not None and "target_step_tokens_cv: must be <= 100" in line


# ------------------------------------------------------------------------- infeasibility


def test_context_beyond_max_positions_is_infeasible():
    """A context budget beyond a model's max positions: exit 4, with the reason per role."""
    res = run_cli([*EVAL, "--set", "max_context_tokens=8192"])
    line = one_error_line(res)
    assert res.rc == 4 and line is not None
    assert "target: context 8192 beyond qwen2.5-math-7b-instruct max positions 4096" in line


def test_model_that_does_not_fit_is_infeasible(cat):
    """The 72B target on one RTX 3090: exit 4 naming the memory needed and offered."""
    res = run_cli([*EVAL, "--set", "target_model=qwen2.5-math-72b-instruct",
                   "--set", "draft_device=rtx-3090", "--set", "draft_serving=vllm-cudagraph",
                   "--set", "draft_precision=bf16"])
    line = one_error_line(res)
    assert res.rc == 4 and line is not None
    assert re.search(r"target: qwen2.5-math-72b-instruct needs [0-9.]+ GB per GPU .* but "
                     r"rtx-3090 offers [0-9.]+ GB usable", line)
    s = with_overrides(cat.get("system", "paper-config1-3090"),
                       {"target_model": "qwen2.5-math-72b-instruct"})
    with pytest.raises(InfeasibleError, match=r"needs [0-9.]+ GB per GPU"):
        build_design(cat, s, PRESETS["brsd"])


def test_unknown_name_in_a_system_names_file_and_key():
    res = run_cli([*EVAL, "--set", "draft_device=rtx-9090"])
    line = one_error_line(res)
    assert res.rc == 2 and line is not None
    assert "paper-config1-u280.toml (with --set): draft_device: unknown device 'rtx-9090'" \
        in line


def test_evaluate_refuses_non_finite_results(cat):
    """Defence in depth: a report with a NaN metric is an error, never a silent 'nan'."""
    from dse.engine import report as ev
    from dse.errors import DseError

    d = build_design(cat, cat.get("system", "paper-config1-u280"), PRESETS["brsd"])
    r = evaluate(d, cat.get("workload", "math500"))
    bad = ev.Report(**{**r.to_dict(), "j_per_token": float("nan")})
    with pytest.raises(DseError, match="j_per_token = nan"):
        ev.finite(bad)


# ------------------------------------------------------------------------- search spaces


@pytest.mark.parametrize(("line", "key"), [
    ('models = ["qwen2.5-0.5b-instruct"]', "draft.models"),
    ('gpus = ["rtx-3090", "a100-80gb-pcie"]', "target.gpus"),
    ("backtrack_threshold = [0.5, 0.7]", "algorithm.backtrack_threshold"),
    ("step_ahead = [false, true]", "algorithm.step_ahead"),
])
def test_empty_space_list_names_the_key(tmp_path, line, key):
    """An empty list in a space file: one line naming the file and the key, exit 3."""
    empty = line.split("=")[0] + "= []"
    space = write_small_space(tmp_path / "empty.toml", **{line: empty})
    res = run_cli(["sweep", "--space", str(space)])
    err = one_error_line(res)
    assert res.rc == 3 and err is not None, res.err
    assert f"empty.toml: {key}:" in err


def test_space_where_constraints_exclude_everything(tmp_path):
    """Constraints nothing meets: one line 'no feasible design ... relax the constraints',
    exit 4 (as an infeasible design), and --out is not written."""
    space = write_small_space(tmp_path / "s.toml")
    for extra in ([], ["--out", str(tmp_path / "out")]):
        res = run_cli(["sweep", "--space", str(space), "--min-accuracy", "100", *extra])
        line = one_error_line(res)
        assert res.rc == 4 and line is not None, res.err
        assert "no feasible design" in line
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------- studies


def test_unknown_study(tmp_path):
    """A study that does not exist: one line listing the valid ones, exit 2; `dse studies` on
    a storage that does not exist lists none and creates nothing."""
    url = f"sqlite:///{tmp_path / 'none.db'}"
    res = run_cli(["export", "--study", "nope", "--storage", url, "--out",
                   str(tmp_path / "b")])
    line = one_error_line(res)
    assert res.rc == 2 and line is not None
    assert "unknown study 'nope'; valid: (none)" in line
    res = run_cli(["studies", "--storage", url])
    assert res.rc == 0 and "no studies" in res.out
    assert not (tmp_path / "none.db").exists() and not (tmp_path / "b").exists()


def test_unknown_trial_of_a_study(tmp_path):
    space = write_small_space(tmp_path / "s.toml")
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert run_cli(["optimize", "--space", str(space), "--trials", "3", "--storage", url,
                    "--study-name", "st", "--json"]).rc == 0
    res = run_cli(["export", "--study", "other", "--storage", url, "--out",
                   str(tmp_path / "b")])
    assert res.rc == 2 and "unknown study 'other'; valid: st" in res.err
    res = run_cli(["export", "--study", "st", "--trial", "99", "--storage", url, "--out",
                   str(tmp_path / "b")])
    line = one_error_line(res)
    assert res.rc == 2 and line is not None and "--trial 99" in line


# ---------------------------------------------------------------------------- the document


def test_reliability_doc_structure():
    """docs/reliability.md is generated by scripts/reliability_report.py and has its sections
    and per-category tables (the campaign itself is not rerun here)."""
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    assert text.startswith("# Reliability")
    assert "scripts/reliability_report.py" in text
    for heading in ("## Summary", "## Fuzzing", "## Fault injection", "## Edge cases",
                    "## Security", "## Known issues"):
        assert heading in text, heading
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    for col in ("inputs tried", "faults injected", "crashes", "data lost"):
        assert col in summary, col
    rows = [ln for ln in summary.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert len(rows) >= 4  # header + one row per campaign
    total = [ln for ln in rows if ln.startswith("| total")]
    assert total, "a total row"
