"""Export a design as the files that build and run it.

    files = render_bundle(cat, design, workload)   # pure: relative path -> bytes
    write_bundle(files, "out/", force=False)       # atomic: temporary dir, then rename

Modules: exporter.py (what an exporter declares: its name, what it applies to, its files with
their purposes, notes, projection-only reasons; the registry type), registry.py (the table of
shipped exporters, EXPORTERS), one module per exporter: hls.py (draft_config.h), vitis.py
(link.ini, vpp_link.cfg, build.sh), vllm.py (vllm serve --config files), host.py
(scheduler.yaml); memory.py (the FPGA draft engine's parallelism and memory map), bundle.py
(walks the table; design.toml, report.json, the manifest and writing), text.py (safe names).

A new exporter is its module (a `render(ctx) -> Rendered` function) plus one
`EXPORTERS.register(Exporter(...))` entry in registry.py.
"""

from dse.exporters.bundle import SCHEMA_VERSION, check_relative, render_bundle, write_bundle
from dse.exporters.exporter import (
    ExportContext,
    Exporter,
    ExporterRegistry,
    ExportFile,
    Rendered,
)
from dse.exporters.registry import EXPORTERS

__all__ = ["EXPORTERS", "SCHEMA_VERSION", "ExportContext", "ExportFile", "Exporter",
           "ExporterRegistry", "Rendered", "check_relative", "render_bundle", "write_bundle"]
