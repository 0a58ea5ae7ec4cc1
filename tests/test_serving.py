"""Serving at load (dse.serving, `dse serve`): the laws each evaluator keeps, the two
evaluators' agreement below capacity, hand-computed schedules, and the command's contract."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from dse.cli import main
from dse.devices.registry import place
from dse.serving import Load, serve, vllm_caps
from dse.serving.closed_form import static_batch
from dse.serving.engine import Engine
from dse.serving.simulator import simulate
from dse.specs import Catalog

KEYS = ("request_throughput", "mean_tpot_ms", "mean_e2el_ms", "mean_in_system")


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog.load()


@pytest.fixture(scope="module")
def small(cat: Catalog):  # a small model on one A100: fast to simulate
    return place(cat, cat.model("qwen2.5-0.5b-instruct"), "a100-80gb-pcie",
                 precision_name="bf16", software="vllm-cudagraph", context_tokens=640)


@pytest.fixture(scope="module")
def h100(cat: Catalog):
    return place(cat, cat.model("qwen2.5-7b-instruct"), "h100-sxm", precision_name="bf16",
                 software="vllm-v1", context_tokens=640)


def test_batch_one_is_the_single_stream_model(small, h100) -> None:
    """One request alone: a prefill of I tokens, then O - 1 decode steps of one sequence
    (dse roofline's primitives), for both evaluators, and at a vanishing rate."""
    for pl in (small, h100):
        single = float(pl.prefill_s(512)) + float(pl.decode_s(127, 512))
        for ev in ("closed-form", "simulator"):
            r = serve(pl, Load("batch", 1, 512, 128, 1), evaluator=ev, intervals=False)
            assert r["mean_e2el_ms"] == pytest.approx(single * 1e3, rel=1e-9)
            assert r["mean_ttft_ms"] == pytest.approx(float(pl.prefill_s(512)) * 1e3, rel=1e-9)
        slow = serve(pl, Load("rate", 0.01, 512, 128, 50), intervals=False)
        assert slow["mean_e2el_ms"] == pytest.approx(single * 1e3, rel=0.05)


def test_a_static_batch_by_hand(small) -> None:
    """Two requests together, both prompts in one pass (2 x 512 <= 2048 tokens), then 127
    decode steps of two sequences at contexts 512 .. 638 (mean 575: the time is affine)."""
    e = Engine(small, vllm_caps(small.memory_bytes, "a100-80gb-pcie"))
    s = static_batch(e, Load("batch", 2, 512, 128, 2))
    pre = float(small.iteration_s(0, 0, 1024, 0, 2))
    dec = float(small.iteration_s(2, 575, 0, 0))
    assert s.ttft_s == pytest.approx(pre, rel=1e-12)
    assert s.e2el_s == pytest.approx(pre + 127 * dec, rel=1e-9)
    assert s.request_rate == pytest.approx(2 / (pre + 127 * dec), rel=1e-9)


def test_littles_law_in_the_simulator(small) -> None:
    """The time-average number in the system, integrated over the run's events, equals the
    completion rate times the mean time in the system; every request arrives, gets its first
    token, then finishes."""
    e = Engine(small, vllm_caps(small.memory_bytes, "a100-80gb-pcie"))
    run = simulate(e, Load("rate", 60.0, 512, 64, 400, seed=3))
    assert np.all(run.arrival_s <= run.first_token_s) and np.all(
        run.first_token_s <= run.finish_s)
    times = np.concatenate([run.arrival_s, run.finish_s])
    steps = np.concatenate([np.ones(400), -np.ones(400)])
    order = np.lexsort((-steps, times))
    t, n = times[order], np.cumsum(steps[order])
    area = float(np.sum(n[:-1] * np.diff(t)))
    duration = run.duration_s
    lam, w = 400 / duration, float(np.mean(run.finish_s - run.arrival_s))
    assert area / duration == pytest.approx(lam * w, rel=1e-9)
    r = serve(small, Load("rate", 60.0, 512, 64, 400, seed=3), evaluator="simulator",
              intervals=False)
    assert r["mean_in_system"] == pytest.approx(area / duration, rel=1e-9)


@pytest.mark.parametrize(("which", "frac"), [("small", 0.1), ("small", 0.4), ("small", 0.7),
                                            ("h100", 0.1), ("h100", 0.4), ("h100", 0.7)])
def test_the_evaluators_agree_below_capacity(small, h100, which: str, frac: float) -> None:
    """Throughput, TPOT, TTFT, end-to-end latency, the number in the system and energy per
    token within 5% of each other up to 70% of capacity (2,000 requests: a Poisson run's span
    varies by 1/sqrt(n)). Measured, closed form against the simulator: TPOT -1.1% to -3.2%,
    the number in the system -2.0% to -4.7%, TTFT -4.4% to +0.9%, energy per token +1.1% to
    +1.9%; before the prompts per iteration were a Poisson count (the first prompt rides on the
    decodes' weight read, the next ones add their compute whole), TPOT -6.6%, the number in
    the system -8.1% and TTFT -8.7% for the 7B on an H100 at 70%."""
    pl = {"small": small, "h100": h100}[which]
    inp, out = (512, 64) if which == "small" else (512, 128)
    cap = serve(pl, Load("rate", 1.0, inp, out, 600), intervals=False)[
        "capacity_request_rate"]
    load = Load("rate", frac * cap, inp, out, 2000, seed=1)
    a = serve(pl, load, intervals=False)
    b = serve(pl, load, evaluator="simulator", intervals=False)
    for k in (*KEYS, "mean_ttft_ms", "j_per_token"):
        assert a[k] == pytest.approx(b[k], rel=0.05), k


def test_the_knee(small) -> None:
    """Past capacity the throughput stops at capacity and the latency grows; below it the
    latency rises with the rate."""
    cap = serve(small, Load("rate", 1.0, 512, 64, 600), intervals=False)[
        "capacity_request_rate"]
    rs = [serve(small, Load("rate", f * cap, 512, 64, 2000), intervals=False)
          for f in (0.2, 0.5, 0.8, 1.5, 3.0)]
    e2el = [r["mean_e2el_ms"] for r in rs]
    assert all(a <= b for a, b in itertools.pairwise(e2el))
    assert e2el[-1] > 3 * e2el[1]
    assert rs[-1]["request_throughput"] == pytest.approx(cap, rel=0.1)
    assert rs[-1]["saturated"] and not rs[1]["saturated"]


def test_replicas_split_the_load(small) -> None:
    one = serve(small, Load("rate", 20.0, 512, 64, 400), intervals=False)
    two = serve(small, Load("rate", 40.0, 512, 64, 800), replicas=2, intervals=False)
    assert two["mean_e2el_ms"] == pytest.approx(one["mean_e2el_ms"], rel=1e-9)
    assert two["request_throughput"] == pytest.approx(2 * one["request_throughput"], rel=1e-9)
    assert two["j_per_token"] == pytest.approx(one["j_per_token"], rel=1e-9)


def test_goodput_counts_the_requests_within_every_slo(small) -> None:
    from dse.serving import Slo

    load = Load("rate", 20.0, 512, 64, 300)
    loose = serve(small, load, evaluator="simulator", slo=Slo(1e6, 1e6, 1e6), intervals=False)
    assert loose["request_goodput"] == pytest.approx(loose["request_throughput"])
    tight = serve(small, load, evaluator="simulator", slo=Slo(ttft_ms=1e-3), intervals=False)
    assert tight["request_goodput"] == 0.0
    assert serve(small, load, intervals=False)["request_goodput"] is None


def test_intervals_hold_the_central_figure(h100) -> None:
    r = serve(h100, Load("rate", 5.0, 512, 128, 300))
    assert set(r["intervals"]) >= {"request_throughput", "mean_tpot_ms", "j_per_token"}
    for k, (lo, hi) in r["intervals"].items():
        assert lo <= r[k] * (1 + 1e-9) and r[k] <= hi * (1 + 1e-9), k
    assert r["intervals"]["mean_tpot_ms"][1] > r["mean_tpot_ms"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The command's exit code (returned, or raised by argparse), stdout and stderr."""
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_dse_serve_json_uses_vllms_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "serve", "--model", "qwen2.5-0.5b-instruct", "--device",
                        "a100-80gb-pcie", "--rate", "10", "--input-tokens", "256",
                        "--output-tokens", "32", "--requests", "200", "--evaluator",
                        "simulator", "--goodput", "ttft:500", "tpot:50", "--json")
    assert code == 0
    r = json.loads(out)
    for k in ("request_throughput", "output_throughput", "total_token_throughput",
              "request_goodput", "mean_in_system", "j_per_token", "avg_power_w",
              "cost_usd_per_mtok", "intervals"):
        assert k in r, k
    for tag in ("mean", "median", "p90", "p99"):
        for m in ("ttft", "tpot", "itl", "e2el"):
            assert isinstance(r[f"{tag}_{m}_ms"], float), (tag, m)
    assert r["output_throughput"] == pytest.approx(32 * r["request_throughput"])


@pytest.mark.parametrize("cols", ["80", "100"])
def test_dse_serve_fits_the_width(capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch, cols: str) -> None:
    monkeypatch.setenv("COLUMNS", cols)
    code, out, _ = _run(capsys, "serve", "--model", "qwen2.5-0.5b-instruct", "--device",
                        "a100-80gb-pcie", "--rate", "inf", "--requests", "100")
    assert code == 0 and out.strip()
    assert max(len(line) for line in out.splitlines()) <= int(cols)
    assert "request_throughput" in out and "[" in out


@pytest.mark.parametrize(("argv", "code", "words"), [
    (("--device", "u280", "--rate", "1"), 2, "GPU serving"),
    (("--device", "a100-80gb-pcie", "--rate", "-1"), 2, "--rate"),
    (("--device", "a100-80gb-pcie", "--rate", "1", "--batch", "2"), 2, "not allowed"),
    (("--device", "a100-80gb-pcie", "--batch", "2", "--goodput", "ttfx:5"), 2, "--goodput"),
    (("--device", "a100-80gb-pcie", "--rate", "1", "--input-tokens", "20000000"), 2,
     "--input-tokens"),
])
def test_dse_serve_refuses_bad_input_in_one_line(capsys: pytest.CaptureFixture[str],
                                                 argv: tuple[str, ...], code: int,
                                                 words: str) -> None:
    got, _, err = _run(capsys, "serve", "--model", "qwen2.5-0.5b-instruct", *argv)
    assert got == code
    last = err.strip().splitlines()[-1]
    assert words in last and "Traceback" not in err


def test_a_model_too_large_for_the_cache_is_infeasible(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    code, _, err = _run(capsys, "serve", "--model", "qwen2.5-0.5b-instruct", "--device",
                        "a100-80gb-pcie", "--rate", "1", "--input-tokens", "30000",
                        "--output-tokens", "2000")
    assert code == 4 and err.count("\n") == 1 and "Traceback" not in err


def test_caps_follow_vllm_by_gpu() -> None:
    assert (vllm_caps(80 * 2**30, "h100-sxm").max_num_batched_tokens,
            vllm_caps(80 * 2**30, "h100-sxm").max_num_seqs) == (8192, 1024)
    assert (vllm_caps(80 * 2**30, "a100-80gb-sxm").max_num_batched_tokens,
            vllm_caps(24 * 2**30, "rtx-4090").max_num_seqs) == (2048, 256)
    assert math.isinf(Load("rate", math.inf, 1, 1, 1).value)


def test_the_command_pages_examples_are_current(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/commands/serve.md's `$ dse serve` blocks are what the command prints (the closed
    form, and the simulator with its default seed, are deterministic)."""
    import contextlib
    import io
    import shlex

    from tests.test_readme_examples import examples

    monkeypatch.delenv("COLUMNS", raising=False)
    got = examples(("docs/commands/serve.md",))
    assert len(got) == 4
    for cmd, expected in got:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(shlex.split(cmd)[1:]) == 0
        assert buf.getvalue().rstrip("\n") == expected, cmd


# ---------------------------------------------------------------- token-level speculation


def test_tokens_per_pass_by_hand() -> None:
    """a = 0.5, k = 2: 1 + 0.5 + 0.25 = 1.75 tokens a pass; a = 0 gains the target's token."""
    from dse.serving import Speculation

    assert Speculation("ngram", 2, 0.5, "").tokens_per_pass == pytest.approx(1.75)
    assert Speculation("ngram", 4, 0.0, "").tokens_per_pass == 1.0
    from dse.serving.simulator import _accepted

    draws = _accepted(np.random.default_rng(0), 0.7, 4, 200_000)
    assert draws.min() == 1 and draws.max() == 5
    assert draws.mean() == pytest.approx(Speculation("ngram", 4, 0.7, "").tokens_per_pass,
                                         rel=0.01)


def test_speculation_pays_alone_and_less_at_load(h100, cat: Catalog) -> None:
    """A proposal nobody accepts only adds the verification's cost; a useful one speeds a lone
    request up more than a saturated replica, where the verified positions compete with
    other sequences for the pass (the issue's 'gain shrinks as batches grow')."""
    from dse.serving import Speculation

    def tpot(load: Load, spec: Speculation | None) -> float:
        return serve(h100, load, speculation=spec, intervals=False)["mean_tpot_ms"]

    one = Load("batch", 1, 512, 128, 1)
    assert tpot(one, Speculation("ngram", 4, 0.0, "")) >= tpot(one, None)
    good = Speculation("ngram", 4, 0.7, "")
    alone = tpot(one, None) / tpot(one, good)
    offline = Load("rate", math.inf, 512, 128, 1000)
    loaded = (serve(h100, offline, speculation=good, intervals=False)["request_throughput"]
              / serve(h100, offline, intervals=False)["request_throughput"])
    assert alone > 1.5 and loaded < alone


def test_speculation_evaluators_agree_below_capacity(h100) -> None:
    from dse.serving import Speculation

    spec = Speculation("ngram", 4, 0.6, "")
    cap = serve(h100, Load("rate", 1.0, 512, 128, 600), speculation=spec, intervals=False)[
        "capacity_request_rate"]
    load = Load("rate", 0.4 * cap, 512, 128, 5000, seed=2)  # a span's noise: 1.4%
    a = serve(h100, load, speculation=spec, intervals=False)
    b = serve(h100, load, speculation=spec, evaluator="simulator", intervals=False)
    for k in KEYS:
        assert a[k] == pytest.approx(b[k], rel=0.05), k


@pytest.mark.parametrize(("extra", "words"), [
    (("--speculative-model", "llama-3.2-1b-instruct", "--num-speculative-tokens", "4",
      "--acceptance-rate", "0.7"), "tokenizer"),
    (("--speculative-model", "ngram"), "--num-speculative-tokens"),
    (("--num-speculative-tokens", "3"), "--speculative-model"),
    (("--speculative-model", "ngram", "--num-speculative-tokens", "3", "--acceptance-rate",
      "1.2"), "--acceptance-rate"),
])
def test_speculation_flags_are_checked(capsys: pytest.CaptureFixture[str],
                                       extra: tuple[str, ...], words: str) -> None:
    code, _, err = _run(capsys, "serve", "--model", "qwen2.5-7b-instruct", "--device",
                        "h100-sxm", "--rate", "5", *extra)
    assert code == 2 and words in err.strip().splitlines()[-1] and "Traceback" not in err
