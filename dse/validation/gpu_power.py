"""The GPU power model's launch-bound state, fitted to published batch-1 power (W).

A launch-bound decode leaves the GPU waiting on the host between kernels for microseconds at a
time, far shorter than the power manager's clock and voltage steps, so it keeps part of its
decode draw through the waits. `wait_power_fraction` is that part (dse.devices.power):

    P = idle + (TDP - idle) x decode_fraction x (busy + (1 - busy) x wait)

The data: dse/data/published.toml's `kind = "power"` entries (the ML.ENERGY leaderboard v1's
batch-1 HF transformers rows on an A100, LLaMA-shaped 7B and 13B models). Each row carries its
own measured decode rate, so `busy` is the tool's GPU-side time over the measured time per token
(the timing model is not what is fitted here); `wait` is then solved by least squares on
log(predicted / measured power). Pure functions; reading the data file is the only I/O.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from importlib import resources

import numpy as np
from scipy.optimize import least_squares

from dse.devices import gpu as gpu_mod
from dse.devices.power import gpu_power_w
from dse.devices.shape import precision
from dse.specs import Catalog
from dse.validation.measurements import PRECISIONS, profile_of

# The serving profile whose GPU-side time and decode fraction a power row of an unstated HF
# transformers version takes: 2023 rows (transformers 4.3x) run eager like every HF profile.
HF_UNSTATED_PROFILE = "hf-4.38"
DECODE_CONTEXT_TOKENS = 256  # assumption: a chat prompt plus half a response, mid-length


@dataclass(frozen=True)
class PowerPoint:
    id: str
    device: str
    model: str
    profile: str
    precision: str
    measured_w: float
    decode_s_per_token: float  # 1 / the row's measured throughput
    source: str


def power_points() -> list[PowerPoint]:
    """Every GPU `kind = "power"` entry of published.toml that maps onto the catalog names."""
    data = tomllib.loads(resources.files("dse.data").joinpath("published.toml")
                         .read_text(encoding="utf-8"))
    out = []
    for e in data.get("measurement", []):
        if e["kind"] != "power" or e["unit"] != "W" or "decode_tokens_per_s" not in e:
            continue
        device = e.get("catalog_device") or e.get("catalog_device_assumed")
        model = e.get("catalog_model") or e.get("catalog_model_assumed")
        profile = profile_of(e["framework"]) or HF_UNSTATED_PROFILE
        for _ctx, watts in e["points"]:
            out.append(PowerPoint(f"{e['model']}:{device}", device, model, profile,
                                  PRECISIONS[e["precision"]], float(watts),
                                  1.0 / float(e["decode_tokens_per_s"]), e["source"]))
    return out


def busy_fraction(cat: Catalog, p: PowerPoint) -> float:
    """The tool's GPU-side time of one decode step over the measured time per token."""
    c = gpu_mod.gpu_cost(cat.model(p.model), cat.gpu(p.device), precision(p.precision),
                         cat.serving(p.profile))
    gpu_side = float(gpu_mod.forward(c, 1, DECODE_CONTEXT_TOKENS).gpu_side_s)
    return min(gpu_side / p.decode_s_per_token, 1.0)


def predict_w(cat: Catalog, p: PowerPoint, wait_power_fraction: float) -> float:
    gpu = replace(cat.gpu(p.device), wait_power_fraction=wait_power_fraction)
    c = gpu_mod.gpu_cost(cat.model(p.model), gpu, precision(p.precision), cat.serving(p.profile))
    return float(gpu_power_w(c, "decode", busy_fraction(cat, p)))


def fit_wait_power_fraction(cat: Catalog, pts: list[PowerPoint] | None = None
                            ) -> tuple[float, np.ndarray]:
    """(wait_power_fraction, the relative errors of the points at it)."""
    pts = power_points() if pts is None else pts

    def resid(x: np.ndarray) -> np.ndarray:
        return np.array([np.log(predict_w(cat, p, float(x[0])) / p.measured_w) for p in pts])

    r = least_squares(resid, x0=[0.3], bounds=([0.0], [1.0]))
    return float(r.x[0]), np.expm1(resid(r.x))
