"""The GPU power model's launch-bound state, fitted to published batch-1 power (W).

A launch-bound decode leaves the GPU waiting on the host between kernels for microseconds at a
time, far shorter than the power manager's clock and voltage steps, so it keeps part of its
decode draw through the waits. `wait_power_fraction` is that part (dse.devices.power):

    P = idle + (TDP - idle) x decode_fraction x (busy + (1 - busy) x wait)

The data: dse/data/published.toml's `kind = "power"` entries (the ML.ENERGY leaderboard v1's
batch-1 HF transformers rows on an A100, LLaMA-shaped 7B and 13B models; a self-published HF
transformers benchmark's RTX 5090 and A800 rows). Each row carries its own measured decode rate,
so `busy` is the tool's GPU-side time over the measured time per token (the timing model is not
what is fitted here); `wait` is then solved by least squares on log(predicted / measured power),
once per GPU generation (a board's `generation`) that has rows. A generation without rows takes
DEFAULT_GENERATION's value (the A100's). Pure functions; reading the data file is the only I/O.
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
from dse.validation.measurements import PRECISIONS, document_of, profile_of

# The serving profile whose GPU-side time and decode fraction a power row of an unstated HF
# transformers version takes: 2023 rows (transformers 4.3x) run eager like every HF profile.
HF_UNSTATED_PROFILE = "hf-4.38"
DECODE_CONTEXT_TOKENS = 256  # assumption: a chat prompt plus half a response, mid-length
# The generation whose fit a generation without published power rows takes: the A100's (the
# ML.ENERGY rows), the value every board carried before the fit was made per generation.
DEFAULT_GENERATION = "ampere"
WRITER = "written by scripts/calibrate_devices.py"


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


def source_document(p: PowerPoint) -> str:
    """The document a row comes from, the unit leave-one-source-out leaves out: its repository
    or paper (measurements.document_of, as the GPU timing points), so the files of one
    repository are left out together."""
    return document_of(p.source, p.device)


@dataclass(frozen=True)
class GenerationFit:
    generation: str
    wait_power_fraction: float
    point_ids: tuple[str, ...]
    devices: tuple[str, ...]  # the catalog boards the rows ran on
    documents: tuple[str, ...]
    rel_errors: tuple[float, ...]  # predicted / measured - 1, per point, at the fitted value


def fit_by_generation(cat: Catalog, pts: list[PowerPoint] | None = None
                      ) -> dict[str, GenerationFit]:
    """One `wait_power_fraction` per GPU generation that has power rows."""
    pts = power_points() if pts is None else pts
    out = {}
    for gen in sorted({cat.gpu(p.device).generation for p in pts}):
        mine = [p for p in pts if cat.gpu(p.device).generation == gen]
        value, errors = fit_wait_power_fraction(cat, mine)
        out[gen] = GenerationFit(gen, value, tuple(p.id for p in mine),
                                 tuple(sorted({p.device for p in mine})),
                                 tuple(sorted({source_document(p) for p in mine})),
                                 tuple(float(e) for e in errors))
    return out


def value_for(fits: dict[str, GenerationFit], generation: str) -> float:
    """A generation's fitted value, or DEFAULT_GENERATION's where it has no rows."""
    fit = fits.get(generation) or fits.get(DEFAULT_GENERATION)
    if fit is None:
        raise ValueError(f"no power rows for {generation!r} nor for the default generation "
                         f"{DEFAULT_GENERATION!r}")
    return fit.wait_power_fraction


def board_source(fits: dict[str, GenerationFit], board: str, generation: str) -> str:
    """The provenance line of a board's `wait_power_fraction` (its [sources] entry)."""
    fit = fits.get(generation)
    if fit is not None:
        rows = (f"{len(fit.point_ids)} published batch-1 power rows on {generation} GPUs "
                f"({', '.join(fit.devices)}; {'; '.join(fit.documents)})")
        if board in fit.devices:
            return (f"fitted: dse.validation.gpu_power, per GPU generation, to the {rows}, "
                    f"this board's own among them; {WRITER}")
        return (f"assumption: the {generation} generation's fit (dse.validation.gpu_power, to the "
                f"{rows}); no published launch-bound power on this board (the rows' boards as the "
                f"catalog assumes them); {WRITER}")
    base = fits[DEFAULT_GENERATION]
    return (f"assumption: the {DEFAULT_GENERATION} generation's fit (dse.validation.gpu_power, to "
            f"the {len(base.point_ids)} published batch-1 power rows on "
            f"{', '.join(base.devices)}), as no published launch-bound power on a {generation} GPU "
            "was found; the power manager's millisecond clock and voltage steps are far slower "
            f"than the microsecond waits of a launch-bound decode on any NVIDIA GPU; {WRITER}")


@dataclass(frozen=True)
class LosoPoint:
    id: str
    document: str  # the source document left out
    generation: str
    measured_w: float
    wait_power_fraction: float  # fitted without the document (its generation's, else the default)
    predicted_w: float

    @property
    def rel_error(self) -> float:
        return self.predicted_w / self.measured_w - 1.0


def leave_one_source_out(cat: Catalog, pts: list[PowerPoint] | None = None
                         ) -> list[LosoPoint]:
    """Each source document's rows predicted at the values fitted without that document: its
    generation's where other documents hold rows of it, else the default generation's."""
    pts = power_points() if pts is None else pts
    out = []
    for doc in sorted({source_document(p) for p in pts}):
        fits = fit_by_generation(cat, [p for p in pts if source_document(p) != doc])
        for p in pts:
            if source_document(p) != doc:
                continue
            gen = cat.gpu(p.device).generation
            wait = value_for(fits, gen)
            out.append(LosoPoint(p.id, doc, gen, p.measured_w, wait, predict_w(cat, p, wait)))
    return out
