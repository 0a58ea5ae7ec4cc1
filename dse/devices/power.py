"""Power per device and state, so energy can be integrated over a timeline including idle waits.

GPU:  P(state) = idle + (TDP - idle) x fraction(state) x busy, state in {idle, decode,
      prefill}; fraction is the serving profile's share of the dynamic range drawn while
      kernels run (sourced from measured decode / prefill draws), busy the share of the pass
      the GPU runs kernels (launch-bound small models leave the GPU waiting on the CPU).
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


def gpu_power_w(c: GpuCost, state: str, busy_fraction: ArrayLike = 1.0) -> NDArray[np.float64]:
    """Board power (all tp GPUs together) in a state, with the GPU busy a share of the time."""
    if state not in GPU_STATES:
        raise ValueError(f"unknown GPU power state {state!r}; valid: {', '.join(GPU_STATES)}")
    frac = {"idle": 0.0, "decode": c.decode_power_fraction,
            "prefill": c.prefill_power_fraction}[state]
    dyn = (np.asarray(c.tdp_w) - c.idle_w) * frac * np.asarray(busy_fraction, dtype=float)
    return np.asarray(c.idle_w + dyn, dtype=float)
