"""The export bundle: `render_bundle` (pure: path -> bytes) and `write_bundle` (atomic).

render_bundle walks the exporter table (dse.exporters.registry.EXPORTERS) and adds the
bundle's own files. Bundle layout (paths relative to the output directory; exporter in []):

    fpga/<board>/draft_config.h   [hls] FPGA draft only: decoder compile-time constants
    fpga/<board>/link.ini         [vitis] [connectivity] sp= lines, one per AXI port
    fpga/<board>/vpp_link.cfg     [vitis] boards with a Vitis platform: platform, clock
    fpga/<board>/build.sh         [vitis] tapa compile (+ v++ --link where a platform exists)
    gpu/vllm_draft.yaml           [vllm] GPU draft only, instead of fpga/
    gpu/vllm_prm.yaml             [vllm] vllm serve --config files (vLLM 0.9.2)
    gpu/vllm_target.yaml          [vllm]
    gpu/replicas.sh               [vllm] a design chosen at a load (its [serving] table): its
                                  replicas' servers (dse.exporters.replicas)
    gpu/nginx_replicas.conf       [vllm] a target-only design on several replicas: one endpoint
    host/scheduler.yaml           [host] host scheduler parameters
    design.toml                   the design (dse evaluate --design reads it back)
    report.json                   the predicted metrics (dse.engine.closed_form.evaluate), their
                                  90% intervals and provenance (dse.uncertainty.attach)
    manifest.json                 schema_version, tool version, sha256 and purpose of every
                                  other file, projection-only flags, notes (draft: null for a
                                  target-only design)

A target-only design gets gpu/vllm_target.yaml and a plain-generation host/scheduler.yaml; a
target verifier no gpu/vllm_prm.yaml (the target judges); a width design the policy's and the
PRM's servers and a scheduler of n samples (dse.exporters.width_host; its manifest's
`schedule` is the method, e.g. "best-of-n N=8").

Same input, byte-identical output: no timestamps, no absolute paths, sorted JSON keys.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tomllib
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from dse import __version__
from dse.engine.evaluate import evaluate
from dse.errors import DseError, InfeasibleError, UsageError
from dse.exporters.exporter import ExportContext, ExporterRegistry
from dse.exporters.registry import EXPORTERS
from dse.exporters.text import SAFE_COMPONENT
from dse.io.atomic import write_new_dir
from dse.io.design_files import ServingSettings, design_file_text
from dse.model.design import Design, infeasibility
from dse.specs import Catalog, build_spec
from dse.specs.emit import json_text
from dse.specs.scenario import SystemSpec, WorkloadSpec
from dse.uncertainty import attach

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
HEADLINE = ("latency_s_per_problem", "goodput_tokens_per_s", "j_per_token", "accuracy",
            "p_accept")
# The bundle's own files; every other file and its purpose comes from an exporter.
PURPOSE = {
    "design.toml": "the design; dse evaluate --design design.toml reproduces report.json",
    "report.json": "predicted metrics of the design (closed form), not measurements",
}


def render_bundle(cat: Catalog, design: Design, workload: WorkloadSpec, *,
                  exporters: ExporterRegistry = EXPORTERS,
                  serving: ServingSettings | None = None) -> dict[str, bytes]:
    """Every file of the bundle, relative POSIX path -> content. Pure and deterministic.
    serving: how a design chosen at a load is served (its design file's [serving] table):
    the vLLM files' caps, proposer and replicas, kept in design.toml and the manifest.

    The files of every exporter in `exporters` (dse.exporters.registry.EXPORTERS unless given)
    that applies to the design, then design.toml, report.json and manifest.json.
    `design` must come from `dse.model.design.build_design` (its placements follow its system).
    Raises InfeasibleError for a design that cannot run or cannot be mapped onto its board,
    ValueError for two exporters that write the same path."""
    why = infeasibility(design)
    if why:
        raise InfeasibleError(f"{design.name} is infeasible: " + "; ".join(why))
    v = __version__
    ctx = ExportContext(cat=cat, design=design, workload=workload, version=v,
                        serving=serving)
    files: dict[str, str] = {}
    purposes = dict(PURPOSE)
    notes: list[str] = []
    projection: dict[str, str] = {}
    for exporter in exporters.for_design(design):
        rendered = exporter.render(ctx)
        for f in rendered.files:
            if f.path in files or f.path in purposes or f.path == MANIFEST:
                raise ValueError(f"exporter {exporter.name!r} writes {f.path}, which another "
                                 "exporter or the bundle already writes")
            files[f.path] = f.text
            purposes[f.path] = f.purpose
        notes += rendered.notes
        for d, reason in rendered.projection_only.items():  # two reasons for one directory: both
            if reason not in projection.get(d, "").split("; "):
                projection[d] = f"{projection[d]}; {reason}" if d in projection else reason
    fd = ctx.fpga_draft
    written = fd is not None and any(p.startswith(fd.build_dir + "/") for p in files)
    build_dir = fd.build_dir if fd is not None and written else None
    dp = design.draft_placement
    draft_info: dict[str, Any] | None = None if dp is None else {
        "model": dp.model.name, "device": dp.device.name, "kind": dp.kind,
        "build_dir": build_dir, "projection_only": build_dir in projection}
    report = attach(evaluate(design, workload), design, workload).to_dict()
    files["design.toml"] = _design_toml(design, workload, report, v, serving)
    files["report.json"] = json_text({"schema_version": SCHEMA_VERSION, "tool_version": v,
                                      "predicted": True, **report})
    if workload.name not in cat.names("workload") or cat.get("workload",
                                                             workload.name) != workload:
        notes.append(f"workload {workload.name!r} is not the catalog's: re-evaluate "
                     "design.toml with --scenario pointing at its file")
    out = {p: t.encode("utf-8") for p, t in sorted(files.items())}
    man = _manifest(design, workload, out, purposes, draft_info, projection, notes)
    if serving is not None:
        man["serving"] = serving.to_table()
    out[MANIFEST] = json_text(man).encode("utf-8")
    for p in out:
        check_relative(p)
    return out


def _design_toml(design: Design, workload: WorkloadSpec, report: dict[str, Any],
                 version: str, serving: ServingSettings | None = None) -> str:
    text = design_file_text(design.system, design.schedule, workload.name)
    back = build_spec("design.toml", tomllib.loads(text)["system"])
    if not isinstance(back, SystemSpec) or replace(back, path=design.system.path) != design.system:
        raise ValueError(f"design {design.name} does not survive a TOML round trip")
    header = (f"# design.toml: generated by hetero-dse {version}. Re-evaluate with\n"
              f"#   dse evaluate --design design.toml\n"
              f"# [metrics] are the predictions in report.json (informational).\n")
    if serving is not None:
        header += (f"# [serving]: how it serves {serving.rate:g} requests/s (dse sweep/optimize "
                   "--rate), as gpu/ states it.\n")
    return design_file_text(design.system, design.schedule, workload.name,
                            metrics={k: report[k] for k in HEADLINE if report[k] is not None},
                            header=header, serving=serving)


def _manifest(design: Design, workload: WorkloadSpec, files: dict[str, bytes],
              purposes: dict[str, str], draft: dict[str, Any] | None,
              projection: dict[str, str],
              notes: list[str]) -> dict[str, Any]:
    entries = {}
    for p, data in files.items():
        entries[p] = {
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "purpose": purposes[p],
            "projection_only": any(p.startswith(d + "/") for d in projection),
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "hetero-dse",
        "tool_version": __version__,
        "design": design.name,
        "schedule": design.width_label if design.is_width else design.schedule.name,
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
    """Write the bundle into out_dir whole (dse.io.atomic.write_new_dir: a temporary directory
    beside it, then renamed, or swapped with the old one; never half-written).

    A non-empty out_dir is refused without force. With force a previous bundle's files are
    replaced, and what the user added there is kept (_carry_over): the new bundle and those
    files appear together in one rename. A directory that holds no manifest.json is not a
    bundle and is never written into, even with force."""
    out = Path(os.path.abspath(out_dir))
    rel = {str(check_relative(p)): data for p, data in files.items()}
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    nonempty = out.is_dir() and any(out.iterdir())
    if nonempty and not force:
        raise UsageError(f"{out}: directory is not empty (force, --force on the command line, "
                         "replaces a previous bundle's files and keeps the ones you added)")
    if nonempty and not (out / MANIFEST).is_file():
        raise UsageError(f"{out}: not empty and holds no {MANIFEST}, so it is not a "
                         "previous bundle; refusing to replace it even when forced")
    old = Path(os.path.realpath(out))
    previous = _previous_files(old) if nonempty else {}

    def fill(tmp: Path) -> None:
        for p, data in rel.items():
            target = tmp / p
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_file(target, data)
        if nonempty:
            _carry_over(old, tmp, set(rel), previous, out)

    write_new_dir(out, fill, force=force)
    return out


def _previous_files(d: Path) -> dict[str, str]:
    """The files of the bundle in d as its manifest lists them (path -> sha256); {} when the
    manifest cannot be read (then every file there counts as the user's and is kept)."""
    try:
        entries = json.loads((d / MANIFEST).read_bytes())["files"]
        return {str(p): e["sha256"] for p, e in entries.items()
                if isinstance(e, dict) and isinstance(e.get("sha256"), str)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _unchanged(path: Path, sha256: str | None) -> bool:
    """Whether path is a regular file (no link) whose content has this sha256."""
    if sha256 is None or path.is_symlink() or not path.is_file():
        return False
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return False


def _carry_over(old: Path, new: Path, written: set[str], previous: dict[str, str], out: Path,
                rel: str = "") -> bool:
    """Put into the new bundle (the temporary directory `new`) everything the user added to
    the old one (`old`, under `rel`): every entry except the previous manifest, the paths the
    new bundle writes (replaced, as `sweep --force` replaces its files) and the previous
    bundle's files still as it wrote them (their sha256 as its manifest records; they go with
    it). A file is hard-linked (the same file, never copied; a copy only where the file system
    has no hard links), a symlink recreated, a directory recreated (with its permission bits)
    around what it keeps; an empty directory of the user's is kept, one that held only the
    previous bundle's files is not. A file of the user's where the new bundle needs a
    directory, or the other way round, is refused (nothing is then written). Returns whether
    anything was kept."""
    kept = False
    for entry in sorted(old.iterdir()):
        r = f"{rel}{entry.name}"
        dst = new / r
        if entry.is_dir() and not entry.is_symlink():
            if r in written:
                raise UsageError(f"{out}: {r} is a directory, where the new bundle writes a "
                                 "file; move it away, or export into another directory")
            made = not dst.exists()
            dst.mkdir(exist_ok=True)
            inner = _carry_over(entry, new, written, previous, out, f"{r}/")
            if made and not inner and any(entry.iterdir()):  # the previous bundle's alone
                dst.rmdir()
                continue
            if made:  # the user's directory: its permission bits too
                dst.chmod(entry.stat().st_mode & 0o7777)
            kept = True
        elif r == MANIFEST or r in written or _unchanged(entry, previous.get(r)):
            continue
        elif any(w.startswith(f"{r}/") for w in written):
            raise UsageError(f"{out}: {r} is a file, where the new bundle writes a directory; "
                             "move it away, or export into another directory")
        else:
            _keep(entry, dst)
            kept = True
    return kept


def _keep(src: Path, dst: Path) -> None:
    """The user's entry src at dst too: a hard link, a symlink recreated, a copy of a regular
    file where the file system has no hard links."""
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if not src.is_file():
            raise
        shutil.copy2(src, dst)
