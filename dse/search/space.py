"""The design space, declared once as data (`scenarios/spaces/*.toml`, or `--space FILE`).

A space lists, per role, the devices, models, precisions and serving profiles to try, the FPGA
build knobs (clock, HBM channels, MAC lanes), the algorithm knobs (accept and backtrack
thresholds, backtrack budget and window), the schedule flags (step-ahead, shadow sync), the
workload (one dataset or a weighted mix) and the cost assumptions ($/kWh, lifetime). The
loader is strict like the catalog's: every problem is one line naming the file and the key.

`hardware(cat, space)` enumerates the hardware choices (draft x PRM x target placements whose
models can play their roles and share a tokenizer); the algorithm knobs form a grid on top.
A max_backtracks of 0 means the forward-only schedule (no backtracking). An FPGA build knob
the space leaves out is the board's (clock, every channel) or the engine's (MAC lanes) default;
an old file's 0 in its list means the same.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dse.core.limits import (
    MAX_BACKTRACK_WINDOW,
    MAX_BACKTRACKS,
    MAX_CONTEXT_TOKENS,
    MAX_KNOBS_PER_HARDWARE,
    MAX_SAMPLES,
    MAX_TP,
)
from dse.devices.registry import KINDS
from dse.errors import SpecError, UnknownNameError
from dse.search.objectives import CONSTRAINT_TABLE
from dse.specs import (
    SPACES_DIR,
    Catalog,
    Key,
    check_value,
    default_catalog_dirs,
)
from dse.specs.scenario import AGGREGATIONS, COLOCATIONS, VERIFIER_KINDS, WIDTH_WORKFLOWS, WORKFLOWS
from dse.specs.schema import NAME_RE, check_depth, check_header, read_toml

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class Placement:
    """One role's placement choice (before it is resolved against the catalog)."""

    device: str
    model: str
    precision: str
    serving: str | None  # GPU serving profile (None on an FPGA)
    tp: int = 1
    engine: str | None = None  # FPGA engine (None on a GPU)
    clock_mhz: float | None = None  # FPGA only; None: the board's default
    memory_channels: int | None = None  # FPGA only; None: every channel
    mac_lanes: int | None = None  # FPGA only; None: the engine's default

    def label(self) -> str:
        """`model@device/precision`, `xTP` when split, the FPGA knobs the design sets (a knob
        left at its default is left out, never shown as 0)."""
        s = f"{self.model}@{self.device}/{self.precision}"
        if self.tp > 1:
            s += f"x{self.tp}"
        knobs = [f"{v:g}{unit}" for v, unit in ((self.clock_mhz, "MHz"),
                                               (self.memory_channels, "ch"),
                                               (self.mac_lanes, "lanes")) if v is not None]
        if knobs:
            s += "[" + ",".join(knobs) + "]"
        return s


@dataclass(frozen=True)
class Arrangement:
    """A workflow, its verifier and which roles share a device (dse.specs.scenario's system keys
    `workflow`, `verifier`, `colocate`); a width workflow's samples, beams and aggregation
    (`samples`, `beam_width`, `aggregation`: None where it has none or takes its default)."""

    workflow: str = "speculative"
    verifier: str | None = "prm"  # None on a target-only or width design
    colocate: str | None = None  # None: each role on its own device(s)
    samples: int | None = None
    beam_width: int | None = None
    aggregation: str | None = None

    @property
    def is_width(self) -> bool:
        return self.workflow in WIDTH_WORKFLOWS

    @property
    def name(self) -> str:
        """`target-only`, `prm`, `prm prm+target`, `target`, `target draft+target`, ...; a
        width method with its knobs: `best-of-n N=8`, `beam N=16 B=4 min`."""
        if self.workflow == "target-only":
            return "target-only"
        if self.is_width:
            return " ".join(x for x in (
                self.workflow, f"N={self.samples}",
                f"B={self.beam_width}" if self.beam_width else None, self.aggregation) if x)
        return " ".join(x for x in (f"{self.verifier}-verifier", self.colocate) if x)

    def shares(self, role: str) -> bool:
        """The role shares the target's device (colocated with it, or the target verifier)."""
        return (role == "prm" and self.verifier == "target") or (
            self.colocate is not None and role in self.colocate.split("+")
            and "target" in self.colocate.split("+"))


