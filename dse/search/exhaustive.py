"""The exhaustive vectorised sweep: every design of a space's grid, evaluated by the mean-value
model (dse.search.grid) hardware choice by hardware choice; the exact optimum of one objective
or the exact Pareto front of several, under the constraints. Infeasible hardware is counted
with its reason, never returned."""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from dse.core.arrays import F64
from dse.errors import DseError, raise_if_stopped
from dse.search.candidates import Candidate
from dse.search.families import (
    FamilyBest,
    FrontTie,
    checked_accuracy,
    family_bests,
    front_ties,
    identity,
    nearest_note,
)
from dse.search.grid import Evaluator, HardwareResult, candidate, feasible_mask
from dse.search.objectives import (
    DEFAULT_CONFIDENCE,
    METRICS,
    NO_CONSTRAINTS,
    OBJECTIVES,
    Constraints,
    active,
    check_confidence,
    check_objectives,
    direction,
)
from dse.search.pareto import pareto_mask
from dse.search.shown import FRONT_SHOWN, TOP_K, accurate, shown
from dse.search.space import Hardware, Space, families_of, hardware
from dse.specs import Catalog


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
    confidence: float = DEFAULT_CONFIDENCE  # constraints checked at this interval end
    by_family: list[FamilyBest] = field(default_factory=list)  # each family's best vs best[0]
    measured_only: bool = False
    ties: list[FrontTie] = field(default_factory=list)  # the shown front's neighbours
    # pool=True: the best design of each family on each target placement (mean-value
    # figures), the designs a search at a load serves (dse.search.at_load)
    pool: list[Candidate] = field(default_factory=list)


