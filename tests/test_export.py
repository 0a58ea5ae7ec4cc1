"""`dse export`: every file of the bundle is checked by the tool that would consume it (a C++
compiler, configparser, bash, vLLM 0.9.2's option list, YAML), and the bundle is written
deterministically, atomically and only inside its directory.

tests/data/vllm-0.9.2-serve-flags.txt is a copy of shared/reference/vllm-0.9.2-serve-flags.txt
(the long options of `vllm serve` 0.9.2, read from the wheel).
"""

from __future__ import annotations

import configparser
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import dse
from dse.cli import main
from dse.engine.evaluate import evaluate
from dse.errors import DseError, InfeasibleError, SpecError, UnknownNameError, UsageError
from dse.exporters import (
    EXPORTERS,
    ExportContext,
    Exporter,
    ExporterRegistry,
    ExportFile,
    Rendered,
    bundle,
    check_relative,
    render_bundle,
    write_bundle,
)
from dse.exporters.memory import MAX_PORTS_PER_BANK, TOP
from dse.io import atomic
from dse.io.design_files import DesignFile, read_design_file
from dse.model.design import build_design
from dse.model.schedules import PRESETS

SYSTEMS = ("paper-config1-u280", "paper-config1-v80", "paper-config2-3090")
FPGA_SYSTEMS = {"paper-config1-u280": "u280", "paper-config1-v80": "v80"}
FLAGS_FILE = Path(__file__).parent / "data" / "vllm-0.9.2-serve-flags.txt"
CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


@pytest.fixture(scope="module")
def bundles(cat):
    """system -> (design, files), rendered once for the module."""
    w = cat.get("workload", "math500")
    out = {}
    for name in SYSTEMS:
        d = build_design(cat, cat.get("system", name), PRESETS["heteroreason"])
        out[name] = (d, render_bundle(cat, d, w))
    return out


def text(files, path):
    return files[path].decode("utf-8")


def header_constants(src: str) -> dict[str, int]:
    consts = {m[0]: int(m[1]) for m in re.findall(r"constexpr (?:int|long long) (\w+) = (\d+)",
                                                  src)}
    consts.update({m[0]: int(m[1]) for m in re.findall(r"#define (\w+) (\d+)\s*$", src, re.M)})
    return consts


class _MultiDict(dict):
    """configparser dict_type that keeps repeated `sp=` keys (v++ allows them)."""

    def __setitem__(self, key, value):
        if isinstance(value, list) and key in self:
            self[key].extend(value)
        else:
            super().__setitem__(key, value)


def parse_ini(src: str) -> list[str]:
    cp = configparser.ConfigParser(strict=False, dict_type=_MultiDict, interpolation=None)
    cp.read_string(src)
    assert cp.sections() == ["connectivity"]
    return cp.get("connectivity", "sp").split("\n")


def yaml_pairs(src: str) -> list[tuple[int, str, str]]:
    """(indent, key, value) of each non-comment line of our block YAML."""
    out = []
    for line in src.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"^( *)([A-Za-z_][A-Za-z0-9_-]*):(?: (.*?))?(?:  # .*)?$", line)
        assert m, f"not a YAML key line: {line!r}"
        out.append((len(m[1]), m[2], m[3] or ""))
    return out


def vllm_options() -> set[str]:
    lines = FLAGS_FILE.read_text(encoding="utf-8").splitlines()
    return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")}


# ---------------------------------------------------------------------- FPGA build files


@pytest.mark.parametrize("system", FPGA_SYSTEMS)
def test_header_compiles(bundles, tmp_path, system):
    if CXX is None:
        pytest.skip("no C++ compiler (g++, c++ or clang++) on PATH")
    board = FPGA_SYSTEMS[system]
    _, files = bundles[system]
    (tmp_path / "draft_config.h").write_bytes(files[f"fpga/{board}/draft_config.h"])
    tu = tmp_path / "tu.cpp"
    tu.write_text('#include "draft_config.h"\n#include "draft_config.h"\n'
                  "int main() { return W_MEM_CH + KV_MEM_CH > 0 ? 0 : 1; }\n")
    r = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                        "-pedantic", str(tu)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_header_static_asserts_catch_inconsistency(bundles, tmp_path):
    """The header's checks have teeth: one weight channel fewer breaks the channel sum."""
    if CXX is None:
        pytest.skip("no C++ compiler (g++, c++ or clang++) on PATH")
    src = text(bundles["paper-config1-u280"][1], "fpga/u280/draft_config.h")
    n = header_constants(src)["W_MEM_CH"]
    bad = src.replace(f"W_MEM_CH = {n};", f"W_MEM_CH = {n - 1};")
    (tmp_path / "draft_config.h").write_text(bad)
    (tmp_path / "tu.cpp").write_text('#include "draft_config.h"\n')
    r = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", str(tmp_path / "tu.cpp")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "every used channel belongs to one tensor group" in r.stderr


