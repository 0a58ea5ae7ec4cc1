"""`dse export` of the other workflows: a target-only design, a target verifier (SpecReason's
judge) and roles sharing one GPU (a static memory split). Every file goes through the checkers
of tests/test_export.py (vLLM 0.9.2's option list, our block YAML, YAML itself), and the
colocated shares are checked against numbers worked out by hand.
"""

from __future__ import annotations

import hashlib
import json
import math

import pytest

import dse
from dse.cli import main
from dse.engine.evaluate import evaluate
from dse.exporters import render_bundle
from dse.exporters.host import judge_k
from dse.io.design_files import read_design_file
from dse.model.design import build_design
from dse.model.verifiers import VERIFIERS
from tests.test_export import text, vllm_options, yaml_pairs

BASE = "paper-config1-3090"  # draft, PRM and target each on an RTX 3090 (24 GB)
BUNDLE_OWN = {"design.toml", "report.json", "manifest.json"}
# Per-GPU bytes, weights + KV at 4096 tokens, bf16 (2 bytes a weight, 2 a KV element):
# Qwen2.5-0.5B-Instruct: 494,032,768 params x 2 = 988,065,536; KV 24 layers x 2 (K, V) x
#   2 KV heads x 64 x 2 B = 12,288 B a token, x 4096 = 50,331,648; total 1,038,397,184.
# Qwen2.5-Math-7B-Instruct: 7,615,616,512 params x 2 = 15,231,233,024; KV 28 x 2 x 4 x 128
#   x 2 B = 57,344 B a token, x 4096 = 234,881,024; total 15,466,114,048.
DRAFT_NEED_BYTES = 1_038_397_184
TARGET_NEED_BYTES = 15_466_114_048


def bundle(cat, overrides, schedule="rsd", system=BASE, workload="math500"):
    d = dse.load_design(system, overrides=overrides, schedule=schedule)
    return d, render_bundle(cat, d, cat.get("workload", workload))


def vllm_file(src: str) -> dict[str, str]:
    """A vllm serve --config file, checked as test_export checks the shipped ones: a flat
    mapping of vLLM 0.9.2 long options, no `false` values."""
    opts = vllm_options()
    kv = {}
    for indent, key, value in yaml_pairs(src):
        assert indent == 0, "vllm serve --config takes a flat mapping"
        assert key in opts or (key.startswith("no-") and key[3:] in opts), key
        assert value != "false", f"{key}: false is silently dropped by vLLM; use no-{key}"
        kv[key] = value
    return kv


def check_bundle(files: dict[str, bytes]) -> dict:
    """The checks every bundle passes: each YAML file parses (our reader and PyYAML), each vLLM
    file uses 0.9.2 options only, the manifest hashes every file. Returns the manifest."""
    yaml = pytest.importorskip("yaml")
    for p in files:
        if p.endswith(".yaml"):
            yaml_pairs(text(files, p))
            assert isinstance(yaml.safe_load(files[p]), dict)
        if p.startswith("gpu/"):
            vllm_file(text(files, p))
    man = json.loads(files["manifest.json"])
    assert set(man["files"]) == set(files) - {"manifest.json"}
    for p, e in man["files"].items():
        assert e["sha256"] == hashlib.sha256(files[p]).hexdigest() and e["purpose"]
    return man


def gpus_of(src: str) -> str:
    """CUDA_VISIBLE_DEVICES of a vLLM file's launch line."""
    (line,) = [ln for ln in src.splitlines() if "CUDA_VISIBLE_DEVICES=" in ln]
    return line.split("CUDA_VISIBLE_DEVICES=")[1].split()[0]


# ------------------------------------------------------------------------ target-only


@pytest.mark.parametrize("system", [BASE, "paper-config1-u280"])
def test_target_only_serves_the_target_alone(cat, system):
    d, files = bundle(cat, {"workflow": "target-only"}, system=system)
    assert set(files) == {"gpu/vllm_target.yaml", "host/scheduler.yaml"} | BUNDLE_OWN
    man = check_bundle(files)
    assert man["draft"] is None and man["projection_only"] is False
    assert any(n.startswith("target-only design") for n in man["notes"])
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert kv["model"] == d.target.model.hf_id and int(kv["port"]) == 12341
    assert float(kv["gpu-memory-utilization"]) == cat.serving(d.target.serving).memory_utilization


