"""`dse export`: a design's build and serving files as a bundle."""

from __future__ import annotations

import argparse
import json
from typing import Any

from dse.cli.common import (
    Once,
    add_wide,
    nonneg_int,
    quiet_optuna,
    read_workload,
    refuse_overwriting_inputs,
    text_width,
)
from dse.cli.layout import wrap
from dse.errors import DseError, UsageError
from dse.io.outputs import check_output_dir
from dse.specs import Catalog


def export_args(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--design", action=Once,
                   help="a system or design TOML file (its schedule and workload "
                   "are the defaults)")
    g.add_argument("--system", action=Once,
                   help="a named system, e.g. paper-config1-u280 (schedule "
                   "heteroreason, workload math500 unless given)")
    g.add_argument("--study", action=Once,
                   help="an optimisation study: its best feasible trial's design")
    p.add_argument("--storage", help="study storage URL (with --study)")
    p.add_argument("--trial", type=nonneg_int, help="export this trial number instead of the "
                   "best (with --study)")
    p.add_argument("--scenario", action=Once,
                   help="workload name or TOML file (default: the design's; "
                   "math500 for --system)")
    p.add_argument("--schedule", action=Once,
                   help="rsd, brsd, brsd_stepahead or heteroreason (default: the "
                   "design's, else heteroreason)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a design knob, e.g. fpga.clock_mhz=200; repeatable")
    p.add_argument("--out", action=Once, required=True, metavar="DIR",
                   help="bundle directory to write")
    p.add_argument("--force", action="store_true",
                   help="replace DIR if it holds a previous bundle")
    add_wide(p)


def _export_design_file(a: argparse.Namespace, cat: Catalog) -> Any:
    from pathlib import Path

    from dse.io.resolve import Source, read_source

    if a.study is None and (a.storage is not None or a.trial is not None):
        raise UsageError("--storage and --trial go with --study")
    if a.design is not None:
        return read_source(cat, Path(a.design))
    if a.system is not None:
        return read_source(cat, a.system)
    try:
        from dse.search import study_design_file
    except ImportError as e:
        raise DseError(f"--study: studies are not available in this build ({e})") from None
    quiet_optuna()
    df = study_design_file(a.storage, a.study, a.trial)
    return Source(df.system, df.schedule, df.workload)


def run_export(a: argparse.Namespace, cat: Catalog) -> tuple[Any, str]:
    from dse.exporters import render_bundle, write_bundle
    from dse.exporters.bundle import MANIFEST
    from dse.io.design_files import parse_set
    from dse.io.resolve import resolve_design, schedule_misfit

    refuse_overwriting_inputs({"--out": a.out}, {"--design": a.design, "--scenario": a.scenario
                                                  if a.scenario and a.scenario.endswith(".toml")
                                                  else None}, catalogs=a.catalog,
                              dir_outputs=("--out",))
    check_output_dir("--out", a.out, force=a.force, whole_marker=MANIFEST)
    df = _export_design_file(a, cat)
    sys_over, flags = parse_set(a.set)
    wl_name = a.scenario or df.workload or ("math500" if a.system is not None else None)
    if wl_name is None:
        raise UsageError("--scenario: required (the design file names no workload)")
    design = resolve_design(cat, df, overrides={**sys_over, **flags}, schedule=a.schedule,
                            source="--set")
    schedule_misfit(design.workflow, a.schedule)
    files = render_bundle(cat, design, read_workload(cat, wl_name), serving=df.serving)
    out = write_bundle(files, a.out, a.force)
    manifest = json.loads(files["manifest.json"])
    # the path whole on a line of its own (never wrapped); the lines after it fit the width
    head = f"wrote {len(files)} files to {out}"
    how = (design.width_label if design.is_width else f"schedule {design.schedule.name}")
    lines = [f"({design.name}, {how}, workload "
             f"{manifest['workload']}):"]
    lines += [f"  {p}" for p in sorted(files)]
    for d, why in manifest["projection_only_reasons"].items():
        lines.append(f"projection only: {d}: {why}")
    lines += [f"note: {n}" for n in manifest["notes"]]
    return ({"out": str(out), "files": sorted(files), "manifest": manifest},
            head + "\n" + wrap("\n".join(lines), text_width(a)))
