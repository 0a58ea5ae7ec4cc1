"""The LLM architecture spec and the Hugging Face config.json importer."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.core.arguments import path as check_path
from dse.core.limits import MAX_TP
from dse.core.roles import DEVICE_ROLES
from dse.errors import SpecError
from dse.specs.schema import (
    SCHEMA_VERSION,
    Spec,
    build_spec,
    parse_json,
    pos,
    read_text,
    register_kind,
    spec_field,
)

ROLES: tuple[str, ...] = tuple(r.value for r in DEVICE_ROLES)  # the roles a model may take
ARCHITECTURES = ("qwen2", "llama", "mistral", "qwen3", "gpt2", "opt", "gptj", "phi3", "gemma2",
                 "falcon", "mpt", "mixtral")
MLP_KINDS = ("gated", "plain")
NORM_KINDS = ("rmsnorm", "layernorm")
POSITION_KINDS = ("rope", "learned", "alibi")
# KV-cache precisions a GPU role may set (system key <role>_kv_precision): bits per cached value,
# scales included. vLLM --kv-cache-dtype fp8 (E4M3/E5M2, per-tensor scale); int8 as
# TensorRT-LLM's INT8 KV cache; llama.cpp --cache-type-k/-v q8_0 and q4_0 are the GGUF blocks
# (34 and 18 bytes per 32 values). "16": the model dtype (vLLM's kv_cache_dtype=auto).
KV_PRECISIONS: dict[str, float] = {"16": 16, "fp8": 8, "int8": 8, "q8_0": 8.5, "q4_0": 4.5}
# ProcessBench (arXiv:2412.06559) subsets, easiest to hardest: GSM8K, MATH, OlympiadBench,
# Omni-MATH. A PRM's F1 on each is how well it finds the first wrong step at that difficulty.
PROCESSBENCH_SUBSETS = ("gsm8k", "math", "olympiadbench", "omnimath")
# Output heads (dse.devices.shape counts each): a generator's `lm`; a PRM's reward head, which
# is a small classifier (`prm-classifier` Linear(h,h)+ReLU+Linear(h,2), Qwen2.5-Math-PRM;
# `orm-scalar` Linear(h,h)+ReLU+Linear(h,1), Qwen2ForRewardModel; `value` Linear(h,1), Skywork)
# or the LM head itself: `lm-prm` reads two tokens' probabilities off it (Math-Shepherd's
# '+'/'-'), `implicit-prm` takes the log-likelihood ratio of the PRM's LM to its reference LM
# (EurusPRM, arXiv:2412.01981), so it names that reference (`reference_model`).
HEADS = ("lm", "prm-classifier", "orm-scalar", "value", "lm-prm", "implicit-prm")
LM_HEADS = ("lm", "lm-prm", "implicit-prm")  # heads that are the full vocab x hidden LM head
# the keys that fix a model's shape (what an implicit PRM and its reference must share)
SHAPE_KEYS = ("architecture", "tokenizer_family", "hidden_size", "num_layers",
              "num_attention_heads", "num_kv_heads", "head_dim", "intermediate_size",
              "vocab_size", "tie_word_embeddings", "qkv_bias", "mlp_kind", "mlp_bias",
              "attention_bias", "norm", "norm_bias", "norms_per_layer", "final_norm", "qk_norm",
              "position_embedding", "position_table_rows", "embedding_dim", "lm_head_bias",
              "num_experts", "experts_per_token")


@dataclass(frozen=True)
class ModelSpec(Spec):
    hf_id: str = spec_field(help="Hugging Face model id")
    architecture: str = spec_field(choices=ARCHITECTURES)
    tokenizer_family: str = spec_field(help="draft and target must share one")
    roles: tuple[str, ...] = spec_field(help=f"a non-empty subset of {', '.join(ROLES)}")
    head: str = spec_field(choices=HEADS, help="lm: a generator's LM head; a PRM's: "
                           "prm-classifier, orm-scalar, value, lm-prm (scores with two "
                           "tokens' LM-head probabilities) or implicit-prm (log-likelihood "
                           "ratio to reference_model)")
    hidden_size: int = pos()
    num_layers: int = pos()
    num_attention_heads: int = pos()
    num_kv_heads: int = pos(help="divides num_attention_heads (grouped-query attention)")
    head_dim: int = pos()
    intermediate_size: int = pos()
    vocab_size: int = pos()
    tie_word_embeddings: bool = spec_field()
    qkv_bias: bool = spec_field()
    max_position_embeddings: int = pos()
    published_params: float | None = pos(help="parameter count the model card states")
    # Optional shape keys; absent, each reads as the Llama/Qwen2 shape (the properties below give
    # the value in force).
    mlp_kind: str | None = spec_field(choices=MLP_KINDS, help="gated: gate, up and down "
                                      "matrices (SwiGLU/GeGLU); plain: up and down (GPT-2, "
                                      "OPT); absent: gated")
    mlp_bias: bool | None = spec_field(help="biases on the MLP matrices; absent: false")
    attention_bias: bool | None = spec_field(help="a bias on the attention output projection "
                                             "too (needs qkv_bias); absent: false")
    norm: str | None = spec_field(choices=NORM_KINDS, help="rmsnorm (a weight) or layernorm "
                                  "(a weight and a bias); absent: rmsnorm")
    norm_bias: bool | None = spec_field(help="a LayerNorm has a bias (MPT's no_bias LayerNorm "
                                        "has none); absent: true")
    norms_per_layer: int | None = pos(hi=8, help="norms in one decoder layer (GPT-J: 1, "
                                      "Gemma-2: 4); absent: 2")
    final_norm: bool | None = spec_field(help="a norm after the last layer (OPT-350m has "
                                         "none); absent: true")
    qk_norm: bool | None = spec_field(help="an RMSNorm of head_dim on queries and on keys in "
                                      "every layer (Qwen3); absent: false")
    position_embedding: str | None = spec_field(
        choices=POSITION_KINDS, help="rope or alibi (no weights), or learned (a table of "
        "position_table_rows x hidden_size, one row looked up per token); absent: rope")
    position_table_rows: int | None = pos(help="rows of the learned position table (GPT-2: "
                                          "n_positions; OPT: max_position_embeddings + 2)")
    embedding_dim: int | None = pos(help="width of the token embedding when it is projected to "
                                    "hidden_size and back (OPT-350m: 512); absent: hidden_size")
    lm_head_bias: bool | None = spec_field(help="a bias on the LM head (GPT-J); absent: false")
    num_experts: int | None = pos(hi=1024, help="MLP experts per layer of a mixture of experts "
                                  "(Mixtral: 8), each of intermediate_size, with a router "
                                  "Linear(hidden_size, num_experts); absent: a dense MLP")
    experts_per_token: int | None = pos(hi=1024, help="experts each token runs through (top-k; "
                                        "Mixtral: 2); given with num_experts")
    processbench_f1: Mapping[str, float] | None = spec_field(
        lo=0.0, hi=100.0, help="a PRM's published ProcessBench F1 (percent) per subset "
        f"({', '.join(PROCESSBENCH_SUBSETS)}): how well it finds a step's error, which the "
        "accuracy model's PRM discrimination follows; absent: the catalog PRMs' mean")
    reference_model: str | None = spec_field(
        help="an implicit PRM's reference LM (a catalog model name, of the PRM's shape), whose "
        "forward pass over the scored tokens the PRM's cost includes; only with head "
        "\"implicit-prm\", which needs it")

    kind = "model"

    @property
    def gated_mlp(self) -> bool:
        return self.mlp_kind in (None, "gated")

    @property
    def layernorm(self) -> bool:
        return self.norm == "layernorm"

    @property
    def norm_has_bias(self) -> bool:
        return self.norm_bias is None or self.norm_bias

    @property
    def experts(self) -> int:
        """MLPs stored per layer (1: dense)."""
        return self.num_experts or 1

    @property
    def active_experts(self) -> int:
        """MLPs one token runs through per layer (1: dense)."""
        return self.experts_per_token or 1

    @property
    def learned_positions(self) -> bool:
        return self.position_embedding == "learned"

    @property
    def layer_norm_count(self) -> int:
        return 2 if self.norms_per_layer is None else self.norms_per_layer

    @property
    def has_final_norm(self) -> bool:
        return self.final_norm is None or self.final_norm

    @property
    def embed_dim(self) -> int:
        """Width of the token embedding and of the LM head's input."""
        return self.hidden_size if self.embedding_dim is None else self.embedding_dim


