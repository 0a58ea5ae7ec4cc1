"""Values that cannot apply are one error line naming the flag or key, never silently run:
a tensor-parallel degree vLLM refuses for the model's heads, an FPGA build knob of 0, a flag
or key that does not apply to the device, and roofline's exit code for a model that does not
fit (as dse evaluate's)."""

from __future__ import annotations

import json

import pytest

from dse.cli import main
from dse.specs.model import tp_misfit, tp_splits
from tests.fuzzing import ROOT

SYSTEMS = ROOT / "scenarios" / "systems"
# Qwen2.5-Math-7B-Instruct and its PRM: 28 attention heads, 4 KV heads (config.json)
MATH7B = "qwen2.5-math-7b-instruct"
HEADS_3 = ("qwen2.5-math-7b-instruct has 28 attention heads and 4 KV heads: tp=3 does not "
           "divide the 28 attention heads (vLLM refuses it); valid tp: 1, 2, 4, 28")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err


# ------------------------------------------------------------------ A: tp against the heads


def test_tp_rule_by_hand(cat):
    """28 heads, 4 KV heads: the heads' divisors are 1, 2, 4, 7, 14, 28; of those 7 and 14
    neither divide 4 nor are multiples of it (vLLM's QKVParallelLinear), so 1, 2, 4, 28.
    Qwen2.5-72B: 64 heads, 8 KV heads: 8 splits both, 16 replicates each KV head twice."""
    m = cat.model(MATH7B)
    assert [t for t in range(1, 65) if tp_splits(m, t)] == [1, 2, 4, 28]
    assert tp_misfit(m, 3) == HEADS_3
    assert tp_misfit(m, 14) == (
        "qwen2.5-math-7b-instruct has 28 attention heads and 4 KV heads: tp=14 neither "
        "divides the 4 KV heads nor is a multiple of them (vLLM refuses it); valid tp: 1, 2, "
        "4, 28")
    assert tp_misfit(m, 4) is None
    big = cat.model("qwen2.5-72b-instruct")
    assert tp_misfit(big, 8) is None and tp_misfit(big, 16) is None
    assert tp_misfit(big, 3) is not None


@pytest.mark.parametrize(("argv", "code", "line"), [
    (["roofline", "--model", MATH7B, "--device", "rtx-3090", "--tp", "3"], 2,
     f"dse roofline: error: --tp: {HEADS_3}\n"),
    (["serve", "--model", MATH7B, "--device", "rtx-3090", "--tp", "3", "--rate", "1"], 2,
     f"dse serve: error: --tp 3: {HEADS_3}\n"),
    (["evaluate", "--system", "paper-config1-u280", "--scenario", "math500", "--set",
      "target_tp=3"], 2, f"dse evaluate: error: --set: target_tp: {HEADS_3}\n"),
    (["evaluate", "--system", "paper-config1-u280", "--scenario", "math500", "--set",
      "prm_tp=3"], 2, "dse evaluate: error: --set: prm_tp: " + HEADS_3.replace(
          "qwen2.5-math-7b-instruct", "qwen2.5-math-prm-7b") + "\n"),
])
def test_tp_flags_name_the_flag(capsys, argv, code, line):
    got, out, err = run(capsys, *argv)
    assert (got, out, err) == (code, "", line)


def test_tp_in_a_system_file_and_export(capsys, tmp_path):
    text = (SYSTEMS / "paper-config1-u280.toml").read_text()
    assert "\ntarget_tp = 1\n" in text
    p = tmp_path / "tp3.toml"
    p.write_text(text.replace("\ntarget_tp = 1\n", "\ntarget_tp = 3\n"))
    code, _, err = run(capsys, "evaluate", "--design", str(p), "--scenario", "math500")
    assert code == 3 and err == f"dse evaluate: error: {p}: target_tp: {HEADS_3}\n"
    code, _, err = run(capsys, "export", "--system", "paper-config1-u280", "--set",
                       "target_tp=3", "--out", str(tmp_path / "bundle"))
    assert code == 2 and "--set: target_tp: " in err and "tp=3" in err
    one_line(err)
    assert not (tmp_path / "bundle").exists()  # no tensor-parallel-size: 3 written


def test_space_tp_the_heads_refuse_is_infeasible_with_its_reason(cat, tmp_path):
    """A space's tp = [3] adds no feasible design: each hardware choice with it is infeasible
    with the reason, counted by its fixed first words."""
    from dse.search.grid import Evaluator
    from dse.search.space import hardware, load_space

    text = (ROOT / "scenarios" / "spaces" / "default.toml").read_text()
    assert "\ntp = [1]\n" in text
    p = tmp_path / "tp3.toml"
    p.write_text(text.replace("\ntp = [1]\n", "\ntp = [3]\n"))
    space = load_space(cat, p)
    ev = Evaluator(cat, space)
    targets = [hw for hw in hardware(cat, space)
               if hw.draft is None and hw.prm is None and hw.target.model == MATH7B]
    assert targets
    r = ev.evaluate(targets[0])
    assert r.metrics == {}
    assert r.reasons == ("target: the tensor-parallel degree cannot split the attention heads: "
                         + HEADS_3,)


# ------------------------------------------------------------------ B: FPGA knobs of 0


@pytest.mark.parametrize(("item", "key"), [
    ("fpga.clock_mhz=0", "fpga_clock_MHz"), ("fpga.mac_lanes=0", "fpga_mac_lanes"),
    ("fpga.channels=0", "fpga_memory_channels"), ("fpga_memory_channels=0",
                                                  "fpga_memory_channels"),
])
def test_zero_knob_by_set_is_refused(capsys, item, key):
    code, out, err = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                         "math500", "--set", item)
    assert (code, out) == (2, "")
    assert err == (f"dse evaluate: error: --set: {key}: must be > 0, got 0 (leave the key out "
                   "for its default)\n")


