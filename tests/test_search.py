"""Search: the space loader, the vectorised grid against the per-design model, exact Pareto
fronts, the sweep's optimum against brute force, and Optuna studies (resume, concurrency,
SIGKILL, PostgreSQL)."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dse.cli import main
from dse.engine.closed_form import accuracy_only
from dse.errors import SpecError, UnknownNameError, UsageError
from dse.io.design_files import design_file_text, read_design_file
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.model.symbolic import mean_value
from dse.search import (
    Constraints,
    list_studies,
    optimize,
    pareto_mask,
    study_design_file,
    sweep,
)
from dse.search.grid import Evaluator, feasible_mask, system_for, violation
from dse.search.objectives import (
    CONSTRAINT_TABLE,
    METRICS,
    OBJECTIVE_TABLE,
    OBJECTIVES,
    Constraint,
    Objective,
)
from dse.search.parameters import sample, study_distributions, study_knobs
from dse.search.space import hardware, load_space, n_designs

TINY = str(Path(__file__).parent / "data" / "tiny-space.toml")


@pytest.fixture(scope="module")
def tiny(cat):
    return load_space(cat, TINY)


# ----------------------------------------------------------------------------- space file


def test_tiny_space_counts(cat, tiny):
    """2 drafts x (U280 at 2 clocks + 3090) ... by hand: drafts = 1 GPU + 2 FPGA builds = 3,
    PRMs 1, targets 2 -> 6 hardware choices; knobs: 3 accept x (1 forward-only + 1 budget x 2
    thresholds x 2 windows) x 4 flag pairs = 60."""
    assert len(hardware(cat, tiny)) == 6
    assert tiny.knobs_per_hardware == 60
    assert n_designs(cat, tiny) == 360


def test_default_space_is_large(cat):
    assert n_designs(cat, load_space(cat)) >= 1_000_000


@pytest.mark.parametrize(("edit", "key"), [
    (("accept_threshold = [0.5, 0.7, 0.9]", "accept_threshold = [0.5, 1.7]"),
     "algorithm.accept_threshold"),
    (('gpus = ["rtx-3090"]\ngpu_precisions', 'gpus = ["rtx-9999"]\ngpu_precisions'),
     "draft.gpus"),
    (("max_backtracks = [0, 2]", "max_backtracks = []"), "algorithm.max_backtracks"),
    (("[workloads]", "bogus = 1\n[workloads]"), "bogus"),
    (("usd_per_kwh = 0.15\n", "usd_per_kwh = nan\n"), "usd_per_kwh"),
    (("min_accuracy = 60.0", "min_accuracy = 160.0"), "constraints.min_accuracy"),
])
def test_space_errors_name_file_and_key(cat, tmp_path, edit, key):
    text = Path(TINY).read_text().replace(*edit, 1)
    p = tmp_path / "space.toml"
    p.write_text(text)
    with pytest.raises(SpecError) as e:
        load_space(cat, p)
    assert e.value.key == key and str(p) in str(e.value)


def test_space_unknown_workload(cat, tmp_path):
    p = tmp_path / "space.toml"
    p.write_text(Path(TINY).read_text().replace("math500 = 1.0", "aime = 1.0"))
    with pytest.raises(SpecError, match=r"workloads\.aime: unknown workload 'aime'; valid: "):
        load_space(cat, p)


# ------------------------------------------------------------------- grid vs the model


def test_grid_equals_mean_value_model(cat, tiny):
    """Every design of the tiny space: the grid's latency and J/token are the mean-value
    model's (dse.model.symbolic) to rounding; its accuracy is within 1 point of the accurate
    propagation (the grid uses the mean-value backtrack share)."""
    ev = Evaluator(cat, tiny)
    w = cat.get("workload", "math500")
    rng = np.random.default_rng(0)
    for hw in hardware(cat, tiny):
        r = ev.evaluate(hw)
        assert not r.reasons
        for _ in range(4):
            f, a, k = (int(rng.integers(n)) for n in ev.grid.shape)
            kn = ev.knobs(f, a, k)
            s = system_for(tiny, hw, accept=kn["accept_threshold"],
                           backtrack=kn["backtrack_threshold"],
                           max_backtracks=kn["max_backtracks"], window=kn["backtrack_window"])
            sched = PRESETS["rsd"].with_flags(backtracking=kn["backtracking"],
                                              step_ahead=kn["step_ahead"],
                                              shadow_sync=kn["shadow_sync"])
            d = build_design(cat, s, sched)
            mv = mean_value(d, w)
            for m in ("latency_s_per_problem", "j_per_token", "goodput_tokens_per_s"):
                assert r.metrics[m][f, a, k] == pytest.approx(mv[m], rel=1e-9)
            assert r.metrics["accuracy"][f, a, k] == pytest.approx(accuracy_only(d, w), abs=1.0)


def test_accuracy_intervals_over_the_knob_cells_equal_the_whole_grid(cat):
    """A sweep constrained on accuracy alone propagates its interval over the [1, A, K] knob
    cells with the accuracy factors only; that equals propagating over the whole [F, A, K]
    grid with every factor of the design (device factors never move the accuracy), NaN where
    the hardware cannot run a schedule, for a sample of the default space's hardware."""
    from dse.uncertainty import intervals

    space = load_space(cat)
    ev = Evaluator(cat, space, confidence=0.9, checked={"accuracy": "min"})
    hws = [hw for hw in hardware(cat, space) if hw.draft is not None]
    for hw in hws[:: max(len(hws) // 12, 1)]:
        d = ev.design(hw)
        central = ev.metrics(hw, d)
        central["accuracy"] = np.where(ev.valid(hw), central["accuracy"], np.nan)
        lo, hi = ev.intervals(hw, d, central, ("accuracy",))["accuracy"]
        ref_lo, ref_hi = intervals(
            ev.factors(d), {**central, "p_accept": ev.p_accept(hw)},
            lambda values, hw=hw: {"accuracy": np.broadcast_to(ev.accuracy_cells(hw, values),
                                                               ev.grid.shape)},
            ("accuracy",))["accuracy"]
        ref_lo = np.where(np.isnan(central["accuracy"]), np.nan, ref_lo)
        ref_hi = np.where(np.isnan(central["accuracy"]), np.nan, ref_hi)
        np.testing.assert_allclose(lo, ref_lo, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hi, ref_hi, rtol=1e-12, atol=1e-12)
        assert np.isnan(lo).sum() == np.isnan(central["accuracy"]).sum()


def test_cost_metric_by_hand(cat, tiny):
    """$/Mtoken = (capex / lifetime + power x $/kWh) / goodput x 1e6."""
    ev = Evaluator(cat, tiny)
    hw = hardware(cat, tiny)[0]
    r = ev.evaluate(hw)
    capex = sum(cat.device(p.device).list_price_usd * p.tp for p in (hw.draft, hw.prm,
                                                                     hw.target))
    rate = capex / (3.0 * 365.25 * 86400) + r.metrics["power_w"] / 1000 * 0.15 / 3600
    np.testing.assert_allclose(r.metrics["cost_usd_per_mtok"],
                               rate / r.metrics["goodput_tokens_per_s"] * 1e6, rtol=1e-12)


# ------------------------------------------------------------------------------- Pareto


def _brute_front(v: np.ndarray) -> set[tuple[float, ...]]:
    pts = {tuple(x) for x in v}
    return {p for p in pts if not any(all(q[i] <= p[i] for i in range(len(p))) and q != p
                                      for q in pts)}


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4).flatmap(lambda m: arrays(
    np.float64, st.tuples(st.integers(1, 40), st.just(m)),
    elements=st.integers(0, 6).map(float))))
