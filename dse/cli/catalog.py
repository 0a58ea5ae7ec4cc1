"""`dse catalog` (the catalog's boards, models, serving profiles and engines, scenarios) and
`dse roofline` (one model on one device)."""

from __future__ import annotations

import argparse
from typing import Any

from dse.cli.common import (
    WithOutput,
    add_wide,
    clip_words,
    flags_named,
    offload_fraction_type,
    positive_float,
    table,
    text_width,
    whole_number,
)
from dse.cli.layout import wrap
from dse.core.limits import MAX_CHANNELS, MAX_CONTEXT_TOKENS, MAX_MAC_LANES, MAX_TP
from dse.devices.shape import KV_PRECISIONS
from dse.errors import InfeasibleError
from dse.specs import Catalog, spec_fields

# The parts of the catalog `dse catalog` lists; "scenarios" is every other kind.
CATALOG_GROUPS = ("boards", "models", "serving")


def catalog_kinds() -> dict[str, tuple[str, ...]]:
    """The catalog kinds each group lists, from the device registry: boards are every device
    kind's board specs (registration order: gpu, fpga) and the host links they name; serving is
    the software each kind runs (gpu-serving profiles, fpga-engine builds). Imported here, not
    at parser-build time: the registry loads the device models, which `dse --help` does not
    need."""
    from dse.devices.registry import KINDS

    return {"boards": (*(k.catalog_kind for k in KINDS), "link"),
            "models": ("model",),
            "serving": tuple(k.software_kind for k in KINDS)}


def catalog_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=[*CATALOG_GROUPS, "scenarios"],
                   help="which part of the catalog to list")
    add_wide(p)


def run_catalog(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    groups = catalog_kinds()
    kinds = groups.get(a.what) or tuple(
        k for k in cat.items if k not in {k for ks in groups.values() for k in ks})
    payload: dict[str, list[dict[str, Any]]] = {}
    text: list[str] = []
    for kind in kinds:
        specs = [cat.get(kind, n) for n in cat.names(kind)]
        payload[kind] = [{**spec_fields(s), "path": s.path} for s in specs]
        if not specs:
            continue
        text.append(f"{kind} ({len(specs)})")
        text.append(table(["name", "description"], [[s.name, s.description] for s in specs],
                          width=text_width(a)))
        text.append("")
    return payload, wrap("\n".join(text).rstrip() or "(empty)", text_width(a))


# ------------------------------------------------------------------------------ roofline


def roofline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="catalog name, model TOML or HF config.json")
    p.add_argument("--device", required=True, help="GPU or FPGA board name")
    p.add_argument("--precision", help="bf16, fp16, w8a16, w8a8, w4a16, fp8, GGUF q8_0, q4_0, "
                   "q2_k, q3_k_m, q4_k_m, q5_k_m, q6_k, EXL2 exl2-<bpw 2.0-8.0> (default: bf16 "
                   "on GPUs, w8a8 on FPGAs)")
    p.add_argument("--kv-precision", choices=tuple(KV_PRECISIONS),
                   help="GPU KV-cache precision: 16, fp8, int8, q8_0, q4_0 (default 16)")
    p.add_argument("--offload-fraction", type=offload_fraction_type, default=0.0,
                   help="share of a GPU's streamed weights held in host memory and copied over "
                   "its host link every forward pass, in [0, 1) (default 0)")
    p.add_argument("--serving", help="GPU serving profile (default vllm-cudagraph)")
    p.add_argument("--context", type=whole_number(0, MAX_CONTEXT_TOKENS), default=1024,
                   help="tokens already in context when decoding (default 1024)")
    p.add_argument("--prompt-tokens", type=whole_number(1, MAX_CONTEXT_TOKENS), default=128,
                   help="tokens to prefill (default 128)")
    p.add_argument("--clock-mhz", type=positive_float,
                   help="FPGA kernel clock (default: the engine's, else the board's)")
    p.add_argument("--engine", help="FPGA engine, a published design (boards/engines; default "
                   "flexllm)")
    p.add_argument("--mac-lanes", type=whole_number(1, MAX_MAC_LANES),
                   help="FPGA decode INT8 MAC lanes (default: the engine's; at most the board's "
                   "DSPs x INT8 MACs per DSP)")
    p.add_argument("--channels", type=whole_number(1, MAX_CHANNELS),
                   help="FPGA memory channels streamed from: HBM pseudo-channels, or DDR channels "
                   "on a board without HBM (default: all of the board's)")
    p.add_argument("--tp", type=whole_number(1, MAX_TP),
                   help="GPU tensor-parallel degree (default: the smallest that fits)")
    add_wide(p)


