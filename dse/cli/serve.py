"""`dse serve`: one model on R replicas of a GPU under a load (dse.serving)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from dse.cli.common import add_wide, positive_float, table, text_width, whole_number
from dse.cli.layout import wrap
from dse.errors import UsageError
from dse.limits import MAX_CONTEXT_TOKENS, MAX_TP
from dse.specs import Catalog

MAX_REPLICAS = 4096
MAX_REQUESTS = 100_000
GOODPUT_KEYS = ("ttft", "tpot", "e2el")


def rate_type(s: str) -> float:
    """Requests per second: a positive number, or inf (every request at once)."""
    if s.strip().lower() in ("inf", "infinity"):
        return math.inf
    return positive_float(s)


def _unit_open(s: str) -> float:
    """A share in [0, 1)."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"{s!r} must be in [0, 1)")
    return v


def goodput_type(s: str) -> tuple[str, float]:
    """One SLO of vLLM's --goodput syntax, KEY:MS (ttft, tpot or e2el)."""
    key, sep, ms = s.partition(":")
    if not sep or key not in GOODPUT_KEYS:
        raise argparse.ArgumentTypeError(
            f"{s!r}: expected KEY:MS with KEY one of {', '.join(GOODPUT_KEYS)} (e.g. ttft:500)")
    return key, positive_float(ms)


def serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="catalog name, model TOML or HF config.json")
    p.add_argument("--device", required=True, help="GPU name")
    p.add_argument("--tp", type=whole_number(1, MAX_TP),
                   help="tensor-parallel degree of a replica (default: the smallest that fits)")
    p.add_argument("--precision", help="weight precision (default bf16)")
    p.add_argument("--kv-precision", help="KV-cache precision: 16, fp8, int8 (default 16)")
    p.add_argument("--serving", default="vllm-v1",
                   help="GPU serving profile (default vllm-v1: vLLM's V1 engine, whose "
                   "continuous batching and caps the scheduler follows)")
    p.add_argument("--replicas", type=whole_number(1, MAX_REPLICAS), default=1,
                   help="replicas the load is split over evenly (default 1)")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--batch", type=whole_number(1, MAX_REQUESTS),
                      help="B requests start together and run to completion (static "
                      "batching, vLLM's benchmark_latency)")
    load.add_argument("--concurrency", type=whole_number(1, MAX_REQUESTS),
                      help="C clients in a closed loop")
    load.add_argument("--rate", type=rate_type,
                      help="Poisson arrivals, requests/s (inf: every request at once)")
    p.add_argument("--input-tokens", type=whole_number(1, MAX_CONTEXT_TOKENS), default=1024,
                   help="prompt tokens per request (default 1024, as vLLM's random dataset)")
    p.add_argument("--output-tokens", type=whole_number(1, MAX_CONTEXT_TOKENS), default=128,
                   help="output tokens per request (default 128)")
    p.add_argument("--requests", type=whole_number(1, MAX_REQUESTS), default=1000,
                   help="requests a run serves (default 1000, vLLM's --num-prompts)")
    p.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0,
                   help="the arrivals' random seed (simulator)")
    p.add_argument("--evaluator", choices=("closed-form", "simulator"), default="closed-form",
                   help="closed-form (steady-state means) or simulator (every request; "
                   "percentiles)")
    p.add_argument("--goodput", type=goodput_type, nargs="+", metavar="KEY:MS",
                   help="SLOs for request_goodput, vLLM's syntax: ttft:MS tpot:MS e2el:MS")
    p.add_argument("--speculative-model", metavar="NAME|ngram",
                   help="token-level speculative decoding (vLLM's name): a draft model run on "
                   "the target's GPUs, or ngram (prompt lookup on the host)")
    p.add_argument("--num-speculative-tokens", type=whole_number(1, 64),
                   help="tokens the proposer proposes per target pass (vLLM's name; needed "
                   "with --speculative-model)")
    p.add_argument("--acceptance-rate", type=_unit_open,
                   help="the chance each proposed token is accepted, in [0, 1) (needed with "
                   "--speculative-model: no published rate is shipped for the pair yet)")
    p.add_argument("--max-num-seqs", type=whole_number(1, 65_536),
                   help="scheduler cap on running sequences (default: vLLM's for the GPU)")
    p.add_argument("--max-num-batched-tokens", type=whole_number(1, 1_048_576),
                   help="scheduler cap on new tokens per iteration (default: vLLM's)")
    add_wide(p)


