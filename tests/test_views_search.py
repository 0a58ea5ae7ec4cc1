"""The Design space and Studies pages' pure data (dse.views.search): labels with units for
every metric, formatting, the results table's columns, the front's zoom and band, chart picks,
applied constraints, CSV, a study's best-so-far per direction with the infeasible trials apart,
and importances in the objective's direction. Expected numbers are worked by hand in each
docstring."""

from __future__ import annotations

import csv
import io
import math
from types import SimpleNamespace

import pytest

from dse.io.design_files import DesignFile
from dse.model.schedules import PRESETS
from dse.search.objectives import METRIC_TABLE, OBJECTIVES
from dse.views import search as vs


def test_every_metric_and_objective_has_a_label_with_its_unit():
    for m, row in METRIC_TABLE.items():
        assert vs.LABELS[m].unit == row.unit and vs.LABELS[m].words, m
    for o, m in OBJECTIVES.items():
        lab = vs.label(o)
        assert lab is vs.LABELS[m] and lab.words and lab.unit, o
        assert vs.title(o).endswith(f"({METRIC_TABLE[m].unit})")
    assert vs.title("j_per_token") == "energy per token (J/token)"
    assert vs.title("latency") == "latency per problem (s)"


def test_formatting_keeps_four_significant_digits_and_the_unit():
    assert vs.fmt(1.6660000000000001, "s") == "1.666 s"
    assert vs.fmt(0.000123456, "J") == "0.0001235 J"
    assert vs.fmt(39495.0, "$") == "39,495 $"
    assert vs.fmt(None, "s") == "–" and vs.fmt(math.nan) == "–"
    assert vs.fmt(math.inf, "s") == "∞ s"
    assert vs.fmt_metric("accuracy", 71.71021223495873) == "71.71 %"
    assert vs.round_sig(2.0040272979611835) == 2.004
    assert vs.round_sig(39495.4) == 39495.0
    assert vs.round_sig(0.0) == 0.0


def _design(cat, system: str, schedule: str = "heteroreason") -> DesignFile:
    return DesignFile(cat.get("system", system), PRESETS[schedule], "math500")


def test_design_columns_name_hardware_models_precisions_serving_and_thresholds(cat):
    s = cat.get("system", "paper-config1-u280")
    cols = vs.design_columns(_design(cat, "paper-config1-u280"))
    assert cols["draft device"] == s.draft_device == "u280"
    assert cols["draft model"] == s.draft_model and cols["draft precision"] == s.draft_precision
    assert cols["draft serving / engine"] == (s.draft_engine or "flexllm")
    assert "MHz" in cols["FPGA build"]
    assert cols["target TP"] == s.target_tp and cols["PRM TP"] == (s.prm_tp or 1)
    assert cols["target serving"] == s.target_serving and cols["PRM serving"] == s.prm_serving
    assert cols["schedule"] == "heteroreason" and cols["accept threshold"] == s.accept_threshold
    assert cols["backtrack threshold"] == s.backtrack_threshold
    gpu = vs.design_columns(_design(cat, "paper-config1-3090", "rsd"))
    assert gpu["FPGA build"] == "" and gpu["draft device"] == "rtx-3090"
    # a forward-only schedule has no backtracking: its thresholds read as absent
    assert gpu["backtrack threshold"] is None and gpu["max backtracks"] == 0


def test_result_rows_put_the_objectives_first_with_units_and_intervals(cat):
    c = SimpleNamespace(design=_design(cat, "paper-config1-u280"),
                        metrics={"latency_s_per_problem": 2.0040272979611835,
                                 "j_per_token": 1.505295273907295, "accuracy": 71.7102,
                                 "mean_value_diagnostic": {"latency_s_per_problem": 2.4}},
                        intervals={"j_per_token": [1.330161958323872, 1.8421971478341403]})
    (row,) = vs.result_rows([c], ["j_per_token", "latency"])
    keys = list(row)
    assert keys[:3] == ["#", "energy per token (J/token)", "latency per problem (s)"]
    assert row["latency per problem (s)"] == 2.004 and row["energy per token (J/token)"] == 1.505
    assert row["energy per token 90% low (J/token)"] == 1.33
    assert row["energy per token 90% high (J/token)"] == 1.842
    assert row["goodput (tokens/s)"] is None  # not computed for this candidate
    assert row["draft device"] == "u280"
    (raw,) = vs.result_rows([c], ["j_per_token"], digits=None)
    assert raw["latency per problem (s)"] == 2.0040272979611835
    text = vs.csv_text([raw])
    back = next(csv.DictReader(io.StringIO(text)))
    assert float(back["latency per problem (s)"]) == 2.0040272979611835
    assert back["goodput (tokens/s)"] == ""