def _check_model(path: object, v: dict[str, Any]) -> None:
    bad = [r for r in v["roles"] if r not in ROLES]
    if bad or not v["roles"]:
        raise SpecError(path, "roles", f"roles must be a non-empty subset of {ROLES}, got {bad}")
    if v["num_attention_heads"] % v["num_kv_heads"]:
        raise SpecError(path, "num_kv_heads", "must divide num_attention_heads")
    if ("prm" in v["roles"]) != (v["head"] != "lm"):
        raise SpecError(path, "head", "a PRM has a reward head; a generator has head 'lm'")
    if (v["head"] == "implicit-prm") != (v["reference_model"] is not None):
        raise SpecError(path, "reference_model", "given exactly when head = \"implicit-prm\" "
                        "(the reference LM its log-likelihood ratio is taken against)")
    learned = v["position_embedding"] == "learned"
    if learned != (v["position_table_rows"] is not None):
        raise SpecError(path, "position_table_rows",
                        "given exactly when position_embedding = \"learned\"")
    f1 = v["processbench_f1"]
    if f1 is not None:
        if "prm" not in v["roles"]:
            raise SpecError(path, "processbench_f1", "only a PRM (roles include \"prm\") is "
                            "scored on ProcessBench")
        unknown = sorted(set(f1) - set(PROCESSBENCH_SUBSETS))
        if unknown:
            raise SpecError(path, f"processbench_f1.{unknown[0]}", "unknown ProcessBench "
                            f"subset; known: {', '.join(PROCESSBENCH_SUBSETS)}")
    if (v["num_experts"] is None) != (v["experts_per_token"] is None):
        raise SpecError(path, "experts_per_token", "num_experts and experts_per_token come "
                        "together (a mixture of experts) or not at all (a dense MLP)")
    if v["num_experts"] is not None and v["experts_per_token"] > v["num_experts"]:
        raise SpecError(path, "experts_per_token", f"{v['experts_per_token']} active of "
                        f"{v['num_experts']} experts: at most num_experts")
    if v["norm_bias"] is not None and v["norm"] != "layernorm":
        raise SpecError(path, "norm_bias", "only a LayerNorm has a bias (norm = \"layernorm\")")
    if v["attention_bias"] and not v["qkv_bias"]:
        raise SpecError(path, "attention_bias", "a bias on every attention projection needs "
                        "qkv_bias = true")


