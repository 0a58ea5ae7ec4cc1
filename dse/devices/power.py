"""Power per device and state, so energy can be integrated over a timeline including idle waits.

GPU:  P(state) = idle + (TDP - idle) x fraction(state) x active(busy),
      active(busy) = busy + (1 - busy) x wait, state in {idle, decode, prefill};
      fraction is the serving profile's share of the dynamic range drawn while kernels run
      (sourced from measured decode / prefill draws); a decode pass of many sequences draws
      more as its attention streams their KV caches: fraction(decode) = decode + (kv - decode)
      x k, k the pass's batched KV share (dse.devices.gpu.ForwardTime.batched_kv_share, 0 at
      one sequence) and kv the share an attention streaming many caches draws (the batch
      terms' `kv_power_fraction`, fitted to LLM-Inference-Bench's power against the batch by
      dse.validation.batch_power); busy the share of the pass the GPU runs
      kernels, and wait the board's share of that draw it keeps while it waits on the host
      between kernels (`wait_power_fraction`). A launch-bound decode leaves gaps of microseconds
      between kernels, far shorter than the power manager's clock and voltage steps
      (milliseconds), so the GPU stays in its active state instead of falling to idle: the
      launch-bound power state. wait = 0 would be a GPU that idles in every gap; wait = 1 one
      that draws its full decode power whatever the host does.
FPGA: P = static + k_dsp x (DSPs / 1000) x (clock / GHz) + memory energy per bit x bit rate
      (dse.devices.fpga.decode_power_w; boards/engines/flexllm.toml, fitted to the FlexLLM U280
      power log).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # dse.devices.gpu imports this module for its placed model
    from dse.devices.gpu import GpuCost

GPU_STATES = ("idle", "decode", "prefill")


def active_share(busy_fraction: ArrayLike, wait_power_fraction: ArrayLike) -> NDArray[np.float64]:
    """Share of the state's dynamic power drawn over a pass: all of it while kernels run
    (busy), `wait_power_fraction` of it while the GPU waits on the host (1 - busy)."""
    busy = np.asarray(busy_fraction, dtype=float)
    return np.asarray(busy + (1.0 - busy) * np.asarray(wait_power_fraction, dtype=float))


def decode_fraction(c: GpuCost, batched_kv_share: ArrayLike = 0.0) -> NDArray[np.float64]:
    """The decode state's share of the dynamic range: the profile's decode fraction, moving
    towards the batch terms' kv_power_fraction with the pass's batched KV share (nan: none)."""
    f_d = np.asarray(c.decode_power_fraction, dtype=float)
    f_kv = np.asarray(c.kv_power_fraction, dtype=float)
    rise = np.where(np.isnan(f_kv), 0.0, f_kv - f_d) * np.asarray(batched_kv_share, dtype=float)
    return np.asarray(f_d + rise)


def gpu_power_w(c: GpuCost, state: str, busy_fraction: ArrayLike = 1.0,
                batched_kv_share: ArrayLike = 0.0) -> NDArray[np.float64]:
    """Board power (all tp GPUs together) in a state, with the GPU busy a share of the time
    and in its active state, waiting on the host, the rest; a decode pass of many sequences
    at its batched KV share."""
    if state not in GPU_STATES:
        raise ValueError(f"unknown GPU power state {state!r}; valid: {', '.join(GPU_STATES)}")
    frac = (decode_fraction(c, batched_kv_share) if state == "decode" else
            np.asarray(c.prefill_power_fraction if state == "prefill" else 0.0, dtype=float))
    dyn = (np.asarray(c.tdp_w) - c.idle_w) * frac * active_share(busy_fraction,
                                                                  c.wait_power_fraction)
    return np.asarray(c.idle_w + dyn, dtype=float)
