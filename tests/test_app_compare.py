"""What-if's additions (energy gains, headline intervals, why a design is slower, pin, CSV)
and the Compare page, under AppTest by widget key; the pinned set round-trips through the
URL."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dse import views
from dse.engine.evaluate import evaluate
from dse.model.design import build_design
from dse.model.schedules import PRESETS
from dse.uncertainty import attach
from tests.test_app import APP, expected, metric, ok, run_app


def report(cat, s: views.DesignState, *, moves: str | None = None):
    d = build_design(cat, s.spec(cat), s.schedule)
    w = cat.get("workload", s.workload)
    r = evaluate(d, w)
    return r if moves is None else attach(r, d, w, moves=moves)


def pins_in(at: AppTest) -> list[str]:
    """The URL's pin values (AppTest keeps one repeated value as a plain string)."""
    v = at.query_params.get(views.PIN_PARAM, [])
    return [v] if isinstance(v, str) else list(v)


def test_whatif_energy_gains_intervals_and_why(cat):
    at = ok(run_app())
    rep = expected(cat, views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD, views.DEFAULT_SCHEDULE)
    for b in views.BASELINES:
        base = report(cat, views.default_state().gpu_baseline(cat, b))
        assert metric(at, f"Energy gain vs {b}") == f"{base.j_per_token / rep.j_per_token:.2f}x"
    # the headline intervals: dse evaluate's (the factors' moves by the closed form)
    quick = report(cat, views.default_state(), moves="closed-form")
    lo, hi = quick.intervals["latency_s_per_problem"]
    assert f"90%: {lo:.3f}-{hi:.3f} s" in [c.value for c in at.caption]
    lo, hi = quick.intervals["j_per_token"]
    assert f"90%: {lo:.3f}-{hi:.3f} J/token" in [c.value for c in at.caption]
    # slower than a baseline: an expander says why, naming the roles
    slower = [b for b in views.BASELINES if report(cat, views.default_state().gpu_baseline(
        cat, b)).latency_s_per_problem < rep.latency_s_per_problem]
    if slower:
        (exp,) = [e for e in at.expander if e.label.startswith("Why:")]
        assert "slower than " + ", ".join(slower) in exp.label
        text = " ".join(m.value for m in exp.markdown)
        assert all(f"slower than {b}" in text for b in slower)


@pytest.fixture
def downloads(monkeypatch) -> dict[str, bytes]:
    """What the page's download buttons serve: file id -> bytes, or the callable a deferred
    download runs when clicked (AppTest keeps its media store only during a run)."""
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    files: dict[str, Any] = {}
    orig = MemoryMediaFileStorage.load_and_get_id
    orig_deferred = MediaFileManager.add_deferred

    def keep(self, path_or_data, mimetype, kind, filename=None):
        fid = orig(self, path_or_data, mimetype, kind, filename)
        files[fid] = path_or_data if isinstance(path_or_data, bytes) else b""
        return fid

    def keep_deferred(self, data_callable, *args, **kwargs):
        fid = orig_deferred(self, data_callable, *args, **kwargs)
        files[fid] = data_callable
        return fid

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    monkeypatch.setattr(MediaFileManager, "add_deferred", keep_deferred)
    return files


def served(at: AppTest, files: dict[str, Any], label: str) -> bytes:
    """The bytes a download button serves (a deferred one's callable run, as a click
    would)."""
    (btn,) = [b for b in at.get("download_button") if b.proto.label == label]
    if btn.proto.HasField("deferred_file_id"):
        data = files[btn.proto.deferred_file_id]()
        return data.encode() if isinstance(data, str) else bytes(data)
    return files[btn.proto.url.rsplit("/", 1)[1].split(".")[0]]


def test_whatif_metrics_csv_has_the_design_and_its_baselines(cat, downloads):
    at = ok(run_app())
    rows = list(csv.DictReader(io.StringIO(served(at, downloads, "Metrics (CSV)").decode())))
    assert [r["design"] for r in rows] == ["heteroreason (this)", "target alone", *(
        f"{b} (GPU)" for b in views.BASELINES)]
    quick = report(cat, views.default_state(), moves="closed-form")
    this = rows[0]
    assert float(this["latency_s_per_problem"]) == quick.latency_s_per_problem
    lo, hi = quick.intervals["j_per_token"]
    assert (float(this["j_per_token_low"]), float(this["j_per_token_high"])) == (lo, hi)
    brsd = report(cat, views.default_state().gpu_baseline(cat, "brsd"), moves="closed-form")
    assert float(rows[3]["j_per_token"]) == brsd.j_per_token
    lo, hi = brsd.intervals["j_per_token"]
    assert (float(rows[3]["j_per_token_low"]), float(rows[3]["j_per_token_high"])) == (lo, hi)
    alone = report(cat, views.default_state().target_alone(), moves="closed-form")
    assert rows[1]["schedule"] == "target-only"
    assert float(rows[1]["latency_s_per_problem"]) == alone.latency_s_per_problem


