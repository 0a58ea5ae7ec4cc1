"""The Paper and Export pages' pure data (dse.views.paper, dse.views.bundle): rows filtered
and counted, one panel per unit, the CSV, the misses in full; a bundle's file table, the
commands read from its files and the `dse export` line."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import replace

import pytest

from dse import views
from dse.exporters import render_bundle
from dse.model.design import build_design
from dse.paper.reproduce import _row, miss_reason
from dse.views import bundle as bv
from dse.views import paper as pv

ROWS = [_row("speedup_vs_brsd.u280.config1.math500", "d", 1.01, 1.12, 1.05, "ratio"),
        _row("speedup_vs_brsd.v80.config1.math500", "d", 1.26, 1.42, 1.9, "ratio"),
        replace(_row("accuracy.config1.rsd.math500", "d", 60.0, 60.0, 70.0, "accuracy"),
                label="fitted"),
        _row("brsd_speed_relative_to_rsd.config1.math500", "d", 0.73, 0.93, 0.8, "share",
             unit="x"),
        _row("communication_share.max", "d", 0.0, 0.000123, 0.0001, "order")]


def test_rows_carry_their_unit(cat):
    from dse.paper import reproduce

    assert [r.unit for r in ROWS] == ["x", "x", "%", "x", "fraction"]
    units = {r.id.split(".")[0]: r.unit for r in reproduce.rows(cat)}
    assert units["accuracy"] == "%" and units["t2_speedup"] == "x"
    assert units["brsd_speed_relative_to_rsd"] == "x"
    assert units["step_latency_share"] == units["communication_share"] == "fraction"
    assert set(units.values()) == set(pv.UNIT_TITLES)


def test_filter_and_counts():
    shown = pv.filter_rows(ROWS, group=["speedup_vs_brsd"], misses_only=True)
    assert [r.id for r in shown] == ["speedup_vs_brsd.v80.config1.math500"]
    n = pv.counts(shown, len(ROWS))
    assert (n["rows"], n["total"], n["within"], n["with_interval"]) == (1, 5, 0, 0)
    assert pv.counts(ROWS, 5)["within"] == 3
    assert pv.groups(ROWS) == ["accuracy", "brsd_speed_relative_to_rsd",
                               "communication_share", "speedup_vs_brsd"]


def test_with_intervals_merges_by_id():
    iv = [replace(ROWS[0], tool_low=1.0, tool_high=1.1)]
    merged = pv.with_intervals(ROWS, iv)
    assert (merged[0].tool_low, merged[0].tool_high) == (1.0, 1.1)
    assert merged[0].inside is True and merged[1].inside is None
    assert merged[1:] == ROWS[1:]


def test_panels_one_per_unit_with_error_bars():
    rows = pv.with_intervals(ROWS, [replace(ROWS[0], tool_low=1.0, tool_high=1.2)])
    ps = pv.panels(rows)
    assert [p.unit for p in ps] == ["%", "x", "fraction"]
    ratio = ps[1]
    assert {p["id"] for p in ratio.points} == {r.id for r in ROWS if r.unit == "x"}
    u280 = next(p for p in ratio.points if p["id"].startswith("speedup_vs_brsd.u280"))
    assert u280["paper_mid"] == pytest.approx(1.065)
    assert (u280["paper_minus"], u280["paper_plus"]) == pytest.approx((0.055, 0.055))
    assert (u280["tool_minus"], u280["tool_plus"]) == pytest.approx((0.05, 0.15))
    assert u280["series"] == "within tolerance, predicted"
    assert all(p["tool_minus"] is None for p in ratio.points if p is not u280)
    # the y = x line spans every value and interval end; linear axes for a narrow span
    assert ratio.line == pytest.approx((0.8, 1.9)) and not ratio.log_axes
    assert ps[0].points[0]["series"] == "outside tolerance, fitted or calibrated"


def test_a_wide_span_of_shares_is_drawn_on_log_axes():
    rows = [*ROWS, _row("speculation_stall_ratio.v80.config1.math500", "d", 0.05, 0.27, 0.3,
                        "share")]
    (share,) = [p for p in pv.panels(rows) if p.unit == "fraction"]
    assert share.log_axes and len(share.points) == 2 and share.line[0] > 0


def test_a_row_without_a_tool_value_is_left_out_of_the_chart():
    rows = [replace(ROWS[2], tool=math.nan), ROWS[0]]
    assert [p.unit for p in pv.panels(rows)] == ["x"]
    assert pv.table_rows(rows)[0]["hetero-dse [90% interval]"] == "nan"


def test_table_text_and_misses_in_full():
    t = pv.table_rows(ROWS)
    assert t[0]["paper"] == "1.01-1.12x" and t[2]["paper"] == "60%"
    assert t[4]["paper"] == "0-0.000123" and t[2]["quantity"] == "accuracy (%)"
    assert t[1]["if missed"] == miss_reason(ROWS[1].id) and t[0]["if missed"] == ""
    groups = pv.miss_groups(ROWS)
    assert [ids for _, ids in groups] == [[ROWS[1].id], [ROWS[2].id]]
    assert groups[0][0] == miss_reason(ROWS[1].id) and len(groups[0][0]) > 100


def test_csv_has_every_row_shown():
    rows = pv.with_intervals(ROWS, [replace(ROWS[0], tool_low=1.0, tool_high=1.2)])
    got = list(csv.DictReader(io.StringIO(pv.csv_bytes(rows[:2]).decode("utf-8"))))
    assert [r["id"] for r in got] == [r.id for r in rows[:2]]
    assert tuple(got[0]) == pv.CSV_COLUMNS
    assert (got[0]["tool_low"], got[0]["inside"], got[0]["unit"]) == ("1", "True", "x")
    assert got[1]["tool_low"] == "" and got[1]["miss_reason"] == miss_reason(rows[1].id)


@pytest.fixture(scope="module", params=["paper-config1-u280", "paper-config1-v80",
                                        "paper-config2-3090"])
def bundle(request, cat):
    s = views.state_from_params(cat, {"system": request.param, "step_ahead": "false"})
    return s, render_bundle(cat, build_design(cat, s.spec(cat), s.schedule),
                            cat.get("workload", s.workload))


def test_file_rows_are_the_manifest(bundle):
    _, files = bundle
    m = bv.manifest(files)
    rows = bv.file_rows(files)
    assert [r["file"] for r in rows] == sorted(files)
    for r in rows:
        e = m["files"].get(r["file"])
        if e is None:
            assert r["file"] == "manifest.json" and not r["projection only"]
            continue
        assert (r["purpose"], r["projection only"]) == (e["purpose"], e["projection_only"])
        assert bool(r["why projection only"]) == e["projection_only"]


def test_next_steps_come_from_the_files(bundle):
    _, files = bundle
    steps = bv.next_steps(files, "b.zip", "b")
    cmds = [c for s in steps for c in s.commands]
    assert cmds[:2] == ["unzip b.zip -d b", "cd b"]
    for c in cmds[2:]:
        if "vllm serve" in c or c.startswith("dse "):
            path = c.split()[-1]
            assert f"#   {c}" in files[path].decode()  # quoted from the file's own header
        else:
            path = c.split()[-1]
            assert path.endswith("/build.sh") and path in files
            assert c.startswith('KERNEL_SRC="<') and "KERNEL_SRC" in files[path].decode()
    has_fpga = any(p.startswith("fpga/") for p in files)
    assert any("bash fpga/" in c for c in cmds) == has_fpga
    serve = [c for c in cmds if "vllm serve" in c]
    assert len(serve) == sum(p.startswith("gpu/vllm_") for p in files)
    host = next(s for s in steps if s.title == "Configure the host scheduler")
    assert host.commands == () and "no host program" in host.remark
    if bv.manifest(files)["projection_only"]:
        build = next(s for s in steps if s.title.startswith("Build the FPGA draft"))
        assert "Projection only" in build.remark


def test_export_command_sets_the_design(bundle):
    state, _ = bundle
    cmd = bv.export_command(state, "out dir")
    sched = state.params()["schedule"]
    assert cmd.startswith(f"dse export --system {state.system} --scenario {state.workload} "
                          f"--schedule {sched} --set ")
    assert state.set_args() and all(f"--set {a}" in cmd for a in state.set_args())
    assert cmd.endswith("--out 'out dir'")


def test_required_env_and_header_commands():
    script = '#!/usr/bin/env bash\n: "${KERNEL_SRC:?set KERNEL_SRC to the source}"\n: "${J:=8}"'
    assert bv.required_env(script) == [("KERNEL_SRC", "set KERNEL_SRC to the source")]
    assert bv.header_commands("# a\n#   run me\nkey: 1\n#   not a header") == ["run me"]


def test_the_jetson_slowdowns_get_a_ratio_panel_of_their_own():
    rows = [*ROWS, _row("edge_gpu_draft.system_slowdown_vs_heteroreason.config1.math500", "d",
                        5.0, 6.0, 5.2, "ratio")]
    ps = pv.panels(rows)
    assert [p.title for p in ps] == ["accuracy (%)", "ratio (x)",
                                     "ratio (x): Jetson draft slowdown", "share (fraction)"]
    assert [p["id"] for p in ps[2].points] == [rows[-1].id]
    assert rows[-1].id not in {p["id"] for p in ps[1].points}
    assert ps[1].line[1] < 5.0  # the other ratios' panel is not stretched to 5x
