"""Fit each published FPGA design's engine to its own measurements and write the fitted keys.

    python scripts/fit_fpga_engines.py                 # fit, write boards/engines/*.toml, print CV
    python scripts/fit_fpga_engines.py --check         # exit 1 if the engine files are not current

It also writes dse/data/fpga_cv.json, every design's cross-validated and predicted residuals,
which the intervals (dse.uncertainty) read.

Data: dse/data/published_fpga.toml; fits and leave-one-out CV: dse/validation/fpga.py. An engine
whose points name a board or model the catalog lacks is skipped for those points (listed);
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dse.specs import Catalog
from dse.validation import fpga as v

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ROOT / "boards" / "engines"
sys.path.insert(0, str(ROOT / "scripts"))
from calibrate_devices import set_keys  # noqa: E402  (the shared key writer)


def fit_all(extra: list[str], write: bool) -> bool:
    cat = Catalog.load(extra)
    data = v.load()
    pts = v.points(data)
    changed = False
    print(f"{'design':<14} {'n':>3} {'median':>8} {'worst':>8}  fitted / note")
    for name in v.fitted_engines(data):
        if name == "flexllm":
            continue  # dse.validation.calibrate owns it
        r = v.engine_report(cat, pts, name)
        if not r.fitted:
            print(f"{name:<14} skipped: no point the catalog can place ({', '.join(r.skipped)})")
            continue
        errs = [abs(x.rel_error) for x in r.in_sample if x.id.split(".")[2] == "fpga_decode"]
        stats = {"fit_rms_rel_error": float(sum(e * e for e in errs) / len(errs)) ** 0.5,
                 "fit_max_rel_error": max(errs)}
        path = ENGINES / f"{name}.toml"
        old = path.read_text(encoding="utf-8")
        new = set_keys(old, {**r.fitted, **stats}, path)
        changed |= new != old
        if write and new != old:
            path.write_text(new, encoding="utf-8")
        cv = r.cv
        med = "-" if cv.median_abs_rel_error is None else f"{cv.median_abs_rel_error:.1%}"
        worst = "-" if cv.worst_abs_rel_error is None else f"{cv.worst_abs_rel_error:.1%}"
        fitted = ", ".join(f"{k}={x:.4g}" for k, x in r.fitted.items())
        print(f"{name:<14} {cv.n:>3} {med:>8} {worst:>8}  {fitted}; {cv.note}")
        for x in [*r.loo, *r.prefill_loo]:
            print(f"    loo  {x.id:<44} measured {x.measured:>9.4g} predicted {x.predicted:>9.4g}"
                  f" {x.rel_error:+.1%}")
        for x in r.predictions:
            print(f"    pred {x.id:<44} measured {x.measured:>9.4g} predicted {x.predicted:>9.4g}"
                  f" {x.rel_error:+.1%}")
        if r.loso:
            print(f"    leave one source out ({r.loso_documents} documents fitted):")
        for x in r.loso:
            print(f"    loso {x.id:<44} measured {x.measured:>9.4g} predicted {x.predicted:>9.4g}"
                  f" {x.rel_error:+.1%}")
        for s in r.skipped:
            print(f"    skipped {s} (board or model not in the catalog)")
    cv_path = ROOT / "dse" / "data" / v.CV_FILE
    cv_text = v.cv_dumps(v.cv_residuals(cat))
    old_cv = cv_path.read_text(encoding="utf-8") if cv_path.exists() else ""
    changed |= cv_text != old_cv
    if write and cv_text != old_cv:
        cv_path.write_text(cv_text, encoding="utf-8")
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only report whether files are current")
    ap.add_argument("--extra-catalog", action="append", default=[], metavar="DIR",
                    help="an extra catalog directory (repeatable)")
    args = ap.parse_args()
    changed = fit_all(args.extra_catalog, write=not args.check)
    if args.check:
        print("stale" if changed else "current")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
