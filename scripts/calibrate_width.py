"""Fit the width model (dse/width/) to published best-of-N, voting and pass@N accuracies,
cross-validate it, predict the held-out rows, and write the data files.

    python scripts/calibrate_width.py          # fit, write dse/data/width_model.toml and
                                               # dse/data/width_cv.json
    python scripts/calibrate_width.py --check  # exit 1 if either is not what the fit gives

Both compare the refit with the shipped files as dse.validation.current.noise_differences
does: every prediction within 0.1 points, every share within two rows, the parameters free to
move along a flat direction of the least squares (another machine's BLAS kernels do move
them), and so may a fold's CV residuals where its left-out rows pin no parameter the fold fits
(each scheme's and each fold's median, max and share are compared); a refit within that noise
writes nothing.

Data: dse/data/width_published.toml (only fit-allowed [[row]]s are fitted; [[held_out]] rows
are predicted, never fitted). Rows, rules and skips: dse/validation/width_rows.py; the fit, the
cross-validation schemes and the intervals: dse/validation/width.py. Takes several minutes (a
refit from the default starts for every fold of five schemes).
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dse.specs import Catalog
from dse.validation import width, width_rows
from dse.validation.current import differences, largest_move, noise_differences
from dse.width.params import SCHEMA_VERSION, WidthParams, from_dict

REL = 1e-2  # the optimiser's noise over 70 refits: equal to 1e-2 relative (absolute below 1)
FREE = ("parameters", "residuals")  # compared by their keys alone (main: why)

ROOT = Path(__file__).resolve().parents[1]
MODEL_PATH = ROOT / "dse" / "data" / "width_model.toml"
CV_PATH = ROOT / "dse" / "data" / width.CV_FILE
FIT = "fitted: scripts/calibrate_width.py (dse/validation/width.py)"
HEADER = """\
# The width model's parameters (dse/width/params.py): problem difficulty (a Beta of per-problem
# solve rates per dataset), wrong-answer agreement, and how verifiers separate right from wrong
# responses. Fitted by scripts/calibrate_width.py to the fit-allowed rows of
# dse/data/width_published.toml; cross-validation and the held-out rows' predictions are in
# dse/data/width_cv.json. Generated: edit the script, not this file.
"""


def _toml_value(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(round(float(v), 6))


def _table(name: str, d: Mapping[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{_toml_value(k)} = {_toml_value(v)}\n"
                                   for k, v in d.items()) + "\n"


def sources(doc: Mapping[str, Any]) -> dict[str, str]:
    """What each parameter rests on, with the cross-validation it passed."""
    f = doc["fit"]
    cv = "; ".join(f"leave one {s} out {doc['cv'][s]['median_abs_error']:.1f} / "
                   f"{doc['cv'][s]['max_abs_error']:.1f}" for s in width.SCHEMES)
    rows = (f"the {f['n']} usable fit-allowed rows of dse/data/width_published.toml "
            "(arXiv:2501.07301 Tables 6, 11, 13; arXiv:2412.01981 Tables 1, 2, 5; Math-Shepherd "
            "Tables 1, 3; RLHFlow math-rm README), least squares on accuracy points")
    return {
        "rows": f"{FIT}: {rows}; in-sample median / max abs error {f['median_abs_error']:.2f} / "
        f"{f['max_abs_error']:.2f} points; cross-validation median / max (points): {cv}",
        "concentration": f"{FIT}: per dataset, pinned by pass@N, maj@N and best-of-N of the "
        "datasets' rows; MATH500 shares MATH's; an unseen dataset takes their geometric mean",
        "concentration_per_log_odds": f"{FIT}: one exponent for every dataset and policy "
        "(c = c_dataset ((1 - A) / A)^gamma), pinned by the three policies of 2412.01981 "
        "(9.6-63.2% solo on MATH500) against the Qwen2.5-Math rows",
        "agreement": f"{FIT}: per dataset (the answer format's), pinned by its maj@N and "
        "weighted rows; an unseen dataset takes their mean",
        "deception": f"{FIT}: one share for every verifier, pinned by best-of-N flattening with "
        "N (2412.01981: N 4, 16, 64; Math-Shepherd and RLHFlow: N 256, 1024)",
        "separation_intercept": f"{FIT}: with separation_per_f1, the line from a PRM's "
        "ProcessBench F1 (arXiv:2412.06559 Table 3 / 2501.07301 Table 7, on the subset matched "
        "to the dataset) to its separation; leave-one-verifier-out predicts each PRM from it",
        "separation_per_f1": f"{FIT}: see separation_intercept",
        "aggregation_factor": f"{FIT}: the separation of min / last / mean step-score "
        "aggregation relative to product (2501.07301 Table 13; RLHFlow's mean); unknown "
        "aggregation is taken as product",
        "verifier_separation": f"{FIT}: one separation per verifier without a published "
        "ProcessBench F1 (ORMs, LLM judges, the implicit PRMs of 2412.01981); an unseen one "
        "takes their median",
        "answer_chance": "not fitted: 1 / the answer options of a dataset whose every problem "
        "is multiple choice (dse/data/width_published.toml [[dataset]] answer_options with its "
        "source: MMLU STEM 4); free-form datasets 0",
        "steps": "step search's steps per problem: the shipped workloads' steps_mean (gsm8k 6, "
        "math500 7.4, gaokao2023en 7, olympiadbench 9.5), MATH500's elsewhere (assumption)",
    }


def render(p: WidthParams, doc: Mapping[str, Any]) -> str:
    d = p.to_dict()
    scalars = {k: v for k, v in d.items() if not isinstance(v, Mapping)}
    out = HEADER + f"schema_version = {SCHEMA_VERSION}\n\n[parameters]\n"
    out += "".join(f"{k} = {_toml_value(v)}\n" for k, v in scalars.items()) + "\n"
    for k, v in d.items():
        if isinstance(v, Mapping):
            out += _table(f"parameters.{k}", v)
    return out + _table("sources", sources(doc))


def run() -> tuple[WidthParams, dict[str, Any]]:
    cat = Catalog.load()
    steps = {n: float(cat.workload(n).steps_mean) for n in cat.names("workload")}
    fit_rows, held, skipped = width_rows.build(steps)
    p, sse = width.fit(fit_rows)
    pred = width.predict(fit_rows, p)
    err = pred - np.array([r.accuracy_pct for r in fit_rows])
    cv = {}
    for scheme in width.SCHEMES:
        cv[scheme] = width.cross_validate(fit_rows, scheme)
        print(f"  leave one {scheme} out: {cv[scheme]['median_abs_error']:.2f} / "
              f"{cv[scheme]['max_abs_error']:.2f} points", file=sys.stderr)
    h = width.model_half_width(fit_rows, cv, {r.id: float(x)
                                              for r, x in zip(fit_rows, pred, strict=True)})
    judged = width.judge(held, p, h)
    doc = {"schema_version": width.SCHEMA_VERSION, "generated_by": width.GENERATED_BY,
           "parameters": p.to_dict(),
           "fit": {"sum_of_squares": sse, **width.summary(err),
                   "rows": {r.id: round(float(x), 3)
                            for r, x in zip(fit_rows, pred, strict=True)}},
           "cv": cv, "held_out": judged, "skipped": skipped}
    return p, doc




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="only report whether the two files are what the fit gives")
    args = ap.parse_args()
    p, doc = run()
    new_toml = render(p, doc)
    new_json = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    old_toml = MODEL_PATH.read_text(encoding="utf-8") if MODEL_PATH.exists() else ""
    old_json = json.loads(CV_PATH.read_text(encoding="utf-8")) if CV_PATH.exists() else None
    old_p = from_dict(tomllib.loads(old_toml)["parameters"]).to_dict() if old_toml else {}
    refit = json.loads(new_json)
    # current: the shipped files agree with each other, and the refit predicts every row as
    # they do up to fit noise between machines (dse.validation.current.noise_differences: the
    # parameters may move along a flat direction of the least squares)
    moved = ([f"width_model.toml{d}" for d in differences(old_p, (old_json or {}).get(
        "parameters", {}), REL)] if old_json else ["width_cv.json: absent"])
    moved += noise_differences({"parameters": old_p}, {"parameters": p.to_dict()})  # keys
    # a fold's left-out rows (a whole policy, source or N) may pin no parameter the fold fits:
    # their CV residuals move along its flat direction (up to 0.75 points under OpenBLAS's
    # Haswell kernels, every fold summary within 0.04 points); the summaries and every fold's
    # median, max and share are compared, the residuals one by one are not
    moved += noise_differences(old_json or {}, refit, free=FREE)
    h = doc["held_out"]["new"]
    print(f"held out (rows not repeating a fit row): {h['n']} rows, within 3 points "
          f"{h['within_3_points']:.0%}, inside the 90% interval {h['coverage_90']:.0%}, "
          f"median half-width {h['median_half_width']:.1f} points")
    if args.check:
        print("stale" if moved or not old_toml else "current")
        for d in moved[:12]:
            print(f"  moved: {d}")
        if not moved and old_json is not None:
            drift = differences(old_p, p.to_dict(), REL)
            size, where = largest_move(old_json, refit, free=FREE)
            if drift:
                print(f"  within fit noise: {len(drift)} parameters moved along flat directions "
                      f"(e.g. {drift[0]}); no other number moved by more than {size:.3g} "
                      f"({where or 'none'})")
        return 1 if moved or not old_toml else 0
    if moved or not old_toml:  # a refit within fit noise leaves both files as they are
        MODEL_PATH.write_text(new_toml, encoding="utf-8")
        CV_PATH.write_text(new_json, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
