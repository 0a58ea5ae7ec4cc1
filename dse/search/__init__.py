"""Search over a design space: the exhaustive vectorised sweep and the Optuna optimiser.

Both screen and rank designs with the mean-value model (grid.py over dse.model.symbolic: within ~15%
of the accurate closed form, and exactly consistent between sweep and optimize); every design
they show (the best, the front, each family's best) is re-evaluated by the accurate closed form
with its 90% intervals and re-ranked by it (shown.py); the mean-value figures stay in
`metrics["mean_value_diagnostic"]`.

Modules, along the flow:
    objectives.py  metrics, objectives and constraints, one declared table each (no numpy)
    space.py       the space file (strict loader), Placement options, hardware enumeration
    grid.py        the vectorised evaluator of one hardware choice over its knob grid, and
                   the Candidate of one grid point
    candidates.py  Candidate: a reported design, its metrics and design-file text (light)
    pareto.py      exact Pareto fronts
    families.py    each family's best against the winner, margins with joint intervals
    shown.py       what a search shows: re-evaluated by the accurate closed form, re-ranked
    exhaustive.py  sweep: every design of the grid
    parameters.py  the study's parameters (Optuna distributions) built from the space
    optuna_study.py  optimize: the Optuna adapter (study, objective, constraints)
    storage.py     study storage: open, list, load studies and their best designs
    files.py       the files `--out DIR` writes (best.toml, pareto.csv/html, trials.csv)

Names load on first use: `from dse.search.objectives import ...` (the CLI's parser) imports
neither numpy nor the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dse.core.lazy import lazy_names

# public name -> module that defines it (imported on first access)
_LAZY = {
    **dict.fromkeys(("METRICS", "METRIC_TABLE", "OBJECTIVES", "OBJECTIVE_TABLE",
                     "CONSTRAINT_TABLE", "Constraint", "Constraints", "Metric", "Objective",
                     "check_objectives", "direction"), "dse.search.objectives"),
    **dict.fromkeys(("Space", "Placement", "Hardware", "load_space", "hardware", "n_designs"),
                    "dse.search.space"),
    **dict.fromkeys(("Evaluator", "candidate", "feasible_mask", "violation", "system_for"),
                    "dse.search.grid"),
    **dict.fromkeys(("Candidate", "closed_form_metrics"), "dse.search.candidates"),
    "pareto_mask": "dse.search.pareto",
    **dict.fromkeys(("sweep", "SweepResult"), "dse.search.exhaustive"),
    **dict.fromkeys(("Knob", "study_knobs", "study_distributions"), "dse.search.parameters"),
    **dict.fromkeys(("optimize", "OptimizeResult", "space_digest"), "dse.search.optuna_study"),
    **dict.fromkeys(("DEFAULT_STORAGE", "IN_MEMORY", "open_storage", "load_study",
                     "list_studies", "study_design_file", "best_candidates", "best_trials"),
                    "dse.search.storage"),
}

if TYPE_CHECKING:
    from dse.search.candidates import Candidate, closed_form_metrics
    from dse.search.exhaustive import SweepResult, sweep
    from dse.search.grid import Evaluator, candidate, feasible_mask, system_for, violation
    from dse.search.objectives import (
        CONSTRAINT_TABLE,
        METRIC_TABLE,
        METRICS,
        OBJECTIVE_TABLE,
        OBJECTIVES,
        Constraint,
        Constraints,
        Metric,
        Objective,
        check_objectives,
        direction,
    )
    from dse.search.optuna_study import OptimizeResult, optimize, space_digest
    from dse.search.parameters import Knob, study_distributions, study_knobs
    from dse.search.pareto import pareto_mask
    from dse.search.space import Hardware, Placement, Space, hardware, load_space, n_designs
    from dse.search.storage import (
        DEFAULT_STORAGE,
        IN_MEMORY,
        best_candidates,
        best_trials,
        list_studies,
        load_study,
        open_storage,
        study_design_file,
    )


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [
    "CONSTRAINT_TABLE",
    "DEFAULT_STORAGE",
    "IN_MEMORY",
    "METRICS",
    "METRIC_TABLE",
    "OBJECTIVES",
    "OBJECTIVE_TABLE",
    "Candidate",
    "Constraint",
    "Constraints",
    "Evaluator",
    "Hardware",
    "Knob",
    "Metric",
    "Objective",
    "OptimizeResult",
    "Placement",
    "Space",
    "SweepResult",
    "best_candidates",
    "best_trials",
    "candidate",
    "check_objectives",
    "closed_form_metrics",
    "direction",
    "feasible_mask",
    "hardware",
    "list_studies",
    "load_space",
    "load_study",
    "n_designs",
    "open_storage",
    "optimize",
    "pareto_mask",
    "space_digest",
    "study_design_file",
    "study_distributions",
    "study_knobs",
    "sweep",
    "system_for",
    "violation",
]
