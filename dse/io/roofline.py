"""`dse roofline`: the cost of one model on one device, itemised (pure; the CLI prints it)."""

from __future__ import annotations

from typing import Any

from dse.devices.registry import KINDS, place, resolve
from dse.errors import InfeasibleError, SpecError
from dse.specs import Catalog
from dse.specs.model import tp_misfit
from dse.uncertainty.factors import RANK, placement_factors

# The flag (and JSON key) that sets each build knob.
FLAG_OF = {"clock_hz": "clock_mhz", "mac_lanes": "mac_lanes", "memory_channels": "channels"}


def _check_range(flag: str, value: float | None, lo: float, hi: float, board: str,
                 unit: str) -> None:
    """A knob the board cannot build gives no meaningful cost: one clear line naming the flag."""
    if value is not None and not lo <= value <= hi:
        raise InfeasibleError(f"{flag}: {value:g} {unit} is outside {board}'s {lo:g}..{hi:g} "
                              f"{unit}")


def _fpga_knobs(pl: Any) -> dict[str, Any]:
    """The engine and build knobs of an FPGA placement (None on other kinds)."""
    b = getattr(pl, "fpga_build", None)
    if b is None:
        return {"engine": None, "mac_lanes": None, "channels": None}
    return {"engine": b.engine.name, "mac_lanes": b.mac_lanes, "channels": b.memory_channels}


def roofline(
    cat: Catalog,
    *,
    model: str,
    device: str,
    precision_name: str | None = None,
    serving: str | None = None,
    context: int = 1024,
    prompt_tokens: int = 128,
    clock_mhz: float | None = None,
    tp: int | None = None,
    engine: str | None = None,
    mac_lanes: int | None = None,
    channels: int | None = None,
    kv_precision: str | None = None,
    offload_fraction: float = 0.0,
) -> dict[str, Any]:
    """Decode time per token at `context`, prefill time of `prompt_tokens`, bound, memory, power.

    `serving` is the GPU serving profile (None: the kind's default, vllm-cudagraph); on a
    device of a kind that runs other software (an FPGA engine) it is a SpecError naming it, as
    `tp` is on a kind that does not split a model over several boards. A `tp` whose degree
    vLLM refuses for the model's heads (dse.specs.model.tp_misfit) is a SpecError naming
    `tp`. The memory check holds weights and the KV cache of
    max(context, prompt_tokens) + 1 tokens.

    FPGA build knobs (an error on a device of another kind, naming the flag): `engine` (an
    fpga-engine name; default the kind's, flexllm), `clock_mhz` (the board's range), `mac_lanes`
    (1 .. DSPs x INT8 MACs per DSP), `channels` (HBM pseudo-channels, or DDR channels on a board
    without HBM: 1 .. the board's). A value outside its range raises InfeasibleError.

    GPU memory options (a SpecError on a kind without them): `kv_precision` (16, fp8, int8,
    q8_0, q4_0) and `offload_fraction` (the share of the streamed weights in host memory,
    streamed over the board's host link every forward pass).
    """
    m = cat.model(model)
    dev, kind = resolve(cat, device)
    hold = max(context, prompt_tokens) + 1
    given = {"clock_hz": clock_mhz, "mac_lanes": mac_lanes, "memory_channels": channels}
    for knob, value in given.items():
        if value is not None and knob not in kind.build_knobs:
            owners = " or ".join(k.label for k in KINDS.with_knob(knob))
            raise SpecError("", FLAG_OF[knob],
                            f"applies to {owners} boards, not {kind.label} {device!r}")
    if engine is not None and kind.software_kind != "fpga-engine":
        raise SpecError("", "engine", f"applies to FPGA boards, not {kind.label} {device!r}")
    if serving is not None and kind.software_kind != "gpu-serving":
        raise SpecError("", "serving", f"applies to GPU boards, not {kind.label} {device!r} "
                        "(it runs an engine: --engine)")
    if tp is not None and not kind.tensor_parallel:
        owners = " or ".join(k.label for k in KINDS if k.tensor_parallel)
        raise SpecError("", "tp", f"applies to {owners} boards, not {kind.label} {device!r} "
                        "(one board holds the model)")
    if tp is not None and (why := tp_misfit(m, tp)) is not None:
        raise SpecError("", "tp", why)
    knobs: dict[str, object] = {}
    if given["clock_hz"] is not None or mac_lanes is not None or channels is not None:
        r = kind.knob_ranges(dev)
        _check_range("clock_mhz", clock_mhz, r["clock_min_mhz"], r["clock_max_mhz"], dev.name,
                     "MHz")
        _check_range("mac_lanes", mac_lanes, 1, r.get("mac_lanes_max", 0), dev.name, "lanes")
        _check_range("channels", channels, 1, r.get("channels_max", 0), dev.name, "channels")
        knobs = {k: (v * 1e6 if k == "clock_hz" else v) for k, v in given.items()
                 if v is not None}
    if kind.software_kind == "gpu-serving":
        software: str | None = serving or kind.default_software
    else:
        software = engine  # None: the kind's default engine
    pl = place(cat, m, device, precision_name=precision_name, software=software,
               context_tokens=hold, tp=tp, knobs=knobs or None, kv_precision=kv_precision,
               offload_fraction=offload_fraction)
    decode_s = float(pl.decode_token_s(context))
    prefill_s = float(pl.prefill_s(prompt_tokens, 0))
    roof, bound = pl.decode_bound(context)
    prefill_bound = pl.prefill_bound(prompt_tokens)
    power = float(pl.power_w("decode", context))
    idle = float(pl.power_w("idle"))
    infeasible = pl.infeasibility()
    fs = placement_factors(pl)
    by_op = {op: f for f in fs if f.quantity == "time"
             for op in (("decode", "prefill") if f.key.startswith("time:all:")
                        else (f.key.split(":")[1],))}
    pw = next((f for f in fs if f.quantity == "power"), None)
    power_iv = [power, power] if pw is None else [idle + (power - idle) * pw.low,
                                                  idle + (power - idle) * pw.high]
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
        **_fpga_knobs(pl),
        "decode_s_per_token": decode_s,
        "decode_s_per_token_interval": [decode_s * by_op["decode"].low,
                                        decode_s * by_op["decode"].high],
        "decode_tokens_per_s": 1.0 / decode_s,
        "roofline_s_per_token": roof,
        "prefill_s": prefill_s,
        "prefill_s_interval": [prefill_s * by_op["prefill"].low,
                               prefill_s * by_op["prefill"].high],
        "bound": bound,
        "prefill_bound": prefill_bound,
        "weights_bytes": pl.weights_bytes,
        "kv_bytes_per_token": pl.kv_bytes_per_token,
        "kv_bits": pl.kv_bits,
        "offload_fraction": offload_fraction,
        "memory_needed_bytes": pl.memory_needed_bytes,
        "memory_bytes": pl.memory_bytes,
        "fits": not infeasible,
        "infeasible": infeasible,
        "power_w": power,
        "power_w_interval": power_iv,
        "idle_w": idle,
        "j_per_token": power * decode_s,
        "provenance": {"status": max((f.status for f in fs), key=RANK.__getitem__),
                       "basis": " | ".join(f.basis for f in fs)},
    }
