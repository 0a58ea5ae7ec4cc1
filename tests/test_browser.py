"""The dashboard in a real browser: `streamlit run app.py` on a free local port, driven by
headless Chromium through Selenium. Checks that the key metrics appear (the values `dse
evaluate` computes for the design in the URL), that no Streamlit exception box is shown, that
a widget change re-renders and updates the URL, that designs pinned in What-if appear side by
side on Compare, survive a reload of its URL and download as CSV, that clicking a point of
the Pareto chart chooses that design and opens it in What-if, that a page other than the
first opens from a direct link, and that controls clicked as soon as they are drawn (the
workflow, the verifier, a role's KV cache) leave the page on the URL's design. Saves
screenshots and the server log under tests/artifacts/.

Needs Chromium and its driver (Debian: `apt-get install chromium chromium-driver`, which
.ci/run does) and selenium (the `test` extra); skips with the reason otherwise.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
DOWNLOADS = ARTIFACTS / "downloads"
CHROME = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                     "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.slow  # Chromium and a Streamlit server: about a minute in all

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install '.[test]')")
if CHROME is None or DRIVER is None:
    pytest.skip("needs Chromium and chromedriver (Debian: apt-get install chromium "
                "chromium-driver)", allow_module_level=True)

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def streamlit_server() -> Iterator[str]:
    """`streamlit run app.py` on a free local port until the block ends; yields its URL
    (also used by benchmarks/bench_browser.py)."""
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    log = (ARTIFACTS / "streamlit-server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--browser.gatherUsageStats", "false",
         # no reloading of modules edited while it runs (a shared working tree): a reloaded
         # dse.specs.scenario's classes no longer match the cached catalog's specs
         "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("streamlit did not start; see "
                                   "tests/artifacts/streamlit-server.log")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with streamlit_server() as url:
        yield url


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """Headless Chromium through Selenium until the block ends."""
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROME
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1600,1400"):
        opts.add_argument(arg)
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    opts.add_experimental_option("prefs", {"download.default_directory": str(DOWNLOADS),
                                           "download.prompt_for_download": False})
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        yield drv
    finally:
        drv.quit()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as drv:
        yield drv


def metrics(drv: object) -> dict[str, str]:
    """Label -> displayed value of every st.metric ({} while the page is being redrawn)."""
    out = {}
    try:
        for m in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stMetric"]'):
            label = m.find_element(By.CSS_SELECTOR, '[data-testid="stMetricLabel"]').text
            out[label.strip()] = m.find_element(By.CSS_SELECTOR,
                                                '[data-testid="stMetricValue"]').text.strip()
    except StaleElementReferenceException:
        return {}
    return out


def wait_for_metric(drv: object, label: str, value: str, timeout: float = 60) -> None:
    WebDriverWait(drv, timeout).until(lambda d: metrics(d).get(label) == value)


def button(drv: object, text: str) -> object:
    return next(b for b in drv.find_elements(By.CSS_SELECTOR, "button") if b.text == text)


def no_exception(drv: object) -> None:
    boxes = drv.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    assert not boxes, boxes[0].text


def expected(cat: object, url: str) -> object:
    """The closed-form report of the design in a dashboard URL."""
    from urllib.parse import parse_qsl, urlsplit

    from dse import views
    from dse.engine.evaluate import evaluate
    from dse.model.design import build_design

    st = views.state_from_params(cat, dict(parse_qsl(urlsplit(url).query)))
    return evaluate(build_design(cat, st.spec(cat), st.schedule),
                    cat.get("workload", st.workload))


def check_metrics(drv: object, rep: object) -> None:
    wait_for_metric(drv, "Latency (s/problem)", f"{rep.latency_s_per_problem:.3f}")
    speedups = {"Speed-up vs rsd", "Speed-up vs brsd", "Speed-up vs brsd_stepahead"}
    WebDriverWait(drv, 60).until(lambda d: speedups <= set(metrics(d)))  # drawn after
    shown = metrics(drv)
    assert shown["Energy (J/token)"] == f"{rep.j_per_token:.3f}"
    assert shown["Accept probability"] == f"{rep.p_accept:.3f}"
    assert shown["Goodput (tok/s)"] == f"{rep.goodput_tokens_per_s:.1f}"


def test_dashboard_in_a_browser(cat, server, browser):
    drv = browser
    # Design space, by its link (a page other than the first must resolve)
    drv.get(f"{server}/design-space")
    box = WebDriverWait(drv, 60).until(ec.element_to_be_clickable(
        (By.CSS_SELECTOR, 'input[aria-label^="Design space TOML"]')))
    assert not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stDialog"]')  # page found
    # a local tool: .streamlit/config.toml hides Streamlit's Deploy button
    assert not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stAppDeployButton"]')
    assert not [b for b in drv.find_elements(By.TAG_NAME, "button")
                if b.text.strip() == "Deploy"]
    box.click()
    box.send_keys("tests/data/dashboard-space.toml")
    button(drv, "Run").click()
    point_css = '[data-testid="stPlotlyChart"] .scatterlayer .trace .point'
    WebDriverWait(drv, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, point_css))
    no_exception(drv)
    # a click on the front's last point chooses that design (the points: the pick's ring,
    # then the front's)
    points = drv.find_elements(By.CSS_SELECTOR, point_css)
    assert len(points) >= 3
    ActionChains(drv).move_to_element(points[-1]).click().perform()
    WebDriverWait(drv, 30).until(
        lambda d: f"Picked design #{len(points) - 2}" in d.page_source)
    drv.save_screenshot(str(ARTIFACTS / "design-space.png"))
    # ... and opens in What-if, whose URL then carries it
    button(drv, "Open in What-if").click()
    WebDriverWait(drv, 60).until(lambda d: "system=" in d.current_url
                                 and "Latency (s/problem)" in metrics(d))
    check_metrics(drv, expected(cat, drv.current_url))
    WebDriverWait(drv, 30).until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, '[data-testid="stVegaLiteChart"] canvas')))
    no_exception(drv)
    drv.save_screenshot(str(ARTIFACTS / "whatif.png"))
    # a widget change: shadow sync flips, the page re-renders and the URL follows
    before = drv.current_url
    toggle = next(t for t in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stCheckbox"]')
                  if t.text.strip() == "Shadow sync (T1)")
    toggle.find_element(By.CSS_SELECTOR, "label").click()
    WebDriverWait(drv, 30).until(lambda d: d.current_url != before)
    check_metrics(drv, expected(cat, drv.current_url))
    no_exception(drv)
    drv.save_screenshot(str(ARTIFACTS / "whatif-after-toggle.png"))


def click_button(drv: object, text: str) -> None:
    """Click the enabled button labelled `text` once it is drawn (retrying while the page
    re-renders it under the click)."""
    def clicked(d: object) -> bool:
        try:
            b = next((b for b in d.find_elements(By.CSS_SELECTOR, "button")
                      if b.text == text and b.is_enabled()), None)
            if b is None:
                return False
            b.click()
            return True
        except StaleElementReferenceException:
            return False

    WebDriverWait(drv, 60).until(clicked)


def pinned_names(drv: object) -> list[str]:
    try:
        return [m.text.split(":")[0] for m in drv.find_elements(
            By.CSS_SELECTOR, '[data-testid="stMarkdownContainer"] strong')
            if m.text.startswith("#")]
    except StaleElementReferenceException:
        return []


def test_compare_in_a_browser(cat, server, browser):
    """Pin the default design and one with a new threshold, open Compare: both side by side;
    a reload of its URL keeps them; its CSV downloads with their numbers."""
    import csv
    import io
    from urllib.parse import parse_qs, urlsplit

    from dse import views

    drv = browser
    drv.get(server)
    check_metrics(drv, expected(cat, server))
    click_button(drv, "Pin to compare")
    WebDriverWait(drv, 30).until(lambda d: "pin=" in d.current_url)
    thumb = next(w for w in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSlider"]')
                 if w.text.strip().startswith("Accept threshold")).find_element(
        By.CSS_SELECTOR, 'input[type="range"]')
    before = drv.current_url
    # the range input is visually hidden (1 px): focus it and type to the focused element
    drv.execute_script("arguments[0].focus();", thumb)
    ActionChains(drv).send_keys(Keys.ARROW_RIGHT).perform()
    WebDriverWait(drv, 30).until(lambda d: d.current_url != before
                                 and "accept_threshold" in d.current_url)
    click_button(drv, "Pin to compare")
    WebDriverWait(drv, 30).until(lambda d: len(parse_qs(urlsplit(d.current_url).query).get(
        views.PIN_PARAM, [])) == 2)
    pins = parse_qs(urlsplit(drv.current_url).query)[views.PIN_PARAM]
    states, errors = views.decode_pins(cat, pins)
    assert not errors and len(states) == 2
    # Compare, by the top navigation
    next(a for a in drv.find_elements(By.CSS_SELECTOR, "a") if a.text.strip() == "Compare"
         ).click()
    want = [views.short_label(s, i) for i, s in enumerate(states)]
    WebDriverWait(drv, 60).until(lambda d: pinned_names(d) == want)
    WebDriverWait(drv, 60).until(lambda d: len(d.find_elements(
        By.CSS_SELECTOR, '[data-testid="stVegaLiteChart"] canvas')) == 3)
    no_exception(drv)
    drv.save_screenshot(str(ARTIFACTS / "compare.png"))
    # the URL round trip: a reload shows the same pinned set
    assert "pin=" in drv.current_url
    drv.get(drv.current_url)
    WebDriverWait(drv, 60).until(lambda d: pinned_names(d) == want)
    # the CSV download: one row per pinned design with its closed-form latency
    for f in DOWNLOADS.glob("compare*.csv"):
        f.unlink()
    click_button(drv, "Comparison (CSV)")
    WebDriverWait(drv, 30).until(lambda d: list(DOWNLOADS.glob("compare*.csv")))
    (path,) = DOWNLOADS.glob("compare*.csv")
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    # the pinned designs and, beside them, the simplest alternative: their target alone
    assert [r["design"] for r in rows] == [*want, "target alone of #1"]
    for r, s in zip(rows, [*states, states[0].target_alone()], strict=True):
        url = f"{server}/?" + "&".join(f"{k}={v}" for k, v in s.params().items())
        assert float(r["latency_s_per_problem"]) == expected(cat, url).latency_s_per_problem


def header(drv: object) -> str:
    """The What-if header: the first caption of the page's main area (the design's label and
    workload; "" while the page is being redrawn)."""
    try:
        caps = drv.find_elements(By.CSS_SELECTOR,
                                 '[data-testid="stMain"] [data-testid="stCaptionContainer"]')
        return caps[0].text.strip() if caps else ""
    except StaleElementReferenceException:
        return ""


def click_labelled(drv: object, css: str, text: str) -> None:
    """Click the element matching `css` whose text is `text` as soon as it is drawn (retrying
    while the page re-renders it under the click)."""
    def clicked(d: object) -> bool:
        try:
            el = next((o for o in d.find_elements(By.CSS_SELECTOR, css)
                       if o.text.strip() == text), None)
            if el is None:
                return False
            el.click()
            return True
        except StaleElementReferenceException:
            return False

    WebDriverWait(drv, 60).until(clicked)


def click_option(drv: object, text: str) -> None:
    """Click the radio option labelled `text` as soon as it is drawn."""
    click_labelled(drv, '[data-testid="stRadioOption"]', text)


def shows_one_state(cat: object, drv: object) -> bool:
    """Whether the header, the metrics and the URL name one state: the header is the URL's
    design label, the metrics its closed form."""
    from urllib.parse import parse_qsl, urlsplit

    from dse import views
    from dse.model.design import build_design

    url = drv.current_url
    st = views.state_from_params(cat, dict(parse_qsl(urlsplit(url).query)))
    d = build_design(cat, st.spec(cat), st.schedule)
    rep = expected(cat, url)
    shown = metrics(drv)
    return (header(drv) == f"{views.design_label(d.system, d.schedule)} | {st.workload}"
            and shown.get("Latency (s/problem)") == f"{rep.latency_s_per_problem:.3f}"
            and shown.get("Energy (J/token)") == f"{rep.j_per_token:.3f}"
            and shown.get("Accept probability") == f"{rep.p_accept:.3f}")


def test_workflow_control_early_and_fast(cat, server, browser):
    """Click the workflow control as soon as it is drawn (the page's first run still going:
    baselines, intervals, charts), then flip it back and forth quickly: once the page
    settles, its header, its metrics and its URL name one state, and that state is the last
    one clicked."""
    drv = browser
    drv.get(server)
    click_option(drv, "Target alone")  # early: as soon as the sidebar has it
    WebDriverWait(drv, 60).until(lambda d: "workflow=target-only" in d.current_url
                                 and shows_one_state(cat, d))
    assert header(drv).startswith("target alone: ")
    assert not [k for k in metrics(drv) if k.startswith("Speed-up")]
    no_exception(drv)
    drv.save_screenshot(str(ARTIFACTS / "whatif-target-alone.png"))
    # fast: back and forth without waiting for the page
    click_option(drv, "Speculative (draft, verifier, target)")
    click_option(drv, "Target alone")
    click_option(drv, "Speculative (draft, verifier, target)")
    WebDriverWait(drv, 60).until(lambda d: "workflow=" not in d.current_url
                                 and shows_one_state(cat, d))
    time.sleep(1)  # settled: no late run puts another state's numbers under the header
    assert "workflow=" not in drv.current_url and shows_one_state(cat, drv)
    assert header(drv).startswith("draft ")
    no_exception(drv)


def click_tab(drv: object, text: str) -> None:
    """Click the What-if tab labelled `text` as soon as it is drawn."""
    click_labelled(drv, '[role="tab"]', text)


def sidebar_number(drv: object, label: str) -> str:
    """The value shown by the sidebar's number input labelled `label` ("" if not drawn)."""
    try:
        box = drv.find_elements(By.CSS_SELECTOR, f'input[aria-label="{label}"]')
        return box[0].get_attribute("value") if box else ""
    except StaleElementReferenceException:
        return ""


