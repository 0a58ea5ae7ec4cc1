"""Judge the shipped accuracy model on the published RSD rows no fit used, and write the result.

    python scripts/validate_accuracy.py          # write dse/data/accuracy_held_out.json
    python scripts/validate_accuracy.py --check  # exit 1 if it is not what the model gives

Run it after scripts/calibrate_workloads.py (and calibrate_target_judge.py): it predicts each
held-out row with the shipped parameters and their 90% intervals, which rest on the shipped
cross-validation. Nothing here feeds a fit. Rows, usability and the prediction path:
dse/validation/accuracy_held_out.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dse.specs import Catalog
from dse.validation import accuracy_held_out as held
from dse.validation.current import close

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "dse" / "data" / held.FILE


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    doc = held.document(Catalog.load())
    s = doc["summary"]
    print(f"held-out RSD rows: {s['n']} ({len(doc['skipped'])} skipped); within 3 points "
          f"{s['within_3_points']:.0%}, inside the 90% interval {s['coverage_90']:.0%}, median "
          f"half-width {s['median_half_width']:.1f}, median / max error "
          f"{s['median_abs_error']:.2f} / {s['max_abs_error']:.2f} points")
    for g, v in doc["by_pair"].items():
        print(f"  {g}: {v['n']} rows, within 3 {v['within_3_points']:.0%}, covered "
              f"{v['coverage_90']:.0%}, median error {v['median_abs_error']:.1f}")
    try:
        current = close(held.load(), doc)
    except (OSError, ValueError, KeyError):
        current = False
    if args.check:
        print("current" if current else "stale")
        return 0 if current else 1
    if not current:
        OUT.write_text(held.dumps(doc), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
