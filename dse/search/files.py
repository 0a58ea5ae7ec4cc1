"""The files `dse sweep --out DIR` and `dse optimize --out DIR` write: best.toml (a design file
`dse evaluate --design` and `dse export --design` load), pareto.csv, pareto.html (plotly) and,
for a study, trials.csv, and a hidden `.dse-result-set.json` naming the set's files with their
sha256. Nothing existing is overwritten without --force; the files are written as one set
(dse.io.atomic.write_files: temporaries, then renamed together), so none is ever half-written and
an interruption leaves the old set or the new one. With --force, the files of the set written
there before (its manifest's, unchanged since) that the new set does not write go with the
renames: a sweep over an optimize result leaves no trials.csv of the older run. A file dse did
not write (not in the old manifest, or changed since) is never removed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dse.errors import DseError
from dse.io.atomic import write_files
from dse.search.candidates import Candidate
from dse.search.objectives import METRICS, OBJECTIVES
from dse.uncertainty import INTERVAL_METRICS

DESIGN_FIELDS = ("draft_device", "draft_model", "draft_precision", "draft_serving",
                 "fpga_clock_MHz", "fpga_mac_lanes", "fpga_memory_channels", "prm_device",
                 "prm_model", "prm_tp", "target_device", "target_model", "target_tp",
                 "accept_threshold", "backtrack_threshold", "max_backtracks",
                 "backtrack_window")


def candidate_row(c: Candidate) -> dict[str, Any]:
    d = c.to_dict()["design"]
    row: dict[str, Any] = {k: d.get(k) for k in DESIGN_FIELDS}
    sch = d.get("schedule") or {}
    row.update(schedule=sch.get("name"), backtracking=sch.get("backtracking"),
               step_ahead=sch.get("step_ahead"), shadow_sync=sch.get("shadow_sync"))
    row.update({k: c.metrics.get(k) for k in (*METRICS, "capex_usd")})
    for m in INTERVAL_METRICS:  # the 90% interval's ends (empty where none was computed)
        lo, hi = c.intervals.get(m, (None, None))
        row[f"{m}_low"], row[f"{m}_high"] = lo, hi
    return row


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def trials_rows(study: Any) -> list[dict[str, Any]]:
    """One row per trial: number, state, values, feasibility, parameters, metrics."""
    objectives = study.user_attrs.get("objectives") or []
    params = sorted({p for t in study.trials for p in t.params})
    rows = []
    for t in study.trials:
        row: dict[str, Any] = {"number": t.number, "state": t.state.name}
        vals = t.values or []
        for i, o in enumerate(objectives):
            row[o] = vals[i] if i < len(vals) else None
        row["feasible"] = (t.user_attrs.get("violation", 1.0) <= 0
                           if t.state.name == "COMPLETE" else None)
        row["infeasible_reason"] = t.user_attrs.get("infeasible", "")
        row.update({p: t.params.get(p) for p in params})
        m = t.user_attrs.get("metrics", {})
        row.update({k: m.get(k) for k in METRICS})
        row["seconds"] = (t.duration.total_seconds() if t.duration is not None else None)
        rows.append(row)
    return rows


def pareto_html(objectives: Sequence[str], front: Sequence[Candidate],
                cloud: Mapping[str, Any], title: str) -> str:
    """Objective 1 vs objective 2 (or vs accuracy for one objective): the evaluated designs
    in grey, the front (or the optimum) highlighted; hover shows each front design."""
    import plotly.graph_objects as go

    xk = OBJECTIVES[objectives[0]]
    yk = OBJECTIVES[objectives[1]] if len(objectives) > 1 else (
        "accuracy" if xk != "accuracy" else "j_per_token")
    fig = go.Figure()
    xs, ys = np.asarray(cloud.get(xk, [])), np.asarray(cloud.get(yk, []))
    if len(xs):
        fig.add_trace(go.Scattergl(x=xs, y=ys, mode="markers", name="evaluated (feasible)",
                                   marker={"size": 4, "color": "lightgrey"}))
    fig.add_trace(go.Scatter(
        x=[c.metrics.get(xk) for c in front], y=[c.metrics.get(yk) for c in front],
        mode="markers+lines" if len(front) > 1 else "markers",
        name="Pareto front" if len(objectives) > 1 else "optimum",
        marker={"size": 10, "color": "crimson"},
        text=[c.label for c in front], hovertemplate="%{text}<br>%{x:.4g}, %{y:.4g}"))
    fig.update_layout(title=title, xaxis_title=f"{xk} ({METRICS[xk].unit})",
                      yaxis_title=f"{yk} ({METRICS[yk].unit})", template="plotly_white")
    return fig.to_html(include_plotlyjs="cdn", full_html=True)


RESULT_FILES = ("best.toml", "pareto.csv", "pareto.html", "trials.csv")  # what a set may hold
SET_MANIFEST = ".dse-result-set.json"  # the set's files and their sha256


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _stale(d: Path, keep: Sequence[str]) -> list[str]:
    """The files of the set written into d before (its manifest's, of RESULT_FILES, with the
    content recorded there) that a new set of `keep` does not replace."""
    try:
        listed = json.loads((d / SET_MANIFEST).read_bytes())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    out = []
    for name in RESULT_FILES:
        if name in keep or not isinstance(listed, dict) or name not in listed:
            continue
        try:
            if _sha256((d / name).read_bytes()) == listed[name]:
                out.append(name)
        except OSError:  # gone, or not a readable file: not ours to remove
            continue
    return out


def write_outputs(out: str, files: Mapping[str, str], force: bool) -> list[Path]:
    """Write files into directory `out` (created if missing), atomically as a set
    (dse.io.atomic.write_files) with the set's manifest; refuse to replace any existing file
    unless force, before writing any. With force, the earlier set's files that this one does
    not write are removed with it (module docstring). Returns the files' paths (not the
    manifest's)."""
    from dse import __version__

    d = Path(out)
    if d.exists() and not d.is_dir():
        raise DseError(f"--out {d}: exists and is not a directory")
    clash = [n for n in files if (d / n).exists()]
    if clash and not force:
        raise DseError(f"--out {d}: {', '.join(sorted(clash))} already there; use --force to "
                       "replace them, or another directory")
    data = {name: text.encode("utf-8") for name, text in files.items()}
    manifest = {"schema_version": 1, "tool": f"hetero-dse {__version__}",
                "files": {name: _sha256(b) for name, b in sorted(data.items())}}
    stale = _stale(d, list(data)) if force and d.is_dir() else []
    # as one set (dse.io.atomic.write_files): an interruption leaves all of them or none
    written = write_files(d, {**data, SET_MANIFEST: (json.dumps(manifest, indent=1)
                                                     + "\n").encode("utf-8")},
                          force=force, remove=stale)
    return written[:len(data)]