SEPARATE = Arrangement()
TARGET_ONLY = Arrangement("target-only", None, None)
FAMILIES: tuple[str, ...] = ("target-only", "gpu-speculative", "fpga-speculative", "width")
"""Every search reports its winner beside the best design of each family."""


@dataclass(frozen=True)
class Hardware:
    draft: Placement | None  # None on a target-only or width design
    prm: Placement | None  # None on a target-only design, with a target verifier, majority
    target: Placement  # the policy of a width design
    arrangement: Arrangement = SEPARATE

    @property
    def family(self) -> str:
        """`target-only`, `fpga-speculative` (an FPGA draft: it has an engine),
        `gpu-speculative` or `width`."""
        if self.arrangement.is_width:
            return "width"
        if self.draft is None:
            return "target-only"
        return "fpga-speculative" if self.draft.engine is not None else "gpu-speculative"

    def label(self) -> str:
        if self.arrangement.is_width:
            prm = f" | prm {self.prm.label()}" if self.prm is not None else ""
            return f"{self.arrangement.name} | policy {self.target.label()}{prm}"
        if self.draft is None:
            return f"target-only | target {self.target.label()}"
        prm = f"prm {self.prm.label()}" if self.prm is not None else "verifier: the target"
        shared = (f" | {self.arrangement.colocate} on one GPU"
                  if self.arrangement.colocate else "")
        return f"draft {self.draft.label()} | {prm} | target {self.target.label()}{shared}"


@dataclass(frozen=True)
class Space:
    name: str
    path: str
    description: str
    workloads: tuple[tuple[str, float], ...]  # (workload name, weight), weights sum to 1
    drafts: tuple[Placement, ...]
    prms: tuple[Placement, ...]
    targets: tuple[Placement, ...]
    accept_thresholds: tuple[float, ...]
    backtrack_thresholds: tuple[float, ...]
    max_backtracks: tuple[int, ...]
    backtrack_windows: tuple[int, ...]
    step_ahead: tuple[bool, ...]
    shadow_sync: tuple[bool, ...]
    max_context_tokens: int
    lifetime_years: float
    usd_per_kwh: float
    constraints: Mapping[str, float]
    sources: Mapping[str, str]
    # the workflows, verifiers and placements to weigh ([workflows]; absent: speculation with
    # a PRM, each role on its own device)
    arrangements: tuple[Arrangement, ...] = (SEPARATE,)

    @property
    def knobs_per_hardware(self) -> int:
        """Algorithm-knob x flag combinations per hardware choice (forward-only counted once
        per accept threshold)."""
        a = len(self.accept_thresholds)
        on = [m for m in self.max_backtracks if m > 0]
        per_a = (1 if 0 in self.max_backtracks else 0) + len(on) * len(
            self.backtrack_thresholds) * len(self.backtrack_windows)
        return a * per_a * len(self.step_ahead) * len(self.shadow_sync)


