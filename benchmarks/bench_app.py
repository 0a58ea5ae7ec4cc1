"""Dashboard responsiveness: how long the What-if page takes to re-render after a widget
change, measured with streamlit.testing.v1.AppTest (the script run plus AppTest's own
overhead; the browser's drawing is not included).

    python benchmarks/bench_app.py [--repeats 5]

Target (Dashboard issue): a widget change on What-if re-renders within 300 ms on this machine.
Cases:
- first render: a new session (imports, catalog, four closed-form evaluations, the figures);
- re-run, nothing changed: every number from the caches;
- accept threshold to a value not seen before: the design and its three baselines are
  evaluated (closed form), the timeline replayed, the roofline and tornado recomputed;
- the FPGA draft's clock to a value not seen before: the design is new (its baselines, GPU
  drafts, are not, unless the threshold changed too);
- a schedule flag toggled: only the current design is new (the baselines are cached);
- a value seen before (back and forth): everything from the caches;
- the timeline's problem (seed): one simulator replay (Timeline tab open).
Only the open tab's figures are drawn (the Latency and energy tab, unless said).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dashboard.whatif_controls import HARDWARE  # noqa: E402

APP = str(ROOT / "app.py")
TARGET_S = 0.300


def timed_run(at: AppTest) -> float:
    t0 = time.perf_counter()
    at.run()
    dt = time.perf_counter() - t0
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return dt


def evaluate_s() -> float:
    from _timing import best_of

    from dse import views
    from dse.engine.evaluate import evaluate
    from dse.model.design import build_design
    from dse.specs import Catalog

    cat = Catalog.load()
    st = views.default_state()
    d = build_design(cat, st.spec(cat), st.schedule)
    w = cat.get("workload", st.workload)
    return best_of(lambda: evaluate(d, w))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    n = ap.parse_args().repeats
    at = AppTest.from_file(APP, default_timeout=300)
    first = timed_run(at)
    at.session_state[HARDWARE] = True  # the FPGA clock is in the Hardware expander, drawn open
    timed_run(at)
    cases: dict[str, list[float]] = {k: [] for k in (
        "re-run, nothing changed", "accept threshold, new value", "FPGA clock, new value",
        "schedule flag toggled",
        "accept threshold, value seen before", "timeline problem (seed)")}
    for i in range(n):
        cases["re-run, nothing changed"].append(timed_run(at))
        at.slider(key="wi_accept_threshold").set_value(round(0.50 + 0.01 * i, 2))
        cases["accept threshold, new value"].append(timed_run(at))
        at.number_input(key="wi_fpga_clock_MHz").set_value(200.0 + 5.0 * i)
        cases["FPGA clock, new value"].append(timed_run(at))
        at.number_input(key="wi_fpga_clock_MHz").set_value(300.0)  # back to the preset's
        timed_run(at)
        at.toggle(key="wi_backtracking").set_value(False)  # not a preset: a new design
        cases["schedule flag toggled"].append(timed_run(at))
        at.toggle(key="wi_backtracking").set_value(True)
        timed_run(at)
        at.slider(key="wi_accept_threshold").set_value(0.70)
        cases["accept threshold, value seen before"].append(timed_run(at))
        at.session_state["wi_tab"] = "Timeline"
        timed_run(at)
        at.number_input(key="wi_timeline_seed").set_value(100 + i)
        cases["timeline problem (seed)"].append(timed_run(at))
        at.session_state["wi_tab"] = "Latency and energy"
        timed_run(at)
    print(f"What-if re-render times, AppTest, median of {n} (target {TARGET_S * 1e3:.0f} ms)")
    print("  one closed-form evaluate (dse.engine.closed_form, for reference) "
          f"{evaluate_s() * 1e3:.0f} ms; "
          "a new design needs four (it and the rsd, brsd, brsd_stepahead baselines)")
    print(f"  {'first render (new session)':40s} {first * 1e3:8.0f} ms")
    for name, ts in cases.items():
        med = statistics.median(ts)
        flag = "ok" if med <= TARGET_S else "OVER"
        print(f"  {name:40s} {med * 1e3:8.0f} ms  (min {min(ts) * 1e3:.0f}, "
              f"max {max(ts) * 1e3:.0f})  {flag}")


if __name__ == "__main__":
    main()
