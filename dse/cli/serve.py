"""`dse serve`: one model on R replicas of a GPU, or a whole design (--system, --design,
--set), under a load (dse.serving)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from dse.cli.common import (
    Once,
    add_wide,
    flags_named,
    positive_float,
    rate_per_s,
    seed_type,
    table,
    text_width,
    was_given,
    whole_number,
)
from dse.cli.layout import wrap
from dse.cli.serve_versus import accuracy_margin, versus, versus_lines
from dse.core.limits import MAX_CONTEXT_TOKENS, MAX_NUM_SEQS, MAX_TP
from dse.errors import UsageError
from dse.specs import Catalog

MAX_REPLICAS = 4096
MAX_REQUESTS = 100_000
GOODPUT_KEYS = ("ttft", "tpot", "e2el")


def rate_type(s: str) -> float:
    """Requests per second: positive, at most MAX_RATE_PER_S, or inf (all at once)."""
    if s.strip().lower() in ("inf", "infinity"):
        return math.inf
    return rate_per_s(s)


def _unit_open(s: str) -> float:
    """A share in [0, 1)."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"{s!r} must be in [0, 1)")
    return v


def _speculative_tokens(s: str) -> int:
    """K: a whole number of proposed tokens, 1..64."""
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a whole number") from None
    if not 1 <= v <= 64:
        raise argparse.ArgumentTypeError(f"{s}: the proposer proposes 1 to 64 tokens a pass "
                                         "(0 is no speculation: leave --speculative-model out)")
    return v


def goodput_type(s: str) -> tuple[str, float]:
    """One SLO of vLLM's --goodput syntax, KEY:MS (ttft, tpot or e2el)."""
    key, sep, ms = s.partition(":")
    if not sep or key not in GOODPUT_KEYS:
        raise argparse.ArgumentTypeError(
            f"{s!r}: expected KEY:MS with KEY one of {', '.join(GOODPUT_KEYS)} (e.g. ttft:500)")
    return key, positive_float(ms)


DEFAULT_INPUT, DEFAULT_OUTPUT = 1024, 128  # vLLM's random dataset
DEFAULT_WORKLOAD = "math500"  # a named system's workload unless --scenario (as dse export)
MODEL_ONLY = (("--tp", "tp"), ("--precision", "precision"), ("--kv-precision", "kv_precision"),
              ("--input-tokens", "input_tokens"), ("--output-tokens", "output_tokens"))


