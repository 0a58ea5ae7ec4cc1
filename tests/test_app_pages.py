"""The Paper, Export and Glossary pages under AppTest: the Paper page's counts follow its
filters and its chart has one panel per unit with the tool's intervals as error bars; Export
lists each file's purpose and projection-only flag and the commands that use the bundle;
the Glossary renders every term and filters them."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dse import views
from dse.paper.reproduce import _row
from dse.views import glossary
from tests.test_app import metric, ok

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

FAKE = [_row("speedup_vs_brsd.u280.config1.math500", "d", 1.01, 1.12, 1.05, "ratio"),
        _row("speedup_vs_brsd.v80.config1.math500", "d", 1.26, 1.42, 1.9, "ratio"),
        replace(_row("accuracy.config1.rsd.math500", "d", 60.0, 60.0, 70.0, "accuracy"),
                label="fitted"),
        _row("communication_share.max", "d", 0.0, 0.000123, 0.0001, "order"),
        _row("speculation_stall_ratio.u280.config1.math500", "d", 0.0495, 0.2657, 0.12,
             "share")]




@pytest.fixture
def paper_app(monkeypatch):
    """The app on the Paper page with FAKE as the paper rows, the intervals computed."""
    from dashboard import common, paper_intervals

    with_iv = [replace(r, tool_low=r.tool * 0.9, tool_high=r.tool * 1.1) for r in FAKE[:3]]
    monkeypatch.setattr("dse.paper.reproduce.rows", lambda cat: list(FAKE))
    monkeypatch.setattr("dse.paper.coverage.paper_rows", lambda cat: with_iv)
    common.paper_rows.clear()
    paper_intervals.interval_rows.clear()
    try:
        at = AppTest.from_file(APP, default_timeout=120).run()
        ok(at.switch_page("dashboard/paper.py").run())
        paper_intervals.interval_rows().result(timeout=60)
        yield ok(at.run())
    finally:
        common.paper_rows.clear()
        paper_intervals.interval_rows.clear()


def test_paper_counts_follow_the_filters(paper_app):
    at = paper_app
    assert metric(at, "Rows shown") == "5 of 5"
    assert metric(at, "Rows within tolerance") == "3 / 5"
    assert metric(at, "Paper value in the 90% interval") == "1 / 3"
    at.toggle(key="pp_misses").set_value(True)
    ok(at.run())
    assert metric(at, "Rows shown") == "2 of 5"
    assert metric(at, "Rows within tolerance") == "0 / 2"
    assert len(at.dataframe[0].value) == 2
    # every miss's reason in full below the table
    assert any("speedup_vs_brsd.v80.config1.math500" in m.value for m in at.markdown)
    at.toggle(key="pp_misses").set_value(False)
    at.multiselect(key="pp_groups").set_value(["accuracy"])
    ok(at.run())
    assert metric(at, "Rows shown") == "1 of 5"
    assert metric(at, "Fitted or calibrated rows within") == "0 / 1"


def test_paper_chart_has_a_panel_per_unit(paper_app):
    fig = json.loads(paper_app.get("plotly_chart")[0].proto.spec)
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == ["accuracy (%)", "ratio (x)", "share (fraction)"]  # FAKE: no Jetson row
    axes = {k: v["title"]["text"] for k, v in fig["layout"].items() if k[1:5] == "axis"}
    assert axes["yaxis"] == "hetero-dse (%)" and axes["xaxis2"] == "paper, range midpoint (x)"
    assert fig["layout"]["xaxis3"]["type"] == "log"  # shares of 1e-4 and 0.1 apart
    pts = [d for d in fig["data"] if d["mode"] == "markers"]
    refs = [d for d in fig["data"] if d["mode"] == "lines"]
    assert len(refs) == 3  # y = x in every panel
    # colour means within / outside, the symbol fitted or calibrated / predicted
    names = {d["name"]: (d["marker"]["color"], d["marker"]["symbol"]) for d in pts}
    assert names["within tolerance, predicted"][1] == "circle"
    assert names["outside tolerance, fitted or calibrated"][1] == "diamond"
    assert names["within tolerance, predicted"][0] != names["outside tolerance, predicted"][0]
    # the tool's interval as the y error bar where the row has one
    (u280,) = [d for d in pts if d["xaxis"] == "x2" and d["name"].startswith("within")]
    assert u280["error_y"]["array"][0] == pytest.approx(0.105)
    (shares,) = [d for d in pts if d["xaxis"] == "x3"]
    assert shares["error_y"]["array"] == [None, None]


def test_paper_csv_is_the_rows_shown(paper_app):
    at = paper_app
    at.toggle(key="pp_misses").set_value(True)
    ok(at.run())
    assert at.get("download_button")[0].proto.label.startswith("Download the rows shown")


@pytest.mark.parametrize("system", ["paper-config1-u280", "paper-config1-v80"])
def test_export_shows_purposes_and_next_steps(cat, system, tmp_path):
    from dse.cli import main
    from dse.exporters import render_bundle

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["system"] = system
    at.query_params["accept_threshold"] = "0.8"
    ok(at.run())
    ok(at.switch_page("dashboard/export.py").run())
    state = views.state_from_params(cat, at.session_state["design_params"])
    from dse.model.design import build_design

    files = render_bundle(cat, build_design(cat, state.spec(cat), state.schedule),
                          cat.get("workload", state.workload))
    manifest = json.loads(files["manifest.json"])
    table = at.dataframe[0].value
    assert list(table.columns) == ["file", "bytes", "purpose", "projection only",
                                   "why projection only"]
    for f, purpose, proj in zip(table["file"], table["purpose"], table["projection only"],
                                strict=True):
        if f != "manifest.json":
            assert purpose == manifest["files"][f]["purpose"]
            assert proj == manifest["files"][f]["projection_only"]
    assert any(table["projection only"]) == (system.endswith("v80"))
    code = [c.value for c in at.code]
    assert any("vllm serve --config gpu/vllm_target.yaml" in c for c in code)
    assert any(f"bash fpga/{system.split('-')[-1]}/build.sh" in c for c in code)
    assert "dse evaluate --design design.toml" in code
    (cli,) = [c for c in code if c.startswith("dse export ")]
    assert "--set accept_threshold=0.8" in cli
    # the command line writes the same bundle
    args = shlex.split(cli)[1:]
    args[args.index("--out") + 1] = str(tmp_path / "b")
    assert main(args) == 0
    assert {p: (tmp_path / "b" / p).read_bytes() for p in files} == files


def test_glossary_page_lists_and_filters():
    at = AppTest.from_file(APP, default_timeout=60).run()
    ok(at.switch_page("dashboard/glossary.py").run())
    assert [h.value for h in at.subheader] == [t.name for t in glossary.TERMS]
    at.text_input(key="gl_filter").set_value("shadow")
    ok(at.run())
    shown = [h.value for h in at.subheader]
    assert "shadow sync" in shown and "goodput" not in shown
    assert len(shown) == len(glossary.search("shadow")) < len(glossary.TERMS)
    at.text_input(key="gl_filter").set_value("no-such-word-anywhere")
    ok(at.run())
    assert not at.subheader and at.info
