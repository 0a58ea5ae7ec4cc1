"""hetero-dse: design-space exploration for heterogeneous FPGA-GPU speculative reasoning."""

from dse import scenario as _scenario  # noqa: F401  (registers the workload and system kinds)
from dse.errors import DseError, InfeasibleError, SpecError, UnknownNameError
from dse.specs import Catalog, load_spec, model_from_hf_config

__version__ = "0.1.0"

__all__ = [
    "Catalog",
    "DseError",
    "InfeasibleError",
    "SpecError",
    "UnknownNameError",
    "__version__",
    "load_spec",
    "model_from_hf_config",
]
