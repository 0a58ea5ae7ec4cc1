"""Schedules: which of the paper's techniques run, and the registry of named ones.

A schedule is three flags (FLAGS): backtracking (BRSD), step_ahead (T2: step-ahead
speculation and target prefetch) and shadow_sync (T1: the draft ingests the target's tokens as
they stream). The timing rules are written once over the flags (dse.model.schedules.rules), so every
one of the 2^3 combinations is a schedule; the registry names the ones the paper compares
(PRESETS) and calls any other combination `custom(...)`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import product
from typing import Literal

from dse.errors import UnknownNameError

Flag = Literal["backtracking", "step_ahead", "shadow_sync"]
FLAGS: tuple[Flag, ...] = ("backtracking", "step_ahead", "shadow_sync")


@dataclass(frozen=True)
class Schedule:
    """Which of the paper's techniques run. Presets: rsd, brsd, brsd_stepahead, heteroreason."""

    name: str
    backtracking: bool
    step_ahead: bool  # T2: step-ahead speculation and target prefetch
    shadow_sync: bool  # T1: the draft ingests target tokens as they stream

    @property
    def flags(self) -> tuple[bool, bool, bool]:
        """The flags in FLAGS order."""
        return (self.backtracking, self.step_ahead, self.shadow_sync)

    def with_flags(self, **flags: bool) -> Schedule:
        """This schedule with some flags changed, named after the preset it then equals (else
        `custom(<flags on>)`)."""
        unknown = sorted(set(flags) - set(FLAGS))
        if unknown:
            raise UnknownNameError("schedule flag", unknown[0], FLAGS)
        values: dict[str, bool] = dict(zip(FLAGS, self.flags, strict=True))
        return schedule_for(**{**values, **flags})


class ScheduleRegistry(Mapping[str, Schedule]):
    """Named schedules, in registration order. A duplicate name or flag combination raises
    ValueError; an unknown name raises UnknownNameError listing the valid ones."""

    def __init__(self) -> None:
        self._by_name: dict[str, Schedule] = {}

    def register(self, s: Schedule) -> Schedule:
        if s.name in self._by_name:
            raise ValueError(f"schedule {s.name!r} is already registered")
        same = next((p for p in self._by_name.values() if p.flags == s.flags), None)
        if same is not None:
            raise ValueError(f"schedule {s.name!r} has the flags of {same.name!r}")
        if s.name.startswith("custom("):
            raise ValueError(f"schedule names starting with 'custom(' are reserved: {s.name!r}")
        self._by_name[s.name] = s
        return s

    def __getitem__(self, name: str) -> Schedule:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownNameError("schedule", name, list(self._by_name)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str, default: Schedule | None = None) -> Schedule | None:  # type: ignore[override]
        return self._by_name.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def by_flags(self, flags: tuple[bool, bool, bool]) -> Schedule | None:
        """The registered schedule with these flags (FLAGS order), or None."""
        return next((p for p in self._by_name.values() if p.flags == flags), None)


PRESETS = ScheduleRegistry()
PRESETS.register(Schedule("rsd", backtracking=False, step_ahead=False, shadow_sync=False))
PRESETS.register(Schedule("brsd", backtracking=True, step_ahead=False, shadow_sync=False))
PRESETS.register(Schedule("brsd_stepahead", backtracking=True, step_ahead=True,
                          shadow_sync=False))
PRESETS.register(Schedule("heteroreason", backtracking=True, step_ahead=True, shadow_sync=True))


def schedule(name: str) -> Schedule:
    """A registered schedule by name (UnknownNameError lists the valid ones)."""
    return PRESETS[name]


def schedule_for(*, backtracking: bool, step_ahead: bool, shadow_sync: bool) -> Schedule:
    """The schedule of a flag combination: the preset with these flags, else
    `custom(<flags on>)` (e.g. `custom(step_ahead)`)."""
    flags = (bool(backtracking), bool(step_ahead), bool(shadow_sync))
    preset = PRESETS.by_flags(flags)
    if preset is not None:
        return preset
    on = [f for f, v in zip(FLAGS, flags, strict=True) if v]
    return Schedule("custom(" + ",".join(on) + ")", *flags)


def all_schedules() -> tuple[Schedule, ...]:
    """Every flag combination (2^3) as a schedule, presets named."""
    return tuple(schedule_for(**dict(zip(FLAGS, v, strict=True)))
                 for v in product((False, True), repeat=len(FLAGS)))
