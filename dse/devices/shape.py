"""Model arithmetic: parameter counts, bytes and FLOPs per token, KV cache size.

Pure functions of a ModelSpec and a Precision. Token counts and contexts broadcast as numpy
arrays. Conventions (per forward pass, batch 1):
- a multiply-accumulate is 2 FLOPs;
- decode of one token reads every matmul weight once, plus the KV cache of its context;
- the input embedding (and a learned position table) is a row lookup (not a full read); the
  LM head is a full read (tied or not); reward heads are small and read once;
- heads (ModelSpec.head): `lm` a generator's LM head; `prm-classifier` Linear(h, h) + ReLU +
  Linear(h, 2), `orm-scalar` Linear(h, h) + ReLU + Linear(h, 1) and `value` Linear(h, 1), all
  with biases; `lm-prm` a PRM that scores with its full LM head (the two-token probabilities of
  Math-Shepherd-style PRMs: every vocabulary logit is computed at a scored position, as
  Hugging Face and vLLM do); `implicit-prm` an implicit PRM (arXiv:2412.01981): the PRM's LM
  and its reference LM, of the same shape (`ModelSpec.reference_model`), both run over every
  scored token with their LM heads, so every weight, KV, layer and FLOP term counts two model
  copies (`model_copies`);
- the MLP has 3 matrices when gated (SwiGLU, GeGLU) and 2 when plain (GPT-2, OPT);
- a mixture of experts (Mixtral) stores every expert's MLP and a router per layer, but one
  token runs through the router and its top-k experts only: memory counts all experts
  (`total_params`, `weight_bytes`), what decode streams and computes counts the active ones
  (`streamed_params_per_token`, `streamed_weight_bytes`, `linear_macs_per_token`);
- attention FLOPs: QK^T and PV, 2 * 2 * heads * head_dim per (query, key) pair per layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dse.errors import SpecError, UnknownNameError
from dse.specs import ModelSpec
from dse.specs.model import KV_PRECISIONS as SPEC_KV_PRECISIONS
from dse.specs.model import LM_HEADS


@dataclass(frozen=True)
class Precision:
    """Bit widths of weights, activations and KV cache, and which compute peak applies."""

    name: str
    weight_bits: float  # per weight, scales included (llama.cpp q4_0: 4.5)
    activation_bits: int
    kv_bits: float  # per cached K or V value, scales included (llama.cpp q4_0 cache: 4.5)
    compute: str  # "bf16" | "fp16" | "int8" | "fp8": which datasheet peak the matmuls run at
    # the token embedding and the output head: quantised GPTQ/AWQ checkpoints and vLLM's fp8
    # keep lm_head and embed_tokens 16-bit, so a 4-bit Gemma-2-2B still streams a 1.2 GB head
    # per token; a serving profile whose stack quantises them too says so (quantizes_head)
    table_bits: float = 16

    @property
    def weight_bytes_per_param(self) -> float:
        return self.weight_bits / 8

    @property
    def kv_bytes_per_value(self) -> float:
        return self.kv_bits / 8


# KV stays 16-bit on GPUs for every scheme (vLLM's default kv_cache_dtype=auto) unless a
# system sets the role's KV precision (KV_PRECISIONS); the FPGA build sets its own KV width
# (dse.devices.fpga.FpgaBuild.kv_bits).
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
        # FPGA-only schemes (FPGA_ONLY_PRECISIONS): most published FPGA decoders stream
        # weights below 4 bits. Ternary weights {-1, 0, +1} carry log2(3) = 1.58 bits (BitNet
        # b1.58, TeLLMe on a KV260); 2- and 3-bit integer weights with 8-bit activations; and
        # float32 for HLS ports of llama2.c, whose checkpoints are float32. A design whose
        # packing or sparsity gives another average says so in its engine's
        # weight_bits_per_param.
        Precision("fp32", 32, 32, 32, "fp32"),
        Precision("w3a8", 3, 8, 16, "int8"),
        Precision("w2a8", 2, 8, 16, "int8"),
        Precision("w1.58a8", 1.58, 8, 16, "int8"),
        # llama.cpp k-quants (ggml-common.h): 256-weight super-blocks with 6-8-bit sub-block
        # scales. block_q2_K 84 B = 2.625 bpw, block_q3_K 110 B = 3.4375, block_q4_K 144 B =
        # 4.5, block_q5_K 176 B = 5.5, block_q6_K 210 B = 6.5625. A llama-quantize type is a
        # MIX of them (Q4_K_M: attn_v and half of ffn_down at q6_K, the rest q4_K; Q2_K: q2_K
        # with q3_K/q4_K tensors), so its bits per weight are the whole file's, as llama.cpp's
        # quantize README (examples/quantize/README.md, 2024) measures on Llama 2 7B: Q2_K
        # 3.35, Q3_K_M 3.91, Q4_K_M 4.84, Q5_K_M 5.68, Q6_K 6.56 (6.5625: every tensor q6_K).
        # The current README's Llama-3.1-8B table gives Q4_K_M 4.8944 and Q5_K_M 5.7036 (its
        # larger 128K-token table is a larger share of the file).
        Precision("q2_k", 3.35, 16, 16, "fp16"),
        Precision("q3_k_m", 3.91, 16, 16, "fp16"),
        Precision("q4_k_m", 4.84, 16, 16, "fp16"),
        Precision("q5_k_m", 5.68, 16, 16, "fp16"),
        Precision("q6_k", 6.5625, 16, 16, "fp16"),
    )
}
# Schemes only the FPGA kind runs (no GPU serving profile in the catalog models them).
FPGA_ONLY_PRECISIONS = ("fp32", "w3a8", "w2a8", "w1.58a8")

# EXL2 (turboderp/exllamav2 README: "supports 2, 3, 4, 5, 6 and 8-bit quantization" and mixes
# them within a model "to achieve any average bitrate between 2 and 8 bits per weight"): the
# name carries the average, scales included, e.g. exl2-4.65. Weight-only; fp16 GEMMs.
EXL2_BPW_RANGE = (2.0, 8.0)
PRECISION_FAMILIES: dict[str, str] = {"exl2": "exl2-<bits per weight, 2.0-8.0>, e.g. exl2-4.65"}
_EXL2 = re.compile(r"exl2-([0-9]+(?:\.[0-9]+)?)")


def precision_family(name: str) -> str | None:
    """The parametrised family a precision name belongs to ("exl2" for exl2-4.65), else None."""
    head = name.split("-", 1)[0]
    return head if head in PRECISION_FAMILIES and name.startswith(head + "-") else None


def precision(name: str) -> Precision:
    """The precision of a name: a fixed scheme (PRECISIONS) or a parametrised one (exl2-<bpw>).
    An EXL2 name whose bits per weight are malformed or outside 2.0-8.0 is a one-line
    SpecError; any other unknown name an UnknownNameError listing the valid ones. The one
    parser of precision names: every check of one goes through it."""
    if name in PRECISIONS:
        return PRECISIONS[name]
    if precision_family(name) == "exl2":
        m = _EXL2.fullmatch(name)
        lo, hi = EXL2_BPW_RANGE
        if m is None or not lo <= float(m.group(1)) <= hi:
            raise SpecError("", "precision", f"{name!r}: EXL2 takes exl2-<bits per weight> "
                            f"with {lo:g} <= bits <= {hi:g} (e.g. exl2-4.65)")
        return Precision(name, float(m.group(1)), 16, 16, "fp16")
    raise UnknownNameError("precision", name, [*PRECISIONS, *PRECISION_FAMILIES.values()])


# KV-cache precisions a GPU role may set (system key <role>_kv_precision), bits per cached value:
# defined beside the specs (dse.specs.model.KV_PRECISIONS, numpy-free for the system schema).
KV_PRECISIONS = SPEC_KV_PRECISIONS


def with_kv_precision(p: Precision, kv: str | None) -> Precision:
    """The precision with its KV cache at the named KV precision (None: unchanged)."""
    if kv is None:
        return p
    if kv not in KV_PRECISIONS:
        raise UnknownNameError("KV-cache precision", kv, list(KV_PRECISIONS))
    return replace(p, kv_bits=KV_PRECISIONS[kv])


def _q_kv_dims(m: ModelSpec) -> tuple[int, int]:
    return m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim


def norm_params(m: ModelSpec) -> int:
    """Parameters of one norm over hidden_size: RMSNorm a weight, LayerNorm a weight and a bias
    (a weight only without one: MPT's no_bias)."""
    return (2 if m.layernorm and m.norm_has_bias else 1) * m.hidden_size


def layer_norm_params(m: ModelSpec) -> int:
    """The norms of one decoder layer, Qwen3's per-head q/k RMSNorms (head_dim each) included."""
    return m.layer_norm_count * norm_params(m) + (2 * m.head_dim if m.qk_norm else 0)


def attention_params(m: ModelSpec) -> int:
    """q/k/v and o projections of one layer, with their biases."""
    h = m.hidden_size
    q, kv = _q_kv_dims(m)
    qkv = h * (q + 2 * kv) + ((q + 2 * kv) if m.qkv_bias else 0)
    return qkv + q * h + (h if m.attention_bias else 0)


def mlp_params(m: ModelSpec) -> int:
    """MLP of one layer (of one expert in a mixture of experts): gated is gate + up (h x I)
    and down (I x h); plain is up and down.

    Biases (mlp_bias) are one per output: gated 2 I + h, plain I + h.
    """
    h, i = m.hidden_size, m.intermediate_size
    matrices = 3 if m.gated_mlp else 2
    bias = ((2 if m.gated_mlp else 1) * i + h) if m.mlp_bias else 0
    return matrices * h * i + bias


def router_params(m: ModelSpec) -> int:
    """The expert router of one layer, Linear(h, experts) without bias (Mixtral's gate); 0
    for a dense model."""
    return m.hidden_size * m.num_experts if m.num_experts else 0


def layer_params(m: ModelSpec) -> int:
    """Parameters of one decoder layer as stored: attention, every expert's MLP (one for a
    dense model), the router and the norms."""
    return attention_params(m) + m.experts * mlp_params(m) + router_params(m) + layer_norm_params(m)


def active_layer_params(m: ModelSpec) -> int:
    """Parameters one token runs through in one layer: attention, the router and its top-k
    experts' MLPs, the norms (= layer_params for a dense model)."""
    return (attention_params(m) + m.active_experts * mlp_params(m) + router_params(m)
            + layer_norm_params(m))


def projection_params(m: ModelSpec) -> int:
    """OPT-350m's project_in (embedding_dim -> hidden) and project_out (hidden -> embedding_dim),
    no biases; 0 when the embedding is hidden_size wide."""
    return 0 if m.embed_dim == m.hidden_size else 2 * m.embed_dim * m.hidden_size


def final_norm_params(m: ModelSpec) -> int:
    return norm_params(m) if m.has_final_norm else 0


def model_copies(m: ModelSpec) -> int:
    """Models of this shape one scoring call runs: 2 for an implicit PRM (the PRM and its
    reference LM, checked to share its shape), else 1."""
    return 2 if m.head == "implicit-prm" else 1


def has_lm_head(m: ModelSpec) -> bool:
    """The output head is the full LM head (vocab x embedding width): a generator's, or a
    PRM's that scores with token probabilities (`lm-prm`, `implicit-prm`)."""
    return m.head in LM_HEADS


def head_params(m: ModelSpec) -> int:
    """Parameters of one model copy's output head that are not shared with the input
    embedding."""
    h = m.hidden_size
    if has_lm_head(m):
        weight = 0 if m.tie_word_embeddings else m.vocab_size * m.embed_dim
        return weight + (m.vocab_size if m.lm_head_bias else 0)
    if m.head == "prm-classifier":  # Linear(h, h) + ReLU + Linear(h, 2), with biases
        return h * h + h + 2 * h + 2
    if m.head == "orm-scalar":  # Linear(h, h) + ReLU + Linear(h, 1), with biases
        return h * h + h + h + 1
    return h + 1  # value head Linear(h, 1)


def position_params(m: ModelSpec) -> int:
    """The learned position table (rows x hidden); RoPE has no weights."""
    return m.position_table_rows * m.hidden_size if m.position_table_rows else 0


def embedding_params(m: ModelSpec) -> int:
    """Token table (vocab x embedding width) and the learned position table, both looked up."""
    return m.vocab_size * m.embed_dim + position_params(m)


def body_params(m: ModelSpec) -> int:
    """Parameters every token streams through apart from the head: layers, the embedding
    projections and the final norm."""
    return m.num_layers * layer_params(m) + projection_params(m) + final_norm_params(m)


def active_body_params(m: ModelSpec) -> int:
    """body_params with each layer's active experts only (what one token streams)."""
    return m.num_layers * active_layer_params(m) + projection_params(m) + final_norm_params(m)


def total_params(m: ModelSpec) -> int:
    """All parameters stored: embeddings + layers + projections + final norm + untied head,
    for each model copy (an implicit PRM holds its reference LM too)."""
    return model_copies(m) * (embedding_params(m) + body_params(m) + head_params(m))


def active_params(m: ModelSpec) -> int:
    """Parameters active for one token, as MoE model cards count them (embeddings included):
    total_params with each layer's top-k experts only (= total_params for a dense model)."""
    return model_copies(m) * (embedding_params(m) + active_body_params(m) + head_params(m))


def head_matmul_params(m: ModelSpec) -> int:
    """Parameters the output heads multiply by (a bias counted as one MAC per output) for one
    output position, over the model copies (an implicit PRM: both LM heads)."""
    if has_lm_head(m):
        one = m.vocab_size * m.embed_dim + (m.vocab_size if m.lm_head_bias else 0)
    else:
        one = head_params(m)
    return model_copies(m) * one


def streamed_params_per_token(m: ModelSpec) -> int:
    """Parameters read from memory to decode one token: layers (their active experts),
    projections, final norm, head, of each model copy.

    The input embedding and a learned position table are single-row lookups; with tied
    embeddings the token table is read in full as the LM head, so it counts once either way.
    """
    return model_copies(m) * active_body_params(m) + head_matmul_params(m)


def _table_params(m: ModelSpec) -> tuple[int, int]:
    """(stored, streamed per token) parameters of the token tables and LM heads, which
    quantised checkpoints keep at `Precision.table_bits`, over the model copies."""
    table = m.vocab_size * m.embed_dim
    if not has_lm_head(m):
        return table, 0
    head = 0 if m.tie_word_embeddings else table
    return model_copies(m) * (table + head), model_copies(m) * table


def weight_bytes(m: ModelSpec, p: Precision) -> float:
    """Bytes of all stored weights: the token table and LM head at the precision's table
    width, everything else at its weight width."""
    table, _ = _table_params(m)
    return (total_params(m) - table) * p.weight_bytes_per_param + table * p.table_bits / 8


def streamed_weight_bytes(m: ModelSpec, p: Precision) -> float:
    """Bytes read per decoded token: the body at the weight width, the head at the table's."""
    _, head = _table_params(m)
    return ((streamed_params_per_token(m) - head) * p.weight_bytes_per_param
            + head * p.table_bits / 8)


def layers_run(m: ModelSpec) -> int:
    """Decoder layers one forward pass runs (an implicit PRM: its own and its reference's)."""
    return model_copies(m) * m.num_layers


def kv_bytes_per_token(m: ModelSpec, kv_bits: float) -> float:
    """K and V for one token over all layers (grouped-query: KV heads, not query heads), of
    each model copy (an implicit PRM's reference keeps its own cache)."""
    _, kv = _q_kv_dims(m)
    return 2 * layers_run(m) * kv * kv_bits / 8


def kv_bytes(m: ModelSpec, kv_bits: float, tokens: ArrayLike) -> NDArray[np.float64]:
    return kv_bytes_per_token(m, kv_bits) * np.asarray(tokens, dtype=float)


def linear_macs_per_token(m: ModelSpec) -> int:
    """Matmul MACs for one token through the layers (their active experts and the router) and
    the embedding projections (not the output head), of each model copy; a bias add counts as
    one MAC per output (at most 0.1% high)."""
    return model_copies(m) * (m.num_layers * (active_layer_params(m) - layer_norm_params(m))
                              + projection_params(m))


def attention_macs_per_pair(m: ModelSpec) -> int:
    """MACs of QK^T and PV for one (query, key) pair over every layer run: 2 x heads x
    head_dim per layer."""
    return 2 * layers_run(m) * m.num_attention_heads * m.head_dim


def attention_macs(m: ModelSpec, n_new: ArrayLike, ctx: ArrayLike) -> NDArray[np.float64]:
    """MACs of QK^T and PV for n_new query tokens appended after ctx cached tokens.

    Token j (0-based among the new ones) attends to ctx + j + 1 keys, so the pairs are
    n_new * ctx + n_new * (n_new + 1) / 2.
    """
    n = np.asarray(n_new, dtype=float)
    c = np.asarray(ctx, dtype=float)
    pairs = n * c + n * (n + 1) / 2
    return attention_macs_per_pair(m) * pairs


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
    m: ModelSpec, p: Precision, n_new: ArrayLike, ctx: ArrayLike, *, kv_bits: float | None = None
) -> NDArray[np.float64]:
    """Bytes moved by one forward pass: weights once, KV of ctx read, KV of n_new written."""
    kvb = p.kv_bits if kv_bits is None else kv_bits
    n = np.asarray(n_new, dtype=float)
    c = np.asarray(ctx, dtype=float)
    return streamed_weight_bytes(m, p) + kv_bytes_per_token(m, kvb) * (c + n)
