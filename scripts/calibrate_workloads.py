"""Fit the accuracy model to its calibration rows, cross-validate it, and write the data files.

    python scripts/calibrate_workloads.py          # fit, write dse/data/accuracy_model.toml,
                                                   # dse/data/accuracy_cv.json and the
                                                   # threshold table of docs/model.md
    python scripts/calibrate_workloads.py --check  # exit 1 if either is not current

Current: the refit predicts every row as accuracy_cv.json does within fit noise between
machines (dse.validation.current.noise_differences: 0.1 points, shares within two rows, the
parameters free to move along a flat direction), and accuracy_model.toml is what
accuracy_cv.json gives. A refit within that noise writes nothing.

Shared parameters (dse/validation/accuracy.py has the form and its grounds): the PRM's
good-step mean, its bad-step mean c0 + c_draft (1 - A_draft) + c_prm (1 - F1_prm), the error
nesting, and the in-chain rewrite error factor rho of each measured (draft, target) pair, fitted
to HeteroReason's Table III rsd and brsd rows and RSD's Table 2 main rows with a Qwen2.5-Math
target (32 numbers at threshold 0.7), with a penalty on Table III's PRM rejection above 0.28.
Every other published accuracy (RSD's threshold sweeps, tuned thresholds, other families) stays
out. Device parameters are never touched here. Every fit, each cross-validation fold's too,
runs from the three default starts: about fifteen minutes on one core.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dse.model.discrimination as discrimination
from dse.model.discrimination import DATA as MODEL_PATH
from dse.model.discrimination import SCHEMA_VERSION as MODEL_SCHEMA
from dse.paper.reproduce import reported
from dse.specs import Catalog
from dse.validation import accuracy as acc
from dse.validation.current import differences, largest_move, noise_differences

ROOT = Path(__file__).resolve().parents[1]
CV_PATH = ROOT / "dse" / "data" / "accuracy_cv.json"
MODEL_DOC = ROOT / "docs" / "model.md"


def sources(doc: Mapping[str, Any]) -> dict[str, str]:
    """What each shipped parameter rests on."""
    f = doc["fit"]
    common = (f"fitted by scripts/calibrate_workloads.py jointly with the other shared "
              f"accuracy parameters to {len(f['rows'])} published accuracies (HeteroReason "
              "Table III rsd/brsd; RSD arXiv:2501.19324 Table 2 Qwen2.5-Math rows), in-sample "
              f"median {f['median_abs_error']:.2f} / max {f['max_abs_error']:.2f} points; "
              "cross-validation in dse/data/accuracy_cv.json")
    out = {
        "kappa": f"assumption: {acc.KAPPA:g}, not identifiable (every calibration row is at "
                 "threshold 0.7, where only the score CDFs there matter); moves only other "
                 "thresholds (declared range prm-score-concentration in uncertainty.toml)",
        "good_mean": common, "bad_mean_c0": common,
        "bad_mean_draft": "per unit of the draft's solo error on the dataset; " + common,
        "bad_mean_prm": "per unit of the PRM's ProcessBench miss (1 - F1) on the dataset's "
                        "subset; " + common,
        "error_nesting": common,
        "calibration_threshold": "the accept threshold of every calibration row (Table III and "
                                 "RSD Table 2: 0.7)",
        "default_prm_f1": "assumption: the mean ProcessBench F1 of the catalog's three PRMs "
                          "per subset, for a PRM nobody published (its accuracy is then "
                          "extrapolated)",
    }
    names = {acc.TABLE3: "HeteroReason Table III", acc.RSD: "RSD Table 2"}
    for pair in f["parameters"]["in_chain_error_factor"]:
        rows = [r for r in f["rows"] if r["pair"] == pair]
        where = " and ".join(sorted({names[r["source"]] for r in rows}))
        out[f"in_chain_error_factor.{pair}"] = (
            f"{where}: {len(rows)} rows of this pair, fitted by scripts/calibrate_workloads.py "
            f"(the target's rewrite error inside this draft's chain); " + common)
    return out


def render(doc: Mapping[str, Any]) -> str:
    p = doc["fit"]["parameters"]
    lines = ["# The accuracy model's shared parameters (dse/model/discrimination.py, "
             "dse/model/workflow.py).",
             "# Written by scripts/calibrate_workloads.py; do not edit by hand.",
             f"schema_version = {MODEL_SCHEMA}", "", "[parameters]"]
    for k in ("kappa", "good_mean", "bad_mean_c0", "bad_mean_draft", "bad_mean_prm",
              "error_nesting", "calibration_threshold"):
        lines.append(f"{k} = {float(p[k])!r}")
    lines += ["", "[parameters.in_chain_error_factor]"]
    lines += [f'"{k}" = {float(v)!r}' for k, v in sorted(p["in_chain_error_factor"].items())]
    lines += ["", "[parameters.default_prm_f1]"]
    lines += [f"{k} = {float(v)!r}" for k, v in p["default_prm_f1"].items()]
    lines += ["", "[sources]"]
    lines += [f'"{k}" = "{v}"' for k, v in sources(doc).items()]
    return "\n".join(lines) + "\n"




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args()
    cat = Catalog.load()
    _, doc = acc.cross_validate(cat, reported(), None if args.quiet else
                                lambda s: print(s, file=sys.stderr, flush=True))
    f = doc["fit"]
    print(f"fit: {f['parameters']}; median {f['median_abs_error']:.2f}, max "
          f"{f['max_abs_error']:.2f} points")
    for k in acc.SCHEMES:
        print(f"{acc.NAMES[k]}: median {doc[k]['median_abs_error']:.2f}, max "
              f"{doc[k]['max_abs_error']:.2f} points over {doc[k]['n']} rows")
    # current: the refit predicts every row as accuracy_cv.json does up to fit noise between
    # machines (its parameters may move along a flat direction: noise_differences), and
    # accuracy_model.toml is what accuracy_cv.json gives
    try:
        shipped_cv = acc.load()
        moved = noise_differences(shipped_cv, doc)
        model_moved = differences(tomllib.loads(MODEL_PATH.read_text(encoding="utf-8")),
                                  tomllib.loads(render(shipped_cv)))
    except (OSError, ValueError, KeyError, tomllib.TOMLDecodeError):  # absent, older schema
        shipped_cv, moved, model_moved = None, ["the shipped files could not be read"], []
    current = not moved
    model_current = current and not model_moved
    if args.check:
        stale = not (current and model_current)
        for d in (moved + [f"accuracy_model.toml{d}" for d in model_moved])[:12]:
            print(f"  moved: {d}")
        drift = differences(shipped_cv["fit"]["parameters"], doc["fit"]["parameters"]) if (
            shipped_cv is not None and not stale) else []
        if drift:
            size, where = largest_move(shipped_cv, doc)
            print(f"  within fit noise: {len(drift)} parameters moved along flat directions "
                  f"(e.g. {drift[0]}); no other number moved by more than {size:.3g} "
                  f"({where or 'none'})")
        print("stale" if stale else "current")
        return 1 if stale else 0
    if not current:  # a refit within fit noise leaves both files as they are
        CV_PATH.write_text(acc.dumps(doc), encoding="utf-8")
        MODEL_PATH.write_text(render(doc), encoding="utf-8")
    elif not model_current and shipped_cv is not None:
        MODEL_PATH.write_text(render(shipped_cv), encoding="utf-8")
    # the threshold table of docs/model.md, from the shipped (just written) parameters
    discrimination.shipped.cache_clear()
    discrimination.shipped_sources.cache_clear()
    old = MODEL_DOC.read_text(encoding="utf-8")
    new = acc.splice_curves(old, acc.threshold_curves(cat, acc.load()))
    if new != old:
        MODEL_DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
