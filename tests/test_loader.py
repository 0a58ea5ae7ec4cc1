"""The one strict loader: the schema on the spec fields, every input kind through it, one-line
errors naming file (and line) and key with the CLI's exit codes (3 for files, 2 for --set),
old files that keep loading, the design-file round trip and the emitter."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from dse.cli import main
from dse.errors import FlagValueError, SpecError
from dse.io.design_files import (
    design_file_text,
    parse_design_text,
    parse_set,
    read_design_file,
    system_to_toml,
)
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.specs import MAX_DEPTH, SCHEMAS, build_spec, schema_of
from dse.specs.emit import json_text, toml_text, value_text, yaml_text
from dse.specs.hardware import LinkSpec
from dse.specs.scenario import SystemSpec

SYSTEM = Path(__file__).resolve().parent.parent / "scenarios" / "systems"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def one_line(err: str, *words: str) -> None:
    assert err.count("\n") == 1, err
    for w in words:
        assert w in err, err


def system_text(name: str) -> str:
    return (SYSTEM / f"{name}.toml").read_text()


# ------------------------------------------------------------------------ schema on fields


def test_schema_is_derived_from_the_dataclass():
    keys = {k.toml: k for k in SCHEMAS["system"].keys}
    assert keys["fpga_clock_MHz"].attr == "fpga_clock_hz" and keys["fpga_clock_MHz"].unit == "MHz"
    assert keys["fpga_clock_MHz"].optional and keys["fpga_clock_MHz"].legacy_zero
    assert keys["draft_engine"].optional and keys["draft_engine"].kind is str
    assert keys["target_tp"].kind is int and not keys["target_tp"].optional
    assert all(k.help for k in keys.values() if k.toml.startswith("fpga_"))
    link = {k.toml: k for k in schema_of(LinkSpec)}
    assert link["latency_us"].scale == 1e-6 and link["lanes"].lo == 0.0 and link["lanes"].lo_open


# ----------------------------------------------------------------- catalog files: exit 3


GPU = """schema_version = 1
kind = {kind}
name = "g"
memory_GB = {mem}
memory_kind = "gddr6x"
mem_bw_GBps = 1000.0
bf16_TFLOPS = 100.0
fp16_TFLOPS = 100.0
int8_TOPS = 200.0
generation = "ampere"
tdp_W = 300.0
idle_W = 20.0
host_link = "pcie-gen4-x16"
nvlink_bidir_GBps = 0.0
unified_memory = false
host_cpu_slowdown = 1.0
wait_power_fraction = 0.0
list_price_usd = 1000.0
[sources]
"*" = "test"
"""


@pytest.mark.parametrize(("kind", "mem", "words"), [
    ('["gpu"]', "24.0", "kind: unknown kind ['gpu']"),
    ('"gpu"', str(10**400), "memory_GB: must be at most 2**53 in magnitude"),
    ('"gpu"', "1" * 5000, "malformed TOML"),
    ('"gpu"', "nan", "memory_GB: must be finite"),
    ('"gpu"', "1e-300", "memory_GB: must be 0 or at least 1e-30 in magnitude, got 1e-300"),
    ('"gpu"', "5e-324", "memory_GB: must be 0 or at least 1e-30 in magnitude, got 5e-324"),
    ('"gpu"', '"24"', "memory_GB: expected a number, got str"),
    ('"gpu"', "[" * 40 + "]" * 40, f"nested deeper than {MAX_DEPTH} levels"),
])
def test_bad_catalog_file_is_one_line_exit_3(tmp_path, capsys, kind, mem, words):
    (tmp_path / "g.toml").write_text(GPU.format(kind=kind, mem=mem))
    code, err = run(capsys, "catalog", "boards", "--catalog", str(tmp_path))
    assert code == 3
    one_line(err, "g.toml", words)


def test_the_smallest_board_allowed_gives_finite_numbers_without_warnings(tmp_path, capsys):
    """mem_bw_GBps 1e-300 gave `dse roofline` a 300-digit decode time and serve overflow
    warnings; the loader now refuses a nonzero value under 1e-30 (MIN_ABS), and at 2e-30 the
    numbers are absurd but finite, printed in four significant digits, with no warning."""
    import warnings

    (tmp_path / "g.toml").write_text(GPU.format(kind='"gpu"', mem="24.0").replace(
        "mem_bw_GBps = 1000.0", "mem_bw_GBps = 2e-30"))
    argv = ["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "g", "--catalog",
            str(tmp_path)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert main([*argv, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
        assert main(["serve", "--model", "qwen2.5-0.5b-instruct", "--device", "g", "--rate",
                     "5", "--input-tokens", "100", "--output-tokens", "100", "--catalog",
                     str(tmp_path), "--json"]) == 0
        json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert 1e29 < doc["decode_s_per_token"] < 1e40
    assert "e+3" in text and max(len(w) for w in text.split() if w.strip("-")) < 30, text


@pytest.mark.parametrize(("idle", "ok"), [("20.0", True), ("300.0", False), ("400.0", False)])
def test_a_gpu_idling_at_or_above_its_power_limit_is_refused(tmp_path, capsys, idle, ok):
    """idle_W 400 beside tdp_W 300 loaded, and `dse serve` then reported an average power of
    393 W on a 350 W board: the power model's dynamic range, tdp_W - idle_W, must be
    positive."""
    (tmp_path / "g.toml").write_text(GPU.format(kind='"gpu"', mem="24.0").replace(
        "idle_W = 20.0", f"idle_W = {idle}"))
    code, err = run(capsys, "catalog", "boards", "--catalog", str(tmp_path))
    if ok:
        assert code == 0, err
        return
    assert code == 3
    one_line(err, "g.toml", f"idle_W: must be below tdp_W (300 W), got {float(idle):g}")


def test_an_fpga_whose_static_power_reaches_its_maximum_is_refused(tmp_path, capsys):
    text = (Path(__file__).resolve().parent.parent / "boards" / "fpgas" / "u280.toml").read_text()
    static = next(ln for ln in text.splitlines() if ln.startswith("static_W ="))
    (tmp_path / "u280x.toml").write_text(text.replace('name = "u280"', 'name = "u280x"', 1)
                                         .replace(static, "static_W = 5000.0", 1))
    code, err = run(capsys, "catalog", "boards", "--catalog", str(tmp_path))
    assert code == 3
    one_line(err, "u280x.toml", "static_W: must be below max_W")


def test_hf_config_with_huge_and_nested_values(tmp_path):
    cfg = {"model_type": "qwen2", "hidden_size": 10**400, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 100,
           "max_position_embeddings": 64}
    p = tmp_path / "m" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(cfg))
    from dse.specs import model_from_hf_config

    with pytest.raises(SpecError, match="hidden_size: must be at most 2"):
        model_from_hf_config(p)
    p.write_text('{"model_type": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(SpecError, match="nested deeper"):
        model_from_hf_config(p)


# ----------------------------------------------------------------------- design files


def design_text() -> str:
    from dse.specs import Catalog

    spec = Catalog.load().get("system", "paper-config1-u280")
    assert isinstance(spec, SystemSpec)
    return design_file_text(spec, PRESETS["heteroreason"], "math500", {"latency_s": 1.5})


@pytest.mark.parametrize(("edit", "words"), [
    (lambda t: t.replace('kind = "design"', 'kind = "design"\nworklaod = "x"'),
     "worklaod: unknown key"),
    (lambda t: t.replace("step_ahead = true", "step_ahead = true\nstep_ahaed = true"),
     "schedule.step_ahaed: unknown key"),
    (lambda t: t.replace("schema_version = 1", "schema_version = 2", 1),
     "schema_version: unsupported 2"),
    (lambda t: t.replace("shadow_sync = true", 'shadow_sync = "yes"'),
     "schedule.shadow_sync: expected true or false"),
    (lambda t: t.replace("target_tp = 1", f"target_tp = {10**400}"),
     "target_tp: must be at most 2**53"),
    (lambda t: t.replace('draft_model = "qwen2.5-0.5b-instruct"', 'draft_model = ["q"]'),
     "draft_model: expected a string, got list"),
    (lambda t: t.replace("latency_s = 1.5", 'latency_s = "fast"'),
     "metrics.latency_s: expected a number"),
])
def test_bad_design_file_is_one_line_exit_3(tmp_path, capsys, edit, words):
    text = design_text()
    bad = edit(text)
    assert bad != text
    p = tmp_path / "best.toml"
    p.write_text(bad)
    code, err = run(capsys, "evaluate", "--design", str(p), "--scenario", "math500")
    assert code == 3
    one_line(err, "best.toml", words)


def test_design_file_round_trip(cat):
    for name in cat.names("system"):
        spec = cat.get("system", name)
        assert isinstance(spec, SystemSpec)
        text = design_file_text(spec, PRESETS["brsd_stepahead"], "gsm8k", {"x": 2.0})
        back = parse_design_text(text, spec.path)
        assert back.system == spec and back.workload == "gsm8k"
        assert back.schedule == PRESETS["brsd_stepahead"]
        assert parse_design_text(design_file_text(back.system, back.schedule, "gsm8k",
                                                  {"x": 2.0}), spec.path) == back


# ------------------------------------------------------------------------- --set: exit 2


@pytest.mark.parametrize(("item", "words"), [
    (f"target_tp={10**400}", "--set: target_tp: must be at most 2**53"),
    ("accept_threshold=1e400", "--set: accept_threshold: must be finite"),
    ("target_tp=1e308", "--set: target_tp: must be at most 2**53"),
    ("accept_threshold=nan", "--set: accept_threshold: must be finite"),
    ("max_backtracks=2.5", "--set: max_backtracks: expected an integer"),
    ("backtrack_window=0", "--set: backtrack_window: must be > 0"),
    ("fpga.mac_lanes=-4", "--set: fpga_mac_lanes: must be > 0"),
    ("accept_threshold", "--set: accept_threshold: expected key=value"),
    ("warp=1", "--set: warp: unknown key"),
])
def test_bad_set_is_one_line_exit_2(capsys, item, words):
    with pytest.raises(FlagValueError):
        parse_set([item])
    code, err = run(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                    "math500", "--set", item)
    assert code == 2
    one_line(err, words)


# ----------------------------------------------------------------------- trace JSONL


@pytest.mark.parametrize(("record", "words"), [
    ({"problem": "a", "decision": "accept", "draft_tokens": 3}, "problem: expected an integer"),
    ({"problem": 0, "decision": ["accept"], "draft_tokens": 3}, "decision: expected a string"),
    ({"problem": 0, "decision": "accept", "draft_tokens": 3.5}, "draft_tokens: expected an"),
    ({"problem": 0, "decision": "accept", "draft_tokens": 10**400},
     "draft_tokens: must be at most 2**53"),
    ({"problem": 0, "decision": "accept", "draft_tokens": 3, "draft_reward": 1.5},
     "draft_reward: must be <= 1"),
    ({"problem": 0, "decision": "refine", "draft_tokens": 3, "target_tokens": 4,
      "target_reward": -0.1}, "target_reward: must be >= 0"),
    ({"problem": 0, "decision": "accept", "draft_tokens": 3, "drfat_reward": 0.5},
     "drfat_reward: unknown key"),
    ({"problem": 0, "step": -1, "decision": "accept", "draft_tokens": 3}, "step: must be >= 0"),
])
def test_bad_trace_record_names_file_line_key(tmp_path, capsys, record, words):
    good = {"problem": 0, "step": 0, "decision": "accept", "draft_tokens": 3,
            "draft_reward": 0.9}
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(record) + "\n")
    code, err = run(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                    "math500", "--trace", str(p))
    assert code == 3
    one_line(err, "t.jsonl:2: " + words)


def test_trace_nan_and_deep_nesting(tmp_path, capsys):
    p = tmp_path / "t.jsonl"
    for line, words in (('{"problem": 0, "decision": "accept", "draft_tokens": NaN}',
                         "t.jsonl:1: draft_tokens: must be finite"),
                        ('{"problem": ' + "[" * 5000 + "]" * 5000 + "}",
                         "t.jsonl:1: nested deeper")):
        p.write_text(line + "\n")
        code, err = run(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                        "math500", "--trace", str(p))
        assert code == 3
        one_line(err, words)


# ------------------------------------------------------------- old files keep loading


def old_style(text: str) -> str:
    """The pre-split form of a shipped FPGA system: the engine in draft_serving."""
    return text.replace('draft_engine = "flexllm"', 'draft_serving = "flexllm"')


def zero_knobs(text: str) -> str:
    """An old system's 0 knobs ("the default" once; out of range now, like any value <= 0)."""
    return (text.replace("target_serving", "fpga_memory_channels = 0\nfpga_mac_lanes = 0\n"
                         "target_serving", 1)
            .replace("[sources]", '[sources]\nfpga_memory_channels = "0 = every channel"\n'
                     'fpga_mac_lanes = "0 = the engine default"'))


