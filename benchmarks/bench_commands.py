"""The long commands' wall time as ratios to `python -c "import numpy"` (issue 27, part 3).

    python benchmarks/bench_commands.py [--repeats 3] [--only sweep ...]

`dse sweep` spreads the hardware choices over one forked process per CPU; "sweep 0.9 1p" is
the same sweep in one process, for reference. Each command runs as a fresh process of this
interpreter (as the `dse` console script starts), round-robin with the numpy import, `repeats`
times, and the median is taken, so that load from other processes falls on all of them alike.
Targets: `dse sweep` of the default space at `--confidence 0.9` <= 1.5x the same sweep at 0.5
and <= 40x the numpy import; `dse optimize --objective j_per_token` (default 300 trials, a
fresh SQLite storage) <= 100x (and, for reference, the same study with `--storage memory`);
`dse reproduce` <= 100x. (`dse evaluate`: benchmarks/bench_cli.py.) Exit status 1 when a target is
missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from _timing import wall_s

DSE = "import sys; from dse.cli import main; sys.exit(main())"
NUMPY = 'python -c "import numpy"'
CASES: dict[str, list[str]] = {
    "sweep 0.5": ["sweep", "--objective", "j_per_token", "--confidence", "0.5"],
    "sweep 0.9": ["sweep", "--objective", "j_per_token", "--confidence", "0.9"],
    # the same sweep in one process (the command forks one worker per CPU): for reference
    "sweep 0.9 1p": ["sweep", "--objective", "j_per_token", "--confidence", "0.9",
                     "--processes", "1"],
    "optimize": ["optimize", "--objective", "j_per_token", "--storage", "{storage}"],
    # the same study kept in memory (no database): what the storage costs, for reference
    "optimize mem": ["optimize", "--objective", "j_per_token", "--storage", "memory"],
    "reproduce": ["reproduce"],
}
TARGETS = {"sweep 0.9": 40.0, "optimize": 100.0, "reproduce": 100.0}  # x the numpy import


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="runs per command (median)")
    ap.add_argument("--only", action="append", choices=list(CASES),
                    help="run only these commands (repeatable)")
    args = ap.parse_args()
    cases = {k: v for k, v in CASES.items() if not args.only or k in args.only}
    times: dict[str, list[float]] = {k: [] for k in [NUMPY, *cases]}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            times[NUMPY].append(wall_s(["-c", "import numpy"]))
            for label, argv in cases.items():
                storage = f"sqlite:///{Path(tmp) / f'bench-{i}.db'}"
                times[label].append(wall_s(["-c", DSE, *(a.format(storage=storage)
                                                         for a in argv)]))
                times[NUMPY].append(wall_s(["-c", "import numpy"]))
    base = statistics.median(times[NUMPY])
    med = {k: statistics.median(v) for k, v in times.items()}
    missed = 0
    print(f"{'command':<12}  median s  ratio  target")
    print(f"{'numpy':<12}  {base:8.3f}  {1.0:5.2f}")
    for label in cases:
        ratio = med[label] / base
        target = TARGETS.get(label)
        verdict = "" if target is None else (
            f"<= {target:g}x  {'ok' if ratio <= target else 'MISSED'}")
        missed += target is not None and ratio > target
        print(f"{label:<12}  {med[label]:8.2f}  {ratio:5.1f}  {verdict}")
    if "sweep 0.5" in med and "sweep 0.9" in med:
        r = med["sweep 0.9"] / med["sweep 0.5"]
        missed += r > 1.5
        print(f"sweep 0.9 / sweep 0.5: {r:.2f} (target <= 1.5: {'ok' if r <= 1.5 else 'MISSED'})")
    print(f"(median of {args.repeats} fresh processes each, round-robin with the numpy import)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
