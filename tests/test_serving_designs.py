"""Whole designs at load (dse.serving.designs, `dse serve --system/--design/--set`), token-level
speculation's proposers and acceptance defaults, and the sharegpt length distribution."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dse.cli import main
from dse.devices.registry import place
from dse.serving import Load, Speculation, serve, vllm_caps
from dse.serving.engine import Engine, eagle_head
from dse.specs import Catalog

ROOT = Path(__file__).resolve().parents[1]
WIDTH = str(ROOT / "docs" / "examples" / "width-best-of-8-h100.toml")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog.load()


def _system(ref: str, schedule: str | None = None, **overrides: object):
    """(design, workload, batch-1 report)."""
    import dse
    from dse.io.resolve import report

    d = dse.load_design(ref, schedule=schedule, overrides=overrides or None)
    w = dse.load_workload("math500")
    return d, w, report(d, w)


def _serve(d, w, load: Load, **kw):
    from dse.serving.designs import serve_system

    return serve_system(d, w, load, lifetime_years=3.0, usd_per_kwh=0.15, **kw)


@pytest.mark.parametrize("ref", ["paper-config1-u280", "paper-config1-3090", WIDTH,
                                 "target-only", "target-verifier", "colocated"])
def test_batch_one_is_the_single_stream_evaluate(ref: str) -> None:
    """A static batch of one (both evaluators) and a vanishing rate give `dse evaluate`'s
    latency per problem and J/token within 5% (speculative and width designs: exactly; the
    target-only design through the one-model engine: a prefill of the prompt and O - 1
    decode steps against the workload's step mix)."""
    if ref == "target-only":
        d, w, rep = _system("paper-config1-u280", workflow="target-only")
    elif ref == "target-verifier":  # the target judges: the PRM's work on its device
        d, w, rep = _system("paper-config1-3090", "brsd", verifier="target")
    elif ref == "colocated":  # one device, one batch for both roles, their memory together
        d, w, rep = _system("paper-config1-3090", "brsd", colocate="draft+target")
    else:
        d, w, rep = _system(ref)
    for ev in ("closed-form", "simulator"):
        one = _serve(d, w, Load("batch", 1, 1, 1, 1), evaluator=ev)
        assert one["mean_e2el_ms"] / 1e3 == pytest.approx(rep.latency_s_per_problem, rel=0.05)
        assert one["j_per_token"] == pytest.approx(rep.j_per_token, rel=0.05)
        assert one["accuracy"] == pytest.approx(rep.accuracy)
    slow = _serve(d, w, Load("rate", 1e-4, 1, 1, 100))
    assert slow["mean_e2el_ms"] / 1e3 == pytest.approx(rep.latency_s_per_problem, rel=0.05)


@pytest.mark.parametrize("ref", ["paper-config1-u280", WIDTH])
def test_latency_grows_with_the_rate_to_the_knee(ref: str) -> None:
    """Below capacity every request is served (throughput = rate) and latency grows with the
    rate; past it the throughput is the capacity and requests queue."""
    d, w, _ = _system(ref)
    cap = _serve(d, w, Load("rate", 1.0, 1, 1, 1000))["capacity_request_rate"]
    assert cap > 0
    lat = []
    for f in (0.1, 0.4, 0.7, 0.95):
        r = _serve(d, w, Load("rate", f * cap, 1, 1, 1000))
        assert r["request_throughput"] == pytest.approx(f * cap, rel=1e-9)
        assert not r["saturated"]
        lat.append(r["mean_e2el_ms"])
    assert lat == sorted(lat)
    past = _serve(d, w, Load("rate", 3 * cap, 1, 1, 1000))
    assert past["saturated"] and past["request_throughput"] == pytest.approx(cap, rel=1e-6)
    assert past["mean_e2el_ms"] > 10 * lat[-1]


@pytest.mark.parametrize(("ref", "frac"), [("paper-config1-u280", 0.4),
                                          ("paper-config1-u280", 0.7), (WIDTH, 0.7)])
def test_the_design_evaluators_agree_below_capacity(ref: str, frac: float) -> None:
    """The closed form (each device's birth-death chain, solved exactly) and the request-level
    simulator agree within 5% on throughput, TPOT, e2el and the number in the system up to 70%
    of capacity (measured: within 1%, 2,000 requests), energy per token within 10% (the
    closed form prices the mean batch: measured 4%) and TTFT within 15% (the prompt's short
    stage: measured 8%)."""
    d, w, _ = _system(ref)
    cap = _serve(d, w, Load("rate", 1.0, 1, 1, 100))["capacity_request_rate"]
    load = Load("rate", frac * cap, 1, 1, 2000, seed=1)
    a = _serve(d, w, load)
    b = _serve(d, w, load, evaluator="simulator")
    for k in ("request_throughput", "mean_tpot_ms", "mean_e2el_ms", "mean_in_system"):
        assert a[k] == pytest.approx(b[k], rel=0.05), k
    assert a["j_per_token"] == pytest.approx(b["j_per_token"], rel=0.10)
    assert a["mean_ttft_ms"] == pytest.approx(b["mean_ttft_ms"], rel=0.15)
    assert b["p99_e2el_ms"] >= b["median_e2el_ms"]
    one = _serve(d, w, Load("batch", 1, 1, 1, 1), evaluator="simulator")
    assert one["mean_e2el_ms"] == pytest.approx(a["single_stream"]["latency_s_per_problem"]
                                                * 1e3, rel=1e-9)


def test_a_width_design_batches_its_samples() -> None:
    """N = 8 samples decode as one batch at batch 1; at load b requests make a batch of 8 b,
    so the policy's step slows by t(8 b) / t(8) (the weights read once for all)."""
    from dse.serving.designs import design_load

    d, w, rep = _system(WIDTH)
    dl = design_load(d, w, rep)
    tgt = next(r for r in dl.roles if r.role == "target")
    ctx = w.prompt_tokens + rep.tokens_per_problem / 2
    t8 = float(d.target.decode_token_s(ctx, batch=8))
    t32 = float(d.target.decode_token_s(ctx, batch=32))
    assert tgt.slowdown(4.0) == pytest.approx(t32 / t8, rel=1e-9)
    assert 1.0 < tgt.slowdown(4.0) < 4.0


def test_closed_loop_and_offline_designs() -> None:
    """C clients keep C requests in the system (Little); one client is the single stream
    (mean value analysis, exact); the clients never push past the open loop's capacity;
    every request at once is served at capacity."""
    d, w, rep = _system("paper-config1-u280")
    c = _serve(d, w, Load("concurrency", 2, 1, 1, 200))
    assert c["mean_in_system"] == pytest.approx(2.0, rel=1e-3)
    one = _serve(d, w, Load("concurrency", 1, 1, 1, 200))
    assert one["mean_e2el_ms"] / 1e3 == pytest.approx(rep.latency_s_per_problem, rel=1e-9)
    many = _serve(d, w, Load("concurrency", 64, 1, 1, 200))
    assert many["request_throughput"] <= c["capacity_request_rate"] * (1 + 1e-9)
    assert many["mean_in_system"] == pytest.approx(64.0, rel=1e-3)
    cap = c["capacity_request_rate"]
    inf = _serve(d, w, Load("rate", math.inf, 1, 1, 200))
    assert inf["request_throughput"] == pytest.approx(cap, rel=1e-6)


# ---------------------------------------------------------------- token-level speculation


@pytest.fixture(scope="module")
def h100(cat: Catalog):
    return place(cat, cat.model("qwen2.5-7b-instruct"), "h100-sxm", precision_name="bf16",
                 software="vllm-v1", context_tokens=640)


def test_one_speculative_step_by_hand(h100, cat: Catalog) -> None:
    """A decode iteration of B = 16 sequences at context 600 with a draft model proposing
    k = 3 tokens: 3 draft decode passes of 16 sequences + one target pass verifying 4
    positions of each (64 tokens as 16 chunks of 4): the sum of those primitives. With
    n-gram the draft's passes are free; a = 0.6 gains 1 + 0.6 + 0.36 + 0.216 = 2.176 tokens a
    pass."""
    draft = place(cat, cat.model("qwen2.5-0.5b-instruct"), "h100-sxm", precision_name="bf16",
                  software="vllm-v1", context_tokens=640)
    caps = vllm_caps(h100.memory_bytes, "h100-sxm")
    spec = Speculation("qwen2.5-0.5b-instruct", 3, 0.6, "")
    e = Engine(h100, caps, speculation=spec, draft=draft)
    verify = float(h100.iteration_s(0, 0, 16 * 4, 600, 16))
    propose = 3 * float(draft.decode_token_s(600, batch=16))
    assert float(e.iteration_s(16, 600)) == pytest.approx(verify + propose, rel=1e-12)
    ng = Engine(h100, caps, speculation=Speculation("ngram", 3, 0.6, ""))
    assert float(ng.iteration_s(16, 600)) == pytest.approx(verify, rel=1e-12)
    assert spec.tokens_per_pass == pytest.approx(2.176)
    # the verify pass grows with B x k: four times the positions cost more than one pass
    assert verify > float(h100.iteration_s(16, 600))


def test_the_eagle_head_is_one_layer_sharing_the_targets_tables(h100, cat: Catalog) -> None:
    """EAGLE's head (SafeAILab/EAGLE cnets1.py, configs with num_hidden_layers 1): one decoder
    layer of the target's shape; its embedding and LM head are the target's, so only the
    layer's weights take memory beside the target's."""
    from dse.devices import shape

    m = cat.model("qwen2.5-7b-instruct")
    head = eagle_head(m)
    assert head.num_layers == 1 and head.hidden_size == m.hidden_size
    assert shape.layer_params(head) == shape.layer_params(m)
    hp = place(cat, head, "h100-sxm", precision_name="bf16", software="vllm-v1",
               context_tokens=640)
    caps = vllm_caps(h100.memory_bytes, "h100-sxm")
    alone = Engine(h100, caps).kv_capacity_tokens
    with_head = Engine(h100, caps, speculation=Speculation("eagle", 3, 0.6, ""),
                       draft=hp).kv_capacity_tokens
    layer_bytes = shape.layer_params(m) * 2
    kv_tok = shape.kv_bytes_per_token(m, 16)
    lost = alone - with_head  # the head's layer weights and its own one-layer KV
    assert lost > 0
    assert lost * kv_tok < 1.2 * (layer_bytes + with_head * shape.kv_bytes_per_token(head, 16))
    # each proposal (inside the engine step: no step or per-sequence host time) costs far
    # less than a target step
    from dse.serving.engine import in_engine_step

    assert float(in_engine_step(hp).decode_token_s(600, batch=16)) < 0.3 * float(
        h100.decode_token_s(600, batch=16))


@pytest.mark.parametrize("proposer", [None, "eagle"])
def test_a_target_only_design_agrees_between_evaluators_at_70_percent(cat: Catalog,
                                                                     proposer: str | None
                                                                     ) -> None:
    """A target-only design (Qwen2.5-Math-7B, MATH500's 99 prompt and 392 answer tokens) at
    70% of capacity: throughput, TPOT, e2el and the requests in the system within 5% of each
    other (2,000 requests), alone on an RTX 3090 (measured: 4.1% on the number in the
    system, 2.8% on TPOT) and on an H100 with an EAGLE head proposing 3 tokens at a = 0.6
    (3.7% and 2.5%)."""
    from dse.serving.engine import in_engine_step

    over: dict[str, object] = {"workflow": "target-only"}
    kw: dict[str, object] = {}
    if proposer is not None:
        over["target_device"] = "h100-sxm"
    d, w, _ = _system("paper-config1-u280", **over)
    if proposer is not None:
        t = d.target
        head = in_engine_step(place(cat, eagle_head(t.model), t.device.name,
                                    precision_name=t.precision.name, software=t.serving,
                                    context_tokens=t.context_tokens, tp=t.tp))
        kw = {"speculation": Speculation("eagle", 3, 0.6, ""), "engine_extra": {"draft": head}}
    cap = _serve(d, w, Load("rate", 1.0, 1, 1, 100), **kw)["capacity_request_rate"]
    load = Load("rate", 0.7 * cap, 1, 1, 2000, seed=1)
    a = _serve(d, w, load, **kw)
    b = _serve(d, w, load, evaluator="simulator", **kw)
    for k in ("request_throughput", "mean_tpot_ms", "mean_e2el_ms", "mean_in_system"):
        assert a[k] == pytest.approx(b[k], rel=0.05), k
    assert a["family"] == ("target-only" if proposer is None else "token-speculative")


def test_acceptance_defaults_come_from_published_rows() -> None:
    """The i.i.d. rate solves (1 - a^(k+1)) / (1 - a) = AL; the closest row wins and says
    which it is."""
    from dse.serving.acceptance import default_rate, iid_rate

    assert iid_rate(1.75, 2) == pytest.approx(0.5, abs=1e-9)
    got = default_rate("eagle", "llama-3.1-8b-instruct", None)
    assert got.basis.startswith("meta2508.tpc.llama-3.1-8b-instruct.mtbench.k3")
    assert got.acceptance_rate == pytest.approx(iid_rate(2.78, 3), rel=1e-9)
    ng = default_rate("ngram", "qwen2.5-7b-instruct", None)
    assert 0 < ng.acceptance_rate < 1 and "ngram" in ng.basis and "source:" in ng.basis
    qm = default_rate("eagle", "qwen2.5-7b-instruct", "math500")
    assert "qwen3" in qm.basis and "gsm8k" in qm.basis


def test_a_draft_on_an_fpga_board(capsys: pytest.CaptureFixture[str]) -> None:
    """--speculative-device u280: the draft's decode on the FPGA engine, its board's price
    added to the cost; its W8A8 engine decodes the 0.5B at about 6 ms a token, so three
    proposals cost more than the H100 spends on a token: here it does not pay."""
    code, out, _ = _run(capsys, "serve", "--model", "qwen2.5-7b-instruct", "--device",
                        "h100-sxm", "--batch", "1", "--speculative-model",
                        "qwen2.5-0.5b-instruct", "--num-speculative-tokens", "3",
                        "--speculative-device", "u280", "--json")
    assert code == 0
    r = json.loads(out)
    assert r["family"] == "token-speculative" and r["speculative"]["device"] == "u280"
    code, out, _ = _run(capsys, "serve", "--model", "qwen2.5-7b-instruct", "--device",
                        "h100-sxm", "--batch", "1", "--json")
    plain = json.loads(out)
    assert r["cost_usd_per_mtok"] > plain["cost_usd_per_mtok"]
    assert r["mean_tpot_ms"] > plain["mean_tpot_ms"]


# ---------------------------------------------------------------- the sharegpt lengths


def test_sharegpt_draws_are_seeded_filtered_and_match_the_published_means() -> None:
    from dse.serving.datasets import dataset

    ds = dataset("sharegpt")
    i, o = ds.draw(50_000, 0)
    i2, _ = ds.draw(50_000, 0)
    assert np.array_equal(i, i2)
    assert i.min() >= 4 and i.max() <= 1024 and o.min() >= 4 and (i + o).max() <= 2048
    assert i.mean() == pytest.approx(ds.mean_input_tokens, rel=0.02)
    assert o.mean() == pytest.approx(ds.mean_output_tokens, rel=0.02)


def test_sharegpt_in_the_simulator_and_the_closed_form(h100) -> None:
    load = Load("rate", 5.0, 215, 197, 400, seed=1, dataset="sharegpt")
    a = serve(h100, load, intervals=False)
    b = serve(h100, load, evaluator="simulator", intervals=False)
    assert b["mean_tpot_ms"] == pytest.approx(a["mean_tpot_ms"], rel=0.10)
    assert b["p99_e2el_ms"] > 2 * b["median_e2el_ms"]  # the lengths' spread shows


# ---------------------------------------------------------------- the command


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_dse_serve_a_system_reports_family_and_accuracy(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    code, out, _ = _run(capsys, "serve", "--system", "paper-config1-u280", "--rate", "0.1",
                        "--json")
    assert code == 0
    r = json.loads(out)
    assert r["family"] == "fpga-speculative" and 0 < r["accuracy"] < 100
    for k in ("request_throughput", "mean_e2el_ms", "j_per_token", "cost_usd_per_mtok",
              "capacity_request_rate", "devices", "intervals"):
        assert k in r, k
    code, out, _ = _run(capsys, "serve", "--system", "paper-config1-u280", "--set",
                        "workflow=target-only", "--rate", "0.1", "--speculative-model",
                        "ngram", "--num-speculative-tokens", "3", "--json")
    assert code == 0 and json.loads(out)["family"] == "token-speculative"


@pytest.mark.parametrize(("argv", "words"), [
    (("--system", "paper-config1-u280", "--model", "qwen2.5-7b-instruct", "--rate", "1"),
     "not allowed"),
    (("--model", "qwen2.5-7b-instruct", "--device", "h100-sxm", "--rate", "1",
      "--speculative-model", "ngram", "--num-speculative-tokens", "0"),
     "--num-speculative-tokens"),
    (("--model", "qwen2.5-7b-instruct", "--device", "h100-sxm", "--rate", "1",
      "--speculative-model", "medusa-x", "--num-speculative-tokens", "3"), "medusa-x"),
    (("--model", "qwen2.5-7b-instruct", "--device", "h100-sxm", "--rate", "1",
      "--dataset", "sharegpt", "--input-tokens", "100"), "--dataset"),
    (("--system", "paper-config1-u280", "--device", "h100-sxm", "--rate", "1"), "--device"),
    (("--model", "qwen2.5-7b-instruct", "--device", "h100-sxm", "--rate", "1", "--set",
      "accept_threshold=0.5"), "--set"),
    (("--system", "paper-config1-u280", "--rate", "1", "--speculative-model", "ngram",
      "--num-speculative-tokens", "3"), "target-only"),
    (("--system", "paper-config1-u280", "--concurrency", "4", "--evaluator", "simulator"),
     "closed form only"),
    (("--model", "qwen2.5-7b-instruct", "--device", "h100-sxm", "--rate", "1", "--schedule",
      "brsd"), "--schedule"),
    (("--model", "qwen2.5-7b-instruct", "--device", "h100-sxm", "--rate", "1",
      "--speculative-model", "ngram", "--num-speculative-tokens", "3",
      "--speculative-device", "u280"), "--speculative-device"),
])
def test_dse_serve_refuses_bad_designs_in_one_line(capsys: pytest.CaptureFixture[str],
                                                  argv: tuple[str, ...], words: str) -> None:
    code, _, err = _run(capsys, "serve", *argv)
    assert code in (2, 4)
    assert words in err.strip().splitlines()[-1] and "Traceback" not in err
