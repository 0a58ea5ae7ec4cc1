"""Model bytes as published deployments hold them: Falcon, MPT and Mixtral config.json files (a
mixture of experts stores every expert but streams its top-k), GGUF k-quant and EXL2 bits per
weight, a KV cache below 16 bits and weights partly in host memory. Every expected number is
computed by hand in the docstring; the config.json files are in tests/data/hf_configs/ (their
sources in that folder's README.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import dse
from dse.devices import gpu as gpu_mod
from dse.devices import shape
from dse.devices.registry import KINDS, place
from dse.errors import FlagValueError, SpecError, UnknownNameError
from dse.specs import Catalog, model_from_hf_config
from dse.specs.schema import build_spec

HF = Path(__file__).parent / "data" / "hf_configs"


# ------------------------------------------------------------------------- config.json import


def test_falcon_7b_by_hand() -> None:
    """falcon-7b: h=4544, 71 heads x 64, multi-query (1 KV head: multi_query true and no new
    decoder architecture, whatever num_kv_heads says), 32 layers, parallel attention (one
    LayerNorm per layer), plain GELU MLP of 4h = 18176, no biases, V=65024, tied, RoPE.

    per layer: query_key_value 4544 x (4544 + 2 x 64) = 21,229,568; dense 4544^2 = 20,647,936;
    MLP 2 x 4544 x 18176 = 165,183,488; input_layernorm 2 x 4544 = 9,088 -> 207,070,080
    total = 32 x 207,070,080 (6,626,242,560) + word_embeddings 65,024 x 4544 (295,469,056)
            + ln_f 9,088 = 6,921,720,704 (the card: "7B")
    KV per token at 16 bits: 2 x 32 layers x 1 x 64 x 2 B = 8,192 B.
    """
    m = model_from_hf_config(HF / "falcon-7b" / "config.json")
    assert (m.architecture, m.num_kv_heads, m.head_dim, m.layer_norm_count) == ("falcon", 1, 64, 1)
    assert (m.intermediate_size, m.gated_mlp, m.layernorm, m.tie_word_embeddings) == (
        18176, False, True, True)
    assert m.position_embedding == "rope" and m.max_position_embeddings == 2048
    assert shape.layer_params(m) == 207_070_080
    assert shape.total_params(m) == 6_921_720_704
    assert shape.streamed_params_per_token(m) == 6_921_720_704  # tied: the table is the head
    assert shape.kv_bytes_per_token(m, 16) == 8_192


def test_falcon_rw_config_reads_as_the_new_one() -> None:
    """The original remote-code config (RWForCausalLM, model_type RefinedWebModel, n_head /
    n_layer) is the same model."""
    old = model_from_hf_config(HF / "falcon-7b-rw" / "config.json")
    new = model_from_hf_config(HF / "falcon-7b" / "config.json")
    for f in ("hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
              "intermediate_size", "vocab_size", "norms_per_layer", "position_embedding"):
        assert getattr(old, f) == getattr(new, f), f


def test_falcon_new_decoder_architecture_groups_kv(tmp_path: Path) -> None:
    """new_decoder_architecture (Falcon-40B/180B): num_kv_heads KV groups and two LayerNorms
    (ln_attn, ln_mlp) per layer; multi_query is then ignored."""
    cfg = json.loads((HF / "falcon-7b" / "config.json").read_text())
    cfg |= {"new_decoder_architecture": True, "num_attention_heads": 128, "num_kv_heads": 8,
            "hidden_size": 8192, "num_hidden_layers": 60}
    p = tmp_path / "falcon-40b" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(cfg))
    m = model_from_hf_config(p)
    assert (m.num_kv_heads, m.head_dim, m.layer_norm_count) == (8, 64, 2)


def test_mpt_7b_by_hand() -> None:
    """mpt-7b: d_model 4096, 32 heads, 32 layers, expansion_ratio 4 (16384), no_bias (no
    projection biases, LayerNorms with a weight only), ALiBi (no position table although
    learned_pos_emb is true), V=50432, tied.

    per layer: Wqkv 4096 x 12288 = 50,331,648; out_proj 16,777,216; up + down 2 x 4096 x
    16384 = 134,217,728; norm_1, norm_2 2 x 4096 = 8,192 -> 201,334,784
    total = 32 x 201,334,784 (6,442,713,088) + wte 50,432 x 4096 (206,569,472) + norm_f 4,096
            = 6,649,286,656 (the card: 6.7B)
    """
    m = model_from_hf_config(HF / "mpt-7b" / "config.json")
    assert (m.architecture, m.num_kv_heads, m.position_embedding, m.tokenizer_family) == (
        "mpt", 32, "alibi", "gpt-neox")
    assert not m.learned_positions and m.norm_bias is False and not m.qkv_bias
    assert shape.norm_params(m) == 4096
    assert shape.layer_params(m) == 201_334_784
    assert shape.total_params(m) == 6_649_286_656
    assert shape.position_params(m) == 0


def test_mixtral_8x7b_total_and_active_by_hand() -> None:
    """Mixtral-8x7B-v0.1: h=4096, 32 layers, 32 heads x 128, 8 KV heads, 8 experts of
    intermediate 14336 per layer, top-2, untied, V=32000.

    attention: 4096 x (4096 + 2 x 1024) + 4096^2 = 41,943,040; one expert 3 x 4096 x 14336 =
    176,160,768; router 4096 x 8 = 32,768; norms 2 x 4096 = 8,192
    stored layer: 41,943,040 + 8 x 176,160,768 + 32,768 + 8,192 = 1,451,270,144
    total = 32 x 1,451,270,144 + embed 131,072,000 + lm_head 131,072,000 + norm 4,096
          = 46,702,792,704 (the paper arXiv 2401.04088 and the card: 46.7B; 47B in the paper)
    active layer: 41,943,040 + 2 x 176,160,768 + 32,768 + 8,192 = 394,305,536
    active = 32 x 394,305,536 + 262,144,000 + 4,096 = 12,879,925,248 (published: 12.9B;
             the paper's "13B active parameters")
    streamed per decoded token: active less the embedding row lookup: 12,748,853,248
    """
    m = model_from_hf_config(HF / "mixtral-8x7b-v0.1" / "config.json")
    assert (m.architecture, m.num_experts, m.experts_per_token, m.num_kv_heads) == (
        "mixtral", 8, 2, 8)
    assert m.tokenizer_family == "mistral"
    assert shape.layer_params(m) == 1_451_270_144
    assert shape.active_layer_params(m) == 394_305_536
    assert shape.total_params(m) == 46_702_792_704
    assert shape.active_params(m) == 12_879_925_248
    assert abs(shape.active_params(m) / 12.9e9 - 1) < 0.005
    assert abs(shape.total_params(m) / 46.7e9 - 1) < 0.001
    assert shape.streamed_params_per_token(m) == 12_748_853_248
    bf16 = shape.precision("bf16")
    assert shape.weight_bytes(m, bf16) == 2 * 46_702_792_704  # memory holds every expert
    assert shape.streamed_weight_bytes(m, bf16) == 2 * 12_748_853_248  # decode reads top-2
    # MACs per token: the active layer without its norms, 32 x 394,297,344
    assert shape.linear_macs_per_token(m) == 32 * (394_305_536 - 8_192)


def test_mixtral_decodes_like_its_active_size_and_fits_like_its_total(cat: Catalog) -> None:
    """On an H100-SXM at bf16 the 93.4 GB of weights do not fit one GPU (80 GB), and each
    decoded token streams 25.5 GB, not 93.4 GB."""
    m = model_from_hf_config(HF / "mixtral-8x7b-v0.1" / "config.json")
    pl = place(cat, m, "h100-sxm", precision_name="bf16", context_tokens=4096, tp=1)
    assert pl.infeasibility() and pl.memory_needed_bytes > 93e9
    assert isinstance(pl, gpu_mod.GpuPlacement)
    assert pl.cost.weight_bytes == pytest.approx(25.4977e9, rel=1e-4)


def test_expert_keys_are_checked_together(cat: Catalog) -> None:
    base = {k: v for k, v in vars(cat.model("llama-2-7b")).items() if k not in ("path",)}
    data = {"schema_version": 1, "kind": "model", "name": "moe", "description": "d",
            "sources": {"*": "test"}}
    keys = ("hf_id", "architecture", "tokenizer_family", "roles", "head", "hidden_size",
            "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
            "intermediate_size", "vocab_size", "tie_word_embeddings", "qkv_bias",
            "max_position_embeddings")
    data |= {k: list(base[k]) if k == "roles" else base[k] for k in keys}
    with pytest.raises(SpecError, match="experts_per_token: num_experts and experts_per_token"):
        build_spec("moe.toml", {**data, "num_experts": 8})
    with pytest.raises(SpecError, match="3 active of 2 experts"):
        build_spec("moe.toml", {**data, "num_experts": 2, "experts_per_token": 3})
    with pytest.raises(SpecError, match="norm_bias: only a LayerNorm"):
        build_spec("moe.toml", {**data, "norm_bias": False})


def test_config_without_model_type_is_read_by_its_architecture(tmp_path: Path) -> None:
    cfg = json.loads((HF / "mixtral-8x7b-v0.1" / "config.json").read_text())
    del cfg["model_type"]
    p = tmp_path / "mixtral" / "config.json"
    p.parent.mkdir()
    p.write_text(json.dumps(cfg))
    assert shape.total_params(model_from_hf_config(p)) == 46_702_792_704
    p.write_text(json.dumps({k: v for k, v in cfg.items() if k != "num_local_experts"}))
    with pytest.raises(SpecError, match="num_local_experts: missing key"):
        model_from_hf_config(p)


# ----------------------------------------------------------------------------- precisions


@pytest.mark.parametrize(("name", "bits"), [
    ("q2_k", 3.35), ("q3_k_m", 3.91), ("q4_k_m", 4.84), ("q5_k_m", 5.68),
    # q6_K: ql 128 + qh 64 + scales 16 + d 2 = 210 bytes per 256 weights = 6.5625 bits
    ("q6_k", 210 * 8 / 256),
])
def test_kquant_bits_per_weight(name: str, bits: float) -> None:
    """llama.cpp's quantize README, Llama 2 7B table (whole-file bits per weight of the mixes)."""
    p = shape.precision(name)
    assert p.weight_bits == pytest.approx(bits) and p.kv_bits == 16 and p.compute == "fp16"
    assert KINDS.get("gpu").runs_precision(name)


def test_kquant_mixes_lie_between_their_blocks(cat: Catalog) -> None:
    """A Q4_K_M file mixes q4_K super-blocks (ggml-common.h: d + dmin 4 B, scales 12 B, qs
    128 B = 144 B per 256 weights) with q6_K ones (the tool's q6_k, every tensor q6_K): the
    weight bytes the tool streams for a 7B model at q4_k_m lie strictly between every weight
    at 144 B per 256 and every weight at q6_K's bytes."""
    m = cat.model("llama-2-7b")
    q6 = shape.precision("q6_k")
    q4_block = replace(q6, name="q4_K-block", weight_bits=144 * 8 / 256)
    mix = shape.streamed_weight_bytes(m, shape.precision("q4_k_m"))
    assert shape.streamed_weight_bytes(m, q4_block) < mix < shape.streamed_weight_bytes(m, q6)


def test_exl2_any_bits_per_weight_one_parser(cat: Catalog) -> None:
    p = shape.precision("exl2-4.65")
    assert (p.name, p.weight_bits, p.activation_bits, p.kv_bits) == ("exl2-4.65", 4.65, 16, 16)
    assert shape.precision("exl2-2").weight_bits == 2.0
    assert shape.precision("exl2-8.0").weight_bits == 8.0
    for bad in ("exl2-9", "exl2-1.99", "exl2-abc", "exl2-", "exl2-4.5.1"):
        with pytest.raises(SpecError) as e:
            shape.precision(bad)
        assert "2 <= bits <= 8" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(UnknownNameError, match="exl2-<bits per weight"):
        shape.precision("int3")
    # the GPU kind runs the family; an FPGA refuses it by name
    KINDS.get("gpu").check_precision("exl2-4.65")
    with pytest.raises(SpecError, match="not supported on an FPGA"):
        KINDS.get("fpga").check_precision("exl2-4.65")
    # 7B streamed params at 4.65 bits, the 16-bit head of a stack that keeps it so (vLLM)
    m = cat.model("llama-2-7b")
    head = 32000 * 4096
    assert shape.streamed_weight_bytes(m, p) == pytest.approx(
        (6_607_343_616 - head) * 4.65 / 8 + head * 2)


def test_exl2_through_set_and_space(cat: Catalog) -> None:
    d = dse.load_design("paper-config1-3090", overrides={"target_precision": "exl2-4.65"},
                        catalog=cat)
    assert d.target.precision.weight_bits == 4.65
    with pytest.raises(SpecError, match="target_precision: 'exl2-9': EXL2 takes"):
        dse.load_design("paper-config1-3090", overrides={"target_precision": "exl2-9"},
                        catalog=cat)


# ---------------------------------------------------------------------------- KV precision


def test_kv_precision_bits_by_hand(cat: Catalog) -> None:
    """llama-2-7b KV per token: 2 x 32 layers x 4096 values = 262,144 values; 16 bits 524,288 B,
    fp8 262,144 B, q4_0 (18 B per 32 values) 147,456 B."""
    m = cat.model("llama-2-7b")
    for kv, nbytes in (("16", 524_288), ("fp8", 262_144), ("int8", 262_144),
                       ("q8_0", 278_528), ("q4_0", 147_456)):
        p = shape.with_kv_precision(shape.precision("bf16"), kv)
        assert shape.kv_bytes_per_token(m, p.kv_bits) == nbytes, kv
    assert shape.with_kv_precision(shape.precision("bf16"), None) == shape.precision("bf16")


def test_target_kv_precision_key(cat: Catalog) -> None:
    """Absent: 16 bits, today's placement exactly; fp8 halves the target's KV bytes."""
    base = dse.load_design("paper-config1-3090", catalog=cat)
    fp8 = dse.load_design("paper-config1-3090", overrides={"target_kv_precision": "fp8"},
                          catalog=cat)
    assert base.target.kv_bits == 16 and fp8.target.kv_bits == 8
    assert fp8.target.kv_bytes_per_token == base.target.kv_bytes_per_token / 2
    assert fp8.target.decode_token_s(4000) < base.target.decode_token_s(4000)
    with pytest.raises(SpecError) as e:
        dse.load_design("paper-config1-3090", overrides={"target_kv_precision": "fp9"},
                        catalog=cat)
    assert "target_kv_precision" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(SpecError, match="draft_kv_precision: 'fp8' not supported on an FPGA"):
        dse.load_design("paper-config1-u280", overrides={"draft_kv_precision": "fp8"},
                        catalog=cat)


# -------------------------------------------------------------------------------- offload


def test_offload_decode_by_hand(cat: Catalog) -> None:
    """llama-2-7b bf16 on an RTX 3090 (vllm-cudagraph), 25% of the streamed weights in host
    memory, over its PCIe 4.0 x16 host link (25.0 GB/s effective, boards/links).

    streamed params = 6,738,415,616 - embedding row lookup 131,072,000 = 6,607,343,616;
    bf16: 13,214,687,232 B. Offloaded: 0.25 x that = 3,303,671,808 B, over the link
    3,303,671,808 / 25e9 = 0.13214687232 s per token (and per prefill pass), in series with
    the GPU's pass over the other 9,911,015,424 B.
    """
    m = cat.model("llama-2-7b")
    full = place(cat, m, "rtx-3090", precision_name="bf16", context_tokens=4096)
    off = place(cat, m, "rtx-3090", precision_name="bf16", context_tokens=4096,
                offload_fraction=0.25)
    assert isinstance(full, gpu_mod.GpuPlacement) and isinstance(off, gpu_mod.GpuPlacement)
    assert full.cost.weight_bytes == 13_214_687_232
    assert off.cost.host_weight_bytes == 3_303_671_808
    assert off.cost.weight_bytes == 9_911_015_424
    on_device = replace(full.cost, weight_bytes=9_911_015_424)
    link_s = 3_303_671_808 / 25e9
    assert link_s == pytest.approx(0.13214687232)
    for ctx in (0, 1000, 4000):
        assert off.decode_token_s(ctx) == pytest.approx(
            gpu_mod.decode_token_s(on_device, ctx) + link_s, rel=1e-12)
    assert off.prefill_s(128) == pytest.approx(
        gpu_mod.prefill_s(on_device, 128) + link_s, rel=1e-12)
    # memory: only the on-device share; the report still names the model's full weights
    assert off.memory_needed_bytes == pytest.approx(full.memory_needed_bytes - 3_303_671_808)
    assert off.weights_bytes == full.weights_bytes
    assert str(off.decode_bound(1000)[1]) == "memory"


def test_offload_makes_a_big_model_fit(cat: Catalog) -> None:
    """llama-2-13b bf16 (26 GB) does not fit a 24 GB RTX 3090; with 40% offloaded it does."""
    m = cat.model("llama-2-13b")
    assert place(cat, m, "rtx-3090", precision_name="bf16", context_tokens=2048, tp=1
                 ).infeasibility()
    assert not place(cat, m, "rtx-3090", precision_name="bf16", context_tokens=2048, tp=1,
                     offload_fraction=0.4).infeasibility()


def test_zero_offload_is_todays_placement(cat: Catalog) -> None:
    m = cat.model("qwen2.5-math-7b-instruct")
    a = place(cat, m, "rtx-3090", precision_name="bf16", context_tokens=4096)
    b = place(cat, m, "rtx-3090", precision_name="bf16", context_tokens=4096,
              offload_fraction=0.0, kv_precision=None)
    assert a == b and float(a.decode_token_s(500)) == float(b.decode_token_s(500))


def test_offload_key_range_and_kinds(cat: Catalog) -> None:
    with pytest.raises(SpecError, match="target_offload_fraction: must be below 1"):
        dse.load_design("paper-config1-3090", overrides={"target_offload_fraction": 1.0},
                        catalog=cat)
    with pytest.raises(SpecError, match="draft_offload_fraction: an FPGA holds every weight"):
        dse.load_design("paper-config1-u280", overrides={"draft_offload_fraction": 0.2},
                        catalog=cat)
    d = dse.load_design("paper-config1-3090", overrides={"target_offload_fraction": 0.25},
                        catalog=cat)
    assert d.target.offload_fraction == 0.25  # type: ignore[attr-defined]


def test_set_gives_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`dse evaluate --set` with a bad KV precision or offload: exit 2, one line naming --set
    and the key."""
    from dse.cli import main

    for item, key in (("target_kv_precision=fp9", "target_kv_precision"),
                      ("target_offload_fraction=1", "target_offload_fraction")):
        code = main(["evaluate", "--system", "paper-config1-3090", "--scenario", "math500",
                     "--set", item])
        err = capsys.readouterr().err.strip()
        assert code == FlagValueError.exit_code, err
        assert f"--set: {key}" in err and "\n" not in err


def test_roofline_with_the_new_options(cat: Catalog) -> None:
    from dse.io.roofline import roofline

    r = roofline(cat, model=str(HF / "mixtral-8x7b-v0.1" / "config.json"), device="h100-sxm",
                 precision_name="q4_k_m", serving="llama.cpp", kv_precision="q8_0",
                 offload_fraction=0.1)
    assert r["kv_bits"] == 8.5 and r["offload_fraction"] == 0.1 and r["precision"] == "q4_k_m"
    assert r["weights_bytes"] == pytest.approx(46_702_792_704 * 4.84 / 8)
