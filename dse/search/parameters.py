"""The study's parameters, built from the space: one declared list of knobs, from which come both
the Optuna distributions (a test compares them to the space file) and each trial's sampling.

A knob is a study parameter when the space gives it more than one value and the knob it is
conditional on can take a value that draws it; a knob fixed by the space is never one.
Conditional groups: the draft's precision, serving profile (GPU) or engine (FPGA), and the
FPGA build knobs are drawn per device kind, only when the draft device is of that kind (their
choices differ between kinds); with several objectives the algorithm knobs are drawn too, the
backtrack threshold and window only when max_backtracks > 0. TPE (group=True) models each group
on the trials that drew it.

Parameter names and choice orders are part of the stored studies (resumed by later runs):
hardware choices are sorted, algorithm knobs keep the space file's order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dse.core.roles import DEVICE_ROLES
from dse.devices.registry import kind_of
from dse.search.space import Placement, Space, study_arrangements
from dse.specs import Catalog

ROLES: tuple[str, ...] = tuple(r.value for r in DEVICE_ROLES)  # the study's roles, in order


@dataclass(frozen=True)
class Knob:
    """One choice a trial makes: its parameter name, its values in the order the sampler sees
    them, and the condition for drawing it (knob name, the values of that knob that draw it;
    None: always drawn)."""

    name: str
    choices: tuple[Any, ...]
    when: tuple[str, frozenset[Any]] | None = None

    @property
    def is_parameter(self) -> bool:
        """Whether the study samples it (more than one value, and a condition that can hold)."""
        return len(self.choices) > 1 and (self.when is None or bool(self.when[1]))

    def drawn(self, values: Mapping[str, Any]) -> bool:
        return self.when is None or values[self.when[0]] in self.when[1]


def _sorted(values: Iterable[Any]) -> tuple[Any, ...]:
    """Distinct values in a stable order (None and numbers sort apart by type)."""
    return tuple(sorted(set(values), key=lambda v: (str(type(v)), v)))


def profile(o: Placement) -> str | None:
    """The option's serving profile (GPU) or engine (FPGA): one study parameter per kind."""
    return o.engine if o.engine is not None else o.serving


def placement_knobs(cat: Catalog, role: str, opts: Sequence[Placement]) -> list[Knob]:
    """One role's knobs: device, model, then precision and serving (per device kind for the
    draft, with the FPGA build knobs), and tensor parallelism for the PRM and the target."""
    out = [Knob(f"{role}_device", _sorted(o.device for o in opts)),
           Knob(f"{role}_model", _sorted(o.model for o in opts))]
    if role != "draft":
        return [*out, Knob(f"{role}_precision", _sorted(o.precision for o in opts)),
                Knob(f"{role}_serving", _sorted(o.serving for o in opts)),
                Knob(f"{role}_tp", _sorted(o.tp for o in opts))]
    pools: dict[str, list[Placement]] = {}
    for o in opts:
        pools.setdefault(kind_of(cat, o.device).name, []).append(o)
    for name, pool in pools.items():
        kind = kind_of(cat, pool[0].device)
        when = ("draft_device", frozenset(o.device for o in pool))
        out += [Knob(f"draft_{name}_precision", _sorted(o.precision for o in pool), when),
                Knob(f"draft_{name}_serving", _sorted(profile(o) for o in pool), when)]
        if kind.build_knobs:  # the space's build-knob columns (clock, channels, MAC lanes)
            out += [Knob("fpga_clock_MHz", _sorted(o.clock_mhz for o in pool), when),
                    Knob("fpga_memory_channels", _sorted(o.memory_channels for o in pool), when),
                    Knob("fpga_mac_lanes", _sorted(o.mac_lanes for o in pool), when)]
    return out


def algorithm_knobs(space: Space) -> list[Knob]:
    """The algorithm knobs and schedule flags, in the space file's order of values."""
    backtracking = ("max_backtracks", frozenset(m for m in space.max_backtracks if m > 0))
    return [Knob("accept_threshold", tuple(space.accept_thresholds)),
            Knob("max_backtracks", tuple(space.max_backtracks)),
            Knob("backtrack_threshold", tuple(space.backtrack_thresholds), backtracking),
            Knob("backtrack_window", tuple(space.backtrack_windows), backtracking),
            Knob("step_ahead", tuple(space.step_ahead)),
            Knob("shadow_sync", tuple(space.shadow_sync))]


def study_knobs(cat: Catalog, space: Space, *, algorithm: bool) -> tuple[Knob, ...]:
    """Every knob a trial sets, in drawing order: the three roles' placements, then (with
    algorithm=True, several objectives) the algorithm knobs. A name declared twice raises."""
    knobs = [Knob("arrangement", tuple(a.name for a in study_arrangements(space)))]
    knobs += [k for role, opts in zip(ROLES, (space.drafts, space.prms, space.targets),
                                      strict=True)
              for k in placement_knobs(cat, role, opts)]
    if algorithm:
        knobs += algorithm_knobs(space)
    names = [k.name for k in knobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"study knobs declared twice: {', '.join(dup)}")
    return tuple(knobs)


def study_distributions(cat: Catalog, space: Space, *, algorithm: bool) -> dict[str, Any]:
    """The study's parameters: name -> optuna.distributions.CategoricalDistribution."""
    from optuna.distributions import CategoricalDistribution

    return {k.name: CategoricalDistribution(k.choices)
            for k in study_knobs(cat, space, algorithm=algorithm) if k.is_parameter}


def sample(trial: Any, knobs: Sequence[Knob]) -> dict[str, Any]:
    """One trial's value of every knob it draws (a fixed knob takes its one value unasked)."""
    values: dict[str, Any] = {}
    for k in knobs:
        if not k.drawn(values):
            continue
        values[k.name] = (trial.suggest_categorical(k.name, list(k.choices)) if k.is_parameter
                          else k.choices[0])
    return values


def placement(cat: Catalog, role: str, opts: Sequence[Placement], values: Mapping[str, Any]
              ) -> Placement | None:
    """The role's option the trial's values pick; None when the space has no such combination
    (e.g. a precision of one device kind with a model it does not list)."""
    dev, model = values[f"{role}_device"], values[f"{role}_model"]
    sub = [o for o in opts if o.device == dev and o.model == model]
    if role == "draft":
        kind = kind_of(cat, dev)
        prec, serv = values[f"draft_{kind.name}_precision"], values[f"draft_{kind.name}_serving"]
        if kind.build_knobs:
            build = (values["fpga_clock_MHz"], values["fpga_memory_channels"],
                     values["fpga_mac_lanes"])
            sub = [o for o in sub if (o.clock_mhz, o.memory_channels, o.mac_lanes) == build]
    else:
        prec, serv = values[f"{role}_precision"], values[f"{role}_serving"]
        sub = [o for o in sub if o.tp == values[f"{role}_tp"]]
    sub = [o for o in sub if o.precision == prec and profile(o) == serv]
    return sub[0] if sub else None
