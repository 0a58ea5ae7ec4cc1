"""Parameter counts of GPT-2, OPT, Llama, Qwen2.5, Qwen3 and GPT-J shapes, by hand, against the
released checkpoints; and the Hugging Face config.json importer on the published GPT-2 / OPT
files in tests/data/hf_configs/ (their sources are in that folder's README.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from dse.devices import shape
from dse.errors import SpecError
from dse.specs import Catalog, ModelSpec, model_from_hf_config
from dse.specs.schema import build_spec

HF = Path(__file__).parent / "data" / "hf_configs"


def test_gpt2_by_hand(cat: Catalog) -> None:
    """gpt2: h=768, 12 layers, n_inner absent = 4h = 3072, V=50257, 1024 positions, tied.

    per layer: c_attn 768 x 2304 + 2304 = 1,771,776; c_proj 768 x 768 + 768 = 590,592;
    c_fc 768 x 3072 + 3072 = 2,362,368; mlp c_proj 3072 x 768 + 768 = 2,360,064;
    ln_1, ln_2 2 x (768 + 768) = 3,072                        -> 7,087,872
    total = 12 x 7,087,872 (85,054,464) + wte 50,257 x 768 (38,597,376)
            + wpe 1,024 x 768 (786,432) + ln_f 1,536           = 124,439,808
    (the tied LM head counted once: the checkpoint's 124,439,808)
    """
    m = cat.model("gpt2")
    assert shape.layer_params(m) == 7_087_872
    assert shape.position_params(m) == 786_432
    assert shape.total_params(m) == 124_439_808
    # decode streams layers, ln_f and the (tied) head; wte and wpe rows are looked up
    assert shape.streamed_params_per_token(m) == 124_439_808 - 786_432
    # MACs: 12 x (7,087,872 - 3,072 norm params) = 85,017,600 (biases counted as one MAC)
    assert shape.linear_macs_per_token(m) == 85_017_600


def test_gpt2_medium_by_hand(cat: Catalog) -> None:
    """gpt2-medium: h=1024, 24 layers, inner 4096.

    per layer: c_attn 1024 x 3072 + 3072 = 3,148,800; c_proj 1024^2 + 1024 = 1,049,600;
    MLP 2 x 1024 x 4096 + 4096 + 1024 = 8,393,728; norms 4 x 1024 = 4,096 -> 12,596,224
    total = 24 x 12,596,224 (302,309,376) + 50,257 x 1024 (51,463,168) + 1024 x 1024
            (1,048,576) + 2,048 = 354,823,168
    """
    m = cat.model("gpt2-medium")
    assert shape.layer_params(m) == 12_596_224
    assert shape.total_params(m) == 354_823_168


def test_opt_125m_by_hand(cat: Catalog) -> None:
    """opt-125m: the GPT-2-small layer (7,087,872: q/k/v/out with biases, fc1/fc2 with biases,
    two LayerNorms), V=50272, a 2048 + 2 = 2050-row position table (offset 2), tied.

    total = 12 x 7,087,872 (85,054,464) + 50,272 x 768 (38,608,896) + 2,050 x 768 (1,574,400)
            + final LayerNorm 1,536 = 125,239,296
    """
    m = cat.model("opt-125m")
    assert shape.layer_params(m) == 7_087_872
    assert m.position_table_rows == 2050
    assert shape.total_params(m) == 125_239_296


def test_opt_1_3b_by_hand(cat: Catalog) -> None:
    """opt-1.3b: h=2048, 24 layers, 32 heads, ffn 8192.

    per layer: q/k/v 2048 x 6144 + 6144 = 12,589,056; out 2048^2 + 2048 = 4,196,352;
    fc1 2048 x 8192 + 8192 = 16,785,408; fc2 8192 x 2048 + 2048 = 16,779,264;
    norms 4 x 2048 = 8,192                                       -> 50,358,272
    total = 24 x 50,358,272 (1,208,598,528) + 50,272 x 2048 (102,957,056)
            + 2,050 x 2048 (4,198,400) + 4,096 = 1,315,758,080
    """
    m = cat.model("opt-1.3b")
    assert shape.layer_params(m) == 50_358_272
    assert shape.total_params(m) == 1_315_758_080


def test_llama_and_qwen_unchanged_by_hand(cat: Catalog) -> None:
    """Llama-3.2-1B: per layer q 2048^2 + k/v 2 x 2048 x 512 + o 2048^2 = 10,485,760,
    MLP 3 x 2048 x 8192 = 50,331,648, norms 4,096 -> 60,821,504; 16 layers = 973,144,064,
    + tied embedding 128,256 x 2048 (262,668,288) + 2,048 = 1,235,814,400.

    Qwen2.5-7B: per layer q 3584^2 + 3584 bias, k/v 2 x 3584 x 512 + 1024 bias, o 3584^2,
    MLP 3 x 3584 x 18944 = 203,685,888, norms 7,168 -> 233,057,792; 28 layers =
    6,525,618,176, + embedding and untied head 2 x 152,064 x 3584 (1,089,994,752) + 3,584
    = 7,615,616,512 (the checkpoint's count).
    """
    assert shape.total_params(cat.model("llama-3.2-1b-instruct")) == 1_235_814_400
    q7 = cat.model("qwen2.5-7b-instruct")
    assert shape.layer_params(q7) == 233_057_792
    assert shape.total_params(q7) == 7_615_616_512


def test_qwen3_head_dim_and_qk_norm_by_hand(cat: Catalog) -> None:
    """Qwen3-0.6B: h=1024, 16 Q / 8 KV heads of head_dim 128 (not 1024 / 16 = 64).

    per layer: q 1024 x 2048, k/v 2 x 1024 x 1024, o 2048 x 1024 -> 6,291,456;
    MLP 3 x 1024 x 3072 = 9,437,184; norms 2 x 1024 + q/k norms 2 x 128 = 2,304 -> 15,730,944
    total = 28 x 15,730,944 (440,466,432) + tied 151,936 x 1024 (155,582,464) + 1,024
            = 596,049,920 (card: 0.6B, 0.44B without embeddings)
    """
    m = cat.model("qwen3-0.6b")
    assert (m.head_dim, m.qk_norm) == (128, True)
    assert shape.layer_params(m) == 15_730_944
    assert shape.total_params(m) == 596_049_920
    # KV per token: 2 x 28 layers x 8 heads x 128 x 2 bytes = 114,688
    assert shape.kv_bytes_per_token(m, 16) == 114_688


def test_gptj_by_hand(cat: Catalog) -> None:
    """GPT-J-6B: h=4096, 28 layers, one LayerNorm per (parallel) block, no attention biases,
    fc_in/fc_out 4096 <-> 16384 with biases, untied head with a bias.

    per layer: attention 4 x 4096^2 = 67,108,864; MLP 2 x 4096 x 16384 + 16384 + 4096 =
    134,238,208; ln_1 8,192 -> 201,355,264; 28 layers = 5,637,947,392
    total = + wte 50,400 x 4096 (206,438,400) + lm_head 206,438,400 + bias 50,400 + ln_f 8,192
          = 6,050,882,784 (model card: 6,053,381,344, 0.04% more)
    """
    m = cat.model("gpt-j-6b")
    assert shape.layer_params(m) == 201_355_264
    assert shape.total_params(m) == 6_050_882_784
    assert shape.head_matmul_params(m) == 206_438_400 + 50_400


# --------------------------------------------------------------------- config.json importer


def test_import_gpt2_and_opt_match_the_catalog_files(cat: Catalog) -> None:
    """The published config.json files give the same shape, hence the same counts, as the
    catalog TOMLs written from them."""
    for name in ("gpt2", "gpt2-medium", "opt-125m", "opt-1.3b"):
        m = model_from_hf_config(HF / name / "config.json")
        ref = cat.model(name)
        assert m.name == name
        assert m.architecture == ref.architecture
        assert shape.total_params(m) == shape.total_params(ref), name
        assert shape.streamed_params_per_token(m) == shape.streamed_params_per_token(ref), name
        assert shape.linear_macs_per_token(m) == shape.linear_macs_per_token(ref), name
        assert shape.kv_bytes_per_token(m, 16) == shape.kv_bytes_per_token(ref, 16), name


def test_import_gpt2_keys() -> None:
    m = model_from_hf_config(HF / "gpt2" / "config.json")
    assert (m.hidden_size, m.num_layers, m.num_attention_heads, m.num_kv_heads) == (768, 12, 12, 12)
    assert (m.intermediate_size, m.position_table_rows, m.max_position_embeddings) == (
        3072, 1024, 1024)
    assert m.tie_word_embeddings and not m.gated_mlp and m.layernorm and m.learned_positions
    assert shape.total_params(m) == 124_439_808


def test_import_opt_350m_projection_and_no_final_norm() -> None:
    """opt-350m: word_embed_proj_dim 512 < hidden 1024 and do_layer_norm_before false (the
    LayerNorm follows each block, and there is no final one).

    layers as gpt2-medium's: 24 x 12,596,224 = 302,309,376; embed_tokens 50,272 x 512 =
    25,739,264; positions 2,050 x 1024 = 2,099,200; project_in + project_out 2 x 512 x 1024
    = 1,048,576 (no bias) -> 331,196,416. Decode streams the layers, both projections and the
    tied 512-wide head: 302,309,376 + 1,048,576 + 25,739,264 = 329,097,216.
    """
    m = model_from_hf_config(HF / "opt-350m" / "config.json")
    assert (m.embed_dim, m.has_final_norm) == (512, False)
    assert shape.total_params(m) == 331_196_416
    assert shape.streamed_params_per_token(m) == 329_097_216
    assert shape.linear_macs_per_token(m) == 24 * (12_596_224 - 4096) + 1_048_576


def test_import_unsupported_model_type_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "bert" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps({"model_type": "bert", "hidden_size": 768}))
    with pytest.raises(SpecError) as e:
        model_from_hf_config(p)
    text = str(e.value)
    assert e.value.key == "model_type" and str(p) in text and "'bert'" in text
    assert "gpt2" in text and "opt" in text and "\n" not in text


def test_import_names_gpt2_keys_in_errors(tmp_path: Path) -> None:
    """A bad value is reported under the config.json's own key (n_embd, not hidden_size)."""
    cfg = json.loads((HF / "gpt2" / "config.json").read_text())
    p = tmp_path / "g" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps({**cfg, "n_layer": 0}))
    with pytest.raises(SpecError, match="n_layer: must be > 0"):
        model_from_hf_config(p)
    p.write_text(json.dumps({k: v for k, v in cfg.items() if k != "n_embd"}))
    with pytest.raises(SpecError, match="n_embd: missing key"):
        model_from_hf_config(p)


def test_roofline_cli_reads_gpt2_config(capsys: pytest.CaptureFixture[str]) -> None:
    from dse.cli import main

    code = main(["roofline", "--model", str(HF / "gpt2" / "config.json"), "--device",
                 "a100-80gb-sxm", "--json", "--context", "512"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "gpt2" in out
    # the default context (1025 tokens) is past gpt2's 1024 positions: the table, then exit 4
    code = main(["roofline", "--model", str(HF / "gpt2" / "config.json"), "--device",
                 "a100-80gb-sxm"])
    out, err = capsys.readouterr()
    assert code == 4 and "gpt2" in out
    assert "context 1025 beyond gpt2 max positions 1024" in err


# ------------------------------------------------------------------------- schema checks


def _data(m: ModelSpec, **changes: object) -> dict[str, object]:
    from dse.specs.catalog import spec_fields

    fields = {k: (list(v) if isinstance(v, tuple) else v) for k, v in spec_fields(m).items()
              if v is not None and k not in ("name", "description")}
    return {"schema_version": 1, "kind": "model", "name": "m", "description": "",
            "sources": {"*": "test"}, **fields, **changes}


def test_learned_positions_need_their_rows(cat: Catalog) -> None:
    g = cat.model("gpt2")
    data = _data(g)
    del data["position_table_rows"]
    with pytest.raises(SpecError, match="position_table_rows"):
        build_spec("m.toml", data)
    with pytest.raises(SpecError, match="position_table_rows"):
        build_spec("m.toml", _data(cat.model("qwen2.5-0.5b-instruct"), position_table_rows=10))


def test_attention_bias_needs_qkv_bias(cat: Catalog) -> None:
    with pytest.raises(SpecError, match="attention_bias"):
        build_spec("m.toml", _data(cat.model("llama-3.2-1b-instruct"), attention_bias=True))


def test_absent_shape_keys_read_as_the_llama_shape(cat: Catalog) -> None:
    """An existing TOML (no new keys) and the same model with every new key spelled out at
    its default count the same."""
    m = cat.model("qwen2.5-0.5b-instruct")
    explicit = replace(m, mlp_kind="gated", mlp_bias=False, attention_bias=False,
                       norm="rmsnorm", norms_per_layer=2, final_norm=True, qk_norm=False,
                       position_embedding="rope", lm_head_bias=False)
    for f in (shape.total_params, shape.streamed_params_per_token, shape.linear_macs_per_token):
        assert f(explicit) == f(m)
