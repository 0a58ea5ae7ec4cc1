"""The two forms of the schedule timing agree: for every flag combination (2^3), identical
deterministic inputs fed to the numpy composition (dse.model.schedules.compose, used by the closed
form and the simulator) and to the sympy mean-value form (dse.model.symbolic.step_expressions) give
the same per-attempt times (accept, reject, backtrack) and busy times.

Compared: the commit time of each outcome, each device's busy time, the speculation a reject
discards and the draft's head start handed to the next attempt. The inputs are a mean
step: the next step costs what this one does (d_next = D), the rewrite and the alternative have
the same length and links, a next step exists (spec_ok). The numpy composition is run at the
mean-value form's head start. The differences the two forms are built with
(dse.model.schedules.rules) are added back explicitly and nowhere else:
- the mean-value form books each step's decode in full to its attempt: numpy's head start
  used (max(ahead, 0)) and speculation run (`speculated_s`) are taken out of its draft busy;
- it ingests a rewrite a backtrack discards in full: numpy's `sync_cut_s` is added back;
- its rewrite score P2 includes the verdict link: numpy's PRM busy gets lkv on rejects;
- its prefetch assumes an attempt that follows an accept: numpy's accept busy is run at that
  head start (min(D, W) with step-ahead).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from dse.errors import UnknownNameError
from dse.model.schedules import (
    ACCEPT,
    BACKTRACK,
    DEVICE_ROLES,
    FLAGS,
    PRESETS,
    REFINE,
    Role,
    Schedule,
    ScheduleRegistry,
    StepCosts,
    all_schedules,
    compose,
    schedule,
    schedule_for,
)
from dse.model.symbolic import COMPONENTS, PROBS, step_expressions

N_DRAWS = 400


def _inputs(seed: int) -> dict[str, np.ndarray]:
    """Operation costs spread over several decades, so that every max / min of the rules takes
    each of its branches in some draws (seconds; tokens for nt)."""
    rng = np.random.default_rng(seed)

    def u(lo: float, hi: float) -> np.ndarray:
        return np.exp(rng.uniform(np.log(lo), np.log(hi), N_DRAWS))

    return {"D": u(0.05, 5.0), "lk1": u(1e-5, 1e-2), "p1": u(0.02, 3.0), "lkv": u(1e-6, 1e-3),
            "t_pre": u(0.01, 2.0), "t_dec": u(0.05, 8.0), "Lu": u(1e-5, 0.5), "Lt": u(1e-5, 0.5),
            "Sy": u(0.01, 6.0), "nt": np.round(u(2.0, 300.0)), "p2": u(0.02, 3.0),
            "Ta": u(0.05, 8.0)}


def _step_costs(v: dict[str, np.ndarray], backtracking: bool) -> StepCosts:
    one = np.ones(N_DRAWS)
    p2 = v["p2"] if backtracking else np.zeros(N_DRAWS)
    return StepCosts(
        z=one, nt=v["nt"], n_alt=v["nt"], d_step=v["D"], lk1=v["lk1"], lkv=v["lkv"],  # type: ignore[arg-type]
        p1=v["p1"], d_next=v["D"], lk_u=v["Lu"], t_pre=v["t_pre"], t_dec=v["t_dec"],
        lk_t=v["Lt"], sync_work=v["Sy"], p2=p2, d_next_ref=v["D"], t_alt=v["Ta"], lk_a=v["Lt"],
        sync2_work=v["Sy"], d_next_alt=v["D"], draft_w=one, prm_w_step=one, prm_w_rewrite=one,
        target_w=one)


def _components(v: dict[str, np.ndarray], backtracking: bool, pa: np.ndarray
                ) -> dict[str, np.ndarray]:
    """The mean-value components of the same inputs (as dse.model.symbolic.components_grid)."""
    p2 = v["p2"] if backtracking else np.zeros(N_DRAWS)
    zero = np.zeros(N_DRAWS)
    return {"D": v["D"], "W": v["lk1"] + v["p1"] + v["lkv"], "Tf": v["t_pre"] + v["t_dec"],
            "Lu": v["Lu"], "Lt": v["Lt"], "Sy": v["Sy"], "a1": v["Sy"] / v["nt"],
            "P2": p2 + v["lkv"], "Ta": v["Ta"], "init": zero, "wd": zero, "wp": zero,
            "wt": zero, "Pp": v["p1"], "pa": pa, "pb": zero}


def _numeric(expr: sp.Expr, symbols: dict[str, sp.Symbol], comp: dict[str, np.ndarray]
             ) -> np.ndarray:
    names = (*COMPONENTS, *PROBS)
    f = sp.lambdify([symbols[n] for n in names], expr,
                    [{"Max": np.maximum, "Min": np.minimum}, "numpy"])
    return np.broadcast_to(np.asarray(f(*(comp[n] for n in names)), dtype=float), (N_DRAWS,))


FLAG_COMBOS = [s.flags for s in all_schedules()]  # (backtracking, step_ahead, shadow_sync)


@pytest.mark.parametrize(("backtracking", "step_ahead", "shadow_sync"), FLAG_COMBOS)
def test_numpy_composition_equals_mean_value_form(backtracking, step_ahead, shadow_sync):
    s = schedule_for(backtracking=backtracking, step_ahead=step_ahead, shadow_sync=shadow_sync)
    e = step_expressions(step_ahead, shadow_sync, backtracking)
    v = _inputs(seed=sum(b << i for i, b in enumerate(s.flags)))
    pa = np.random.default_rng(7).uniform(0.0, 1.0, N_DRAWS)
    k = _step_costs(v, backtracking)
    comp = _components(v, backtracking, pa)

    def num(expr: sp.Expr) -> np.ndarray:
        return _numeric(expr, e.symbols, comp)

    ahead = num(e.ahead)
    t = {o: compose(k, s, outcome=o, spec_ok=True, ahead=ahead).time_s
         for o in (ACCEPT, REFINE, BACKTRACK)}
    np.testing.assert_allclose(t[ACCEPT], num(e.t_acc), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(t[REFINE], num(e.t_rej), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(t[BACKTRACK], num(e.t_rej + e.t_bk), rtol=1e-12, atol=1e-15)

    spec = np.minimum(v["D"], comp["W"]) if step_ahead else np.zeros(N_DRAWS)
    for o, want in ((ACCEPT, e.busy_acc), (REFINE, e.busy_rej),
                    (BACKTRACK, {r: e.busy_rej[r] + e.busy_bk[r] for r in DEVICE_ROLES})):
        at = compose(k, s, outcome=o, spec_ok=True, ahead=spec)
        rejected = o != ACCEPT
        draft = (at.draft_busy_s + np.maximum(spec, 0.0) - at.speculated_s + at.sync_cut_s)
        prm = at.prm_busy_s + (v["lkv"] if rejected and backtracking else 0.0)
        got = {Role.DRAFT: draft, Role.VERIFIER: prm, Role.TARGET: at.target_busy_s}
        for r in DEVICE_ROLES:
            np.testing.assert_allclose(np.broadcast_to(got[r], (N_DRAWS,)), num(want[r]),
                                       rtol=1e-12, atol=1e-15, err_msg=f"{s.name} {o} {r}")
    refine = compose(k, s, outcome=REFINE, spec_ok=True, ahead=ahead)
    np.testing.assert_allclose(np.broadcast_to(refine.wasted_s, (N_DRAWS,)), num(e.wasted_rej),
                               rtol=1e-12, atol=1e-15)

    # the head start handed to the next attempt: after an accept (the mean-value form's at
    # p_a = 1) and after a reject that started on time (its at p_a = 0)
    for o, p in ((ACCEPT, 1.0), (REFINE, 0.0)):
        nxt = compose(k, s, outcome=o, spec_ok=True, ahead=0.0).next_ahead_s
        want = _numeric(e.ahead, e.symbols, {**comp, "pa": np.full(N_DRAWS, p)})
        np.testing.assert_allclose(np.broadcast_to(nxt, (N_DRAWS,)), want, rtol=1e-12,
                                   atol=1e-15, err_msg=f"{s.name} {o}")


def test_inputs_reach_both_branches_of_the_head_start():
    """The draws are not all on one side of a kink: with step-ahead the mean head start after
    a reject is early in some draws and late in others."""
    e = step_expressions(True, False, True)
    v = _inputs(seed=3)
    comp = _components(v, True, np.zeros(N_DRAWS))  # p_a = 0: the head start after a reject
    ahead = _numeric(e.ahead, e.symbols, comp)
    assert (ahead > 0).any() and (ahead < 0).any()


def test_registry_is_every_flag_combination():
    scheds = all_schedules()
    assert len({s.flags for s in scheds}) == 8
    assert [s.name for s in scheds if s.name in PRESETS] == ["rsd", "brsd", "brsd_stepahead",
                                                             "heteroreason"]
    assert schedule_for(backtracking=False, step_ahead=True, shadow_sync=False).name == \
        "custom(step_ahead)"
    assert schedule("rsd").with_flags(backtracking=True) is PRESETS["brsd"]
    assert PRESETS["heteroreason"].with_flags(backtracking=False).name == \
        "custom(step_ahead,shadow_sync)"
    assert tuple(FLAGS) == ("backtracking", "step_ahead", "shadow_sync")


def test_registry_fails_loudly():
    with pytest.raises(UnknownNameError, match="valid: brsd, brsd_stepahead, heteroreason, rsd"):
        schedule("nope")
    with pytest.raises(UnknownNameError):
        PRESETS["nope"]
    with pytest.raises(UnknownNameError, match="schedule flag"):
        PRESETS["rsd"].with_flags(prefetch=True)
    reg = ScheduleRegistry()
    reg.register(Schedule("a", False, False, False))
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Schedule("a", True, False, False))
    with pytest.raises(ValueError, match="flags of 'a'"):
        reg.register(Schedule("b", False, False, False))
    with pytest.raises(ValueError, match="reserved"):
        reg.register(Schedule("custom(x)", True, True, True))


def test_role_values_are_the_report_keys():
    assert [r.value for r in Role] == ["draft", "prm", "target", "link"]
    assert Role.VERIFIER == "prm" and {Role.VERIFIER: 1}["prm"] == 1
    assert f"{Role.VERIFIER}_model" == "prm_model"