register_kind("model", ModelSpec, check=_check_model)


# What a placement whose tensor-parallel degree cannot run says first (60 characters with its
# colon: the sweep counts infeasibility reasons by that many).
TP_REASON = "the tensor-parallel degree cannot split the attention heads"


def tp_splits(m: ModelSpec, tp: int) -> bool:
    """Whether tensor parallelism of degree `tp` splits the model's attention as vLLM requires
    (vllm/config: the attention heads divisible by tensor_parallel_size; its QKVParallelLinear:
    the KV heads divisible by tp, or tp a multiple of them, each KV head then replicated)."""
    kv = m.num_kv_heads
    return m.num_attention_heads % tp == 0 and (kv % tp == 0 or tp % kv == 0)


def tp_misfit(m: ModelSpec, tp: int, *, max_tp: int = MAX_TP) -> str | None:
    """Why tensor parallelism of degree `tp` cannot split the model's attention (tp_splits),
    with the degrees up to `max_tp` that can; None when it can. E.g. Qwen2.5-Math-7B (28
    attention heads, 4 KV heads) at tp=3: 28 % 3 != 0; valid 1, 2, 4, 28 (7 and 14 divide 28
    but neither divide 4 nor are multiples of it)."""
    if tp_splits(m, tp):
        return None
    h, kv = m.num_attention_heads, m.num_kv_heads
    why = (f"tp={tp} does not divide the {h} attention heads" if h % tp else
           f"tp={tp} neither divides the {kv} KV heads nor is a multiple of them")
    valid = ", ".join(str(t) for t in range(1, max_tp + 1) if tp_splits(m, t))
    return (f"{m.name} has {h} attention heads and {kv} KV heads: {why} (vLLM refuses it); "
            f"valid tp: {valid}")


