"""What an exporter is: the context it renders from, what it renders, and the table of them.

An exporter turns a design into some of the bundle's files. It declares

- `name`: its key in the table (unique);
- `applies(design)`: whether the design gets its files (an FPGA draft, a role on a GPU, ...);
- `render(ctx)`: its files (relative POSIX path -> text, each with its purpose for the
  manifest), notes for the manifest, and projection-only reasons (a directory whose files
  cannot be built as they are -> why).

`dse.exporters.bundle.render_bundle` walks a registry in order, keeps the exporters whose
`applies` holds, and adds the bundle's own files (design.toml, report.json, manifest.json).
The shipped table is `dse.exporters.registry.EXPORTERS`. Registering a name twice raises
ValueError; an unknown name raises UnknownNameError listing the valid ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

from dse.core.roles import DEVICE_ROLES, Role
from dse.devices.fpga import FpgaBuild, FpgaPlacement
from dse.devices.gpu import GpuPlacement
from dse.devices.protocol import Placement
from dse.errors import UnknownNameError
from dse.exporters.memory import DraftEngine, draft_engine
from dse.exporters.text import safe_component, safe_token
from dse.io.design_files import ServingSettings
from dse.model.design import Design
from dse.specs import Catalog
from dse.specs.scenario import WorkloadSpec


@dataclass(frozen=True)
class FpgaDraft:
    """An FPGA draft's build mapped onto its board: the engine (parallelism, memory map) and
    the bundle directory of its build files."""

    build: FpgaBuild
    engine: DraftEngine
    build_dir: str  # "fpga/<board>"


def has_fpga_draft(design: Design) -> bool:
    """The draft is placed on an FPGA (the kind whose placements carry an FpgaBuild); False for
    a target-only design, which has no draft."""
    p = design.draft_placement
    return p is not None and p.kind == FpgaPlacement.kind


def served_roles(design: Design) -> dict[Role, Placement]:
    """The device roles with a server or build of their own, in role order (draft, prm,
    target), with their placements: the target alone for a target-only design, and no PRM
    where the target verifies (its server is the target's)."""
    found = {Role.DRAFT: design.draft_placement, Role.VERIFIER: design.prm_placement,
             Role.TARGET: design.target}
    return {r: p for r in DEVICE_ROLES if (p := found[r]) is not None}


def gpu_roles(design: Design) -> tuple[Role, ...]:
    """The served roles (served_roles) placed on GPUs, in role order (draft, prm, target)."""
    return tuple(r for r, p in served_roles(design).items() if p.kind == GpuPlacement.kind)


@dataclass(frozen=True)
class ExportContext:
    """Everything an exporter renders from. `version` is the tool version the files name."""

    cat: Catalog
    design: Design
    workload: WorkloadSpec
    version: str
    # how a design chosen at a load is served (a design file's [serving] table); None: one
    # set of servers with vLLM's defaults, the single-stream setting
    serving: ServingSettings | None = None

    @cached_property
    def fpga_draft(self) -> FpgaDraft | None:
        """The FPGA draft's engine and build directory; None when the draft is not on an FPGA.
        Raises SpecError for a part, platform or board name that cannot be written into a
        build file, InfeasibleError for a build the board's memory cannot map."""
        if not has_fpga_draft(self.design):
            return None
        build = cast(FpgaPlacement, self.design.draft).fpga_build
        safe_token(build.board.part, build.board.path, "part")
        safe_token(build.board.vitis_platform, build.board.path, "vitis_platform",
                   empty_ok=True)
        eng = draft_engine(self.design.draft.model, build)
        return FpgaDraft(build=build, engine=eng,
                         build_dir="fpga/" + safe_component(build.board.name, "draft board"))


def need_fpga_draft(ctx: ExportContext, exporter: str) -> FpgaDraft:
    """ctx.fpga_draft for an exporter that applies only to FPGA drafts."""
    fd = ctx.fpga_draft
    if fd is None:
        raise ValueError(f"exporter {exporter!r} needs an FPGA draft; {ctx.design.name}'s "
                         f"draft is on {ctx.design.draft.device.name}")
    return fd


@dataclass(frozen=True)
class ExportFile:
    """One rendered file: its bundle path, its text and its purpose (for the manifest)."""

    path: str  # relative POSIX path inside the bundle
    text: str
    purpose: str


@dataclass(frozen=True)
class Rendered:
    """What one exporter renders for one design."""

    files: tuple[ExportFile, ...]
    notes: tuple[str, ...] = ()
    # a bundle directory whose files cannot be built as they are -> why (manifest)
    projection_only: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Exporter:
    """One entry of the exporter table."""

    name: str
    description: str  # what it writes, in a line
    applies: Callable[[Design], bool] = field(repr=False)
    render: Callable[[ExportContext], Rendered] = field(repr=False)


class ExporterRegistry:
    """Exporters by name, in registration order (the order their notes reach the manifest)."""

    def __init__(self) -> None:
        self._exporters: dict[str, Exporter] = {}

    def register(self, exporter: Exporter) -> None:
        """Add an exporter. A duplicate name raises ValueError."""
        if exporter.name in self._exporters:
            raise ValueError(f"exporter {exporter.name!r} is already registered")
        self._exporters[exporter.name] = exporter

    def get(self, name: str) -> Exporter:
        if name not in self._exporters:
            raise UnknownNameError("exporter", name, list(self._exporters))
        return self._exporters[name]

    def names(self) -> list[str]:
        return list(self._exporters)

    def __iter__(self) -> Iterator[Exporter]:
        return iter(self._exporters.values())

    def for_design(self, design: Design) -> list[Exporter]:
        """The exporters whose files the design gets, in table order."""
        return [e for e in self if e.applies(design)]
