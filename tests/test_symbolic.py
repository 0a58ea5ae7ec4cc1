"""The sympy mean-value model: matches the hand-derived step rules, tracks the accurate
closed form, vectorised equals scalar, sensitivities have the right signs."""

from __future__ import annotations

import numpy as np
import pytest

from dse.engine.evaluate import evaluate
from dse.io.design_files import load_system
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.model.symbolic import expected_counts, mean_value, sensitivities, step_expressions


def test_sequential_step_by_hand():
    """rsd, all accepted (p_a = 1): t_acc = D + W; with p_a = 0 a reject costs
    D + W + Lu + Tf + Lt, plus the draft's late start (Sy - 0 when the re-prefill finishes after
    the commit)."""
    e = step_expressions(False, False, False)
    s = e.symbols
    vals = {s["D"]: 1, s["W"]: 2, s["Tf"]: 10, s["Lu"]: 0.5, s["Lt"]: 0.25, s["Sy"]: 3,
            s["a1"]: 0.1, s["P2"]: 4}
    assert e.t_acc.subs({**vals, s["pa"]: 1}) == 3
    # p_a = 0: the previous attempt was a reject whose re-prefill ran 3 s past the commit
    assert e.t_rej.subs({**vals, s["pa"]: 0}) == pytest.approx(1 + 3 + 2 + 0.5 + 10 + 0.25)


def test_step_ahead_accept_is_max():
    e = step_expressions(True, True, True)
    s = e.symbols
    for dv, wv in ((1.0, 2.0), (3.0, 0.5), (2.0, 2.0)):
        got = e.t_acc.subs({s["pa"]: 1, s["D"]: dv, s["W"]: wv})
        assert float(got) == pytest.approx(max(dv, wv))


def test_counts_without_backtracking():
    n, b, pb = expected_counts(np.array([7.0]), np.array([0.7]), np.array([0.3]), 3, 5, False)
    assert n[0] == 7.0 and b[0] == 0.0 and pb[0] == 0.0


def test_counts_budget_caps_backtracks():
    n1, b1, _ = expected_counts(np.array([30.0]), np.array([0.5]), np.array([0.9]), 3, 1, True)
    n5, b5, _ = expected_counts(np.array([30.0]), np.array([0.5]), np.array([0.9]), 3, 5, True)
    assert 0 < b1[0] <= 1.0 < b5[0] <= 5.0
    assert n5[0] > n1[0] > 30.0


@pytest.mark.parametrize("system", ["paper-config1-3090", "paper-config1-u280",
                                    "paper-config2-v80", "paper-config1-jetson"])
def test_mean_value_tracks_accurate_closed_form(cat, system):
    """Screening accuracy: within 20% of the accurate closed form on latency and J/token (it
    ignores the spread of step lengths and contexts inside max(); measured worst case ~15%)."""
    s = load_system(cat, system)
    for wname in cat.names("workload"):
        w = cat.get("workload", wname)
        for name in PRESETS:
            d = build_design(cat, s, PRESETS[name])
            a = evaluate(d, w)
            b = mean_value(d, w)
            assert b["latency_s_per_problem"] == pytest.approx(a.latency_s_per_problem, rel=0.2)
            assert b["j_per_token"] == pytest.approx(a.j_per_token, rel=0.2)


def test_sensitivity_signs(cat):
    d = build_design(cat, load_system(cat, "paper-config1-u280"), PRESETS["heteroreason"])
    sens = sensitivities(d, cat.get("workload", "math500"))
    lat = sens["latency"]
    assert lat["D"] > 0 and lat["Tf"] > 0  # slower draft or target: slower problem
    assert lat["pa"] < 0  # accepting more steps: faster
    assert sens["energy_dyn"]["wt"] > 0


def test_the_generated_module_is_what_the_rules_give_now():
    """dse/model/mean_value_forms.py is sympy's lambdify of today's step_expressions: a change to
    the schedule rules without `python scripts/generate_mean_value_forms.py` fails here."""
    from pathlib import Path

    from dse.model.symbolic import generated_source

    path = Path(__file__).resolve().parent.parent / "dse" / "model" / "mean_value_forms.py"
    assert path.read_text(encoding="utf-8") == generated_source(), (
        "dse/model/mean_value_forms.py is stale: run python scripts/generate_mean_value_forms.py")


@pytest.mark.parametrize("flags", [(sa, sh, bt) for sa in (False, True) for sh in (False, True)
                                   for bt in (False, True)])
def test_linear_forms_rebuild_the_metrics(flags):
    """c0 + cN N + cB B equals the metric itself at random components, probabilities and
    counts, and the metric equals sympy's expression substituted (the generated functions are
    the expressions, not an approximation)."""
    from dse.model.symbolic import COMPONENTS, COUNTS, PROBS, _lambdified, linear_forms

    rng = np.random.default_rng(sum(f << i for i, f in enumerate(flags)))
    comp = {k: rng.uniform(0.01, 3.0, 5) for k in COMPONENTS}
    pa, pb = rng.uniform(0.05, 0.95, 5), rng.uniform(0.0, 1.0, 5)
    n, b = rng.uniform(5.0, 40.0, 5), rng.uniform(0.0, 3.0, 5)
    full = _lambdified(*flags)
    forms = linear_forms(*flags)
    e = step_expressions(*flags)
    for metric in ("latency", "energy_dyn"):
        whole = full[metric](*[comp[k] for k in COMPONENTS], pa, pb, n, b)
        lf = forms[metric]
        args = [comp[k] for k in COMPONENTS] + [pa]
        rebuilt = (np.asarray(lf.c0(*args)) + np.asarray(lf.cN(*args)) * n
                   + np.asarray(lf.cB(*args)) * b)
        np.testing.assert_allclose(rebuilt, whole, rtol=1e-12)
        expr = getattr(e, metric)
        subs = {e.symbols[k]: comp[k][0] for k in COMPONENTS} | {
            e.symbols["pa"]: pa[0], e.symbols["pb"]: pb[0], e.symbols["N"]: n[0],
            e.symbols["B"]: b[0]}
        assert float(np.asarray(whole)[0]) == pytest.approx(float(expr.subs(subs)), rel=1e-12)
    assert set(PROBS) == {"pa", "pb"} and set(COUNTS) == {"N", "B"}


def test_the_search_path_does_not_import_sympy():
    import subprocess
    import sys

    code = ("import sys\n"
            "import dse.search.grid\n"
            "from dse.model.symbolic import FLAG_SETS, _lambdified, linear_forms\n"
            "[(linear_forms(*f), _lambdified(*f)) for f in FLAG_SETS]\n"
            "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
