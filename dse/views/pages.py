"""Other pages' data: the paper side by side (predicted vs reported), search candidates as
table rows, an export bundle as a deterministic zip, a study storage's database file.
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np

from dse.errors import SpecError
from dse.views.state import design_label


def paper_points(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """`dse reproduce` rows for a predicted-vs-reported chart: paper range, midpoint, tool
    value, tool / paper ratio and the row's group (its id's first part)."""
    out = []
    for r in rows:
        mid = (r.paper_low + r.paper_high) / 2
        out.append({"id": r.id, "group": r.id.split(".")[0], "paper_low": r.paper_low,
                    "paper_high": r.paper_high, "paper_mid": mid, "tool": r.tool,
                    "ratio": r.tool / mid if mid else math.nan, "within": r.within,
                    "calibrated": r.calibrated, "tolerance": r.tolerance,
                    "description": r.description})
    return out


def candidate_rows(candidates: Sequence[Any]) -> list[dict[str, Any]]:
    """Search candidates (dse.search.Candidate) as table rows: metrics, the ends of their 90%
    intervals (`<metric>_low`, `<metric>_high`, where the search computed them) and a design
    label."""
    rows = []
    for i, c in enumerate(candidates):
        d = c.design
        nums = {k: float(v) for k, v in c.metrics.items()
                if isinstance(v, int | float | np.floating) and not isinstance(v, bool)}
        ends = {f"{m}_{side}": float(v) for m, iv in getattr(c, "intervals", {}).items()
                for side, v in zip(("low", "high"), iv, strict=True)}
        rows.append({"index": i, **nums, **ends,
                     "schedule": d.schedule.name if d.schedule else "",
                     "workload": d.workload or "", "design": design_label(d.system, d.schedule)})
    return rows


def bundle_zip(files: Mapping[str, bytes]) -> bytes:
    """An export bundle (relative path -> bytes) as a deterministic zip: sorted entries,
    fixed timestamps."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for path in sorted(files):
            if path.startswith("/") or ".." in Path(path).parts:
                raise SpecError("bundle", path, "expected a relative path inside the bundle")
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[path])
    return buf.getvalue()


def sqlite_file(url: str) -> Path | None:
    """The database file of a `sqlite:///path` storage URL (None for other storages)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return None
    return Path(unquote(url[len(prefix):].split("?", 1)[0]))
