"""The catalog: every spec file of the shipped directories and the user's, by kind and name.

Every catalog item is one TOML file (see docs/catalog-format.md), checked by
`dse.specs.schema.build_spec`; duplicate names across the catalog and references to unknown
links are errors naming the file and key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, cast

from dse.core.arguments import path as check_path
from dse.errors import SpecError, UnknownNameError
from dse.specs.files import toml_files
from dse.specs.hardware import FpgaEngineSpec, FpgaSpec, GpuServingSpec, GpuSpec, LinkSpec
from dse.specs.model import ModelSpec, check_reference, model_from_hf_config
from dse.specs.schema import SCHEMAS, Spec, build_spec, read_toml

if TYPE_CHECKING:  # registered by dse.specs.scenario, which imports this module
    from dse.specs.scenario import SystemSpec, WorkloadSpec

SPACES_DIR = "spaces"


class Board(Protocol):
    """What every board spec (a kind with `is_board = True`: GpuSpec, FpgaSpec) has."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def host_link(self) -> str: ...  # the catalog link (PCIe generation x lanes) to its host
    @property
    def list_price_usd(self) -> float: ...


def load_spec(path: str | Path) -> Spec:
    """Load one catalog TOML file."""
    p = check_path("path", path)  # a public function (dse.load_spec)
    return build_spec(p, read_toml(p), stem=p.stem)


def default_catalog_dirs() -> list[Path]:
    """The shipped catalog: inside the wheel (dse/_catalog) or the source tree's root."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "_catalog"
    root = packaged if packaged.is_dir() else package.parent
    return [root / d for d in ("boards", "models", "scenarios") if (root / d).is_dir()]


@dataclass(frozen=True)
class Catalog:
    """All specs by kind and name. Build it with `Catalog.load`."""

    items: Mapping[str, Mapping[str, Spec]] = field(default_factory=dict)

    @classmethod
    def load(cls, extra_dirs: Iterable[str | Path] = (), *, shipped: bool = True) -> Catalog:
        dirs = [*default_catalog_dirs()] if shipped else []
        for d in extra_dirs:
            p = Path(d)
            if not p.is_dir():
                raise SpecError(p, "", "catalog directory: not a directory")
            dirs.append(p)
        by_kind: dict[str, dict[str, Spec]] = {k: {} for k in SCHEMAS}
        for d in dirs:
            for f in toml_files(d, skip=SPACES_DIR):  # spaces: dse.search.space reads them
                spec = load_spec(f)
                kind = _kind_of(spec)
                if spec.name in by_kind[kind]:
                    other = by_kind[kind][spec.name].path
                    raise SpecError(
                        f, "name", f"duplicate {kind} name {spec.name!r} (also {other})"
                    )
                by_kind[kind][spec.name] = spec
        for kind, specs in by_kind.items():
            for spec in specs.values():
                _check_references(kind, spec, by_kind)
        models = cast("Mapping[str, ModelSpec]", by_kind["model"])
        for m in models.values():
            check_reference(m, models)  # an implicit PRM's reference LM shares its shape
        return cls({k: MappingProxyType(v) for k, v in by_kind.items()})

    def names(self, kind: str) -> list[str]:
        return sorted(self.items.get(kind, {}))

    def replacing(self, kind: str, specs: Iterable[Spec]) -> Catalog:
        """This catalog with some items of one kind replaced by `specs` (matched by name)."""
        items = dict(self.items.get(kind, {}))
        for spec in specs:
            if spec.name not in items:
                raise UnknownNameError(kind, spec.name, list(items))
            items[spec.name] = spec
        return Catalog({**self.items, kind: MappingProxyType(items)})

    def get(self, kind: str, name: str) -> Spec:
        specs = self.items.get(kind, {})
        if name not in specs:
            raise UnknownNameError(kind, name, list(specs))
        return specs[name]

    def gpu(self, name: str) -> GpuSpec:
        return self.get("gpu", name)  # type: ignore[return-value]

    def fpga(self, name: str) -> FpgaSpec:
        return self.get("fpga", name)  # type: ignore[return-value]

    def link(self, name: str) -> LinkSpec:
        return self.get("link", name)  # type: ignore[return-value]

    def serving(self, name: str) -> GpuServingSpec:
        return self.get("gpu-serving", name)  # type: ignore[return-value]

    def engine(self, name: str) -> FpgaEngineSpec:
        return self.get("fpga-engine", name)  # type: ignore[return-value]

    def device(self, name: str) -> Board:
        """A board of any kind (a spec class with `is_board = True`: GPUs, FPGA boards) by
        name; dse.devices.registry maps its kind to a device model."""
        kinds = [k for k, schema in SCHEMAS.items() if getattr(schema.cls, "is_board", False)]
        for kind in kinds:
            if name in self.items.get(kind, {}):
                return self.items[kind][name]  # type: ignore[return-value]
        raise UnknownNameError("device", name, [n for k in kinds for n in self.names(k)])

    def workload(self, name: str) -> WorkloadSpec:
        """A workload by name (scenarios/workloads/)."""
        return cast("WorkloadSpec", self.get("workload", name))  # dse.specs.scenario registers it

    def system(self, name: str) -> SystemSpec:
        """A named system by name (scenarios/systems/)."""
        return cast("SystemSpec", self.get("system", name))  # dse.specs.scenario registers it

    def model(self, name_or_path: str) -> ModelSpec:
        """A model by catalog name, or a path to a model TOML or a HF config.json."""
        if name_or_path in self.items.get("model", {}):
            return self.items["model"][name_or_path]  # type: ignore[return-value]
        p = Path(name_or_path)
        if p.suffix == ".json" or (p.is_dir() and (p / "config.json").is_file()):
            return model_from_hf_config(p / "config.json" if p.is_dir() else p)
        if p.suffix == ".toml":
            spec = load_spec(p)
            if not isinstance(spec, ModelSpec):
                raise SpecError(p, "kind", "expected kind = \"model\"")
            check_reference(spec, cast("Mapping[str, ModelSpec]", self.items.get("model", {})))
            return spec
        raise UnknownNameError("model", name_or_path, self.names("model"))


def _kind_of(spec: Spec) -> str:
    for kind, k in SCHEMAS.items():
        if type(spec) is k.cls:
            return kind
    raise TypeError(type(spec))


_REFERENCES: dict[str, tuple[tuple[str, str], ...]] = {
    "gpu": (("host_link", "link"),),
    "fpga": (("host_link", "link"),),
}


def _check_references(kind: str, spec: Spec, by_kind: Mapping[str, Mapping[str, Spec]]) -> None:
    for attr, target in _REFERENCES.get(kind, ()):
        ref = getattr(spec, attr)
        if ref not in by_kind.get(target, {}):
            valid = ", ".join(sorted(by_kind.get(target, {}))) or "(none)"
            raise SpecError(spec.path, attr, f"unknown {target} {ref!r}; valid: {valid}")


def spec_fields(spec: Spec) -> dict[str, Any]:
    """A spec's fields as a plain dict (for --json), without provenance."""
    return {
        f.name: getattr(spec, f.name) for f in fields(spec) if f.name not in ("sources", "path")
    }
