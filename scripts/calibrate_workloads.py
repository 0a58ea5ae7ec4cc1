"""Fit each workload's PRM score distributions to the paper's config1 rows, and write them.

    python scripts/calibrate_workloads.py          # fit, write into scenarios/workloads/*.toml
    python scripts/calibrate_workloads.py --check  # exit 1 if the files are not current

Per dataset, three parameters: the mean PRM score of good steps (mu_g), of bad steps (mu_b), and
how nested the two models' step errors are (error_nesting, weakly pulled towards 1, fully
nested). Both score distributions are Beta(mu kappa, (1 - mu) kappa) with one concentration
KAPPA, an assumption: every number fitted to is taken at one threshold (0.7), where accuracy and
rejection depend on the two distributions only through their CDFs at 0.7, so the concentration
is not identifiable from them (with kappa free the fit had a line of exact solutions and landed
anywhere on it: kappa 6.5 to 28 across datasets). Fitted to:
- Table III config1 rsd and brsd accuracy (0.5B draft, 7B PRM, 7B target, thresholds 0.7);
- the PRM rejection probability "typically below 30%" (a penalty above 0.28).
Everything else the paper reports (config2, speed-ups, energy, stalls, ...) stays a prediction.
Device parameters are never touched here.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from dse.design import build_design
from dse.design_files import load_system
from dse.engine.closed_form import accuracy_only
from dse.reproduce import reported
from dse.schedules import PRESETS
from dse.specs import Catalog
from dse.workflow import step_probabilities

ROOT = Path(__file__).resolve().parents[1]
REJECTION_CAP = 0.28
KEYS = ("prm_good_alpha", "prm_good_beta", "prm_bad_alpha", "prm_bad_beta", "error_nesting")
NESTING_PULL = 0.3  # points of accuracy error per unit of nesting below 1: prefer nested errors
# assumption: not identifiable from the config1 data (see above), chosen before any prediction was
# looked at: 8 puts a class's scores within about +-0.12 (one standard deviation) of a mean near
# 0.85. The config1 rows are matched for any kappa (4 and 16 tried); it moves only predictions at
# other thresholds.
KAPPA = 8.0
STARTS = ([0.8, 0.4, 0.9], [0.9, 0.6, 0.5], [0.95, 0.2, 0.2])


def betas(x: np.ndarray) -> dict[str, float]:
    mu_g, mu_b, nesting = x
    kappa = KAPPA
    return {"prm_good_alpha": mu_g * kappa, "prm_good_beta": (1 - mu_g) * kappa,
            "prm_bad_alpha": mu_b * kappa, "prm_bad_beta": (1 - mu_b) * kappa,
            "error_nesting": nesting}


def fit(cat: Catalog, dataset: str) -> tuple[dict[str, float], dict[str, float]]:
    rep = reported()["accuracy"]["config1"]
    system = load_system(cat, "paper-config1-3090")
    d_rsd = build_design(cat, system, PRESETS["rsd"])
    d_brsd = build_design(cat, system, PRESETS["brsd"])
    w0 = cat.get("workload", dataset)

    def residuals(x: np.ndarray) -> np.ndarray:
        w = replace(w0, **betas(x))
        pr = step_probabilities(w, d_rsd.draft.model.name, d_rsd.target.model.name,
                                d_rsd.accept_threshold, d_rsd.backtrack_threshold)
        rej = 1 - float(pr.p_accept)
        return np.array([
            accuracy_only(d_rsd, w) - rep["rsd"][dataset],
            accuracy_only(d_brsd, w) - rep["brsd"][dataset],
            10.0 * max(rej - REJECTION_CAP, 0.0) * 10,
            NESTING_PULL * (1.0 - x[2]),
        ])

    fits = [least_squares(residuals, x0=x0, bounds=([0.5, 0.02, 0.0], [0.999, 0.99, 1.0]),
                          max_nfev=300) for x0 in STARTS]
    best = min(fits, key=lambda r: r.cost)
    err = residuals(best.x)
    # well-posed: every start reaches the same parameters
    spread = float(max(np.abs(r.x - best.x).max() for r in fits))
    return betas(best.x), {"rsd_error_points": float(err[0]), "brsd_error_points": float(err[1]),
                           "start_spread": spread}


def write(path: Path, values: dict[str, float], errors: dict[str, float]) -> bool:
    text = path.read_text(encoding="utf-8")
    new = text
    for k, v in values.items():
        new = re.sub(rf"(?m)^{k} = .*$", f"{k} = {v:.6g}", new, count=1)
    src = ("fitted: scripts/calibrate_workloads.py, Beta(mu kappa, (1 - mu) kappa) for good and "
           f"bad steps, kappa = {KAPPA:g} (assumption: not identifiable at one threshold), "
           "(mu_g, mu_b, error_nesting) fitted to Table III config1 rsd and brsd accuracy "
           f"and PRM rejection <= {REJECTION_CAP} (residuals rsd "
           f"{errors['rsd_error_points']:+.2f}, brsd {errors['brsd_error_points']:+.2f} points)")
    for k in KEYS[:4]:
        new = re.sub(rf'(?m)^{k} = ".*"$', f'{k} = "{src}"', new, count=1)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    cat = Catalog.load()
    stale = False
    for ds in reported()["datasets"]:
        values, errors = fit(cat, ds)
        path = ROOT / "scenarios" / "workloads" / f"{ds}.toml"
        w = cat.get("workload", ds)
        current = {k: getattr(w, k) for k in KEYS}
        close = all(abs(current[k] - values[k]) <= 1e-3 * max(1.0, abs(values[k])) for k in KEYS)
        print(f"{ds}: " + ", ".join(f"{k}={v:.4g}" for k, v in values.items())
              + f"; residuals {errors}" + ("" if close else "  (changed)"))
        if args.check:
            stale |= not close
        else:
            write(path, values, errors)
    if args.check:
        print("stale" if stale else "current")
        return 1 if stale else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
