"""The Optuna adapter: a study over a space's hardware (and, with several objectives, its
algorithm knobs), ranked by the mean-value model like the sweep, so the optimiser can be
checked against the sweep's exact grid optimum. The designs it shows are then re-evaluated by
the accurate closed form with their intervals and re-ranked (dse.search.shown).

One Optuna trial picks the hardware (draft device, models, precisions, serving, FPGA build,
PRM and target GPUs) with a seeded TPE sampler; with one objective the algorithm knobs and
schedule flags of that hardware are then solved exactly by the vectorised grid (they cost
microseconds, and their optimum sits on the accuracy constraint's edge, where sampling wastes
trials); with several objectives every knob is sampled too (multi-objective TPE) and the
study's non-dominated feasible trials form the front. Infeasible trials carry a violation > 0,
read by Optuna's constraint mechanism.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dse.errors import DseError, UsageError, raise_if_stopped
from dse.search.candidates import Candidate, trial_candidate
from dse.search.families import (
    FamilyBest,
    FrontTie,
    family_bests,
    front_ties,
    identity,
)
from dse.search.grid import Evaluator, candidate, feasible_mask, missed, violation
from dse.search.objectives import (
    DEFAULT_CONFIDENCE,
    NO_CONSTRAINTS,
    OBJECTIVES,
    Constraints,
    active,
    check_confidence,
    check_objectives,
    direction,
)
from dse.search.parameters import ROLES, placement, sample, study_knobs
from dse.search.shown import FRONT_SHOWN, TOP_K, accurate, shown
from dse.search.space import SEPARATE, TARGET_ONLY, Space, arrange, families_of
from dse.search.storage import (
    IN_MEMORY,
    best_candidates,
    fail_orphans,
    mark_worker,
    open_storage,
    removed_if_failed,
    storage_failure,
    study_trials,
    within_budget,
    write_behind,
)
from dse.specs import Catalog

CREATE_ATTEMPTS = 4  # tries to create (or load) a shared study before its storage error shows


@dataclass
class OptimizeResult:
    objectives: list[str]
    constraints: dict[str, float]
    study_name: str
    storage: str
    n_trials: int  # finished trials in the study
    n_new: int  # trials this call evaluated that completed (not another worker's)
    best: list[Candidate]
    seconds: float
    confidence: float = DEFAULT_CONFIDENCE  # constraints checked at this interval end
    by_family: list[FamilyBest] = field(default_factory=list)  # each family's best vs best[0]
    measured_only: bool = False
    ties: list[FrontTie] = field(default_factory=list)  # the shown designs' neighbours
    study: Any = field(default=None, repr=False, compare=False)  # the Optuna study itself


def space_digest(space: Space, objectives: Sequence[str], cons: Mapping[str, float],
                 confidence: float = DEFAULT_CONFIDENCE) -> str:
    """What a study was created for: resuming it with another space or objective is refused."""
    h = hashlib.sha256(repr((space.workloads, space.drafts, space.prms, space.targets,
                             space.accept_thresholds, space.backtrack_thresholds,
                             space.max_backtracks, space.backtrack_windows, space.step_ahead,
                             space.shadow_sync, space.max_context_tokens,
                             space.lifetime_years, space.usd_per_kwh, list(objectives),
                             sorted(cons.items()), confidence,
                             # a study of the old single arrangement keeps its digest
                             *((space.arrangements,) if space.arrangements != (SEPARATE,)
                               else ()))).encode())
    return h.hexdigest()[:16]


def optimize(cat: Catalog, space: Space, objectives: Sequence[str],
             constraints: Constraints = NO_CONSTRAINTS, *, trials: int = 200,
             timeout: float | None = None, seed: int = 0, storage: str | None = None,
             study_name: str | None = None, progress: bool = False, worker: int = 0,
             callback: Callable[[int, int], None] | None = None,
             confidence: float = DEFAULT_CONFIDENCE, measured_only: bool = False,
             families: bool = True, reevaluate: bool = True) -> OptimizeResult:
    """Run (or resume) an Optuna study until it holds `trials` finished trials (or `timeout`
    seconds pass). Several processes may run on one storage and study at once.

    storage: a SQLAlchemy URL, or None for Optuna's in-memory storage (gone with the process;
    the `dse optimize` command passes its SQLite default). A resumed or shared study seeds its
    sampler from (seed, worker, trials already in the study): give each concurrent worker its
    own `worker` number so that they do not sample the same designs.

    confidence: constraints are checked at the pessimistic end of each constrained metric's
    interval (0.9: the 90% interval's end; 0.5: the central values); the objectives are the
    central values. measured_only: a trial on a device without a published measurement is
    infeasible. Beside the winner, each family's best (`study_families`; families=False:
    none, as a search at a load weighs the families at the load instead; reevaluate=False:
    the study's best as its trials ranked them, not re-evaluated by the closed form)."""
    import optuna

    from dse.search.exhaustive import measured_hardware

    objectives = check_objectives(objectives)
    confidence = check_confidence(confidence)
    cons = constraints.merged(space)
    t0 = time.perf_counter()
    url = storage if storage is not None else IN_MEMORY
    name = study_name or f"{space.name}-{'+'.join(objectives)}"
    digest = space_digest(space, objectives, cons, confidence)
    dirs = [direction(o) for o in objectives]
    with removed_if_failed(storage) if storage is not None else contextlib.nullcontext():
        store = (optuna.storages.InMemoryStorage() if storage is None
                 else write_behind(open_storage(url)))
        for attempt in range(CREATE_ATTEMPTS):
            try:
                study = optuna.create_study(
                    storage=store, study_name=name, load_if_exists=True,
                    directions=["minimize" if d > 0 else "maximize" for d in dirs])
                got = study.user_attrs.get("digest")
                if got is None:  # the digest last: a study without it is set up again
                    study.set_user_attr("space", space.name)
                    study.set_user_attr("objectives", objectives)
                    study.set_user_attr("constraints", cons)
                    study.set_user_attr("confidence", confidence)
                    study.set_user_attr("workloads", [list(w) for w in space.workloads])
                    study.set_user_attr("digest", digest)
                break
            except DseError:
                raise
            except Exception as e:  # sqlalchemy / driver errors (a full disk): one line
                # workers started together race to create the study or its attributes (one
                # commit loses on the unique key): the next attempt finds what the winner wrote
                if attempt + 1 < CREATE_ATTEMPTS:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise DseError(f"storage {url}: cannot create study {name}: "
                               f"{(str(e).splitlines() or [type(e).__name__])[0]}") from None
    if got is not None and got != digest:
        raise UsageError(f"study {name}: this study was created for another space, "
                         f"objective, constraints or confidence ({study.user_attrs.get('space')}, "
                         f"{study.user_attrs.get('objectives')}, "
                         f"{study.user_attrs.get('constraints')}, confidence "
                         f"{study.user_attrs.get('confidence', 0.5)}); use another study name")
    done = len(study_trials(study))
    eff_seed = seed if not study.trials else int.from_bytes(hashlib.sha256(
        f"{seed}:{worker}:{len(study.trials)}".encode()).digest()[:4], "little")

    def constraints_func(t: Any) -> list[float]:
        return [float(t.user_attrs.get("violation", 1.0))]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)  # constraints_func: still supported
        # constant_liar off (Optuna 5's default is on): it would have each parameter read the
        # running trials from the database and write the sampled ones back; one worker samples
        # the same designs without it, and concurrent workers get their own seeds
        study.sampler = optuna.samplers.TPESampler(
            seed=eff_seed, multivariate=True, group=True, constraints_func=constraints_func,
            n_startup_trials=10, constant_liar=False)
    ev = Evaluator(cat, space, confidence=confidence,
                   checked={c.metric: c.bound for c, _ in active(cons)})
    single = len(objectives) == 1
    g = ev.grid
    knobs = study_knobs(cat, space, algorithm=not single)

    mine: list[int] = []  # the trials this call evaluated (n_new: those that completed)
    # each hardware choice's grid, once: the sampler draws the same choice again and again
    # (102 distinct in the main job's 300 trials); the result is a pure function of it, read only
    evaluated: dict[Any, Any] = {}

    def objective(trial: Any) -> Any:
        raise_if_stopped()  # a Ctrl-C or SIGTERM that a library's cleanup lost
        mark_worker(trial)
        if not within_budget(study, trial.number, trials):
            # other workers' trials have filled the study: this one is not evaluated, and
            # this worker stops (so that together they never finish more than `trials`)
            trial.set_user_attr("budget", f"the study already holds {trials} trials")
            study.stop()
            raise optuna.TrialPruned()
        mine.append(trial.number)
        values = sample(trial, knobs)
        parts = [placement(cat, r, opts, values) for r, opts in
                 zip(ROLES, (space.drafts, space.prms, space.targets), strict=True)]
        worst = tuple(math.inf * d for d in dirs)
        if any(p is None for p in parts):
            trial.set_user_attr("infeasible", "no such combination in the space")
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        arr = next(a for a in space.arrangements if a.name == values["arrangement"])
        hw = arrange(cat, space, arr, *parts)  # type: ignore[arg-type]
        if hw is None:
            trial.set_user_attr("infeasible", "draft and target do not share a tokenizer")
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        if measured_only and not measured_hardware([hw]):
            trial.set_user_attr("infeasible", "a device without a published measurement "
                                "(--measured-only)")
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        r = evaluated.get(hw)
        if r is None:
            r = evaluated[hw] = ev.evaluate(hw)
        if r.reasons:
            trial.set_user_attr("infeasible", "; ".join(r.reasons))
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        if single:
            val = r.metrics[OBJECTIVES[objectives[0]]] * dirs[0]
            ok = feasible_mask(r.for_constraints(), cons)
            if ok.any():
                flat = int(np.argmin(np.where(ok, val, np.inf)))
                viol = 0.0
            else:
                v = violation(r.for_constraints(), cons)
                flat = int(np.argmin(v))
                viol = float(v.ravel()[flat])
            f, ai, k = (int(x) for x in np.unravel_index(flat, g.shape))
        elif hw.draft is None:  # target-only: one design, at cell (0, 0, 0)
            f = ai = k = 0
            one = {m: v[:1, :1, :1] for m, v in r.for_constraints().items()}
            viol = max(0.0, float(violation(one, cons).ravel()[0]))
        else:
            f = g.flags.index((values["step_ahead"], values["shadow_sync"]))
            ai = int(np.flatnonzero(g.accept == values["accept_threshold"])[0])
            mb = values["max_backtracks"]
            if mb == 0:
                k = int(np.flatnonzero(g.max_backtracks == 0)[0])
            else:
                k = int(np.flatnonzero((g.max_backtracks == mb)
                                       & (g.backtrack == values["backtrack_threshold"])
                                       & (g.window == values["backtrack_window"]))[0])
            if not np.isfinite(r.metrics["latency_s_per_problem"][f, ai, k]):
                trial.set_user_attr("infeasible", "its roles share a device, so this "
                                    "schedule cannot run (dse.model.design.schedule_conflicts)")
                trial.set_user_attr("violation", 1.0)
                return worst
            one = {m: v[f:f + 1, ai:ai + 1, k:k + 1] for m, v in r.for_constraints().items()}
            viol = max(0.0, float(violation(one, cons).ravel()[0]))
        c = candidate(ev, hw, r.metrics, f, ai, k, name=f"{name}-trial-{trial.number}")
        vals = tuple(c.metrics[OBJECTIVES[o]] for o in objectives)
        if not all(math.isfinite(v) for v in vals):  # never hand Optuna a NaN (a failed trial)
            trial.set_user_attr("infeasible", "the model gives " + ", ".join(
                f"{o} = {v}" for o, v in zip(objectives, vals, strict=True)))
            trial.set_user_attr("violation", 1.0)
            return worst[0] if single else worst
        trial.set_user_attr("design_toml", c.toml)
        trial.set_user_attr("metrics", {m: v for m, v in c.metrics.items()
                                        if isinstance(v, float) and math.isfinite(v)})
        if viol > 0:  # which bounds it misses, for the summary when no trial is feasible
            trial.set_user_attr("missed", missed(
                {m: v[f, ai, k] for m, v in r.for_constraints().items()}, cons))
        trial.set_user_attr("violation", viol)  # last: constraints_func reads it
        return vals[0] if single else vals

    fail_orphans(study)
    remaining = max(trials - done, 0)
    # no MaxTrialsCallback (a database read per trial): a worker whose study other workers
    # filled stops at its next trial (within_budget)
    cbs: list[Callable[[Any, Any], None]] = []
    if callback is not None:
        cbs.append(lambda st, tr: callback(len(study_trials(st)), trials))
    if remaining > 0:
        try:
            study.optimize(objective, n_trials=remaining, timeout=timeout, callbacks=cbs,
                           show_progress_bar=progress, gc_after_trial=False)
        except DseError:
            raise
        except Exception as e:  # a trial the database could not record (a full disk)
            why = storage_failure(e) if storage is not None else None
            if why is None:
                raise
            raise DseError(f"storage {url}: a trial could not be recorded ({why}); the trials "
                           "recorded before it are kept, and the same command resumes the "
                           "study once the database can be written") from e
    # what is shown: the study's best trials (one objective: its TOP_K best distinct designs;
    # several: its non-dominated ones, at most FRONT_SHOWN) re-evaluated by the accurate closed
    # form and re-ranked (dse.search.shown)
    fail_orphans(study)
    short = study_shortlist(study, len(objectives))
    swept = (exhaustive_bests(cat, space, objectives, cons, confidence, measured_only)
             if families and reevaluate else {})
    if reevaluate:  # the exhaustive families' bests compete for #1 with the study's trials:
        # a short study must not name a winner that its own family table shows beaten
        short = short + [c for c in swept.values()
                         if not any(identity(c) == identity(s) for s in short)]
    best = shown(cat, space, objectives, short, cons, confidence) if reevaluate else short
    if len(objectives) == 1:
        best = best[:TOP_K]
    fams = (study_families(cat, space, objectives, cons, study, best[0], confidence,
                           measured_only, swept) if best and families else [])
    ran = set(mine)
    n_new = sum(t.number in ran for t in study_trials(study))
    return OptimizeResult(objectives, cons, name, url, len(study_trials(study)),
                          n_new, best, time.perf_counter() - t0,
                          confidence, fams, measured_only,
                          front_ties(cat, space.workloads, best,
                                     [OBJECTIVES[o] for o in objectives])
                          if reevaluate else [], study)


