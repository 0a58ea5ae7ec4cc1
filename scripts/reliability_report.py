"""Run the hardening campaigns with fixed seeds and write docs/reliability.md.

    python scripts/reliability_report.py [--out docs/reliability.md] [--scale 1.0]

Campaigns (generators in tests/fuzzing.py, fault injection in tests/faults.py):
- random well-formed designs through `dse.engine.closed_form.evaluate` and the report invariants;
- malformed catalog files through the CLI (one error line naming the file, exit 2 or 3);
- random command lines through the CLI (usage error exit 2 or one clean line);
- hostile and extreme inputs by class (huge integers, wrong structures, deep nesting, caps,
  out-of-range trace values, round trips, outputs over inputs, extreme valid knobs, special
  and oversized input files, unusable output paths, `dse compare` settings, options twice);
- hostile arguments of every public function of the Python API, by class (tests/hostile_api.py);
- SIGKILL of `dse optimize` on SQLite (and PostgreSQL when DSE_TEST_POSTGRES_URL is set);
- SIGKILL of `dse export`, and two exports racing for one directory;
- SIGINT and SIGTERM to `dse export` and `dse sweep --out` (one line, exit 130/143, outputs
  whole or absent).
Each row counts inputs tried, faults injected, crashes (tracebacks or violated invariants) and
data lost (completed trials or bundle files). `--scale` multiplies the input counts.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dse import __version__  # noqa: E402
from dse.engine.evaluate import evaluate  # noqa: E402
from dse.model.schedules import PRESETS  # noqa: E402
from dse.specs import Catalog  # noqa: E402
from tests.faults import (  # noqa: E402
    export_kill_campaign,
    export_race,
    optimize_kill_campaign,
    optimize_workers_campaign,
    signal_campaign,
)
from tests.fuzzing import (  # noqa: E402
    TWIN_RTOL,
    build_case,
    catalog_argv,
    catalog_verdict,
    feasible,
    fresh_dir,
    mutate_catalog,
    one_error_line,
    random_argv,
    random_design_case,
    report_violations,
    run_cli,
    run_random_argv,
    write_small_space,
)
from tests.hostile import hostile_case, run_case, verdict  # noqa: E402

SEED = 8


def designs(n: int) -> dict:
    cat = Catalog.load()
    rng = random.Random(SEED)
    by = Counter()
    crashes: list[str] = []
    for _ in range(n):
        case = random_design_case(cat, rng)
        try:
            d = build_case(cat, case)
            if not feasible(d):
                by["infeasible (refused, with reasons)"] += 1
                continue
            w = cat.get("workload", case.workload)
            r = evaluate(d, w)
            bad = report_violations(d, w, r)
            if d.schedule.step_ahead:
                seq = evaluate(build_case(cat, case, step_ahead=False), w)
                if r.latency_s_per_problem > seq.latency_s_per_problem * (1 + TWIN_RTOL):
                    bad.append("step-ahead slower than its sequential twin")
        except Exception as e:  # a crash is what the campaign counts
            bad = [f"{type(e).__name__}: {e}"]
        if bad:
            crashes.append(f"{case.describe()}: {bad[0]}")
        sched = case.schedule.name if case.schedule.name in PRESETS else "custom flags"
        by[f"feasible, {sched}"] += not bad
    return {"name": "random designs (evaluate + invariants)", "inputs": n, "faults": 0,
            "crashes": len(crashes), "lost": 0, "by": by, "details": crashes}


def catalogs(n: int, tmp: Path) -> dict:
    rng = random.Random(SEED)
    by = Counter()
    crashes: list[str] = []
    for _ in range(n):
        d = fresh_dir(tmp / "catalog")
        m = mutate_catalog(rng, d)
        bad, kind = catalog_verdict(m, run_cli(catalog_argv(m, d)))
        by[kind] += bad is None
        if bad is not None:
            crashes.append(f"{m}: {bad}")
    return {"name": "malformed catalogs (CLI)", "inputs": n, "faults": 0,
            "crashes": len(crashes), "lost": 0, "by": by, "details": crashes}


def argvs(n: int, tmp: Path) -> dict:
    rng = random.Random(SEED)
    by = Counter()
    crashes: list[str] = []
    for _ in range(n):
        argv = random_argv(rng)
        res = run_random_argv(argv, fresh_dir(tmp / "cwd"))
        if res is None:
            by["parsed (long-running command, not run)"] += 1
            continue
        lines = res.err.strip().splitlines()
        ok = not res.traceback and res.rc in (0, 1, 2, 3, 4)
        if ok and res.rc not in (0, 2):
            ok = one_error_line(res) is not None
        if ok and res.rc != 0:
            ok = bool(lines) and lines[-1].startswith("dse")
        by[f"exit {res.rc}"] += ok
        if not ok:
            crashes.append(f"{argv}: exit {res.rc}: {res.err.strip()[-200:]}")
    return {"name": "random command lines (CLI)", "inputs": n, "faults": 0,
            "crashes": len(crashes), "lost": 0, "by": by, "details": crashes}


def hostile(n: int, tmp: Path) -> dict:
    """Hostile and extreme inputs, by class (tests/hostile.py)."""
    rng = random.Random(SEED)
    by = Counter()
    crashes: list[str] = []
    for _ in range(n):
        d = fresh_dir(tmp / "hostile")
        case = hostile_case(rng, d)
        why = verdict(case, run_case(case, d), d)
        by[case.cls] += why is None
        if why is not None:
            crashes.append(f"{case.cls} [{case.detail}]: {why}")
    return {"name": "hostile inputs (CLI, by class)", "inputs": n, "faults": 0,
            "crashes": len(crashes), "lost": 0, "by": by, "details": crashes}


def api_arguments() -> dict:
    """Hostile arguments of every public function of the Python API, by class
    (tests/hostile_api.py), with the compute functions replaced (nothing slow runs)."""
    from tests.hostile_api import CASES, no_compute
    from tests.hostile_api import verdict as api_verdict

    by = Counter()
    crashes: list[str] = []
    with no_compute():
        for fn, name, cls, value in CASES:
            why = api_verdict(fn, name, value)
            by[cls] += why is None
            if why is not None:
                crashes.append(f"{fn}({name}=) [{cls}]: {why}")
    return {"name": "hostile arguments (Python API, by class)", "inputs": len(CASES),
            "faults": 0, "crashes": len(crashes), "lost": 0, "by": by, "details": crashes}


def faults(tmp: Path, kills: int) -> list[dict]:
    rows = []
    space = write_small_space(tmp / "small.toml")
    urls = [f"sqlite:///{tmp / 's.db'}"]
    if os.environ.get("DSE_TEST_POSTGRES_URL"):
        urls.append(os.environ["DSE_TEST_POSTGRES_URL"])
    for i, url in enumerate(urls):
        c = optimize_kill_campaign(url, space, tmp, random.Random(SEED + i), kills=kills,
                                   prefix=f"report-{int(time.time())}-{i}")
        rows.append(_fault_row(c, {"SIGKILL during a run": c.kills,
                                   "runs that finished by themselves": c.finished,
                                   "studies completed with exactly N trials":
                                       c.studies_completed,
                                   "completed trials checked after restarts": c.trials_checked}))
    for url in urls:
        c = optimize_workers_campaign(url, space, tmp, prefix=f"workers-{int(time.time())}")
        rows.append(_fault_row(c, {"rounds of 3 workers on one study": c.runs // 3,
                                   "rounds with exactly --trials, reports adding up":
                                       c.studies_completed}))
    if len(urls) == 1:
        rows.append({"name": "optimize kill (postgresql)", "inputs": 0, "faults": 0,
                     "crashes": 0, "lost": 0, "by": Counter(
                         {"not run: DSE_TEST_POSTGRES_URL unset (.ci/run sets it)": 1}),
                     "details": []})
    c = export_kill_campaign(fresh_dir(tmp / "export"), random.Random(SEED), kills=4)
    rows.append(_fault_row(c, {"SIGKILL during a run": c.kills,
                               "runs that finished first": c.finished,
                               "partial bundles left": c.partial}))
    c = signal_campaign(fresh_dir(tmp / "signals"), space, random.Random(SEED), signals=12)
    rows.append(_fault_row(c, {"SIGINT or SIGTERM during a run": c.kills,
                               "runs that finished first": c.finished,
                               "partial bundles or mixed file sets left": c.partial}))
    c = export_race(fresh_dir(tmp / "race"), rounds=2)
    rows.append(_fault_row(c, {"racing pairs, one bundle + one clean error": c.runs // 2
                               - len(c.problems)}))
    return rows


def _fault_row(c, by: dict) -> dict:
    return {"name": c.name, "inputs": c.runs, "faults": c.kills, "crashes": len(c.problems),
            "lost": c.lost + c.duplicated + c.partial, "by": Counter(by),
            "details": c.problems}


EDGE_CASES = [
    ("accept_threshold 0", "p_accept 1, no target call, draft-only accuracy"),
    ("accept_threshold 1", "p_accept 0, every step rewritten, target-only accuracy, no "
                           "backtrack"),
    ("backtrack_threshold 0 / 1", "no backtrack / backtracks up to max_backtracks, latency "
                                  "grows"),
    ("threshold outside [0, 1], NaN, inf", "exit 3, names the key"),
    ("zero steps (steps_mean 0)", "exit 3: `steps_mean: must be >= 1`"),
    ("one-step problems (steps_mean 1, cv 0)", "one attempt per problem, no backtrack"),
    ("one-token steps", "evaluates; committed tokens = steps"),
    ("cv above 100 (e.g. 1e308)", "exit 3: `must be <= 100` (it used to give NaN metrics)"),
    ("context beyond a model's max positions", "exit 4, `<role>: context N beyond <model> max "
                                               "positions M`"),
    ("a model that does not fit", "exit 4, `target: <model> needs X GB per GPU ... but <gpu> "
                                  "offers Y GB usable`"),
    ("an unknown name in a system or --set", "exit 2, names the file and key, lists the valid "
                                             "names"),
    ("a NaN or inf metric", "exit 1, `the model gives <metric> = nan`; never printed as nan"),
    ("an empty list in a space file", "exit 3, `<file>: <table>.<key>: expected a non-empty "
                                      "list`"),
    ("constraints that exclude every design", "exit 4, `no feasible design among N ...; relax "
                                              "the constraints`; --out not written"),
    ("a study that does not exist", "exit 2, `unknown study 'nope'; valid: ...`; `dse studies` "
                                    "on a missing storage lists none and creates nothing"),
    ("a trial that does not exist", "exit 2, `--trial N: no completed trial ...`"),
    ("/dev/zero, /dev/urandom, a directory, a socket or a named FIFO as an input file",
     "exit 3, `<path>: is a device, not a regular file` (a FIFO: refused before opening it)"),
    ("an input file over the cap (4 MiB; a trace 512 MiB)", "exit 3, `<path>: larger than "
     "N bytes, the cap on input files`"),
    ("a design from a pipe, `--design <(cat d.toml)` or `/dev/stdin`", "read once; evaluates"),
    ("an output path under a regular file, a directory that takes no files, /dev/null",
     "exit 2 naming the flag, before any computing"),
    ("Ctrl-C / SIGTERM during any command", "exit 130 / 143, `dse <cmd>: interrupted "
     "(Ctrl-C); nothing more was written`"),
    ("stdout closed (`>&-`) / full (`>/dev/full`)", "exit 2 before computing / exit 1, one "
     "line"),
    ("`dse evaluate --system A --system B`", "exit 2, points to `dse compare A B`"),
    ("no feasible trial in `dse optimize` (e.g. `--min-accuracy 100`)",
     "exit 4, `no feasible design in N trials: every trial was below --min-accuracy 100 ...` "
     "(N: the trials that ran); no Optuna warning"),
    ("a directory (or a link to one) named `x.toml` inside a `--catalog` directory",
     "exit 3, `<path>: is a directory, not a file`"),
    ("Ctrl-C / SIGTERM while a temporary is created or removed", "held back until it is done: "
     "no temporary left beside the output"),
    ("a full disk while `--out` or a new SQLite `--storage` is written", "exit 1, one line "
     "naming the file; a directory or SQLite file the command created is removed again"),
    ("`--force` over an earlier search result", "the earlier set's files the new set does not "
     "write are removed with it (e.g. `trials.csv`); files dse did not write are kept"),
    ("stderr closed (`2>&-`) or its reader gone", "the same exit code (e.g. 2 for an unknown "
     "system); the line never goes to stdout"),
    ("a SQLite `--storage` path over 504 bytes (the default, from a directory ~500 characters "
     "deep)", "exit 2 before computing, naming --storage, the length and SQLite's limit"),
    ("`dse.evaluate('paper-config1-u280', 'math500')`", "evaluates: a design argument takes a "
     "system name or a TOML path, as every command does"),
    ("`seed=10**30`, `timeout_s=nan`, `objectives='latency'`",
     "`ArgumentError` naming the argument, before computing"),
]

SECURITY = [
    "Catalogs, designs, spaces, traces and config.json are read with `tomllib` and `json` only; "
    "a test greps dse/, app.py and the dashboard for eval, exec, compile, pickle, marshal, "
    "shelve, unsafe YAML, sympify and shell calls.",
    "Bundle paths are checked (`check_relative`: relative, no `..`, no separators in names); "
    "board names become path components only through `safe_component`; a design whose names "
    "hold `../` or absolute paths is refused before anything is written.",
    "Catalog strings written unquoted into `build.sh` and `vpp_link.cfg` (a board's `part` and "
    "`vitis_platform`) must be one plain word; the model's `hf_id` in the C++ header comment "
    "has newlines and backslashes replaced.",
    "The dashboard binds 127.0.0.1 (`.streamlit/config.toml`) and takes no uploaded code.",
]

KNOWN_ISSUES = [
    "Ctrl-C in the first tens of milliseconds, while the interpreter starts and the `dse` "
    "package itself loads (before its entry point, dse.launch, runs), prints Python's own "
    "KeyboardInterrupt traceback; nothing has been written then. From there on (the command's "
    "modules loading, its arguments being parsed) it is the command's one line and exit 130.",
    "SIGTERM during an Optuna trial leaves that trial RUNNING in the study, as a SIGKILL does "
    "(with its worker mark but without its parameters: a trial's parameters and attributes are "
    "written with its finishing state, in one transaction, so a finished trial is always "
    "whole). On SQLite the next run on the file fails it at once (its process is gone); on a "
    "server database, once its heartbeat is older than the grace period (8 s). Ctrl-C marks it "
    "FAIL at once.",
    "A SIGKILLed `dse export` can leave a hidden `.<DIR>.tmp-*` directory beside `--out` "
    "(never a partial `--out`); delete it by hand.",
    "The closed form counts too many attempts where rewrites usually fail the backtrack "
    "threshold and the backtrack window is 2 or more (suspected: its anchor distance after a "
    "backtrack assumes an independent history, where the simulator backtracks to the "
    "latest accepted draft step, so right after a backtrack the distance is known). In "
    "random designs "
    "of that kind it runs 3-12% slower than the simulator (e.g. 9.27 attempts against 8.35); "
    "every device stays within the latency.",
]


def write_doc(out: Path, rows: list[dict], seconds: float, scale: float) -> None:
    lines = [
        "# Reliability",
        "",
        "Generated by `python scripts/reliability_report.py` "
        f"(hetero-dse {__version__}, seed {SEED}, scale {scale:g}, {seconds:.0f} s); do not "
        "edit by hand. The same generators and checks run in the test suite (tests/test_fuzz.py,"
        " tests/test_faults.py, tests/test_edge_cases.py, tests/test_security.py,"
        " tests/test_hostile.py, tests/test_api_arguments.py, tests/test_input_files.py,"
        " tests/test_output_paths.py, tests/test_interrupts.py, tests/test_hostile_corpus.py)"
        " with their own example counts.",
        "",
        "## Summary",
        "",
        "| campaign | inputs tried | faults injected | crashes | data lost |",
        "|---|---|---|---|---|",
    ]
    tot = Counter()
    for r in rows:
        lines.append(f"| {r['name']} | {r['inputs']} | {r['faults']} | {r['crashes']} | "
                     f"{r['lost']} |")
        for k in ("inputs", "faults", "crashes", "lost"):
            tot[k] += r[k]
    lines.append(f"| total | {tot['inputs']} | {tot['faults']} | {tot['crashes']} | "
                 f"{tot['lost']} |")
    lines += ["", "A crash is a traceback, an error that is not one line naming the file, a "
              "wrong exit code or a violated invariant; data lost counts completed trials "
              "lost or rewritten and partial bundles.", ""]
    for title, names in (("## Fuzzing", ("random", "malformed", "hostile")),
                         ("## Fault injection", ("kill", "race", "signals"))):
        lines += [title, ""]
        for r in rows:
            if not any(n in r["name"] for n in names):
                continue
            lines += [f"### {r['name']}", "", "| category | count |", "|---|---|"]
            lines += [f"| {k} | {v} |" for k, v in sorted(r["by"].items())]
            if r["details"]:
                lines += ["", "Failures:", ""] + [f"- {d}" for d in r["details"][:20]]
            lines.append("")
    lines += ["Invariants checked on every feasible design: finite, non-negative metrics; "
              "latency breakdown sums to the latency and energy by device to the energy "
              "(relative 1e-9); step_latency_share sums to 1; accuracy in [0, 100]; shares "
              "at most 1; latency at least attempts x draft step tokens x the draft's "
              "bandwidth floor (weights / peak memory bandwidth); draft, PRM and target "
              "busy at most the latency (within the closed form's BUSY_RTOL, 0.1%); "
              "step-ahead never slower than the same design without it (relative 1e-9: "
              "per attempt the step-ahead timing is never longer).", "",
              "Fault injection: `dse optimize --trials 25` on a small space is SIGKILLed at a "
              "uniform random moment up to 2.5 s after it announces its storage, then "
              "restarted with the same arguments; after every run the completed trials "
              "before are a subset of those after (same parameters, values and design), "
              "and a run that finishes leaves exactly 25. `dse export` is SIGKILLed up to 4 s "
              "after it starts, into a new directory and with --force over a previous bundle:"
              " --out must be absent or a complete bundle whose files match the manifest's "
              "sha256 exactly.", ""]
    lines += ["## Edge cases", "", "| input | behaviour |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in EDGE_CASES]
    lines += ["", "## Security", ""] + [f"- {s}" for s in SECURITY]
    lines += ["", "## Known issues", ""] + [f"- {s}" for s in KNOWN_ISSUES]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "reliability.md"))
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the input counts")
    ap.add_argument("--kills", type=int, default=20, help="SIGKILLs per optimize campaign")
    a = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dse-reliability-") as t:
        tmp = Path(t)
        rows = [designs(round(60 * a.scale)), catalogs(round(300 * a.scale), tmp),
                argvs(round(600 * a.scale), tmp), hostile(round(600 * a.scale), tmp),
                api_arguments()]
        rows += faults(fresh_dir(tmp / "faults"), a.kills)
    write_doc(Path(a.out), rows, time.perf_counter() - t0, a.scale)
    print(f"wrote {a.out}")
    return 1 if any(r["crashes"] or r["lost"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
