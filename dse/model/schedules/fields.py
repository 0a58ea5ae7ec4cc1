"""Field lists of an attempt, derived from the roles (dse.core.roles) in one place.

The closed form takes expectations of SUMMED_FIELDS, the simulator adds up REPLAY_FIELDS per
problem; both come from the same per-role names, so a new role or field is one edit here.
"""

from __future__ import annotations

from dse.core.roles import DEVICE_ROLES, PATH_ROLES, Role, busy_field, crit_field, dyn_field

CRIT_FIELDS: tuple[str, ...] = tuple(crit_field(r) for r in PATH_ROLES)
BUSY_FIELDS: tuple[str, ...] = tuple(busy_field(r) for r in DEVICE_ROLES)
DYN_FIELDS: tuple[str, ...] = tuple(dyn_field(r) for r in DEVICE_ROLES)
_WASTE_FIELDS = ("stall_s", "stalled", "wasted_s", "wasted_tokens", "wasted_j", "target_called")

REPLAY_FIELDS: tuple[str, ...] = (*CRIT_FIELDS, *BUSY_FIELDS, *DYN_FIELDS, *_WASTE_FIELDS)
"""Attempt fields a replay sums per problem (the attempt's time advances its clock)."""

SUMMED_FIELDS: tuple[str, ...] = ("time_s", *REPLAY_FIELDS, "next_ahead_s")
"""Attempt fields the closed form takes expectations of (the head start for the next one)."""

TIMELINE_DEVICES: tuple[Role, ...] = (Role.DRAFT, Role.LINK, Role.VERIFIER, Role.TARGET)
"""Rows of a simulated timeline, top to bottom."""
