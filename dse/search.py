"""Search: the exhaustive vectorised sweep and the Optuna optimiser over a design space.

Both rank designs with the mean-value model (dse.grid / dse.symbolic: within ~15% of the
accurate closed form, and exactly consistent between sweep and optimize), so the optimiser
can be checked against the sweep's exact grid optimum. The single best design is then
re-evaluated with the accurate closed form (`closed_form` in its metrics).

Objectives (`OBJECTIVES`): j_per_token, latency, goodput, accuracy, cost ($ per million
tokens: board list prices amortised over the space's lifetime plus energy at its $/kWh).
Constraints: min accuracy, max latency, max average power; every model must fit its device
and the FPGA build its board (infeasible hardware is counted with its reason, never returned).

optimize: one Optuna trial picks the hardware (draft device, models, precisions, serving,
FPGA build, PRM and target GPUs) with a seeded TPE sampler; with one objective the algorithm
knobs and schedule flags of that hardware are then solved exactly by the vectorised grid
(they cost microseconds, and their optimum sits on the accuracy constraint's edge, where
sampling wastes trials); with several objectives every knob is sampled too (multi-objective
TPE) and the study's non-dominated feasible trials form the front.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dse.design import build_design
from dse.design_files import DesignFile, design_file_text, parse_design_text
from dse.devices.registry import kind_of
from dse.errors import DseError, UnknownNameError, UsageError
from dse.grid import METRICS, Evaluator, HardwareResult, feasible_mask, system_for, violation
from dse.objectives import OBJECTIVES, check_objectives
from dse.schedules import PRESETS
from dse.space import Hardware, Placement, Space, hardware
from dse.specs import Catalog

F64 = NDArray[np.float64]
DEFAULT_STORAGE = "sqlite:///dse-studies.db"  # the `dse` command's; the library's is in memory
IN_MEMORY = "in-memory"  # OptimizeResult.storage of a study kept in memory
# Storage behaviour (operational, not model, constants): a worker waits up to SQLITE_BUSY_S for
# another's write lock; a trial's heartbeat every HEARTBEAT_S, and a RUNNING trial without one
# for GRACE_S is one a killed process left (a trial takes milliseconds to a second); workers
# creating one new storage at once retry the schema race OPEN_TRIES times, 0.2 s x try apart.
SQLITE_BUSY_S = 300
HEARTBEAT_S = 2
GRACE_S = 8
OPEN_TRIES = 8


@dataclass(frozen=True)
class Constraints:
    min_accuracy: float | None = None  # percent
    max_latency_s: float | None = None  # per problem
    max_power_w: float | None = None  # average system power

    def merged(self, space: Space) -> dict[str, float]:
        """The space's default constraints, overridden by these."""
        out = dict(space.constraints)
        for k in ("min_accuracy", "max_latency_s", "max_power_w"):
            v = getattr(self, k)
            if v is not None:
                out[k] = float(v)
        return out


def direction(objective: str) -> int:
    """+1 minimise, -1 maximise."""
    return METRICS[OBJECTIVES[objective]][1]


@dataclass(frozen=True)
class Candidate:
    """A design the search reports, with its metrics and its design-file text."""

    design: DesignFile
    metrics: dict[str, Any]  # metric -> value; "closed_form" -> its headline metrics
    toml: str

    @property
    def label(self) -> str:
        s = self.design.system
        sch = self.design.schedule
        flags = sch.name if sch is not None else "?"
        bt = (f", backtrack {s.backtrack_threshold:.2f} x{s.max_backtracks} "
              f"window {s.backtrack_window}" if sch is not None and sch.backtracking else "")
        return f"{s.description} | {flags}: accept {s.accept_threshold:.2f}{bt}"

    def to_dict(self) -> dict[str, Any]:
        from dse.design_files import system_to_toml
        from dse.schedules import FLAGS

        s = system_to_toml(self.design.system)
        s.pop("sources", None)
        sch = self.design.schedule
        return {"design": {**s, "schedule": ({"name": sch.name, **{f: getattr(sch, f)
                                                                   for f in FLAGS}}
                                             if sch is not None else None),
                           "workload": self.design.workload},
                "metrics": self.metrics}


