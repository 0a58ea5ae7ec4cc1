"""`dse export` of a design chosen at a load: `dse sweep/optimize --rate R --out DIR` writes the
design the search at the load chose (best.toml with its [serving] table), and its export carries
the serving settings into the vLLM files with vLLM 0.9.2's names (the scheduler's caps, tensor
parallelism, chunked prefill, the token-level proposer as --speculative-config) and one set of
servers per replica (gpu/replicas.sh, run here with a stub `vllm`; gpu/nginx_replicas.conf).

The space is the at-load tests' smallest (tests/data/load-space.toml): at 20 requests/s under a
5 ms TPOT SLO the target alone misses and n-gram speculation holds it on 2 replicas, while the
single-stream best is the target alone, so the two answers differ."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dse.cli import main
from dse.errors import SpecError
from dse.exporters import render_bundle
from dse.io.design_files import ServingSettings, parse_design_text, read_design_file
from dse.io.resolve import resolve_design
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from tests.test_export import text, vllm_options, yaml_pairs

SPACE = str(Path(__file__).parent / "data" / "load-space.toml")
LOAD = ["--objective", "cost", "--rate", "20", "--slo", "tpot:5"]
BASH = shutil.which("bash")


def run_json(argv, capsys):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def optimized(tmp_path_factory):
    """`dse optimize --space load-space --objective cost --rate 20 --slo tpot:5 --out DIR`
    (a study in memory), then `dse export --design DIR/best.toml`, once for the module."""
    import contextlib
    import io

    d = tmp_path_factory.mktemp("at-load")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["optimize", "--space", SPACE, *LOAD, "--trials", "4", "--storage",
                     "memory", "--out", str(d / "out"), "--json"]) == 0
        js = json.loads(buf.getvalue())
        buf.truncate(0)
        buf.seek(0)
        assert main(["export", "--design", str(d / "out" / "best.toml"), "--out",
                     str(d / "bundle"), "--json"]) == 0
    return js, d


def vllm_file(src: str) -> dict[str, str]:
    """A vllm serve --config file's keys, each checked against vLLM 0.9.2's options."""
    opts = vllm_options()
    kv = {}
    for indent, key, value in yaml_pairs(src):
        assert indent == 0, "vllm serve --config takes a flat mapping"
        assert key in opts or (key.startswith("no-") and key[3:] in opts), key
        kv[key] = value
    return kv


def stub_run(bundle: Path, tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    """gpu/replicas.sh run with a `vllm` that logs its CUDA_VISIBLE_DEVICES and arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "vllm.log"
    log.unlink(missing_ok=True)
    stub = bin_dir / "vllm"
    stub.write_text('#!/usr/bin/env bash\necho "$CUDA_VISIBLE_DEVICES $*" >> "$VLLM_LOG"\n')
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "VLLM_LOG": str(log)}
    r = subprocess.run([BASH, str(bundle / "gpu" / "replicas.sh"), *args], env=env,
                       capture_output=True, text=True, timeout=60)
    lines = sorted(log.read_text().splitlines()) if log.exists() else []
    return r.returncode, lines


def write(files: dict[str, bytes], root: Path) -> Path:
    for p, data in files.items():
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_bytes(data)
    return root


# ------------------------------------------------------------ --out at a load, round trip


def test_out_writes_the_design_chosen_at_the_load(optimized):
    js, d = optimized
    best = js["best"][0]
    assert best["family"] == "token-speculative"
    proposer = best["proposer"]["proposer"]
    assert proposer in ("ngram", "eagle")  # the default proposers on the target's GPUs
    assert js["single_stream_best"][0]["design"]["workflow"] == "target-only"
    assert sorted(Path(f).name for f in js["files"]) == [
        "best.toml", "pareto.csv", "pareto.html", "trials.csv"]
    df = read_design_file(d / "out" / "best.toml")
    s = df.serving
    assert s is not None and s.rate == 20 and s.tpot_ms == 5 and s.ttft_ms is None
    assert s.replicas == best["replicas"] == best["metrics"]["replicas"] >= 2
    assert (s.speculative_proposer, s.num_speculative_tokens) == (proposer, 4)
    assert s.speculative_acceptance_rate == best["proposer"]["acceptance_rate"]
    assert (s.max_num_seqs, s.max_num_batched_tokens) == (
        best["metrics"]["max_num_seqs"], best["metrics"]["max_num_batched_tokens"])
    assert s.enable_chunked_prefill is True
    assert df.system.target_model == best["design"]["target_model"]
    assert df.system.workflow_name == "target-only"
    # [metrics] are the figures at the load
    metrics = parse_design_text((d / "out" / "best.toml").read_text(), "best")
    assert metrics.serving == s
    csv = (d / "out" / "pareto.csv").read_text().splitlines()
    assert csv[0].startswith("family,replicas,speculative_proposer,num_speculative_tokens,")
    assert csv[1].startswith(f"token-speculative,{s.replicas},{proposer},4,")


