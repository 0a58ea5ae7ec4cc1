"""`dse roofline`: the cost of one model on one device, itemised (pure; the CLI prints it)."""

from __future__ import annotations

from typing import Any

from dse.devices import fpga, gpu
from dse.devices.device import place
from dse.errors import SpecError
from dse.specs import Catalog, FpgaSpec


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

    The memory check holds weights and the KV cache of max(context, prompt_tokens) + 1 tokens.
    """
    m = cat.model(model)
    dev = cat.device(device)
    hold = max(context, prompt_tokens) + 1
    knobs = {"clock_hz": clock_mhz * 1e6} if clock_mhz is not None else None
    if clock_mhz is not None and not isinstance(dev, FpgaSpec):
        raise SpecError("--clock-mhz", "clock-mhz", f"applies to FPGA boards, not GPU {device!r}")
    pl = place(cat, m, device, precision_name=precision_name, serving=serving,
               context_tokens=hold, tp=tp, fpga_knobs=knobs)
    decode_s = float(pl.decode_token_s(context))
    prefill_s = float(pl.prefill_s(prompt_tokens, 0))
    if pl.gpu_cost is not None:
        ft = gpu.forward(pl.gpu_cost, 1, context)
        bound = str(ft.bound)
        roof = float(ft.roofline_s)
        pf = gpu.forward(pl.gpu_cost, prompt_tokens, 0)
        prefill_bound = str(pf.bound)
    else:
        c = pl.fpga_cost
        assert c is not None
        t_mem, t_mac = (float(t) for t in fpga.token_bounds_s(c, context))
        roof = max(t_mem, t_mac)
        # The FPGA runs at achieved_efficiency of its bound; more than half of the time above
        # the bound is then 'overhead' (pipeline stalls, fill), like launch overhead on a GPU.
        bound = "memory" if t_mem >= t_mac else "compute"
        if decode_s - roof > roof:
            bound = "overhead"
        prefill_bound = "memory" if (prompt_tokens < c.prefill_token_parallel) else "compute"
    power = float(pl.power_w("decode", context))
    infeasible = pl.infeasibility()
    return {
        "model": m.name,
        "device": dev.name,
        "device_kind": "fpga" if pl.is_fpga else "gpu",
        "precision": pl.precision.name,
        "serving": pl.serving,
        "tp": pl.tp,
        "context": context,
        "prompt_tokens": prompt_tokens,
        "clock_mhz": pl.fpga_build.clock_hz / 1e6 if pl.fpga_build else None,
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
