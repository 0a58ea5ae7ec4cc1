"""The dashboard's speed as felt, in a real browser: `streamlit run app.py` on a local port,
driven by headless Chromium through Selenium (as tests/test_browser.py). Times user action ->
re-rendered "Latency per problem" metric on What-if, for a fresh session, a new accept
threshold (the slider's thumb moved one step with the arrow key), a schedule flag, a workload
switch and a preset switch, and a new threshold with the Uncertainty tab open (until its 90%
intervals show); prints the median and range of each.

    python benchmarks/bench_browser.py [--repeats 5]

Needs Chromium, chromedriver and selenium (as the browser test).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

LATENCY = "Latency per problem"
TIMEOUT_S = 60


def _tools() -> tuple[Callable[..., object], Callable[..., object], Callable[..., object]]:
    """The browser test's server, browser and metric reader (one implementation)."""
    import pytest

    try:
        from tests import test_browser as tb
    except pytest.skip.Exception as e:  # no Chromium / selenium: say so
        raise SystemExit(f"bench_browser: {e}") from None
    return tb.streamlit_server, tb.chromium, tb.metrics


def latency(metrics: Callable[[object], dict[str, str]], drv: object) -> str | None:
    return metrics(drv).get(LATENCY)


def timed(drv: object, metrics: Callable[[object], dict[str, str]],
          act: Callable[[], None]) -> float:
    """Seconds from the action to a new latency value on the page."""
    before = latency(metrics, drv)
    t0 = time.perf_counter()
    act()
    WebDriverWait(drv, TIMEOUT_S, poll_frequency=0.01).until(
        lambda d: (v := latency(metrics, d)) is not None and v != before)
    return time.perf_counter() - t0


def intervals_caption(drv: object) -> str | None:
    """The Uncertainty tab's caption with the 90% intervals (None until it is drawn, or while
    the page re-renders under the reader)."""
    try:
        for c in drv.find_elements(By.CSS_SELECTOR,  # type: ignore[attr-defined]
                                   '[data-testid="stCaptionContainer"]'):
            if c.text.startswith("90% intervals"):
                return str(c.text)
    except StaleElementReferenceException:
        return None
    return None


def sidebar_widget(drv: object, testid: str, label: str) -> object:
    for w in drv.find_elements(By.CSS_SELECTOR, f'[data-testid="{testid}"]'):  # type: ignore
        if w.text.strip().startswith(label):
            return w
    raise LookupError(f"no {testid} labelled {label!r}")


def choose(drv: object, label: str, option: str) -> None:
    box = sidebar_widget(drv, "stSelectbox", label)
    box.find_element(By.CSS_SELECTOR, "input").click()  # type: ignore[attr-defined]
    opt = WebDriverWait(drv, TIMEOUT_S).until(lambda d: next(
        (o for o in d.find_elements(By.CSS_SELECTOR, '[role="option"]') if o.text == option),
        None))
    opt.click()  # type: ignore[attr-defined]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    server_fn, browser_fn, metrics = _tools()
    from dse.specs import Catalog

    cat = Catalog.load()
    results: dict[str, list[float]] = {}
    with server_fn() as url, browser_fn() as drv:
        # warm the server once (first imports), then time fresh sessions
        drv.get(url)
        WebDriverWait(drv, 120).until(lambda d: latency(metrics, d) is not None)
        for _ in range(a.repeats):
            drv.delete_all_cookies()
            drv.get("about:blank")
            t0 = time.perf_counter()
            drv.get(url)
            WebDriverWait(drv, TIMEOUT_S, poll_frequency=0.01).until(
                lambda d: latency(metrics, d) is not None)
            results.setdefault("fresh session", []).append(time.perf_counter() - t0)

        def slider_step() -> None:
            thumb = sidebar_widget(drv, "stSlider", "Accept threshold").find_element(
                By.CSS_SELECTOR, 'input[type="range"]')  # type: ignore[attr-defined]
            thumb.send_keys(Keys.ARROW_LEFT)

        for _ in range(a.repeats):  # each press is a threshold not seen before
            results.setdefault("accept threshold, new value", []).append(
                timed(drv, metrics, slider_step))

        def flag() -> None:
            t = sidebar_widget(drv, "stCheckbox", "Shadow sync (T1)")
            t.find_element(By.CSS_SELECTOR, "label").click()  # type: ignore[attr-defined]

        for _ in range(a.repeats):
            results.setdefault("schedule flag toggled", []).append(timed(drv, metrics, flag))
        workloads = cat.names("workload")
        for i in range(a.repeats):
            w = workloads[(i + 1) % len(workloads)]
            results.setdefault("workload switch", []).append(
                timed(drv, metrics, lambda w=w: choose(drv, "Scenario (workload)", w)))
        systems = [s for s in cat.names("system")]
        for i in range(a.repeats):
            s = systems[(i + 1) % len(systems)]
            results.setdefault("preset switch", []).append(
                timed(drv, metrics, lambda s=s: choose(drv, "System preset", s)))
        # the Uncertainty tab (about 20 closed-form evaluations per design, for the design and
        # each GPU baseline): a new threshold with the tab open, until its intervals show
        tab = next(t for t in drv.find_elements(By.CSS_SELECTOR, '[role="tab"]')  # type: ignore
                   if t.text.strip() == "Uncertainty")
        tab.click()
        WebDriverWait(drv, TIMEOUT_S).until(lambda d: intervals_caption(d) is not None)
        for _ in range(a.repeats):
            before = intervals_caption(drv)
            t0 = time.perf_counter()
            slider_step()
            WebDriverWait(drv, TIMEOUT_S, poll_frequency=0.01).until(
                lambda d, b=before: (c := intervals_caption(d)) is not None and c != b)
            results.setdefault("uncertainty tab, new threshold", []).append(
                time.perf_counter() - t0)
    targets = {"fresh session": 2.0, "accept threshold, new value": 0.3,
               "schedule flag toggled": 0.3, "workload switch": 0.5, "preset switch": 0.5,
               "uncertainty tab, new threshold": None}
    print(f"What-if in headless Chromium, user action -> new latency metric, "
          f"median of {a.repeats} (min-max)")
    for k, v in results.items():
        med = statistics.median(v)
        target = targets[k]
        verdict = ("no target" if target is None else
                   f"target {target * 1e3:.0f} ms  {'ok' if med <= target else 'MISSED'}")
        print(f"  {k:30s} {med * 1e3:7.0f} ms  ({min(v) * 1e3:.0f}-{max(v) * 1e3:.0f})"
              f"  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
