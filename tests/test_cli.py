"""The command line: smoke over every board x model pair, JSON keys, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dse.cli import main

ROOFLINE_KEYS = {"model", "device", "precision", "serving", "decode_s_per_token", "prefill_s",
                 "bound", "weights_bytes", "kv_bytes_per_token", "fits", "power_w"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_roofline_every_board_model_pair(cat, capsys):
    """Every board x model pair through dse.io.roofline (what `dse roofline` prints), and the
    command itself on every board (each call reloads the catalog, so one model per board: the
    JSON is the library's dict)."""
    from dse.io.roofline import roofline

    devices = cat.names("gpu") + cat.names("fpga")
    models = cat.names("model")
    for i, d in enumerate(devices):
        for m in models:
            r = roofline(cat, model=m, device=d)
            assert ROOFLINE_KEYS <= set(r), (d, m)
            assert r["decode_s_per_token"] > 0 and r["prefill_s"] > 0, (d, m)
            assert r["bound"] in ("memory", "compute", "overhead"), (d, m)
            assert r["precision"] == ("w8a8" if d in cat.names("fpga") else "bf16"), (d, m)
        m = models[i % len(models)]
        code, out, err = run(capsys, "roofline", "--model", m, "--device", d, "--json")
        want = roofline(cat, model=m, device=d)
        assert code == (0 if want["fits"] else 4), (d, m, err)  # as dse evaluate exits
        assert json.loads(out) == json.loads(json.dumps(want))


def test_roofline_text_and_defaults(capsys):
    code, out, _ = run(capsys, "roofline", "--model", "qwen2.5-0.5b-instruct", "--device",
                       "u280", "--clock-mhz", "200")
    assert code == 0
    assert "ms/token" in out and "fits" in out


def test_fpga_clock_changes_speed(capsys):
    def speed(mhz):
        _, out, _ = run(capsys, "roofline", "--model", "qwen2.5-0.5b-instruct", "--device",
                        "u280", "--clock-mhz", str(mhz), "--json")
        return json.loads(out)["decode_s_per_token"]

    assert speed(200) > speed(300)


def test_does_not_fit_is_reported(capsys):
    """Printed (the JSON, or the table with its infeasible line), then one error line and
    exit 4, as dse evaluate exits for a design that cannot run."""
    code, out, err = run(capsys, "roofline", "--model", "qwen2.5-math-72b-instruct", "--device",
                         "u280", "--json")
    assert code == 4
    r = json.loads(out)
    assert r["fits"] is False and any("do not fit" in w for w in r["infeasible"])
    assert err.startswith("dse roofline: error: qwen2.5-math-72b-instruct on u280 is "
                          "infeasible: ") and err.count("\n") == 1


@pytest.mark.parametrize("what", ["boards", "models", "serving", "scenarios"])
def test_catalog(capsys, what):
    code, out, _ = run(capsys, "catalog", what, "--json")
    assert code == 0
    json.loads(out)


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u281"], 2,
         "unknown device 'u281'"),
        (["roofline", "--model", "gpt-5", "--device", "u280"], 2, "unknown model 'gpt-5'"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090",
          "--precision", "fp4"], 2, "unknown precision"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090",
          "--clock-mhz", "300"], 2, "--clock-mhz: applies to FPGA"),
        (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "rtx-3090",
          "--serving", "tgi"], 2, "unknown gpu-serving 'tgi'"),
    ],
)
def test_errors_one_line(capsys, argv, code, words):
    got, _out, err = run(capsys, *argv)
    assert got == code
    assert words in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_usage_errors_exit_2(capsys):
    for argv in (["roofline", "--model", "x"], ["roofline", "--model", "x", "--device", "y",
                                                "--context", "-5"], ["frobnicate"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    capsys.readouterr()


def test_malformed_user_catalog(tmp_path, capsys):
    (tmp_path / "bad.toml").write_text('schema_version = 1\nkind = "link"\nname = "bad"\n'
                                       'generation = 4\nlanes = -16\n')
    code, _, err = run(capsys, "catalog", "boards", "--catalog", str(tmp_path))
    assert code == 3
    assert "bad.toml: lanes: must be > 0" in err


def test_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "dse.cli", "roofline", "--model",
                        "qwen2.5-7b-instruct", "--device", "rtx-3090", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fits"] is True


REPORT_KEYS = {"latency_s_per_problem", "goodput_tokens_per_s", "j_per_token", "accuracy",
               "p_accept", "step_latency_share", "devices", "communication_share",
               "speculation_stall_ratio", "wasted_tokens_per_problem", "wasted_energy_share",
               "target_calls_per_problem", "backtracks_per_problem"}


def test_evaluate_every_system_and_scenario(cat, capsys):
    """Every system on every scenario through the CLI, under one schedule each (each report
    computes its intervals: about 20 closed-form evaluations), and all four schedules for one
    (their numbers are the golden reports')."""
    for s in cat.names("system"):
        for w in cat.names("workload"):
            code, out, err = run(capsys, "evaluate", "--system", s, "--scenario", w,
                                 "--schedule", "heteroreason", "--json")
            assert code == 0, err
            rep = json.loads(out)["schedules"]["heteroreason"]
            assert REPORT_KEYS <= set(rep)
            assert rep["intervals"]["latency_s_per_problem"][0] <= rep[
                "latency_s_per_problem"] <= rep["intervals"]["latency_s_per_problem"][1]
    code, out, err = run(capsys, "evaluate", "--system", "paper-config2-v80", "--scenario",
                         "gsm8k", "--json")
    assert code == 0, err
    r = json.loads(out)
    # the four schedules and, framing them, the target alone (the last one's margin against it)
    assert set(r["schedules"]) == {"rsd", "brsd", "brsd_stepahead", "heteroreason",
                                   "target alone"}
    for rep in r["schedules"].values():
        assert REPORT_KEYS <= set(rep)
    assert r["schedules"]["brsd"]["speedup_vs_brsd"] == 1.0
    assert r["schedules"]["target alone"]["schedule"] == "target-only"
    vs = r["vs_target_alone"]
    assert vs["schedule"] == "heteroreason" and set(vs["margin"]) == {
        "latency_s_per_problem", "j_per_token", "accuracy"}
    for m, (lo, hi) in vs["margin_interval"].items():
        assert lo <= vs["margin"][m] <= hi and vs["decided"][m] == (not lo <= 0 <= hi)


def test_evaluate_set_matches_design_file(tmp_path, capsys):
    code, out, _ = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                       "gsm8k", "--schedule", "heteroreason", "--set", "accept_threshold=0.8",
                       "--set", "fpga.clock_mhz=250", "--json")
    assert code == 0
    a = json.loads(out)["schedules"]["heteroreason"]
    from dse.io.design_files import load_system, system_to_toml
    from dse.io.resolve import override_spec as with_overrides
    from dse.specs import Catalog

    spec = with_overrides(load_system(Catalog.load(), "paper-config1-u280"),
                          {"accept_threshold": 0.8, "fpga_clock_MHz": 250.0})
    data = system_to_toml(spec)
    lines = []
    for k, v in data.items():
        if k == "sources":
            continue
        lines.append(f"{k} = {json.dumps(v)}")
    lines.append("[sources]")
    lines += [f'"{k}" = {json.dumps(v)}' for k, v in data["sources"].items()]
    f = tmp_path / "mine.toml"
    f.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "evaluate", "--design", str(f), "--scenario", "gsm8k",
                         "--schedule", "heteroreason", "--json")
    assert code == 0, err
    b = json.loads(out)["schedules"]["heteroreason"]
    assert b["latency_s_per_problem"] == a["latency_s_per_problem"]
    assert b["p_accept"] < json.loads(run(capsys, "evaluate", "--system", "paper-config1-u280",
                                          "--scenario", "gsm8k", "--schedule", "heteroreason",
                                          "--json")[1])["schedules"]["heteroreason"]["p_accept"]