def exhaustive_bests(cat: Catalog, space: Space, objectives: Sequence[str],
                     cons: Mapping[str, float], confidence: float, measured_only: bool
                     ) -> dict[str, Candidate]:
    """The best feasible design of the target alone and of the width family by the first
    objective, exhaustively (one design per target placement; per policy, PRM, method and N:
    the sweeps of those arrangements), by the accurate closed form; a family without one is
    left out."""
    from dse.search.exhaustive import sweep
    from dse.search.objectives import Constraints

    bests: dict[str, Candidate] = {}
    width = tuple(a for a in space.arrangements if a.is_width)
    for fam, arrs in (("target-only", (TARGET_ONLY,) if TARGET_ONLY in space.arrangements
                       else ()), ("width", width)):
        if not arrs:
            continue
        sub = sweep(cat, replace(space, arrangements=arrs), list(objectives[:1]),
                    Constraints(**{k: v for k, v in cons.items()}), confidence=confidence,
                    measured_only=measured_only, families=False)
        if sub.best:
            bests[fam] = sub.best[0]
    return bests


def study_families(cat: Catalog, space: Space, objectives: Sequence[str],
                   cons: Mapping[str, float], study: Any, winner: Candidate,
                   confidence: float, measured_only: bool,
                   swept: Mapping[str, Candidate] | None = None) -> list[FamilyBest]:
    """Each family's best beside the study's winner: the target alone and the width family
    exhaustively (`exhaustive_bests`, or `swept`, what it gave already), each speculative
    family from the study's best feasible trial of it (none: the study did not reach it)."""
    from dse.search.exhaustive import with_nearest

    bests: dict[str, Candidate | None] = dict(
        exhaustive_bests(cat, space, objectives, cons, confidence, measured_only)
        if swept is None else swept)
    for fam, c in bests.items():
        if c is not None and identity(c) == identity(winner):
            bests[fam] = winner
    sign = 1 if study.directions[0].name == "MINIMIZE" else -1
    chosen: dict[str, tuple[float, Any]] = {}
    sampled: Counter[str] = Counter()
    trials = study_trials(study)
    for t in trials:
        if "design_toml" not in t.user_attrs:
            continue
        fam = trial_family(cat, trial_candidate(t))
        sampled[fam] += 1
        if t.user_attrs.get("violation", 1.0) > 0:
            continue
        v = sign * float(t.values[0])
        if fam not in ("target-only", "width") and v < chosen.get(fam, (math.inf, None))[0]:
            chosen[fam] = (v, t)
    for fam, (_, t) in chosen.items():
        c = accurate(cat, space, trial_candidate(t))
        if identity(c) == identity(winner):
            c = winner
        bests[fam] = c
    unreached = {fam: (f"none of the study's {sampled[fam]} trials of this family met the "
                       "constraints" if sampled[fam] else
                       f"the study's {len(trials)} trials sampled no design of this family")
                 + " (more --trials, or dse sweep, which checks the whole space)"
                 for fam in families_of(space)
                 if fam not in ("target-only", "width") and bests.get(fam) is None}
    return with_nearest(cat, space, family_bests(cat, space.workloads, winner, bests,
                                                 families_of(space), unreached),
                        cons, confidence, measured_only)


