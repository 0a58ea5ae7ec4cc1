"""Model arithmetic: parameter counts, bytes and FLOPs per token, KV cache size.

Pure functions of a ModelSpec and a Precision. Token counts and contexts broadcast as numpy
arrays. Conventions (per forward pass, batch 1):
- a multiply-accumulate is 2 FLOPs;
- decode of one token reads every matmul weight once, plus the KV cache of its context;
- the input embedding is a row lookup (not a full read); the LM head is a full read
  (tied or not); reward heads are small and read once;
- attention FLOPs: QK^T and PV, 2 * 2 * heads * head_dim per (query, key) pair per layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.errors import UnknownNameError
from dse.specs import ModelSpec


@dataclass(frozen=True)
class Precision:
    """Bit widths of weights, activations and KV cache, and which compute peak applies."""

    name: str
    weight_bits: float  # per weight, scales included (llama.cpp q4_0: 4.5)
    activation_bits: int
    kv_bits: int
    compute: str  # "bf16" | "fp16" | "int8" | "fp8": which datasheet peak the matmuls run at

    @property
    def weight_bytes_per_param(self) -> float:
        return self.weight_bits / 8

    @property
    def kv_bytes_per_value(self) -> float:
        return self.kv_bits / 8


# KV stays 16-bit on GPUs for every scheme (vLLM's default kv_cache_dtype=auto); the FPGA
# build sets its own KV width (dse.devices.fpga.FpgaBuild.kv_bits).
PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision("bf16", 16, 16, 16, "bf16"),
        Precision("fp16", 16, 16, 16, "fp16"),
        Precision("w8a16", 8, 16, 16, "bf16"),
        Precision("w8a8", 8, 8, 16, "int8"),
        Precision("w4a16", 4, 16, 16, "bf16"),
        # FP8 (E4M3) weights and activations on Ada/Hopper tensor cores (vLLM/TensorRT-LLM fp8)
        Precision("fp8", 8, 8, 16, "fp8"),
        # llama.cpp GGUF block formats: 32 weights share one fp16 scale, so q8_0 stores
        # 34 bytes and q4_0 18 bytes per 32 weights (ggml-common.h block_q8_0 / block_q4_0);
        # its CUDA kernels dequantise to fp16 for prompt GEMMs.
        Precision("q8_0", 8.5, 16, 16, "fp16"),
        Precision("q4_0", 4.5, 16, 16, "fp16"),
    )
}


def precision(name: str) -> Precision:
    if name not in PRECISIONS:
        raise UnknownNameError("precision", name, list(PRECISIONS))
    return PRECISIONS[name]


def _q_kv_dims(m: ModelSpec) -> tuple[int, int]:
    return m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim


def layer_params(m: ModelSpec) -> int:
    """Parameters of one decoder layer: q/k/v (+bias), o, gate/up/down MLP, two RMSNorms."""
    h = m.hidden_size
    q, kv = _q_kv_dims(m)
    qkv = h * (q + 2 * kv) + ((q + 2 * kv) if m.qkv_bias else 0)
    return qkv + q * h + 3 * h * m.intermediate_size + 2 * h


def head_params(m: ModelSpec) -> int:
    """Parameters of the output head that are not shared with the input embedding."""
    h = m.hidden_size
    if m.head == "lm":
        return 0 if m.tie_word_embeddings else m.vocab_size * h
    if m.head == "prm-classifier":  # Linear(h, h) + ReLU + Linear(h, 2), with biases
        return h * h + h + 2 * h + 2
    return h + 1  # value head Linear(h, 1)


def embedding_params(m: ModelSpec) -> int:
    return m.vocab_size * m.hidden_size


def total_params(m: ModelSpec) -> int:
    """All parameters stored: embedding + layers + final norm + untied head."""
    return embedding_params(m) + m.num_layers * layer_params(m) + m.hidden_size + head_params(m)


def head_matmul_params(m: ModelSpec) -> int:
    """Parameters the output head multiplies by for one output position."""
    if m.head == "lm":
        return m.vocab_size * m.hidden_size
    return head_params(m)


def streamed_params_per_token(m: ModelSpec) -> int:
    """Parameters read from memory to decode one token: layers, final norm, output head.

    The input embedding is a single-row lookup; with tied embeddings that same matrix is read
    in full as the LM head, so it counts once either way.
    """
    return m.num_layers * layer_params(m) + m.hidden_size + head_matmul_params(m)


def weight_bytes(m: ModelSpec, p: Precision) -> float:
    """Bytes of all stored weights at the precision's weight width."""
    return total_params(m) * p.weight_bytes_per_param


def streamed_weight_bytes(m: ModelSpec, p: Precision) -> float:
    return streamed_params_per_token(m) * p.weight_bytes_per_param


def kv_bytes_per_token(m: ModelSpec, kv_bits: int) -> float:
    """K and V for one token over all layers (grouped-query: KV heads, not query heads)."""
    _, kv = _q_kv_dims(m)
    return 2 * m.num_layers * kv * kv_bits / 8


def kv_bytes(m: ModelSpec, kv_bits: int, tokens: ArrayLike) -> NDArray[np.float64]:
    return kv_bytes_per_token(m, kv_bits) * np.asarray(tokens, dtype=float)


def linear_macs_per_token(m: ModelSpec) -> int:
    """Matmul MACs for one token through the layers (not the output head)."""
    return m.num_layers * (layer_params(m) - 2 * m.hidden_size)


def attention_macs(m: ModelSpec, n_new: ArrayLike, ctx: ArrayLike) -> NDArray[np.float64]:
    """MACs of QK^T and PV for n_new query tokens appended after ctx cached tokens.

    Token j (0-based among the new ones) attends to ctx + j + 1 keys, so the pairs are
    n_new * ctx + n_new * (n_new + 1) / 2.
    """
    n = np.asarray(n_new, dtype=float)
    c = np.asarray(ctx, dtype=float)
    pairs = n * c + n * (n + 1) / 2
    return 2 * m.num_layers * m.num_attention_heads * m.head_dim * pairs


def forward_flops(
    m: ModelSpec, n_new: ArrayLike, ctx: ArrayLike, *, head_positions: ArrayLike = 1
) -> NDArray[np.float64]:
    """FLOPs of one forward pass over n_new tokens after ctx cached tokens.

    head_positions: how many positions go through the output head (1 for generation: only the
    last token's logits; n_new for a reward model that scores every step token).
    """
    n = np.asarray(n_new, dtype=float)
    macs = (
        linear_macs_per_token(m) * n
        + attention_macs(m, n, ctx)
        + head_matmul_params(m) * np.asarray(head_positions, dtype=float)
    )
    return 2 * macs


def forward_bytes(
    m: ModelSpec, p: Precision, n_new: ArrayLike, ctx: ArrayLike, *, kv_bits: int | None = None
) -> NDArray[np.float64]:
    """Bytes moved by one forward pass: weights once, KV of ctx read, KV of n_new written."""
    kvb = p.kv_bits if kv_bits is None else kv_bits
    n = np.asarray(n_new, dtype=float)
    c = np.asarray(ctx, dtype=float)
    return streamed_weight_bytes(m, p) + kv_bytes_per_token(m, kvb) * (c + n)