def test_zero_knob_in_files_and_export(capsys, tmp_path):
    text = (SYSTEMS / "paper-config1-u280.toml").read_text()
    p = tmp_path / "c0.toml"
    p.write_text(text.replace("\nfpga_clock_MHz = 300.0\n", "\nfpga_clock_MHz = 0.0\n"))
    code, _, err = run(capsys, "evaluate", "--design", str(p), "--scenario", "math500")
    assert code == 3 and err == (f"dse evaluate: error: {p}: fpga_clock_MHz: must be > 0, got "
                                 "0.0 (leave the key out for its default)\n")
    code, _, err = run(capsys, "export", "--system", "paper-config1-u280", "--set",
                       "fpga.clock_mhz=0", "--out", str(tmp_path / "bundle"))
    assert code == 2 and "fpga_clock_MHz: must be > 0, got 0" in err
    assert not (tmp_path / "bundle").exists()
    space = (ROOT / "scenarios" / "spaces" / "default.toml").read_text()
    for old, new, key in (("fpga_clock_MHz = [200.0, 250.0, 300.0]", "fpga_clock_MHz = [0.0]",
                           "draft.fpga_clock_MHz: must be > 0, got 0.0"),
                          ("fpga_mac_lanes = [1024, 2048, 4096]", "fpga_mac_lanes = [0]",
                           "draft.fpga_mac_lanes: must be > 0, got 0")):
        s = tmp_path / "space.toml"
        assert old in space
        s.write_text(space.replace(old, new))
        code, _, err = run(capsys, "sweep", "--space", str(s))
        assert code == 3 and err == f"dse sweep: error: {s}: {key}\n"


def test_an_empty_set_value_restores_the_default(capsys):
    """`--set fpga.clock_mhz=` clears the file's 300 MHz: the board's default, u280's 300 MHz
    too, so the same numbers as the file."""
    base = ["evaluate", "--system", "paper-config1-u280", "--scenario", "math500", "--json"]
    code, out, _ = run(capsys, *base)
    assert code == 0
    code, cleared, err = run(capsys, *base, "--set", "fpga.clock_mhz=")
    assert code == 0, err
    assert json.loads(cleared) == json.loads(out)


def test_an_empty_set_value_of_a_needed_key_names_it_missing(capsys):
    """`--set accept_threshold=` removes the preset's threshold; a PRM-verified design needs
    one, so the key is named missing (exit 2, one line), never a default guessed for it."""
    code, out, err = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                         "math500", "--set", "accept_threshold=")
    assert (code, out) == (2, "")
    assert err == ("dse evaluate: error: --set: accept_threshold: missing key (a speculative "
                   "design with verifier 'prm' needs it)\n")


# ------------------------------------------------------------------ C: keys that do not apply


@pytest.mark.parametrize(("argv", "code", "line"), [
    (["evaluate", "--system", "paper-config1-3090", "--scenario", "math500", "--set",
      "fpga.clock_mhz=99999"], 2,
     "dse evaluate: error: --set: fpga_clock_MHz: an FPGA draft's build knob, but the draft "
     "runs on a GPU (rtx-3090); remove the key\n"),
    (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--tp", "4"], 2,
     "dse roofline: error: --tp: applies to GPU boards, not FPGA 'u280' (one board holds the "
     "model)\n"),
    (["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280", "--serving",
      "sglang"], 2,
     "dse roofline: error: --serving: applies to GPU boards, not FPGA 'u280' (it runs an "
     "engine: --engine)\n"),
])
def test_keys_that_do_not_apply_are_refused(capsys, argv, code, line):
    got, out, err = run(capsys, *argv)
    assert (got, out, err) == (code, "", line)


def test_a_file_knob_goes_with_a_draft_an_override_moves(capsys):
    """The file's 300 MHz belongs to its FPGA draft: moving the draft to a GPU, or choosing
    the target alone, drops it (as the software keys), not an error."""
    for extra in (["--set", "draft_device=rtx-3090", "--set", "draft_precision=bf16"],
                  ["--set", "workflow=target-only"]):
        code, _, err = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                           "math500", *extra)
        assert code == 0, err


# ------------------------------------------------------------------ D: roofline's exit code


def test_roofline_does_not_fit_prints_then_exits_4(capsys):
    """72.71 GB of weights + KV against the u280's 8 GB of HBM: the table and its lines as
    before, then one error line and exit 4, as dse evaluate; --json the same."""
    argv = ["roofline", "--model", "qwen2.5-72b-instruct", "--device", "u280"]
    code, out, err = run(capsys, *argv)
    assert code == 4
    assert "needs 72.87 GB of 8.0 GB: DOES NOT FIT" in out
    assert "infeasible: weights 72.71 GB + KV for 1025 tokens = 72.87 GB do not fit u280 HBM" \
        in out
    assert err == ("dse roofline: error: qwen2.5-72b-instruct on u280 is infeasible: weights "
                   "72.71 GB + KV for 1025 tokens = 72.87 GB do not fit u280 HBM 8 GB\n")
    code, out, err = run(capsys, *argv, "--json")
    assert code == 4 and json.loads(out)["fits"] is False
    one_line(err)
    code, out, _ = run(capsys, "roofline", "--model", "qwen2.5-0.5b-instruct", "--device",
                       "u280")
    assert code == 0 and ": fits" in out