def test_early_clicks_on_fresh_loads_keep_the_design(cat, server, browser):
    """A tab, then a widget, clicked as soon as they are drawn on a fresh load, three times
    over: every time the page settles on the URL's design, its sidebar shows that design's
    knobs (a reset drew them at their minimum, 0 backtracks and a window of 1, or at the
    first preset), and the metrics are its closed form."""
    from urllib.parse import parse_qsl, urlsplit

    from dse import views

    for tab in ("Timeline", "Roofline", "Sensitivity"):
        drv = browser
        drv.get(f"{server}/?accept_threshold=0.85")
        click_tab(drv, tab)
        click_option(drv, "The target judges (one score token)")
        WebDriverWait(drv, 60).until(lambda d: "verifier=target" in d.current_url
                                     and shows_one_state(cat, d))
        time.sleep(1)  # settled: no late run draws another state
        assert shows_one_state(cat, drv), tab
        st = views.state_from_params(cat, dict(parse_qsl(urlsplit(drv.current_url).query)))
        spec = st.spec(cat)
        assert st.system == views.DEFAULT_SYSTEM and spec.accept_threshold == 0.85
        assert sidebar_number(drv, "Max backtracks") == str(spec.max_backtracks), tab
        assert sidebar_number(drv, "Backtrack window (steps)") == str(spec.backtrack_window)
        no_exception(drv)