def study_shortlist(study: Any, n_objectives: int) -> list[Candidate]:
    """The study's designs a search shows before the accurate re-ranking: one objective, its
    TOP_K best feasible completed trials of distinct designs; several, its non-dominated
    feasible trials (at most FRONT_SHOWN, spread along the first objective)."""
    if n_objectives > 1:
        front = best_candidates(study)
        if len(front) <= FRONT_SHOWN:
            return front
        keep = np.unique(np.linspace(0, len(front) - 1, FRONT_SHOWN).astype(int))
        return [front[i] for i in keep]
    sign = 1 if study.directions[0].name == "MINIMIZE" else -1
    ok = [t for t in study_trials(study) if t.user_attrs.get("violation", 1.0) <= 0
          and "design_toml" in t.user_attrs]
    out: list[Candidate] = []
    seen: list[Any] = []  # identities (their values may be lists: not hashable)
    for t in sorted(ok, key=lambda t: sign * float(t.values[0])):
        c = trial_candidate(t)
        if identity(c) not in seen:
            seen.append(identity(c))
            out.append(c)
        if len(out) == TOP_K:
            break
    return out


def trial_family(cat: Catalog, c: Candidate) -> str:
    """The family of a stored design: target-only, or the draft device's kind."""
    from dse.devices.registry import kind_of

    s = c.design.system
    if s.is_width:
        return "width"
    if s.workflow_name == "target-only" or s.draft_device is None:
        return "target-only"
    return "gpu-speculative" if kind_of(cat, s.draft_device).name == "gpu" else \
        "fpga-speculative"