def _load(a: argparse.Namespace) -> Any:
    from dse.serving import Load

    if a.batch is not None:
        return Load("batch", float(a.batch), a.input_tokens, a.output_tokens, a.batch, a.seed)
    if a.concurrency is not None:
        return Load("concurrency", float(a.concurrency), a.input_tokens, a.output_tokens,
                    a.requests, a.seed)
    return Load("rate", float(a.rate), a.input_tokens, a.output_tokens, a.requests, a.seed)


def _slo(a: argparse.Namespace) -> Any:
    from dse.serving import Slo

    given = dict(a.goodput or [])
    return Slo(given.get("ttft"), given.get("tpot"), given.get("e2el"))


def run_serve(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.devices.registry import place, resolve
    from dse.serving import serve, vllm_caps

    dev, kind = resolve(cat, a.device)
    if kind.software_kind != "gpu-serving":
        raise UsageError(f"--device {a.device}: dse serve models GPU serving stacks (vLLM's "
                         f"continuous batching); {kind.label} boards are not served yet")
    if a.replicas > 1 and a.batch is not None and a.batch < a.replicas:
        raise UsageError(f"--batch {a.batch}: fewer requests than --replicas {a.replicas}")
    m = cat.model(a.model)
    pl = place(cat, m, a.device, precision_name=a.precision, software=a.serving,
               context_tokens=a.input_tokens + a.output_tokens, tp=a.tp,
               kv_precision=a.kv_precision)
    why = pl.infeasibility()
    if why:
        from dse.errors import InfeasibleError

        raise InfeasibleError(f"{m.name} on {dev.name}: " + "; ".join(why))
    spec, draft = _speculation(a, cat, pl)
    caps = vllm_caps(pl.memory_bytes, dev.name, max_num_seqs=a.max_num_seqs,
                     max_num_batched_tokens=a.max_num_batched_tokens)
    price = getattr(dev, "list_price_usd", None)
    load = _load(a)
    try:
        r = serve(pl, load, caps=caps, replicas=a.replicas, evaluator=a.evaluator,
                  slo=_slo(a), capex_usd=(price or 0.0) * pl.tp, speculation=spec,
                  draft=draft)
    except ValueError as e:
        from dse.errors import InfeasibleError

        raise InfeasibleError(str(e)) from None
    if price is None:
        r["cost_usd_per_mtok"] = None
        r["intervals"].pop("cost_usd_per_mtok", None)
    payload = {"model": m.name, "device": dev.name, "tp": pl.tp, "precision": pl.precision.name,
               "serving": pl.serving, "replicas": a.replicas, "evaluator": a.evaluator,
               "speculative": None if spec is None else {
                   "proposer": spec.proposer,
                   "num_speculative_tokens": spec.num_speculative_tokens,
                   "acceptance_rate": spec.acceptance_rate,
                   "tokens_per_pass": spec.tokens_per_pass, "basis": spec.basis},
               "load": {"kind": load.kind, "value": load.value,
                        "input_tokens": load.input_tokens,
                        "output_tokens": load.output_tokens, "requests": load.requests,
                        "seed": load.seed}, **r}
    return payload, _text(a, payload)


ROWS = (("request_throughput", "requests/s", "{:.3g}"), ("output_throughput", "tokens/s",
        "{:.4g}"), ("total_token_throughput", "tokens/s", "{:.4g}"),
        ("ttft", "ms", "{:.4g}"), ("tpot", "ms", "{:.4g}"), ("itl", "ms", "{:.4g}"),
        ("e2el", "ms", "{:.4g}"), ("mean_in_system", "requests", "{:.3g}"),
        ("j_per_token", "J/token", "{:.3g}"), ("avg_power_w", "W", "{:.4g}"),
        ("cost_usd_per_mtok", "$/Mtoken", "{:.3g}"), ("request_goodput", "requests/s",
                                                      "{:.3g}"))


def _cell(r: dict[str, Any], key: str, fmt: str) -> str:
    v = r.get(key)
    if v is None:
        return "-"
    iv = r["intervals"].get(key)
    if iv is None:
        return fmt.format(v)
    return f"{fmt.format(v)} [{fmt.format(iv[0])}-{fmt.format(iv[1])}]"


def _text(a: argparse.Namespace, r: dict[str, Any]) -> str:
    ld = r["load"]
    what = {"batch": f"a static batch of {ld['value']:g}",
            "concurrency": f"{ld['value']:g} concurrent clients",
            "rate": ("every request at once" if math.isinf(ld["value"])
                     else f"{ld['value']:g} requests/s (Poisson)")}[ld["kind"]]
    sp = r.get("speculative")
    spec = "" if sp is None else (
        f", speculating with {sp['proposer']} (k {sp['num_speculative_tokens']}, acceptance "
        f"{sp['acceptance_rate']:g}: {sp['tokens_per_pass']:.2f} tokens a pass)")
    head = (f"{r['model']} on {r['replicas']} x {r['device']} (tp={r['tp']}, "
            f"{r['precision']}, {r['serving']}{spec}): {what}, {ld['input_tokens']} in / "
            f"{ld['output_tokens']} out tokens, {r['evaluator']}")
    rows = []
    for key, unit, fmt in ROWS:
        if key in ("ttft", "tpot", "itl", "e2el"):
            cells = [_cell(r, f"{tag}_{key}_ms", fmt) for tag in ("mean", "median", "p90",
                                                                   "p99")]
            rows.append([f"{key} ({unit})", *cells])
        else:
            rows.append([f"{key} ({unit})", _cell(r, key, fmt), "", "", ""])
    lines = [head, table(["metric", "mean [90% interval]", "median", "p90", "p99"], rows,
                         width=text_width(a))]
    notes = [f"scheduler: max_num_seqs {r['max_num_seqs']}, max_num_batched_tokens "
             f"{r['max_num_batched_tokens']}; KV cache {r['kv_capacity_tokens']} tokens a "
             "replica"]
    cap = r.get("capacity_request_rate")
    if isinstance(cap, float) and math.isfinite(cap):
        notes.append(f"capacity about {cap * r['replicas']:.3g} requests/s"
                     + ("; this rate is past it: requests queue and latency grows with the "
                        "run's length" if r.get("saturated") else ""))
    if r["evaluator"] == "closed-form":
        notes.append("closed form: steady-state means (percentiles: --evaluator simulator)")
    notes.append("[low-high]: 90% intervals from the device's time and power factors; batched "
                 "iterations extrapolate batch-1 calibration (docs/model.md)")
    return wrap("\n".join([*lines, "", *notes]), text_width(a))


def _speculation(a: argparse.Namespace, cat: Catalog, pl: Any) -> tuple[Any, Any]:
    """The token-level speculation the flags ask for, and its draft's placement (None, None
    without --speculative-model)."""
    from dse.devices.registry import place
    from dse.serving import Speculation

    given = (a.speculative_model, a.num_speculative_tokens, a.acceptance_rate)
    if a.speculative_model is None:
        if any(v is not None for v in given[1:]):
            raise UsageError("--num-speculative-tokens and --acceptance-rate need "
                             "--speculative-model")
        return None, None
    if a.num_speculative_tokens is None or a.acceptance_rate is None:
        raise UsageError("--speculative-model needs --num-speculative-tokens and "
                         "--acceptance-rate")
    draft = None
    if a.speculative_model != "ngram":
        dm = cat.model(a.speculative_model)
        if dm.tokenizer_family != pl.model.tokenizer_family:
            raise UsageError(f"--speculative-model {dm.name} ({dm.tokenizer_family}) and "
                             f"{pl.model.name} ({pl.model.tokenizer_family}) do not share a "
                             "tokenizer")
        draft = place(cat, dm, pl.device.name, precision_name=pl.precision.name,
                      software=pl.serving, context_tokens=pl.context_tokens, tp=pl.tp)
    spec = Speculation(a.speculative_model, a.num_speculative_tokens, a.acceptance_rate,
                       "--acceptance-rate (given)")
    return spec, draft
