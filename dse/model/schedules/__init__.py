"""Roles and schedules: who does what in an attempt at a reasoning step, and when.

- `roles`: the Role enumeration (draft, verifier, target, link) and per-role field names;
- `registry`: Schedule, FLAGS, the registry of named schedules (PRESETS) and `schedule()`;
- `costs`: what each operation costs at its inputs (`Costs`, `step_costs`);
- `rules`: each timing rule written once, generic over max / min (numpy and sympy);
- `compose`: the numpy composition of one attempt (`compose`, `attempt`) that the closed form
  and the simulator share; dse.model.symbolic builds the mean-value form from the same rules;
- `fields`: the attempt and report field lists derived from the roles.
"""

from dse.core.roles import DEVICE_ROLES, PATH_ROLES, Role
from dse.model.schedules.compose import Attempt, attempt, compose
from dse.model.schedules.costs import VERDICT_BYTES, Costs, StepCosts, step_costs
from dse.model.schedules.registry import (
    FLAGS,
    PRESETS,
    Schedule,
    ScheduleRegistry,
    all_schedules,
    schedule,
    schedule_for,
)
from dse.model.schedules.rules import ACCEPT, BACKTRACK, OUTCOMES, REFINE

__all__ = [
    "ACCEPT", "BACKTRACK", "DEVICE_ROLES", "FLAGS", "OUTCOMES", "PATH_ROLES", "PRESETS", "REFINE",
    "VERDICT_BYTES", "Attempt", "Costs", "Role", "Schedule", "ScheduleRegistry", "StepCosts",
    "all_schedules", "attempt", "compose", "schedule", "schedule_for", "step_costs",
]
