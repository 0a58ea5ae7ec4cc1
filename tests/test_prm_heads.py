"""PRM heads beyond the classifier: a PRM scoring with its LM head (`lm-prm`), an implicit PRM
with its reference LM (`implicit-prm`) and an outcome model's scalar head (`orm-scalar`),
counted by hand; the spec's reference checks; the vLLM export's notes per head."""

from __future__ import annotations

import dataclasses
import json

import pytest

from dse.devices import shape
from dse.devices.gpu import gpu_cost
from dse.devices.shape import PRECISIONS
from dse.errors import SpecError
from dse.exporters.vllm import endpoint, prm_head_note, serve_options
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.specs import Catalog, model_from_hf_config
from dse.specs.catalog import spec_fields
from dse.specs.model import check_reference
from dse.specs.schema import build_spec


def _data(m, **changes):
    fields = {k: (list(v) if isinstance(v, tuple) else v) for k, v in spec_fields(m).items()
              if v is not None and k not in ("name", "description")}
    fields.update(changes)
    return {"schema_version": 1, "kind": "model", "name": "m", "description": "",
            "sources": {"*": "test"}, **{k: v for k, v in fields.items() if v is not None}}


def test_lm_prm_counts_the_full_lm_head_by_hand(cat: Catalog) -> None:
    """math-shepherd-mistral-7b-prm (Mistral-7B shape: h=4096, 32 layers, 32 heads x 128,
    8 KV heads, I=14336, V=32000, untied), head lm-prm.

    per layer: q 4096 x 4096 = 16,777,216; k, v 2 x 4096 x 1024 = 8,388,608;
    o 16,777,216; MLP 3 x 4096 x 14336 = 176,160,768; norms 2 x 4096 = 8,192
                                                             -> 218,112,000
    body = 32 x 218,112,000 + final norm 4,096               = 6,979,588,096
    embedding 32,000 x 4,096                                 =   131,072,000
    LM head 32,000 x 4,096 (the value stand-in had 4,097)    =   131,072,000
    total                                                    = 7,241,732,096 (= Mistral-7B)
    streamed per token: body + head = 7,110,660,096; the head's MACs per scored position
    131,072,000 (every vocabulary logit), so 262,144,000 FLOPs.
    """
    m = cat.model("math-shepherd-mistral-7b-prm")
    assert m.head == "lm-prm"
    assert shape.layer_params(m) == 218_112_000
    assert shape.body_params(m) == 6_979_588_096
    assert shape.head_params(m) == 32_000 * 4_096 == 131_072_000
    assert shape.total_params(m) == 7_241_732_096
    assert shape.total_params(m) == shape.total_params(cat.model("mistral-7b-v0.1"))
    assert shape.streamed_params_per_token(m) == 7_110_660_096
    assert shape.head_matmul_params(m) == 131_072_000
    # bf16: every weight 2 bytes; the head is streamed at the table width (16 bits) too
    bf16 = PRECISIONS["bf16"]
    assert shape.weight_bytes(m, bf16) == 2 * 7_241_732_096
    # w4a16: the body at 4 bits, the token table and the LM head kept 16-bit
    w4 = PRECISIONS["w4a16"]
    assert shape.weight_bytes(m, w4) == pytest.approx(
        (7_241_732_096 - 2 * 131_072_000) * 0.5 + 2 * 131_072_000 * 2)
    # one scored position: the head adds 2 x 131,072,000 FLOPs over the last-token-only pass
    extra = shape.forward_flops(m, 10, 0, head_positions=10) - shape.forward_flops(m, 10, 0)
    assert float(extra) == 9 * 2 * 131_072_000


def test_orm_scalar_head_by_hand(cat: Catalog) -> None:
    """qwen2.5-math-rm-72b, h = 8192: Linear(h, h) + ReLU + Linear(h, 1), with biases:
    8192^2 + 8192 + 8192 + 1 = 67,125,249; the PRM classifier's Linear(h, 2) has h + 1 = 8,193
    more (67,133,442)."""
    m = cat.model("qwen2.5-math-rm-72b")
    assert m.head == "orm-scalar"
    assert shape.head_params(m) == 67_125_249
    assert shape.head_matmul_params(m) == 67_125_249
    cls = dataclasses.replace(m, head="prm-classifier")
    assert shape.head_params(cls) - shape.head_params(m) == 8_193
    assert shape.total_params(m) == 71_527_620_609