@pytest.mark.parametrize(("argv", "code", "words"), [
    (["--set", "accept_threshold=1.7"], 2, "--set: accept_threshold: must be <= 1"),
    (["--set", "warp_drive=1"], 2, "--set: warp_drive: unknown key"),
    (["--set", "backtracking=maybe"], 2, "expected true or false"),
    (["--set", "draft_device=rtx-9090"], 2, "unknown device 'rtx-9090'"),
    (["--set", "draft_model=llama-3.2-1b-instruct"], 2,
     "--set: draft_model: draft llama-3.2-1b-instruct (llama3) and target"),
    (["--set", "draft_model=qwen2.5-7b-instruct", "--set", "draft_precision=bf16"], 4,
     "do not fit u280 HBM 8 GB"),
])
def test_evaluate_bad_input(capsys, argv, code, words):
    got, _, err = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                      "gsm8k", *argv)
    assert got == code, err
    assert words in err and err.count("\n") == 1


def test_simulate_trace_round_trip(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    tl = tmp_path / "timeline.json"
    code, out, err = run(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                         "math500", "--problems", "300", "--seed", "7", "--trace-out",
                         str(trace), "--timeline-out", str(tl), "--json")
    assert code == 0, err
    a = json.loads(out)
    assert {"latency_p50_s", "latency_p95_s"} <= set(a["percentiles"])
    assert a["problems"] == 300
    code, out, _ = run(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                       "math500", "--trace", str(trace), "--json")
    b = json.loads(out)
    assert b["latency_s_per_problem"] == pytest.approx(a["latency_s_per_problem"], rel=1e-9)
    assert b["accuracy"] == a["accuracy"]
    intervals = json.loads(tl.read_text())["intervals"]
    assert {iv["device"] for iv in intervals} >= {"draft", "prm"}
    assert all(iv["end_s"] > iv["start_s"] for iv in intervals)


def test_simulate_bad_trace(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"problem": 0, "draft_tokens": 10, "decision": "accept"}\n'
                   '{"problem": 0, "draft_tokens": -3, "decision": "accept"}\n')
    code, _, err = run(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                       "gsm8k", "--trace", str(bad))
    assert code == 3 and "bad.jsonl:2: draft_tokens" in err
    bad.write_text('{"problem": 0, "draft_tokens": 10, "decision": "maybe"}\n')
    code, _, err = run(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                       "gsm8k", "--trace", str(bad))
    assert code == 3 and "decision" in err


