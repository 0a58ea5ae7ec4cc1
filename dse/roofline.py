"""`dse roofline`: the cost of one model on one device, itemised (pure; the CLI prints it)."""

from __future__ import annotations

from typing import Any

from dse.devices.registry import KINDS, place, resolve
from dse.errors import InfeasibleError, SpecError
from dse.specs import Catalog


def roofline(
    cat: Catalog,
    *,
    model: str,
    device: str,
    precision_name: str | None = None,
    serving: str = "vllm-cudagraph",
    context: int = 1024,
    prompt_tokens: int = 128,
    clock_mhz: float | None = None,
    tp: int | None = None,
) -> dict[str, Any]:
    """Decode time per token at `context`, prefill time of `prompt_tokens`, bound, memory, power.

    `serving` is the GPU serving profile: a device of a kind that runs other software (an FPGA
    engine) takes its kind's default. The memory check holds weights and the KV cache of
    max(context, prompt_tokens) + 1 tokens.
    """
    m = cat.model(model)
    dev, kind = resolve(cat, device)
    hold = max(context, prompt_tokens) + 1
    knobs = {"clock_hz": clock_mhz * 1e6} if clock_mhz is not None else None
    if clock_mhz is not None and "clock_hz" not in kind.build_knobs:
        clocked = " or ".join(k.label for k in KINDS.with_knob("clock_hz"))
        raise SpecError("", "clock_mhz",
                        f"applies to {clocked} boards, not {kind.label} {device!r}")
    if clock_mhz is not None:  # a clock the board cannot run gives no meaningful cost
        r = kind.knob_ranges(dev)
        lo, hi = r["clock_min_mhz"], r["clock_max_mhz"]
        if not lo <= clock_mhz <= hi:
            raise InfeasibleError(f"clock_mhz: {clock_mhz:g} MHz is outside {dev.name}'s "
                                  f"{lo:g}..{hi:g} MHz")
    software = serving if kind.software_kind == "gpu-serving" else None
    pl = place(cat, m, device, precision_name=precision_name, software=software,
               context_tokens=hold, tp=tp, knobs=knobs)
    decode_s = float(pl.decode_token_s(context))
    prefill_s = float(pl.prefill_s(prompt_tokens, 0))
    roof, bound = pl.decode_bound(context)
    prefill_bound = pl.prefill_bound(prompt_tokens)
    power = float(pl.power_w("decode", context))
    infeasible = pl.infeasibility()
    return {
        "model": m.name,
        "device": dev.name,
        "device_kind": pl.kind,
        "precision": pl.precision.name,
        "serving": pl.serving,
        "tp": pl.tp,
        "context": context,
        "prompt_tokens": prompt_tokens,
        "clock_mhz": pl.clock_hz / 1e6 if pl.clock_hz is not None else None,
        "decode_s_per_token": decode_s,
        "decode_tokens_per_s": 1.0 / decode_s,
        "roofline_s_per_token": roof,
        "prefill_s": prefill_s,
        "bound": bound,
        "prefill_bound": prefill_bound,
        "weights_bytes": pl.weights_bytes,
        "kv_bytes_per_token": pl.kv_bytes_per_token,
        "memory_needed_bytes": pl.memory_needed_bytes,
        "memory_bytes": pl.memory_bytes,
        "fits": not infeasible,
        "infeasible": infeasible,
        "power_w": power,
        "idle_w": float(pl.power_w("idle")),
        "j_per_token": power * decode_s,
    }
