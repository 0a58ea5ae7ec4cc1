"""Figure data for the dashboard (app.py): pure functions over dse's designs and reports.

The dashboard is a thin view: every number it draws comes from here or from `evaluate`. This
module holds the small pieces of arithmetic and bookkeeping a figure needs (speed-ups, the
idle/active split of energy, roofline operating points, tornado swings) and the round trip
between a design and the URL's query parameters, so they are tested without Streamlit.
Nothing here imports Streamlit or plotly.
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np

from dse.arrays import Num
from dse.design import Design
from dse.design_files import DesignFile, parse_set, system_to_toml, with_overrides
from dse.devices import shape
from dse.devices.registry import device_names, kind_of, resolve
from dse.engine.closed_form import DEVICES, Report
from dse.errors import SpecError, UnknownNameError
from dse.scenario import SystemSpec, WorkloadSpec
from dse.schedules import DEVICE_ROLES, FLAGS, PRESETS, Costs, Schedule, fields
from dse.specs import Catalog
from dse.specs.emit import toml_value

# The view a fresh dashboard opens on: the README's first example.
DEFAULT_SYSTEM = "paper-config1-u280"
DEFAULT_WORKLOAD = "math500"
DEFAULT_SCHEDULE = "heteroreason"
BASELINES = ("rsd", "brsd", "brsd_stepahead")

_META_KEYS = ("schema_version", "kind", "name", "description", "sources")


# ------------------------------------------------------------------------ the design state


@dataclass(frozen=True)
class DesignState:
    """What the dashboard shows: a catalog system, overrides of its keys (TOML units, as
    `dse evaluate --set`), a schedule and a workload."""

    system: str
    workload: str
    schedule: Schedule
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def spec(self, cat: Catalog) -> SystemSpec:
        base = cat.get("system", self.system)
        assert isinstance(base, SystemSpec)
        return with_overrides(base, dict(self.overrides))

    def with_schedule(self, sched: Schedule) -> DesignState:
        return DesignState(self.system, self.workload, sched, dict(self.overrides))

    def gpu_baseline(self, cat: Catalog, name: str) -> DesignState:
        """The paper's homogeneous GPU baseline `name` (rsd, brsd, brsd_stepahead) of this
        design: the same models, PRM and target, thresholds and workload, with a draft that
        is not on the PRM's GPU moved there (the GPU kind's default precision and serving
        profile: BF16, vLLM with CUDA graphs), as the paper's 3 x RTX 3090 baselines are to
        its FPGA systems."""
        spec = self.spec(cat)
        over = dict(self.overrides)
        if spec.draft_device != spec.prm_device:
            gpu = kind_of(cat, spec.prm_device)
            over |= {"draft_device": spec.prm_device, "draft_precision": gpu.default_precision,
                     "draft_serving": gpu.default_software, "fpga_clock_MHz": 0.0,
                     "fpga_memory_channels": 0, "fpga_mac_lanes": 0}
        return DesignState(self.system, self.workload, PRESETS[name], over)

    def params(self) -> dict[str, str]:
        """Query parameters: system, workload, schedule, flags that differ from the schedule
        preset, then the overridden keys (the form `dse evaluate --set` takes)."""
        base = PRESETS.get(self.schedule.name) or _nearest_preset(self.schedule)
        out = {"system": self.system, "workload": self.workload, "schedule": base.name}
        for f in FLAGS:
            if getattr(self.schedule, f) != getattr(base, f):
                out[f] = toml_value(getattr(self.schedule, f))
        for k in sorted(self.overrides):
            v = self.overrides[k]
            out[k] = v if isinstance(v, str) else toml_value(v)
        return out

    def set_args(self) -> list[str]:
        """The same design as `dse evaluate --set` arguments."""
        p = self.params()
        return [f"{k}={v}" for k, v in p.items() if k not in ("system", "workload", "schedule")]


def _nearest_preset(s: Schedule) -> Schedule:
    return min(PRESETS.values(), key=lambda p: sum(getattr(p, f) != getattr(s, f) for f in FLAGS))


def default_state() -> DesignState:
    return DesignState(DEFAULT_SYSTEM, DEFAULT_WORKLOAD, PRESETS[DEFAULT_SCHEDULE])


def state_from_params(cat: Catalog, params: Mapping[str, str]) -> DesignState:
    """Parse query parameters (the inverse of `DesignState.params`); missing ones take the
    defaults. Raises SpecError / UnknownNameError naming the bad parameter."""
    d = default_state()
    system = params.get("system", d.system)
    workload = params.get("workload", d.workload)
    cat.get("system", system)
    cat.get("workload", workload)
    sched_name = params.get("schedule", d.schedule.name)
    if sched_name not in PRESETS:
        raise UnknownNameError("schedule", sched_name, list(PRESETS))
    rest = [f"{k}={v}" for k, v in params.items() if k not in ("system", "workload", "schedule")]
    overrides, flags = parse_set(rest)
    state = DesignState(system, workload, PRESETS[sched_name].with_flags(**flags), overrides)
    state.spec(cat)  # validates the values with the catalog loader
    return state


def system_diff(base: SystemSpec, spec: SystemSpec) -> dict[str, Any]:
    """The TOML keys whose values differ between two systems."""
    a, b = system_to_toml(base), system_to_toml(spec)
    return {k: v for k, v in b.items() if k not in _META_KEYS and a.get(k) != v}


def state_from_design(cat: Catalog, df: DesignFile, workload: str | None = None
                      ) -> DesignState:
    """A design file (e.g. a search candidate) as a state: the catalog system it differs least
    from, plus the differences."""
    names = cat.names("system")
    if df.system.name in names:
        base_name = df.system.name
    else:
        base_name = min(names, key=lambda n: (len(system_diff(_system(cat, n), df.system)), n))
    return DesignState(base_name, df.workload or workload or DEFAULT_WORKLOAD,
                       df.schedule or PRESETS[DEFAULT_SCHEDULE],
                       system_diff(_system(cat, base_name), df.system))


def _system(cat: Catalog, name: str) -> SystemSpec:
    s = cat.get("system", name)
    assert isinstance(s, SystemSpec)
    return s


def design_label(s: SystemSpec, sched: Schedule | None = None) -> str:
    """One line naming the hardware split, the models and the knobs."""
    tp = f" x{s.target_tp}" if s.target_tp > 1 else ""
    parts = [f"draft {s.draft_model} on {s.draft_device} ({s.draft_precision})",
             f"PRM {s.prm_model} on {s.prm_device}",
             f"target {s.target_model} on {s.target_device}{tp}",
             f"accept {s.accept_threshold:g}, backtrack {s.backtrack_threshold:g}"]
    if sched is not None:
        parts.append(sched.name)
    return " | ".join(parts)


# ------------------------------------------------------------------------ widget choices


@dataclass(frozen=True)
class RoleOptions:
    """Valid choices for one role on one device."""

    devices: list[str]
    models: list[str]
    precisions: list[str]
    servings: list[str]
    default_precision: str
    default_serving: str
    kind: str  # the device's kind (dse.devices.registry)
    serving_label: str  # what its software is called: "Serving", "FPGA engine"
    software_key: str  # the system key suffix naming it: "serving" (<role>_serving), "engine"
    build_knobs: tuple[str, ...]  # the kind's build knobs (empty: none to show)


def role_options(cat: Catalog, role: str, device: str) -> RoleOptions:
    """Devices, models, precisions and serving profiles (FPGA engines) a role can use on a
    device, from the device kind's capabilities (the PRM and target run on GPUs; the draft on
    a GPU or an FPGA)."""
    devices = device_names(cat, role)
    models = [n for n in cat.names("model") if role in cat.model(n).roles]
    k = kind_of(cat, device)
    return RoleOptions(devices, models, list(k.precisions), cat.names(k.software_kind),
                       k.default_precision, k.default_software, k.name, k.software_label,
                       k.software_key, k.build_knobs)


def build_knob_ranges(cat: Catalog, device: str) -> dict[str, float]:
    """The device kind's knob ranges for this board: for an FPGA, clock range and default
    (MHz) and memory channels (0 in the system TOML means the board default / every
    channel); empty for a kind without build knobs."""
    b, k = resolve(cat, device)
    return k.knob_ranges(b)


# ------------------------------------------------------------------------ report figures


def speedups(current: Report, baselines: Mapping[str, Report]) -> dict[str, dict[str, float]]:
    """Per baseline: latency speed-up and energy-per-token gain of `current` (x > 1: better)."""
    return {n: {"speedup": b.latency_s_per_problem / current.latency_s_per_problem,
                "energy_gain": b.j_per_token / current.j_per_token}
            for n, b in baselines.items()}


def energy_split(design: Design, report: Report) -> dict[str, dict[str, float]]:
    """Energy per problem by device, split into idle draw (idle power x latency) and the
    energy above idle; the two sum to `report.energy_by_device_j`."""
    out = {}
    for r in DEVICES:
        idle = float(getattr(design, r).power_w("idle")) * report.latency_s_per_problem
        total = float(report.energy_by_device_j[r])
        out[r] = {"idle_j": idle, "active_j": total - idle, "total_j": total}
    return out


# Interval kinds of a simulated timeline, in legend order, and what each shows.
TIMELINE_KINDS = {
    "prefill": "prompt prefill", "migrate": "prompt prefill on a GPU + KV migration",
    "decode": "draft writes the step", "tokens": "step tokens over the link",
    "verify": "PRM scores the step", "speculate": "step-ahead draft (kept)",
    "discarded": "step-ahead draft (discarded)", "stall": "draft waits for the verdict",
    "prefetch": "target prefetch (interrupted)", "refine": "target rewrites the step",
    "sync": "draft re-synchronises", "verify-rewrite": "PRM scores the rewrite",
    "backtrack": "target writes an alternative after backtracking",
}
TIMELINE_DEVICES: tuple[str, ...] = tuple(r.value for r in fields.TIMELINE_DEVICES)


@dataclass(frozen=True)
class Timeline:
    intervals: list[dict[str, Any]]  # device, kind, start_s, end_s
    latency_s: float
    attempts: int
    decisions: list[str]


def problem_timeline(design: Design, workload: WorkloadSpec, seed: int = 0) -> Timeline:
    """One synthetic problem replayed through the simulator (as `dse simulate
    --timeline-out`), with its per-device intervals."""
    from dse.engine.simulator import DECISIONS, replay, synthetic_trace

    c = Costs(design, workload)
    tr = synthetic_trace(c, 1, seed)
    rp = replay(c, tr, timeline_problem=0)
    names = {v: k for k, v in DECISIONS.items()}
    dec = [names[int(x)] for x in tr.decision[0][tr.valid[0]]]
    return Timeline(rp.timeline, float(rp.latency_s[0]), len(dec), dec)


@dataclass(frozen=True)
class RooflinePoint:
    op: str
    flops: float
    bytes: float
    time_s: float

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes

    @property
    def achieved_flops_per_s(self) -> float:
        return self.flops / self.time_s


@dataclass(frozen=True)
class RoleRoofline:
    role: str
    device: str
    model: str
    peak_flops_per_s: float  # datasheet (GPU, x tp) or MAC lanes x clock x 2 (FPGA)
    peak_bytes_per_s: float  # datasheet memory bandwidth (x tp)
    effective_flops_per_s: float  # what the model reaches: serving efficiency / FPGA build
    effective_bytes_per_s: float
    points: list[RooflinePoint]


def operating_context(design: Design, workload: WorkloadSpec) -> float:
    """Mean response tokens in context over a problem's steps (the mean-value model's)."""
    from dse.symbolic import components

    comp = components(design, workload)
    return (comp["_s_mean"] - 1) / 2 * comp["_m_c"]


def rooflines(design: Design, workload: WorkloadSpec) -> list[RoleRoofline]:
    """Each role's roofline and operating points at the mean context: draft and target decode
    one token; the PRM scores a mean step (prefill of problem + context + step, every position
    through its head); the target prefills a drafted step (prefix cached)."""
    c = Costs(design, workload)
    resp = operating_context(design, workload)
    ctx = workload.prompt_tokens + resp
    x = workload.draft_step_tokens_mean
    out = []
    for role in DEVICE_ROLES:
        pl = getattr(design, role)
        m, p = pl.model, pl.precision
        peak_f, peak_b = pl.peak_ops_per_s, pl.peak_bytes_per_s
        eff_f, eff_b = pl.effective_ops_per_s, pl.effective_bytes_per_s
        kvb = pl.kv_bits

        def pt(op: str, n: float, k: float, t: Num, heads: float = 1.0,
               m: Any = m, p: Any = p, kvb: int = kvb) -> RooflinePoint:
            return RooflinePoint(op, float(shape.forward_flops(m, n, k, head_positions=heads)),
                                 float(shape.forward_bytes(m, p, n, k, kv_bits=kvb)), float(t))

        if role == "prm":
            n = workload.problem_tokens + resp + x
            pts = [pt("verify step", n, 0, c.prm(x, resp), heads=n)]
        else:
            pts = [pt("decode token", 1, ctx, pl.decode_token_s(ctx))]
            if role == "target":
                pts.append(pt("prefill step", x, ctx, c.target_prefill(x, resp + x)))
        out.append(RoleRoofline(role, pl.device.name, m.name, peak_f, peak_b, eff_f, eff_b, pts))
    return out


# Labels of the tornado's probability terms (the step components' are dse.symbolic's).
PROB_LABELS = {"pa": "accept probability", "pf": "rewrite fails the backtrack threshold"}


def tornado(design: Design, workload: WorkloadSpec, rel: float = 0.1) -> list[dict[str, Any]]:
    """Latency and J/token of the mean-value model (dse.symbolic) with each term scaled by
    1 - rel and 1 + rel, the others held: one vectorised call. The probabilities (accept,
    rewrite fails) also move the expected attempt and backtrack counts. Rows sorted by the
    larger relative swing; terms that are zero in this schedule are left out. For small `rel`
    a step component's slope equals `dse.symbolic.sensitivities`."""
    from dse.symbolic import COMPONENT_LABELS, COMPONENTS, batch_metrics, components

    comp = components(design, workload)
    terms = [k for k in (*COMPONENTS, "pa", "pf")
             if (comp[f"_{k}"] if k in ("pa", "pf") else comp[k]) > 0]
    n = 1 + 2 * len(terms)
    arr = {k: np.full(n, float(v)) for k, v in comp.items() if not isinstance(v, str)}
    probs = {"pa": np.full(n, comp["_pa"]), "pf": np.full(n, comp["_pf"])}
    for i, k in enumerate(terms):
        target = probs[k] if k in probs else arr[k]
        target[1 + 2 * i] *= 1 - rel
        target[2 + 2 * i] *= 1 + rel
    for k in probs:
        probs[k] = np.clip(probs[k], 0.0, 1.0)
    s = design.schedule
    res = batch_metrics(arr, step_ahead=s.step_ahead, shadow=s.shadow_sync,
                        backtracking=s.backtracking, pa=probs["pa"], pf=probs["pf"],
                        window=np.full(n, float(design.backtrack_window)),
                        max_bt=np.full(n, float(design.max_backtracks)),
                        tokens=arr["_s_mean"] * arr["_m_c"])
    lat, jpt = res["latency_s_per_problem"], res["j_per_token"]
    rows = []
    for i, k in enumerate(terms):
        lo, hi = 1 + 2 * i, 2 + 2 * i
        rows.append({"term": k, "label": {**COMPONENT_LABELS, **PROB_LABELS}.get(k, k), "rel": rel,
                     "latency_base_s": float(lat[0]), "latency_low_s": float(lat[lo]),
                     "latency_high_s": float(lat[hi]), "j_per_token_base": float(jpt[0]),
                     "j_per_token_low": float(jpt[lo]), "j_per_token_high": float(jpt[hi])})

    def swing(r: dict[str, Any]) -> float:
        return max(abs(r["latency_high_s"] - r["latency_low_s"]) / r["latency_base_s"],
                   abs(r["j_per_token_high"] - r["j_per_token_low"]) / r["j_per_token_base"])

    return sorted(rows, key=swing, reverse=True)