# roofline()'s arguments (its errors' keys) and the flags that set them
ROOFLINE_FLAGS = {k: "--" + k.replace("_", "-") for k in (
    "model", "device", "precision", "serving", "clock_mhz", "tp", "engine", "mac_lanes",
    "channels", "kv_precision", "offload_fraction")}


def _f3(v: float, fixed: str = ".3f", low: float = 0.0) -> str:
    """`fixed` (three decimals), or four significant digits from a million up and below `low`
    (a catalog's extreme board gives times of 1e33 ms and 5e-31 tokens/s: never a 34-digit
    number, nor 0.0 for a rate that is not 0)."""
    return f"{v:{fixed}}" if v == 0 or low <= abs(v) < 1e6 else f"{v:.4g}"


def run_roofline(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.io.roofline import roofline  # local: keeps `dse --help` fast

    with flags_named({f: getattr(a, k) for k, f in ROOFLINE_FLAGS.items()}, ROOFLINE_FLAGS):
        r = roofline(cat, model=a.model, device=a.device, precision_name=a.precision,
                     serving=a.serving, context=a.context, prompt_tokens=a.prompt_tokens,
                     clock_mhz=a.clock_mhz, tp=a.tp, engine=a.engine, mac_lanes=a.mac_lanes,
                     channels=a.channels, kv_precision=a.kv_precision,
                     offload_fraction=a.offload_fraction)
    d_lo, d_hi = (x * 1e3 for x in r["decode_s_per_token_interval"])
    p_lo, p_hi = (x * 1e3 for x in r["prefill_s_interval"])
    w_lo, w_hi = r["power_w_interval"]
    rows = [
        ["decode", f"{_f3(r['decode_s_per_token'] * 1e3)} [{_f3(d_lo)}-{_f3(d_hi)}] ms/token",
         f"{_f3(r['decode_tokens_per_s'], '.1f', 0.1)} tokens/s", r["bound"]],
        ["prefill", f"{_f3(r['prefill_s'] * 1e3)} [{_f3(p_lo)}-{_f3(p_hi)}] ms",
         f"{a.prompt_tokens} tokens", r["prefill_bound"]],
    ]
    asked = (a.engine, a.clock_mhz, a.mac_lanes, a.channels) != (None, None, None, None)
    build = (f", {r['clock_mhz']:g} MHz, {r['mac_lanes']} MAC lanes, {r['channels']} channels"
             if r["engine"] is not None and asked else "")  # the build, when a flag set it
    lines = [
        f"{r['model']} on {r['device']} ({r['precision']}, {r['serving']}, tp={r['tp']}{build}), "
        f"context {a.context}",
        table(["phase", "time", "rate", "bound"], rows, width=text_width(a)),
        "",
        f"weights {r['weights_bytes'] / 1e9:.3f} GB"
        + (f" ({r['offload_fraction']:g} of the streamed weights in host memory)"
           if r["offload_fraction"] else "")
        + f", KV {r['kv_bytes_per_token'] / 1e3:.2f} kB/token, needs "
        + f"{r['memory_needed_bytes'] / 1e9:.2f} GB of {r['memory_bytes'] / 1e9:.1f} GB: "
        + ("fits" if r["fits"] else "DOES NOT FIT"),
        f"roofline floor {_f3(r['roofline_s_per_token'] * 1e3)} ms/token; power "
        f"{r['power_w']:.1f} [{w_lo:.1f}-{w_hi:.1f}] W decoding, {r['idle_w']:.1f} W idle; "
        f"{_f3(r['j_per_token'])} J/token",
        f"[low-high]: 90% intervals; {r['provenance']['status']}: "
        + clip_words(r["provenance"]["basis"].split(" | ")[0], 120),
    ]
    if r["infeasible"]:
        lines.append("infeasible: " + "; ".join(r["infeasible"]))
        # printed, then exit 4 as dse evaluate exits for a design that cannot run
        raise WithOutput(InfeasibleError(f"{r['model']} on {r['device']} is infeasible: "
                                         + "; ".join(r["infeasible"])),
                         r, wrap("\n".join(lines), text_width(a)))
    return r, wrap("\n".join(lines), text_width(a))
