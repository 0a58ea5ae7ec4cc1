"""`dse serve --design FILE` takes a design file's [serving] table (what a search at a load
chose: dse sweep/optimize --rate R --out DIR writes it into best.toml) as the defaults of the
flags not given: the rate, replicas, the scheduler's caps, the token-level proposer with its K
and acceptance rate, and the SLOs as --goodput. A flag given overrides its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dse.cli import main

SYSTEM = """\
[system]
schema_version = 1
kind = "system"
name = "served"
description = "the 1.5B target alone on an RTX 3090"
target_model = "qwen2.5-math-1.5b-instruct"
target_device = "rtx-3090"
target_tp = 1
target_precision = "bf16"
target_serving = "vllm-cudagraph"
max_context_tokens = 4096
workflow = "target-only"

[system.sources]
target_tp = "assumption: one GPU holds the 1.5B model"
max_context_tokens = "assumption: MATH500's longest problem and answer fit"
"""
SERVING = """
[serving]
rate = 12.0
replicas = 2
max_num_seqs = 64
max_num_batched_tokens = 4096
enable_chunked_prefill = true
speculative_proposer = "ngram"
num_speculative_tokens = 4
speculative_acceptance_rate = 0.8
tpot_ms = 5.0
"""
HEAD = """\
schema_version = 1
kind = "design"
workload = "math500"

[schedule]
name = "rsd"
backtracking = false
step_ahead = false
shadow_sync = false

"""


def design(tmp_path: Path, serving: bool) -> str:
    path = tmp_path / ("with.toml" if serving else "without.toml")
    path.write_text(HEAD + SYSTEM + (SERVING if serving else ""), encoding="utf-8")
    return str(path)


def serve_json(capsys, *argv: str) -> dict:
    assert main(["serve", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


NUMBERS = ("request_throughput", "mean_ttft_ms", "mean_tpot_ms", "j_per_token",
           "cost_usd_per_mtok", "request_goodput", "max_num_seqs", "max_num_batched_tokens")


def test_the_serving_table_is_the_flags_it_names(tmp_path, capsys):
    got = serve_json(capsys, "--design", design(tmp_path, True))
    flags = serve_json(capsys, "--design", design(tmp_path, False), "--rate", "12",
                       "--replicas", "2", "--max-num-seqs", "64", "--max-num-batched-tokens",
                       "4096", "--speculative-model", "ngram", "--num-speculative-tokens", "4",
                       "--acceptance-rate", "0.8", "--goodput", "tpot:5")
    assert got["load"] == flags["load"] and got["load"]["value"] == 12.0
    assert got["replicas"] == flags["replicas"] == 2
    assert got["speculative"]["proposer"] == "ngram"
    assert got["speculative"]["num_speculative_tokens"] == 4
    assert got["speculative"]["acceptance_rate"] == 0.8
    assert "[serving] speculative_acceptance_rate" in got["speculative"]["basis"]
    for key in NUMBERS:
        assert got.get(key) == flags.get(key), key
    assert "--replicas 2" in got["from_design_file"]
    assert "from_design_file" not in flags


def test_a_flag_given_overrides_its_key(tmp_path, capsys):
    got = serve_json(capsys, "--design", design(tmp_path, True), "--rate", "3", "--replicas",
                     "1", "--max-num-seqs", "32")
    assert got["load"]["value"] == 3.0 and got["replicas"] == 1
    assert got["max_num_seqs"] == 32
    assert got["max_num_batched_tokens"] == 4096  # still the table's
    assert "--rate" not in got["from_design_file"]
    assert "--replicas" not in got["from_design_file"]


def test_a_batch_instead_of_the_tables_rate(tmp_path, capsys):
    got = serve_json(capsys, "--design", design(tmp_path, True), "--batch", "8")
    assert got["load"]["kind"] == "batch" and got["load"]["value"] == 8.0


@pytest.mark.parametrize("argv", [
    ("--system", "paper-config1-u280"),
    ("--model", "qwen2.5-math-1.5b-instruct", "--device", "rtx-3090")])
def test_without_a_load_or_a_table_one_line_and_exit_2(argv, capsys):
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "give one of --batch, --concurrency, --rate" in err[0]


def test_a_design_without_the_table_and_without_a_load(tmp_path, capsys):
    path = design(tmp_path, False)
    assert main(["serve", "--design", path]) == 2
    err = capsys.readouterr().err
    assert f"{path} has no [serving] table with a rate" in err
