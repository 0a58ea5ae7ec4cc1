"""The robust search (--confidence) and the interval keys of every command's JSON."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import numpy as np
import pytest

from dse.cli import main
from dse.search import Constraints, load_space, sweep
from dse.search.grid import Evaluator
from dse.search.space import hardware
from dse.uncertainty import evidence as ev


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def space(cat):
    return load_space(cat)


def test_pessimistic_checks_are_stricter(cat, space):
    """At confidence 0.9 a min-accuracy constraint is checked at the accuracy's low end: the
    feasible set shrinks, every feasible design's central accuracy exceeds the bound, and at
    0.5 the checked values are the central ones."""
    hw = next(h for h in hardware(cat, space) if h.draft.device == "u280")
    central = Evaluator(cat, space, confidence=0.5, checked={"accuracy": "min"}).evaluate(hw)
    robust = Evaluator(cat, space, confidence=0.9, checked={"accuracy": "min"}).evaluate(hw)
    assert not central.checked
    assert np.all(robust.checked["accuracy"] <= robust.metrics["accuracy"] + 1e-12)
    assert np.any(robust.checked["accuracy"] < robust.metrics["accuracy"] - 0.1)
    lat = Evaluator(cat, space, confidence=0.9,
                    checked={"latency_s_per_problem": "max"}).evaluate(hw)
    assert np.all(lat.checked["latency_s_per_problem"]
                  >= lat.metrics["latency_s_per_problem"] - 1e-12)


@pytest.mark.slow  # about 10 s: the default space swept twice
def test_sweep_confidence(cat, space):
    c = Constraints(min_accuracy=67.0)
    loose = sweep(cat, space, ["j_per_token"], c, confidence=0.5)
    tight = sweep(cat, space, ["j_per_token"], c, confidence=0.9)
    assert tight.confidence == 0.9 and loose.confidence == 0.5
    assert tight.n_feasible < loose.n_feasible
    best = tight.best[0]
    lo, hi = best.intervals["accuracy"]
    assert lo >= 67.0 - 1e-6 and lo <= best.metrics["accuracy"] <= hi
    assert best.metrics["j_per_token"] >= loose.best[0].metrics["j_per_token"] - 1e-12
    # the roles the winner runs (the target alone wins this space: see commands/search.md)
    roles = {"target"} if best.design.system.workflow_name == "target-only" else {
        "draft", "prm", "target"}
    assert set(best.provenance) >= roles | {"accuracy"}
    # one number per design: the accurate closed form's, the mean-value one a diagnostic
    assert "closed_form" not in best.metrics and "mean_value_diagnostic" in best.metrics


@pytest.mark.parametrize("bad", ["1.0", "0.3", "abc", "nan"])
def test_confidence_flag_bad_input(capsys, bad):
    """argparse's usage lines, then one error line naming the flag and the valid range."""
    for cmd in ("sweep", "optimize"):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--confidence", bad])
        assert e.value.code == 2
        err = capsys.readouterr().err
        last = err.strip().splitlines()[-1]
        assert "--confidence" in last and "[0.5, 1)" in last and "Traceback" not in err


def test_api_confidence_bad_input():
    import dse

    with pytest.raises(dse.DseError, match=r"confidence: must be a number in \[0.5, 1\)"):
        dse.sweep(confidence=1.5)


def test_evaluate_and_roofline_json_keys(capsys):
    code, out, _ = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                       "gsm8k", "--schedule", "heteroreason", "--json")
    assert code == 0
    rep = json.loads(out)["schedules"]["heteroreason"]
    for m in ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token",
              "energy_j_per_problem", "accuracy"):
        lo, hi = rep["intervals"][m]
        assert lo <= rep[m] <= hi, m
    assert {p["status"] for p in rep["provenance"].values()} <= set(ev.STATUSES)
    code, out, _ = run(capsys, "roofline", "--model", "qwen2.5-0.5b-instruct", "--device",
                       "rtx-3090", "--json")
    r = json.loads(out)
    for k, v in (("decode_s_per_token_interval", "decode_s_per_token"),
                 ("prefill_s_interval", "prefill_s"), ("power_w_interval", "power_w")):
        assert r[k][0] <= r[v] <= r[k][1], k
    code, out, _ = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                       "gsm8k", "--schedule", "heteroreason")
    assert "[" in out and "90% intervals" in out and "provenance:" in out


def test_declared_v80_range_is_what_the_script_computes(cat):
    """The v80-draft range's high end is the median factor scripts/declared_ranges.py finds."""
    from dse.paper.reproduce import reported
    from dse.validation.declared import v80_implied_factors

    (d,) = [d for d in ev.settings().declared if d.name == "v80-draft"]
    med = statistics.median(v80_implied_factors(cat, reported()).values())
    assert d.low == 1.0 and d.high == pytest.approx(med, abs=0.005)


def test_fpga_cv_file_is_current():
    r = subprocess.run([sys.executable, "scripts/fit_fpga_engines.py", "--check"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:]