def choose_early(drv: object, label: str, index: int, option: str) -> None:
    """Open the `index`-th sidebar selectbox labelled `label` and click its option `option`,
    as soon as both are drawn (retrying while the page re-renders them under the click)."""
    from selenium.common.exceptions import WebDriverException

    def chosen(d: object) -> bool:
        try:
            boxes = [w for w in d.find_elements(
                By.CSS_SELECTOR, '[data-testid="stSidebar"] [data-testid="stSelectbox"]')
                if w.text.strip().startswith(label)]
            if len(boxes) <= index:
                return False
            boxes[index].find_element(By.CSS_SELECTOR, "input").click()
            opt = next((o for o in d.find_elements(By.CSS_SELECTOR, '[role="option"]')
                        if o.text.strip() == option), None)
            if opt is None:
                return False
            opt.click()
            return True
        except WebDriverException:  # stale, or covered by a redraw: try again
            return False

    WebDriverWait(drv, 60).until(chosen)


def sidebar_select(drv: object, label: str, index: int) -> str:
    """The value shown by the `index`-th sidebar selectbox labelled `label` ("" if not
    drawn)."""
    try:
        boxes = [w for w in drv.find_elements(
            By.CSS_SELECTOR, '[data-testid="stSidebar"] [data-testid="stSelectbox"]')
            if w.text.strip().startswith(label)]
        return (boxes[index].find_element(By.CSS_SELECTOR, "input").get_attribute("value")
                if len(boxes) > index else "")
    except StaleElementReferenceException:
        return ""