def spec_name(text: str) -> str:
    """A catalog-valid name (lowercase letters, digits, '.', '-') made from any text."""
    out = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.")
    return out[:80] or "design"


def candidate(ev: Evaluator, hw: Hardware, metrics: Mapping[str, F64], f: int, a: int, k: int,
              name: str, closed_form: bool = False) -> Candidate:
    kn = ev.knobs(f, a, k)
    spec = system_for(ev.space, hw, accept=kn["accept_threshold"],
                      backtrack=kn["backtrack_threshold"],
                      max_backtracks=kn["max_backtracks"], window=kn["backtrack_window"],
                      name=spec_name(name))
    sched = PRESETS["rsd"].with_flags(backtracking=kn["backtracking"],
                                      step_ahead=kn["step_ahead"],
                                      shadow_sync=kn["shadow_sync"])
    wl = ev.space.workloads[0][0] if len(ev.space.workloads) == 1 else None
    m = {k_: float(v[f, a, k]) for k_, v in metrics.items()}
    m["capex_usd"] = ev.capex_usd(hw)
    out_metrics: dict[str, Any] = dict(m)
    if closed_form and wl is not None:
        out_metrics["closed_form"] = closed_form_metrics(ev.cat, spec, sched, wl)
    mix = ", ".join(f"{n} {w:.2f}" for n, w in ev.space.workloads)
    header = (f"# Chosen by hetero-dse over space {ev.space.name!r} (workloads: {mix}).\n"
              "# Metrics are the mean-value model's; `dse evaluate --design` gives the "
              "accurate closed form.\n")
    text = design_file_text(spec, sched, wl or ev.space.workloads[0][0], m, header=header)
    return Candidate(DesignFile(spec, sched, wl), out_metrics, text)


def closed_form_metrics(cat: Catalog, spec: Any, sched: Any, workload: str) -> dict[str, float]:
    """The accurate closed form's headline metrics of one design (dse.engine.closed_form)."""
    from dse.engine.closed_form import evaluate

    rep = evaluate(build_design(cat, spec, sched), cat.get("workload", workload))
    return {"latency_s_per_problem": float(rep.latency_s_per_problem),
            "j_per_token": float(rep.j_per_token),
            "goodput_tokens_per_s": float(rep.goodput_tokens_per_s),
            "accuracy": float(rep.accuracy) if rep.accuracy is not None else math.nan,
            "energy_j_per_problem": float(rep.energy_j_per_problem)}


# --------------------------------------------------------------------------- Pareto fronts


def pareto_mask(values: F64) -> NDArray[np.bool_]:
    """Non-dominated rows of values [n, m] (all minimised); exact duplicates keep one."""
    n, m = values.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    if m == 1:
        out = np.zeros(n, dtype=bool)
        out[int(np.argmin(values[:, 0]))] = True
        return out
    if m == 2:
        order = np.lexsort((values[:, 1], values[:, 0]))
        y = values[order, 1]
        prev_min = np.minimum.accumulate(np.concatenate([[np.inf], y[:-1]]))
        keep = y < prev_min
        out = np.zeros(n, dtype=bool)
        out[order[keep]] = True
        return out
    # m >= 3: sweep candidates in lexicographic order; each survivor removes what it dominates
    order = np.lexsort(values.T[::-1])
    pts = values[order]
    idx = np.arange(n)
    i = 0
    while i < len(pts):
        dominated = np.all(pts >= pts[i], axis=1) & np.any(pts > pts[i], axis=1)
        dup = np.all(pts == pts[i], axis=1)
        dup[: i + 1] = False
        keep = ~(dominated | dup)
        pts, idx = pts[keep], idx[keep]
        i = int(keep[: i + 1].sum())
    out = np.zeros(n, dtype=bool)
    out[order[idx]] = True
    return out


