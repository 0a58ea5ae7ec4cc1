"""Every figure's label is what happened to it (dse.validation.labels), derived here from what
the fits actually read; cross-validation folds start where the full fit starts; the held-out
guard checks values.

Labels are checked by perturbation: a published figure is moved and the fits' inputs are
recomputed; a figure whose move changes some fit's input is fitted or calibrated, one whose move
changes none is predicted or copied. That the readers are the fits' inputs is checked by
capturing what the fits receive."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dse.paper import coverage, reproduce
from dse.paper.reproduce import reported
from dse.specs import Catalog
from dse.validation import accuracy as acc
from dse.validation import calibrate, declared, gpu_fit, labels, sources
from dse.validation.measurements import load_gpu_measurements


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog.load()


@pytest.fixture(scope="module")
def paper_rows(cat: Catalog) -> list[reproduce.Row]:
    return reproduce.rows(cat)


@pytest.fixture(scope="module")
def device_rows(cat: Catalog) -> list[calibrate.ValidationRow]:
    return calibrate.validation_rows(cat)


def _scaled(node: Any, k: float) -> Any:
    """Every number under the node times k (lists and tables kept)."""
    if isinstance(node, dict):
        return {key: _scaled(v, k) for key, v in node.items()}
    if isinstance(node, list):
        return [_scaled(v, k) for v in node]
    if isinstance(node, int | float) and not isinstance(node, bool):
        return node * k
    return node


def _perturbed(root: dict[str, Any], path: tuple[Any, ...], k: float = 1.1) -> dict[str, Any]:
    out = copy.deepcopy(root)
    node = out
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = _scaled(node[path[-1]], k)
    return out


def _paper_inputs(cat: Catalog, rep: dict[str, Any]) -> tuple[Any, ...]:
    """Every input the accuracy fit and the declared ranges read of the paper's numbers."""
    inputs = acc.fit_inputs(cat, rep)
    return (tuple((r.id, r.measured) for r in inputs.rows), inputs.rejection_cap,
            declared.v80_comparable_ratio(rep))


def test_paper_labels_follow_what_the_fits_read(cat: Catalog,
                                               paper_rows: list[reproduce.Row]) -> None:
    """Move each row's paper figure: the rows whose move changes an input of the accuracy fit
    (its rows) are fitted, of its constraint or a declared range calibrated, of none
    predicted."""
    rep = reported()
    base = _paper_inputs(cat, rep)
    seen: dict[tuple[Any, ...], str] = {}
    for r in paper_rows:
        datum = labels.paper_datum(r.id, rep)
        if datum not in seen:
            moved = _paper_inputs(cat, _perturbed(rep, datum[1:]))
            seen[datum] = ("fitted" if moved[0] != base[0] else
                           "calibrated" if moved[1:] != base[1:] else "predicted")
        assert r.label == seen[datum], r.id
    assert {r.label for r in paper_rows} == {"fitted", "calibrated", "predicted"}