def test_sweep_out_at_a_load_is_the_same_choice(optimized, tmp_path, capsys):
    """dse sweep --out at the same load writes the same design and serving settings (the
    study's pool holds the sweep's target-only designs)."""
    _, d = optimized
    js = run_json(["sweep", "--space", SPACE, *LOAD, "--processes", "1", "--out",
                   str(tmp_path)], capsys)
    assert sorted(Path(f).name for f in js["files"]) == ["best.toml", "pareto.csv",
                                                         "pareto.html"]
    got, want = (read_design_file(p / "best.toml") for p in (tmp_path, d / "out"))
    assert got.serving == want.serving and got.system.description == want.system.description


def test_exported_target_carries_the_load_settings(optimized):
    js, d = optimized
    bundle = d / "bundle"
    s = read_design_file(d / "out" / "best.toml").serving
    assert s is not None
    kv = vllm_file((bundle / "gpu" / "vllm_target.yaml").read_text())
    assert int(kv["max-num-seqs"]) == s.max_num_seqs
    assert int(kv["max-num-batched-tokens"]) == s.max_num_batched_tokens
    assert kv["enable-chunked-prefill"] == "true"
    assert int(kv["tensor-parallel-size"]) == js["best"][0]["design"]["target_tp"]
    spec = json.loads(json.loads(kv["speculative-config"]))  # a YAML string holding JSON
    assert spec["method"] == s.speculative_proposer and spec["num_speculative_tokens"] == 4
    if s.speculative_proposer == "eagle":  # a placeholder for a head trained for the target
        assert spec["model"].startswith("EAGLE-head-for-")
    else:
        assert set(spec) == {"method", "num_speculative_tokens"}
    man = json.loads((bundle / "manifest.json").read_text())
    assert man["serving"] == s.to_table()
    assert "gpu/replicas.sh" in man["files"] and "gpu/nginx_replicas.conf" in man["files"]
    # the bundle's design.toml keeps the [serving] table: exporting it again is the same
    assert read_design_file(bundle / "design.toml").serving == s


def test_the_json_form_is_the_one_vllm_092_takes():
    """vLLM 0.9.2 takes token speculation as --speculative-config only: the separate flags of
    earlier versions are not among its options."""
    opts = vllm_options()
    assert "speculative-config" in opts
    assert not {"speculative-model", "num-speculative-tokens", "ngram-prompt-lookup-max"} & opts
    for flag in ("max-num-seqs", "max-num-batched-tokens", "enable-chunked-prefill",
                 "tensor-parallel-size", "port"):
        assert flag in opts


@pytest.mark.skipif(BASH is None, reason="no bash on PATH")
def test_replicas_script_starts_one_server_per_replica(optimized, tmp_path):
    _, d = optimized
    bundle = d / "bundle"
    r = subprocess.run([BASH, "-n", str(bundle / "gpu" / "replicas.sh")], capture_output=True)
    assert r.returncode == 0, r.stderr
    reps = read_design_file(d / "out" / "best.toml").serving.replicas
    code, lines = stub_run(bundle, tmp_path)
    assert code == 0
    want = sorted(f"{i} serve --config gpu/vllm_target.yaml --port {12341 + 10 * i}"
                  for i in range(reps))
    assert lines == want
    # a share of them on this host: replica 1 alone, on this host's GPU 0
    code, lines = stub_run(bundle, tmp_path, "1", "1")
    assert code == 0 and lines == ["0 serve --config gpu/vllm_target.yaml --port 12351"]
    for bad in (["x"], [str(reps)], ["0", "0"], ["0", str(reps + 1)]):
        code, lines = stub_run(bundle, tmp_path, *bad)
        assert code == 2 and lines == [], bad
    conf = (bundle / "gpu" / "nginx_replicas.conf").read_text()
    assert re.findall(r"server 127\.0\.0\.1:(\d+);", conf) == [
        str(12341 + 10 * i) for i in range(reps)]
    assert conf.count("{") == conf.count("}")


# ------------------------------------------------------------------ settings by design


@pytest.fixture(scope="module")
def w(cat):
    return cat.get("workload", "math500")


def target_only(cat, tp=1):
    spec = cat.get("system", "paper-config1-3090")
    return resolve_design(cat, spec, overrides={"workflow": "target-only", "target_tp": tp,
                                                "target_device": "h100-sxm"})


@pytest.mark.skipif(BASH is None, reason="no bash on PATH")
def test_tensor_parallel_replicas_take_their_own_gpus(cat, w, tmp_path):
    d = target_only(cat, tp=2)
    files = render_bundle(cat, d, w, serving=ServingSettings(rate=50.0, replicas=3))
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert kv["tensor-parallel-size"] == "2"
    assert int(kv["max-num-seqs"]) == 1024  # vLLM's default on an H100, as the model's
    assert "max-num-batched-tokens" not in kv and "speculative-config" not in kv
    code, lines = stub_run(write(files, tmp_path / "b"), tmp_path)
    assert code == 0 and lines == [
        f"{g} serve --config gpu/vllm_target.yaml --port {12341 + 10 * i}"
        for i, g in enumerate(("0,1", "2,3", "4,5"))]