def test_points_csv_heads_each_metric_with_its_unit():
    text = vs.points_csv({"latency_s_per_problem": [1.5, 2.5], "j_per_token": [3.0, 4.0]})
    assert text.splitlines() == ["latency per problem (s),energy per token (J/token)",
                                 "1.5,3.0", "2.5,4.0"]
    assert vs.points_csv({}) == "\n"


def test_zoom_range_covers_the_front_and_its_intervals_with_a_margin():
    """Values 2..4 and an interval end at 5: span 3, margin 10% = 0.3 each side."""
    assert vs.zoom_range([2.0, 3.0, 4.0], highs=[5.0], lows=[2.0]) == pytest.approx([1.7, 5.3])
    assert vs.zoom_range([10.0]) == pytest.approx([9.0, 11.0])  # one point: 10% of itself
    assert vs.zoom_range([math.inf, math.nan]) is None


def test_interval_boxes_are_each_designs_90_percent_box():
    xs, ys = [2.0, 1.0], [10.0, 20.0]
    x_iv, y_iv = [[1.8, 2.4], [0.9, 1.2]], [[9.0, 12.0], [18.0, 25.0]]
    bx, by = vs.interval_boxes(xs, ys, x_iv=x_iv, y_iv=y_iv)
    assert bx == [1.8, 2.4, 2.4, 1.8, 1.8, None, 0.9, 1.2, 1.2, 0.9, 0.9, None]
    assert by == [9.0, 9.0, 12.0, 12.0, 9.0, None, 18.0, 18.0, 25.0, 25.0, 18.0, None]
    bx, by = vs.interval_boxes(xs, ys, x_iv=None, y_iv=y_iv)  # x keeps its values: a bar
    assert bx[:5] == [2.0, 2.0, 2.0, 2.0, 2.0]
    assert vs.interval_boxes(xs, ys, x_iv=None, y_iv=None) is None
    assert vs.interval_boxes([1.0], [2.0], x_iv=[[0.5, 1.5]], y_iv=None) == (
        [0.5, 1.5, 1.5, 0.5, 0.5, None], [2.0, 2.0, 2.0, 2.0, 2.0, None])


def test_chosen_index_maps_a_click_by_customdata_and_keeps_the_highlighted_pick():
    cloud = {"curve_number": 0, "point_index": 7}  # no customdata: not a candidate
    a = {"curve_number": 2, "point_index": 3, "customdata": 3}
    b = {"curve_number": 2, "point_index": 4, "customdata": [4]}
    assert vs.chosen_index([cloud], 0) is None
    assert vs.chosen_index([cloud, b], 0) == 4
    assert vs.chosen_index([a, b], 4) == 4  # overlapping: the one already picked
    assert vs.chosen_index([a, b], 0) == 3  # else the first
    assert vs.chosen_index([], 1) is None


def test_constraint_rows_say_where_from_and_which_interval_end():
    rows = vs.constraint_rows({"min_accuracy": 67.0, "max_latency_s": 5.0},
                              {"max_latency_s": 5.0, "min_accuracy": None}, 0.9)
    assert rows == [
        {"constraint": "accuracy ≥ 67 %", "from": "space default",
         "checked at": "low end of its 90% interval"},
        {"constraint": "latency per problem ≤ 5 s", "from": "typed",
         "checked at": "high end of its 90% interval"}]
    (c,) = vs.constraint_rows({"max_power_w": 300.0}, {}, 0.5)
    assert c["checked at"] == "central value" and c["constraint"] == "average power ≤ 300 W"


def _trial(number: int, value: float, cons: list[float] | None = None, state: str = "COMPLETE"):
    return SimpleNamespace(number=number, values=[value, -value],
                           state=SimpleNamespace(name=state),
                           system_attrs={} if cons is None else {"constraints": cons},
                           user_attrs={})


