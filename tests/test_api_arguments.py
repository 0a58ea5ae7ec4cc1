"""Every argument of every public function (dse/api.py) is checked at the boundary: a hostile
value (wrong type, None, NaN, infinities, huge integers, empty strings, NUL characters, wrong
containers, a bool for a number, out of range) raises dse.ArgumentError, one line naming the
argument, before anything is loaded or computed; never a bare TypeError, AttributeError,
ValueError or OverflowError from deep inside.

Table-driven: each argument has a kind; each kind a generator of hostile values by class
(`hostile`); the compute functions behind the API are replaced by ones that fail the test if
reached, and the valid base call of each function is shown to reach them."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.errors import ArgumentError
from tests.hostile_api import CASES, SIGNATURES, Reached, base_design, verdict
from tests.hostile_api import no_compute as _no_compute


@pytest.fixture
def no_compute() -> Iterator[None]:
    with _no_compute():
        yield


@pytest.mark.parametrize("fn", list(SIGNATURES))
def test_the_base_call_passes_the_boundary(fn: str, no_compute: None) -> None:
    """The table's base calls are valid: they reach the computing (or return), so a refusal
    below is the hostile argument's."""
    base, kwargs, _ = SIGNATURES[fn]
    if fn in ("load_catalog", "load_workload", "load_space", "load_spec", "model_from_hf_config"):
        getattr(dse, fn)(*base(), **kwargs)
        return
    with pytest.raises(Reached):
        getattr(dse, fn)(*base(), **kwargs)


@pytest.mark.parametrize("fn", list(SIGNATURES))
def test_every_hostile_argument_is_refused_by_name(fn: str, no_compute: None) -> None:
    bad = [f"{name} [{cls}] {value!r:.40}: {why}" for f, name, cls, value in CASES
           if f == fn and (why := verdict(fn, name, value)) is not None]
    assert not bad, "\n".join(bad)


def test_variant_counts_per_class() -> None:
    """Many variants per class (the counts the reliability report prints)."""
    counts = Counter(cls for _, _, cls, _ in CASES)
    assert len(CASES) >= 900, len(CASES)
    for cls in ("None", "wrong type", "not finite", "huge integer", "empty or NUL string",
                "wrong container", "bool"):
        assert counts[cls] >= 20, (cls, counts[cls])


def test_the_issue_examples(tmp_path: Path) -> None:
    """The failures seen before the checks, each now one line naming its argument."""
    d = base_design()
    for call, name in [
        (lambda: dse.load_design(None), "system"),
        (lambda: dse.evaluate(b"paper-config1-u280", "math500"), "design"),
        (lambda: dse.load_design("paper-config1-u280", catalog="x"), "catalog"),
        (lambda: dse.load_design("paper-config1-u280", overrides=[("accept_threshold", 1)]),
         "overrides"),
        (lambda: dse.load_design("paper-config1-u280", overrides={5: 1}), "overrides"),
        (lambda: dse.load_design(str(tmp_path / "a\0b.toml")), "system"),
        (lambda: dse.sweep(objectives="latency"), "objectives"),
        (lambda: dse.optimize(timeout_s=math.nan), "timeout_s"),
        (lambda: dse.optimize(timeout_s=-1), "timeout_s"),
        (lambda: dse.optimize(seed=10**30), "seed"),
        (lambda: dse.sweep(max_power_w=10**400), "max_power_w"),
        (lambda: dse.simulate(d, "gsm8k", seed=2**32), "seed"),
    ]:
        with pytest.raises(ArgumentError) as e:
            call()
        assert e.value.argument == name and "\n" not in str(e.value)


def test_empty_storage_is_refused_and_writes_nothing(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgumentError, match="storage: must not be empty"):
        dse.optimize(storage="", trials=2)
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(
    lambda x: not (math.isfinite(x) and x > 0)),
    st.integers(max_value=0), st.integers(min_value=2**1024),
    st.text(max_size=5), st.none(), st.booleans(), st.lists(st.integers(), max_size=2)))
def test_timeout_takes_only_a_finite_positive_number(value: Any) -> None:
    if value is None:  # None: no timeout (valid)
        return
    with pytest.raises(ArgumentError, match=r"^timeout_s: "):
        dse.optimize(timeout_s=value, trials=1, study_name="x", storage="sqlite://")


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=2**32),
                 st.floats(allow_nan=True), st.booleans(), st.text(max_size=3), st.none()))
def test_seeds_are_whole_numbers_a_generator_takes(value: Any) -> None:
    d = base_design()
    with pytest.raises(ArgumentError, match=r"^seed: "):
        dse.simulate(d, "gsm8k", problems=5, seed=value)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.one_of(st.integers(), st.none(), st.just(""), st.tuples(st.text())),
                       st.integers(), min_size=1, max_size=3))
def test_override_keys_must_be_names(overrides: dict[Any, Any]) -> None:
    with pytest.raises(ArgumentError, match=r"^overrides: keys must be"):
        dse.load_design("paper-config1-u280", overrides=overrides)