# ------------------------------------------------------------------------------- sweep


@dataclass
class SweepResult:
    objectives: list[str]
    constraints: dict[str, float]
    n_designs: int
    n_feasible: int
    n_hardware: int
    seconds: float
    best: list[Candidate]
    pareto: list[Candidate]
    points: dict[str, F64] = field(default_factory=dict)  # a sample of feasible designs
    infeasible: dict[str, int] = field(default_factory=dict)  # reason -> hardware choices
    examples: dict[str, str] = field(default_factory=dict)  # reason -> one full reason


_REASON_KINDS = (("needs", "does not fit device memory"),
                 ("beyond", "context beyond the model's max positions"),
                 ("do not fit", "does not fit the FPGA's memory"), ("clock", "clock out of range"),
                 ("LUT", "not enough LUTs"), ("DSP", "not enough DSPs"),
                 ("BRAM", "not enough BRAM"), ("URAM", "not enough URAM"),
                 ("channel", "memory channels"))


def _reason_kind(reason: str) -> str:
    """A short category of an infeasibility reason (for counting)."""
    role, _, rest = reason.partition(":")
    rest = rest.strip()
    for word, kind in _REASON_KINDS:
        if word in rest:
            return f"{role}: {kind}"
    return f"{role}: {rest[:60]}"


