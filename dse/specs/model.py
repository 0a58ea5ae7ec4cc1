"""The LLM architecture spec and the Hugging Face config.json importer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dse.errors import SpecError
from dse.roles import DEVICE_ROLES
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


@dataclass(frozen=True)
class ModelSpec(Spec):
    hf_id: str = spec_field(help="Hugging Face model id")
    architecture: str = spec_field(choices=("qwen2", "llama", "mistral"))
    tokenizer_family: str = spec_field(help="draft and target must share one")
    roles: tuple[str, ...] = spec_field(help=f"a non-empty subset of {', '.join(ROLES)}")
    head: str = spec_field(choices=("lm", "prm-classifier", "value"))
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

    kind = "model"


def _check_model(path: object, v: dict[str, Any]) -> None:
    bad = [r for r in v["roles"] if r not in ROLES]
    if bad or not v["roles"]:
        raise SpecError(path, "roles", f"roles must be a non-empty subset of {ROLES}, got {bad}")
    if v["num_attention_heads"] % v["num_kv_heads"]:
        raise SpecError(path, "num_kv_heads", "must divide num_attention_heads")
    if ("prm" in v["roles"]) != (v["head"] != "lm"):
        raise SpecError(path, "head", "a PRM has a reward head; a generator has head 'lm'")


register_kind("model", ModelSpec, check=_check_model)

# --------------------------------------------------------------- Hugging Face config.json

_HF_ARCH = {"qwen2": ("qwen2", True), "llama": ("llama", False), "mistral": ("mistral", False)}


def model_from_hf_config(path: str | Path) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face config.json (Llama / Qwen2 / Mistral keys); the
    values go through the catalog's checker, so a bad one is one line naming the key."""
    p = Path(path)
    cfg = parse_json(read_text(p), p, values=False)
    if not isinstance(cfg, dict):
        raise SpecError(p, "", "expected a JSON object")
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or model_type not in _HF_ARCH:
        shown = model_type if isinstance(model_type, str | None) else type(model_type).__name__
        raise SpecError(
            p, "model_type", f"unsupported {shown!r}; supported: {', '.join(_HF_ARCH)}"
        )
    arch, default_bias = _HF_ARCH[model_type]

    def req(key: str) -> Any:
        if key not in cfg:
            raise SpecError(p, key, "missing key")
        return cfg[key]

    hidden = req("hidden_size")
    heads = req("num_attention_heads")
    archs_raw = cfg.get("architectures") or []
    archs = " ".join(a for a in archs_raw if isinstance(a, str)) if isinstance(
        archs_raw, list) else ""
    is_prm = "Reward" in archs or "PRM" in archs or "ProcessReward" in archs
    vocab = req("vocab_size")
    family = {"qwen2": "qwen2", "mistral": "mistral"}.get(
        model_type, "llama3" if _is_int(vocab) and vocab >= 128000 else "llama2"
    )
    raw = {
        "hf_id": str(cfg.get("_name_or_path") or p.parent.name),
        "architecture": arch,
        "tokenizer_family": family,
        "roles": ["prm"] if is_prm else ["draft", "target"],
        "head": "prm-classifier" if is_prm else "lm",
        "hidden_size": hidden,
        "num_layers": req("num_hidden_layers"),
        "num_attention_heads": heads,
        "num_kv_heads": cfg.get("num_key_value_heads", heads),
        "head_dim": cfg.get("head_dim")
        or (hidden // heads if _is_int(hidden) and _is_int(heads) and heads else None),
        "intermediate_size": req("intermediate_size"),
        "vocab_size": vocab,
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "qkv_bias": bool(cfg.get("attention_bias", default_bias)),
        "max_position_embeddings": req("max_position_embeddings"),
    }
    if raw["head_dim"] is None:
        raise SpecError(p, "head_dim", "missing and not derivable from hidden_size / heads")
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
        key = _HF_KEYS.get(e.key, e.key)
        if key == e.key:
            raise
        raise SpecError(p, key, e.reason) from None
    assert isinstance(spec, ModelSpec)
    return spec


# catalog key -> the config.json key it is read from, where the two differ
_HF_KEYS = {"num_layers": "num_hidden_layers", "num_kv_heads": "num_key_value_heads"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
