"""Write dse/model/mean_value_forms.py from the schedule rules
(dse.model.symbolic.generated_source).

    python scripts/generate_mean_value_forms.py [--check]

Run it after changing dse/model/schedules/rules.py or dse/symbolic.step_expressions; --check exits 1
(and writes nothing) when the file is not current. tests/test_symbolic.py runs the check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dse.model.symbolic import generated_source

TARGET = Path(__file__).resolve().parent.parent / "dse" / "model" / "mean_value_forms.py"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check that the file is current")
    a = p.parse_args()
    text = generated_source()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    if a.check:
        print(f"{TARGET.name}: {'current' if text == current else 'STALE (regenerate it)'}")
        return 0 if text == current else 1
    if text != current:
        TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}" if text != current else f"{TARGET.name}: already current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