def serve_args(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", action=Once,
                      help="catalog name, model TOML or HF config.json (with --device)")
    what.add_argument("--system", action=Once,
                      help="a named system, e.g. paper-config1-u280: the whole design at load")
    what.add_argument("--design", action=Once,
                      help="a system or design TOML file (its workload is the default)")
    p.add_argument("--device", help="GPU name (with --model)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a design knob (with --system or --design), as dse evaluate")
    p.add_argument("--schedule", action=Once,
                   help="a speculative design's schedule: rsd, brsd, brsd_stepahead, "
                   "heteroreason (default: the design file's, else heteroreason, else the "
                   "last preset its shared devices can run)")
    p.add_argument("--scenario", action=Once,
                   help="workload of a design: its prompt tokens in, the design's tokens per "
                   f"problem out (default: the design file's, else {DEFAULT_WORKLOAD})")
    p.add_argument("--tp", type=whole_number(1, MAX_TP),
                   help="tensor-parallel degree of a replica (default: the smallest that fits)")
    p.add_argument("--precision", help="weight precision (default bf16)")
    p.add_argument("--kv-precision", help="KV-cache precision: 16, fp8, int8 (default 16)")
    p.add_argument("--serving", default=None,
                   help="GPU serving profile (default vllm-v1: vLLM's V1 engine, whose "
                   "continuous batching and caps the scheduler follows)")
    p.add_argument("--replicas", type=whole_number(1, MAX_REPLICAS),
                   help="replicas the load is split over evenly (default 1, or a design "
                   "file's [serving] replicas)")
    # one of the three, or a design file whose [serving] table has the rate (_take_serving)
    load = p.add_mutually_exclusive_group()
    load.add_argument("--batch", type=whole_number(1, MAX_REQUESTS),
                      help="B requests start together and run to completion (static "
                      "batching, vLLM's benchmark_latency)")
    load.add_argument("--concurrency", type=whole_number(1, MAX_REQUESTS),
                      help="C clients in a closed loop")
    load.add_argument("--rate", type=rate_type,
                      help="Poisson arrivals, requests/s (inf: every request at once)")
    p.add_argument("--input-tokens", type=whole_number(1, MAX_CONTEXT_TOKENS),
                   help=f"prompt tokens per request (default {DEFAULT_INPUT}, as vLLM's random "
                   "dataset)")
    p.add_argument("--output-tokens", type=whole_number(1, MAX_CONTEXT_TOKENS),
                   help=f"output tokens per request (default {DEFAULT_OUTPUT})")
    p.add_argument("--dataset", choices=("sharegpt",),
                   help="each request's lengths drawn from a named distribution (sharegpt: "
                   "vLLM's benchmark_serving sampling of ShareGPT V3; the closed form uses its "
                   "means); instead of --input-tokens/--output-tokens")
    p.add_argument("--requests", type=whole_number(1, MAX_REQUESTS), default=1000,
                   help="requests a run serves (default 1000, vLLM's --num-prompts)")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="the arrivals' random seed (simulator)")
    p.add_argument("--evaluator", choices=("closed-form", "simulator"), default="closed-form",
                   help="closed-form (steady-state means) or simulator (every request; "
                   "percentiles)")
    p.add_argument("--goodput", type=goodput_type, nargs="+", metavar="KEY:MS",
                   help="SLOs for request_goodput, vLLM's syntax: ttft:MS tpot:MS e2el:MS")
    p.add_argument("--speculative-model", metavar="NAME|ngram|eagle",
                   help="token-level speculative decoding (vLLM's name): a draft model (on the "
                   "target's GPUs, or on --speculative-device), ngram (prompt lookup on the "
                   "host) or eagle (a one-layer head on the target's hidden states)")
    p.add_argument("--num-speculative-tokens", type=_speculative_tokens,
                   help="tokens the proposer proposes per target pass (vLLM's name; needed "
                   "with --speculative-model)")
    p.add_argument("--acceptance-rate", type=_unit_open,
                   help="the chance each proposed token is accepted, in [0, 1) (default: the "
                   "closest published row, dse/data/speculative_acceptance.toml)")
    p.add_argument("--speculative-device",
                   help="a board of its own for the draft model (an FPGA board, e.g. u280: its "
                   "engine's decode at the batch; default: the target's GPUs)")
    p.add_argument("--max-num-seqs", type=whole_number(1, MAX_NUM_SEQS),
                   help="scheduler cap on running sequences (default: vLLM's for the GPU)")
    p.add_argument("--max-num-batched-tokens", type=whole_number(1, 1_048_576),
                   help="scheduler cap on new tokens per iteration (default: vLLM's)")
    add_wide(p)


def _load(a: argparse.Namespace) -> Any:
    from dse.serving import Load

    i = a.input_tokens or DEFAULT_INPUT
    o = a.output_tokens or DEFAULT_OUTPUT
    ds = getattr(a, "dataset", None)
    if ds is not None:
        from dse.serving.datasets import dataset

        got = dataset(ds)
        i, o = round(got.mean_input_tokens), round(got.mean_output_tokens)
    if a.batch is not None:
        return Load("batch", float(a.batch), i, o, a.batch, a.seed, ds)
    if a.concurrency is not None:
        return Load("concurrency", float(a.concurrency), i, o, a.requests, a.seed, ds)
    return Load("rate", float(a.rate), i, o, a.requests, a.seed, ds)


def _slo(a: argparse.Namespace) -> Any:
    from dse.serving import Slo

    given: dict[str, float] = {}
    for key, ms in a.goodput or []:
        if key in given:  # as the searches' --slo (dse.search.loads.parse_slo)
            raise UsageError(f"--goodput: {key} given twice")
        given[key] = ms
    return Slo(given.get("ttft"), given.get("tpot"), given.get("e2el"))


