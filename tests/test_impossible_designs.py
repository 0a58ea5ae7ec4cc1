"""Impossible designs are refused at the resolver with one line naming the key: a budget that
cannot hold one problem, software of the wrong device kind, malformed config.json fields and
traces whose record order is ambiguous."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.cli import main
from dse.errors import FlagValueError, SpecError
from dse.io.resolve import report, resolve_design, resolve_workload, simulate
from dse.model.design import budget_misfit
from dse.specs import model_from_hf_config

QWEN05_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
    "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
    "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768,
    "tie_word_embeddings": True}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.err


def test_budget_by_hand(cat):
    """MATH500: prompt 98.9 tokens, steps of 53: a speculative design needs 151.9 tokens; 152
    holds it, 151 does not."""
    w = cat.workload("math500")
    d = resolve_design(cat, "paper-config1-u280", overrides={"max_context_tokens": 152})
    assert budget_misfit(d, w) is None
    d = resolve_design(cat, "paper-config1-u280", overrides={"max_context_tokens": 151})
    why = budget_misfit(d, w)
    assert why is not None and "98.9" in why and "at least 152" in why


@settings(max_examples=20, deadline=None)
@given(frac=st.floats(0.0, 0.999), wl=st.sampled_from(["math500", "gsm8k", "gaokao2023en",
                                                        "olympiadbench"]))
def test_a_budget_below_one_problem_is_refused_everywhere(cat, frac, wl):
    w = resolve_workload(cat, wl)
    need = w.prompt_tokens + max(w.draft_step_tokens_mean, w.target_step_tokens_mean)
    budget = max(1, int(frac * need))
    d = resolve_design(cat, "paper-config1-u280", overrides={"max_context_tokens": budget})
    with pytest.raises(SpecError, match="max_context_tokens"):
        report(d, w, intervals=False)
    with pytest.raises(SpecError, match="max_context_tokens"):
        simulate(d, w, problems=10, intervals=False)


def test_budget_on_the_command_line_is_a_flag_error(cat, capsys):
    code, err = cli(capsys, "evaluate", "--system", "paper-config1-u280", "--scenario",
                    "math500", "--set", "max_context_tokens=1")
    assert code == 2 and err.count("\n") == 1 and "--set: max_context_tokens" in err
    assert "Traceback" not in err
    code, err = cli(capsys, "simulate", "--system", "paper-config2-3090", "--scenario", "gsm8k",
                    "--set", "max_context_tokens=50", "--problems", "10")
    assert code == 2 and "max_context_tokens" in err
    d = resolve_design(cat, "paper-config1-u280", overrides={"max_context_tokens": 60},
                       source="--set")
    with pytest.raises(FlagValueError):
        report(d, cat.workload("gsm8k"), intervals=False)


@pytest.mark.parametrize("system, key, value", [
    ("paper-config1-3090", "draft_engine", "flexllm"),  # an FPGA engine on a GPU draft
    ("paper-config1-u280", "draft_serving", "vllm-cudagraph"),  # a GPU profile on an FPGA draft
])
def test_software_of_the_wrong_device_kind_is_refused(cat, capsys, system, key, value):
    with pytest.raises(SpecError, match=key):
        resolve_design(cat, system, overrides={key: value})
    code, err = cli(capsys, "evaluate", "--system", system, "--scenario", "math500", "--set",
                    f"{key}={value}")
    assert code in (2, 3) and key in err and err.count("\n") == 1


@pytest.mark.parametrize("change, key", [
    ({"architectures": [5]}, "architectures"),
    ({"architectures": "Qwen2ForCausalLM"}, "architectures"),
    ({"architectures": [None, "Qwen2ForCausalLM"]}, "architectures"),
    ({"hidden_size": "896"}, "hidden_size"),
    ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"num_attention_heads": 14.5}, "num_attention_heads"),
])
def test_wrong_typed_config_json_fields_are_named(tmp_path: Path, change, key):
    p = tmp_path / "m" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps({**QWEN05_CONFIG, **change}), encoding="utf-8")
    with pytest.raises(SpecError) as e:
        model_from_hf_config(p)
    assert e.value.key == key


def _trace(tmp_path: Path, capsys) -> list[dict]:
    out = tmp_path / "t.jsonl"
    code, _ = cli(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                  "math500", "--problems", "3", "--seed", "1", "--trace-out", str(out))
    assert code == 0
    return [json.loads(ln) for ln in out.read_text(encoding="utf-8").splitlines()]


def test_mixed_or_repeated_steps_in_a_trace_are_refused(tmp_path: Path, capsys):
    recs = _trace(tmp_path, capsys)
    p0 = [i for i, r in enumerate(recs) if r["problem"] == 0]
    assert len(p0) >= 2
    for name, edit, why in (
            ("mixed", lambda rs: rs[p0[1]].update(step=None), "missing on this record"),
            ("absent", lambda rs: rs[p0[1]].pop("step"), "missing on this record"),
            ("twice", lambda rs: rs[p0[1]].update(step=rs[p0[0]]["step"]), "again")):
        rs = [dict(r) for r in recs]
        edit(rs)
        f = tmp_path / f"{name}.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in rs), encoding="utf-8")
        code, err = cli(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                        "math500", "--trace", str(f))
        assert code == 3 and f"{f}:{p0[1] + 1}: step: " in err and why in err, err
    # no step anywhere is fine: the lines give the order
    f = tmp_path / "none.jsonl"
    f.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "step"}) + "\n"
                         for r in recs), encoding="utf-8")
    code, _ = cli(capsys, "simulate", "--system", "paper-config1-u280", "--scenario",
                  "math500", "--trace", str(f))
    assert code == 0
