"""The held-out guard's value check: every row the accuracy model's fit reads must equal the
source document's row it names, cell for cell.

dse/data/source_blocks.toml copies each table row of a source document that a fit reads, as the
document prints it: every column, the printed average, and a sha256 of the block's canonical
text (`block_text`), so that a value edited in either copy, or a held-out value put under a
fitted row's id, fails `problems` (tests/test_labels.py runs it by default, with the fit's own
rows from accuracy.calibration_rows).
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, Protocol

SCHEMA_VERSION = 1
# a printed average is cut to one decimal: rounded (RSD's 72.65 -> 72.7) or truncated (Table
# III's 58.875 -> 58.8), so it lies within 0.1 of the mean of its printed cells
AVERAGE_TOLERANCE = 0.1 + 1e-9


class FittedRow(Protocol):
    id: str
    dataset: str
    measured: float


def load() -> dict[str, Any]:
    text = resources.files("dse.data").joinpath("source_blocks.toml").read_text("utf-8")
    doc = tomllib.loads(text)
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"source_blocks.toml: schema_version {doc.get('schema_version')!r}")
    return doc


def block_text(block: Mapping[str, Any]) -> str:
    """The canonical text a block's checksum is taken over: id, each column=value, average."""
    cells = ";".join(f"{c}={float(v):g}" for c, v in zip(block["columns"], block["values"],
                                                         strict=True))
    return f"{block['id']}|{cells}|average={float(block['printed_average']):g}"


def checksum(block: Mapping[str, Any]) -> str:
    return hashlib.sha256(block_text(block).encode("utf-8")).hexdigest()


def block_of(row_id: str) -> str:
    """A fitted row's block: its id without the last (dataset) part."""
    return row_id.rsplit(".", 1)[0]


def problems(rows: Iterable[FittedRow], blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every way the fitted rows and the source blocks disagree (empty: they agree): a block's
    checksum, a block whose values do not give its printed average, a fitted row without a
    block or a cell, a fitted value that differs from its cell."""
    out: list[str] = []
    by_id = {b["id"]: b for b in blocks}
    if len(by_id) != len(blocks):
        out.append("source_blocks.toml: a block id repeats")
    for b in blocks:
        if checksum(b) != b["sha256"]:
            out.append(f"block {b['id']}: its values do not match its sha256")
        mean = sum(float(v) for v in b["values"]) / len(b["values"])
        if abs(mean - float(b["printed_average"])) > AVERAGE_TOLERANCE:
            out.append(f"block {b['id']}: values average {mean:.3f}, the source prints "
                       f"{b['printed_average']}")
    for r in rows:
        if block_of(r.id) not in by_id:
            out.append(f"fitted row {r.id}: no source block {block_of(r.id)}")
            continue
        cells = dict(zip(by_id[block_of(r.id)]["columns"], by_id[block_of(r.id)]["values"],
                         strict=True))
        if r.dataset not in cells:
            out.append(f"fitted row {r.id}: its block has no column {r.dataset}")
        elif float(cells[r.dataset]) != float(r.measured):
            out.append(f"fitted row {r.id}: {r.measured} fitted, the source prints "
                       f"{cells[r.dataset]}")
    return out
