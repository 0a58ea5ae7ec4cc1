"""The table of shipped exporters, `EXPORTERS`, in the order render_bundle walks them.

A new exporter (a TensorRT-LLM or SGLang config, another FPGA flow) is its own module with a
`render(ctx: ExportContext) -> Rendered` function, plus one `EXPORTERS.register(Exporter(...))`
below; dse.exporters.exporter says what an exporter declares. The bundle (render_bundle) adds
design.toml, report.json and manifest.json itself.
"""

from __future__ import annotations

from dse.exporters import hls, host, vitis, vllm
from dse.exporters.exporter import Exporter, ExporterRegistry, gpu_roles, has_fpga_draft
from dse.model.design import Design


def _any_gpu_role(design: Design) -> bool:
    return bool(gpu_roles(design))


def _always(design: Design) -> bool:
    return True


EXPORTERS = ExporterRegistry()

EXPORTERS.register(Exporter(
    name="hls", description="fpga/<board>/draft_config.h: the FPGA draft decoder's constants",
    applies=has_fpga_draft, render=hls.render,
))
EXPORTERS.register(Exporter(
    name="vitis", description="fpga/<board>/link.ini, vpp_link.cfg, build.sh: the TAPA / "
    "Vitis build of the FPGA draft",
    applies=has_fpga_draft, render=vitis.render,
))
EXPORTERS.register(Exporter(
    name="vllm", description="gpu/vllm_<role>.yaml: vllm serve --config for each GPU role",
    applies=_any_gpu_role, render=vllm.render,
))
EXPORTERS.register(Exporter(
    name="host", description="host/scheduler.yaml: the host scheduler's parameters",
    applies=_always, render=host.render,
))