def test_target_only_host_is_a_plain_generation(cat):
    yaml = pytest.importorskip("yaml")
    _, files = bundle(cat, {"workflow": "target-only"})
    host = yaml.safe_load(files["host/scheduler.yaml"])
    assert host == {"workflow": "target-only", "max_tokens_per_call": 4096, "temperature": 0.0,
                    "top_p": 1.0, "seed": 0, "batch_size": 1,
                    "endpoints": {"target": "http://127.0.0.1:12341/v1"}}


def test_target_only_design_toml_round_trip(cat, tmp_path):
    _, files = bundle(cat, {"workflow": "target-only"})
    (tmp_path / "design.toml").write_bytes(files["design.toml"])
    df = read_design_file(tmp_path / "design.toml")
    back = build_design(cat, df.system, df.schedule)
    assert back.workflow == "target-only" and back.draft_placement is None
    report = json.loads(files["report.json"])
    got = evaluate(back, cat.get("workload", "math500"))
    assert report["latency_s_per_problem"] == got.latency_s_per_problem


# --------------------------------------------------------------------- target verifier


def test_target_verifier_has_no_prm_server(cat):
    _, files = bundle(cat, {"verifier": "target"})
    assert set(files) == {"gpu/vllm_draft.yaml", "gpu/vllm_target.yaml",
                          "host/scheduler.yaml"} | BUNDLE_OWN
    man = check_bundle(files)
    for note in VERIFIERS["target"].serving_notes():
        assert note in man["notes"]
    assert not any("PRM" in n for n in man["notes"])
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert kv["enable-prefix-caching"] == "true" and "task" not in kv
    # each model on its own GPU, as before: the judge is the target's own server
    assert gpus_of(text(files, "gpu/vllm_draft.yaml")) == "0"
    assert gpus_of(text(files, "gpu/vllm_target.yaml")) == "1"


def test_target_verifier_host_judges_with_one_score_token(cat):
    yaml = pytest.importorskip("yaml")
    _, files = bundle(cat, {"verifier": "target"}, schedule="brsd")
    host = yaml.safe_load(files["host/scheduler.yaml"])
    assert host["verifier"] == "target"
    assert "prm_threshold" not in host and "prm_step_tag" not in host
    assert host["endpoints"] == {"draft": "http://127.0.0.1:12340/v1",
                                 "target": "http://127.0.0.1:12341/v1"}
    # SpecReason's judge call; k = 10 x 0.7 = 7 (its default), backtrack 10 x 0.7 = 7
    assert host["judge"] == {"endpoint": "http://127.0.0.1:12341/v1", "max_tokens": 1,
                             "temperature": 0.0, "logprobs": 10, "score_min": 0,
                             "score_max": 9, "score_threshold": 7,
                             "backtrack_score_threshold": 7}
    assert host["backtracking"] is True and host["max_backtracks"] == 5


@pytest.mark.parametrize(("threshold", "k", "noted"), [(0.7, 7, False), (0.9, 9, False),
                                                       (0.65, 7, True), (0.64, 6, True),
                                                       (0.0, 0, False), (1.0, 10, False)])
def test_judge_threshold_is_ten_times_the_accept_threshold(cat, threshold, k, noted):
    """k = 10 x threshold rounded half up (0.65 -> 6.5 -> 7); a threshold off the 0.1 grid is
    noted, since the judge's k / 10 is what it then accepts."""
    assert judge_k(threshold) == k
    _, files = bundle(cat, {"verifier": "target", "accept_threshold": threshold})
    host = {key: v for i, key, v in yaml_pairs(text(files, "host/scheduler.yaml")) if i == 2}
    assert int(host["score_threshold"]) == k
    man = json.loads(files["manifest.json"])
    assert any("not a multiple of 0.1" in n for n in man["notes"]) == noted


def test_target_verifier_forces_prefix_caching_on(cat):
    """A target profile without prefix caching (hf-eager) still judges after its cached prefix,
    as dse.model.verifiers costs it; the PRM design under the same profile keeps it off."""
    over = {"target_serving": "hf-eager"}
    _, prm_files = bundle(cat, over)
    assert vllm_file(text(prm_files, "gpu/vllm_target.yaml"))["no-enable-prefix-caching"] == "true"
    _, files = bundle(cat, {**over, "verifier": "target"})
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert kv["enable-prefix-caching"] == "true" and "no-enable-prefix-caching" not in kv