def test_pareto_mask_is_the_exact_front(v):
    """Integer values force ties and duplicates: the mask keeps one of each non-dominated
    point and nothing else."""
    mask = pareto_mask(v)
    kept = [tuple(x) for x in v[mask]]
    assert len(kept) == len(set(kept))  # duplicates kept once
    if v.shape[1] == 1:
        assert kept == [(v.min(),)]
    else:
        assert set(kept) == _brute_front(v)


# -------------------------------------------------------------------------------- sweep


def test_sweep_optimum_is_brute_force_minimum(cat, tiny):
    ev = Evaluator(cat, tiny)
    cons = {"min_accuracy": 60.0}
    best = np.inf
    for hw in hardware(cat, tiny):
        r = ev.evaluate(hw)
        ok = feasible_mask(r.metrics, cons)
        best = min(best, float(np.where(ok, r.metrics["j_per_token"], np.inf).min()))
    res = sweep(cat, tiny, ["j_per_token"])
    assert res.n_designs == 360
    # the mean-value optimum heads the shortlist the accurate closed form re-ranks
    mv = [c.metrics["mean_value_diagnostic"]["j_per_token"] for c in res.pareto]
    assert min(mv) == pytest.approx(best, rel=1e-12)
    assert res.best[0].metrics["accuracy"] >= 60.0
    assert res.best[0].metrics["j_per_token"] == min(c.metrics["j_per_token"]
                                                     for c in res.pareto)
    # the mean-value optimum's design file reloads to the same design and metrics
    df = res.pareto[mv.index(min(mv))].design
    d = build_design(cat, df.system, df.schedule)
    assert mean_value(d, cat.get("workload", "math500"))["j_per_token"] == pytest.approx(
        best, rel=1e-9)


@pytest.mark.parametrize("objectives", [["j_per_token"], ["latency", "j_per_token"]])
def test_a_sweep_over_worker_processes_equals_one_in_process(cat, tiny, objectives,
                                                              monkeypatch):
    """The hardware choices spread over forked processes (one per task here, so that the tiny
    space spans several): the same winner, front, families, counts, reasons and sampled
    points as in one process."""
    from dse.search import exhaustive

    if not exhaustive.FORKS:
        pytest.skip("worker processes are forked on Linux only")
    monkeypatch.setattr(exhaustive, "CHUNK", 1)
    cons = Constraints(min_accuracy=60.0)
    one, two = (sweep(cat, tiny, objectives, cons, processes=n) for n in (1, 3))

    def seen(r: Any) -> Any:
        return ([c.to_dict() for c in r.best], [c.to_dict() for c in r.pareto], r.n_designs,
                r.n_feasible, r.n_hardware, r.infeasible, r.examples, repr(r.by_family),
                repr(r.ties))

    assert seen(one) == seen(two)
    points = one.points, two.points
    assert points[0].keys() == points[1].keys() and all(
        np.array_equal(points[0][k], points[1][k]) for k in points[0])
    assert len(points[0]["j_per_token"]) > 0


