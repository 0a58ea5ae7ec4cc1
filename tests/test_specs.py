"""The strict loader: every malformed input is one error naming file and key."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dse.errors import SpecError, UnknownNameError
from dse.specs import Catalog, load_spec, model_from_hf_config

LINK = """schema_version = 1
kind = "link"
name = "{name}"
description = "a link"
generation = 4
lanes = 16
theoretical_GBps = 31.5
effective_GBps = {eff}
latency_us = 5.0
[sources]
generation = "s"
lanes = "s"
theoretical_GBps = "s"
effective_GBps = "s"
latency_us = "s"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def test_units_converted_once(tmp_path):
    s = load_spec(write(tmp_path, "l", LINK.format(name="l", eff="25.0")))
    assert s.effective_bytes_per_s == 25e9
    assert s.latency_s == pytest.approx(5e-6)


@pytest.mark.parametrize(
    ("edit", "key", "words"),
    [
        (lambda t: t.replace("effective_GBps = 25.0", "effective_GBps = -1.0"),
         "effective_GBps", "must be > 0"),
        (lambda t: t.replace("effective_GBps = 25.0", "effective_GBps = 0.0"),
         "effective_GBps", "must be > 0"),
        (lambda t: t.replace("effective_GBps = 25.0", "effective_GBps = nan"),
         "effective_GBps", "finite"),
        (lambda t: t.replace("effective_GBps = 25.0", "effective_GBps = inf"),
         "effective_GBps", "finite"),
        (lambda t: t.replace("effective_GBps = 25.0", 'effective_GBps = "fast"'),
         "effective_GBps", "expected a number"),
        (lambda t: t.replace("lanes = 16\n", ""), "lanes", "missing key"),
        (lambda t: t.replace("lanes = 16", "lanes = 16\nlanez = 3"), "lanez", "unknown key"),
        (lambda t: t.replace('effective_GBps = "s"\n', ""), "sources.effective_GBps",
         "without a source"),
        (lambda t: t.replace('name = "l"', 'name = "other"'), "name", "file name"),
        (lambda t: t.replace('kind = "link"', 'kind = "toaster"'), "kind", "unknown kind"),
        (lambda t: t.replace("lanes = 16", "lanes = 16.5"), "lanes", "integer"),
        (lambda t: t + "lanes = 8\n", "", "malformed TOML"),
    ],
)
def test_malformed_link(tmp_path, edit, key, words):
    p = write(tmp_path, "l", edit(LINK.format(name="l", eff="25.0")))
    with pytest.raises(SpecError) as e:
        load_spec(p)
    msg = str(e.value)
    assert str(p) in msg and words in msg
    assert e.value.key == key
    assert "\n" not in msg