def test_target_verifier_with_an_fpga_draft(cat):
    _, files = bundle(cat, {"verifier": "target"}, schedule="brsd", system="paper-config1-u280")
    assert sorted(p for p in files if p.startswith("gpu/")) == ["gpu/vllm_target.yaml"]
    assert "fpga/u280/draft_config.h" in files
    man = check_bundle(files)
    assert man["draft"]["kind"] == "fpga" and man["draft"]["build_dir"] == "fpga/u280"


# ------------------------------------------------------------------------ shared GPUs


def test_colocated_memory_split_by_hand(cat):
    """Draft and target on one 24 GB RTX 3090 (vllm-cudagraph: memory_utilization 0.9).
    Needs over memory: draft 1,038,397,184 / 24e9 = 0.0432665, target 15,466,114,048 / 24e9
    = 0.6444214; sum 0.6876880; headroom 0.9 - 0.6876880 = 0.2123120, half each 0.1061560.
    Shares: draft 0.0432665 + 0.1061560 = 0.1494226 -> 0.1494; target 0.6444214 + 0.1061560
    = 0.7505774 -> 0.7505 (rounded down to 4 decimals); 0.1494 + 0.7505 = 0.8999 <= 0.9."""
    d, files = bundle(cat, {"colocate": "draft+target"})
    assert d.colocated == (("draft", "target"),)
    assert d.draft.memory_needed_bytes == DRAFT_NEED_BYTES
    assert d.target.memory_needed_bytes == TARGET_NEED_BYTES
    man = check_bundle(files)
    draft = vllm_file(text(files, "gpu/vllm_draft.yaml"))
    target = vllm_file(text(files, "gpu/vllm_target.yaml"))
    prm = vllm_file(text(files, "gpu/vllm_prm.yaml"))
    assert float(draft["gpu-memory-utilization"]) == 0.1494
    assert float(target["gpu-memory-utilization"]) == 0.7505
    assert float(prm["gpu-memory-utilization"]) == 0.9  # on its own GPU: the profile's
    mem = d.target.memory_bytes
    for role, kv in (("draft", draft), ("target", target)):  # each gets at least its need
        assert float(kv["gpu-memory-utilization"]) * mem >= getattr(
            d, role).memory_needed_bytes
    assert float(draft["gpu-memory-utilization"]) + float(
        target["gpu-memory-utilization"]) <= 0.9
    assert ("draft and target share rtx-3090 (GPU 0): static KV split, draft 0.1494 / target "
            "0.7505 of 24 GB") in " ".join(man["notes"])


def test_colocated_roles_share_one_gpu_id(cat):
    yaml = pytest.importorskip("yaml")
    _, files = bundle(cat, {"colocate": "draft+target"})
    assert gpus_of(text(files, "gpu/vllm_draft.yaml")) == "0"
    assert gpus_of(text(files, "gpu/vllm_target.yaml")) == "0"
    assert gpus_of(text(files, "gpu/vllm_prm.yaml")) == "1"
    host = yaml.safe_load(files["host/scheduler.yaml"])
    assert host["gpus"] == {"draft": "0", "prm": "1", "target": "0"}


def test_colocated_tensor_parallel_target(cat):
    """Target split over two GPUs (tp 2), the draft on the first of them: per-GPU target need
    15,466,114,048 / 2 = 7,733,057,024 B, 0.3222107 of 24 GB; draft 0.0432665; headroom
    (0.9 - 0.3654772) / 2 = 0.2672614. Shares: draft 0.3105279 -> 0.3105, target 0.5894721
    -> 0.5894. GPUs: draft 0, target 0,1, PRM 2."""
    d, files = bundle(cat, {"colocate": "draft+target", "target_tp": 2})
    assert d.target.memory_needed_bytes == TARGET_NEED_BYTES / 2
    check_bundle(files)
    draft = text(files, "gpu/vllm_draft.yaml")
    target = text(files, "gpu/vllm_target.yaml")
    assert float(vllm_file(draft)["gpu-memory-utilization"]) == 0.3105
    assert float(vllm_file(target)["gpu-memory-utilization"]) == 0.5894
    assert (gpus_of(draft), gpus_of(target), gpus_of(text(files, "gpu/vllm_prm.yaml"))) == (
        "0", "0,1", "2")