def sweep(cat: Catalog, space: Space, objectives: Sequence[str],
          constraints: Constraints = Constraints(), *,
          progress: Callable[[float], None] | None = None, sample: int = 20_000,
          seed: int = 0) -> SweepResult:
    """Every design of the space's grid: the exact optimum (one objective) or the exact
    Pareto front (several), under the constraints."""
    objectives = check_objectives(objectives)
    cons = constraints.merged(space)
    t0 = time.perf_counter()
    ev = Evaluator(cat, space)
    hws = hardware(cat, space)
    if not hws:
        raise DseError(f"{space.path}: the space has no hardware choice whose draft and "
                       "target share a tokenizer")
    per_hw = ev.grid.size
    rng = np.random.default_rng(seed)
    keep_per_hw = max(1, sample // max(len(hws), 1))
    dirs = np.array([direction(o) for o in objectives], dtype=float)
    n_feasible = 0
    reasons: Counter[str] = Counter()
    examples: dict[str, str] = {}
    front_vals: list[F64] = []
    front_ref: list[tuple[int, NDArray[np.int64]]] = []
    best_val, best_ref = math.inf, None
    samples: dict[str, list[F64]] = {k: [] for k in METRICS}
    results: dict[int, HardwareResult] = {}
    for i, hw in enumerate(hws):
        r = ev.evaluate(hw)
        if progress is not None and (i % 16 == 0 or i == len(hws) - 1):
            progress((i + 1) / len(hws))
        if r.reasons:
            for why in r.reasons:
                reasons[_reason_kind(why)] += 1
                examples.setdefault(_reason_kind(why), why)
            continue
        ok = feasible_mask(r.metrics, cons).ravel()
        idx = np.flatnonzero(ok)
        n_feasible += len(idx)
        if len(idx) == 0:
            continue
        vals = np.stack([r.metrics[OBJECTIVES[o]].ravel()[idx] * d
                         for o, d in zip(objectives, dirs, strict=True)], axis=1)
        if len(objectives) == 1:
            j = int(np.argmin(vals[:, 0]))
            if vals[j, 0] < best_val:
                best_val, best_ref = float(vals[j, 0]), (i, int(idx[j]))
                results[i] = r
        else:
            mask = pareto_mask(vals)
            front_vals.append(vals[mask])
            front_ref.append((i, idx[mask]))
            results[i] = r
        pick = idx if len(idx) <= keep_per_hw else rng.choice(idx, keep_per_hw, replace=False)
        for k, v in r.metrics.items():
            samples[k].append(v.ravel()[pick])
    shape = ev.grid.shape
    best: list[Candidate] = []
    front: list[Candidate] = []
    if len(objectives) == 1 and best_ref is not None:
        i, flat = best_ref
        fi, ai, ki = (int(x) for x in np.unravel_index(flat, shape))
        best = [candidate(ev, hws[i], results[i].metrics, fi, ai, ki,
                          name=f"{space.name}-best", closed_form=True)]
        front = best
    elif front_vals:
        allv = np.concatenate(front_vals)
        refs = [(i, int(j)) for i, js in front_ref for j in js]
        mask = pareto_mask(allv)
        order = np.flatnonzero(mask)[np.argsort(allv[mask, 0], kind="stable")]
        for n, o in enumerate(order):
            i, flat = refs[o]
            fi, ai, ki = (int(x) for x in np.unravel_index(flat, shape))
            front.append(candidate(ev, hws[i], results[i].metrics, fi, ai, ki,
                                   name=f"{space.name}-pareto-{n}", closed_form=n == 0))
        best = front[:1]
    points = {k: np.concatenate(v) if v else np.zeros(0) for k, v in samples.items()}
    return SweepResult(objectives, cons, len(hws) * per_hw, n_feasible, len(hws),
                       time.perf_counter() - t0, best, front, points, dict(reasons), examples)


# ---------------------------------------------------------------------------- optimize


@dataclass
class OptimizeResult:
    objectives: list[str]
    constraints: dict[str, float]
    study_name: str
    storage: str
    n_trials: int  # finished trials in the study
    n_new: int  # trials this call ran
    best: list[Candidate]
    seconds: float


def space_digest(space: Space, objectives: Sequence[str], cons: Mapping[str, float]) -> str:
    """What a study was created for: resuming it with another space or objective is refused."""
    h = hashlib.sha256(repr((space.workloads, space.drafts, space.prms, space.targets,
                             space.accept_thresholds, space.backtrack_thresholds,
                             space.max_backtracks, space.backtrack_windows, space.step_ahead,
                             space.shadow_sync, space.max_context_tokens,
                             space.lifetime_years, space.usd_per_kwh, list(objectives),
                             sorted(cons.items()))).encode())
    return h.hexdigest()[:16]


def open_storage(url: str | None) -> Any:
    """An Optuna RDB storage: the embedded SQLite file by default, any SQLAlchemy URL
    (postgresql://...) otherwise. A heartbeat lets a restarted run fail the trials a killed
    one left RUNNING."""
    import optuna

    url = url or DEFAULT_STORAGE
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        kwargs = {"connect_args": {"timeout": SQLITE_BUSY_S}}
    for attempt in range(OPEN_TRIES):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                store = optuna.storages.RDBStorage(url, engine_kwargs=kwargs,
                                                   heartbeat_interval=HEARTBEAT_S,
                                                   grace_period=GRACE_S)
            break
        except Exception as e:  # sqlalchemy / driver errors: one line for the user
            msg = str(e).splitlines()[0]
            # processes creating one new storage at once race on its schema: try again
            if attempt < OPEN_TRIES - 1 and ("UNIQUE constraint" in msg or "already exists" in msg
                                or "locked" in msg or "duplicate key" in msg):
                time.sleep(0.2 * (attempt + 1))
                continue
            raise DseError(f"storage {url}: cannot open: {msg}") from None
    if url.startswith("sqlite"):
        _fast_sqlite(store.engine)
    return store


def _fast_sqlite(engine: Any) -> None:
    """Write-ahead log and fsync at checkpoints only: a commit then survives a killed process
    (the log is in the OS cache) though not a power cut; commits get ~10x cheaper and readers
    no longer block the writer of another process."""
    import sqlalchemy

    def on_connect(conn: Any, _record: Any) -> None:
        cur = conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    sqlalchemy.event.listen(engine, "connect", on_connect)
    engine.dispose()  # connections opened before the listener get replaced


def _suggest_placement(trial: Any, role: str, opts: Sequence[Placement],
                       cat: Catalog) -> Placement | None:
    """Pick one role's placement field by field (TPE sees each choice separately)."""

    def choose(name: str, values: Sequence[Any]) -> Any:
        vals = sorted(set(values), key=lambda v: (str(type(v)), v))
        if len(vals) == 1:  # fixed by the space: not a parameter of the study
            return vals[0]
        return trial.suggest_categorical(name, vals)

    dev = choose(f"{role}_device", [o.device for o in opts])
    model = choose(f"{role}_model", [o.model for o in opts])
    sub = [o for o in opts if o.device == dev and o.model == model]
    if role == "draft":
        # precision and software per device kind: their choices differ between kinds
        kind = kind_of(cat, dev)
        pool = [o for o in opts if kind_of(cat, o.device) is kind]
        prec = choose(f"draft_{kind.name}_precision", [o.precision for o in pool])
        serv = choose(f"draft_{kind.name}_serving", [_profile(o) for o in pool])
        if kind.build_knobs:  # the space's build-knob columns (clock, channels, MAC lanes)
            clock = choose("fpga_clock_MHz", [o.clock_mhz for o in pool])
            ch = choose("fpga_memory_channels", [o.memory_channels for o in pool])
            lanes = choose("fpga_mac_lanes", [o.mac_lanes for o in pool])
            sub = [o for o in sub if (o.clock_mhz, o.memory_channels, o.mac_lanes)
                   == (clock, ch, lanes)]
    else:
        prec = choose(f"{role}_precision", [o.precision for o in opts])
        serv = choose(f"{role}_serving", [o.serving for o in opts])
        tp = choose(f"{role}_tp", [o.tp for o in opts])
        sub = [o for o in sub if o.tp == tp]
    sub = [o for o in sub if o.precision == prec and _profile(o) == serv]
    return sub[0] if sub else None


def _profile(o: Placement) -> str | None:
    """The option's serving profile (GPU) or engine (FPGA): one study parameter per kind."""
    return o.engine if o.engine is not None else o.serving


def _study_trials(study: Any) -> list[Any]:
    import optuna

    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))


