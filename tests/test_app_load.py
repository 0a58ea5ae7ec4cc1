"""The Load page and What-if's load control under AppTest: the page serves the URL's design
and its alternatives at the URL's load (`dse serve`'s numbers), names that state in its header,
says which design wins at the chosen rate, and its controls ride in the URL; What-if stays
single-stream without a rate and shows `dse serve`'s figures at one."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from dse import views
from dse.cli import main
from dse.views import load as vl
from tests.test_app import APP, ok, run_app

DEFAULT = {"system": views.DEFAULT_SYSTEM, "workload": views.DEFAULT_WORKLOAD,
           "schedule": views.DEFAULT_SCHEDULE}


def open_load(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page("dashboard/load.py")
    return ok(at.run())


def cli_serve(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["serve", "--system", views.DEFAULT_SYSTEM, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_load_page_serves_the_links_design_and_names_it(capsys):
    at = open_load(rate="0.3", slo_ttft="500", accept_threshold="0.8")
    header = at.caption[0].value
    assert "accept 0.8" in header and "rate 0.3/s" in header and "TTFT 500 ms" in header
    assert at.number_input(key="ld_rate").value == 0.3
    assert at.number_input(key="ld_ttft").value == 500.0
    cli = cli_serve(capsys, "--rate", "0.3", "--set", "accept_threshold=0.8", "--goodput",
                    "ttft:500", "tpot:100")
    (table,) = [t.value for t in at.table if "design" in t.value.columns]
    assert list(table["design"]) == ["this design", "target alone", vl.NGRAM,
                                     "brsd_stepahead (GPU draft)"]
    assert table["cost"][0].startswith(f"{cli['cost_usd_per_mtok']:.3g} $/Mtok")
    said = " ".join(m.value for m in at.markdown)
    assert f"${cli['cost_usd_per_mtok']:.3g}/Mtok" in said and "wins at this rate" in said
    assert dict(at.query_params) == {**DEFAULT, "accept_threshold": "0.8", "rate": "0.3",
                                     "slo_ttft": "500"}


def test_load_controls_ride_in_the_url_and_reach_whatif():
    at = open_load()
    assert "Choose a request rate" in at.markdown[0].value
    at.number_input(key="ld_rate").set_value(0.25)
    at.radio(key="ld_evaluator").set_value("closed-form")
    at.number_input(key="ld_tpot").set_value(0.0)  # no TPOT bound
    ok(at.run())
    assert dict(at.query_params) == {**DEFAULT, "rate": "0.25", "slo_tpot": "0"}
    assert "rate 0.25/s" in at.caption[0].value and "TPOT none" in at.caption[0].value
    ok(at.switch_page("dashboard/whatif.py").run())
    assert at.number_input(key="wi_load_rate").value == 0.25
    assert any(m.value.startswith("**At 0.25 requests/s**") for m in at.markdown)


def test_whatif_is_single_stream_without_a_rate_and_serves_at_one(capsys):
    at = ok(run_app())
    assert any(c.value.startswith("Single stream") for c in at.caption)
    assert not any("requests/s**" in m.value for m in at.markdown)
    at.number_input(key="wi_load_rate").set_value(0.3)
    ok(at.run())
    assert at.query_params["rate"] == "0.3"
    cli = cli_serve(capsys, "--rate", "0.3")
    (rows,) = [t.value for t in at.table if "figure" in t.value.columns]
    got = dict(zip(rows["figure"], rows["value"], strict=True))
    assert got["cost"] == f"{cli['cost_usd_per_mtok']:.3g} $/Mtok"
    assert got["mean TTFT"] == f"{cli['mean_ttft_ms']:.4g} ms"
    assert got["output throughput"] == f"{cli['output_throughput']:.4g} tokens/s"
    at.number_input(key="wi_load_rate").set_value(0.0)
    ok(at.run())
    assert "rate" not in at.query_params


def test_a_vanishing_rate_typed_in_says_why_it_has_no_figures():
    """1e-310 requests/s typed into either rate control: no exception, no numbers; the pages
    say the rate is below the floor (dse.core.limits.MIN_RATE_PER_S)."""
    at = open_load()
    at.number_input(key="ld_rate").set_value(1e-310)
    ok(at.run())
    assert any("No this design at load: a rate of 1e-310 requests/s is below 1e-06" in c.value
               for c in at.caption)
    at = ok(run_app())
    at.number_input(key="wi_load_rate").set_value(1e-310)
    ok(at.run())
    assert any(c.value.startswith("No figures at 1e-310 requests/s: a rate of 1e-310") for c in
               at.caption)
