"""Model arithmetic, checked against hand-computed numbers and published parameter counts."""

from __future__ import annotations

import numpy as np
import pytest

from dse.devices import shape


def test_qwen05_params_by_hand(cat):
    """Qwen2.5-0.5B: h=896, 24 layers, 14 heads x 64, 2 KV heads, I=4864, V=151936, tied.

    per layer: qkv 896*(896+2*128) + bias 1152 = 1,033,344; o 896*896 = 802,816;
    MLP 3*896*4864 = 13,074,432; norms 2*896 = 1,792  -> 14,912,384
    total = 24*14,912,384 + embed 151,936*896 (136,134,656) + final norm 896 = 494,032,768
    """
    m = cat.model("qwen2.5-0.5b-instruct")
    assert shape.layer_params(m) == 14_912_384
    assert shape.total_params(m) == 494_032_768
    # tied: the LM head is the embedding, read once per token
    assert shape.streamed_params_per_token(m) == 494_032_768


def test_untied_7b_streams_head_not_embedding(cat):
    m = cat.model("qwen2.5-7b-instruct")
    emb = shape.embedding_params(m)
    assert shape.total_params(m) - shape.streamed_params_per_token(m) == emb


def test_kv_bytes_gqa_by_hand(cat):
    """KV per token = 2 (K,V) x layers x kv_heads x head_dim x bytes.
    0.5B: 2*24*2*64*2 = 12,288 B; 7B: 2*28*4*128*2 = 57,344 B (hardware-and-models.md)."""
    assert shape.kv_bytes_per_token(cat.model("qwen2.5-0.5b-instruct"), 16) == 12_288
    assert shape.kv_bytes_per_token(cat.model("qwen2.5-7b-instruct"), 16) == 57_344
    assert shape.kv_bytes_per_token(cat.model("qwen2.5-7b-instruct"), 8) == 28_672


def test_published_param_counts_within_1pct(cat):
    """Every model's count is within 1% of its published one; a model without one says why
    in its sources (the only published figure is a round size, e.g. Llama-2 '7B')."""
    for name in cat.names("model"):
        m = cat.model(name)
        if m.published_params is None:
            assert m.sources.get("published_params", "").startswith("none given: "), name
            continue
        rel = shape.total_params(m) / m.published_params - 1
        assert abs(rel) <= 0.01, (name, rel)


def test_attention_macs_by_hand(cat):
    """2 new tokens after 3 cached: pairs = 2*3 + 2*3/2 = 9; MACs = 2 * L * heads * hd * 9."""
    m = cat.model("qwen2.5-0.5b-instruct")
    assert shape.attention_macs(m, 2, 3) == pytest.approx(2 * 24 * 14 * 64 * 9)


def test_forward_flops_vectorised(cat):
    m = cat.model("qwen2.5-1.5b-instruct")
    n = np.array([1, 7, 64])
    ctx = np.array([0, 100, 1000])
    vec = shape.forward_flops(m, n, ctx)
    for i in range(3):
        assert vec[i] == pytest.approx(shape.forward_flops(m, int(n[i]), int(ctx[i])))