@pytest.mark.parametrize("argv", [
    ["optimize", "--storage", "memory", "--trials", "1"],
    ["simulate", "--system", "paper-config1-u280", "--scenario", "math500", "--problems", "5"],
    ["serve", "--model", "qwen2.5-0.5b-instruct", "--device", "a100-80gb-pcie", "--batch", "1"],
])
def test_a_seed_beyond_what_a_generator_takes_is_refused_by_its_flag(argv, capsys, tmp_path,
                                                                      monkeypatch):
    """--seed is 0..2**32-1 on every command (docs/cli.md): Optuna's samplers seed numpy's
    RandomState, which takes no more; one line naming the flag, exit 2, no study left."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main([*argv, "--seed", str(2**32)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 2
    assert err.endswith("argument --seed: must be in 0..4294967295, got 4294967296"), err
    assert not list(tmp_path.iterdir())


def test_a_goodput_slo_given_twice_is_refused_as_the_searches_refuse_it(capsys):
    """`dse serve --goodput ttft:100 ttft:5000` is one line and exit 2, as `--slo ttft:500
    ttft:600` is for the searches (dse.search.loads), not the last value silently."""
    code = main(["serve", "--model", "qwen2.5-0.5b-instruct", "--device", "a100-80gb-pcie",
                 "--rate", "1", "--goodput", "ttft:100", "ttft:5000"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == "dse serve: error: --goodput: ttft given twice", err


@pytest.mark.parametrize("argv", [
    ["serve", "--model", "qwen2.5-0.5b-instruct", "--device", "a100-80gb-pcie"],
    ["sweep"],
])
def test_a_rate_past_any_rack_is_refused_by_its_flag(argv, capsys):
    """--rate is at most 1e6 requests/s (dse.core.limits.MAX_RATE_PER_S): 1e308 is one line
    naming the flag and exit 2, not a page of numpy overflow warnings."""
    with pytest.raises(SystemExit) as e:
        main([*argv, "--rate", "1e308"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2
    assert err[-1].endswith("argument --rate: must be at most 1e+06 requests/s, got '1e308'")
    assert not any("Warning" in ln for ln in err)


@pytest.mark.parametrize("argv", [
    ["serve", "--model", "qwen2.5-0.5b-instruct", "--device", "a100-80gb-pcie"],
    ["sweep"], ["optimize"],
])
def test_a_rate_below_one_request_in_twelve_days_is_refused_by_its_flag(argv, capsys):
    """--rate 1e-310 divided J and $ per token by zero (a traceback from dse serve): a rate is
    at least 1e-6 requests/s (dse.core.limits.MIN_RATE_PER_S), one line naming the flag."""
    with pytest.raises(SystemExit) as e:
        main([*argv, "--rate", "1e-310"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and "Traceback" not in "\n".join(err)
    assert err[-1].endswith("argument --rate: must be at least 1e-06 requests/s (one request "
                            "in 12 days), got '1e-310'")


def test_the_smallest_rate_gives_finite_figures(capsys):
    assert main(["serve", "--model", "qwen2.5-0.5b-instruct", "--device", "a100-80gb-pcie",
                 "--rate", "1e-6", "--input-tokens", "10", "--output-tokens", "10",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert doc["j_per_token"] > 1e5 and doc["request_throughput"] == pytest.approx(1e-6, rel=1e-2)


def test_a_design_file_or_a_link_with_a_vanishing_rate_is_refused(tmp_path):
    """The same floor in a design file's [serving] table (one line naming the key), in the
    dashboard's link parameters (dropped with a warning) and in a Load itself."""
    from dse.errors import SpecError
    from dse.io.design_files import serving_settings
    from dse.serving.load import Load
    from dse.views.load import load_state

    with pytest.raises(SpecError, match=r"serving.rate: must be 1e-06 to 1e\+06 requests/s"):
        serving_settings(tmp_path / "d.toml", {"rate": 1e-9})
    state, warnings = load_state({"rate": "1e-310"})
    assert state.rate is None and "0 or at least 1e-06 requests/s" in warnings[0]
    with pytest.raises(ValueError, match="below 1e-06"):
        Load("rate", 1e-310, 1, 1, 1)