_REASON_KINDS = (("together they need", "roles sharing a device do not fit together"),
                 ("sequences' KV caches", "a width design's batch does not fit"),
                 ("needs", "does not fit device memory"),
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


@dataclass(frozen=True)
class _Summary:
    """What the sweep keeps of one hardware choice's grid (light enough to cross processes)."""
    n_designs: int
    reasons: tuple[str, ...] = ()
    n_feasible: int = 0
    best: tuple[float, int] | None = None  # the first objective's feasible best (value, cell)
    front: tuple[F64, NDArray[np.int64]] | None = None  # several objectives: (values, cells)
    samples: dict[str, F64] = field(default_factory=dict)  # a few feasible designs' metrics


@dataclass(frozen=True)
class _Job:
    ev: Evaluator
    hws: Sequence[Hardware]
    cons: dict[str, float]
    objectives: list[str]
    dirs: F64
    keep_per_hw: int
    seed: int


def _summary(job: _Job, i: int) -> _Summary:
    """Hardware choice i of the job: its feasible cells' best (or non-dominated) objective
    values and a seeded sample of them, or its reasons."""
    r = job.ev.evaluate(job.hws[i])
    if r.reasons:
        return _Summary(r.n_designs, tuple(r.reasons))
    idx = np.flatnonzero(feasible_mask(r.for_constraints(), job.cons).ravel())
    if len(idx) == 0:
        return _Summary(r.n_designs)
    vals = np.stack([r.metrics[OBJECTIVES[o]].ravel()[idx] * d
                     for o, d in zip(job.objectives, job.dirs, strict=True)], axis=1)
    j = int(np.argmin(vals[:, 0]))
    front = None
    if len(job.objectives) > 1:
        mask = pareto_mask(vals)
        front = (vals[mask], idx[mask])
    # each choice its own stream: the same sample whichever process evaluates it
    rng = np.random.default_rng((job.seed, i))
    pick = (idx if len(idx) <= job.keep_per_hw
            else rng.choice(idx, job.keep_per_hw, replace=False))
    return _Summary(r.n_designs, (), len(idx), (float(vals[j, 0]), int(idx[j])), front,
                    {k: v.ravel()[pick] for k, v in r.metrics.items()})


_FORKED: _Job | None = None  # the job a forked worker process inherits
CHUNK = 16  # hardware choices per task handed to a worker process


def _chunk(lo: int) -> list[_Summary]:
    assert _FORKED is not None
    return [_summary(_FORKED, i) for i in range(lo, min(lo + CHUNK, len(_FORKED.hws)))]


def _worker_signals() -> None:
    # Ctrl-C reaches the whole process group: the parent ends the pool and says one line;
    # the pool ends a worker with SIGTERM, which must not run the command's handler
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


FORKS = sys.platform == "linux"  # where worker processes are forked (elsewhere: one process)


def default_processes() -> int:
    """The CPUs this process may run on (1 where worker processes are not forked)."""
    return max(1, len(os.sched_getaffinity(0))) if FORKS else 1


def _summaries(job: _Job, processes: int,
               progress: Callable[[float], None] | None) -> Iterator[_Summary]:
    """Every hardware choice's summary, in order: in this process, or spread over `processes`
    forked worker processes (Linux; the results are the same, tested)."""
    global _FORKED
    n = len(job.hws)
    if processes <= 1 or n < 2 * CHUNK or not FORKS:
        for i in range(n):
            yield _summary(job, i)
            if progress is not None and (i % CHUNK == 0 or i == n - 1):
                progress((i + 1) / n)
        return
    _FORKED = job
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(min(processes, -(-n // CHUNK)), initializer=_worker_signals) as pool:
            for lo, part in zip(range(0, n, CHUNK),
                                pool.imap(_chunk, range(0, n, CHUNK)), strict=True):
                yield from part
                if progress is not None:
                    progress(min(lo + CHUNK, n) / n)
    finally:
        _FORKED = None


def sweep(cat: Catalog, space: Space, objectives: Sequence[str],
          constraints: Constraints = NO_CONSTRAINTS, *,
          progress: Callable[[float], None] | None = None, sample: int = 20_000,
          seed: int = 0, confidence: float = DEFAULT_CONFIDENCE,
          measured_only: bool = False, families: bool = True,
          processes: int = 1, pool: bool = False, reevaluate: bool = True) -> SweepResult:
    """Every design of the space's grid: the exact optimum (one objective) or the exact
    Pareto front (several), under the constraints, checked at the pessimistic end of each
    constrained metric's interval at `confidence` (0.9: the 90% interval's end; 0.5: the
    central values); designs are ranked by their central values. Beside the winner, each
    family's best (dse.search.families), by the first objective. measured_only: only hardware
    whose every device has a published measurement. processes: how many forked processes
    share the hardware choices (Linux; the result does not depend on it; the `dse sweep`
    command uses every CPU, the library one process, as a threaded server such as the
    dashboard must not fork). pool: also keep each family's best on each target placement
    (SweepResult.pool). reevaluate=False: the best shown as the mean-value model ranked it, not
    re-evaluated (a search at a load serves the pool instead)."""
    objectives = check_objectives(objectives)
    confidence = check_confidence(confidence)
    cons = constraints.merged(space)
    t0 = time.perf_counter()
    ev = Evaluator(cat, space, confidence=confidence,
                   checked={c.metric: c.bound for c, _ in active(cons)})
    hws = hardware(cat, space)
    if measured_only:
        hws = measured_hardware(hws)
    if not hws:
        raise DseError(f"{space.path}: the space has no hardware choice whose draft and "
                       "target share a tokenizer")
    keep_per_hw = max(1, sample // max(len(hws), 1))
    dirs = np.array([direction(o) for o in objectives], dtype=float)
    job = _Job(ev, hws, cons, list(objectives), dirs, keep_per_hw, seed)
    n_feasible = 0
    n_designs = 0
    reasons: Counter[str] = Counter()
    examples: dict[str, str] = {}
    front_vals: list[F64] = []
    front_ref: list[tuple[int, NDArray[np.int64]]] = []
    tops: list[tuple[float, int, int]] = []  # one objective: the TOP_K best hardware choices
    fam_best: dict[str, tuple[float, int, int]] = {}
    per_target: dict[tuple[str, str], tuple[float, int, int]] = {}
    samples: dict[str, list[F64]] = {k: [] for k in METRICS}
    for i, got in enumerate(_summaries(job, processes, progress)):
        raise_if_stopped()  # a Ctrl-C or SIGTERM that a library's cleanup lost
        n_designs += got.n_designs
        for why in got.reasons:
            reasons[_reason_kind(why)] += 1
            examples.setdefault(_reason_kind(why), why)
        if got.best is None:
            continue
        n_feasible += got.n_feasible
        val, flat = got.best
        fam = hws[i].family
        if val < fam_best.get(fam, (math.inf, 0, 0))[0]:
            fam_best[fam] = (val, i, flat)
        key = (fam, hws[i].target.label())
        if pool and val < per_target.get(key, (math.inf, 0, 0))[0]:
            per_target[key] = (val, i, flat)
        if got.front is not None:
            front_vals.append(got.front[0])
            front_ref.append((i, got.front[1]))
        elif len(tops) < TOP_K or val < tops[-1][0]:
            tops = sorted([*tops, (val, i, flat)])[:TOP_K]
        for k, v in got.samples.items():
            samples[k].append(v)
    memo: dict[int, HardwareResult] = {}

    def result(i: int) -> HardwareResult:
        # the few shown hardware choices' full grids, evaluated again here (the same numbers)
        if i not in memo:
            memo[i] = ev.evaluate(hws[i])
        return memo[i]

    shape = ev.grid.shape
    best: list[Candidate] = []
    front: list[Candidate] = []
    family_of: dict[str, str] = {}  # a candidate's spec name -> its hardware's family
    if len(objectives) == 1:
        for n, (_, i, flat) in enumerate(tops):
            fi, ai, ki = (int(x) for x in np.unravel_index(flat, shape))
            best.append(candidate(ev, hws[i], result(i).metrics, fi, ai, ki,
                                  name=f"{space.name}-best" + (f"-{n}" if n else "")))
            family_of[best[-1].design.system.name] = hws[i].family
    elif front_vals:
        allv = np.concatenate(front_vals)
        refs = [(i, int(j)) for i, js in front_ref for j in js]
        mask = pareto_mask(allv)
        order = np.flatnonzero(mask)[np.argsort(allv[mask, 0], kind="stable")]
        order = order[np.unique(np.linspace(0, len(order) - 1, FRONT_SHOWN).astype(int))] \
            if len(order) > FRONT_SHOWN else order
        for n, o in enumerate(order):
            i, flat = refs[o]
            fi, ai, ki = (int(x) for x in np.unravel_index(flat, shape))
            best.append(candidate(ev, hws[i], result(i).metrics, fi, ai, ki,
                                  name=f"{space.name}-pareto-{n}"))
            family_of[best[-1].design.system.name] = hws[i].family
    points = {k: np.concatenate(v) if v else np.zeros(0) for k, v in samples.items()}
    # what is shown: re-evaluated by the accurate closed form and re-ranked (dse.search.shown)
    front = shown(cat, space, objectives, best, cons, confidence) if reevaluate else best
    best = front[:1]
    fams: list[FamilyBest] = []
    if best and families:
        bests: dict[str, Candidate | None] = {}
        for fam, (_, i, flat) in fam_best.items():
            fi, ai, ki = (int(x) for x in np.unravel_index(flat, shape))
            c = candidate(ev, hws[i], result(i).metrics, fi, ai, ki,
                          name=f"{space.name}-best-{fam}")
            # the family's best by the accurate closed form among its mean-value best and
            # the shown designs of the family
            mine = [b for b in front if family_of.get(b.design.system.name) == fam]
            if not any(identity(b) == identity(c) for b in mine):
                mine.append(accurate(cat, space, c))
            bests[fam] = min(mine, key=lambda b: dirs[0] * float(
                b.metrics.get(OBJECTIVES[objectives[0]], math.inf)))
        fams = with_nearest(cat, space, family_bests(cat, space.workloads, best[0], bests,
                                                     families_of(space)),
                            cons, confidence, measured_only)
    ties = front_ties(cat, space.workloads, front, [OBJECTIVES[o] for o in objectives]) \
        if reevaluate else []
    kept = []
    for n, (_, i, flat) in enumerate(sorted(per_target.values())):
        fi, ai, ki = (int(x) for x in np.unravel_index(flat, shape))
        kept.append(candidate(ev, hws[i], result(i).metrics, fi, ai, ki,
                              name=f"{space.name}-pool-{n}"))
    return SweepResult(objectives, cons, n_designs, n_feasible, len(hws),
                       time.perf_counter() - t0, best, front, points, dict(reasons), examples,
                       confidence, fams, measured_only, ties, kept)


def with_nearest(cat: Catalog, space: Space, fams: list[FamilyBest],
                 cons: Mapping[str, float], confidence: float, measured_only: bool
                 ) -> list[FamilyBest]:
    """The families, the width family's `nearest` filled where it has no feasible design under
    a min_accuracy bound: its most accurate design (of the accurate closed form's TOP_K by
    central accuracy, the one whose accuracy is highest where the bound is checked) under every
    other constraint, when that design misses the bound. Without it a user asking for 80%
    reads only "no feasible design" and not how close the family came."""
    bound = cons.get("min_accuracy")
    width = tuple(a for a in space.arrangements if a.is_width)
    if not bound or not width:
        return fams
    out = []
    for f in fams:
        if f.family == "width" and f.candidate is None:
            sub = sweep(cat, replace(space, arrangements=width), ["accuracy"],
                        Constraints(**{**cons, "min_accuracy": 0.0}), confidence=confidence,
                        measured_only=measured_only, families=False)
            if sub.n_feasible and sub.pareto:
                c = max(sub.pareto, key=lambda b: checked_accuracy(b, confidence))
                if checked_accuracy(c, confidence) < bound:
                    f = replace(f, nearest=c,
                                nearest_line=nearest_note(c, bound, confidence))
        out.append(f)
    return out


def measured_hardware(hws: Sequence[Hardware]) -> list[Hardware]:
    """The hardware choices whose every device has a published measurement."""
    from dse.uncertainty.evidence import measured_devices

    measured = measured_devices()
    return [h for h in hws if all(p.device in measured for p in (h.draft, h.prm, h.target)
                                  if p is not None)]
