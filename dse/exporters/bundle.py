"""The export bundle: `render_bundle` (pure: path -> bytes) and `write_bundle` (atomic).

Bundle layout (paths relative to the output directory):

    fpga/<board>/draft_config.h   FPGA draft only: decoder compile-time constants
    fpga/<board>/link.ini         [connectivity] sp= lines, one per AXI port
    fpga/<board>/vpp_link.cfg     boards with a Vitis platform: platform, kernel_frequency
    fpga/<board>/build.sh         tapa compile (+ v++ --link where a platform exists)
    gpu/vllm_draft.yaml           GPU draft only, instead of fpga/
    gpu/vllm_prm.yaml             vllm serve --config files (vLLM 0.9.2)
    gpu/vllm_target.yaml
    host/scheduler.yaml           host scheduler parameters
    design.toml                   the design (dse evaluate --design reads it back)
    report.json                   the predicted metrics (dse.engine.closed_form.evaluate)
    manifest.json                 schema_version, tool version, sha256 of every other file,
                                  projection-only flags, notes

Same input, byte-identical output: no timestamps, no absolute paths, sorted JSON keys.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from dse import __version__
from dse.atomic import write_new_dir
from dse.design import Design, infeasibility
from dse.design_files import design_file_text
from dse.devices.fpga import FpgaPlacement
from dse.engine.closed_form import evaluate
from dse.errors import DseError, InfeasibleError, UsageError
from dse.exporters.hls import draft_config_h
from dse.exporters.host import scheduler_yaml
from dse.exporters.memory import draft_engine
from dse.exporters.text import SAFE_COMPONENT, safe_component, safe_token
from dse.exporters.vitis import build_sh, link_ini, vpp_link_cfg
from dse.exporters.vllm import vllm_yaml
from dse.scenario import SystemSpec, WorkloadSpec
from dse.specs import Catalog, build_spec
from dse.specs.emit import json_text

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
HEADLINE = ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token", "accuracy",
            "p_accept")
PURPOSE = {
    "draft_config.h": "compile-time constants of the FlexLLM-style draft decoder",
    "link.ini": "v++ / rapidstream-tapaopt [connectivity]: AXI port -> memory bank",
    "vpp_link.cfg": "v++ --link settings: Vitis platform, kernel clock, compute unit",
    "build.sh": "tapa compile to an .xo (and v++ --link to an .xclbin where a platform exists)",
    "vllm_draft.yaml": "vllm serve --config for the draft (vLLM 0.9.2)",
    "vllm_prm.yaml": "vllm serve --config for the PRM, a reward (pooling) model (vLLM 0.9.2)",
    "vllm_target.yaml": "vllm serve --config for the target (vLLM 0.9.2)",
    "scheduler.yaml": "host scheduler: thresholds, backtracking, step-ahead, endpoints",
    "design.toml": "the design; dse evaluate --design design.toml reproduces report.json",
    "report.json": "predicted metrics of the design (closed form), not measurements",
}


def render_bundle(cat: Catalog, design: Design, workload: WorkloadSpec) -> dict[str, bytes]:
    """Every file of the bundle, relative POSIX path -> content. Pure and deterministic.

    `design` must come from `dse.design.build_design` (its placements follow its system).
    Raises InfeasibleError for a design that cannot run or cannot be mapped onto its board."""
    why = infeasibility(design)
    if why:
        raise InfeasibleError(f"{design.name} is infeasible: " + "; ".join(why))
    v = __version__
    files: dict[str, str] = {}
    notes: list[str] = []
    projection: dict[str, str] = {}
    draft_info: dict[str, Any] = {"model": design.draft.model.name,
                                  "device": design.draft.device.name}
    eng = None
    board_dir = None
    build = design.draft.fpga_build if isinstance(design.draft, FpgaPlacement) else None
    if build is not None:
        safe_token(build.board.part, build.board.path, "part")
        safe_token(build.board.vitis_platform, build.board.path, "vitis_platform",
                   empty_ok=True)
        eng = draft_engine(design.draft.model, build)
        board_dir = "fpga/" + safe_component(build.board.name, "draft board")
        files[f"{board_dir}/draft_config.h"] = draft_config_h(design, eng, v)
        files[f"{board_dir}/link.ini"] = link_ini(design, eng, v)
        if build.board.vitis_platform:
            files[f"{board_dir}/vpp_link.cfg"] = vpp_link_cfg(design, eng, v)
        else:
            projection[board_dir] = (
                f"{build.board.name} has no Vitis platform: build.sh stops at the .xo "
                f"(tapa compile --part-num {build.board.part}); link.ini records the intended "
                "memory binding, no bitstream can be linked from this bundle")
        files[f"{board_dir}/build.sh"] = build_sh(design, eng, v)
        draft_info.update({"kind": "fpga", "build_dir": board_dir,
                           "projection_only": board_dir in projection})
        notes.append("the FPGA draft's prompt prefill runs on the target GPU and its KV cache "
                     "migrates over PCIe (HeteroReason phase 1); that runtime is not part of "
                     "the vLLM files")
    else:
        draft_info.update({"kind": "gpu", "build_dir": None, "projection_only": False})
        notes.append(f"the draft runs on a GPU ({design.draft.device.name}): "
                     "gpu/vllm_draft.yaml instead of FPGA build files")
    for role, gpus in _gpu_indices(design).items():
        text, role_notes = vllm_yaml(cat, design, role, gpus, v)
        files[f"gpu/vllm_{role}.yaml"] = text
        notes += role_notes
    files["host/scheduler.yaml"] = scheduler_yaml(design, workload, eng, board_dir, v)
    report = evaluate(design, workload).to_dict()
    files["design.toml"] = _design_toml(design, workload, report, v)
    files["report.json"] = json_text({"schema_version": SCHEMA_VERSION, "tool_version": v,
                                      "predicted": True, **report})
    if workload.name not in cat.names("workload") or cat.get("workload",
                                                             workload.name) != workload:
        notes.append(f"workload {workload.name!r} is not the catalog's: re-evaluate "
                     "design.toml with --scenario pointing at its file")
    out = {p: t.encode("utf-8") for p, t in sorted(files.items())}
    out[MANIFEST] = json_text(_manifest(design, workload, out, draft_info, projection,
                                        notes)).encode("utf-8")
    for p in out:
        check_relative(p)
    return out


def _gpu_indices(design: Design) -> dict[str, str]:
    """One GPU per model, as in the paper: CUDA_VISIBLE_DEVICES per server."""
    roles = ([] if isinstance(design.draft, FpgaPlacement) else ["draft"]) + ["prm", "target"]
    out: dict[str, str] = {}
    i = 0
    for r in roles:
        n = getattr(design, r).tp
        out[r] = ",".join(str(k) for k in range(i, i + n))
        i += n
    return out


def _design_toml(design: Design, workload: WorkloadSpec, report: dict[str, Any],
                 version: str) -> str:
    text = design_file_text(design.system, design.schedule, workload.name)
    back = build_spec("design.toml", tomllib.loads(text)["system"])
    if not isinstance(back, SystemSpec) or replace(back, path=design.system.path) != design.system:
        raise ValueError(f"design {design.name} does not survive a TOML round trip")
    header = (f"# design.toml: generated by hetero-dse {version}. Re-evaluate with\n"
              f"#   dse evaluate --design design.toml\n"
              f"# [metrics] are the predictions in report.json (informational).\n")
    return design_file_text(design.system, design.schedule, workload.name,
                            metrics={k: report[k] for k in HEADLINE if report[k] is not None},
                            header=header)


def _manifest(design: Design, workload: WorkloadSpec, files: dict[str, bytes],
              draft: dict[str, Any], projection: dict[str, str], notes: list[str]
              ) -> dict[str, Any]:
    entries = {}
    for p, data in files.items():
        entries[p] = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "purpose": PURPOSE[PurePosixPath(p).name],
            "projection_only": any(p.startswith(d + "/") for d in projection),
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "hetero-dse",
        "tool_version": __version__,
        "design": design.name,
        "schedule": design.schedule.name,
        "workload": workload.name,
        "draft": draft,
        "projection_only": bool(projection),
        "projection_only_reasons": projection,
        "files": entries,
        "notes": notes,
    }


# ------------------------------------------------------------------------------- writing


def check_relative(path: str) -> PurePosixPath:
    """A bundle path: relative, POSIX, each component a safe name (no '..', no separators)."""
    p = PurePosixPath(path)
    if (not path or p.is_absolute() or "\\" in path or "\x00" in path
            or any(not SAFE_COMPONENT.match(c) or ".." in c for c in p.parts)
            or str(p) != path):
        raise DseError(f"refusing bundle path {path!r}: not a plain relative path")
    return p


def _write_file(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    if path.suffix == ".sh":
        path.chmod(0o755)


def write_bundle(files: dict[str, bytes], out_dir: str | Path, force: bool = False) -> Path:
    """Write the bundle into out_dir whole (dse.atomic.write_new_dir: a temporary directory
    beside it, then renamed; never half-written).

    A non-empty out_dir is refused without force; with force it is replaced whole. A directory
    that holds no manifest.json is not a bundle and is never replaced, even with force."""
    out = Path(os.path.abspath(out_dir))
    rel = {str(check_relative(p)): data for p, data in files.items()}
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    nonempty = out.is_dir() and any(out.iterdir())
    if nonempty and not force:
        raise UsageError(f"--out {out}: directory is not empty (use --force to replace it)")
    if nonempty and not (out / MANIFEST).is_file():
        raise UsageError(f"--out {out}: not empty and holds no {MANIFEST}, so it is not a "
                         "previous bundle; refusing to replace it even with --force")

    def fill(tmp: Path) -> None:
        for p, data in rel.items():
            target = tmp / p
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_file(target, data)

    write_new_dir(out, fill, force=force)
    return out