class _Reader:
    """Strict access to a parsed TOML table: every error names the file and the key."""

    def __init__(self, path: str, data: Mapping[str, Any], prefix: str = "") -> None:
        self.path, self.data, self.prefix = path, data, prefix
        self.used: set[str] = set()

    def key(self, k: str) -> str:
        return f"{self.prefix}{k}"

    def err(self, k: str, msg: str) -> SpecError:
        return SpecError(self.path, self.key(k), msg)

    def get(self, k: str, default: Any = ...) -> Any:
        self.used.add(k)
        if k not in self.data:
            if default is ...:
                raise self.err(k, "missing key")
            return default
        return self.data[k]

    def table(self, k: str, required: bool = True) -> _Reader:
        v = self.get(k, ... if required else {})
        if not isinstance(v, Mapping):
            raise self.err(k, "expected a table")
        return _Reader(self.path, v, f"{self.key(k)}.")

    def strs(self, k: str, default: Any = ...) -> tuple[str, ...]:
        v = self.get(k, default)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
            raise self.err(k, "expected a non-empty list of names")
        return tuple(dict.fromkeys(v))

    def numbers(self, k: str, kind: type, lo: float, hi: float, default: Any = ..., *,
                lo_open: bool = False) -> tuple[Any, ...]:
        v = self.get(k, default)
        if isinstance(v, Mapping):  # {start, stop, step}
            r = _Reader(self.path, v, f"{self.key(k)}.")
            start, stop = (r.number(x, float, lo, hi) for x in ("start", "stop"))
            step = r.number("step", float, -math.inf, math.inf)
            r.done()
            if step <= 0 or stop < start:
                raise self.err(k, "expected start <= stop and step > 0")
            span = (stop - start) / step  # may be inf for a tiny step: no floor(inf)
            if not span < 10_000:
                raise self.err(k, f"{span + 1:.3g} grid points; at most 10000")
            n = math.floor(span + 1e-9) + 1
            v = [round(start + i * step, 10) for i in range(n)]
        if not isinstance(v, list) or not v:
            raise self.err(k, "expected a non-empty list or {start, stop, step}")
        out = []
        for x in v:
            out.append(_check_number(self, k, x, kind, lo, hi, lo_open=lo_open))
        return tuple(dict.fromkeys(out))

    def number(self, k: str, kind: type, lo: float, hi: float, default: Any = ...) -> Any:
        return _check_number(self, k, self.get(k, default), kind, lo, hi)

    def bools(self, k: str, default: Any = ...) -> tuple[bool, ...]:
        v = self.get(k, default)
        if not isinstance(v, list) or not v or not all(isinstance(x, bool) for x in v):
            raise self.err(k, "expected a non-empty list of true/false")
        return tuple(dict.fromkeys(v))

    def done(self) -> None:
        extra = sorted(set(self.data) - self.used)
        if extra:
            raise self.err(extra[0], "unknown key")


def _check_number(r: _Reader, k: str, x: Any, kind: type, lo: float, hi: float, *,
                  lo_open: bool = False) -> Any:
    """The catalog's number check (type, finite, range, magnitude), in the file's units."""
    key = Key(r.key(k), r.key(k), kind, lo=lo, lo_open=lo_open,
              hi=hi if math.isfinite(hi) else None)
    v = check_value(r.path, key, x)
    return v / key.scale if kind is float else v


def load_space(cat: Catalog, path: str | Path | None = None) -> Space:
    """A space file, or the default space shipped with the catalog."""
    p = Path(path) if path is not None else default_space_path()
    return parse_space(cat, str(p), read_toml(p))


def default_space_path() -> Path:
    for d in default_catalog_dirs():
        f = d / SPACES_DIR / "default.toml"
        if f.is_file():
            return f
    raise SpecError("scenarios/spaces/default.toml", "", "the default space file is missing")


