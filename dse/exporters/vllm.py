"""`gpu/vllm_*.yaml`: `vllm serve --config FILE` files for vLLM 0.9.2 (the paper's version).

Every key is a long option of `vllm serve` 0.9.2 without its dashes
(shared/reference/vllm-0.9.2-serve-flags.txt). vLLM turns `key: true` into `--key` and silently
drops `key: false`, so a flag the design turns off is written in its `no-` form
(`no-enable-prefix-caching: true`); see build-and-host-formats.md 4.1.

What each file states, from the design:
- dtype from the placement's precision (bf16 -> bfloat16, fp16 -> float16; quantised weights
  need a quantised checkpoint, from whose config vLLM reads the method);
- max-model-len = the design's context budget; tensor-parallel-size = the placement's tp;
- gpu-memory-utilization and enforce-eager from the serving profile (boards/serving);
- prefix caching as the cost model assumes it: on for generators under a profile with prefix
  caching; off for the PRM, which vLLM 0.9.2 serves as a pooling model (`task: reward`, STEP
  pooling) re-reading the whole context at every verification (DESIGN.md section 4);
- ports: RSD's (draft 12340, target 12341, PRM 12342); seed 0.
"""

from __future__ import annotations

from typing import Any

from dse.design import Design
from dse.devices.protocol import Placement
from dse.exporters.exporter import ExportContext, ExportFile, Rendered, gpu_roles
from dse.roles import Role
from dse.specs import Catalog
from dse.specs.emit import yaml_text

HOST = "127.0.0.1"
PORTS = {"draft": 12340, "target": 12341, "prm": 12342}  # RSD's scripts/*.sh
SEED = 0
_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "int8": "bfloat16", "fp8": "bfloat16"}
PURPOSE = {
    Role.DRAFT: "vllm serve --config for the draft (vLLM 0.9.2)",
    Role.VERIFIER: "vllm serve --config for the PRM, a reward (pooling) model (vLLM 0.9.2)",
    Role.TARGET: "vllm serve --config for the target (vLLM 0.9.2)",
}


def render(ctx: ExportContext) -> Rendered:
    """The exporter "vllm": gpu/vllm_<role>.yaml for every role placed on GPUs."""
    design = ctx.design
    notes: list[str] = []
    if Role.DRAFT in gpu_roles(design):
        notes.append(f"the draft runs on a GPU ({design.draft.device.name}): "
                     "gpu/vllm_draft.yaml instead of FPGA build files")
    files = []
    for role, gpus in gpu_indices(design).items():
        text, role_notes = vllm_yaml(ctx.cat, design, role.value, gpus, ctx.version)
        files.append(ExportFile(f"gpu/vllm_{role.value}.yaml", text, PURPOSE[role]))
        notes += role_notes
    return Rendered(files=tuple(files), notes=tuple(notes))


def gpu_indices(design: Design) -> dict[Role, str]:
    """One GPU per model, as in the paper: CUDA_VISIBLE_DEVICES per server."""
    out: dict[Role, str] = {}
    i = 0
    for r in gpu_roles(design):
        n = getattr(design, r.value).tp
        out[r] = ",".join(str(k) for k in range(i, i + n))
        i += n
    return out


def endpoint(role: str) -> str:
    """The URL the host scheduler calls: completions for generators, /pooling for the PRM."""
    base = f"http://{HOST}:{PORTS[role]}"
    return base + ("/pooling" if role == "prm" else "/v1")


def serve_options(cat: Catalog, design: Design, role: str) -> tuple[dict[str, Any],
                                                                     dict[str, str], list[str]]:
    """(options, comments per key, notes for the manifest) of one role's server."""
    p: Placement = getattr(design, role)
    prof = cat.serving(p.serving)
    notes: list[str] = []
    comments: dict[str, str] = {}
    opts: dict[str, Any] = {"model": p.model.hf_id, "served-model-name": role}
    if role == "prm":
        opts["task"] = "reward"
        comments["task"] = "pooling model; vLLM 0.9.2 serves it on POST /pooling"
    opts.update({"host": HOST, "port": PORTS[role], "seed": SEED,
                 "dtype": _DTYPE[p.precision.compute],
                 "max-model-len": design.max_context_tokens,
                 "tensor-parallel-size": p.tp,
                 "gpu-memory-utilization": prof.memory_utilization})
    if p.precision.weight_bits < 16:
        comments["model"] = (f"{p.precision.name}: point this at a {p.precision.name} "
                             "checkpoint; vLLM reads the quantisation method from its config")
        notes.append(f"gpu/vllm_{role}.yaml: {p.precision.name} weights need a quantised "
                     f"checkpoint of {p.model.hf_id}")
    caching = p.prefix_caching and role != "prm"
    key = "enable-prefix-caching" if caching else "no-enable-prefix-caching"
    opts[key] = True
    comments[key] = ("the design prefills only tokens the server has not seen" if caching
                     else "the design assumes every call re-reads the whole context")
    if not prof.cuda_graphs:
        opts["enforce-eager"] = True
        comments["enforce-eager"] = f"serving profile {prof.name}: no CUDA graphs"
    if not p.serving.startswith("vllm"):
        notes.append(f"gpu/vllm_{role}.yaml: the design's {role} serving profile {p.serving} "
                     "is not vLLM; this file serves it with vLLM in eager mode instead")
    if role == "prm" and p.model.head != "prm-classifier":
        notes.append(f"gpu/vllm_prm.yaml: {p.model.hf_id} has a value head that vLLM 0.9.2 "
                     "does not serve natively (RSD uses the Skywork PRM vLLM plugin)")
    return opts, comments, notes


def vllm_yaml(cat: Catalog, design: Design, role: str, gpus: str, version: str
              ) -> tuple[str, list[str]]:
    opts, comments, notes = serve_options(cat, design, role)
    p: Placement = getattr(design, role)
    header = "\n".join([
        f"vllm_{role}.yaml: generated by hetero-dse {version} for design {design.name}.",
        f"The {role} ({p.model.name}) on {p.device.name}; vLLM 0.9.2:",
        f"  CUDA_VISIBLE_DEVICES={gpus} vllm serve --config gpu/vllm_{role}.yaml",
    ])
    return yaml_text(opts, header, comments), notes
