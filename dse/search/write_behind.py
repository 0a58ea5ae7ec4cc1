"""Write-behind trial storage for `dse optimize` on an RDB (SQLite, PostgreSQL) study.

Optuna's RDB storage opens a transaction for each parameter and attribute a trial writes and
re-reads the study's unfinished trials for each sampler call: at the main job's 300 trials on
SQLite that was three quarters of the command's time (docs/benchmarks.md). `WriteBehind` keeps
what this process writes to its own running trial and writes it in one transaction just
before the trial's finishing state, and re-reads the study once per trial (at the ask and after
each finish) rather than at every read. What another process sees is unchanged where it matters:
- a finished trial has all its parameters and attributes (written before its state);
- the attributes other workers read while a trial runs (storage.THROUGH: the worker mark) are
  written at once: the mark with the trial itself, in the transaction that creates it;
- no sampler reads a running trial's parameters (the TPE sampler runs without the constant liar).
A killed process leaves its running trial RUNNING with fewer rows than before; the next run fails
it as before (storage.fail_orphans). One process's study is the same, trial for trial, as on the
plain storage (tests/test_search.py).

It extends Optuna's own cache (`_CachedStorage`, which `optuna.create_study` puts around an RDB
storage) and uses private parts of it and of the RDB storage (`_PRIVATE`, its table models and
session helper); `usable()` says whether this Optuna has them, and storage.write_behind falls
back to the plain storage where it does not."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from typing import Any

import optuna
import sqlalchemy
import sqlalchemy.exc
from optuna.distributions import BaseDistribution, check_distribution_compatibility
from optuna.storages import _CachedStorage
from optuna.trial import FrozenTrial, TrialState

try:  # private: where this Optuna keeps them (checked by usable())
    from optuna.storages._cached_storage import _StudyInfo
    from optuna.storages._rdb import models as _models
    from optuna.storages._rdb.storage import _create_scoped_session
except ImportError:  # pragma: no cover - an Optuna without them: storage.write_behind falls back
    _models = None  # type: ignore[assignment]

_PRIVATE = (
    (_CachedStorage, "_read_trials_from_remote_storage"), (_CachedStorage, "_add_trials_to_cache"),
    (optuna.storages.RDBStorage, "_create_new_trial"),
    (optuna.storages.RDBStorage, "check_trial_is_updatable"),
    (optuna.storages.RDBStorage, "_set_trial_attr_without_commit"))


def usable() -> bool:
    """Whether this Optuna has the private parts WriteBehind relies on."""
    return _models is not None and all(hasattr(c, m) for c, m in _PRIVATE)


def _copy(t: FrozenTrial) -> FrozenTrial:
    """A copy of a running trial whose dicts a caller may change (Optuna's Trial adds to its
    params and attrs); their values are numbers, distributions and JSON, never changed in place
    (a deep copy cost 2 ms a read)."""
    return FrozenTrial(
        number=t.number, state=t.state, value=None, values=t.values,
        datetime_start=t.datetime_start, datetime_complete=t.datetime_complete,
        params=dict(t.params), distributions=dict(t.distributions),
        user_attrs=dict(t.user_attrs), system_attrs=dict(t.system_attrs),
        intermediate_values=dict(t.intermediate_values), trial_id=t._trial_id)


class WriteBehind(_CachedStorage):
    """Optuna's cached RDB storage, with this process's running trials written at their finish
    and the study re-read once per trial. through: attribute keys written at once."""

    def __init__(self, backend: optuna.storages.RDBStorage, through: Iterable[str] = (),
                 mark: dict[str, Any] | None = None) -> None:
        super().__init__(backend)
        self._mark = dict(mark or {})  # user attributes each new trial is created with
        self._through = frozenset(through) | set(self._mark)
        self._own: dict[int, FrozenTrial] = {}  # trial id -> this process's running trial
        # trial id -> what is not written yet: parameters in order, attributes by key
        self._params: dict[int, list[tuple[str, float, BaseDistribution]]] = {}
        self._attrs: dict[int, dict[tuple[str, str], Any]] = {}
        self._written: dict[int, set[tuple[str, str]]] = {}  # attributes a flush wrote
        self._done: dict[int, FrozenTrial] = {}  # the trial this process finished last
        self._fresh: set[int] = set()  # studies read since this process last finished a trial

    # ---------------------------------------------------------------- reading the study
    def stale(self, study_id: int) -> None:
        """Make the next read of the study go to the database (for a reader that must see what
        other processes did since: the budget check, the orphan check)."""
        with self._lock:
            self._fresh.discard(study_id)

    def _read_trials_from_remote_storage(self, study_id: int) -> None:
        with self._lock:
            if study_id in self._fresh:
                return
        super()._read_trials_from_remote_storage(study_id)
        with self._lock:
            self._fresh.add(study_id)

    def _add_trials_to_cache(self, study_id: int, trials: list[FrozenTrial]) -> None:
        # the database's copy of a running trial of this process lacks what is not written yet
        super()._add_trials_to_cache(study_id, [
            self._own[t._trial_id] if t._trial_id in self._own and not t.state.is_finished()
            else t for t in trials])

    def get_trial(self, trial_id: int) -> FrozenTrial:
        with self._lock:
            own = self._own.get(trial_id)
            own = own or self._done.get(trial_id)
            if own is not None:
                return _copy(own)
        return super().get_trial(trial_id)

    # ---------------------------------------------------------------- writing a trial
    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        if template_trial is None and self._mark:  # created and marked in one transaction
            template_trial = FrozenTrial(
                number=-1, state=TrialState.RUNNING, value=None,
                datetime_start=datetime.datetime.now(), datetime_complete=None, params={},
                distributions={}, user_attrs=dict(self._mark), system_attrs={},
                intermediate_values={}, trial_id=-1)
        frozen = self._backend._create_new_trial(study_id, template_trial)
        tid = frozen._trial_id
        with self._lock:
            if frozen.state == TrialState.RUNNING:
                self._own[tid] = frozen
                self._params[tid] = []
                self._attrs[tid] = {}
            if study_id not in self._studies:
                self._studies[study_id] = _StudyInfo()
            self._add_trials_to_cache(study_id, [frozen])
        return tid

    def set_trial_param(self, trial_id: int, param_name: str, param_value_internal: float,
                        distribution: BaseDistribution) -> None:
        with self._lock:
            own = self._own.get(trial_id)
            study_id, _ = self._trial_id_to_study_id_and_number[trial_id]
            known = self._studies[study_id].param_distribution.get(param_name)
        if own is None or known is None:
            # a parameter new to this process is checked against the study's (the database);
            # what is pending goes first, so that the parameters keep their order
            self._flush(trial_id)
            super().set_trial_param(trial_id, param_name, param_value_internal, distribution)
        else:
            check_distribution_compatibility(known, distribution)
            with self._lock:
                self._params[trial_id].append((param_name, param_value_internal, distribution))
        if own is not None:
            with self._lock:
                own.params[param_name] = distribution.to_external_repr(param_value_internal)
                own.distributions[param_name] = distribution

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._set_attr("user", trial_id, key, value)

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._set_attr("system", trial_id, key, value)

    def _set_attr(self, kind: str, trial_id: int, key: str, value: Any) -> None:
        with self._lock:
            own = self._own.get(trial_id)
        stored = json.loads(json.dumps(value))  # as a read would return it; unserialisable: now
        if own is None or key in self._through:
            write = (self._backend.set_trial_user_attr if kind == "user"
                     else self._backend.set_trial_system_attr)
            write(trial_id, key, value)
        else:
            with self._lock:
                self._attrs[trial_id][(kind, key)] = value
        if own is not None:
            with self._lock:
                (own.user_attrs if kind == "user" else own.system_attrs)[key] = stored

    def set_trial_intermediate_value(self, trial_id: int, step: int,
                                     intermediate_value: float) -> None:
        self._flush(trial_id)
        super().set_trial_intermediate_value(trial_id, step, intermediate_value)

    def set_trial_state_values(self, trial_id: int, state: TrialState,
                               values: Any = None) -> bool:
        with self._lock:
            own = trial_id in self._own
        try:
            if own and state.is_finished():  # its rows, values and state in one transaction
                return self._flush(trial_id, state, values)
            self._flush(trial_id)
            return super().set_trial_state_values(trial_id, state=state, values=values)
        finally:
            with self._lock:
                if state.is_finished():
                    self._own.pop(trial_id, None)
                    self._params.pop(trial_id, None)
                    self._attrs.pop(trial_id, None)
                    self._written.pop(trial_id, None)
                if trial_id in self._trial_id_to_study_id_and_number:
                    self._fresh.discard(self._trial_id_to_study_id_and_number[trial_id][0])

    def _flush(self, trial_id: int, state: TrialState | None = None,
               values: Any = None) -> bool:
        """Write what is pending for `trial_id` in one transaction (new rows in one batch; an
        attribute an earlier flush wrote, updated in place), and with `state` (a finished one, of
        a trial this process created: no values yet) its values and state, as Optuna's
        RDBStorage.set_trial_state_values does."""
        with self._lock:
            params = self._params.get(trial_id) or []
            attrs = self._attrs.get(trial_id) or {}
            if not params and not attrs and state is None:
                return True
            self._params[trial_id], self._attrs[trial_id] = [], {}
            written = self._written.setdefault(trial_id, set())
        b, m = self._backend, _models
        try:
            with _create_scoped_session(b.scoped_session) as session:
                trial = m.TrialModel.find_or_raise_by_id(trial_id, session,
                                                         for_update=state is not None)
                b.check_trial_is_updatable(trial_id, trial.state)
                # new rows: one statement per table (the ORM would send one per row)
                rows: dict[Any, list[dict[str, Any]]] = {m.TrialParamModel: [dict(
                    trial_id=trial_id, param_name=name, param_value=value,
                    distribution_json=optuna.distributions.distribution_to_json(dist))
                    for name, value, dist in params]}
                for (kind, key), value in attrs.items():
                    model = (m.TrialUserAttributeModel if kind == "user"
                             else m.TrialSystemAttributeModel)
                    if (kind, key) in written:
                        b._set_trial_attr_without_commit(session, model, trial_id, key, value)
                    else:
                        rows.setdefault(model, []).append(
                            dict(trial_id=trial_id, key=key, value_json=json.dumps(value)))
                if state is not None:  # a trial this process created has no values yet
                    for objective, v in enumerate(values or ()):
                        stored, vtype = m.TrialValueModel.value_to_stored_repr(v)
                        rows.setdefault(m.TrialValueModel, []).append(dict(
                            trial_id=trial_id, objective=objective, value=stored,
                            value_type=vtype))
                for model, new in rows.items():
                    if new:
                        session.execute(sqlalchemy.insert(model), new)
                if state is not None:
                    trial.state = state
                    trial.datetime_complete = now = datetime.datetime.now()
        except sqlalchemy.exc.IntegrityError:
            return False
        with self._lock:
            written.update(attrs)
            own = self._own.get(trial_id)
            if state is not None and own is not None:  # as a read of it would return it
                done = _copy(own)
                done.state, done.datetime_complete = state, now
                done.values = [float(v) for v in values] if values else None
                self._done = {trial_id: done}
        return True