def parse_space(cat: Catalog, path: str, data: Mapping[str, Any]) -> Space:
    check_depth(path, data)
    check_header(path, data, ("space",))
    r = _Reader(path, data)
    r.used |= {"schema_version", "kind"}
    name = r.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise r.err("name", f"must be lowercase letters, digits, '.', '-', got {name!r}")
    desc = r.get("description", "")
    if not isinstance(desc, str):
        raise r.err("description", "expected a string")
    sources = r.get("sources", {})
    if not isinstance(sources, Mapping) or not all(isinstance(v, str) for v in sources.values()):
        raise r.err("sources", "expected a table of strings")

    wl = r.table("workloads")
    workloads = []
    for wname in wl.data:
        weight = wl.number(wname, float, 0.0, math.inf)
        if wname not in cat.names("workload"):
            raise wl.err(wname, str(UnknownNameError("workload", wname,
                                                     cat.names("workload"))))
        if weight > 0:
            workloads.append((wname, weight))
    if not workloads:
        raise r.err("workloads", "expected at least one workload with a positive weight")
    total = sum(x for _, x in workloads)
    workloads = [(n, x / total) for n, x in workloads]

    drafts = _draft_options(cat, r.table("draft"))
    prms = _gpu_options(cat, r.table("prm"), "prm")
    targets = _gpu_options(cat, r.table("target"), "target")

    alg = r.table("algorithm")
    acc = alg.numbers("accept_threshold", float, 0.0, 1.0)
    bt = alg.numbers("backtrack_threshold", float, 0.0, 1.0)
    mbt = alg.numbers("max_backtracks", int, 0, MAX_BACKTRACKS)
    win = alg.numbers("backtrack_window", int, 1, MAX_BACKTRACK_WINDOW)
    sa = alg.bools("step_ahead", [False, True])
    sh = alg.bools("shadow_sync", [False, True])
    alg.done()

    arrangements = _arrangements(r.table("workflows", required=False))
    arrangements += _width_arrangements(r.table("width", required=False))

    con = r.table("constraints", required=False)
    constraints = {c.name: _check_number(con, c.name, con.get(c.name), float, c.lo, c.hi,
                                         lo_open=c.lo_open)
                   for c in CONSTRAINT_TABLE.values() if c.name in con.data}
    con.done()
    max_ctx = r.number("max_context_tokens", int, 16, MAX_CONTEXT_TOKENS)
    life = r.number("lifetime_years", float, 1e-3, 100.0)
    kwh = r.number("usd_per_kwh", float, 0.0, 100.0)
    for k in ("max_context_tokens", "lifetime_years", "usd_per_kwh"):
        if k not in sources:
            raise r.err(f"sources.{k}", "missing: every number needs a source")
    r.done()
    space = Space(name, path, str(desc), tuple(workloads), drafts, prms, targets, acc, bt,
                  tuple(sorted(mbt)), win, sa, sh, max_ctx, life, kwh, constraints,
                  dict(sources), arrangements)
    if space.knobs_per_hardware > MAX_KNOBS_PER_HARDWARE:
        raise r.err("algorithm", f"{space.knobs_per_hardware:,} knob settings per hardware "
                    f"choice; at most {MAX_KNOBS_PER_HARDWARE:,} (the sweep holds arrays of "
                    "that size per metric): use coarser steps or fewer values")
    return space


def _arrangements(r: _Reader) -> tuple[Arrangement, ...]:
    """[workflows]: `workflow` (speculative, target-only), `verifier` (prm, target) and
    `colocate` ("none" or a scenario.COLOCATIONS group) lists; every valid combination (a
    target verifier already shares the target's device, so it pairs with "none" and
    "draft+target" only)."""
    if not r.data:
        return (SEPARATE,)
    wf = r.strs("workflow", ["speculative"])
    _check_names(r, "workflow", wf, WORKFLOWS)
    ver = r.strs("verifier", ["prm"])
    _check_names(r, "verifier", ver, VERIFIER_KINDS)
    col = r.strs("colocate", ["none"])
    _check_names(r, "colocate", col, ("none", *COLOCATIONS))
    r.done()
    out: list[Arrangement] = []
    if "speculative" in wf:
        for v in ver:
            for c in col:
                group = None if c == "none" else c
                if v == "target" and group is not None and "prm" in group:
                    continue  # the target is the verifier: prm+target is implied
                out.append(Arrangement("speculative", v, group))
    if "target-only" in wf:
        out.append(TARGET_ONLY)
    return tuple(out)


def _width_arrangements(r: _Reader) -> tuple[Arrangement, ...]:
    """[width]: `methods` (dse.specs.scenario.WIDTH_WORKFLOWS), `samples` (N, 1..MAX_SAMPLES: a
    dimension, e.g. 2, 4, ..., 64), `beam_width` (beam only; the values that divide N and
    do not exceed it, each kept beam expanding N / B) and `aggregation` (absent: each method's
    default); every valid combination is an arrangement of the width family, its policy each
    of the space's targets, its PRM each of the space's PRMs (majority: none)."""
    if not r.data:
        return ()
    methods = r.strs("methods")
    _check_names(r, "methods", methods, WIDTH_WORKFLOWS)
    samples = r.numbers("samples", int, 1, MAX_SAMPLES)
    beams = r.numbers("beam_width", int, 1, MAX_SAMPLES, [1])
    aggs: tuple[str | None, ...] = (None,)
    if "aggregation" in r.data:
        aggs = r.strs("aggregation")
        _check_names(r, "aggregation", aggs, AGGREGATIONS)
    else:
        r.used.add("aggregation")
    r.done()
    out: list[Arrangement] = []
    for m in methods:
        for n in samples:
            if m == "beam":
                out += [Arrangement(m, None, None, n, b, a) for b in beams
                        if b <= n and n % b == 0 for a in aggs]
            elif m == "majority":
                out.append(Arrangement(m, None, None, n))
            else:
                out += [Arrangement(m, None, None, n, None, a) for a in aggs]
    return tuple(out)