def optimize(cat: Catalog, space: Space, objectives: Sequence[str],
             constraints: Constraints = Constraints(), *, trials: int = 200,
             timeout: float | None = None, seed: int = 0, storage: str | None = None,
             study_name: str | None = None, progress: bool = False, worker: int = 0,
             callback: Callable[[int, int], None] | None = None) -> OptimizeResult:
    """Run (or resume) an Optuna study until it holds `trials` finished trials (or `timeout`
    seconds pass). Several processes may run on one storage and study at once.

    storage: a SQLAlchemy URL, or None for Optuna's in-memory storage (gone with the process;
    the `dse optimize` command passes its SQLite default). A resumed or shared study seeds its
    sampler from (seed, worker, trials already in the study): give each concurrent worker its
    own `worker` number so that they do not sample the same designs."""
    import optuna

    objectives = check_objectives(objectives)
    cons = constraints.merged(space)
    t0 = time.perf_counter()
    url = storage if storage is not None else IN_MEMORY
    name = study_name or f"{space.name}-{'+'.join(objectives)}"
    digest = space_digest(space, objectives, cons)
    dirs = [direction(o) for o in objectives]
    store = optuna.storages.InMemoryStorage() if storage is None else open_storage(url)
    study = optuna.create_study(
        storage=store, study_name=name, load_if_exists=True,
        directions=["minimize" if d > 0 else "maximize" for d in dirs])
    got = study.user_attrs.get("digest")
    if got is None:
        study.set_user_attr("digest", digest)
        study.set_user_attr("space", space.name)
        study.set_user_attr("objectives", objectives)
        study.set_user_attr("constraints", cons)
        study.set_user_attr("workloads", [list(w) for w in space.workloads])
    elif got != digest:
        raise UsageError(f"study {name}: this study was created for another space, "
                         f"objective or constraints ({study.user_attrs.get('space')}, "
                         f"{study.user_attrs.get('objectives')}, "
                         f"{study.user_attrs.get('constraints')}); use another study name")
    done = len(_study_trials(study))
    eff_seed = seed if not study.trials else int.from_bytes(hashlib.sha256(
        f"{seed}:{worker}:{len(study.trials)}".encode()).digest()[:4], "little")

    def constraints_func(t: Any) -> list[float]:
        return [float(t.user_attrs.get("violation", 1.0))]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)  # constraints_func: still supported
        study.sampler = optuna.samplers.TPESampler(
            seed=eff_seed, multivariate=True, group=True, constraints_func=constraints_func,
            n_startup_trials=10)
    ev = Evaluator(cat, space)
    single = len(objectives) == 1
    g = ev.grid

    def objective(trial: Any) -> Any:
        parts = [_suggest_placement(trial, r, opts, cat) for r, opts in
                 (("draft", space.drafts), ("prm", space.prms), ("target", space.targets))]
        if not single:
            a = trial.suggest_categorical("accept_threshold", list(space.accept_thresholds))
            mb = trial.suggest_categorical("max_backtracks", list(space.max_backtracks))
            bt = (trial.suggest_categorical("backtrack_threshold",
                                            list(space.backtrack_thresholds)) if mb > 0 else None)
            win = (trial.suggest_categorical("backtrack_window",
                                             list(space.backtrack_windows)) if mb > 0 else None)
            sa = trial.suggest_categorical("step_ahead", list(space.step_ahead))
            sh = trial.suggest_categorical("shadow_sync", list(space.shadow_sync))
        worst = tuple(math.inf * d for d in dirs)
        if any(p is None for p in parts):
            trial.set_user_attr("infeasible", "no such combination in the space")
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        hw = Hardware(*parts)  # type: ignore[arg-type]
        if cat.model(hw.draft.model).tokenizer_family != \
                cat.model(hw.target.model).tokenizer_family:
            trial.set_user_attr("infeasible", "draft and target do not share a tokenizer")
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        r = ev.evaluate(hw)
        if r.reasons:
            trial.set_user_attr("infeasible", "; ".join(r.reasons))
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        if single:
            val = r.metrics[OBJECTIVES[objectives[0]]] * dirs[0]
            ok = feasible_mask(r.metrics, cons)
            if ok.any():
                flat = int(np.argmin(np.where(ok, val, np.inf)))
                viol = 0.0
            else:
                v = violation(r.metrics, cons)
                flat = int(np.argmin(v))
                viol = float(v.ravel()[flat])
            f, ai, k = (int(x) for x in np.unravel_index(flat, g.shape))
        else:
            f = g.flags.index((sa, sh))
            ai = int(np.flatnonzero(g.accept == a)[0])
            if mb == 0:
                k = int(np.flatnonzero(g.max_backtracks == 0)[0])
            else:
                k = int(np.flatnonzero((g.max_backtracks == mb) & (g.backtrack == bt)
                                       & (g.window == win))[0])
            one = {m: v[f:f + 1, ai:ai + 1, k:k + 1] for m, v in r.metrics.items()}
            viol = max(0.0, float(violation(one, cons).ravel()[0]))
        c = candidate(ev, hw, r.metrics, f, ai, k, name=f"{name}-trial-{trial.number}")
        trial.set_user_attr("design_toml", c.toml)
        trial.set_user_attr("metrics", {m: v for m, v in c.metrics.items()
                                        if isinstance(v, float) and math.isfinite(v)})
        trial.set_user_attr("violation", viol)  # last: constraints_func reads it
        vals = tuple(c.metrics[OBJECTIVES[o]] for o in objectives)
        return vals[0] if single else vals

    remaining = max(trials - done, 0)
    cbs: list[Callable[[Any, Any], None]] = [optuna.study.MaxTrialsCallback(
        trials, states=(optuna.trial.TrialState.COMPLETE,))]
    if callback is not None:
        cbs.append(lambda st, tr: callback(len(_study_trials(st)), trials))
    n_before = len(study.trials)
    if remaining > 0:
        study.optimize(objective, n_trials=remaining, timeout=timeout, callbacks=cbs,
                       show_progress_bar=progress, gc_after_trial=False)
    best = best_candidates(study)
    if best and best[0].design.workload is not None:
        b = best[0]
        b.metrics["closed_form"] = closed_form_metrics(cat, b.design.system, b.design.schedule,
                                                       best[0].design.workload)
    return OptimizeResult(objectives, cons, name, url, len(_study_trials(study)),
                          len(study.trials) - n_before, best, time.perf_counter() - t0)


