"""Command-line latency: wall time of fresh `dse` processes as ratios to `python -c "import numpy"`.

    python benchmarks/bench_cli.py [--repeats 5]

Each command runs as a new process of this interpreter, exactly as the `dse` console script
starts (`from dse.cli import main`), so the import cost every user pays is in the figure. The
commands are run round-robin, `repeats` times each, and the median is taken, so that load from
other processes on the machine falls on all of them alike. Targets (Architecture issue, part 7):
`dse --help` and `dse catalog boards` <= 3x the numpy import, `dse evaluate` of one system under
its four schedules <= 6x. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from _timing import wall_s

DSE = "import sys; from dse.cli import main; sys.exit(main())"
CASES: tuple[tuple[str, list[str], float | None], ...] = (  # (label, argv, target ratio)
    ('python -c "import numpy"', ["-c", "import numpy"], None),
    ("dse --help", ["-c", DSE, "--help"], 3.0),
    ("dse catalog boards", ["-c", DSE, "catalog", "boards"], 3.0),
    ("dse evaluate --system paper-config1-u280 --scenario math500",
     ["-c", DSE, "evaluate", "--system", "paper-config1-u280", "--scenario", "math500"], 6.0),
)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5, help="runs per command (median)")
    args = ap.parse_args()
    for _, argv, _ in CASES:  # warm the OS file cache and the bytecode caches once
        wall_s(argv)
    times: dict[str, list[float]] = {label: [] for label, _, _ in CASES}
    for _ in range(args.repeats):
        for label, argv, _ in CASES:
            times[label].append(wall_s(argv))
    base = statistics.median(times[CASES[0][0]])
    width = max(len(label) for label, _, _ in CASES)
    missed = 0
    print(f"{'command':<{width}}  median s  ratio  target")
    for label, _, target in CASES:
        t = statistics.median(times[label])
        ratio = t / base
        verdict = "" if target is None else (
            f"<= {target:g}x  {'ok' if ratio <= target else 'MISSED'}")
        missed += target is not None and ratio > target
        print(f"{label:<{width}}  {t:8.3f}  {ratio:5.2f}  {verdict}")
    print(f"(median of {args.repeats} fresh processes each, run round-robin)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