def families_of(space: Space) -> tuple[str, ...]:
    """The families a search of the space reports: every one of FAMILIES, the width family
    only where the space has width arrangements (a [width] table)."""
    if any(a.is_width for a in space.arrangements):
        return FAMILIES
    return tuple(f for f in FAMILIES if f != "width")


def study_arrangements(space: Space) -> tuple[Arrangement, ...]:
    """The arrangements an Optuna study draws from: all but the width family's, which every
    search sweeps whole (one closed form per policy, PRM, method and N: a few hundred, where
    as categories they would crowd out the speculative arrangements); all of them in a space
    of width designs alone."""
    rest = tuple(a for a in space.arrangements if not a.is_width)
    return rest or space.arrangements


def _check_names(r: _Reader, key: str, names: Sequence[str], valid: Sequence[str]) -> None:
    for n in names:
        if n not in valid:
            raise r.err(key, f"unknown name {n!r}; valid: {', '.join(sorted(valid))}")


def _check_precisions(r: _Reader, key: str, names: Sequence[str], kind: str) -> None:
    """Each name a precision the device kind runs (its fixed names or a family member such as
    exl2-4.65, through the kind's one precision check)."""
    k = KINDS.get(kind)
    for n in names:
        if not k.runs_precision(n):
            raise r.err(key, f"unknown name {n!r}; valid: {', '.join(k.precision_choices)}")
        try:
            k.check_precision(n)
        except SpecError as e:
            raise r.err(key, e.reason) from None


def _models(cat: Catalog, r: _Reader, role: str) -> tuple[str, ...]:
    models = r.strs("models")
    _check_names(r, "models", models, cat.names("model"))
    for m in models:
        if role not in cat.model(m).roles:
            raise r.err("models", f"{m} cannot be a {role} (its roles: "
                        f"{', '.join(cat.model(m).roles)})")
    return models


def _devices(cat: Catalog, r: _Reader, key: str, kind: str) -> tuple[str, ...]:
    """The boards listed under key, all of one device kind (dse.devices.registry)."""
    names = r.strs(key)
    _check_names(r, key, names, cat.names(KINDS.get(kind).catalog_kind))
    return names


def _draft_options(cat: Catalog, r: _Reader) -> tuple[Placement, ...]:
    models = _models(cat, r, "draft")
    gpus = _devices(cat, r, "gpus", "gpu") if "gpus" in r.data else ()
    fpgas = _devices(cat, r, "fpgas", "fpga") if "fpgas" in r.data else ()
    if not gpus and not fpgas:
        raise r.err("gpus", "list at least one draft device (gpus or fpgas)")
    out: list[Placement] = []
    if gpus:
        precs = r.strs("gpu_precisions")
        _check_precisions(r, "gpu_precisions", precs, "gpu")
        serving = r.strs("gpu_serving")
        _check_names(r, "gpu_serving", serving, cat.names("gpu-serving"))
        out += [Placement(d, m, p, s) for d, m, p, s in itertools.product(gpus, models, precs,
                                                                          serving)]
    if fpgas:
        precs = r.strs("fpga_precisions")
        _check_precisions(r, "fpga_precisions", precs, "fpga")
        engines = r.strs("fpga_engines")
        _check_names(r, "fpga_engines", engines, cat.names("fpga-engine"))
        clocks = _knob(r, "fpga_clock_MHz", float, 2000.0)
        chans = _knob(r, "fpga_memory_channels", int, 1024)
        lanes = _knob(r, "fpga_mac_lanes", int, 1 << 20)
        out += [Placement(d, m, p, None, engine=e, clock_mhz=c, memory_channels=ch,
                          mac_lanes=ln) for d, m, p, e, c, ch, ln in
                itertools.product(fpgas, models, precs, engines, clocks, chans, lanes)]
    r.done()
    return tuple(out)


