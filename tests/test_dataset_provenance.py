"""A workload whose dataset the difficulty model was never fitted on (a new dataset, or a
misspelt name) runs on the default concentration: its speculative accuracy is extrapolated and
says why, first; the shipped datasets stay as they were."""

from __future__ import annotations

from dataclasses import replace

import dse
from dse.uncertainty.factors import design_factors


def _accuracy_factor(w):
    d = dse.load_design("paper-config1-u280")
    (f,) = [f for f in design_factors(d, w) if f.quantity == "accuracy"]
    return f


def test_an_unknown_dataset_is_extrapolated_and_named() -> None:
    w = dse.load_workload("math500")
    shipped = _accuracy_factor(w)
    assert shipped.status == "calibrated" and "difficulty model" not in shipped.basis
    f = _accuracy_factor(replace(w, dataset="math5OO"))
    assert f.status == "extrapolated"
    assert f.basis.startswith("dataset 'math5OO' is none the difficulty model was fitted on")
    assert "math" in f.basis and "default concentration" in f.basis
