"""dse.validation.gpu_power: the launch-bound wait share fitted per GPU generation, the default
generation's value for the others, provenance lines and leave-one-source-out."""

from __future__ import annotations

import pytest

from dse.specs import Catalog
from dse.validation import gpu_power


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return Catalog.load()


@pytest.fixture(scope="module")
def fits(cat):
    return gpu_power.fit_by_generation(cat)


def test_generations_with_rows_are_fitted_within_range(fits):
    assert gpu_power.DEFAULT_GENERATION in fits
    for f in fits.values():
        assert 0.0 <= f.wait_power_fraction <= 1.0
        assert len(f.point_ids) == len(f.rel_errors) > 0


def test_generation_without_rows_takes_the_default(fits):
    missing = "hopper"
    assert missing not in fits  # no published launch-bound power on a Hopper GPU yet
    default = fits[gpu_power.DEFAULT_GENERATION].wait_power_fraction
    assert gpu_power.value_for(fits, missing) == default


def test_every_board_file_carries_its_generation_value(cat, fits):
    for name in cat.names("gpu"):
        gpu = cat.gpu(name)
        assert gpu.wait_power_fraction == pytest.approx(
            gpu_power.value_for(fits, gpu.generation), rel=1e-5), name


def test_provenance_lines(fits):
    gen = gpu_power.DEFAULT_GENERATION
    assert gpu_power.board_source(fits, fits[gen].devices[0], gen).startswith("fitted:")
    assert gpu_power.board_source(fits, "rtx-a6000", "ampere").startswith(
        "assumption: the ampere generation's fit")
    assert "no published launch-bound power on a hopper GPU" in gpu_power.board_source(
        fits, "h100-sxm", "hopper")


def test_leave_one_source_out_refits_without_the_document(cat):
    pts = gpu_power.power_points()
    loso = gpu_power.leave_one_source_out(cat, pts)
    assert len(loso) == len(pts)
    for doc in {p.document for p in loso}:
        rest = [p for p in pts if gpu_power.source_document(p) != doc]
        fits = gpu_power.fit_by_generation(cat, rest)
        for p in (q for q in loso if q.document == doc):
            assert p.wait_power_fraction == pytest.approx(gpu_power.value_for(fits, p.generation))
            assert p.rel_error == pytest.approx(p.predicted_w / p.measured_w - 1.0)