def infeasible_summary(study: Any, cons: Mapping[str, float], confidence: float) -> str:
    """Why none of a study's completed trials is feasible, as a clause naming each bound missed
    by its flag (e.g. "every trial was below --min-accuracy 100 (checked at the pessimistic end
    of each metric's interval, --confidence 0.9)"), and the trials whose design could not run;
    "" without completed trials."""
    from collections import Counter

    trials = study_trials(study)
    n = len(trials)
    missed_by: Counter[str] = Counter()
    cannot: Counter[str] = Counter()
    other = 0  # a trial recorded before the bounds it missed were
    for t in trials:
        if "infeasible" in t.user_attrs:
            cannot[str(t.user_attrs["infeasible"])] += 1
        elif t.user_attrs.get("missed"):
            missed_by.update(t.user_attrs["missed"])
        else:
            other += 1
    parts = []
    for c, bound in active(cons):
        k = missed_by.get(c.name, 0)
        if k:
            who = "every trial was" if k == n else f"{k} of {n} trials were"
            parts.append(f"{who} {'below' if c.bound == 'min' else 'above'} {c.flag} {bound:g}")
    if other:
        parts.append(f"{other} of {n} trials missed the constraints")
    if parts:
        parts[-1] += (" (checked at central values, --confidence 0.5)" if confidence <= 0.5 else
                      " (checked at the pessimistic end of each metric's interval, "
                      f"--confidence {confidence:g})")
    if cannot:
        k = sum(cannot.values())
        parts.append(f"{'every trial' if k == n else f'{k} of {n} trials'} could not run "
                     f"(e.g. {cannot.most_common(1)[0][0]})")
    return "; ".join(parts)