def test_colocated_with_a_target_verifier(cat):
    """The target verifies and shares its GPU with the draft: two servers on GPU 0, the same
    split as a PRM design's draft+target (the PRM has no server)."""
    yaml = pytest.importorskip("yaml")
    d, files = bundle(cat, {"colocate": "draft+target", "verifier": "target"})
    assert d.colocated == (("draft", "prm", "target"),)
    assert set(files) == {"gpu/vllm_draft.yaml", "gpu/vllm_target.yaml",
                          "host/scheduler.yaml"} | BUNDLE_OWN
    check_bundle(files)
    shares = [float(vllm_file(text(files, f"gpu/vllm_{r}.yaml"))["gpu-memory-utilization"])
              for r in ("draft", "target")]
    assert shares == [0.1494, 0.7505]
    assert yaml.safe_load(files["host/scheduler.yaml"])["gpus"] == {"draft": "0", "target": "0"}


def test_a_target_verifier_alone_with_its_target_is_not_split(cat):
    """colocated = ((prm, target),) but one server: the profile's utilisation, no gpus key."""
    d, files = bundle(cat, {"verifier": "target"})
    assert d.colocated == (("prm", "target"),)
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert float(kv["gpu-memory-utilization"]) == 0.9
    assert "gpus" not in {k for _, k, _ in yaml_pairs(text(files, "host/scheduler.yaml"))}


def test_shares_sum_to_at_most_the_profile_fraction(cat):
    """Over GPUs and loads of different sizes: each share >= need / memory, the sum <= the
    profile's memory_utilization."""
    for device in ("rtx-3090", "rtx-4090", "a100-40gb-pcie", "h100-pcie"):
        over = {"colocate": "draft+target", "draft_device": device, "target_device": device}
        d, files = bundle(cat, over)
        cap = cat.serving(d.target.serving).memory_utilization
        total = 0.0
        for role in ("draft", "target"):
            share = float(vllm_file(text(files, f"gpu/vllm_{role}.yaml"))[
                "gpu-memory-utilization"])
            assert share * d.target.memory_bytes >= getattr(d, role).memory_needed_bytes
            assert math.isclose(share, round(share, 4))
            total += share
        assert total <= cap


# --------------------------------------------------------------- determinism and the CLI


@pytest.mark.parametrize("overrides", [{"workflow": "target-only"}, {"verifier": "target"},
                                       {"colocate": "draft+target"}])
def test_new_bundles_are_deterministic(cat, overrides):
    d, files = bundle(cat, overrides)
    again = render_bundle(cat, d, cat.get("workload", "math500"))
    assert again == files and list(again) == list(files)


def test_cli_exports_a_target_only_design(tmp_path, capsys):
    out = tmp_path / "b"
    assert main(["export", "--system", BASE, "--set", "workflow=target-only", "--schedule",
                 "rsd", "--out", str(out)]) == 2  # it runs no schedule: refused
    assert "runs no schedule" in capsys.readouterr().err
    assert main(["export", "--system", BASE, "--set", "workflow=target-only", "--out",
                 str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert sorted(payload["files"]) == sorted({"gpu/vllm_target.yaml", "host/scheduler.yaml"}
                                              | BUNDLE_OWN)
    assert not (out / "fpga").exists() and payload["manifest"]["draft"] is None


# ------------------------------------------------------------------------ KV cache, offload


def test_fp8_kv_cache_and_offload_reach_the_vllm_file(cat):
    """target_kv_precision = fp8 is vLLM's --kv-cache-dtype fp8; target_offload_fraction 0.5
    of the 7B target's streamed weights is --cpu-offload-gb. Streamed: every weight but the
    input embedding table, whose one row a token reads (152,064 x 3,584 = 544,997,376 params):
    (7,615,616,512 - 544,997,376) x 2 B = 14,141,238,272 B; half is 7,070,619,136 B = 6.585
    GiB (vLLM counts GiB), 6.6 rounded up to 0.1 GiB."""
    over = {"target_kv_precision": "fp8", "target_offload_fraction": 0.5}
    _, files = bundle(cat, over)
    man = check_bundle(files)
    kv = vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert kv["kv-cache-dtype"] == "fp8"
    assert float(kv["cpu-offload-gb"]) == pytest.approx(6.6)
    draft = vllm_file(text(files, "gpu/vllm_draft.yaml"))
    assert "kv-cache-dtype" not in draft and "cpu-offload-gb" not in draft
    assert not any("kv_precision" in n for n in man["notes"])


def test_a_kv_cache_vllm_cannot_hold_is_noted(cat):
    _, files = bundle(cat, {"target_kv_precision": "q8_0"})
    man = check_bundle(files)
    assert "kv-cache-dtype" not in vllm_file(text(files, "gpu/vllm_target.yaml"))
    assert any("target_kv_precision = q8_0 has no vLLM 0.9.2" in n for n in man["notes"])