def _knob(r: _Reader, k: str, kind: type, hi: float) -> tuple[Any, ...]:
    """An FPGA build knob's values, each > 0; absent: None, the default."""
    if k not in r.data:
        r.used.add(k)
        return (None,)
    return r.numbers(k, kind, 0, hi, lo_open=True)


def _gpu_options(cat: Catalog, r: _Reader, role: str) -> tuple[Placement, ...]:
    models = _models(cat, r, role)
    gpus = _devices(cat, r, "gpus", "gpu")
    precs = r.strs("precisions")
    _check_precisions(r, "precisions", precs, "gpu")
    serving = r.strs("serving")
    _check_names(r, "serving", serving, cat.names("gpu-serving"))
    tps = r.numbers("tp", int, 1, MAX_TP, [1])
    r.done()
    return tuple(Placement(d, m, p, s, tp) for d, m, p, s, tp in
                 itertools.product(gpus, models, precs, serving, tps))


def hardware(cat: Catalog, space: Space) -> list[Hardware]:
    """Every hardware choice of every arrangement: target-only, each target alone; else every
    (draft, PRM, target) choice whose draft and target share a tokenizer, where a role that
    shares the target's device runs on the target's GPU (`colocated_options`) and a target
    verifier has no PRM placement."""
    out: list[Hardware] = []
    for arr in space.arrangements:
        if arr.workflow == "target-only":
            out += [Hardware(None, None, t, arr) for t in space.targets]
            continue
        if arr.is_width:  # the policy on each target placement, with each PRM (majority: none)
            prms: Sequence[Placement | None] = (
                [None] if arr.workflow == "majority" else space.prms)
            out += [Hardware(None, p, t, arr) for t in space.targets for p in prms]
            continue
        for t in space.targets:
            drafts = colocated_options(cat, space, "draft", t) if arr.shares("draft") \
                else space.drafts
            prms = [None]
            if arr.verifier != "target":
                prms = colocated_options(cat, space, "prm", t) if arr.shares("prm") \
                    else space.prms
            out += [Hardware(d, p, t, arr) for d in drafts for p in prms
                    if cat.model(d.model).tokenizer_family
                    == cat.model(t.model).tokenizer_family]
    return out


def arrange(cat: Catalog, space: Space, arr: Arrangement, draft: Placement,
            prm: Placement, target: Placement) -> Hardware | None:
    """The hardware choice of an arrangement from one pick per role (an Optuna trial's): the
    target alone for target-only; a role that shares the target's device moved to the
    target's GPU (its first option there with the picked model); None when the draft and the
    target do not share a tokenizer."""
    if arr.workflow == "target-only":
        return Hardware(None, None, target, arr)
    if arr.is_width:
        return Hardware(None, None if arr.workflow == "majority" else prm, target, arr)
    if cat.model(draft.model).tokenizer_family != cat.model(target.model).tokenizer_family:
        return None
    if arr.shares("draft"):
        draft = next(o for o in colocated_options(cat, space, "draft", target)
                     if o.model == draft.model)
    chosen: Placement | None = None
    if arr.verifier != "target":
        chosen = prm
        if arr.shares("prm"):
            chosen = next(o for o in colocated_options(cat, space, "prm", target)
                          if o.model == prm.model)
    return Hardware(draft, chosen, target, arr)


def colocated_options(cat: Catalog, space: Space, role: str, target: Placement
                      ) -> list[Placement]:
    """A role's options on the target's GPU (its models, and the precisions and serving
    profiles the space lists for it on a GPU; the target's where it lists none; the target's
    tensor-parallel width)."""
    opts = space.drafts if role == "draft" else space.prms
    gpu = [o for o in opts if o.engine is None]
    settings = list(dict.fromkeys((o.precision, o.serving) for o in gpu)) or [
        (target.precision, target.serving)]
    models = list(dict.fromkeys(o.model for o in opts))
    return [Placement(target.device, m, p, s, target.tp if role == "prm" else 1)
            for m in models for p, s in settings]


def n_designs(cat: Catalog, space: Space) -> int:
    return len(hardware(cat, space)) * space.knobs_per_hardware