@pytest.mark.parametrize("proposer", ["eagle", "qwen2.5-0.5b-instruct"])
def test_model_proposers(cat, w, proposer):
    d = target_only(cat)
    files = render_bundle(cat, d, w, serving=ServingSettings(
        rate=5.0, speculative_proposer=proposer, num_speculative_tokens=3))
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    spec = json.loads(json.loads(kv["speculative-config"]))
    notes = json.loads(files["manifest.json"])["notes"]
    assert spec["num_speculative_tokens"] == 3
    if proposer == "eagle":
        assert spec["method"] == "eagle" and d.target.model.hf_id in spec["model"]
        assert any("EAGLE head trained for" in n for n in notes)
    else:
        assert spec == {"model": cat.model(proposer).hf_id, "num_speculative_tokens": 3}
        assert any("V0 engine" in n for n in notes)
    assert "gpu/nginx_replicas.conf" not in files  # one replica: no balancer


@pytest.mark.skipif(BASH is None, reason="no bash on PATH")
def test_a_speculative_design_on_replicas(cat, w, tmp_path):
    """Draft, PRM and target each on an RTX 3090: a replica is three servers on three GPUs;
    each server gets the cap, the PRM (a pooling model, chunked prefill off) no token cap."""
    d = build_design(cat, cat.get("system", "paper-config2-3090"), PRESETS["heteroreason"])
    files = render_bundle(cat, d, w, serving=ServingSettings(rate=4.0, replicas=2))
    for role in ("draft", "prm", "target"):
        kv = vllm_file(text(files, f"gpu/vllm_{role}.yaml"))
        assert int(kv["max-num-seqs"]) == 256  # vLLM's default on a 24 GB GPU
        assert "max-num-batched-tokens" not in kv and "enable-chunked-prefill" not in kv
    assert "gpu/nginx_replicas.conf" not in files
    notes = json.loads(files["manifest.json"])["notes"]
    assert any("own host scheduler" in n for n in notes)
    code, lines = stub_run(write(files, tmp_path / "b"), tmp_path)
    assert code == 0 and len(lines) == 6
    gpus = [ln.split()[0] for ln in lines]
    ports = [ln.split()[-1] for ln in lines]
    assert sorted(gpus) == [str(i) for i in range(6)] and len(set(ports)) == 6
    with pytest.raises(SpecError, match="speculative_proposer"):
        render_bundle(cat, d, w, serving=ServingSettings(
            rate=4.0, speculative_proposer="ngram", num_speculative_tokens=2))


def test_width_design_cap_holds_its_samples(cat, w):
    d = resolve_design(cat, cat.get("system", "paper-config1-3090"), overrides={
        "workflow": "best-of-n", "samples": 8})
    plain = vllm_file(text(render_bundle(cat, d, w), "gpu/vllm_target.yaml"))
    at_load = vllm_file(text(render_bundle(cat, d, w, serving=ServingSettings(
        rate=1.0, max_num_seqs=4)), "gpu/vllm_target.yaml"))
    assert plain["max-num-seqs"] == "8" and at_load["max-num-seqs"] == "8"


@pytest.mark.parametrize("table, key", [
    ("rate = 1.0\nqps = 2", "serving.qps"),
    ("replicas = 2", "serving.rate"),
    ("rate = 1.0\nreplicas = 0", "serving.replicas"),
    ("rate = 1.0\nreplicas = 1.5", "serving.replicas"),
    ("rate = 1.0\nmax_num_seqs = true", "serving.max_num_seqs"),
    ("rate = -1.0", "serving.rate"),
    ("rate = 1.0\nspeculative_proposer = \"ngram\"", "serving.num_speculative_tokens"),
    ("rate = 1.0\nenable_chunked_prefill = 1", "serving.enable_chunked_prefill"),
    ("rate = 1.0\nspeculative_proposer = \"ngram\"\nnum_speculative_tokens = 2\n"
     "speculative_acceptance_rate = 1.0", "serving.speculative_acceptance_rate"),
])
def test_serving_table_is_strict(cat, w, table, key):
    good = render_bundle(cat, target_only(cat), w,
                         serving=ServingSettings(rate=1.0))["design.toml"].decode()
    src = re.sub(r"\[serving\]\n(.*\n)*?\n", f"[serving]\n{table}\n\n", good)
    assert src != good
    with pytest.raises(SpecError, match=re.escape(key)):
        parse_design_text(src, "d.toml")


def test_serving_table_round_trips(cat, w):
    s = ServingSettings(rate=2.5, replicas=3, max_num_seqs=64, max_num_batched_tokens=4096,
                        enable_chunked_prefill=False, speculative_proposer="ngram",
                        num_speculative_tokens=2, speculative_acceptance_rate=0.5,
                        ttft_ms=500.0, e2el_ms=9000.0)
    files = render_bundle(cat, target_only(cat), w, serving=s)
    assert parse_design_text(files["design.toml"].decode(), "d").serving == s
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert kv["no-enable-chunked-prefill"] == "true" and kv["max-num-seqs"] == "64"
    assert dataclasses.replace(s, replicas=1) != s