@pytest.mark.parametrize("system", FPGA_SYSTEMS)
def test_link_ini_matches_header_and_board(cat, bundles, system):
    board = cat.fpga(FPGA_SYSTEMS[system])
    design, files = bundles[system]
    d = f"fpga/{board.name}"
    sps = parse_ini(text(files, f"{d}/link.ini"))
    h = header_constants(text(files, f"{d}/draft_config.h"))
    ports, per_bank = [], {}
    for sp in sps:
        m = re.fullmatch(rf"{TOP}\.(\w+):(HBM|DDR)\[(\d+)\]", sp)
        assert m, sp
        port, mem, k = m[1], m[2], int(m[3])
        banks = board.hbm_pseudo_channels if mem == "HBM" else board.ddr_channels
        assert 0 <= k < banks, f"{sp}: {board.name} has {mem}[0..{banks - 1}]"
        ports.append(port)
        per_bank[(mem, k)] = per_bank.get((mem, k), 0) + 1
    assert len(set(ports)) == len(ports)
    assert max(per_bank.values()) <= MAX_PORTS_PER_BANK
    # tapa::mmaps<.., N> ports are <name>_0 .. <name>_{N-1}: counts equal the header's
    for prefix, const in (("w_mmaps", "W_MEM_CH"), ("k_caches", "KV_MEM_CH"),
                          ("v_caches", "KV_MEM_CH")):
        got = sorted(p for p in ports if p.startswith(prefix + "_"))
        assert got == sorted(f"{prefix}_{i}" for i in range(h[const]))
    assert {"io_mmap", "emb_mmap"} <= set(ports)
    hbm_used = {k for mem, k in per_bank if mem == "HBM"}
    assert len(hbm_used) == h["MEM_CHANNELS_USED"] == design.draft.fpga_build.memory_channels
    assert h["BOARD_MEM_CHANNELS"] == board.hbm_pseudo_channels
    assert h["W_BITS"] == h["A_BITS"] == h["KV_BITS"] == 8  # W8A8, int8 KV (paper)
    m = design.draft.model
    assert (h["DECODER_LAYER_NUM"], h["HIDDEN_DIM"], h["KV_HEAD_NUM"], h["VOCAB_SIZE"]) == (
        m.num_layers, m.hidden_size, m.num_kv_heads, m.vocab_size)
    assert (1 << h["KVMU_PTR_BITS"]) > h["MAX_SUM_SEQ_LEN"] == design.max_context_tokens


def test_u280_has_a_vitis_link_config(cat, bundles):
    _, files = bundles["paper-config1-u280"]
    cfg = text(files, "fpga/u280/vpp_link.cfg")
    plat = re.search(r"^platform=(\S+)$", cfg, re.M)[1]
    mhz = int(re.search(r"^kernel_frequency=0:(\d+)$", cfg, re.M)[1])
    assert plat == cat.fpga("u280").vitis_platform
    sh = text(files, "fpga/u280/build.sh")
    period = float(re.search(r"--clock-period (\S+)", sh)[1])
    assert abs(1000 / period - mhz) < 0.5 and mhz == 300
    assert f"--platform {plat}" in sh and "v++ --link" in sh and "--config link.ini" in sh
    assert f"nk={TOP}:1:{TOP}" in cfg
    h = header_constants(text(files, "fpga/u280/draft_config.h"))
    assert h["TARGET_CLOCK_KHZ"] == 300000