def test_duplicate_names_across_catalog(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    write(a, "dup", LINK.format(name="dup", eff="25.0"))
    write(b, "dup", LINK.format(name="dup", eff="20.0"))
    with pytest.raises(SpecError, match="duplicate link name 'dup'"):
        Catalog.load([a, b], shipped=False)


def test_user_catalog_extends_shipped(tmp_path, cat):
    write(tmp_path, "my-link", LINK.format(name="my-link", eff="20.0"))
    c = Catalog.load([tmp_path])
    assert c.link("my-link").effective_bytes_per_s == 20e9
    assert set(cat.names("gpu")) <= set(c.names("gpu"))


def test_replacing_swaps_named_items_and_leaves_the_catalog_alone(cat):
    from dataclasses import replace
    a100 = cat.gpu("a100-80gb-sxm")
    out = cat.replacing("gpu", [replace(a100, host_cpu_slowdown=3.0)])
    assert out.gpu("a100-80gb-sxm").host_cpu_slowdown == 3.0
    assert cat.gpu("a100-80gb-sxm").host_cpu_slowdown == a100.host_cpu_slowdown
    assert out.gpu("h100-sxm") is cat.gpu("h100-sxm") and out.names("gpu") == cat.names("gpu")
    with pytest.raises(UnknownNameError):
        cat.replacing("gpu", [replace(a100, name="no-such-gpu")])


def test_unknown_name_lists_valid(cat):
    with pytest.raises(UnknownNameError) as e:
        cat.device("u281")
    assert "u280" in str(e.value) and "rtx-3090" in str(e.value)


def test_shipped_catalog_complete(cat):
    assert {"u280", "u55c", "u50", "v80", "vck5000"} <= set(cat.names("fpga"))
    assert {"rtx-3090", "rtx-4090", "a100-40gb-pcie", "a100-80gb-pcie", "a100-80gb-sxm",
            "h100-pcie", "h100-sxm", "h200", "l4", "l40s", "jetson-orin-nano-8gb",
            "jetson-agx-orin-64gb"} <= set(cat.names("gpu"))
    assert {"pcie-gen3-x16", "pcie-gen4-x16", "pcie-gen5-x16", "pcie-gen3-x8",
            "pcie-gen4-x8", "pcie-gen5-x8"} <= set(cat.names("link"))
    assert len(cat.names("model")) >= 13
    assert {"vllm-cudagraph", "vllm-eager", "hf-eager"} <= set(cat.names("gpu-serving"))


def test_every_shipped_number_has_a_source(cat):
    """Every number of every shipped catalog file has its own source line (or the file's `*`
    line), and no source line is blank."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    files = [f for d in ("boards", "models", "scenarios") for f in (root / d).rglob("*.toml")]
    assert len(files) >= 100
    numbers = 0
    for f in files:
        data = tomllib.loads(f.read_text(encoding="utf-8"))
        sources = data.get("sources", {})
        assert all(isinstance(v, str) and v.strip() for v in sources.values()), f
        for key, value in data.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and (
                    key != "schema_version"):
                numbers += 1
                assert key in sources or "*" in sources, f"{f.relative_to(root)}: {key}"
    assert numbers > 1000
    for kind, specs in cat.items.items():
        for s in specs.values():
            assert s.sources, (kind, s.name)


def test_no_draft_pairs_across_tokenizers(cat):
    qwen = cat.model("qwen2.5-0.5b-instruct").tokenizer_family
    assert qwen == cat.model("qwen2.5-math-7b-instruct").tokenizer_family
    assert qwen != cat.model("llama-3.1-8b-instruct").tokenizer_family


HF_QWEN = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
    "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
    "intermediate_size": 4864, "vocab_size": 151936, "tie_word_embeddings": True,
    "max_position_embeddings": 32768,
}


def test_hf_config_matches_catalog(tmp_path, cat):
    d = tmp_path / "Qwen2.5-0.5B-Instruct"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(HF_QWEN))
    m = model_from_hf_config(d / "config.json")
    ref = cat.model("qwen2.5-0.5b-instruct")
    for f in ("hidden_size", "num_layers", "num_kv_heads", "head_dim", "intermediate_size",
              "vocab_size", "tie_word_embeddings", "qkv_bias", "tokenizer_family"):
        assert getattr(m, f) == getattr(ref, f), f
    assert cat.model(str(d / "config.json")).name == "qwen2.5-0.5b-instruct"


@pytest.mark.parametrize("drop", ["hidden_size", "num_hidden_layers", "vocab_size"])
def test_hf_config_missing_field(tmp_path, drop):
    cfg = {k: v for k, v in HF_QWEN.items() if k != drop}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    with pytest.raises(SpecError) as e:
        model_from_hf_config(p)
    assert e.value.key == drop


def test_hf_config_bad_values(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**HF_QWEN, "hidden_size": -5}))
    with pytest.raises(SpecError, match="hidden_size"):
        model_from_hf_config(p)
    p.write_text("{not json")
    with pytest.raises(SpecError, match="malformed JSON"):
        model_from_hf_config(p)


def test_nan_never_passes_range_checks():
    from dse.specs import Key, check_value

    with pytest.raises(SpecError):
        check_value("f", Key("x_GB", "x", float, lo=0.0, lo_open=True), math.nan)


def test_installed_wheel_ships_catalogs():
    """With a non-editable install (CI), the catalogs are inside the wheel."""
    from importlib import metadata

    try:
        files = metadata.files("hetero-dse") or []
    except metadata.PackageNotFoundError:
        pytest.skip("hetero-dse is not installed")
    names = {str(f) for f in files}
    if not any(n.startswith("dse/") and n.endswith(".py") for n in names):
        pytest.skip("editable install: catalogs are read from the source tree")
    for rel in ("dse/_catalog/boards/fpgas/u280.toml",
                "dse/_catalog/models/qwen2.5-0.5b-instruct.toml",
                "dse/_catalog/boards/serving/vllm-cudagraph.toml", "dse/data/measured.toml"):
        assert rel in names, rel