def test_kv_cache_chosen_early_settles_on_the_urls_design(cat, server, browser):
    """On a fresh load, open *Hardware and models* and choose the target's KV cache (fp8) as
    soon as they are drawn (the page's first run still going): the page settles on the URL's
    design, which carries target_kv_precision=fp8; its header names the KV cache and the
    metrics are its closed form; the select shows fp8."""
    drv = browser
    drv.get(server)
    click_labelled(drv, '[data-testid="stSidebar"] summary [data-testid="stMarkdownContainer"]',
                   "Hardware and models")
    choose_early(drv, "KV cache", 2, "fp8 (8 bits)")  # draft, PRM, target
    WebDriverWait(drv, 60).until(lambda d: "target_kv_precision=fp8" in d.current_url
                                 and shows_one_state(cat, d))
    time.sleep(1)  # settled: no late run draws another state
    assert "target_kv_precision=fp8" in drv.current_url and shows_one_state(cat, drv)
    assert "(bf16, KV fp8)" in header(drv)
    assert sidebar_select(drv, "KV cache", 2) == "fp8 (8 bits)"
    no_exception(drv)
    drv.save_screenshot(str(ARTIFACTS / "whatif-kv-cache.png"))


def load_said(drv: object) -> str:
    """The Load page's sentences at the chosen rate ("" while the page is being redrawn)."""
    try:
        return " ".join(m.text for m in drv.find_elements(
            By.CSS_SELECTOR, '[data-testid="stMain"] [data-testid="stMarkdownContainer"]'))
    except StaleElementReferenceException:
        return ""


