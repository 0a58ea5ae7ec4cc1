"""The search's vocabulary, each declared once as a table: the metrics the grid computes per
design, the objectives a search ranks by and the constraints it filters by.

A new objective on an existing metric is one row of `OBJECTIVE_TABLE`; a new constraint is
one row of `CONSTRAINT_TABLE` (the space file's `[constraints]` key, the `Constraints`
keyword, the feasibility mask and Optuna's violation all follow from the row). A new metric is
a row of `METRIC_TABLE` plus its formula in `dse.search.grid.Evaluator.evaluate`.

A module of its own, free of numpy and the engine, so that building the command-line parser
(`--objective` choices, the constraint flags with their help text) and validating a request
import nothing heavy. `Constraint.met` and `Constraint.excess` use only arithmetic operators,
so they work on floats and on numpy arrays alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from dse.errors import UnknownNameError, UsageError

if TYPE_CHECKING:
    from dse.search.space import Space


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_R = TypeVar("_R", bound=_Named)


def _table(kind: str, rows: Sequence[_R]) -> dict[str, _R]:
    """Rows by name; a duplicate name raises."""
    out: dict[str, _R] = {}
    for r in rows:
        if r.name in out:
            raise ValueError(f"{kind} {r.name!r} declared twice")
        out[r.name] = r
    return out


@dataclass(frozen=True)
class Metric:
    """One per-design quantity of the mean-value model (an array [F, A, K] per hardware)."""

    name: str
    unit: str
    direction: int  # +1: lower is better, -1: higher is better
    help: str


METRIC_TABLE: dict[str, Metric] = _table("metric", (
    Metric("latency_s_per_problem", "s", 1, "mean latency of one problem"),
    Metric("energy_j_per_problem", "J", 1, "mean system energy of one problem, idle included"),
    Metric("tokens_per_problem", "tokens", -1, "committed tokens of one problem"),
    Metric("j_per_token", "J/token", 1, "system energy per committed token"),
    Metric("goodput_tokens_per_s", "tokens/s", -1, "committed tokens per second"),
    Metric("accuracy", "%", -1, "expected share of problems solved, percent"),
    Metric("power_w", "W", 1, "average system power"),
    Metric("cost_usd_per_mtok", "$/Mtoken", 1, "board list prices amortised over the space's "
           "lifetime plus energy at its $/kWh, per million committed tokens"),
))
METRICS = METRIC_TABLE  # metric name -> Metric (unit, direction, help)


@dataclass(frozen=True)
class Objective:
    """A name a user may pass to --objective and the metric it ranks by."""

    name: str
    metric: str  # a METRIC_TABLE name
    help: str

    @property
    def direction(self) -> int:
        """+1 minimise, -1 maximise (the metric's)."""
        return METRIC_TABLE[self.metric].direction

    @property
    def unit(self) -> str:
        return METRIC_TABLE[self.metric].unit


OBJECTIVE_TABLE: dict[str, Objective] = _table("objective", (
    Objective("j_per_token", "j_per_token", "energy per token, J (minimised)"),
    Objective("latency", "latency_s_per_problem", "latency per problem, s (minimised)"),
    Objective("goodput", "goodput_tokens_per_s", "goodput, tokens/s (maximised)"),
    Objective("accuracy", "accuracy", "accuracy, percent (maximised)"),
    Objective("cost", "cost_usd_per_mtok", "cost, $ per million tokens (minimised)"),
))
OBJECTIVES: dict[str, str] = {o.name: o.metric for o in OBJECTIVE_TABLE.values()}


@dataclass(frozen=True)
class Constraint:
    """A bound on one metric: `min` keeps designs with metric >= bound, `max` those with
    metric <= bound. The name is the space file's `[constraints]` key, the `Constraints`
    keyword and the Python API's keyword; `flag`, `metavar` and `help` are the command line's.
    The bound's valid range is [lo, hi] (lo excluded when lo_open)."""

    name: str
    metric: str  # a METRIC_TABLE name
    bound: Literal["min", "max"]
    lo: float
    hi: float
    flag: str
    metavar: str
    help: str
    lo_open: bool = False
    slack: float = 0.0  # tolerance of met(): a bound equal to the metric up to rounding is met

    @property
    def unit(self) -> str:
        return METRIC_TABLE[self.metric].unit

    def met(self, value: Any, bound: float) -> Any:
        """Whether the metric value(s) meet the bound (bool, or a bool array)."""
        if self.bound == "min":
            return value >= bound - self.slack
        return value <= bound + self.slack

    def excess(self, value: Any, bound: float) -> Any:
        """How far the value(s) are past the bound, relative (<= 0 when met): a shortfall
        below a min bound over max(bound, 1) (a bound of 0 stays finite), a max bound's
        overshoot as value / bound - 1."""
        if self.bound == "min":
            return (bound - value) / max(bound, 1.0)
        return value / bound - 1

    def check(self, value: Any) -> float:
        """A bound given through the API, as a float; a non-number or one out of range is a
        UsageError naming the constraint."""
        ok = (not isinstance(value, bool) and isinstance(value, int | float)
              and math.isfinite(value) and self.lo <= value <= self.hi
              and not (self.lo_open and value <= self.lo))
        if not ok:
            raise UsageError(f"{self.name}: expected a finite number {self.range_text}, got "
                             f"{value!r}")
        return float(value)

    @property
    def range_text(self) -> str:
        """The bound's valid range in words, e.g. ">= 0 and <= 100", "> 0"."""
        low = f"> {self.lo:g}" if self.lo_open else f">= {self.lo:g}"
        return low + (f" and <= {self.hi:g}" if math.isfinite(self.hi) else "")


CONSTRAINT_TABLE: dict[str, Constraint] = _table("constraint", (
    Constraint("min_accuracy", "accuracy", "min", 0.0, 100.0, "--min-accuracy", "PCT",
               "minimum accuracy, percent (default: the space's)", slack=1e-9),
    Constraint("max_latency_s", "latency_s_per_problem", "max", 0.0, math.inf,
               "--max-latency", "S", "maximum latency per problem, seconds", lo_open=True),
    Constraint("max_power_w", "power_w", "max", 0.0, math.inf, "--max-power-w", "W",
               "maximum average system power, watts", lo_open=True),
))


def _check_tables() -> None:
    rows: list[Objective | Constraint] = [*OBJECTIVE_TABLE.values(), *CONSTRAINT_TABLE.values()]
    for row in rows:
        if row.metric not in METRIC_TABLE:
            raise ValueError(f"{row.name}: unknown metric {row.metric!r}")


_check_tables()


@dataclass(frozen=True, init=False)
class Constraints:
    """The bounds a search is asked for, by constraint name (CONSTRAINT_TABLE); a bound left
    out or None is the space's default. Positional arguments follow the table's order
    (min_accuracy, max_latency_s, max_power_w); new code names them."""

    bounds: tuple[tuple[str, float], ...]  # (name, bound) in table order, given ones only

    def __init__(self, *positional: float | None, **named: float | None) -> None:
        names = list(CONSTRAINT_TABLE)
        if len(positional) > len(names):
            raise UsageError(f"Constraints: at most {len(names)} positional bounds "
                             f"({', '.join(names)})")
        given = dict(zip(names, positional, strict=False))
        for k, v in named.items():
            if k not in CONSTRAINT_TABLE:
                raise UnknownNameError("constraint", k, names)
            if k in given:
                raise UsageError(f"Constraints: {k} given twice")
            given[k] = v
        object.__setattr__(self, "bounds", tuple(
            (k, CONSTRAINT_TABLE[k].check(given[k])) for k in names if given.get(k) is not None))

    def __getattr__(self, name: str) -> float | None:
        """A constraint's bound by name (None when not given)."""
        if name in CONSTRAINT_TABLE:
            return dict(self.bounds).get(name)
        raise AttributeError(f"'Constraints' object has no attribute {name!r}")

    def merged(self, space: Space) -> dict[str, float]:
        """The space's default constraints, overridden by these."""
        out = dict(space.constraints)
        out.update(self.bounds)
        return out


NO_CONSTRAINTS = Constraints()  # the space's defaults only


# Constraints are checked at the pessimistic end of the metric's 90% interval by default.
DEFAULT_CONFIDENCE = 0.9


def check_confidence(confidence: Any, name: str = "confidence") -> float:
    """A confidence in [0.5, 1): 0.5 checks constraints at central values, 0.9 at the end of
    the 90% interval (dse.search.grid.pessimism)."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not (
            0.5 <= confidence < 1):
        raise UsageError(f"{name}: must be a number in [0.5, 1), got {confidence!r}")
    return float(confidence)


def active(constraints: Mapping[str, float]) -> list[tuple[Constraint, float]]:
    """The (row, bound) of each constraint given, in table order."""
    return [(c, float(constraints[c.name])) for c in CONSTRAINT_TABLE.values()
            if c.name in constraints]


def direction(objective: str) -> int:
    """+1 minimise, -1 maximise."""
    return OBJECTIVE_TABLE[objective].direction


def check_objectives(objectives: Sequence[str]) -> list[str]:
    """The objectives, in order, once each; an unknown name lists the valid ones."""
    if not objectives:
        raise UsageError("objectives: give at least one")
    for o in objectives:
        if o not in OBJECTIVES:
            raise UnknownNameError("objective", o, list(OBJECTIVES))
    if len(set(objectives)) != len(objectives):
        raise UsageError("objectives: each objective once")
    return list(objectives)