def _check_flags(a: argparse.Namespace) -> None:
    """One-line usage errors for flags that do not go together."""
    if a.evaluator != "simulator" and was_given(a, "seed"):
        raise UsageError(f"--seed {a.seed}: seeds the simulator's draws; the closed form draws "
                         "nothing: add --evaluator simulator, or leave --seed out")
    if a.model is not None:
        if a.device is None:
            raise UsageError("--model needs --device (the GPU that serves it)")
        if a.set:
            raise UsageError("--set changes a design's knobs: give --system or --design, or "
                             "the model's own flags (--tp, --precision, ...) with --model")
        if a.scenario is not None or a.schedule is not None:
            raise UsageError("--scenario and --schedule belong to a design (--system, --design):"
                             " with --model give --input-tokens and --output-tokens")
        if a.dataset is not None and (a.input_tokens or a.output_tokens):
            raise UsageError(f"--dataset {a.dataset} draws each request's lengths; leave out "
                             "--input-tokens and --output-tokens")
        return
    flag = "--system" if a.system is not None else "--design"
    if a.device is not None:
        raise UsageError(f"--device goes with --model; {flag} places every role itself "
                         "(change a device with --set, e.g. --set target_device=h100-sxm)")
    for name, attr in (*MODEL_ONLY, ("--serving", "serving"), ("--dataset", "dataset")):
        if getattr(a, attr) is not None:
            raise UsageError(f"{name} goes with --model; with {flag} the lengths come from "
                             "the workload and the placement from the design (--set)")


LOAD_FLAGS = ("--batch", "--concurrency", "--rate")


def _no_load(a: argparse.Namespace) -> bool:
    return a.batch is None and a.concurrency is None and a.rate is None


def _take_serving(a: argparse.Namespace, serving: Any, path: str) -> list[str]:
    """A design file's [serving] table (dse.io.design_files.ServingSettings: what a search at a
    load chose) as the defaults of the flags not given: the rate (when no --batch,
    --concurrency or --rate), replicas, the scheduler's caps, the token-level proposer with its
    K and acceptance rate, the SLOs as --goodput. Sets them on `a`; returns the flags taken,
    for the answer's note."""
    if serving is None:
        if _no_load(a):
            raise UsageError(f"give one of {', '.join(LOAD_FLAGS)} ({path} has no [serving] "
                             "table with a rate)")
        return []
    taken = []
    if _no_load(a):
        a.rate = serving.rate
        taken.append(f"--rate {serving.rate:g}")
    pairs = (("replicas", "replicas", "--replicas"), ("max_num_seqs", "max_num_seqs",
             "--max-num-seqs"), ("max_num_batched_tokens", "max_num_batched_tokens",
             "--max-num-batched-tokens"))
    for attr, key, flag in pairs:
        value = getattr(serving, key)
        if getattr(a, attr) is None and value is not None:
            setattr(a, attr, value)
            taken.append(f"{flag} {value}")
    if a.speculative_model is None and serving.speculative_proposer is not None:
        a.speculative_model = serving.speculative_proposer
        a.num_speculative_tokens = a.num_speculative_tokens or serving.num_speculative_tokens
        taken.append(f"--speculative-model {a.speculative_model} --num-speculative-tokens "
                     f"{a.num_speculative_tokens}")
        if a.acceptance_rate is None and serving.speculative_acceptance_rate is not None:
            a.acceptance_rate = serving.speculative_acceptance_rate
            a.acceptance_basis = f"{path} [serving] speculative_acceptance_rate"
            taken.append(f"--acceptance-rate {a.acceptance_rate:.3g}")
    slo = [(k, v) for k, v in (("ttft", serving.ttft_ms), ("tpot", serving.tpot_ms),
                               ("e2el", serving.e2el_ms)) if v is not None]
    if a.goodput is None and slo:
        a.goodput = slo
        taken.append("--goodput " + " ".join(f"{k}:{v:g}" for k, v in slo))
    return [f"{path} [serving]: " + ", ".join(taken)] if taken else []