def test_the_accuracy_fit_reads_its_reader(cat: Catalog, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """cross_validate fits exactly fit_inputs' rows under its cap, in the full fit and in
    every fold."""
    calls: list[tuple[list[str], float]] = []

    def fake_fit(c: Catalog, rows: Any, cap: float) -> tuple[Any, float, float]:
        calls.append(([r.id for r in rows], cap))
        from dse.model.discrimination import shipped

        return shipped(), 0.0, 0.0

    monkeypatch.setattr(acc, "fit", fake_fit)
    acc.cross_validate(cat, reported())
    inputs = acc.fit_inputs(cat, reported())
    assert calls[0] == ([r.id for r in inputs.rows], inputs.rejection_cap)
    assert all(set(ids) < set(calls[0][0]) and cap == inputs.rejection_cap
               for ids, cap in calls[1:])


def test_the_v80_range_reads_the_papers_comparable(cat: Catalog,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    class Read(Exception):
        pass

    def reader(rep: Any) -> float:
        raise Read

    monkeypatch.setattr(declared, "v80_comparable_ratio", reader)
    with pytest.raises(Read):
        declared.v80_implied_factors(cat, reported())


def _device_fit_outputs(cat: Catalog) -> tuple[Any, ...]:
    return (calibrate.fit_flexllm(cat), calibrate.fit_jetson_host(cat))


def test_device_labels_follow_what_the_fits_read(cat: Catalog,
                                                 device_rows: list[calibrate.ValidationRow],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Move each non-GPU row's measured figure in the data the FlexLLM and Jetson fits read:
    a row whose move changes a fit's result is fitted; the others are not (copied where a
    board file holds the figure itself, else predicted)."""
    root = labels.published_root()
    base = _device_fit_outputs(cat)
    paths = {
        "fpga_relative.u280.llama-3.2-1b-instruct.decode_throughput_ratio":
            ("measured.toml", "fpga_relative", 0, "decode_throughput_ratio"),
        "design.a100.llama-3.2-1b-instruct.hf_tokens_per_s":
            ("quoted", "flexllm_baseline_tokens_per_s"),
        "fpga_relative.v80.llama-3.2-1b-instruct.projected_decode_vs_u280":
            ("quoted", "flexllm_v80_projected_decode_ratio"),
        "fpga_relative.u280.llama-3.2-1b-instruct.energy_efficiency_ratio":
            ("measured.toml", "fpga_relative", 0, "energy_efficiency_ratio"),
        "fpga_power.u280.running_w": ("measured.toml", "fpga_power", 0, "running_w"),
        "fpga_power.u280.idle_w": ("measured.toml", "fpga_power", 0, "idle_w"),
        "fpga_memory.u280.hbm_bytes_per_s":
            ("measured.toml", "fpga_memory", 0, "measured_hbm_bytes_per_s"),
    }
    for i, link in enumerate(root["measured.toml"]["link"]):
        paths[f"link.{link['name']}.effective_bytes_per_s"] = (
            "measured.toml", "link", i, "measured_bytes_per_s")
    checked = 0
    for r in device_rows:
        if r.id.startswith("gpu_decode."):
            continue
        moved_root = _perturbed(root, paths[r.id])
        monkeypatch.setattr(labels, "published_root", lambda m=moved_root: m)
        moved = _device_fit_outputs(cat)
        monkeypatch.setattr(labels, "published_root", lambda: root)
        read = any(a != pytest.approx(b, rel=1e-9) for a, b in zip(moved, base, strict=True))
        assert (r.label == "fitted") == read, r.id
        checked += 1
    assert checked == len(paths)
    by_id = {r.id: r.label for r in device_rows}
    assert by_id["fpga_power.u280.idle_w"] == "copied"  # boards/fpgas/u280.toml static_W
    assert by_id["fpga_memory.u280.hbm_bytes_per_s"] == "copied"  # its hbm_measured_GBps


def test_gpu_labels_are_the_points_the_profile_fits_receive(
        cat: Catalog, device_rows: list[calibrate.ValidationRow],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """fit_all's fits receive measured.toml's points and never reference_points.toml's (held
    out); a GPU row is fitted exactly when its point reached a fit (or the Jetson host fit)."""
    received: set[str] = set()

    def fake_fit(c: Catalog, spec: Any, pts: Any, *, base: Any = None) -> gpu_fit.Fit:
        received.update(m.id for m in pts)
        return gpu_fit.Fit(spec.profile, {}, {}, "ampere", len(pts), 0.0, 0.0)

    monkeypatch.setattr(gpu_fit, "fit_profile", fake_fit)
    pts, _ = load_gpu_measurements(cat.names("model"), cat.names("gpu"),
                                   cat.names("gpu-serving"))
    gpu_fit.fit_all(cat, pts)
    received.add(calibrate.jetson_point(labels.published_root()).id)
    ids = {p_.id for p_ in calibrate.gpu_points()}
    gpu_rows = [r for r in device_rows if r.id.startswith("gpu_decode.")]
    assert len(gpu_rows) == len(ids) == 25
    for r, p_ in zip(gpu_rows, calibrate.gpu_points(), strict=True):
        assert (r.label == "fitted") == (p_.id in received), r.id
    assert not any(i.startswith("reference_points.toml") for i in received)
    assert sum(r.label == "predicted" for r in gpu_rows) == 11  # the 11 reference points


def test_coverage_and_counts_follow_the_labels(paper_rows: list[reproduce.Row]) -> None:
    s = reproduce.summary(paper_rows)
    assert sum(s[k] for k in labels.LABELS) == s["rows"] == len(paper_rows)
    counted = [r for r in paper_rows if coverage.counted(r)]
    assert all(r.label == "predicted" for r in counted)
    assert not any(r.id.startswith(("rejection_probability.", "speedup_vs_brsd_stepahead.v80"))
                   for r in counted)


def test_copy_is_found_by_value() -> None:
    reads = labels.Reads(frozenset(), frozenset())
    assert labels.label(("x",), reads, 37.3, 37.3) == "copied"
    assert labels.label(("x",), reads, 37.3, 37.31) == "predicted"
    fitted = labels.Reads(frozenset({("x", "a")}), frozenset())
    assert labels.label(("x",), fitted, 1.0, 1.0) == "fitted"  # a table a fit read part of


# ----------------------------------------------------- folds start where the full fit starts


def _recording_optimizer(record: list[np.ndarray]) -> Callable[..., Any]:
    """A least_squares stand-in that records its start and returns a point moved off it (as a
    real fit would), so that a fold started at a fitted value shows as a start not in the
    defaults."""

    class Result:
        def __init__(self, x: np.ndarray) -> None:
            self.x, self.cost = np.asarray(x, dtype=float), 0.0

    def fake(fun: Any, x0: Any, bounds: Any = None, **kw: Any) -> Result:
        x = np.asarray(x0, dtype=float)
        record.append(x)
        lo, hi = (np.asarray(b, dtype=float) for b in bounds)
        return Result(np.clip(0.97 * x + 0.003, lo, hi))

    return fake


def test_accuracy_folds_start_from_the_default_starts(cat: Catalog,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every least-squares call of the fit and its cross-validation starts at one of STARTS
    (bounded), never at a fitted value."""
    import scipy.optimize

    starts: list[np.ndarray] = []
    monkeypatch.setattr(scipy.optimize, "least_squares", _recording_optimizer(starts))
    acc.cross_validate(cat, reported())
    allowed = {tuple(st[:5]) for st in acc.STARTS}
    assert len(starts) > len(acc.STARTS)  # the folds called it too
    assert all(tuple(np.round(x[:5], 12)) in allowed for x in starts)
    assert all(np.all(x[5:] == x[5]) for x in starts)  # every rho at its start value


def test_gpu_loo_starts_from_the_default_start(cat: Catalog,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pts, _ = load_gpu_measurements(cat.names("model"), cat.names("gpu"),
                                   cat.names("gpu-serving"))
    spec = gpu_fit.FITS["fastertransformer"]
    mine = gpu_fit.points_for(spec, pts)
    f = gpu_fit.fit_profile(cat, spec, mine)
    pf = gpu_fit.ProfileFit(spec, cat.serving(spec.profile), {}, f,
                            gpu_fit.fitted_serving(cat.serving(spec.profile), f), mine)
    layout = gpu_fit._layout(cat, spec, mine)[1]
    default = np.clip([q.x0 for q, _ in layout], [q.lo for q, _ in layout],
                      [q.hi for q, _ in layout])
    starts: list[np.ndarray] = []
    monkeypatch.setattr(gpu_fit, "least_squares", _recording_optimizer(starts))
    gpu_fit.leave_one_out(cat, pf)
    assert len(starts) == len(mine) and all(np.array_equal(x, default) for x in starts)
    assert "x0" not in inspect.signature(gpu_fit.fit_profile).parameters


# ------------------------------------------------------------------- the held-out guard


def test_fitted_rows_equal_their_source_blocks(cat: Catalog) -> None:
    rows = acc.calibration_rows(cat, reported())
    blocks = sources.load()["block"]
    assert sources.problems(rows, blocks) == []
    assert {sources.block_of(r.id) for r in rows} == {b["id"] for b in blocks}


def test_a_swapped_held_out_value_fails_the_guard(cat: Catalog) -> None:
    """RSD's tuned-threshold (delta*) GSM8K value, held out, put under the delta 0.7 row's id."""
    from dataclasses import replace

    rows = acc.calibration_rows(cat, reported())
    held = {h["id"]: h for h in acc.rsd_published()["held_out"]}
    swapped_value = held["rsd.table2.math.1.5b-7b.prm1.5b.dstar.gsm8k"]["rsd_pct"]
    target = "rsd.table2.math.1.5b-7b.prm1.5b.d0.7.gsm8k"
    swapped = [replace(r, measured=swapped_value) if r.id == target else r for r in rows]
    blocks = sources.load()["block"]
    assert any(target in p for p in sources.problems(swapped, blocks))
    edited = copy.deepcopy(blocks)
    edited[0]["values"][0] += 0.1  # a block edited to match would fail its checksum
    assert any("sha256" in p for p in sources.problems(rows, edited))
