"""The Export page's data: an export bundle's files with their purpose and projection-only flag
(from its manifest.json), the commands that use it (read from the files the exporters wrote,
never made up here), and the `dse export` command line of a design.

Where each command comes from:
- a generated file's header names its own command on a line `#   <command>` (the vLLM files:
  `CUDA_VISIBLE_DEVICES=.. vllm serve --config gpu/vllm_<role>.yaml`; design.toml:
  `dse evaluate --design design.toml`);
- `fpga/<board>/build.sh` is run with bash (a zip does not keep the executable bit), with the
  environment variables it requires (its `: "${VAR:?why}"` lines);
- `host/scheduler.yaml` holds parameters only: the bundle ships no host program.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dse.views.state import DesignState

MANIFEST = "manifest.json"
MANIFEST_PURPOSE = ("this index: schema and tool version, sha256, purpose and projection-only "
                    "flag of every other file, notes")
HEADER_COMMAND = re.compile(r"^#   (\S.*)$")
REQUIRED_ENV = re.compile(r'^: "\$\{([A-Z_][A-Z0-9_]*):\?([^}]*)\}"')


@dataclass(frozen=True)
class Step:
    """One thing to do with the bundle: a title, the shell commands (none for a note) and a
    remark."""

    title: str
    commands: tuple[str, ...]
    remark: str = ""


def manifest(files: Mapping[str, bytes]) -> dict[str, Any]:
    """The bundle's manifest.json, parsed."""
    data = json.loads(files[MANIFEST].decode("utf-8"))
    assert isinstance(data, dict)
    return data


def projection_reason(m: Mapping[str, Any], path: str) -> str:
    """Why a file is projection only (the reasons of the directories it lies in), or ''."""
    return "; ".join(r for d, r in sorted(m["projection_only_reasons"].items())
                     if path.startswith(d + "/"))


def file_rows(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """One row per file: path, bytes, purpose, projection-only flag and its reason."""
    m = manifest(files)
    out = []
    for p in sorted(files):
        e = m["files"].get(p)
        out.append({"file": p, "bytes": len(files[p]),
                    "purpose": MANIFEST_PURPOSE if e is None else e["purpose"],
                    "projection only": False if e is None else bool(e["projection_only"]),
                    "why projection only": "" if e is None else projection_reason(m, p)})
    return out


def header_commands(text: str) -> list[str]:
    """The commands a generated file's leading comment block names (`#   <command>`)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if (hit := HEADER_COMMAND.match(line)) is not None:
            out.append(hit.group(1))
    return out


def required_env(script: str) -> list[tuple[str, str]]:
    """(variable, why) for each environment variable a build script requires."""
    return [(hit.group(1), hit.group(2)) for line in script.splitlines()
            if (hit := REQUIRED_ENV.match(line)) is not None]


def next_steps(files: Mapping[str, bytes], zip_name: str, out_dir: str) -> list[Step]:
    """What to run, in order, after downloading the bundle as `zip_name`: unpack it, build the
    FPGA draft (where the bundle has one), start the vLLM servers, configure the host
    scheduler, re-evaluate the design."""
    m = manifest(files)
    text = {p: b.decode("utf-8") for p, b in files.items()}
    steps = [Step("Unpack the bundle",
                  (f"unzip {shlex.quote(zip_name)} -d {shlex.quote(out_dir)}",
                   f"cd {shlex.quote(out_dir)}"),
                  "manifest.json lists every file's sha256 to check it against.")]
    for p in sorted(p for p in text if p.startswith("fpga/") and p.endswith("/build.sh")):
        env = required_env(text[p])
        # a required variable as a quoted placeholder that says what it is
        cmd = " ".join([*(f'{v}="<{why.removeprefix(f"set {v} to ")}>"' for v, why in env),
                        "bash", p])
        why = projection_reason(m, p)
        steps.append(Step(
            f"Build the FPGA draft ({p.split('/')[1]})", (cmd,),
            "Needs TAPA and Vitis (v++) on the PATH. "
            + (f"Projection only: {why}." if why else
               "Writes the .xclbin that host/scheduler.yaml names.")))
    serve = [c for p in sorted(text) if p.startswith("gpu/") and p.endswith(".yaml")
             for c in header_commands(text[p])]
    if serve:
        steps.append(Step("Start the vLLM servers (one terminal each)", tuple(serve),
                          "Ports and endpoints as in host/scheduler.yaml."))
    if "host/scheduler.yaml" in text:
        steps.append(Step("Configure the host scheduler", (),
                          "host/scheduler.yaml holds the scheduler's parameters (RSD's names, "
                          "HeteroReason's backtracking, step-ahead and shadow sync, the "
                          "endpoints); the bundle ships no host program to run."))
    check = header_commands(text.get("design.toml", ""))
    if check:
        steps.append(Step("Re-evaluate the prediction", tuple(check),
                          "Reproduces report.json (predicted, not measured)."))
    return steps


def export_command(state: DesignState, out_dir: str) -> str:
    """The `dse export` command line that writes this design's bundle into out_dir."""
    p = state.params()
    args = ["dse", "export", "--system", state.system, "--scenario", state.workload,
            "--schedule", p["schedule"]]
    for a in state.set_args():
        args += ["--set", a]
    return " ".join(shlex.quote(a) for a in [*args, "--out", out_dir])