def test_old_fpga_system_loads_as_the_new(cat, tmp_path):
    new = cat.get("system", "paper-config2-v80")
    assert isinstance(new, SystemSpec)
    assert new.draft_engine == "flexllm" and new.draft_serving is None
    assert new.fpga_memory_channels is None and new.fpga_mac_lanes is None
    p = tmp_path / "paper-config2-v80.toml"
    p.write_text(old_style(system_text("paper-config2-v80")))
    old = read_design_file(p).system
    assert old.draft_serving == "flexllm" and old.fpga_memory_channels is None
    a = build_design(cat, new, PRESETS["heteroreason"])
    b = build_design(cat, old, PRESETS["heteroreason"])
    assert a.draft.fpga_build == b.draft.fpga_build
    assert b.system.draft_engine == "flexllm" and b.system.draft_serving is None
    assert a.draft.fpga_build is not None and a.draft.fpga_build.memory_channels > 0
    assert "fpga_memory_channels" not in system_to_toml(new)


def test_zero_fpga_knobs_are_refused_naming_the_key(tmp_path):
    """A 0 knob once read as "the default"; now it is out of range as -5 is (> 0), and the
    one line says to leave the key out."""
    p = tmp_path / "paper-config2-v80.toml"
    p.write_text(zero_knobs(system_text("paper-config2-v80")))
    with pytest.raises(SpecError, match=r"fpga_memory_channels: must be > 0, got 0 \(leave the "
                       r"key out for its default\)"):
        read_design_file(p)


