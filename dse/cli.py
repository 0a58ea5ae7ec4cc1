"""The `dse` command: a table of subcommands, all printing and exit codes.

Exit codes: 0 ok, 1 other error, 2 usage error / unknown name, 3 malformed spec file,
4 infeasible design. Errors print one line on stderr (a traceback only with --debug).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse import __version__
from dse.errors import DseError
from dse.specs import Catalog, spec_fields


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_args: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Catalog], tuple[Any, str]]  # (json payload, text)


# ------------------------------------------------------------------------------- helpers


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table; floats in 4 significant digits."""

    def fmt(v: Any) -> str:
        if isinstance(v, float | np.floating):
            return f"{v:.4g}"
        if v is None:
            return "-"
        return str(v)

    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def nonneg_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {s!r}")
    return v


# ------------------------------------------------------------------------------- catalog

CATALOG_KINDS = {
    "boards": ("gpu", "fpga", "link"),
    "models": ("model",),
    "serving": ("gpu-serving", "fpga-engine"),
}


def _catalog_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=[*sorted(CATALOG_KINDS), "scenarios"],
                   help="which part of the catalog to list")


def _run_catalog(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    kinds = CATALOG_KINDS.get(a.what) or tuple(
        k for k in cat.items if k not in {k for ks in CATALOG_KINDS.values() for k in ks})
    payload: dict[str, list[dict[str, Any]]] = {}
    text: list[str] = []
    for kind in kinds:
        specs = [cat.get(kind, n) for n in cat.names(kind)]
        payload[kind] = [{**spec_fields(s), "path": s.path} for s in specs]
        if not specs:
            continue
        text.append(f"{kind} ({len(specs)})")
        text.append(table(["name", "description"], [[s.name, s.description] for s in specs]))
        text.append("")
    return payload, "\n".join(text).rstrip() or "(empty)"


# ------------------------------------------------------------------------------ roofline


def _roofline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="catalog name, model TOML or HF config.json")
    p.add_argument("--device", required=True, help="GPU or FPGA board name")
    p.add_argument("--precision", help="bf16, fp16, w8a16, w8a8, w4a16 (default: bf16 on GPUs, "
                   "w8a8 on FPGAs)")
    p.add_argument("--serving", default="vllm-cudagraph", help="GPU serving profile")
    p.add_argument("--context", type=nonneg_int, default=1024,
                   help="tokens already in context when decoding (default 1024)")
    p.add_argument("--prompt-tokens", type=positive_int, default=128,
                   help="tokens to prefill (default 128)")
    p.add_argument("--clock-mhz", type=positive_float, help="FPGA kernel clock (default: board)")
    p.add_argument("--tp", type=positive_int, help="GPU tensor-parallel degree (default: the "
                   "smallest that fits)")


def _run_roofline(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.roofline import roofline  # local: keeps `dse --help` fast

    r = roofline(cat, model=a.model, device=a.device, precision_name=a.precision,
                 serving=a.serving, context=a.context, prompt_tokens=a.prompt_tokens,
                 clock_mhz=a.clock_mhz, tp=a.tp)
    rows = [
        ["decode", f"{r['decode_s_per_token'] * 1e3:.3f} ms/token",
         f"{r['decode_tokens_per_s']:.1f} tokens/s", r["bound"]],
        ["prefill", f"{r['prefill_s'] * 1e3:.3f} ms", f"{a.prompt_tokens} tokens",
         r["prefill_bound"]],
    ]
    lines = [
        f"{r['model']} on {r['device']} ({r['precision']}, {r['serving']}, tp={r['tp']}), "
        f"context {a.context}",
        table(["phase", "time", "rate", "bound"], rows),
        "",
        f"weights {r['weights_bytes'] / 1e9:.3f} GB, KV {r['kv_bytes_per_token'] / 1e3:.2f} "
        f"kB/token, needs {r['memory_needed_bytes'] / 1e9:.2f} GB of "
        f"{r['memory_bytes'] / 1e9:.1f} GB: {'fits' if r['fits'] else 'DOES NOT FIT'}",
        f"roofline floor {r['roofline_s_per_token'] * 1e3:.3f} ms/token; power "
        f"{r['power_w']:.1f} W decoding, {r['idle_w']:.1f} W idle; "
        f"{r['j_per_token']:.3f} J/token",
    ]
    if r["infeasible"]:
        lines.append("infeasible: " + "; ".join(r["infeasible"]))
    return r, "\n".join(lines)


# ---------------------------------------------------------------------------- the table

COMMANDS: list[Command] = [
    Command("catalog", "list boards, models, serving profiles or scenarios", _catalog_args,
            _run_catalog),
    Command("roofline", "per-token decode and prefill cost of a model on a device",
            _roofline_args, _run_roofline),
]


def register(cmd: Command) -> None:
    if any(c.name == cmd.name for c in COMMANDS):
        raise ValueError(f"duplicate command {cmd.name!r}")
    COMMANDS.append(cmd)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--catalog", action="append", default=[], metavar="DIR",
                        help="extra catalog directory (boards, models, scenarios); repeatable")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--debug", action="store_true", help="show tracebacks")
    p = argparse.ArgumentParser(prog="dse", description="hetero-dse: design-space exploration "
                                "for heterogeneous FPGA-GPU speculative reasoning")
    p.add_argument("--version", action="version", version=f"dse {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for c in COMMANDS:
        sp = sub.add_parser(c.name, help=c.help, description=c.help, parents=[common])
        c.add_args(sp)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cmd = next(c for c in COMMANDS if c.name == args.command)
    try:
        cat = Catalog.load(args.catalog)
        payload, text = cmd.run(args, cat)
    except DseError as e:
        if args.debug:
            raise
        print(f"dse {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except (OSError, ValueError) as e:
        if args.debug:
            raise
        print(f"dse {args.command}: error: {e}", file=sys.stderr)
        return 1
    try:
        if args.json:
            print(json.dumps(_jsonable(payload), indent=2, sort_keys=True))
        else:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `dse ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
