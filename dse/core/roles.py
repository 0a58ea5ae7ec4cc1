"""The roles of step-level speculative reasoning, declared once.

A step is written by the DRAFT, scored by the VERIFIER and, when rejected, rewritten by the
TARGET; LINK is the interconnect between them, a role only in latency breakdowns (the
critical path) and timelines, not a device. The string values are the report keys every JSON
report, golden file and dashboard uses ("draft", "prm", "target", "link"): the verifier is a
process reward model (PRM) today, and its key stays "prm" so that no file changes meaning.

Per-role field names of an attempt and of a report are built here too (`crit_field`,
`busy_field`, `dyn_field`), so that a new role or a renamed one is one edit.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """A role; its value is its report key (`Role.VERIFIER == "prm"`)."""

    DRAFT = "draft"
    VERIFIER = "prm"
    TARGET = "target"
    LINK = "link"


DEVICE_ROLES: tuple[Role, ...] = (Role.DRAFT, Role.VERIFIER, Role.TARGET)
"""Roles that run on a device (placements of a Design, busy/idle/energy in reports)."""

PATH_ROLES: tuple[Role, ...] = (*DEVICE_ROLES, Role.LINK)
"""Roles a critical path is split by (latency breakdown, step latency share)."""


def crit_field(role: Role) -> str:
    """The attempt field of a role's critical-path seconds, e.g. "crit_prm_s"."""
    return f"crit_{role.value}_s"


def busy_field(role: Role) -> str:
    """The attempt field of a device role's busy seconds, e.g. "prm_busy_s"."""
    return f"{role.value}_busy_s"


def dyn_field(role: Role) -> str:
    """The attempt field of a device role's energy above idle (joules), e.g. "prm_dyn_j"."""
    return f"{role.value}_dyn_j"
