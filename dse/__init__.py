"""hetero-dse: design-space exploration for heterogeneous FPGA-GPU speculative reasoning.

The public API (docs/python-api.md):

    load_catalog, load_workload, load_design, load_space   inputs, checked by the strict loader
    evaluate, simulate                                    one design on one workload
    sweep, optimize                                       a design space
    export                                                a design's build and serving files
    Catalog, Design, Schedule, Report, Simulation, Trace, SweepResult, OptimizeResult,
    Candidate, Bundle, Space, SystemSpec, WorkloadSpec    the types they take and return
    DseError, SpecError, UnknownNameError, UsageError, ArgumentError, InfeasibleError

Names load on first use, so `import dse` (and the `dse` command) stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dse.core.lazy import lazy_names
from dse.errors import (
    ArgumentError,
    DseError,
    InfeasibleError,
    SpecError,
    UnknownNameError,
    UsageError,
)
from dse.specs import Catalog, load_spec, model_from_hf_config
from dse.specs import scenario as _scenario  # noqa: F401  (registers the workload and system kinds)

__version__ = "0.1.0"

# public name -> module that defines it (imported on first access)

_LAZY = {
    "load_catalog": "dse.api", "load_workload": "dse.api", "load_design": "dse.api",
    "load_space": "dse.api", "evaluate": "dse.api", "simulate": "dse.api", "sweep": "dse.api",
    "optimize": "dse.api", "export": "dse.api", "Simulation": "dse.api", "Bundle": "dse.api",
    "EvaluatorName": "dse.api", "Objective": "dse.api",
    "Design": "dse.model.design", "Schedule": "dse.model.schedules",
    "Report": "dse.engine.closed_form", "Trace": "dse.engine.simulator",
    "SweepResult": "dse.search", "OptimizeResult": "dse.search", "Candidate": "dse.search",
    "Space": "dse.search", "SystemSpec": "dse.specs.scenario", "WorkloadSpec": "dse.specs.scenario",
}

if TYPE_CHECKING:
    from dse.api import (
        Bundle,
        EvaluatorName,
        Objective,
        Simulation,
        evaluate,
        export,
        load_catalog,
        load_design,
        load_space,
        load_workload,
        optimize,
        simulate,
        sweep,
    )
    from dse.engine.report import Report
    from dse.engine.simulator import Trace
    from dse.model.design import Design
    from dse.model.schedules import Schedule
    from dse.search import Candidate, OptimizeResult, Space, SweepResult
    from dse.specs.scenario import SystemSpec, WorkloadSpec


__getattr__ = lazy_names(__name__, _LAZY)[0]


def __dir__() -> list[str]:
    """The public API only (`__all__`): not the helpers this module uses to load it."""
    return sorted(__all__)

__all__ = [
    "ArgumentError",
    "Bundle",
    "Candidate",
    "Catalog",
    "Design",
    "DseError",
    "EvaluatorName",
    "InfeasibleError",
    "Objective",
    "OptimizeResult",
    "Report",
    "Schedule",
    "Simulation",
    "Space",
    "SpecError",
    "SweepResult",
    "SystemSpec",
    "Trace",
    "UnknownNameError",
    "UsageError",
    "WorkloadSpec",
    "__version__",
    "evaluate",
    "export",
    "load_catalog",
    "load_design",
    "load_space",
    "load_spec",
    "load_workload",
    "model_from_hf_config",
    "optimize",
    "simulate",
    "sweep",
]