# the flags whose values dse serve passes to the library, by its arguments' names
SERVE_FLAGS = {k: "--" + k.replace("_", "-") for k in (
    "model", "system", "device", "precision", "kv_precision", "serving", "tp",
    "speculative_model", "speculative_device", "schedule", "scenario")}


def run_serve(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    _check_flags(a)
    given = {f: getattr(a, k) for k, f in SERVE_FLAGS.items()}
    with flags_named(given, SERVE_FLAGS):
        if a.model is None:
            return _run_design(a, cat)
        return _run_model(a, cat)


def _run_model(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    if _no_load(a):
        raise UsageError(f"give one of {', '.join(LOAD_FLAGS)}")
    a.replicas = a.replicas or 1
    from dse.devices.registry import place, resolve
    from dse.serving import serve, vllm_caps

    a.serving = a.serving or "vllm-v1"
    dev, kind = resolve(cat, a.device)
    if kind.software_kind != "gpu-serving":
        raise UsageError(f"--device {a.device}: dse serve models GPU serving stacks (vLLM's "
                         f"continuous batching); {kind.label} boards are not served yet")
    if a.replicas > 1 and a.batch is not None and a.batch < a.replicas:
        raise UsageError(f"--batch {a.batch}: fewer requests than --replicas {a.replicas}")
    m = cat.model(a.model)
    if a.tp is not None:
        from dse.specs.model import tp_misfit

        misfit = tp_misfit(m, a.tp)
        if misfit is not None:
            raise UsageError(f"--tp {a.tp}: {misfit}")
    load = _load(a)
    pl = place(cat, m, a.device, precision_name=a.precision, software=a.serving,
               context_tokens=load.input_tokens + load.output_tokens, tp=a.tp,
               kv_precision=a.kv_precision)
    why = pl.infeasibility()
    if why:
        from dse.errors import InfeasibleError

        raise InfeasibleError(f"{m.name} on {dev.name}: " + "; ".join(why))
    spec, extra = _speculation(a, cat, pl, a.dataset)
    draft, apart = extra.get("draft"), extra.get("draft_apart", False)
    caps = vllm_caps(pl.memory_bytes, dev.name, max_num_seqs=a.max_num_seqs,
                     max_num_batched_tokens=a.max_num_batched_tokens)
    price = getattr(dev, "list_price_usd", None)
    d_price = getattr(getattr(draft, "device", None), "list_price_usd", None) if apart else 0.0
    try:
        r = serve(pl, load, caps=caps, replicas=a.replicas, evaluator=a.evaluator,
                  slo=_slo(a), capex_usd=(price or 0.0) * pl.tp + (d_price or 0.0),
                  speculation=spec, **extra)
    except ValueError as e:
        from dse.errors import InfeasibleError

        raise InfeasibleError(str(e)) from None
    if price is None or d_price is None:
        r["cost_usd_per_mtok"] = None
        r["intervals"].pop("cost_usd_per_mtok", None)
    payload = {"model": m.name, "device": dev.name, "tp": pl.tp, "precision": pl.precision.name,
               "serving": pl.serving, "replicas": a.replicas, "evaluator": a.evaluator,
               "family": "target-only" if spec is None else "token-speculative",
               "speculative": _spec_payload(spec, draft, apart),
               "load": _load_payload(load), **r}
    if spec is not None:
        def serve_alone() -> dict[str, Any]:
            out = serve(pl, load, caps=caps, replicas=a.replicas, evaluator=a.evaluator,
                        slo=_slo(a), capex_usd=(price or 0.0) * pl.tp)
            if price is None:
                out["cost_usd_per_mtok"] = None
            return dict(out)

        payload.update(versus(payload, serve_alone))
    return payload, _text(a, payload)


def _spec_payload(spec: Any, draft: Any, apart: bool) -> dict[str, Any] | None:
    if spec is None:
        return None
    return {"proposer": spec.proposer, "num_speculative_tokens": spec.num_speculative_tokens,
            "acceptance_rate": spec.acceptance_rate, "tokens_per_pass": spec.tokens_per_pass,
            "basis": spec.basis,
            "device": None if draft is None else draft.device.name if apart else "target's"}


def _load_payload(load: Any) -> dict[str, Any]:
    return {"kind": load.kind, "value": load.value, "input_tokens": load.input_tokens,
            "output_tokens": load.output_tokens, "requests": load.requests, "seed": load.seed,
            "dataset": load.dataset}


def _run_design(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    """A whole design at load (dse.serving.designs.serve_system)."""
    from dse.cli.common import read_workload
    from dse.errors import InfeasibleError
    from dse.io.design_files import parse_set
    from dse.io.resolve import (
        override_spec,
        read_source,
        runnable_schedules,
        schedule_misfit,
        schedule_of,
        target_alone,
    )
    from dse.model.design import build_design
    from dse.model.schedules import PRESETS
    from dse.serving import LIFETIME_YEARS, USD_PER_KWH, vllm_caps
    from dse.serving.designs import serve_system

    src = read_source(cat, Path(a.design) if a.design is not None else a.system)
    taken = _take_serving(a, src.serving, a.design or a.system)
    a.replicas = a.replicas or 1
    w = read_workload(cat, a.scenario or src.workload or DEFAULT_WORKLOAD)
    sys_over, flags = parse_set(a.set)
    spec = override_spec(src.spec, sys_over, source="--set")
    schedule_misfit(spec.workflow_name, a.schedule)
    sched = schedule_of(a.schedule, src.schedule).with_flags(**flags)
    ok, why = runnable_schedules(spec, [sched])
    if not ok and a.schedule is None:  # the last preset the shared devices can run
        ok = runnable_schedules(spec, [PRESETS[n].with_flags(**flags) for n in PRESETS])[0][-1:]
    if not ok:
        raise UsageError(f"{spec.name}: {'; '.join(why)}")
    d = build_design(cat, spec, ok[0])
    if d.workflow != "target-only" and a.evaluator == "simulator" and a.concurrency:
        raise UsageError(f"--concurrency with --evaluator simulator: a {d.family} design's "
                         "closed loop has the closed form only (the simulator runs a "
                         "request's overlapped roles in turn); use --rate or the closed form")
    spec_tok, extra = _speculation(a, cat, d.target, w.name) \
        if d.workflow == "target-only" else _no_speculation(a, d)
    draft, apart = extra.get("draft"), extra.get("draft_apart", False)
    caps = vllm_caps(d.target.memory_bytes, d.target.device.name, max_num_seqs=a.max_num_seqs,
                     max_num_batched_tokens=a.max_num_batched_tokens)
    try:
        r = serve_system(d, w, _load(a), replicas=a.replicas, evaluator=a.evaluator,
                         slo=_slo(a), lifetime_years=LIFETIME_YEARS, usd_per_kwh=USD_PER_KWH,
                         speculation=spec_tok, engine_extra=extra, caps=caps,
                         max_num_seqs=a.max_num_seqs)
    except ValueError as e:
        raise InfeasibleError(str(e)) from None
    load = r.pop("load")
    t = d.target
    payload = {"model": t.model.name, "device": t.device.name, "tp": t.tp,
               "precision": t.precision.name, "serving": t.serving, "replicas": a.replicas,
               "evaluator": a.evaluator, "speculative": _spec_payload(spec_tok, draft, apart),
               "load": _load_payload(load), **r}
    if taken:
        payload["from_design_file"] = taken[0]
    if d.workflow != "target-only" or spec_tok is not None:
        alone = d if d.workflow == "target-only" else build_design(
            cat, target_alone(d.system), d.schedule)

        def serve_alone() -> dict[str, Any]:
            return serve_system(alone, w, _load(a), replicas=a.replicas, evaluator=a.evaluator,
                                slo=_slo(a), lifetime_years=LIFETIME_YEARS,
                                usd_per_kwh=USD_PER_KWH, caps=caps, max_num_seqs=a.max_num_seqs)

        payload.update(versus(payload, serve_alone, accuracy=None if alone is d else (
            accuracy_margin(d, alone, w))))
    return payload, _text(a, payload)


def _no_speculation(a: argparse.Namespace, d: Any) -> tuple[None, dict[str, Any]]:
    if a.speculative_model is not None:
        raise UsageError(f"--speculative-model: token-level speculation serves one model or a "
                         f"target-only design, not a {d.family} design")
    _speculation_flags_alone(a)
    return None, {}


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
    where = "" if sp is None or sp["device"] in (None, "target's") else f" on {sp['device']}"
    spec = "" if sp is None else (
        f", speculating with {sp['proposer']}{where} (k {sp['num_speculative_tokens']}, "
        "acceptance "
        f"{sp['acceptance_rate']:.3g}: {sp['tokens_per_pass']:.2f} tokens a pass)")
    head = (f"{r['model']} on {r['replicas']} x {r['device']} (tp={r['tp']}, "
            f"{r['precision']}, {r['serving']}{spec}): {what}, {ld['input_tokens']} in / "
            f"{ld['output_tokens']} out tokens, {r['evaluator']}")
    if ld.get("dataset"):
        head = head.replace(f"{ld['input_tokens']} in / {ld['output_tokens']} out tokens",
                            f"{ld['dataset']} lengths (mean {ld['input_tokens']} in / "
                            f"{ld['output_tokens']} out)")
    if "system" in r:  # a design: its family and accuracy first
        acc = r.get("accuracy")
        iv = r.get("accuracy_interval")
        acc_s = "-" if acc is None else f"{acc:.1f}%" + (
            f" [{iv[0]:.1f}-{iv[1]:.1f}]" if iv else "")
        what_d = (f"{r['system']} ({r['family']}, {r['schedule']}) on {r['workload']}: "
                  f"accuracy {acc_s}; ")
        if "devices" in r:
            reps = f"{r['replicas']} replica" + ("s" if r["replicas"] > 1 else "")
            head = (f"{what_d}{reps}: {what}, {ld['input_tokens']} in / "
                    f"{ld['output_tokens']} out tokens a problem, {r['evaluator']}")
        else:
            head = f"{what_d}{head}"
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
    if "devices" in r:
        notes = ["devices (batch / cap, requests): " + "; ".join(
            f"{'+'.join(v['roles'])} {v['batch']:.3g} / {v['batch_cap']:.4g}"
            for v in r["devices"].values())]
    else:
        notes = [f"scheduler: max_num_seqs {r['max_num_seqs']}, max_num_batched_tokens "
                 f"{r['max_num_batched_tokens']}; KV cache {r['kv_capacity_tokens']} tokens a "
                 "replica"]
    if sp is not None:
        notes.append(f"acceptance {sp['acceptance_rate']:.3g}: {sp['basis']}")
    if r.get("from_design_file"):
        notes.append(f"from {r['from_design_file']} (a flag given overrides it)")
    cap = r.get("capacity_request_rate")
    if isinstance(cap, float) and math.isfinite(cap):
        notes.append(f"capacity about {cap * r['replicas']:.3g} requests/s"
                     + ("; this rate is past it: requests queue and latency grows with the "
                        "run's length" if r.get("saturated") else ""))
    if "devices" in r:
        notes.append(f"{r['evaluator']}: each device a batching server of its roles' "
                     "per-problem work, the single-stream report's at batch 1 (docs/model.md)"
                     + ("; percentiles: --evaluator simulator"
                        if r["evaluator"] == "closed-form" else ""))
        notes.append("[low-high]: the single-stream latency and J/token intervals' relative "
                     "ends; batched work extrapolates batch-1 calibration")
    else:
        if r["evaluator"] == "closed-form":
            notes.append("closed form: steady-state means (percentiles: --evaluator "
                         "simulator)")
        notes.append("[low-high]: 90% intervals from the device's time and power factors; "
                     "batched iterations extrapolate batch-1 calibration (docs/model.md)")
    return wrap("\n".join([*lines, *versus_lines(r), "", *notes]), text_width(a))


def _speculation_flags_alone(a: argparse.Namespace) -> None:
    given = (a.num_speculative_tokens, a.acceptance_rate, a.speculative_device)
    if any(v is not None for v in given):
        raise UsageError("--num-speculative-tokens, --acceptance-rate and --speculative-device "
                         "need --speculative-model")


def _speculation(a: argparse.Namespace, cat: Catalog, pl: Any, dataset: str | None
                 ) -> tuple[Any, dict[str, Any]]:
    """The token-level speculation the flags ask for and the engine's draft arguments (its
    placement, none for ngram; for a draft on a board of its own, draft_apart, the GPU copy
    that prefills its prompts and the link its KV cache crosses); (None, {}) without
    --speculative-model. dataset: the lengths' dataset, for the acceptance default."""
    from dse.devices.registry import place, resolve
    from dse.serving import Speculation
    from dse.serving.acceptance import default_rate
    from dse.serving.engine import eagle_head, in_engine_step

    if a.speculative_model is None:
        _speculation_flags_alone(a)
        return None, {}
    name = a.speculative_model
    if a.num_speculative_tokens is None:
        raise UsageError("--speculative-model needs --num-speculative-tokens (K, vLLM's name)")
    draft, extra = None, {}
    if name in ("ngram", "eagle"):
        if a.speculative_device is not None:
            raise UsageError(f"--speculative-device: {name} runs where the target is (on the "
                             "host for ngram, on the target's GPUs for eagle)")
    if name == "eagle":
        draft = in_engine_step(place(cat, eagle_head(pl.model), pl.device.name,
                                     precision_name=pl.precision.name, software=pl.serving,
                                     context_tokens=pl.context_tokens, tp=pl.tp))
    elif name != "ngram":
        try:
            dm = cat.model(name)
        except Exception as e:
            raise UsageError(f"--speculative-model {name}: not ngram, eagle or a catalog model "
                             f"({str(e).splitlines()[0]})") from None
        if dm.tokenizer_family != pl.model.tokenizer_family:
            raise UsageError(f"--speculative-model {dm.name} ({dm.tokenizer_family}) and "
                             f"{pl.model.name} ({pl.model.tokenizer_family}) do not share a "
                             "tokenizer")
        if a.speculative_device is not None:
            _, kind = resolve(cat, a.speculative_device)
            if kind.software_kind == "gpu-serving":
                raise UsageError(f"--speculative-device {a.speculative_device}: a GPU draft "
                                 "runs on the target's GPUs (leave the flag out); name an FPGA "
                                 "board")
            draft = place(cat, dm, a.speculative_device, context_tokens=pl.context_tokens)
            links = [cat.link(str(vars(p.device)["host_link"])) for p in (draft, pl)]
            extra = {"draft_apart": True, "draft_link": min(
                links, key=lambda ln: ln.effective_bytes_per_s), "draft_prompt": place(
                    cat, dm, pl.device.name, precision_name="bf16", software=pl.serving,
                    context_tokens=pl.context_tokens)}
        else:
            draft = in_engine_step(place(cat, dm, pl.device.name,
                                         precision_name=pl.precision.name,
                                         software=pl.serving, context_tokens=pl.context_tokens,
                                         tp=pl.tp))
        why = draft.infeasibility()
        if why:
            from dse.errors import InfeasibleError

            raise InfeasibleError(f"--speculative-model {dm.name} on {draft.device.name}: "
                                  + "; ".join(why))
    if a.acceptance_rate is not None:
        rate = a.acceptance_rate
        basis = getattr(a, "acceptance_basis", None) or "--acceptance-rate (given)"
    else:
        try:
            got = default_rate(name, pl.model.name, dataset)
        except ValueError as e:
            raise UsageError(str(e)) from None
        rate, basis = got.acceptance_rate, got.basis
    spec = Speculation(name, a.num_speculative_tokens, rate, basis)
    return spec, {"draft": draft, **extra}
