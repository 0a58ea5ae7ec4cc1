"""Property and fuzz tests (issue 8): random designs, malformed catalogs, junk command lines.

Generators live in tests/fuzzing.py (shared with scripts/reliability_report.py). Sizes keep the
default run around a minute on two cores.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dse.engine.evaluate import evaluate
from tests.fuzzing import (
    TWIN_RTOL,
    build_case,
    catalog_argv,
    catalog_verdict,
    feasible,
    fresh_dir,
    mutate_catalog,
    one_error_line,
    random_argv,
    random_design_case,
    report_violations,
    run_cli,
    run_random_argv,
)


def fuzz(n: int) -> settings:
    """n examples, no deadline (an evaluation takes ~0.3 s); the fixtures are the session
    catalog and a directory each example empties first."""
    return settings(max_examples=n, deadline=None, suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@fuzz(80)
@given(rng=st.randoms(use_true_random=False))
def test_random_designs_satisfy_invariants(cat, rng: random.Random):
    """A well-formed design never crashes `evaluate`; its report is finite, non-negative,
    its parts sum to its totals and it respects the physical bounds (tests/fuzzing.py,
    `report_violations`)."""
    case = random_design_case(cat, rng)
    d = build_case(cat, case)
    if not feasible(d):  # infeasible designs are refused by build_design(check=True)
        return
    w = cat.get("workload", case.workload)
    r = evaluate(d, w)
    assert report_violations(d, w, r) == [], case.describe()


@fuzz(40)
@given(rng=st.randoms(use_true_random=False))
def test_step_ahead_never_slower_than_sequential_twin(cat, rng: random.Random):
    """Step-ahead only moves the draft's next step into the verification window and starts the
    target's prefetch early; per attempt it is never longer, so the expectation is not either
    (tolerance: float rounding, TWIN_RTOL = 1e-9 relative)."""
    case = random_design_case(cat, rng)
    if {"colocate", "verifier", "workflow"} & set(case.overrides):
        return  # shared devices refuse step-ahead; the target alone has no draft to run ahead
    sa = build_case(cat, case, step_ahead=True)
    if not feasible(sa):
        return
    seq = build_case(cat, case, step_ahead=False)
    w = cat.get("workload", case.workload)
    r_sa, r_seq = evaluate(sa, w), evaluate(seq, w)
    assert r_sa.latency_s_per_problem <= r_seq.latency_s_per_problem * (1 + TWIN_RTOL), \
        case.describe()


@pytest.mark.slow  # 150 malformed catalogs, about 10 s
@fuzz(150)
@given(rng=st.randoms(use_true_random=False))
def test_malformed_catalog_gives_one_line(tmp_path, rng: random.Random):
    """A malformed catalog file (missing keys, wrong types, NaN, inf, negative, zero and huge
    values, unicode and path-like names, duplicated names and keys, broken TOML, binary junk,
    a config.json with a missing or mistyped field) gives one error line naming the file, exit
    2 or 3, no traceback. A mutation that leaves the file valid (a zero or a huge value in
    range) runs cleanly: exit 0 with finite JSON, or one error line (exit 4: infeasible)."""
    d = fresh_dir(tmp_path / "catalog")  # the same directory for every example: emptied
    m = mutate_catalog(rng, d)
    res = run_cli(catalog_argv(m, d))
    bad, _ = catalog_verdict(m, res)
    assert bad is None, (m, bad)


@fuzz(300)
@given(rng=st.randoms(use_true_random=False))
def test_random_command_lines(tmp_path, rng: random.Random):
    """Junk command lines end in a usage error (exit 2, argparse's usage and one error line) or
    a clean one-line error with a meaningful exit code; never a traceback."""
    argv = random_argv(rng)
    res = run_random_argv(argv, fresh_dir(tmp_path / "cwd"))
    if res is None:  # parsed, and a long-running command: not run
        return
    assert not res.traceback and res.rc != -1, (argv, res.err)
    if res.rc == 0:
        return
    assert res.rc in (1, 2, 3, 4), (argv, res.rc)
    lines = res.err.strip().splitlines()
    assert lines and lines[-1].startswith("dse"), (argv, res.err)
    if res.rc != 2:  # argparse's usage errors print the usage lines first
        assert one_error_line(res) is not None, (argv, res.err)


@pytest.mark.parametrize("argv", [
    [], ["--bogus"], ["evaluate"], ["evaluate", "--system"], ["roofline", "--context", "-1"],
    ["optimize", "--trials", "0"], ["optimize", "--trials", "nan"],
    ["sweep", "--min-accuracy", "101"], ["export", "--system", "x"],
])
def test_usage_errors_exit_2(argv):
    res = run_cli(argv)
    assert res.rc == 2 and not res.traceback
    assert res.err.strip().splitlines()[-1].startswith("dse")
