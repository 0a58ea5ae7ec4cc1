"""Search objectives: each name a user may pass to --objective and the report metric it ranks.

A module of its own, free of numpy and the engine, so that building the command-line parser
(`--objective` choices) and validating a request import nothing heavy; dse.search imports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dse.errors import UnknownNameError, UsageError

OBJECTIVES: dict[str, str] = {  # objective name -> metric
    "j_per_token": "j_per_token",
    "latency": "latency_s_per_problem",
    "goodput": "goodput_tokens_per_s",
    "accuracy": "accuracy",
    "cost": "cost_usd_per_mtok",
}


def check_objectives(objectives: Sequence[str]) -> list[str]:
    """The objectives, in order, once each; an unknown name lists the valid ones."""
    if not objectives:
        raise UsageError("--objective: give at least one")
    for o in objectives:
        if o not in OBJECTIVES:
            raise UnknownNameError("objective", o, list(OBJECTIVES))
    if len(set(objectives)) != len(objectives):
        raise UsageError("--objective: each objective once")
    return list(objectives)
