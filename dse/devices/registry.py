"""Device kinds: which catalog kind each maps from, what it can do, and how a model is placed on
it. Device-name resolution (name -> catalog spec -> kind -> placed model) lives here only.

A kind is an entry of `KINDS`: its catalog kind (the board spec schema, e.g. "gpu" for
boards/gpus/*.toml), the roles it may hold, its precisions, the catalog kind of the software
that runs on it (a GPU serving profile, an FPGA engine), whether a GPU must prefill its prompt
(HeteroReason Phase 1: the KV cache then migrates over the link), its build knobs, and its
builder `place`. Callers branch on these capabilities, never on a spec class. A new board kind
(an ASIC, an NPU) adds its module with a `Placement` implementation and builder, its catalog
kind (dse.specs.register_kind), and one `KINDS.register(DeviceKind(...))` below.

Registering a kind (or a catalog kind) twice raises; an unknown kind or device name raises
UnknownNameError listing the valid ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, cast

from dse.core.roles import DEVICE_ROLES, Role
from dse.devices import fpga, gpu
from dse.devices.protocol import Placement
from dse.devices.shape import (
    FPGA_ONLY_PRECISIONS,
    KV_PRECISIONS,
    PRECISION_FAMILIES,
    PRECISIONS,
    precision,
    precision_family,
)
from dse.errors import SpecError, UnknownNameError
from dse.specs import Catalog, ModelSpec, Spec


class Builder(Protocol):
    """A kind's builder: the model on the board with the named precision and software
    (already checked against the kind), holding context_tokens; tp None = the kind's choice;
    knobs only among the kind's build_knobs; a KV precision only among its kv_precisions and
    an offload fraction > 0 only where it `offloads`."""

    def __call__(self, cat: Catalog, model: ModelSpec, board: Any, *, precision_name: str,
                 software: str, context_tokens: int, tp: int | None,
                 knobs: Mapping[str, object], kv_precision: str | None = None,
                 offload_fraction: float = 0.0) -> Placement: ...


def _no_knobs(board: Spec) -> dict[str, float]:
    return {}


@dataclass(frozen=True)
class DeviceKind:
    """One kind of device and its declared capabilities."""

    name: str  # "gpu", "fpga": also the word in Optuna parameter names (draft_gpu_precision)
    catalog_kind: str  # the catalog kind of its board specs (dse.specs.SCHEMAS)
    label: str  # for messages: "GPU", "FPGA"
    article: Literal["a", "an"]  # "a GPU", "an FPGA"
    roles: tuple[Role, ...]  # the roles it may hold
    precisions: tuple[str, ...]  # precision schemes it runs (names of dse.devices.shape)
    default_precision: str
    software_kind: str  # catalog kind of what runs on it: "gpu-serving", "fpga-engine"
    software_key: str  # the system key that names it: "<role>_serving", "<role>_engine"
    software_label: str  # "Serving", "FPGA engine"
    default_software: str
    prompt_prefill_on_gpu: bool  # a GPU prefills its prompt and the KV cache migrates to it
    place: Builder = field(repr=False)
    build_knobs: tuple[str, ...] = ()  # knob names its builder accepts (e.g. clock_hz)
    # how it ingests streamed tokens (Placement.absorb_s): in one prefill pass, or one decode
    # pass per token; an absorb shares that operation's cost-model error (dse.uncertainty)
    absorb_like: Literal["prefill", "decode"] = "prefill"
    knob_ranges: Callable[[Any], dict[str, float]] = field(default=_no_knobs, repr=False)
    # parametrised precision families it runs besides `precisions` (shape.PRECISION_FAMILIES:
    # "exl2" takes exl2-<bits per weight>)
    precision_families: tuple[str, ...] = ()
    kv_precisions: tuple[str, ...] = ()  # KV-cache precisions a system may set (shape)
    offloads: bool = False  # may hold part of its weights in host memory (<role>_offload_fraction)
    # its board spec has a host CPU whose speed scales the software's host work
    # (host_cpu_slowdown; a system may name its own: <role>_host_cpu_slowdown)
    hosted: bool = False
    # it splits a model over several of its boards (tensor parallel: `--tp`, <role>_tp)
    tensor_parallel: bool = False

    @property
    def a_label(self) -> str:
        return f"{self.article} {self.label}"

    @property
    def precision_choices(self) -> tuple[str, ...]:
        """Its precisions as a user may write them: the fixed names, then each family's
        pattern (exl2-<bits per weight, 2.0-8.0>, e.g. exl2-4.65)."""
        return (*self.precisions, *(PRECISION_FAMILIES[f] for f in self.precision_families))

    def runs_precision(self, name: str) -> bool:
        """The name is one of its precisions or in one of its families (not yet checked: see
        check_precision)."""
        return name in self.precisions or precision_family(name) in self.precision_families

    def check_precision(self, name: str, *, where: object = "",
                        key: str = "precision") -> None:
        """A precision this kind runs; a known precision it does not run is a SpecError, a
        family member with a bad parameter (exl2-9) a SpecError naming it, a name that is no
        precision at all an UnknownNameError. The one check of a precision name for a kind
        (systems, --set, space files, the dashboard, roofline)."""
        if name in self.precisions:
            return
        if precision_family(name) in self.precision_families:
            try:
                precision(name)
            except SpecError as e:
                raise SpecError(where, key, e.reason) from None
            return
        if name in PRECISIONS or precision_family(name) is not None:
            raise SpecError(where, key, f"{name!r} not supported on {self.a_label}; "
                            f"valid: {', '.join(self.precision_choices)}")
        raise UnknownNameError("precision", name, list(self.precision_choices))

    def check_memory_options(self, kv_precision: str | None, offload_fraction: float,
                             host_cpu_slowdown: float | None = None, *,
                             where: object = "", role: str = "", board: object = None) -> None:
        """A KV-cache precision, a weight offload and a host CPU the kind supports (one
        SpecError line naming the system key otherwise). board: the spec of the board, whose
        unified memory (a Jetson's LPDDR5, shared with its CPU) leaves no host memory to
        offload weights to."""
        prefix = f"{role}_" if role else ""
        if kv_precision is not None and kv_precision not in self.kv_precisions:
            what = (f"valid: {', '.join(self.kv_precisions)}" if self.kv_precisions else
                    f"{self.a_label} fixes its KV width in its build; remove the key")
            raise SpecError(where, f"{prefix}kv_precision",
                            f"{kv_precision!r} not supported on {self.a_label}; {what}")
        if offload_fraction and not self.offloads:
            raise SpecError(where, f"{prefix}offload_fraction", f"{self.a_label} holds every "
                            "weight in its own memory; remove the key or set it to 0")
        if offload_fraction and getattr(board, "unified_memory", False):
            raise SpecError(where, f"{prefix}offload_fraction", f"{getattr(board, 'name', '')}"
                            " has unified memory (its CPU and GPU share one DRAM): there is no "
                            "host memory apart to offload weights to; remove the key or set it "
                            "to 0")
        if host_cpu_slowdown is not None and not self.hosted:
            raise SpecError(where, f"{prefix}host_cpu_slowdown", f"{self.a_label}'s costs have "
                            "no host CPU term (its build runs the model); remove the key")


class DeviceRegistry:
    """Device kinds by name, in registration order."""

    def __init__(self) -> None:
        self._kinds: dict[str, DeviceKind] = {}

    def register(self, kind: DeviceKind) -> None:
        """Add a kind. A duplicate name or catalog kind raises ValueError."""
        if kind.name in self._kinds:
            raise ValueError(f"device kind {kind.name!r} is already registered")
        other = next((k for k in self._kinds.values() if k.catalog_kind == kind.catalog_kind),
                     None)
        if other is not None:
            raise ValueError(f"catalog kind {kind.catalog_kind!r} already maps to device kind "
                             f"{other.name!r}")
        if kind.default_precision not in kind.precisions:
            raise ValueError(f"device kind {kind.name!r}: default precision "
                             f"{kind.default_precision!r} not among {kind.precisions}")
        self._kinds[kind.name] = kind

    def get(self, name: str) -> DeviceKind:
        if name not in self._kinds:
            raise UnknownNameError("device kind", name, list(self._kinds))
        return self._kinds[name]

    def names(self) -> list[str]:
        return list(self._kinds)

    def __iter__(self) -> Iterator[DeviceKind]:
        return iter(self._kinds.values())

    def for_role(self, role: str) -> list[DeviceKind]:
        return [k for k in self if role in k.roles]

    def with_knob(self, knob: str) -> list[DeviceKind]:
        return [k for k in self if knob in k.build_knobs]


KINDS = DeviceRegistry()

KINDS.register(DeviceKind(
    name="gpu", catalog_kind="gpu", label="GPU", article="a", roles=DEVICE_ROLES,
    precisions=tuple(p for p in PRECISIONS if p not in FPGA_ONLY_PRECISIONS),
    default_precision="bf16", software_kind="gpu-serving",
    software_key="serving", software_label="Serving",
    default_software="vllm-cudagraph",  # the serving profile when a system names none
    prompt_prefill_on_gpu=False,
    place=gpu.place, precision_families=("exl2",), kv_precisions=tuple(KV_PRECISIONS),
    offloads=True, hosted=True, tensor_parallel=True,
))
KINDS.register(DeviceKind(
    name="fpga", catalog_kind="fpga", label="FPGA", article="an", roles=(Role.DRAFT,),
    precisions=tuple(fpga.FPGA_PRECISIONS), default_precision="w8a8",
    software_kind="fpga-engine", software_key="engine", software_label="FPGA engine",
    default_software="flexllm",  # the engine (draft_engine) when a system names none
    prompt_prefill_on_gpu=True, absorb_like="decode", place=fpga.place,
    build_knobs=fpga.BUILD_KNOBS, knob_ranges=fpga.knob_ranges,
))


# ---------------------------------------------------------------------------- resolution


def resolve(cat: Catalog, device_name: str) -> tuple[Spec, DeviceKind]:
    """A device name -> (its board spec, its kind), over every registered kind's catalog."""
    for kind in KINDS:
        specs = cat.items.get(kind.catalog_kind, {})
        if device_name in specs:
            return specs[device_name], kind
    raise UnknownNameError("device", device_name, device_names(cat))


def board(cat: Catalog, device_name: str) -> Any:
    """The board spec of a device name (any kind)."""
    return resolve(cat, device_name)[0]


def kind_of(cat: Catalog, device_name: str) -> DeviceKind:
    return resolve(cat, device_name)[1]


def device_names(cat: Catalog, role: str | None = None) -> list[str]:
    """Every device of the catalog (that can hold `role`), kind by kind in registration
    order, each kind's names sorted."""
    kinds = list(KINDS) if role is None else KINDS.for_role(role)
    return [n for k in kinds for n in cat.names(k.catalog_kind)]


def role_devices_label(role: str) -> str:
    """The kinds that may hold a role, for messages: 'a GPU', 'a GPU or an FPGA'."""
    return " or ".join(k.a_label for k in KINDS.for_role(role))


def place(
    cat: Catalog,
    model: ModelSpec,
    device_name: str,
    *,
    precision_name: str | None = None,
    software: str | None = None,
    context_tokens: int = 4096,
    tp: int | None = None,
    knobs: Mapping[str, object] | None = None,
    kv_precision: str | None = None,
    offload_fraction: float = 0.0,
    host_cpu_slowdown: float | None = None,
) -> Placement:
    """Place a model on a named device: resolve the board and its kind, default and check the
    precision, the KV precision and offload (check_memory_options) and the software (the
    kind's serving profile / engine), then call the kind's builder. Knobs must be among the
    kind's build_knobs (a ValueError otherwise). host_cpu_slowdown: the placement's own host
    CPU instead of the board's default (a hosted kind's spec field of that name)."""
    spec, kind = resolve(cat, device_name)
    pname = precision_name or kind.default_precision
    kind.check_precision(pname)
    kind.check_memory_options(kv_precision, offload_fraction, host_cpu_slowdown, board=spec)
    if host_cpu_slowdown is not None:
        spec = replace(cast(Any, spec), host_cpu_slowdown=host_cpu_slowdown)  # hosted: a field
    sw = software or kind.default_software
    cat.get(kind.software_kind, sw)
    extra = sorted(set(knobs or {}) - set(kind.build_knobs))
    if extra:
        raise ValueError(f"{kind.label} {device_name!r} has no build knobs {', '.join(extra)}; "
                         f"valid: {', '.join(kind.build_knobs) or '(none)'}")
    return kind.place(cat, model, spec, precision_name=pname, software=sw,
                      context_tokens=context_tokens, tp=tp, knobs=dict(knobs or {}),
                      kv_precision=kv_precision, offload_fraction=offload_fraction)