def check_reference(prm: ModelSpec, models: Mapping[str, ModelSpec]) -> None:
    """An implicit PRM's reference_model names a generator (head "lm") among `models` with the
    PRM's shape (every SHAPE_KEYS value equal), so the cost model counts the reference as a
    second copy of the PRM; a SpecError naming the PRM's file otherwise. No-op for other
    heads."""
    ref_name = prm.reference_model
    if ref_name is None:
        return
    ref = models.get(ref_name)
    if ref is None:
        raise SpecError(prm.path, "reference_model", f"unknown model {ref_name!r}; valid: "
                        f"{', '.join(sorted(models)) or '(none)'}")
    if ref.head != "lm":
        raise SpecError(prm.path, "reference_model", f"{ref_name!r} has head {ref.head!r}; "
                        "the reference is a language model (head \"lm\")")
    diff = [k for k in SHAPE_KEYS if getattr(prm, k) != getattr(ref, k)]
    if diff:
        raise SpecError(prm.path, "reference_model", f"{ref_name!r} differs in "
                        + ", ".join(f"{k} ({getattr(ref, k)!r} vs {getattr(prm, k)!r})"
                                    for k in diff)
                        + "; the reference must share the PRM's shape")

# --------------------------------------------------------------- Hugging Face config.json

# model_type -> architecture; the Llama-style types (Mixtral: Mistral's layer with a mixture of
# experts) share one reader, GPT-2, OPT, Falcon and MPT have their own
_LLAMA_STYLE = {"qwen2": "qwen2", "llama": "llama", "mistral": "mistral", "qwen3": "qwen3",
                "mixtral": "mixtral"}
# Falcon's original remote-code configs (RWForCausalLM): RefinedWebModel (7B), RefinedWeb (40B)
_FALCON_TYPES = ("falcon", "RefinedWebModel", "RefinedWeb")
_SUPPORTED = (*_LLAMA_STYLE, "gpt2", "opt", *_FALCON_TYPES, "mpt")
# a config without a model_type is read by its architectures class
_BY_ARCHITECTURE = {"FalconForCausalLM": "falcon", "RWForCausalLM": "falcon",
                    "MPTForCausalLM": "mpt", "MixtralForCausalLM": "mixtral"}


class _Config:
    """A parsed config.json: typed look-ups whose errors name the file and the key."""

    def __init__(self, path: Path, cfg: dict[str, Any]) -> None:
        self.path, self.cfg = path, cfg

    def req(self, key: str) -> Any:
        if key not in self.cfg:
            raise SpecError(self.path, key, "missing key")
        return self.cfg[key]

    def get(self, key: str, default: Any) -> Any:
        value = self.cfg.get(key)
        return default if value is None else value

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise SpecError(self.path, key, f"expected true or false, got {value!r}")
        return value