def test_old_draft_serving_conflicting_with_draft_engine(cat):
    data = tomllib.loads(system_text("paper-config1-u280"))
    data["draft_serving"] = "other-engine"
    spec = build_spec("x.toml", data)
    assert isinstance(spec, SystemSpec)
    # not an engine name: a GPU serving profile on an FPGA draft, refused (it was ignored)
    with pytest.raises(SpecError, match="draft_serving: 'other-engine' is a GPU serving"):
        build_design(cat, spec, PRESETS["rsd"])
    from dataclasses import replace

    fake = replace(spec, draft_engine="elsewhere", draft_serving="flexllm")
    with pytest.raises(SpecError, match="draft_serving: names the FPGA engine 'flexllm'"):
        build_design(cat, fake, PRESETS["rsd"])


def test_space_labels_never_show_zero_knobs(cat, tmp_path):
    from dse.search.space import hardware, load_space

    space = load_space(cat)
    labels = {hw.draft.label() for hw in hardware(cat, space) if hw.draft is not None}
    assert not any("0ch" in lb or "[0MHz" in lb or ",0lanes" in lb for lb in labels)
    assert "qwen2.5-0.5b-instruct@v80/w8a8[300MHz,2048lanes]" in labels
    old = (Path(space.path).read_text()
           .replace("# fpga_memory_channels absent", "fpga_memory_channels = [0]\n#"))
    p = tmp_path / "old.toml"
    p.write_text(old)
    with pytest.raises(SpecError, match=r"draft\.fpga_memory_channels: must be > 0, got 0"):
        load_space(cat, p)


# --------------------------------------------------------------------------- emitter


def test_emitter_formats():
    assert [value_text(v, "toml") for v in (True, 3, 0.1, "a\"b", [1, "x"])] == [
        "true", "3", "0.1", '"a\\"b"', '[1, "x"]']
    assert [value_text(v, "yaml") for v in (None, "plain", "yes", "1.5", "a: b")] == [
        "null", "plain", '"yes"', '"1.5"', '"a: b"']
    assert value_text(None, "json") == "null"
    for fmt in ("toml", "json", "yaml"):
        with pytest.raises(ValueError):
            value_text(float("inf"), fmt)
    with pytest.raises(ValueError):
        value_text(None, "toml")
    data = {"a": 1, "b": "x y", "t": {"c": 2.5, "skip": None, "d": {"e": [True]}}}
    assert tomllib.loads(toml_text(data)) == {"a": 1, "b": "x y",
                                              "t": {"c": 2.5, "d": {"e": [True]}}}
    assert yaml_text({"k": "on", "n": {"m": 1}}) == 'k: "on"\nn:\n  m: 1\n'
    assert json.loads(json_text({"z": float("nan"), "a": [1]})) == {"a": [1], "z": None}
