"""The package's own data files (published measurements, fitted parameters, CV files) and the
one reader of the fitted-parameter files the scripts write."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any


def versioned_toml(path: Path, schema_version: int) -> dict[str, Any]:
    """A parameter file the calibration scripts write, refused unless of `schema_version`."""
    with path.open("rb") as f:
        doc = tomllib.load(f)
    if doc.get("schema_version") != schema_version:
        raise ValueError(f"{path}: schema_version {doc.get('schema_version')!r}, expected "
                         f"{schema_version}")
    return doc


def sources_of(path: Path) -> Mapping[str, str]:
    """What each parameter of such a file rests on (its [sources] table)."""
    with path.open("rb") as f:
        return MappingProxyType({str(k): str(v)
                                 for k, v in tomllib.load(f).get("sources", {}).items()})