def model_from_hf_config(path: str | Path) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face config.json (model_type llama / qwen2 / qwen3 /
    mistral / mixtral / gpt2 / opt / falcon (RefinedWeb, RefinedWebModel) / mpt; without a
    model_type, by its `architectures` class); the values go through the catalog's checker,
    so a bad one is one line naming the key."""
    p = check_path("path", path)  # a public function (dse.model_from_hf_config)
    cfg = parse_json(read_text(p), p, values=False)
    if not isinstance(cfg, dict):
        raise SpecError(p, "", "expected a JSON object")
    model_type = cfg.get("model_type")
    archs_raw = cfg.get("architectures") or []
    if model_type is None and isinstance(archs_raw, list):
        model_type = next((_BY_ARCHITECTURE[a] for a in archs_raw if a in _BY_ARCHITECTURE),
                          None)
    if not isinstance(model_type, str) or model_type not in _SUPPORTED:
        shown = model_type if isinstance(model_type, str | None) else type(model_type).__name__
        raise SpecError(
            p, "model_type", f"unsupported {shown!r}; supported: {', '.join(_SUPPORTED)}"
        )
    c = _Config(p, cfg)
    readers = {"gpt2": _gpt2_keys, "opt": _opt_keys, "mpt": _mpt_keys,
               **dict.fromkeys(_FALCON_TYPES, _falcon_keys)}
    raw, names = readers.get(model_type, _llama_keys)(c, model_type)
    if not isinstance(archs_raw, list) or not all(isinstance(a, str) for a in archs_raw):
        raise SpecError(p, "architectures", "expected a list of class names (strings), got "
                        f"{str(archs_raw)[:80]}")
    archs = " ".join(archs_raw)
    is_prm = "Reward" in archs or "PRM" in archs or "ProcessReward" in archs
    raw = {
        "hf_id": str(cfg.get("_name_or_path") or p.parent.name),
        "roles": ["prm"] if is_prm else ["draft", "target"],
        # Qwen2ForRewardModel (Qwen2.5-Math-RM) scores with Linear(h,h)+ReLU+Linear(h,1)
        "head": ("orm-scalar" if "Qwen2ForRewardModel" in archs_raw else "prm-classifier")
        if is_prm else "lm",
        **raw,
    }
    stem = re.sub(r"[^a-z0-9._-]+", "-", (p.parent.name or p.stem).lower()).strip("-") or "model"
    data = {
        "schema_version": SCHEMA_VERSION,
        "kind": "model",
        "name": stem,
        "description": f"from {p}",
        "sources": {"*": f"Hugging Face config.json at {p}"},
        **raw,
    }
    try:
        spec = build_spec(p, data)
    except SpecError as e:  # name the key as the user's file spells it
        key = names.get(e.key, e.key)
        if key == e.key:
            raise
        raise SpecError(p, key, e.reason) from None
    assert isinstance(spec, ModelSpec)
    return spec


def _head_dim(c: _Config, hidden: Any, heads: Any) -> Any:
    explicit = c.cfg.get("head_dim")
    if explicit:
        return explicit
    for key, value in (("hidden_size", hidden), ("num_attention_heads", heads)):
        if not _is_int(value) or value <= 0:
            raise SpecError(c.path, key, f"expected a positive integer, got {value!r}")
    return hidden // heads


def _llama_keys(c: _Config, model_type: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Llama / Qwen2 / Qwen3 / Mistral: RoPE, gated SiLU MLP, RMSNorm, grouped-query KV."""
    hidden = c.req("hidden_size")
    heads = c.req("num_attention_heads")
    vocab = c.req("vocab_size")
    family = {"qwen2": "qwen2", "qwen3": "qwen2", "mistral": "mistral", "mixtral": "mistral"}.get(
        model_type, "llama3" if _is_int(vocab) and vocab >= 128000 else "llama2"
    )
    bias = c.flag("attention_bias", model_type == "qwen2")  # Qwen2: q/k/v biases, no key
    raw: dict[str, Any] = {
        "architecture": _LLAMA_STYLE[model_type],
        "tokenizer_family": family,
        "hidden_size": hidden,
        "num_layers": c.req("num_hidden_layers"),
        "num_attention_heads": heads,
        "num_kv_heads": c.cfg.get("num_key_value_heads", heads),
        "head_dim": _head_dim(c, hidden, heads),
        "intermediate_size": c.req("intermediate_size"),
        "vocab_size": vocab,
        "tie_word_embeddings": c.flag("tie_word_embeddings", False),
        "qkv_bias": bias,
        "max_position_embeddings": c.req("max_position_embeddings"),
    }
    if model_type in ("llama", "qwen3") and bias:  # HF attention_bias: q, k, v and o
        raw["attention_bias"] = True
    if c.flag("mlp_bias", False):
        raw["mlp_bias"] = True
    if model_type == "qwen3":
        raw["qk_norm"] = True
    names = {"num_layers": "num_hidden_layers", "num_kv_heads": "num_key_value_heads"}
    if model_type == "mixtral":  # a router (gate, no bias) and num_local_experts MLPs per layer
        raw["num_experts"] = c.req("num_local_experts")
        raw["experts_per_token"] = c.req("num_experts_per_tok")
        names |= {"num_experts": "num_local_experts", "experts_per_token": "num_experts_per_tok"}
    return raw, names


def _first(c: _Config, *keys: str) -> tuple[Any, str]:
    """The value of the first of keys the config has (old and new spellings), and that key;
    none: a missing-key error naming the first."""
    for key in keys:
        if c.cfg.get(key) is not None:
            return c.cfg[key], key
    raise SpecError(c.path, keys[0], "missing key")


# transformers FalconConfig: max_position_embeddings defaults to 2048 (the pre-training length)
FALCON_DEFAULT_POSITIONS = 2048


