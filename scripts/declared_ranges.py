"""The arithmetic behind the declared ranges of dse/data/uncertainty.toml that are computed.

    python scripts/declared_ranges.py

v80-draft: the V80 draft's time factor at which the model's heteroreason on the V80 is as fast,
relative to the strong GPU baseline, as the paper says ("comparable": the midpoint of its
speedup_vs_brsd_stepahead.v80 range), for each config x dataset; the declared range's high end is
their median (dse/validation/declared.py has the reasoning).
"""

from __future__ import annotations

import statistics
import sys

from dse.paper.reproduce import reported
from dse.specs import Catalog
from dse.validation.declared import v80_implied_factors


def main() -> int:
    f = v80_implied_factors(Catalog.load(), reported())
    for k, v in f.items():
        print(f"v80 draft x{v:.4f}: heteroreason latency = brsd_stepahead on 3 RTX 3090 ({k})")
    vals = list(f.values())
    print(f"range {min(vals):.2f}-{max(vals):.2f}, median {statistics.median(vals):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