def test_history_best_so_far_per_direction_with_infeasible_apart():
    """Trials 0..5 with values 5, 3, 1 (infeasible), 4, 2, inf (infeasible), and a running
    one. Feasible: 5, 3, 4, 2. Minimised: best 5, 3, 3, 2. Maximised: 5, 5, 5, 5. Infeasible
    ones set neither the best nor the axis (range 2..5 widened by 5% of 3 = 0.15)."""
    ts = [_trial(0, 5.0, [0.0]), _trial(1, 3.0, [-0.2]), _trial(2, 1.0, [0.4]),
          _trial(3, 4.0, [0.0]), _trial(4, 2.0), _trial(5, math.inf, [1.0]),
          _trial(6, 0.5, [0.0], state="RUNNING")]
    pts = vs.trial_points(reversed(ts), 0)
    assert [p.number for p in pts] == [0, 1, 2, 3, 4, 5]
    lo = vs.history(pts, +1)
    assert lo.numbers == [0, 1, 3, 4] and lo.values == [5.0, 3.0, 4.0, 2.0]
    assert lo.best == [5.0, 3.0, 3.0, 2.0]
    assert lo.infeasible_numbers == [2] and lo.infeasible_values == [1.0]
    assert lo.n_infeasible == 2
    assert lo.y_range == pytest.approx([1.85, 5.15])
    hi = vs.history(pts, -1)
    assert hi.best == [5.0, 5.0, 5.0, 5.0]
    # objective 1 holds the negated values: maximised, its best is the running maximum
    neg = vs.history(vs.trial_points(ts, 1), -1)
    assert neg.best == [-5.0, -3.0, -3.0, -2.0]


def test_trial_feasible_falls_back_to_the_violation_attribute():
    t = SimpleNamespace(system_attrs={}, user_attrs={"violation": 0.3})
    assert not vs.trial_feasible(t)
    t = SimpleNamespace(system_attrs={"constraints": [0.0, -1.0]}, user_attrs={})
    assert vs.trial_feasible(t)


def _importance_study(direction: str):
    """f = 10 x^8 - 10 (1 - y)^8 over x, y uniform in [0, 1]: the highest values need x near 1,
    the lowest need y near 0. So for a maximised f, x decides the best 10%; were the study
    read as minimised (Optuna's PED-ANOVA with a target assumes lower is better), y would."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=[direction, "minimize"],
                                sampler=optuna.samplers.RandomSampler(seed=1))

    def f(t):
        x, y = t.suggest_float("x", 0, 1), t.suggest_float("y", 0, 1)
        t.set_user_attr("violation", 0.0)
        return 10 * x ** 8 - 10 * (1 - y) ** 8, 0.0

    study.optimize(f, n_trials=300)
    return study


def test_importances_follow_the_objective_direction():
    up = vs.param_importances(_importance_study("maximize"), 0)
    assert up["x"] > 0.8 > up["y"]
    down = vs.param_importances(_importance_study("minimize"), 0)
    assert down["y"] > 0.8 > down["x"]
    assert sum(up.values()) == pytest.approx(1.0)


def test_importances_skip_infeasible_trials():
    """Trials whose stored constraint is > 0 are left out: with 1 feasible trial left there
    is nothing to explain."""
    import optuna

    study = optuna.create_study(directions=["minimize"])
    for k in range(5):
        study.add_trial(optuna.trial.create_trial(
            params={"x": k / 4}, distributions={"x": optuna.distributions.FloatDistribution(0, 1)},
            value=float(k), system_attrs={"constraints": [0.0 if k == 0 else 1.0]}))
    with pytest.raises(ValueError, match="1 feasible"):
        vs.param_importances(study, 0)


def test_study_rows_and_trial_choice_format_values_with_units():
    (row,) = vs.study_rows([{"name": "s", "n_trials": 12, "n_complete": 11,
                             "objectives": ["j_per_token", "latency"],
                             "directions": ["minimize", "minimize"],
                             "best_values": [3.2987654321, 3.46312345], "n_pareto": 2,
                             "space": "sp", "created": "2026-01-01T00:00:00"}])
    assert row["best (feasible)"] == "3.299 J/token, 3.463 s"
    assert row["objectives"] == "energy per token (minimize), latency per problem (minimize)"
    assert vs.trial_choice(12, ["goodput"], [195.70586]) == "trial 12: 195.7 tokens/s"


def test_front_ties_name_the_neighbours_a_front_cannot_tell_apart():
    from dse.search.families import FrontTie, ties_sentence

    ties = [FrontTie(1, 2, {"j_per_token": [-0.1, 0.2]}),  # holds zero: tied
            FrontTie(2, 3, {"j_per_token": [0.05, 0.3]}),  # excludes zero: told apart
            FrontTie(3, 4, {"j_per_token": [-0.2, 0.1], "accuracy": [0.5, 2.0]})]
    assert [t.tied for t in ties] == [True, False, False]  # every objective must hold zero
    assert ties_sentence(ties).endswith(": #1 and #2.")
    assert ties_sentence(ties, first=0).endswith(": #0 and #1.")
    assert ties_sentence(ties[1:]) == ""