def best_candidates(study: Any) -> list[Candidate]:
    """The best feasible trial (one objective) or the feasible non-dominated trials."""
    dirs = [1 if d.name == "MINIMIZE" else -1 for d in study.directions]
    ts = [t for t in _study_trials(study) if t.user_attrs.get("violation", 1.0) <= 0
          and "design_toml" in t.user_attrs]
    if not ts:
        return []
    vals = np.array([[v * d for v, d in zip(t.values, dirs, strict=True)] for t in ts])
    mask = pareto_mask(vals)
    order = np.flatnonzero(mask)[np.argsort(vals[mask, 0], kind="stable")]
    return [trial_candidate(ts[i]) for i in order]


def trial_candidate(t: Any) -> Candidate:
    df = parse_design_text(t.user_attrs["design_toml"], f"trial {t.number}")
    return Candidate(df, dict(t.user_attrs.get("metrics", {})), t.user_attrs["design_toml"])


def load_study(storage: str | None, study_name: str) -> Any:
    import optuna

    url = storage or DEFAULT_STORAGE
    names = [s.study_name for s in list_study_summaries(url)]
    if study_name not in names:
        raise UnknownNameError("study", study_name, names)
    return optuna.load_study(study_name=study_name, storage=open_storage(url))


def study_design_file(storage: str | None, study_name: str, trial: int | None = None
                      ) -> DesignFile:
    """The design of a study's best feasible trial, or of trial number `trial`."""
    study = load_study(storage, study_name)
    if trial is None:
        best = best_candidates(study)
        if not best:
            raise DseError(f"study {study_name}: no feasible completed trial")
        return best[0].design
    ts = [t for t in _study_trials(study) if t.number == trial]
    if not ts or "design_toml" not in ts[0].user_attrs:
        done = [t.number for t in _study_trials(study) if "design_toml" in t.user_attrs]
        raise UsageError(f"--trial {trial}: no completed trial with a design in study "
                         f"{study_name} (completed: {len(done)}, numbers "
                         f"{done[0] if done else '-'}..{done[-1] if done else '-'})")
    return trial_candidate(ts[0]).design


def list_study_summaries(url: str) -> list[Any]:
    import optuna

    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if path and not os.path.exists(path):
            return []
    return list(optuna.get_all_study_summaries(open_storage(url), include_best_trial=False))


def list_studies(storage: str | None = None) -> list[dict[str, Any]]:
    """Every study in a storage with its trial counts and best values (feasible trials)."""
    import optuna

    url = storage or DEFAULT_STORAGE
    out = []
    for s in list_study_summaries(url):
        study = optuna.load_study(study_name=s.study_name, storage=open_storage(url))
        best = best_candidates(study) if study.trials else []
        objectives = study.user_attrs.get("objectives") or [
            d.name.lower() for d in study.directions]
        out.append({
            "name": s.study_name,
            "n_trials": len(study.trials),
            "n_complete": len(_study_trials(study)),
            "objectives": objectives,
            "directions": [d.name.lower() for d in study.directions],
            "best_values": ([best[0].metrics.get(OBJECTIVES.get(o, o)) for o in objectives]
                            if best else None),
            "n_pareto": len(best),
            "space": study.user_attrs.get("space"),
            "created": s.datetime_start.isoformat(timespec="seconds")
            if s.datetime_start else None,
        })
    return out
