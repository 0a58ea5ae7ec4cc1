"""Fit the accuracy model to all of Table III, cross-validate it, and write the data files.

    python scripts/calibrate_workloads.py          # fit, write scenarios/workloads/*.toml and
                                                   # dse/data/accuracy_cv.json
    python scripts/calibrate_workloads.py --check  # exit 1 if either is not current

Six parameters shared by the four datasets (dse/validation/accuracy.py has the form and its
grounds): the PRM's good-step mean score mu_g, its bad-step mean mu_b = c0 + c1 (1 - A_draft),
the error nesting, and the in-chain rewrite error factor rho of each measured (draft, target)
pair, fitted to the 16 Table III rsd and brsd numbers (config1 and config2, 0.5B draft, 7B PRM,
thresholds 0.7) with a penalty on PRM rejection above 0.28. Each workload file receives its
Beta parameters (kappa fixed), the nesting and the rho table; accuracy_cv.json the fit and the
leave-one-config-out and leave-one-dataset-out predictions. The brsd_optimized rows and every
other number the paper reports stay predictions. Device parameters are never touched here.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dse.reproduce import reported
from dse.specs import Catalog
from dse.validation import accuracy as acc

ROOT = Path(__file__).resolve().parents[1]
CV_PATH = ROOT / "dse" / "data" / "accuracy_cv.json"
PRM_KEYS = ("prm_good_alpha", "prm_good_beta", "prm_bad_alpha", "prm_bad_beta")
CONFIG_OF_TARGET = {"qwen2.5-math-7b-instruct": "config1 (Math-7B target)",
                    "qwen2.5-math-1.5b-instruct": "config2 (Math-1.5B target)"}


def values_for(cat: Catalog, p: acc.Params, dataset: str) -> dict[str, Any]:
    w = acc.workload_with(cat.workload(dataset), p, acc.settings_draft(cat))
    return {**{k: getattr(w, k) for k in PRM_KEYS}, "error_nesting": w.error_nesting,
            "in_chain_error_factor": dict(p.in_chain_error_factor)}


def sources(p: acc.Params, doc: Mapping[str, Any]) -> dict[str, str]:
    f = doc["fit"]
    common = (f"jointly with the other shared accuracy parameters (dse/validation/accuracy.py: "
              f"6 parameters for 16 numbers, in-sample median {f['median_abs_error']:.2f} / max "
              f"{f['max_abs_error']:.2f} points; cross-validation in dse/data/accuracy_cv.json)")
    prm = ("fitted: scripts/calibrate_workloads.py, Beta(mu kappa, (1 - mu) kappa) for good and "
           f"bad steps, kappa = {acc.KAPPA:g} (assumption: not identifiable at one threshold), "
           "mu_g shared, mu_b = c0 + c1 (1 - this dataset's Qwen2.5-0.5B solo accuracy), fitted "
           "to Table III config1 and config2 rsd and brsd accuracy (all four datasets) and PRM "
           f"rejection <= {acc.REJECTION_CAP}, " + common)
    out = {k: prm for k in PRM_KEYS}
    out["error_nesting"] = "fitted: shared by the four datasets; see prm_good_alpha"
    for pair in p.in_chain_error_factor:
        draft, target = pair.split(" -> ")
        cfg = CONFIG_OF_TARGET.get(target, target)
        out[f"in_chain_error_factor.{pair}"] = (
            f"Table III {cfg} rsd/brsd after a {draft} draft, fitted by "
            f"scripts/calibrate_workloads.py; shared by the four datasets, " + common)
    return out


def render(text: str, values: Mapping[str, Any], srcs: Mapping[str, str]) -> str:
    """The workload file with the fitted values and their sources ([sources] is its last
    table; the rho table is placed just before it)."""
    new = text
    for k in (*PRM_KEYS, "error_nesting"):
        new = re.sub(rf"(?m)^{k} = .*$", f"{k} = {values[k]:.6g}", new, count=1)
    table = "[in_chain_error_factor]\n" + "".join(
        f'"{pair}" = {v:.6g}\n' for pair, v in sorted(values["in_chain_error_factor"].items()))
    new = re.sub(r"(?ms)^\[in_chain_error_factor\]\n.*?(?=^\[)", "", new)
    new = new.replace("\n[sources]\n", f"\n{table}\n[sources]\n", 1)
    for k in srcs:
        new = re.sub(rf'(?m)^"?{re.escape(k)}"? = ".*"\n', "", new)
    new = new.rstrip("\n") + "\n" + "".join(f'{_key(k)} = "{v}"\n' for k, v in srcs.items())
    return re.sub(r"\n\n\n+", "\n\n", new)


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else f'"{k}"'


def close(a: Any, b: Any) -> bool:
    """Equal up to the optimiser's noise (1e-3 relative, or absolute below 1)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float | int) and isinstance(b, float | int):
        return abs(a - b) <= 1e-3 * max(1.0, abs(a), abs(b))
    return bool(a == b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    cat = Catalog.load()
    rep = reported()
    p, doc = acc.cross_validate(cat, rep)
    srcs = sources(p, doc)
    print(f"fit: {p}; median {doc['fit']['median_abs_error']:.2f}, max "
          f"{doc['fit']['max_abs_error']:.2f} points; LOCO median "
          f"{doc['leave_one_config_out']['median_abs_error']:.2f}, LODO median "
          f"{doc['leave_one_dataset_out']['median_abs_error']:.2f}")
    stale = False
    for ds in rep["datasets"]:
        path = ROOT / "scenarios" / "workloads" / f"{ds}.toml"
        w = cat.workload(ds)
        values = values_for(cat, p, ds)
        current = {k: getattr(w, k) for k in (*PRM_KEYS, "error_nesting")}
        current["in_chain_error_factor"] = dict(w.in_chain_error_factor or {})
        same = close(current, values)
        print(f"{ds}: " + ", ".join(f"{k}={v}" for k, v in values.items())
              + ("" if same else "  (changed)"))
        if args.check:
            stale |= not same
        else:
            text = path.read_text(encoding="utf-8")
            new = render(text, values, srcs)
            if new != text:
                path.write_text(new, encoding="utf-8")
    old = acc.load() if CV_PATH.exists() else None
    if args.check:
        stale |= old is None or not close(old, doc)
        print("stale" if stale else "current")
        return 1 if stale else 0
    if old is None or not close(old, doc):
        CV_PATH.write_text(acc.dumps(doc), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
