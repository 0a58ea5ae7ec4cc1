"""Search benchmarks (Search issue targets):

1. `dse sweep` throughput: designs evaluated per second on the default space (>= 1,000,000
   designs in < 10 s on a 2-core machine), for one, two and three objectives, with the
   constraints checked at the central values (confidence 0.5) and at the pessimistic end of
   the 90% interval (0.9, the default: each hardware choice's grid is evaluated once more per
   factor end that can move a constrained metric).
2. `dse optimize` quality: with at most 300 trials, the single-objective optimum is within 1%
   of the sweep's exact optimum on the default space (median over 5 seeds), per objective.

    python benchmarks/bench_search.py [--trials 300] [--seeds 5] [--objective j_per_token ...]
                                      [--skip-optimize]

Each optimize run uses a fresh embedded SQLite storage in a temporary directory (what a user
gets by default), so its time includes the storage.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from dse.search import load_space, optimize, sweep
from dse.specs import Catalog


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--objective", action="append")
    ap.add_argument("--skip-optimize", action="store_true")
    args = ap.parse_args()
    cat = Catalog.load()
    space = load_space(cat)
    sweep(cat, space, ["j_per_token"])  # warm-up: lambdify, model-pair tables
    print(f"default space: {space.path}")
    exact: dict[str, float] = {}
    for objs, conf in ((["j_per_token"], 0.5), (["j_per_token"], 0.9), (["latency"], 0.9),
                       (["cost"], 0.9), (["j_per_token", "latency"], 0.9),
                       (["j_per_token", "latency", "cost"], 0.9)):
        t = time.perf_counter()
        r = sweep(cat, space, objs, confidence=conf)
        dt = time.perf_counter() - t
        print(f"sweep {'+'.join(objs):24s} c={conf} {r.n_designs:>11,} designs in {dt:6.2f} s "
              f"= {r.n_designs / dt / 1e6:5.2f} M designs/s; {r.n_feasible:,} feasible; "
              f"front {len(r.pareto)}")
        if len(objs) == 1 and conf == 0.9:
            exact[objs[0]] = r.best[0].metrics[
                {"j_per_token": "j_per_token", "latency": "latency_s_per_problem",
                 "cost": "cost_usd_per_mtok"}[objs[0]]]
    if args.skip_optimize:
        return
    key = {"j_per_token": "j_per_token", "latency": "latency_s_per_problem",
           "cost": "cost_usd_per_mtok"}
    for obj in args.objective or ["j_per_token", "latency", "cost"]:
        gaps, secs = [], []
        for seed in range(args.seeds):
            with tempfile.TemporaryDirectory() as tmp:
                t = time.perf_counter()
                r = optimize(cat, space, [obj], trials=args.trials, seed=seed,
                             storage=f"sqlite:///{Path(tmp) / 'bench.db'}")
                secs.append(time.perf_counter() - t)
            got = r.best[0].metrics[key[obj]]
            gaps.append(100 * (got / exact[obj] - 1))
            print(f"optimize {obj} seed {seed}: {got:.5g} vs sweep {exact[obj]:.5g} "
                  f"(+{gaps[-1]:.2f}%) in {secs[-1]:.1f} s")
        med = statistics.median(gaps)
        print(f"optimize {obj}: median gap {med:.2f}% over {args.seeds} seeds at "
              f"{args.trials} trials ({'PASS' if med <= 1.0 else 'FAIL'} <= 1%); median "
              f"{statistics.median(secs):.1f} s per run")


if __name__ == "__main__":
    main()