def test_implicit_prm_counts_its_reference(cat: Catalog) -> None:
    """eurusprm-stage1 (implicit-prm, reference qwen2.5-math-7b-instruct, the same shape):
    every term counts two copies of the 7B.

    total 2 x 7,615,616,512 = 15,231,233,024; KV per token 2 x 57,344 = 114,688 B (bf16);
    LM heads at a scored position 2 x 152,064 x 3,584 = 1,089,994,752 MACs; layers run 56;
    attention MACs per (query, key) pair 2 x 56 x 28 x 128 = 401,408.
    """
    m = cat.model("eurusprm-stage1")
    ref = cat.model(m.reference_model or "")
    assert ref.name == "qwen2.5-math-7b-instruct"
    assert shape.total_params(ref) == 7_615_616_512
    assert shape.total_params(m) == 15_231_233_024
    assert shape.kv_bytes_per_token(m, 16) == 2 * 57_344
    assert shape.head_matmul_params(m) == 2 * 152_064 * 3_584 == 1_089_994_752
    assert shape.layers_run(m) == 56
    assert shape.attention_macs_per_pair(m) == 401_408
    for f in (shape.streamed_params_per_token, shape.linear_macs_per_token,
              shape.active_params):
        assert f(m) == 2 * f(ref), f.__name__
    for p in (PRECISIONS["bf16"], PRECISIONS["w4a16"]):
        assert shape.weight_bytes(m, p) == 2 * shape.weight_bytes(ref, p)
        assert shape.streamed_weight_bytes(m, p) == 2 * shape.streamed_weight_bytes(ref, p)
    # scoring 100 tokens after 200: the PRM's pass plus the reference's, each with its head
    # at every position
    one = shape.forward_flops(ref, 100, 200, head_positions=100)
    assert float(shape.forward_flops(m, 100, 200, head_positions=100)) == 2 * float(one)
    # a GPU prices both models' layers, weights and attention
    gpu, serving = cat.gpu("a100-80gb-sxm"), cat.serving("vllm-cudagraph")
    c_m, c_ref = (gpu_cost(x, gpu, PRECISIONS["bf16"], serving) for x in (m, ref))
    assert c_m.layers == 2 * c_ref.layers
    assert c_m.weight_bytes == 2 * c_ref.weight_bytes
    assert c_m.attn_flops_per_pair == 2 * c_ref.attn_flops_per_pair
    assert c_m.head_flops_per_position == 2 * c_ref.head_flops_per_position


def test_implicit_prm_needs_a_reference(cat: Catalog) -> None:
    m = cat.model("eurusprm-stage1")
    with pytest.raises(SpecError, match="reference_model"):
        build_spec("m.toml", _data(m, reference_model=None))
    with pytest.raises(SpecError, match="reference_model"):  # only an implicit PRM has one
        build_spec("m.toml", _data(cat.model("math-shepherd-mistral-7b-prm"),
                                   reference_model="mistral-7b-v0.1"))
    # the generator head stays a generator's
    with pytest.raises(SpecError, match="head"):
        build_spec("m.toml", _data(m, head="lm", reference_model=None))


def test_reference_must_be_a_catalog_lm_of_the_prms_shape(cat: Catalog) -> None:
    m = cat.model("eurusprm-stage1")
    models = {n: cat.model(n) for n in cat.names("model")}
    check_reference(m, models)  # the shipped pair agrees
    with pytest.raises(SpecError, match="unknown model 'nope'"):
        check_reference(dataclasses.replace(m, reference_model="nope"), models)
    with pytest.raises(SpecError, match="differs in hidden_size"):
        check_reference(dataclasses.replace(m, reference_model="qwen2.5-1.5b-instruct"), models)
    with pytest.raises(SpecError, match="head"):
        check_reference(dataclasses.replace(m, reference_model="eurusprm-stage2"), models)


def test_vllm_export_per_head(cat: Catalog) -> None:
    """A reward head is a pooling model on /pooling; a PRM scoring with its LM head is a plain
    LM on /v1; an implicit PRM's note names the reference to serve beside it."""
    assert endpoint("prm", "prm-classifier").endswith("/pooling")
    assert endpoint("prm", "orm-scalar").endswith("/pooling")
    assert endpoint("prm", "lm-prm").endswith("/v1")
    assert endpoint("prm", "implicit-prm").endswith("/v1")
    assert endpoint("prm").endswith("/pooling")

    system = dataclasses.replace(cat.system("paper-config2-3090"),
                                 prm_model="math-shepherd-mistral-7b-prm")
    d = build_design(cat, system, PRESETS["heteroreason"])
    opts, _, notes = serve_options(cat, d, "prm")
    assert "task" not in opts
    assert any("plain LM server" in n and "prompt_logprobs" in n for n in notes)
    base = build_design(cat, cat.system("paper-config2-3090"), PRESETS["heteroreason"])
    opts, _, notes = serve_options(cat, base, "prm")
    assert opts["task"] == "reward" and not any("vllm_prm.yaml: Qwen" in n for n in notes)

    note = prm_head_note(cat, cat.model("eurusprm-stage2")) or ""
    assert "Qwen/Qwen2.5-Math-7B-Instruct" in note and "implicit PRM" in note
    assert "Skywork PRM vLLM plugin" in (
        prm_head_note(cat, cat.model("skywork-o1-open-prm-qwen-2.5-7b")) or "")
    assert "outcome reward model" in (prm_head_note(cat, cat.model("qwen2.5-math-rm-72b")) or "")
    assert prm_head_note(cat, cat.model("qwen2.5-math-prm-7b")) is None


def test_import_reads_qwen2_reward_model_as_orm_scalar(cat: Catalog, tmp_path) -> None:
    """A Qwen2ForRewardModel config.json (Qwen2.5-Math-RM-72B's keys) imports with the ORM
    head and counts as the catalog file does."""
    cfg = {"architectures": ["Qwen2ForRewardModel"], "model_type": "qwen2",
           "hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
           "num_key_value_heads": 8, "intermediate_size": 29568, "vocab_size": 152064,
           "max_position_embeddings": 4096, "tie_word_embeddings": False}
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    m = model_from_hf_config(tmp_path / "config.json")
    assert m.head == "orm-scalar" and m.roles == ("prm",)
    assert shape.total_params(m) == shape.total_params(cat.model("qwen2.5-math-rm-72b"))