def test_load_page_in_a_browser(cat, server, browser):
    """The Load page by its link: the header, the URL and the sentences at the chosen rate
    name one state, the design's cost there `dse serve`'s; a new rate typed into its control
    moves all three together, and the chart is drawn."""
    from urllib.parse import parse_qsl, urlsplit

    from dse import views
    from dse.views import load as vl

    s = views.default_state()
    d, w = s.design(cat), cat.get("workload", s.workload)

    def names_rate(drv: object, rate: float) -> bool:
        p = vl.serve_at(d, w, rate, vl.LoadState(rate=rate))
        url = dict(parse_qsl(urlsplit(drv.current_url).query))
        return (url.get("rate") == f"{rate:g}" and f"| rate {rate:g}/s," in header(drv)
                and f"this design: ${p['cost_usd_per_mtok']:.3g}/Mtok" in load_said(drv))

    drv = browser
    drv.get(f"{server}/load?rate=0.3")
    WebDriverWait(drv, 120).until(lambda d_: names_rate(d_, 0.3))
    WebDriverWait(drv, 60).until(lambda d_: d_.find_elements(
        By.CSS_SELECTOR, '[data-testid="stPlotlyChart"] .scatterlayer .trace'))
    no_exception(drv)
    box = drv.find_element(By.CSS_SELECTOR,
                           'input[aria-label="Rate to compare at (requests/s, 0 = none)"]')
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("0.2", Keys.ENTER)
    WebDriverWait(drv, 120).until(lambda d_: names_rate(d_, 0.2))
    time.sleep(1)  # settled: no late run puts another rate's numbers under the header
    assert names_rate(drv, 0.2)
    no_exception(drv)
    drv.save_screenshot(str(ARTIFACTS / "load.png"))
