"""How far the coarse quadrature's interval ends sit from the full grid's on random designs.

`python scripts/check_coarse_grid.py N SEED0`: draws N designs with the fuzz suite's
`random_design_case` (seeds SEED0 .. SEED0+N-1), keeps the feasible speculative ones and prints,
for the worst twelve, each one's largest end move between `evaluate_at(..., grid="coarse")` and
`grid="full"` over its interval's width, then the median and the counts over 3% and 5% (the bound
tests/test_closed_form_batch.py holds; docs/uncertainty.md quotes the figures).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dse.specs import Catalog
from tests.fuzzing import build_case, feasible, random_design_case
from tests.test_closed_form_batch import _grid_gap


def main(n: int, seed0: int) -> None:
    cat = Catalog.load()
    t0 = time.perf_counter()
    rows = []
    for seed in range(seed0, seed0 + n):
        case = random_design_case(cat, random.Random(seed))
        d = build_case(cat, case)
        if not feasible(d) or not d.is_speculative:
            continue
        gap = _grid_gap(d, cat.get("workload", case.workload))
        metric, worst = max(gap.items(), key=lambda kv: kv[1]) if gap else ("-", 0.0)
        rows.append((worst, metric, seed, case.describe()))
    rows.sort(reverse=True)
    for worst, metric, seed, what in rows[:12]:
        print(f"{worst:.4f} {metric} seed={seed} {what}")
    if rows:
        print(f"median {statistics.median(r[0] for r in rows):.5f}")
    print(f"{len(rows)} designs in {time.perf_counter() - t0:.0f} s; over 5%: "
          f"{sum(r[0] > 0.05 for r in rows)}, over 3%: {sum(r[0] > 0.03 for r in rows)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300, int(sys.argv[2]) if len(sys.argv) > 2
         else 1000)
