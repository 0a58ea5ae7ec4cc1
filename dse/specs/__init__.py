"""Specs: the strict schema checker (schema), the hardware specs (hardware), the model spec and
its Hugging Face import (model), the catalog (catalog) and the TOML/JSON/YAML emitter (emit).

The names the rest of the package uses are importable from `dse.specs` directly.
"""

from dse.specs.catalog import SPACES_DIR, Catalog, default_catalog_dirs, load_spec, spec_fields
from dse.specs.hardware import (
    FpgaEngineSpec,
    FpgaSpec,
    GpuServingSpec,
    GpuSpec,
    LinkSpec,
)
from dse.specs.model import ROLES, ModelSpec, model_from_hf_config
from dse.specs.schema import (
    MAX_DEPTH,
    MAX_INT,
    SCHEMA_VERSION,
    SCHEMAS,
    Key,
    Spec,
    build_spec,
    check_value,
    register_kind,
    schema_of,
    spec_field,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_INT",
    "ROLES",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "SPACES_DIR",
    "Catalog",
    "FpgaEngineSpec",
    "FpgaSpec",
    "GpuServingSpec",
    "GpuSpec",
    "Key",
    "LinkSpec",
    "ModelSpec",
    "Spec",
    "build_spec",
    "check_value",
    "default_catalog_dirs",
    "load_spec",
    "model_from_hf_config",
    "register_kind",
    "schema_of",
    "spec_field",
    "spec_fields",
]