@pytest.mark.parametrize("command", ["evaluate", "simulate"])
def test_a_system_without_a_scenario_is_told_what_to_add(command, capsys):
    """A system file never names a workload: the line says --scenario is required with
    --system and how to find one (it once blamed a design file the user never gave)."""
    code = main([command, "--system", "paper-config1-u280"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (f"dse {command}: error: --scenario: required with --system (a system names "
                   "no workload: e.g. --scenario math500; dse catalog scenarios lists them)")


@pytest.mark.parametrize("argv", [["studies"], ["export", "--study", "s", "--out", "bundle"]])
def test_the_memory_storage_is_said_to_hold_nothing_after_its_optimize(argv, capsys, tmp_path,
                                                                       monkeypatch):
    """`--storage memory` (dse optimize's in-memory study) cannot be listed or exported: one
    line says why, not SQLAlchemy's URL parse error."""
    monkeypatch.chdir(tmp_path)
    code = main([*argv, "--storage", "memory"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--storage memory: an in-memory study ends with the `dse optimize` " \
        "that ran it" in err and "\n" not in err, err
    assert not list(tmp_path.iterdir())


def test_an_unknown_workload_in_a_space_names_its_file_and_key(tmp_path, capsys):
    from pathlib import Path

    shipped = Path(__file__).parents[1] / "scenarios" / "spaces" / "default.toml"
    text = shipped.read_text()
    assert "\nmath500 = 1.0" in text
    bad = tmp_path / "space.toml"
    bad.write_text(text.replace("\nmath500 = 1.0", "\nnope = 1.0"))
    code = main(["sweep", "--space", str(bad)])
    err = capsys.readouterr().err.strip()
    assert code == 3
    assert err.startswith(f"dse sweep: error: {bad}: workloads.nope: unknown workload 'nope'; "
                          "valid: aime24, "), err


def test_a_range_past_its_bound_names_the_end_the_user_wrote(tmp_path, capsys):
    """accept_threshold = {start = 0, stop = 1.7, step = 0.05}: the line names `stop` and 1.7,
    not the first grid point past 1 (1.05), which the user never wrote."""
    from pathlib import Path

    shipped = Path(__file__).parents[1] / "scenarios" / "spaces" / "default.toml"
    line = "accept_threshold = { start = 0.0, stop = 1.0, step = 0.05 }"
    text = shipped.read_text()
    assert line in text
    bad = tmp_path / "space.toml"
    bad.write_text(text.replace(line, line.replace("1.0,", "1.7,")))
    code = main(["sweep", "--space", str(bad)])
    err = capsys.readouterr().err.strip()
    assert code == 3
    assert err == f"dse sweep: error: {bad}: algorithm.accept_threshold.stop: must be <= 1, " \
        "got 1.7", err


def test_a_workload_whose_budget_cannot_hold_its_prompt_and_a_step_is_refused(tmp_path, capsys):
    """A workload file's own max_context_tokens below its prompt plus one step (MATH500's
    98.9 + 53 tokens: 152) is refused naming the key, as `--set max_context_tokens=1` is; it
    was accepted and put the accuracy at 44%."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "scenarios" / "workloads" / "math500.toml").read_text()
    text = re.sub(r"(?m)^max_context_tokens = \d+$", "max_context_tokens = 100", text, count=1)
    text = text.replace('name = "math500"', 'name = "tiny"')
    wl = tmp_path / "tiny.toml"
    wl.write_text(text)
    code = main(["evaluate", "--system", "paper-config1-3090", "--scenario", str(wl)])
    err = capsys.readouterr().err.strip()
    assert code == 3
    assert err == (f"dse evaluate: error: {wl}: max_context_tokens: 100 tokens cannot hold the "
                   "prompt (98.9 tokens) and one step (53 tokens): at least 152 needed"), err
