"""Export a design as the files that build and run it.

    files = render_bundle(cat, design, workload)   # pure: relative path -> bytes
    write_bundle(files, "out/", force=False)       # atomic: temporary dir, then rename

Modules: memory.py (the FPGA draft engine's parallelism and memory map), hls.py
(draft_config.h), vitis.py (link.ini, vpp_link.cfg, build.sh), vllm.py (vllm serve --config
files), host.py (scheduler.yaml), bundle.py (the bundle, manifest and writing), text.py
(YAML / JSON emitters).
"""

from dse.exporters.bundle import SCHEMA_VERSION, check_relative, render_bundle, write_bundle

__all__ = ["SCHEMA_VERSION", "check_relative", "render_bundle", "write_bundle"]
