"""What happened to each published figure the tool shows beside its own value: its label.

- `fitted`: a fit read it (a least-squares row, or a value a fit solves for);
- `calibrated`: a constraint was built from it (a fit's penalty, a declared range);
- `copied`: a catalog input equals it, so the tool's value is the measurement itself;
- `predicted`: none of these.

Derived from what the fitting code reads, never from a flag written beside the data. Each fit
and constraint reads the published data through one reader, which the fit itself calls:
- the accuracy model: `accuracy.calibration_rows` (fitted) and `accuracy.rejection_cap`
  (calibrated), the two halves of `accuracy.fit_inputs`;
- the V80 draft's declared range: `declared.v80_comparable_ratio` (calibrated);
- FlexLLM's engine: `calibrate.flexllm_inputs` (fitted);
- the Jetson host factor: `calibrate.jetson_point` (fitted);
- the GPU serving profiles: `gpu_fit.fit_selection` (fitted: the points each profile's fit
  reads).
`fit_reads` calls each reader on a recording view of the data (`Recording`) and keeps the paths
of the values it read; `label` then names a figure by its path (its datum) among them. A copy is
found by value: a figure no fit read that the tool reproduces to 1e-9 (no prediction from
independent inputs lands that close).

A datum is a path into `published_root()`: a data file's name, then its keys and list indices
(`("measured.toml", "fpga_power", 0, "running_w")`); GPU points are `("gpu", measurement id)`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Label = Literal["fitted", "calibrated", "copied", "predicted"]
LABELS: tuple[Label, ...] = ("fitted", "calibrated", "copied", "predicted")
Path = tuple[Any, ...]
COPY_TOLERANCE = 1e-9  # relative: closer than any independent prediction lands

# Published figures the tool uses that no data file holds as a value (root key "quoted"):
# FlexLLM's A100 baseline, "about 40 tokens/s" (shared/DESIGN.md section 4), the rate its 1.64x
# is relative to; FlexLLM's projected V80 decode speed, 6.55x that baseline (arXiv 2601.15710,
# quoted in measured.toml's comment).
QUOTED_FIGURES = {"flexllm_baseline_tokens_per_s": 40.0,
                  "flexllm_v80_projected_decode_ratio": 6.55}


class Recording(Mapping[Any, Any]):
    """A read-only view of nested data (tables and lists) that records the path of every leaf
    value read through it into `log`."""

    def __init__(self, data: Mapping[Any, Any] | Sequence[Any], log: set[Path],
                 path: Path = ()) -> None:
        self._data = data
        self._log = log
        self._path = path

    def __getitem__(self, key: Any) -> Any:
        value = self._data[key]
        path = (*self._path, key)
        if isinstance(value, Mapping | list):
            return Recording(value, self._log, path)
        self._log.add(path)
        return value

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self._data, Mapping):
            return iter(self._data)
        return (self[i] for i in range(len(self._data)))  # a list: its values, recorded

    def __len__(self) -> int:
        return len(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.array(list(self), dtype=dtype)


def published_root() -> dict[str, Any]:
    """Every published figure a fit may read, by data file (and QUOTED_FIGURES)."""
    from dse.validation.calibrate import load_data

    return {"measured.toml": load_data("measured.toml"),
            "heteroreason_reported.toml": load_data("heteroreason_reported.toml"),
            "quoted": dict(QUOTED_FIGURES)}


@dataclass(frozen=True)
class Reads:
    """The paths each kind of use read."""

    fitted: frozenset[Path]
    calibrated: frozenset[Path]


def fit_reads(cat: Any, *, gpu: bool = True) -> Reads:
    """Run every fit's reader on a recording view of the published data (`cat`: a Catalog);
    gpu False: leave out the GPU profiles' points (they read no paper figure)."""
    from dse.validation import accuracy, calibrate, declared, gpu_fit
    from dse.validation.measurements import load_gpu_measurements

    fitted: set[Path] = set()
    calibrated: set[Path] = set()
    root = published_root()
    rep = "heteroreason_reported.toml"
    accuracy.calibration_rows(cat, Recording(root[rep], fitted, (rep,)))
    accuracy.rejection_cap(Recording(root[rep], calibrated, (rep,)))
    declared.v80_comparable_ratio(Recording(root[rep], calibrated, (rep,)))
    calibrate.flexllm_inputs(Recording(root, fitted))
    fitted.add(("gpu", calibrate.jetson_point(Recording(root, fitted)).id))
    if not gpu:
        return Reads(frozenset(fitted), frozenset(calibrated))
    pts, _ = load_gpu_measurements(cat.names("model"), cat.names("gpu"),
                                   cat.names("gpu-serving"))
    fitted |= {("gpu", m.id) for sel in gpu_fit.fit_selection(pts).values() for m in sel}
    return Reads(frozenset(fitted), frozenset(calibrated))


def _read_under(datum: Path, paths: frozenset[Path]) -> bool:
    """Some read path lies at or under the datum (a table a row's range comes from), or the
    datum lies under a read path."""
    n = len(datum)
    return any(p[:n] == datum or datum[:len(p)] == p for p in paths)


def label(datum: Path, reads: Reads, measured: float | None = None,
          tool: float | None = None) -> Label:
    """The figure's label: fitted or calibrated where a reader read it (fitted first), copied
    where the tool's value equals the measured one to COPY_TOLERANCE, else predicted."""
    if _read_under(datum, reads.fitted):
        return "fitted"
    if _read_under(datum, reads.calibrated):
        return "calibrated"
    if (measured is not None and tool is not None and measured != 0
            and abs(tool / measured - 1.0) <= COPY_TOLERANCE):
        return "copied"
    return "predicted"


def paper_datum(row_id: str, reported: Mapping[str, Any]) -> Path:
    """The reported figure a `dse reproduce` row stands beside: the longest prefix of its id
    (ids follow heteroreason_reported.toml's paths plus the setting) that is a key path of
    the file, e.g. `rejection_probability.config1.gsm8k` -> rejection_probability."""
    parts = row_id.split(".")
    node: Any = reported
    path: list[str] = []
    for p in parts:
        if not (isinstance(node, Mapping) and p in node):
            break
        node = node[p]
        path.append(p)
    if not path:
        raise ValueError(f"reproduce row {row_id!r} names no path of the reported numbers")
    return ("heteroreason_reported.toml", *path)