# ------------------------------------------------------------------------------- other pages


def paper_points(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """`dse reproduce` rows for a predicted-vs-reported chart: paper range, midpoint, tool
    value, tool / paper ratio and the row's group (its id's first part)."""
    out = []
    for r in rows:
        mid = (r.paper_low + r.paper_high) / 2
        out.append({"id": r.id, "group": r.id.split(".")[0], "paper_low": r.paper_low,
                    "paper_high": r.paper_high, "paper_mid": mid, "tool": r.tool,
                    "ratio": r.tool / mid if mid else math.nan, "within": r.within,
                    "calibrated": r.calibrated, "tolerance": r.tolerance,
                    "description": r.description})
    return out


def candidate_rows(candidates: Sequence[Any]) -> list[dict[str, Any]]:
    """Search candidates (dse.search.Candidate) as table rows: metrics and a design label."""
    rows = []
    for i, c in enumerate(candidates):
        d = c.design
        nums = {k: float(v) for k, v in c.metrics.items()
                if isinstance(v, int | float | np.floating) and not isinstance(v, bool)}
        rows.append({"index": i, **nums,
                     "schedule": d.schedule.name if d.schedule else "",
                     "workload": d.workload or "", "design": design_label(d.system, d.schedule)})
    return rows


def bundle_zip(files: Mapping[str, bytes]) -> bytes:
    """An export bundle (relative path -> bytes) as a deterministic zip: sorted entries,
    fixed timestamps."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for path in sorted(files):
            if path.startswith("/") or ".." in Path(path).parts:
                raise SpecError("bundle", path, "expected a relative path inside the bundle")
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[path])
    return buf.getvalue()


def sqlite_file(url: str) -> Path | None:
    """The database file of a `sqlite:///path` storage URL (None for other storages)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return None
    return Path(unquote(url[len(prefix):].split("?", 1)[0]))
