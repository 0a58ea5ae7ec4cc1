"""Regenerate the golden reports: one closed-form report per shipped system x workload x schedule.

    python scripts/golden.py            # rewrite tests/golden/*.json
    python scripts/golden.py --check    # exit 1 if any report differs (same test as CI)

tests/test_golden.py compares every numeric field of every report to 1e-9 relative. A commit
that changes a golden file says why in its message.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dse  # noqa: E402
from tests.golden_reports import GOLDEN_DIR, SCHEMA_VERSION, compare, golden_reports  # noqa: E402


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    a = ap.parse_args()
    reports = golden_reports()
    if a.check:
        bad = 0
        for name, rep in reports.items():
            path = GOLDEN_DIR / f"{name}.json"
            if not path.is_file():
                print(f"{path}: missing")
                bad += 1
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
            diffs = compare({k: v for k, v in data.items() if k != "_meta"}, rep)
            if diffs:
                bad += 1
                print(f"{path}: " + "; ".join(diffs[:5]))
        print(f"{len(reports) - bad} of {len(reports)} golden reports unchanged")
        return 1 if bad else 0
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    meta = {"tool_version": dse.__version__, "commit": _commit(),
            "schema_version": SCHEMA_VERSION, "evaluator": "closed-form",
            "generated_by": "python scripts/golden.py"}
    for old in GOLDEN_DIR.glob("*.json"):
        if old.stem not in reports:
            old.unlink()
    for name, rep in reports.items():
        text = json.dumps({"_meta": meta, **rep}, indent=1, sort_keys=True) + "\n"
        (GOLDEN_DIR / f"{name}.json").write_text(text, encoding="utf-8")
    print(f"wrote {len(reports)} golden reports to {GOLDEN_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
