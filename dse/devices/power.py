"""Power per device and state, so energy can be integrated over a timeline including idle waits.

GPU:  P(state) = idle + (TDP - idle) x fraction(state) x active(busy),
      active(busy) = busy + (1 - busy) x wait, state in {idle, decode, prefill};
      fraction is the serving profile's share of the dynamic range drawn while kernels run
      (sourced from measured decode / prefill draws), busy the share of the pass the GPU runs
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


def gpu_power_w(c: GpuCost, state: str, busy_fraction: ArrayLike = 1.0) -> NDArray[np.float64]:
    """Board power (all tp GPUs together) in a state, with the GPU busy a share of the time
    and in its active state, waiting on the host, the rest."""
    if state not in GPU_STATES:
        raise ValueError(f"unknown GPU power state {state!r}; valid: {', '.join(GPU_STATES)}")
    frac = {"idle": 0.0, "decode": c.decode_power_fraction,
            "prefill": c.prefill_power_fraction}[state]
    dyn = (np.asarray(c.tdp_w) - c.idle_w) * frac * active_share(busy_fraction,
                                                                  c.wait_power_fraction)
    return np.asarray(c.idle_w + dyn, dtype=float)
