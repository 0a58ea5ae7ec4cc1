"""What the command modules share: the command record, the text table, argument types, the
workload option, output files and Optuna's log level."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dse.errors import DseError
from dse.specs import Catalog


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_args: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Catalog], tuple[Any, str]]  # (json payload, text)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table; floats in 4 significant digits."""

    def fmt(v: Any) -> str:
        if isinstance(v, float | np.floating):
            return f"{v:.4g}"
        if v is None:
            return "-"
        return str(v)

    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def nonneg_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v}")
    return v


def positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {s!r}")
    return v


def read_workload(cat: Catalog, name: str) -> Any:
    from pathlib import Path

    from dse.scenario import WorkloadSpec
    from dse.specs import load_spec

    if name.endswith(".toml") and Path(name).is_file():
        spec = load_spec(name)
        if not isinstance(spec, WorkloadSpec):
            raise DseError(f"{name}: kind: expected \"workload\"")
        return spec
    return cat.get("workload", name)


def write_file(path: str, text: str) -> None:
    """Write a user-named output file (--trace-out, --timeline-out, --markdown, --html)
    atomically. These options have no --force: as always, naming a file replaces it."""
    from dse.atomic import write_new

    write_new(path, text.encode("utf-8"), force=True)


def quiet_optuna() -> None:
    """Optuna logs every trial at INFO; the command prints its own progress and table."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