def test_sweep_front_and_constraints(cat, tiny):
    res = sweep(cat, tiny, ["j_per_token", "latency"], Constraints(min_accuracy=70.0))
    j = [c.metrics["j_per_token"] for c in res.pareto]
    lat = [c.metrics["latency_s_per_problem"] for c in res.pareto]
    assert j == sorted(j) and lat == sorted(lat, reverse=True)  # a 2-D front is monotone
    assert all(c.metrics["accuracy"] >= 70.0 for c in res.pareto)
    none = sweep(cat, tiny, ["j_per_token"], Constraints(min_accuracy=99.9))
    assert none.n_feasible == 0 and none.best == []


def test_sweep_cli_json_and_files(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", "--space", TINY, "--objective", "j_per_token", "--objective",
                 "accuracy", "--json", "--out", str(out)]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["n_designs"] == 360 and 0 < js["n_feasible"] <= 360 and js["seconds"] > 0
    assert {"design", "metrics"} <= set(js["best"][0])
    assert sorted(p.name for p in out.iterdir()) == [".dse-result-set.json", "best.toml",
                                                     "pareto.csv", "pareto.html"]
    assert len((out / "pareto.csv").read_text().splitlines()) == len(js["pareto"]) + 1
    # every front row carries its 90% interval's ends, and they bracket the value
    import csv
    with (out / "pareto.csv").open() as fh:
        rows_ = list(csv.DictReader(fh))
    for r in rows_:
        for m in ("j_per_token", "accuracy"):
            assert float(r[f"{m}_low"]) <= float(r[m]) <= float(r[f"{m}_high"]), (m, r)
    assert js["confidence"] == 0.9
    # best.toml is a design file dse evaluate loads, with its schedule and workload
    assert main(["evaluate", "--design", str(out / "best.toml"), "--json"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["workload"] == "math500"
    # nothing is overwritten without --force
    before = (out / "best.toml").read_text()
    assert main(["sweep", "--space", TINY, "--out", str(out)]) == 2  # before the search
    assert "--force" in capsys.readouterr().err
    assert (out / "best.toml").read_text() == before


def test_sweep_cli_usage_errors(capsys):
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--objective", "speed"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--min-accuracy", "170"])
    assert e.value.code == 2
    capsys.readouterr()
    assert main(["sweep", "--space", "/nonexistent/space.toml"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/nonexistent/space.toml" in err[-1]


# ----------------------------------------------------------------------------- optimize


def test_optimize_finds_the_sweep_optimum_and_resumes(cat, tiny, tmp_path):
    """One objective: the trial's knobs are solved exactly, so covering the 6 hardware
    choices finds the exact optimum. A second call with a larger --trials continues the
    study."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    swept = sweep(cat, tiny, ["j_per_token"])
    exact = min(c.metrics["mean_value_diagnostic"]["j_per_token"] for c in swept.pareto)
    r = optimize(cat, tiny, ["j_per_token"], trials=25, seed=1, storage=url)
    assert r.n_trials == 25 and r.n_new == 25
    assert min(c.metrics["mean_value_diagnostic"]["j_per_token"] for c in r.best) == \
        pytest.approx(exact, rel=1e-9)
    # shown by the accurate closed form: the same winner as the sweep's
    assert r.best[0].metrics["j_per_token"] == pytest.approx(
        swept.best[0].metrics["j_per_token"], rel=1e-9)
    r2 = optimize(cat, tiny, ["j_per_token"], trials=30, seed=1, storage=url)
    assert r2.n_trials == 30 and r2.n_new == 5
    assert r2.study_name == r.study_name
    # the study's best trial exports as a design file
    df = study_design_file(url, r.study_name)
    assert df.system.accept_threshold in {c.design.system.accept_threshold for c in r.best}
    studies = list_studies(url)
    assert [s["name"] for s in studies] == [r.study_name]
    assert studies[0]["best_values"][0] == pytest.approx(exact, rel=1e-9)


def test_a_study_evaluates_each_hardware_choice_once(cat, tiny, monkeypatch):
    """25 trials over the tiny space's 6 hardware choices: each choice's grid is computed
    once and the trials that draw it again read it (the study's answer is the same: the
    test above)."""
    from dse.search.grid import Evaluator

    seen: list[Any] = []
    real = Evaluator.evaluate

    def counted(self: Evaluator, hw: Any) -> Any:
        seen.append(hw)
        return real(self, hw)

    monkeypatch.setattr(Evaluator, "evaluate", counted)
    r = optimize(cat, tiny, ["j_per_token"], trials=25, seed=1)
    assert r.n_trials == 25
    assert 1 < len(seen) == len(set(seen)) <= 6


def test_optimize_multi_objective_front_is_feasible(cat, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'm.db'}"
    r = optimize(cat, tiny, ["j_per_token", "latency"], trials=30, seed=0, storage=url)
    assert r.best
    vals = np.array([[c.metrics["j_per_token"], c.metrics["latency_s_per_problem"]]
                     for c in r.best])
    assert pareto_mask(vals).all()
    assert all(c.metrics["accuracy"] >= 60.0 for c in r.best)


def test_optimize_refuses_another_objective_on_a_study(cat, tiny, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    optimize(cat, tiny, ["j_per_token"], trials=2, storage=url, study_name="mine")
    assert main(["optimize", "--space", TINY, "--objective", "latency", "--trials", "3",
                 "--storage", url, "--study-name", "mine"]) == 2
    assert "another space, objective" in capsys.readouterr().err


def test_studies_cli(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'none.db'}"
    assert main(["studies", "--storage", url]) == 0
    assert "no studies" in capsys.readouterr().out
    assert not (tmp_path / "none.db").exists()  # listing never creates a storage


def _dse(*args: str) -> list[str]:
    return [sys.executable, "-m", "dse.cli", *args]


def _completed(url: str, name: str) -> dict[int, str]:
    import optuna

    study = optuna.load_study(study_name=name, storage=url)
    done = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    return {t.number: t.user_attrs["design_toml"] for t in done}


def _run_workers(url: str, n_workers: int, trials: int, tmp_path: Path) -> list[int]:
    """Run workers on one study at once; each one's count of the trials it added."""
    cmd = _dse("optimize", "--space", TINY, "--trials", str(trials), "--storage", url,
               "--study-name", "shared", "--json")
    procs = [subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n_workers)]
    added = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        added.append(json.loads(out)["n_new_trials"])
    return added


def _check_shared_study(url: str, trials: int, added: list[int]) -> None:
    import optuna

    study = optuna.load_study(study_name="shared", storage=url)
    numbers = [t.number for t in study.trials]
    assert len(numbers) == len(set(numbers))  # no trial recorded twice
    done = _completed(url, "shared")
    # each worker claims a trial's place before evaluating it (storage.within_budget): the
    # study holds exactly `trials` completed trials, the workers' reports add up to them, and
    # a trial that found the study full was pruned, not evaluated
    assert len(done) == trials and sum(added) == trials, (len(done), added)
    others = [t for t in study.trials if t.state.name != "COMPLETE"]
    assert all(t.state.name == "PRUNED" and "budget" in t.user_attrs for t in others)


def test_three_processes_share_an_embedded_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    _check_shared_study(url, 24, _run_workers(url, 3, 24, tmp_path))


def test_a_worker_that_loses_the_race_to_create_the_study_tries_again(cat, tiny, tmp_path,
                                                                     monkeypatch):
    """Three workers started at once on one SQLite file: one lost the commit that creates the
    study ("An exception is raised during the commit", CI) and exited 1. A storage error while
    creating the study is tried again (CREATE_ATTEMPTS); only the last one is the error line."""
    import optuna

    import dse.search.optuna_study as os_mod

    real = optuna.create_study
    calls = {"n": 0}

    def lose(n: int) -> Any:
        def create(*a: Any, **k: Any) -> Any:
            calls["n"] += 1
            if calls["n"] <= n:
                raise optuna.exceptions.StorageInternalError(
                    "An exception is raised during the commit.")
            return real(*a, **k)
        return create

    monkeypatch.setattr(optuna, "create_study", lose(1))
    url = f"sqlite:///{tmp_path / 'race.db'}"
    r = optimize(cat, tiny, ["j_per_token"], trials=3, storage=url, study_name="race")
    assert calls["n"] == 2 and len(r.study.trials) >= 3
    calls["n"] = 0
    monkeypatch.setattr(optuna, "create_study", lose(os_mod.CREATE_ATTEMPTS))
    with pytest.raises(os_mod.DseError, match="cannot create study lost: An exception is "
                       "raised during the commit"):
        optimize(cat, tiny, ["j_per_token"], trials=3, storage=f"sqlite:///{tmp_path / 'l.db'}",
                 study_name="lost")
    assert calls["n"] == os_mod.CREATE_ATTEMPTS


@pytest.mark.skipif(not os.environ.get("DSE_TEST_POSTGRES_URL"),
                    reason="DSE_TEST_POSTGRES_URL not set (.ci/run starts a PostgreSQL server)")
def test_three_processes_share_a_postgresql_study(tmp_path):
    import optuna

    url = os.environ["DSE_TEST_POSTGRES_URL"]
    try:
        optuna.delete_study(study_name="shared", storage=url)
    except KeyError:
        pass
    _check_shared_study(url, 24, _run_workers(url, 3, 24, tmp_path))


def test_sigkill_then_restart_keeps_every_completed_trial(tmp_path):
    url = f"sqlite:///{tmp_path / 'k.db'}"
    cmd = _dse("optimize", "--space", TINY, "--trials", "400", "--storage", url,
               "--study-name", "killed", "--json")
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    before: dict[int, str] = {}
    while time.monotonic() < deadline and len(before) < 8:
        time.sleep(0.5)
        try:
            before = _completed(url, "killed")
        except Exception:  # the study may not exist yet
            before = {}
    p.send_signal(signal.SIGKILL)
    p.wait()
    before = _completed(url, "killed")
    assert len(before) >= 8
    n = len(before) + 5
    out = subprocess.run(_dse("optimize", "--space", TINY, "--trials", str(n), "--storage",
                              url, "--study-name", "killed", "--json"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    js = json.loads(out.stdout)
    after = _completed(url, "killed")
    assert js["n_trials"] == len(after) >= n
    assert all(after[k] == v for k, v in before.items())  # intact, not re-run
    import optuna

    left = optuna.load_study(study_name="killed", storage=url).get_trials(
        states=(optuna.trial.TrialState.RUNNING,))
    # the killed process's trial was failed at once, with no heartbeat, unless the kill came
    # in the milliseconds before its worker marked it: that one waits out the grace period
    from dse.search.storage import WORKER_ATTR

    assert all(WORKER_ATTR not in t.user_attrs for t in left) and len(left) <= 1
    assert main(["evaluate", "--design", _best_design_file(tmp_path, url)]) == 0


def test_a_sqlite_study_fails_the_trials_a_killed_process_left_running(tmp_path):
    """No heartbeat on SQLite (one host): a RUNNING trial marked by a process of this host that
    is gone, or never marked and older than the grace period, is failed at once by the next run
    (storage.fail_orphans); a live worker's trial and a fresh unmarked one are left alone."""
    import datetime

    import optuna

    from dse.search.storage import GRACE_S, WORKER_ATTR, fail_orphans, open_storage

    store = open_storage(f"sqlite:///{tmp_path / 'o.db'}")
    assert store.get_heartbeat_interval() is None
    study = optuna.create_study(storage=store, study_name="o")
    import socket

    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that existed and no longer does
    trials = [study.ask() for _ in range(4)]
    trials[0].set_user_attr(WORKER_ATTR, f"{host}:{dead.pid}")
    trials[1].set_user_attr(WORKER_ATTR, f"{host}:{os.getpid()}")
    old = datetime.datetime.now() - datetime.timedelta(seconds=2 * GRACE_S)
    with store.engine.begin() as con:  # trial 2 started long ago and was never marked
        from sqlalchemy import text

        con.execute(text("UPDATE trials SET datetime_start = :t WHERE trial_id = :i"),
                    {"t": old, "i": trials[2]._trial_id})
    assert fail_orphans(study) == 2
    states = [t.state.name for t in study.get_trials(deepcopy=False)]
    assert states == ["FAIL", "RUNNING", "FAIL", "RUNNING"]
    assert fail_orphans(study) == 0
    assert fail_orphans(optuna.create_study()) == 0  # in memory: nothing outlives the process


def _stored_trials(url: str, name: str) -> list[tuple[Any, ...]]:
    """A study's trials as its database holds them (read by a plain storage): everything but
    the clock."""
    import optuna

    from dse.search.storage import open_storage

    store = open_storage(url, create=False)
    try:
        study = optuna.load_study(study_name=name, storage=store)
        return [(t.number, t.state.name, t.values, list(t.params.items()), t.distributions,
                 t.user_attrs, t.system_attrs) for t in study.get_trials(deepcopy=False)]
    finally:
        store.engine.dispose()


def test_the_write_behind_storage_stores_the_study_the_plain_one_does(cat, tiny, tmp_path,
                                                                      monkeypatch):
    """One process's study on the write-behind storage (a trial's writes in one transaction
    at its finish, one read of the study per trial) is the plain storage's, trial for trial:
    states, values, parameters in their order, distributions and every attribute; and
    this Optuna has what it relies on (else every optimize silently runs the slow way)."""
    from dse.search import optuna_study, storage, write_behind

    assert write_behind.usable()
    kw = dict(trials=40, seed=3, study_name="s")
    for n, objectives in enumerate((["j_per_token"], ["j_per_token", "latency"])):
        fast = f"sqlite:///{tmp_path / f'fast{n}.db'}"
        r = optimize(cat, tiny, objectives, storage=fast, **kw)
        with monkeypatch.context() as m:
            m.setattr(optuna_study, "write_behind", lambda store: store)
            plain = f"sqlite:///{tmp_path / f'plain{n}.db'}"
            r0 = optimize(cat, tiny, objectives, storage=plain, **kw)
        got, want = _stored_trials(fast, "s"), _stored_trials(plain, "s")
        assert len(got) == 40 and got == want
        assert [c.toml for c in r.best] == [c.toml for c in r0.best]
        assert all(storage.WORKER_ATTR in t[5] for t in got)


def test_a_write_behind_trial_reaches_the_database_whole_at_its_finish(tmp_path):
    """While a trial runs, its process reads what it wrote and the database holds only the
    trial and its worker mark (written with it, in one transaction); at its finish everything
    is written before its state; an attribute written again after an earlier flush (a
    parameter new to the study flushes) is updated; an unserialisable one fails at once."""
    import optuna

    from dse.search.storage import WORKER_ATTR, open_storage, write_behind

    url = f"sqlite:///{tmp_path / 'w.db'}"
    store = write_behind(open_storage(url))
    study = optuna.create_study(storage=store, study_name="w")
    t0 = study.ask()
    t0.suggest_int("a", 0, 9)
    t0.set_user_attr("x", 1)
    study.tell(t0, 1.0)  # "a" is now known: the next trial's "a" waits for its finish
    t = study.ask()
    t.suggest_int("a", 0, 9)
    t.set_user_attr("x", [1, 2])
    with pytest.raises(TypeError):
        t.set_user_attr("bad", object())
    assert store.get_trial(t._trial_id).user_attrs["x"] == [1, 2]
    running = _stored_trials(url, "w")[1]
    assert running[1] == "RUNNING" and running[3] == [] and set(running[5]) == {WORKER_ATTR}
    t.suggest_float("b", 0.0, 1.0)  # new to the study: what is pending is written first
    assert [p for p, _ in _stored_trials(url, "w")[1][3]] == ["a", "b"]
    t.set_user_attr("x", "again")  # written by that flush: updated in place at the finish
    told = study.tell(t, 2.0)  # read back from what this process wrote, as the database has it
    done = _stored_trials(url, "w")[1]
    assert (told.number, told.state.name, told.values, list(told.params.items()),
            told.distributions, told.user_attrs, told.system_attrs) == done
    assert done[1] == "COMPLETE" and done[2] == [2.0] and [p for p, _ in done[3]] == ["a", "b"]
    assert done[5]["x"] == "again" and WORKER_ATTR in done[5]
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):
        store.set_trial_user_attr(t._trial_id, "late", 1)
    # another process's running trial (as fail_orphans fails it) goes through Optuna's own path
    other = open_storage(url)
    gone = optuna.load_study(study_name="w", storage=other).ask()
    assert store.set_trial_state_values(gone._trial_id, optuna.trial.TrialState.FAIL)
    assert [x[1] for x in _stored_trials(url, "w")] == ["COMPLETE", "COMPLETE", "FAIL"]
    other.engine.dispose()
    store._backend.engine.dispose()


def _best_design_file(tmp_path: Path, url: str) -> str:
    """The killed study's best design, written as a design file and read back."""
    df = study_design_file(url, "killed")
    p = tmp_path / "best.toml"
    p.write_text(design_file_text(df.system, df.schedule, df.workload or "math500"))
    assert read_design_file(p).schedule == df.schedule
    return str(p)


def test_optimize_cli_out_dir(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    out = tmp_path / "o"
    assert main(["optimize", "--space", TINY, "--trials", "12", "--storage", url,
                 "--out", str(out), "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["n_trials"] == 12 and js["storage"] == url and js["study_name"] == "tiny-j_per_token"
    assert sorted(p.name for p in out.iterdir()) == [".dse-result-set.json", "best.toml",
                                                     "pareto.csv", "pareto.html", "trials.csv"]
    assert set(json.loads((out / ".dse-result-set.json").read_text())["files"]) == {
        "best.toml", "pareto.csv", "pareto.html", "trials.csv"}
    rows = (out / "trials.csv").read_text().splitlines()
    assert len(rows) == 13 and rows[0].startswith("number,state,j_per_token")


def test_optimize_in_memory_writes_no_database(tmp_path, capsys, monkeypatch):
    """--storage memory: the same study as a SQLite one (seeded: the same trials and winner),
    its files written, and no database anywhere (the working directory stays empty)."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o"
    assert main(["optimize", "--space", TINY, "--trials", "12", "--storage", "memory",
                 "--out", str(out), "--json"]) == 0
    mem = json.loads(capsys.readouterr().out)
    assert mem["storage"] == "in-memory" and mem["n_trials"] == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]
    assert len((out / "trials.csv").read_text().splitlines()) == 13
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert main(["optimize", "--space", TINY, "--trials", "12", "--storage", url,
                 "--json"]) == 0
    disk = json.loads(capsys.readouterr().out)
    assert [b["design"] for b in mem["best"]] == [b["design"] for b in disk["best"]]
    assert main(["optimize", "--space", TINY, "--trials", "12", "--storage", "memory"]) == 0
    cap = capsys.readouterr()
    assert "storage: memory (nothing is saved" in cap.err
    assert "in memory (not saved): 12 completed trials (12 new" in cap.out


def test_every_objective_runs(cat, tiny):
    for combo in itertools.combinations(["j_per_token", "latency", "goodput", "accuracy",
                                         "cost"], 1):
        r = sweep(cat, tiny, list(combo))
        assert r.best and np.isfinite(r.best[0].metrics["cost_usd_per_mtok"])


def test_workload_mix_is_the_weighted_combination(cat, tiny, tmp_path):
    """A 3:1 mix of MATH500 and GSM8K: per-problem latency, energy, tokens and accuracy are the
    weighted means of the single-workload values; J/token is energy over tokens."""
    text = Path(TINY).read_text()
    single = {}
    for wl in ("math500", "gsm8k"):
        p = tmp_path / f"{wl}.toml"
        p.write_text(text.replace("math500 = 1.0", f"{wl} = 1.0"))
        sp = load_space(cat, p)
        single[wl] = Evaluator(cat, sp).evaluate(hardware(cat, sp)[0]).metrics
    p = tmp_path / "mix.toml"
    p.write_text(text.replace("math500 = 1.0", "math500 = 3.0\ngsm8k = 1.0"))
    sp = load_space(cat, p)
    assert sp.workloads == (("math500", 0.75), ("gsm8k", 0.25))
    mix = Evaluator(cat, sp).evaluate(hardware(cat, sp)[0]).metrics
    for m in ("latency_s_per_problem", "energy_j_per_problem", "tokens_per_problem",
              "accuracy"):
        np.testing.assert_allclose(mix[m], 0.75 * single["math500"][m]
                                   + 0.25 * single["gsm8k"][m], rtol=1e-12)
    np.testing.assert_allclose(mix["j_per_token"],
                               mix["energy_j_per_problem"] / mix["tokens_per_problem"])


def test_prm_tensor_parallel(cat, tmp_path, capsys):
    """A PRM split over 2 GPUs: the space's [prm] tp reaches the design, the capital cost
    counts both boards, and `--set prm_tp=2` / the exported vLLM file agree."""
    p = tmp_path / "space.toml"
    p.write_text(Path(TINY).read_text().replace(
        'precisions = ["bf16"]\nserving = ["vllm-cudagraph"]\n\n[target]',
        'precisions = ["bf16"]\nserving = ["vllm-cudagraph"]\ntp = [1, 2]\n\n[target]', 1))
    sp = load_space(cat, p)
    assert {pl.tp for pl in sp.prms} == {1, 2}
    ev = Evaluator(cat, sp)
    one, two = (next(h for h in hardware(cat, sp) if h.prm.tp == n) for n in (1, 2))
    price = cat.device("rtx-3090").list_price_usd
    assert ev.capex_usd(two) - ev.capex_usd(one) == pytest.approx(price)
    d = ev.design(two)
    assert d.prm.tp == 2
    assert main(["evaluate", "--system", "paper-config1-u280", "--scenario", "math500",
                 "--set", "prm_tp=2", "--schedule", "heteroreason", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)["schedules"]["heteroreason"]
    assert js["latency_s_per_problem"] > 0
    out = tmp_path / "bundle"
    assert main(["export", "--system", "paper-config1-u280", "--set", "prm_tp=2", "--out",
                 str(out)]) == 0
    assert "tensor-parallel-size: 2" in (out / "gpu" / "vllm_prm.yaml").read_text()


def test_every_shipped_space_loads(cat):
    spaces = sorted((Path(__file__).parents[1] / "scenarios" / "spaces").glob("*.toml"))
    assert len(spaces) >= 2
    for p in spaces:
        sp = load_space(cat, p)
        assert p.stem == sp.name and n_designs(cat, sp) >= 1_000_000


# ------------------------------------------------- objective, constraint and parameter tables


def test_tables_name_known_metrics_and_the_grid_computes_each(cat, tiny):
    assert set(OBJECTIVES) == set(OBJECTIVE_TABLE)
    assert all(o.metric in METRICS for o in OBJECTIVE_TABLE.values())
    assert all(c.metric in METRICS for c in CONSTRAINT_TABLE.values())
    r = Evaluator(cat, tiny).evaluate(hardware(cat, tiny)[0])
    assert set(r.metrics) == set(METRICS)
    assert {o: OBJECTIVE_TABLE[o].direction for o in ("latency", "goodput")} == {
        "latency": 1, "goodput": -1}


def test_constraints_take_table_names_only_and_check_ranges(tiny):
    assert Constraints(70.0, None, 300.0) == Constraints(min_accuracy=70.0, max_power_w=300.0)
    assert Constraints(max_latency_s=2.0).max_latency_s == 2.0
    assert Constraints().min_accuracy is None
    assert Constraints(min_accuracy=70.0).merged(tiny) == {"min_accuracy": 70.0}
    assert Constraints(max_power_w=250).merged(tiny) == {"min_accuracy": 60.0, "max_power_w": 250}
    with pytest.raises(UnknownNameError, match="max_power_w"):
        Constraints(max_watts=3.0)
    for bad in ({"min_accuracy": 101.0}, {"max_latency_s": 0.0}, {"max_power_w": math.nan},
                {"min_accuracy": True}):
        with pytest.raises(UsageError, match=next(iter(bad))):
            Constraints(**bad)


def test_feasible_mask_and_violation_follow_each_row(cat, tiny):
    """By hand, per row: min accuracy keeps >= bound (to 1e-9) and its violation is the
    shortfall over the bound; a max bound keeps <= bound, violation value / bound - 1."""
    m = Evaluator(cat, tiny).evaluate(hardware(cat, tiny)[0]).metrics
    acc, lat = m["accuracy"], m["latency_s_per_problem"]
    cons = {"min_accuracy": float(np.median(acc)), "max_latency_s": float(np.median(lat))}
    ok = feasible_mask(m, cons)
    assert np.array_equal(ok, (acc >= cons["min_accuracy"] - 1e-9)
                          & (lat <= cons["max_latency_s"]))
    v = violation(m, cons)
    want = np.maximum((cons["min_accuracy"] - acc) / cons["min_accuracy"],
                      lat / cons["max_latency_s"] - 1)
    assert np.allclose(v, want)
    assert np.array_equal(v <= 0, ok)
    assert (violation(m, {}) == -1.0).all() and feasible_mask(m, {}).all()


def test_space_constraint_keys_come_from_the_table(cat, tmp_path):
    text = Path(TINY).read_text()
    bad = tmp_path / "zero.toml"
    bad.write_text(text.replace("min_accuracy = 60.0", "max_latency_s = 0.0"))
    with pytest.raises(SpecError, match="max_latency_s"):
        load_space(cat, bad)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text(text.replace("min_accuracy = 60.0", "max_watts = 300.0"))
    with pytest.raises(SpecError, match="max_watts"):
        load_space(cat, unknown)


def test_a_new_constraint_is_one_table_row(cat, tiny, tmp_path, monkeypatch):
    """A made-up row (max cost per million tokens), added to the table alone: the space file
    accepts its key, Constraints its keyword, and sweep and optimize honour it."""
    row = Constraint("max_cost_usd_per_mtok", "cost_usd_per_mtok", "max", 0.0, math.inf,
                     "--max-cost", "USD", "maximum cost, $ per million tokens", lo_open=True)
    monkeypatch.setitem(CONSTRAINT_TABLE, row.name, row)
    free = sweep(cat, tiny, ["j_per_token"])
    cap = float(np.quantile(free.points["cost_usd_per_mtok"], 0.2))
    capped = tmp_path / "capped.toml"
    capped.write_text(Path(TINY).read_text().replace(
        "min_accuracy = 60.0", f"min_accuracy = 60.0\nmax_cost_usd_per_mtok = {cap!r}"))
    space = load_space(cat, capped)
    assert space.constraints == {"min_accuracy": 60.0, "max_cost_usd_per_mtok": cap}
    # checked at the central values (confidence 0.5), so that the cap, a quantile of the
    # central costs, leaves some designs whatever the intervals' widths
    for res in (sweep(cat, space, ["j_per_token"], confidence=0.5),
                sweep(cat, tiny, ["j_per_token"], Constraints(max_cost_usd_per_mtok=cap),
                      confidence=0.5)):
        assert 0 < res.n_feasible < free.n_feasible
        assert (res.points["cost_usd_per_mtok"] <= cap).all()
        assert res.best[0].metrics["cost_usd_per_mtok"] <= cap
    assert free.best[0].metrics["cost_usd_per_mtok"] > cap  # the row moved the optimum
    opt = optimize(cat, space, ["j_per_token"], trials=8, seed=0, confidence=0.5)
    assert opt.best and all(c.metrics["cost_usd_per_mtok"] <= cap for c in opt.best)


def test_a_new_objective_is_one_table_row(cat, tiny, monkeypatch):
    """A made-up objective on an existing metric (average power): sweep minimises it."""
    monkeypatch.setitem(OBJECTIVE_TABLE, "power", Objective("power", "power_w", "power, W"))
    monkeypatch.setitem(OBJECTIVES, "power", "power_w")  # derived from the table at import
    res = sweep(cat, tiny, ["power"])
    assert min(c.metrics["mean_value_diagnostic"]["power_w"] for c in res.pareto) == \
        pytest.approx(res.points["power_w"].min())
    assert res.best[0].metrics["power_w"] == min(c.metrics["power_w"] for c in res.pareto)


def test_study_parameters_are_the_spaces_multi_valued_knobs(cat, tiny):
    """tiny-space.toml by hand: drafts rtx-3090 or u280 (u280 at 200 or 300 MHz), one draft
    model, precision and serving per kind, one PRM placement, two targets; algorithm knobs
    accept 3 values, max_backtracks {0, 2}, threshold and window 2 each, both flags."""
    hw = {"draft_device": ("rtx-3090", "u280"), "fpga_clock_MHz": (200.0, 300.0),
          "target_model": ("qwen2.5-math-1.5b-instruct", "qwen2.5-math-7b-instruct")}
    dist = study_distributions(cat, tiny, algorithm=False)
    assert {k: d.choices for k, d in dist.items()} == hw
    alg = {"accept_threshold": (0.5, 0.7, 0.9), "max_backtracks": (0, 2),
           "backtrack_threshold": (0.5, 0.7), "backtrack_window": (2, 3),
           "step_ahead": (False, True), "shadow_sync": (False, True)}
    dist = study_distributions(cat, tiny, algorithm=True)
    assert {k: d.choices for k, d in dist.items()} == {**hw, **alg}
    knobs = {k.name: k for k in study_knobs(cat, tiny, algorithm=True)}
    assert knobs["fpga_clock_MHz"].when == ("draft_device", frozenset({"u280"}))
    assert knobs["draft_gpu_precision"].when == ("draft_device", frozenset({"rtx-3090"}))
    assert knobs["backtrack_window"].when == ("max_backtracks", frozenset({2}))


def test_knobs_fixed_by_the_space_are_not_parameters(cat, tmp_path):
    """Forward-only and one flag value: the backtrack threshold and window can never be drawn
    and the flag is fixed, so none of them is a parameter (though the space lists 2 values)."""
    f = tmp_path / "fixed.toml"
    f.write_text(Path(TINY).read_text().replace("max_backtracks = [0, 2]", "max_backtracks = [0]")
                 .replace("step_ahead = [false, true]", "step_ahead = [true]"))
    dist = study_distributions(cat, load_space(cat, f), algorithm=True)
    assert set(dist) == {"draft_device", "fpga_clock_MHz", "target_model", "accept_threshold",
                         "shadow_sync"}
    r = optimize(cat, load_space(cat, f), ["j_per_token", "latency"], trials=6, seed=0)
    assert r.n_trials == 6 and all(c.design.schedule.step_ahead for c in r.best)


def test_trials_sample_exactly_the_declared_distributions(cat, tiny):
    import optuna

    dist = study_distributions(cat, tiny, algorithm=True)
    study = optuna.create_study(directions=["minimize", "minimize"])
    knobs = study_knobs(cat, tiny, algorithm=True)
    for _ in range(12):
        t = study.ask()
        values = sample(t, knobs)
        study.tell(t, [0.0, 0.0])
        assert set(t.params) <= set(dist) and set(t.params) <= set(values)
        assert all(t.distributions[k] == dist[k] for k in t.params)
        assert ("backtrack_window" in t.params) == (values["max_backtracks"] > 0)
        assert ("fpga_clock_MHz" in t.params) == (values["draft_device"] == "u280")