def test_pin_from_whatif_then_compare_round_trips_through_the_url(cat):
    at = ok(run_app())
    at.button(key="wi_pin").click()
    ok(at.run())
    assert pins_in(at) == [views.encode_pin(views.default_state())]
    assert at.button(key="wi_pin").disabled  # pinned: the button says so
    # a second design: a new threshold, pinned too
    at.slider(key="wi_accept_threshold").set_value(0.85)
    ok(at.run())
    at.button(key="wi_pin").click()
    ok(at.run())
    pins = pins_in(at)
    assert len(pins) == 2
    # a new session opened from that URL shows both on Compare, with the same numbers
    fresh = AppTest.from_file(APP, default_timeout=120)
    for k, v in at.query_params.items():
        fresh.query_params[k] = v
    ok(fresh.switch_page("dashboard/compare.py").run())
    table = fresh.dataframe[0].value.set_index("")  # one column per design
    states, _ = views.decode_pins(cat, pins)
    names = [views.short_label(s, i) for i, s in enumerate(states)]
    # the simplest alternative beside them: the target alone, once (both share its placement)
    assert list(table.columns) == [*names, "target alone of #1"]
    assert views.unpinned_alternatives(states) == [(0, states[0].target_alone())]
    for n, s in zip([*names, "target alone of #1"], [*states, states[0].target_alone()],
                    strict=True):
        r = report(cat, s, moves="closed-form")
        lo, hi = r.intervals["latency_s_per_problem"]
        assert table.loc["latency per problem", n] == (
            f"{r.latency_s_per_problem:.4g} [{lo:.4g}-{hi:.4g}] s")
    # deltas against the first; the second has the higher threshold
    r0, r1 = (report(cat, s) for s in states)
    assert table.loc["Δ latency per problem", names[1]] == (
        f"{r1.latency_s_per_problem / r0.latency_s_per_problem - 1:+.1%}")
    assert table.loc["Δ latency per problem", names[0]] == "+0.0%"
    assert len(fresh.get("vega_lite_chart")) == 3  # intervals, latency, energy


def test_compare_reference_unpin_and_open(cat):
    a = views.default_state()
    b = views.DesignState(a.system, a.workload, PRESETS["brsd"], {})
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params[views.PIN_PARAM] = [views.encode_pin(a), views.encode_pin(b)]
    ok(at.switch_page("dashboard/compare.py").run())
    names = [views.short_label(a, 0), views.short_label(b, 1)]
    at.selectbox(key="cp_reference").set_value(names[1])
    ok(at.run())
    table = at.dataframe[0].value.set_index("")
    assert table.loc["Δ latency per problem", names[1]] == "+0.0%"
    ra, rb = report(cat, a), report(cat, b)
    assert table.loc["Δ latency per problem", names[0]] == (
        f"{ra.latency_s_per_problem / rb.latency_s_per_problem - 1:+.1%}")
    # unpin the first: the URL keeps only the second
    at.button(key="cp_unpin_0").click()
    ok(at.run())
    assert pins_in(at) == [views.encode_pin(b)]
    # open it in What-if: the design and its metrics follow
    at.button(key="cp_open_0").click()
    ok(at.run())
    assert at.query_params["schedule"] == "brsd"
    assert metric(at, "Latency (s/problem)") == f"{rb.latency_s_per_problem:.3f}"


def test_compare_empty_and_a_bad_pin():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params[views.PIN_PARAM] = ["system=nope"]
    ok(at.switch_page("dashboard/compare.py").run())
    assert any("unknown system 'nope'" in w.value for w in at.warning)
    assert any("No design pinned yet" in i.value for i in at.info)
    at.button(key="cp_pin_current").click()
    ok(at.run())
    assert pins_in(at) == [views.encode_pin(views.default_state())]
    assert list(at.dataframe[0].value.columns) == ["", views.short_label(
        views.default_state(), 0), "target alone of #1"]


def test_compare_csv_and_unpin_all(cat, downloads):
    a = views.default_state()
    b = views.DesignState(a.system, a.workload, PRESETS["rsd"], {"accept_threshold": 0.6})
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params[views.PIN_PARAM] = [views.encode_pin(a), views.encode_pin(b)]
    ok(at.switch_page("dashboard/compare.py").run())
    rows = list(csv.DictReader(io.StringIO(
        served(at, downloads, "Comparison (CSV)").decode())))
    assert [r["design"] for r in rows] == [views.short_label(a, 0), views.short_label(b, 1),
                                           "target alone of #1"]
    assert float(rows[2]["accuracy"]) == report(cat, a.target_alone()).accuracy
    rb = report(cat, b, moves="closed-form")
    assert float(rows[1]["latency_s_per_problem"]) == rb.latency_s_per_problem
    lo, _ = rb.intervals["latency_s_per_problem"]
    assert float(rows[1]["latency_s_per_problem_low"]) == lo
    ra = report(cat, a)
    assert float(rows[1]["latency_s_per_problem_delta"]) == pytest.approx(
        rb.latency_s_per_problem / ra.latency_s_per_problem - 1)
    at.button(key="cp_clear").click()
    ok(at.run())
    assert pins_in(at) == []
    assert any("No design pinned yet" in i.value for i in at.info)