def test_v80_is_projection_only(cat, bundles):
    _, files = bundles["paper-config1-v80"]
    assert "fpga/v80/vpp_link.cfg" not in files
    sh = text(files, "fpga/v80/build.sh")
    assert f"--part-num {cat.fpga('v80').part}" in sh and "v++" not in sh.replace(
        "no Vitis platform", "")
    man = json.loads(files["manifest.json"])
    assert man["projection_only"] is True and man["draft"]["projection_only"] is True
    assert "fpga/v80" in man["projection_only_reasons"]
    assert all(e["projection_only"] == p.startswith("fpga/v80/")
               for p, e in man["files"].items())


@pytest.mark.parametrize("system", FPGA_SYSTEMS)
def test_build_sh_is_valid_bash(bundles, tmp_path, system):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash on PATH")
    path = tmp_path / "build.sh"
    path.write_bytes(bundles[system][1][f"fpga/{FPGA_SYSTEMS[system]}/build.sh"])
    r = subprocess.run([bash, "-n", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------------- vLLM and host


@pytest.mark.parametrize("system", SYSTEMS)
def test_vllm_files_use_only_092_options(cat, bundles, system):
    design, files = bundles[system]
    opts = vllm_options()
    roles = ["prm", "target"] + ([] if design.draft.kind == "fpga" else ["draft"])
    assert sorted(p for p in files if p.startswith("gpu/")) == sorted(
        f"gpu/vllm_{r}.yaml" for r in roles)
    for role in roles:
        src = text(files, f"gpu/vllm_{role}.yaml")
        kv = {}
        for indent, key, value in yaml_pairs(src):
            assert indent == 0, "vllm serve --config takes a flat mapping"
            assert key in opts or (key.startswith("no-") and key[3:] in opts), key
            assert value != "false", f"{key}: false is silently dropped by vLLM; use no-{key}"
            kv[key] = value
        p = getattr(design, role)
        assert kv["model"] == p.model.hf_id
        assert int(kv["max-model-len"]) == design.max_context_tokens
        assert int(kv["tensor-parallel-size"]) == p.tp
        assert kv["dtype"] == "bfloat16" and kv["seed"] == "0" and kv["port"].isdigit()
        assert float(kv["gpu-memory-utilization"]) == cat.serving(p.serving).memory_utilization
        if role == "prm":
            assert kv["task"] == "reward" and kv["no-enable-prefix-caching"] == "true"
        else:
            assert kv["enable-prefix-caching"] == "true"  # the design's prefix-caching profile


def test_yaml_parses_as_yaml(bundles):
    yaml = pytest.importorskip("yaml")
    _, files = bundles["paper-config1-u280"]
    prm = yaml.safe_load(files["gpu/vllm_prm.yaml"])
    assert prm["task"] == "reward" and prm["max-model-len"] == 4096
    assert prm["gpu-memory-utilization"] == 0.9 and prm["no-enable-prefix-caching"] is True
    sched = yaml.safe_load(files["host/scheduler.yaml"])
    assert sched["step_word"] == "\n\n" and sched["endpoints"]["prm"].endswith("/pooling")


@pytest.mark.parametrize("system", SYSTEMS)
def test_scheduler_carries_the_design(bundles, system):
    design, files = bundles[system]
    rows = yaml_pairs(text(files, "host/scheduler.yaml"))
    top = {k: v for i, k, v in rows if i == 0}
    nested = {k: v for i, k, v in rows if i == 2}
    for key in ("prm_threshold", "step_word", "max_steps", "max_tokens_per_call",
                "backtrack_threshold", "max_backtracks", "backtrack_window", "step_ahead",
                "shadow_sync", "target_prefetch_cache_size", "endpoints"):
        assert key in top, key
    assert float(top["prm_threshold"]) == design.accept_threshold
    assert float(top["backtrack_threshold"]) == design.backtrack_threshold
    assert int(top["max_backtracks"]) == design.max_backtracks
    assert int(top["backtrack_window"]) == design.backtrack_window
    assert top["step_ahead"] == top["shadow_sync"] == "true"
    assert top["step_word"] == '"\\n\\n"'
    assert ("draft" in nested) == (design.draft.kind != "fpga")  # an HTTP draft endpoint
    assert nested["prm"].endswith('/pooling"') and nested["target"].endswith('/v1"')


def test_gpu_draft_gets_a_vllm_file_instead_of_fpga(bundles):
    _, files = bundles["paper-config2-3090"]
    assert not any(p.startswith("fpga/") for p in files)
    assert "gpu/vllm_draft.yaml" in files
    man = json.loads(files["manifest.json"])
    assert man["draft"]["kind"] == "gpu" and man["projection_only"] is False
    assert any("vllm_draft.yaml instead of FPGA" in n for n in man["notes"])


# ---------------------------------------------------- manifest, determinism, round trip


@pytest.mark.parametrize("system", SYSTEMS)
def test_manifest_hashes_every_file(bundles, system):
    _, files = bundles[system]
    man = json.loads(files["manifest.json"])
    assert man["schema_version"] == 1 and man["tool_version"] == dse.__version__
    assert set(man["files"]) == set(files) - {"manifest.json"}
    for p, e in man["files"].items():
        assert e["sha256"] == hashlib.sha256(files[p]).hexdigest() and e["bytes"] == len(files[p])
    report = json.loads(files["report.json"])
    assert report["schema_version"] == 1 and report["predicted"] is True
    # the predictions travel with their 90% intervals and what each component rests on
    lo, hi = report["intervals"]["latency_s_per_problem"]
    assert lo <= report["latency_s_per_problem"] <= hi
    assert {"draft", "prm", "target"} <= set(report["provenance"])


def test_same_input_byte_identical(cat, bundles, tmp_path):
    design, files = bundles["paper-config1-u280"]
    again = render_bundle(cat, design, cat.get("workload", "math500"))
    assert again == files and list(again) == list(files)
    a = write_bundle(files, tmp_path / "a")
    b = write_bundle(again, tmp_path / "b")
    tree = sorted(str(p.relative_to(a)) for p in a.rglob("*"))
    assert tree == sorted(str(p.relative_to(b)) for p in b.rglob("*"))
    assert all((a / p).read_bytes() == (b / p).read_bytes() for p in files)


def test_design_toml_round_trip_via_cli(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["export", "--system", "paper-config1-u280", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--design", str(out / "design.toml"), "--json"]) == 0
    ev = json.loads(capsys.readouterr().out)
    report = json.loads((out / "report.json").read_text())
    got = ev["schedules"][report["schedule"]]
    assert ev["workload"] == "math500"
    assert {k: got[k] for k in report if k in got} == {k: report[k] for k in report if k in got}
    assert set(report) - set(got) == {"schema_version", "tool_version", "predicted"}


def test_design_toml_round_trip_gpu_draft(cat, bundles, tmp_path):
    design, files = bundles["paper-config2-3090"]
    (tmp_path / "design.toml").write_bytes(files["design.toml"])
    df = read_design_file(tmp_path / "design.toml")
    assert df.workload == "math500" and df.schedule == design.schedule
    back = evaluate(build_design(cat, df.system, df.schedule), cat.get("workload", "math500"))
    report = json.loads(files["report.json"])
    assert {k: report[k] for k in ("latency_s_per_problem", "j_per_token", "accuracy")} == {
        k: getattr(back, k) for k in ("latency_s_per_problem", "j_per_token", "accuracy")}


# ------------------------------------------------------------------ writing the bundle


def test_refuses_non_empty_dir_without_force(tmp_path, capsys):
    out = tmp_path / "b"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    args = ["export", "--system", "paper-config2-3090", "--out", str(out)]
    assert main(args) == 2
    assert "not empty" in capsys.readouterr().err and (out / "mine.txt").read_text() == "keep"
    assert main([*args, "--force"]) == 2  # not a previous bundle: never replaced
    assert "holds no manifest.json" in capsys.readouterr().err
    (out / "mine.txt").unlink()
    assert main(args) == 0  # an empty directory is fine
    assert main([*args, "--force", "--schedule", "brsd"]) == 0  # a bundle is replaced whole
    assert "schedule: brsd" in (out / "host" / "scheduler.yaml").read_text()


@pytest.mark.parametrize("exchange", [True, False])
def test_force_replaces_whole_bundle(bundles, tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    out = tmp_path / "b"
    write_bundle(bundles["paper-config1-u280"][1], out)
    files = bundles["paper-config2-3090"][1]
    write_bundle(files, out, force=True)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == sorted(files)
    assert [p.name for p in tmp_path.iterdir()] == ["b"]  # no temporary directories left


def test_force_keeps_the_files_the_user_added(tmp_path, capsys):
    """`dse export --out ex1 --force` over an earlier bundle: exit 0, the new bundle's files
    replace the old one's, and a file the user added there (ex1/mynotes.txt) is kept, as
    `sweep`/`optimize --out --force` keep theirs."""
    out = tmp_path / "ex1"
    args = ["export", "--system", "paper-config1-u280", "--out", str(out)]
    assert main(args) == 0
    (out / "mynotes.txt").write_text("notes\n", encoding="utf-8")
    assert main(args) == 2 and "not empty" in capsys.readouterr().err
    assert main([*args, "--force", "--schedule", "brsd"]) == 0
    assert (out / "mynotes.txt").read_text(encoding="utf-8") == "notes\n"
    assert "schedule: brsd" in (out / "host" / "scheduler.yaml").read_text()


def test_force_replaces_the_bundles_files_and_nothing_else(bundles, tmp_path):
    """Over an FPGA bundle, a GPU one: its unchanged fpga/ files go (with the directory they
    alone held); the user's files, directories (an empty one too) and links stay, a file the
    user changed that the new bundle does not write stays, and one it writes is replaced."""
    old, new = bundles["paper-config1-u280"][1], bundles["paper-config2-3090"][1]
    out = tmp_path / "b"
    write_bundle(old, out)
    changed = next(p for p in old if p.startswith("fpga/") and p.endswith(".ini"))
    (out / changed).write_text("my edit\n", encoding="utf-8")
    (out / "design.toml").write_text("my edit\n", encoding="utf-8")
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    (out / "mine" / "deep").mkdir(parents=True)
    (out / "mine" / "deep" / "a.txt").write_text("a\n", encoding="utf-8")
    (out / "empty").mkdir()
    (out / "gpu" / "my.yaml").write_text("b\n", encoding="utf-8")
    (out / "link").symlink_to("notes.txt")
    inode = (out / "notes.txt").stat().st_ino
    write_bundle(new, out, force=True)
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    users = {changed, "notes.txt", "mine/deep/a.txt", "gpu/my.yaml", "link"}
    assert on_disk == set(new) | users
    assert all((out / p).read_bytes() == d for p, d in new.items())  # design.toml replaced
    assert (out / changed).read_text(encoding="utf-8") == "my edit\n"
    assert (out / "notes.txt").stat().st_ino == inode  # the same file, not a copy
    assert os.readlink(out / "link") == "notes.txt" and (out / "empty").is_dir()
    fpga_dirs = {str(p.relative_to(out)) for p in (out / "fpga").rglob("*") if p.is_dir()}
    assert fpga_dirs == {str(Path(changed).parent)}  # only the one that keeps a file
    assert [p.name for p in tmp_path.iterdir()] == ["b"]  # no temporary directories left


def test_force_refuses_a_users_file_where_the_bundle_needs_a_directory(bundles, tmp_path):
    old, new = bundles["paper-config1-u280"][1], bundles["paper-config2-3090"][1]
    out = tmp_path / "b"
    write_bundle(old, out)
    shutil.rmtree(out / "gpu")
    (out / "gpu").write_text("mine\n", encoding="utf-8")
    with pytest.raises(UsageError, match="gpu is a file, where the new bundle writes a "
                       "directory"):
        write_bundle(new, out, force=True)
    assert (out / "gpu").read_text(encoding="utf-8") == "mine\n"
    assert all((out / p).read_bytes() == d for p, d in old.items() if not p.startswith("gpu/"))
    assert [p.name for p in tmp_path.iterdir()] == ["b"]


def test_no_partial_bundle_on_failure(bundles, tmp_path, monkeypatch):
    files = bundles["paper-config1-u280"][1]
    old = bundles["paper-config2-3090"][1]
    out = tmp_path / "b"
    write_bundle(old, out)
    real = bundle._write_file
    calls = []

    def failing(path, data):
        calls.append(path)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(bundle, "_write_file", failing)
    with pytest.raises(OSError):
        write_bundle(files, out, force=True)
    assert all((out / p).read_bytes() == d for p, d in old.items())  # the old bundle, intact
    assert "fpga" not in {p.name for p in out.iterdir()}
    calls.clear()
    with pytest.raises(OSError):
        write_bundle(files, tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


@pytest.mark.parametrize("bad", ["../x", "/etc/x", "a/../b", "a\\b", "", "a//b", "./a",
                                 "a/.hidden/..", "fpga/u2..80/x"])
def test_rejects_path_escaping_names(bad):
    with pytest.raises(DseError):
        check_relative(bad)


def test_write_never_leaves_out_dir(tmp_path):
    with pytest.raises(DseError):
        write_bundle({"ok.txt": b"1", "../escape.txt": b"2"}, tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_board_name_with_path_characters_is_refused(cat, bundles):
    design, _ = bundles["paper-config1-u280"]
    build = design.draft.fpga_build
    evil = dataclasses.replace(build, board=dataclasses.replace(build.board, name="../evil"))
    bad = dataclasses.replace(design, draft_placement=dataclasses.replace(design.draft,
                                                                          fpga_build=evil))
    with pytest.raises(SpecError, match="cannot be used in a file path"):
        render_bundle(cat, bad, cat.get("workload", "math500"))


# ------------------------------------------------------------------ refusals and the CLI


def test_refuses_infeasible_design_with_reason(tmp_path, capsys):
    out = tmp_path / "b"
    code = main(["export", "--system", "paper-config1-u280", "--set",
                 "draft_model=qwen2.5-math-7b-instruct", "--set", "draft_precision=bf16",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 4 and "do not fit u280 HBM 8 GB" in err and "4096 tokens" in err
    assert not out.exists()
    # feasible for the cost model, but two HBM channels cannot hold the weights and the KV
    code = main(["export", "--system", "paper-config1-u280", "--set", "fpga.channels=2",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 4 and "HBM[0]" in err and err.count("\n") == 1 and not out.exists()


def test_render_refuses_unchecked_infeasible_design(cat):
    spec = dataclasses.replace(cat.get("system", "paper-config1-u280"),
                               draft_precision="bf16", draft_model="qwen2.5-math-7b-instruct")
    d = build_design(cat, spec, PRESETS["heteroreason"], check=False)
    with pytest.raises(InfeasibleError, match="do not fit u280 HBM"):
        render_bundle(cat, d, cat.get("workload", "math500"))


def test_cli_knobs_reach_the_files(tmp_path, capsys):
    out = tmp_path / "b"
    assert main(["export", "--system", "paper-config1-u280", "--set", "fpga.clock_mhz=200",
                 "--schedule", "brsd_stepahead", "--scenario", "gsm8k", "--out", str(out),
                 "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["manifest"]["schedule"] == "brsd_stepahead"
    assert payload["manifest"]["workload"] == "gsm8k"
    assert "kernel_frequency=0:200" in (out / "fpga/u280/vpp_link.cfg").read_text()
    assert "--clock-period 5.000" in (out / "fpga/u280/build.sh").read_text()
    assert "SHADOW_SYNC = 0;" in (out / "fpga/u280/draft_config.h").read_text()


def test_cli_usage_errors(cat, tmp_path, capsys):
    assert main(["export", "--system", "paper-config1-u280", "--trial", "3", "--out",
                 str(tmp_path / "b")]) == 2
    assert "--study" in capsys.readouterr().err
    d = tmp_path / "sys.toml"  # a plain system file names no workload
    d.write_text(Path(cat.get("system", "paper-config1-u280").path).read_text())
    assert main(["export", "--design", str(d), "--out", str(tmp_path / "b")]) == 2
    assert "--scenario" in capsys.readouterr().err


def test_study_flags_call_the_search_module(cat, tmp_path, monkeypatch, capsys):
    seen = {}

    def study_design_file(storage, study_name, trial):
        seen.update(storage=storage, study=study_name, trial=trial)
        return DesignFile(cat.get("system", "paper-config2-3090"), PRESETS["rsd"], "gsm8k")

    import dse.search as real

    fake = types.ModuleType("dse.search")
    fake.study_design_file = study_design_file
    fake.OBJECTIVES = real.OBJECTIVES  # `dse optimize`'s options, built with every parser
    monkeypatch.setitem(sys.modules, "dse.search", fake)
    assert main(["export", "--study", "s1", "--storage", "sqlite:///x.db", "--trial", "7",
                 "--out", str(tmp_path / "b"), "--json"]) == 0
    man = json.loads(capsys.readouterr().out)["manifest"]
    assert seen == {"storage": "sqlite:///x.db", "study": "s1", "trial": 7}
    assert (man["design"], man["schedule"], man["workload"]) == (
        "paper-config2-3090", "rsd", "gsm8k")


def test_usage_error_type():
    with pytest.raises(UsageError):
        write_bundle({"a": b""}, Path(__file__))  # an existing file, not a directory


# ------------------------------------------------------------------ the exporter table


def _exporter(name, files=(), *, applies=lambda design: True, notes=(), projection=None):
    """A test exporter writing `files` ((path, text, purpose) triples)."""

    def render(ctx: ExportContext) -> Rendered:
        return Rendered(files=tuple(ExportFile(p, t, u) for p, t, u in files), notes=notes,
                        projection_only=projection or {})

    return Exporter(name=name, description=f"test exporter {name}", applies=applies,
                    render=render)


def test_shipped_exporter_table():
    assert EXPORTERS.names() == ["hls", "vitis", "vllm", "host"]
    assert EXPORTERS.get("vllm").name == "vllm"


def test_registry_refuses_a_duplicate_name():
    reg = ExporterRegistry()
    reg.register(_exporter("sglang"))
    with pytest.raises(ValueError, match="exporter 'sglang' is already registered"):
        reg.register(_exporter("sglang"))
    with pytest.raises(ValueError, match="'hls' is already registered"):
        EXPORTERS.register(EXPORTERS.get("hls"))


def test_registry_unknown_name_lists_the_valid_ones():
    with pytest.raises(UnknownNameError,
                       match=r"unknown exporter 'tensorrt-llm'; valid: hls, host, vitis, vllm"):
        EXPORTERS.get("tensorrt-llm")
    with pytest.raises(UnknownNameError, match=r"valid: \(none\)"):
        ExporterRegistry().get("hls")


def test_a_new_exporter_reaches_the_bundle_and_the_manifest(cat):
    """A fresh table: a test-local SGLang exporter beside the shipped host exporter, and one
    that does not apply (its render would fail if it were called)."""
    def never(ctx):
        raise AssertionError("render called for an exporter that does not apply")

    reg = ExporterRegistry()
    reg.register(_exporter("sglang", [("gpu/sglang_target.yaml", "model: x\n",
                                       "sglang launch_server config for the target")],
                           notes=("sglang is a test exporter",),
                           projection={"gpu": "sglang: not a shipped runtime"}))
    reg.register(Exporter(name="off", description="never applies",
                          applies=lambda design: False, render=never))
    reg.register(EXPORTERS.get("host"))
    d = build_design(cat, cat.get("system", "paper-config1-u280"), PRESETS["heteroreason"])
    files = render_bundle(cat, d, cat.get("workload", "math500"), exporters=reg)
    assert sorted(files) == ["design.toml", "gpu/sglang_target.yaml", "host/scheduler.yaml",
                             "manifest.json", "report.json"]
    assert files["gpu/sglang_target.yaml"] == b"model: x\n"
    man = json.loads(files["manifest.json"])
    entry = man["files"]["gpu/sglang_target.yaml"]
    assert entry["purpose"] == "sglang launch_server config for the target"
    assert entry["sha256"] == hashlib.sha256(b"model: x\n").hexdigest()
    assert entry["projection_only"] is True
    assert man["files"]["host/scheduler.yaml"]["projection_only"] is False
    assert man["projection_only_reasons"] == {"gpu": "sglang: not a shipped runtime"}
    assert man["notes"] == ["sglang is a test exporter"]
    # an FPGA draft, but no exporter here wrote its build directory
    assert man["draft"]["kind"] == "fpga" and man["draft"]["build_dir"] is None
    assert man["draft"]["projection_only"] is False


def test_two_projection_reasons_for_one_directory_are_both_kept(cat):
    reg = ExporterRegistry()
    reg.register(_exporter("a", [("x/a.txt", "a", "a")], projection={"x": "reason a"}))
    reg.register(_exporter("b", [("x/b.txt", "b", "b")], projection={"x": "reason b"}))
    reg.register(_exporter("c", [("x/c.txt", "c", "c")], projection={"x": "reason b"}))
    d = build_design(cat, cat.get("system", "paper-config2-3090"), PRESETS["heteroreason"])
    man = json.loads(render_bundle(cat, d, cat.get("workload", "math500"),
                                   exporters=reg)["manifest.json"])
    assert man["projection_only_reasons"] == {"x": "reason a; reason b"}


@pytest.mark.parametrize("path", ["host/scheduler.yaml", "design.toml", "manifest.json"])
def test_two_writers_of_one_path_raise(cat, path):
    reg = ExporterRegistry()
    reg.register(EXPORTERS.get("host"))
    reg.register(_exporter("clash", [(path, "x", "clash")]))
    d = build_design(cat, cat.get("system", "paper-config2-3090"), PRESETS["heteroreason"])
    with pytest.raises(ValueError, match=f"exporter 'clash' writes {path}"):
        render_bundle(cat, d, cat.get("workload", "math500"), exporters=reg)


def _expected_files(design) -> dict[str, set[str]]:
    """Today's rule, by hand: the FPGA build files only with an FPGA draft (vpp_link.cfg only
    where the board has a Vitis platform), a vLLM file per GPU role, always the scheduler."""
    fpga = design.draft.kind == "fpga"
    out: dict[str, set[str]] = {"hls": set(), "vitis": set(), "vllm": set(),
                                "host": {"host/scheduler.yaml"}}
    if fpga:
        board = design.draft.fpga_build.board
        d = f"fpga/{board.name}"
        out["hls"] = {f"{d}/draft_config.h"}
        out["vitis"] = {f"{d}/link.ini", f"{d}/build.sh"} | (
            {f"{d}/vpp_link.cfg"} if board.vitis_platform else set())
    out["vllm"] = {f"gpu/vllm_{r}.yaml" for r in (("prm", "target") if fpga
                                                   else ("draft", "prm", "target"))}
    return out


@pytest.mark.parametrize("system", ["paper-config1-u280", "paper-config1-v80",
                                    "paper-config1-3090", "paper-config1-jetson",
                                    "paper-config2-u280", "paper-config2-v80",
                                    "paper-config2-3090", "paper-config2-jetson"])
def test_each_exporter_applies_where_it_did(cat, system):
    d = build_design(cat, cat.get("system", system), PRESETS["heteroreason"])
    expected = _expected_files(d)
    assert [e.name for e in EXPORTERS.for_design(d)] == [n for n in EXPORTERS.names()
                                                          if expected[n]]
    ctx = ExportContext(cat=cat, design=d, workload=cat.get("workload", "math500"),
                        version=dse.__version__)
    files = render_bundle(cat, d, ctx.workload)
    man = json.loads(files["manifest.json"])
    for e in EXPORTERS.for_design(d):
        rendered = e.render(ctx)
        assert {f.path for f in rendered.files} == expected[e.name]
        for f in rendered.files:  # the exporter's files are the bundle's, with their purpose
            assert files[f.path] == f.text.encode("utf-8")
            assert man["files"][f.path]["purpose"] == f.purpose != ""
    assert set(files) == set().union(*expected.values()) | {"design.toml", "report.json",
                                                            "manifest.json"}


def test_a_draft_layer_flexllm_does_not_implement_is_projection_only(cat):
    """GPT-2 on the U280 (plain MLP, learned positions, LayerNorm, biases): draft_config.h still
    holds its geometry, and the build directory is marked projection-only with the reason."""
    from dse.exporters import hls
    from dse.exporters.exporter import ExportContext
    from dse.io.resolve import override_spec as with_overrides

    assert hls.unsupported_layer(cat.model("qwen2.5-0.5b-instruct")) == []
    assert "a plain (2-matrix) MLP" in hls.unsupported_layer(cat.model("gpt2-medium"))
    assert hls.unsupported_layer(cat.model("qwen3-0.6b")) == ["q/k norms"]
    system = with_overrides(cat.get("system", "paper-config1-u280"),
                            {"draft_model": "gpt2-medium", "target_model": "gpt2-xl",
                             "max_context_tokens": 1024})
    d = build_design(cat, system, PRESETS["heteroreason"])
    out = hls.render(ExportContext(cat=cat, design=d, workload=cat.get("workload", "math500"),
                                   version="test"))
    assert "learned absolute positions" in out.projection_only["fpga/u280"]
    (f,) = out.files
    assert "#define HIDDEN_DIM 1024" in f.text
    ok = build_design(cat, cat.get("system", "paper-config1-u280"), PRESETS["heteroreason"])
    assert hls.render(ExportContext(cat=cat, design=ok, workload=cat.get("workload", "math500"),
                                    version="test")).projection_only == {}