def _falcon_keys(c: _Config, model_type: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Falcon (transformers FalconConfig / FalconDecoderLayer; the RW remote-code configs name
    the keys n_layer, n_head, n_head_kv). Fused query_key_value: multi-query (1 KV head) unless
    new_decoder_architecture, which has num_kv_heads groups (RefinedWeb = Falcon-40B's is
    new); one `bias` for every projection; a plain GELU MLP of ffn_hidden_size (absent 4h);
    LayerNorm. Parallel attention (attention and MLP read the same input) needs one norm per
    layer, two with the new decoder (ln_attn, ln_mlp; num_ln_in_parallel_attn), two when
    sequential. RoPE unless alibi; LM head tied unless the config says otherwise."""
    hidden = c.req("hidden_size")
    heads, heads_key = _first(c, "num_attention_heads", "n_head")
    layers, layers_key = _first(c, "num_hidden_layers", "n_layer")
    new_arch = c.flag("new_decoder_architecture", model_type == "RefinedWeb")
    if new_arch:
        kv, kv_key = _first(c, "num_kv_heads", "n_head_kv")
    else:
        kv, kv_key = (1, "multi_query") if c.flag("multi_query", True) else (heads, heads_key)
    if new_arch:
        norms = 1 if c.get("num_ln_in_parallel_attn", 2) == 1 else 2
    else:
        norms = 1 if c.flag("parallel_attn", True) else 2
    bias = c.flag("bias", False)
    raw: dict[str, Any] = {
        "architecture": "falcon",
        "tokenizer_family": "falcon",
        "hidden_size": hidden,
        "num_layers": layers,
        "num_attention_heads": heads,
        "num_kv_heads": kv,
        "head_dim": _head_dim(c, hidden, heads),
        "intermediate_size": c.get("ffn_hidden_size", 4 * hidden if _is_int(hidden) else None),
        "vocab_size": c.req("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
        "qkv_bias": bias,
        "max_position_embeddings": c.get("max_position_embeddings", FALCON_DEFAULT_POSITIONS),
        "mlp_kind": "plain",
        "mlp_bias": bias,
        "attention_bias": bias,
        "norm": "layernorm",
        "norms_per_layer": norms,
        "position_embedding": "alibi" if c.flag("alibi", False) else "rope",
    }
    names = {"num_layers": layers_key, "num_attention_heads": heads_key, "num_kv_heads": kv_key,
             "intermediate_size": "ffn_hidden_size"}
    return raw, names


# MPT's attn_config.attn_type -> how many KV heads (llm-foundry: multihead, multiquery,
# grouped_query with kv_n_heads)
_MPT_ATTN = ("multihead_attention", "multiquery_attention", "grouped_query_attention")


def _mpt_keys(c: _Config, model_type: str) -> tuple[dict[str, Any], dict[str, str]]:
    """MPT (mosaicml MPTConfig): d_model, n_heads, n_layers; a fused Wqkv and out_proj; a plain
    GELU MLP of expansion_ratio x d_model (ffn_config.ffn_hidden_size where given; mptglu is
    gated); LayerNorm (low_precision_layernorm) with no bias when no_bias, which also drops
    every projection bias; ALiBi or RoPE (no position table) or else, with learned_pos_emb, a
    learned table of max_seq_len rows; the LM head is the token table (tied)."""
    hidden = c.req("d_model")
    heads = c.req("n_heads")
    attn = c.get("attn_config", {})
    ffn = c.get("ffn_config", {})
    for key, value in (("attn_config", attn), ("ffn_config", ffn)):
        if not isinstance(value, dict):
            raise SpecError(c.path, key, f"expected a table, got {str(value)[:60]}")
    attn_type = attn.get("attn_type") or "multihead_attention"
    if attn_type not in _MPT_ATTN:
        raise SpecError(c.path, "attn_config.attn_type", f"unsupported {attn_type!r}; "
                        f"supported: {', '.join(_MPT_ATTN)}")
    kv = {"multihead_attention": heads, "multiquery_attention": 1}.get(
        attn_type, attn.get("kv_n_heads", heads))
    ratio = c.get("expansion_ratio", 4)
    inner = ffn.get("ffn_hidden_size") or (
        int(ratio * hidden) if _is_int(hidden) and isinstance(ratio, int | float) else ratio)
    bias = not c.flag("no_bias", False)
    alibi = attn.get("alibi", False) is True
    rope = attn.get("rope", False) is True  # llm-foundry's later option
    learned = not (alibi or rope) and c.flag("learned_pos_emb", True)
    positions = c.req("max_seq_len")
    norm = "rmsnorm" if "rmsnorm" in str(c.get("norm_type", "layernorm")) else "layernorm"
    raw: dict[str, Any] = {
        "architecture": "mpt",
        "tokenizer_family": "gpt-neox" if "neox" in str(c.get("tokenizer_name", "neox")) else
        str(c.get("tokenizer_name", "")),
        "hidden_size": hidden,
        "num_layers": c.req("n_layers"),
        "num_attention_heads": heads,
        "num_kv_heads": kv,
        "head_dim": _head_dim(c, hidden, heads),
        "intermediate_size": inner,
        "vocab_size": c.req("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
        "qkv_bias": bias,
        "max_position_embeddings": positions,
        "mlp_kind": "gated" if ffn.get("ffn_type") == "mptglu" else "plain",
        "mlp_bias": bias,
        "attention_bias": bias,
        "norm": norm,
        "position_embedding": "learned" if learned else "alibi" if alibi else "rope",
    }
    if norm == "layernorm" and not bias:
        raw["norm_bias"] = False
    if learned:
        raw["position_table_rows"] = positions
    names = {"hidden_size": "d_model", "num_layers": "n_layers", "num_attention_heads":
             "n_heads", "num_kv_heads": "attn_config.kv_n_heads", "intermediate_size":
             "expansion_ratio", "max_position_embeddings": "max_seq_len",
             "position_table_rows": "max_seq_len"}
    return raw, names


def _gpt2_keys(c: _Config, model_type: str) -> tuple[dict[str, Any], dict[str, str]]:
    """GPT-2 (transformers GPT2Config): learned positions, LayerNorm, Conv1D projections with
    biases, a 2-matrix GELU MLP of n_inner (absent: 4 x n_embd), LM head tied by default."""
    hidden = c.req("n_embd")
    heads = c.req("n_head")
    positions = c.req("n_positions")
    inner = c.get("n_inner", 4 * hidden if _is_int(hidden) else None)
    raw = {
        "architecture": "gpt2",
        "tokenizer_family": "gpt2",
        "hidden_size": hidden,
        "num_layers": c.req("n_layer"),
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": _head_dim(c, hidden, heads),
        "intermediate_size": inner,
        "vocab_size": c.req("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
        "qkv_bias": True,
        "max_position_embeddings": positions,
        "mlp_kind": "plain",
        "mlp_bias": True,
        "attention_bias": True,
        "norm": "layernorm",
        "position_embedding": "learned",
        "position_table_rows": positions,
    }
    names = {"hidden_size": "n_embd", "num_layers": "n_layer", "num_attention_heads": "n_head",
             "num_kv_heads": "n_head", "intermediate_size": "n_inner",
             "max_position_embeddings": "n_positions", "position_table_rows": "n_positions"}
    return raw, names


# transformers OPTLearnedPositionalEmbedding: the table has max_position_embeddings + 2 rows
# (fairseq's padding offset)
OPT_POSITION_OFFSET = 2


def _opt_keys(c: _Config, model_type: str) -> tuple[dict[str, Any], dict[str, str]]:
    """OPT (transformers OPTConfig): learned positions offset by 2, LayerNorm, biases on every
    projection (enable_bias), a 2-matrix ReLU MLP of ffn_dim, tied head; word_embed_proj_dim
    != hidden_size adds project_in / project_out (no bias); no final norm when the layer norm
    comes after each block (do_layer_norm_before false, opt-350m)."""
    hidden = c.req("hidden_size")
    heads = c.req("num_attention_heads")
    positions = c.req("max_position_embeddings")
    if not c.flag("layer_norm_elementwise_affine", True):
        raise SpecError(c.path, "layer_norm_elementwise_affine",
                        "unsupported false (LayerNorm without weights)")
    bias = c.flag("enable_bias", True)
    proj = c.get("word_embed_proj_dim", hidden)
    raw: dict[str, Any] = {
        "architecture": "opt",
        "tokenizer_family": "opt",
        "hidden_size": hidden,
        "num_layers": c.req("num_hidden_layers"),
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": _head_dim(c, hidden, heads),
        "intermediate_size": c.req("ffn_dim"),
        "vocab_size": c.req("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings", True),
        "qkv_bias": bias,
        "max_position_embeddings": positions,
        "mlp_kind": "plain",
        "mlp_bias": bias,
        "attention_bias": bias,
        "norm": "layernorm",
        "final_norm": c.flag("do_layer_norm_before", True)
        and not c.flag("_remove_final_layer_norm", False),
        "position_embedding": "learned",
        "position_table_rows": positions + OPT_POSITION_OFFSET if _is_int(positions)
        else positions,
    }
    if proj != hidden:
        raw["embedding_dim"] = proj
    names = {"num_layers": "num_hidden_layers", "intermediate_size": "ffn_dim",
             "num_kv_heads": "num_attention_heads", "embedding_dim": "word_embed_proj_dim",
             "position_table_rows": "max_position_embeddings"}
    return raw, names


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
