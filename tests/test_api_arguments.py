"""Every argument of every public function (dse/api.py) is checked at the boundary: a hostile
value (wrong type, None, NaN, infinities, huge integers, empty strings, NUL characters, wrong
containers, a bool for a number, out of range) raises dse.ArgumentError, one line naming the
argument, before anything is loaded or computed; never a bare TypeError, AttributeError,
ValueError or OverflowError from deep inside.

Table-driven: each argument has a kind; each kind a generator of hostile values by class
(`hostile`); the compute functions behind the API are replaced by ones that fail the test if
reached, and the valid base call of each function is shown to reach them."""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dse
from dse.errors import ArgumentError


class Reached(Exception):
    """A compute function behind the API was called: the arguments passed the boundary."""


class Weird:
    """An object whose repr fails and that is no number, path or mapping."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class BadPath:
    """An os.PathLike whose __fspath__ returns bytes."""

    def __fspath__(self) -> bytes:
        return b"/tmp/x.toml"


HUGE = (10**30, -(10**30), 10**400, -(10**400), 2**63, 2**64 + 1, 10**5000)
NOT_FINITE = (math.nan, math.inf, -math.inf, float("-nan"))
EMPTY = ("", " ", "\t\n", "\0", "a\0b", "x.toml\0")
WRONG_OBJECTS = (object(), Weird(), b"bytes", 1j, Fraction(1, 3), type, print, ..., Exception())
CONTAINERS = ([], [1], (), ("a",), {}, {"a": 1}, set(), {1}, frozenset(), range(3),
              iter([1]))
BOOLS = (True, False)

# kind -> {class -> values}: every value must be refused for an argument of that kind
STRINGY = {"None": (None,), "empty or NUL string": EMPTY, "wrong type": WRONG_OBJECTS,
           "wrong container": CONTAINERS, "number": (0, 1.5, *NOT_FINITE, 10**400),
           "bool": BOOLS, "bad PathLike": (BadPath(),)}
KINDS: dict[str, dict[str, tuple[Any, ...]]] = {
    "ref": STRINGY,  # a name, a path or a spec object
    "path": STRINGY,
    "optional path": {k: v for k, v in STRINGY.items() if k != "None"},
    "design": {**STRINGY, "system name": ("paper-config1-u280", Path("x.toml"))},
    "catalog": {"wrong type": (*WRONG_OBJECTS, "x", "boards", Path("boards"), 0, True),
                "wrong container": CONTAINERS},
    "flag": {"None": (None,), "number": (0, 1, 0.0, *NOT_FINITE, 10**400),
             "wrong type": (*WRONG_OBJECTS, "true", "False", ""),
             "wrong container": CONTAINERS},
    "whole": {"None": (None,), "not finite": NOT_FINITE, "huge integer": HUGE,
              "bool": BOOLS, "float": (1.0, 2.5, 1e300), "negative": (-1, -(2**53)),
              "wrong type": (*WRONG_OBJECTS, "5", ""), "wrong container": CONTAINERS},
    "optional real": {"not finite": NOT_FINITE, "huge integer": (10**400, -(10**400)),
                      "bool": BOOLS, "wrong type": (*WRONG_OBJECTS, "5", "", "nan"),
                      "wrong container": CONTAINERS},
    "positive real": {"not finite": NOT_FINITE, "huge integer": (10**400, -(10**400)),
                      "bool": BOOLS, "negative or zero": (-1, 0, 0.0, -1e-300, -(10**30)),
                      "wrong type": (*WRONG_OBJECTS, "5", ""), "wrong container": CONTAINERS},
    "confidence": {"None": (None,), "not finite": NOT_FINITE, "huge integer": HUGE,
                   "bool": BOOLS, "out of range": (0, 0.49, 1, 1.0, -0.9, 90),
                   "wrong type": (*WRONG_OBJECTS, "0.9"), "wrong container": CONTAINERS},
    "choice": {"None": (None,), "empty or NUL string": EMPTY, "wrong type": WRONG_OBJECTS,
               "wrong container": CONTAINERS, "number": (0, math.nan, 10**400),
               "bool": BOOLS, "unknown name": ("exact", "Closed-Form", "closed_form")},
    "objectives": {"None": (None,), "bare string": ("latency", "j_per_token", "accuracy"),
                   "empty or NUL string": EMPTY, "wrong type": WRONG_OBJECTS,
                   "wrong container": ([], (), {}, set(), {"latency"}, {"latency": 1},
                                       [None], [1], ["latency", "latency"], ["speed"],
                                       [["latency"]], iter(["latency"])),
                   "number": (0, math.nan, 10**400), "bool": BOOLS},
    "overrides": {"wrong container": ([], [("accept_threshold", 0.8)], ("a",), {1}, "a=1",
                                      "", b"x", 5, True),
                  "bad key": ({5: 1}, {None: 1}, {"": 1}, {" ": 1}, {"a\0": 1},
                              {("a",): 1}, {1.5: 0.8}, {True: 1}),
                  "not finite": tuple({"accept_threshold": v} for v in NOT_FINITE),
                  "huge integer": tuple({"max_backtracks": v} for v in HUGE),
                  "wrong type": tuple({"accept_threshold": v} for v in (
                      *WRONG_OBJECTS, None, {"a": 1}, [1], [None], {1})),
                  "empty or NUL string": ({"target_device": "a\0"},)},
    "optional text": {"empty or NUL string": EMPTY, "wrong type": WRONG_OBJECTS,
                      "wrong container": CONTAINERS, "number": (0, math.nan, 10**400),
                      "bool": BOOLS, "too long": ("x" * 5000,)},
    "schedule": {"empty or NUL string": EMPTY, "wrong type": WRONG_OBJECTS,
                 "wrong container": CONTAINERS, "number": (0, math.nan, 10**400),
                 "bool": BOOLS},
    "trace": {"empty or NUL string": EMPTY, "wrong type": WRONG_OBJECTS,
              "wrong container": CONTAINERS, "number": (0, math.nan, 10**400),
              "bool": BOOLS},
}


_DESIGNS: list[Any] = []


def _design() -> Any:
    """One real Design (built before the compute functions are replaced)."""
    if not _DESIGNS:
        _DESIGNS.append(dse.load_design("paper-config1-u280"))
    return _DESIGNS[0]


# function -> (positional base arguments, keyword base arguments, {argument: kind})
SIGNATURES: dict[str, tuple[Callable[[], tuple[Any, ...]], dict[str, Any], dict[str, str]]] = {
    "load_catalog": (lambda: (), {"shipped": True}, {"dirs": "path", "shipped": "flag"}),
    "load_workload": (lambda: ("gsm8k",), {}, {"workload": "ref", "catalog": "catalog"}),
    "load_design": (lambda: ("paper-config1-u280",), {},
                    {"system": "ref", "catalog": "catalog", "schedule": "schedule",
                     "overrides": "overrides", "check": "flag"}),
    "evaluate": (lambda: (_design(), "gsm8k"), {},
                 {"design": "design", "workload": "ref", "evaluator": "choice",
                  "problems": "whole", "seed": "whole", "intervals": "flag",
                  "catalog": "catalog"}),
    "simulate": (lambda: (_design(), "gsm8k"), {"problems": 20},
                 {"design": "design", "workload": "ref", "problems": "whole", "seed": "whole",
                  "trace": "trace", "intervals": "flag", "catalog": "catalog"}),
    "load_space": (lambda: (), {}, {"space": "optional path", "catalog": "catalog"}),
    "sweep": (lambda: (), {}, {"space": "optional path", "objectives": "objectives",
                               "min_accuracy": "optional real", "max_latency_s": "optional real",
                               "max_power_w": "optional real", "confidence": "confidence",
                               "measured_only": "flag", "catalog": "catalog"}),
    "optimize": (lambda: (), {"trials": 2},
                 {"space": "optional path", "objectives": "objectives", "trials": "whole",
                  "timeout_s": "positive real", "seed": "whole", "storage": "optional text",
                  "study_name": "optional text", "min_accuracy": "optional real",
                  "max_latency_s": "optional real", "max_power_w": "optional real",
                  "confidence": "confidence", "measured_only": "flag", "catalog": "catalog"}),
    "export": (lambda: (_design(), "gsm8k"), {},
               {"design": "design", "workload": "ref", "out": "optional path",
                "force": "flag", "catalog": "catalog"}),
}


def hostile(kind: str) -> list[tuple[str, Any]]:
    """(class, value) of every hostile value of a kind."""
    return [(cls, v) for cls, values in KINDS[kind].items() for v in values]


def _cases() -> list[tuple[str, str, str, Any]]:
    out = []
    for fn, (_, _, args) in SIGNATURES.items():
        for name, kind in args.items():
            out += [(fn, name, cls, v) for cls, v in hostile(kind)]
    return out


CASES = _cases()


@pytest.fixture
def no_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every compute function behind the API raises Reached."""
    import dse.exporters
    import dse.resolve
    import dse.search

    _design()

    def reached(*_: Any, **__: Any) -> Any:
        raise Reached

    for mod, name in ((dse.resolve, "report"), (dse.resolve, "simulate"),
                      (dse.resolve, "resolve_design"), (dse.search, "sweep"),
                      (dse.search, "optimize"), (dse.exporters, "render_bundle")):
        monkeypatch.setattr(mod, name, reached)


def _call(fn: str, name: str, value: Any) -> None:
    base, kwargs, _ = SIGNATURES[fn]
    args = list(base())
    kw = dict(kwargs)
    params = [p.name for p in inspect.signature(getattr(dse, fn)).parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    if name == "dirs":
        args = [value]
    elif name in params[:len(args)]:
        args[params.index(name)] = value
    else:
        kw[name] = value
    getattr(dse, fn)(*args, **kw)


@pytest.mark.parametrize("fn", list(SIGNATURES))
def test_the_base_call_passes_the_boundary(fn: str, no_compute: None) -> None:
    """The table's base calls are valid: they reach the computing (or return), so a refusal
    below is the hostile argument's."""
    base, kwargs, _ = SIGNATURES[fn]
    if fn in ("load_catalog", "load_workload", "load_space"):
        getattr(dse, fn)(*base(), **kwargs)
        return
    with pytest.raises(Reached):
        getattr(dse, fn)(*base(), **kwargs)


def _ids(case: tuple[str, str, str, Any]) -> str:
    return f"{case[0]}-{case[1]}-{case[2]}"


@pytest.mark.parametrize("fn", list(SIGNATURES))
def test_every_hostile_argument_is_refused_by_name(fn: str, no_compute: None) -> None:
    bad = []
    for f, name, cls, value in CASES:
        if f != fn:
            continue
        try:
            _call(fn, name, value)
            bad.append(f"{name} [{cls}] {value!r:.40}: accepted")
        except ArgumentError as e:
            msg = str(e)
            if "\n" in msg or not msg.startswith((f"{name}", "dirs[")) or len(msg) > 400:
                bad.append(f"{name} [{cls}]: message {msg[:120]!r}")
        except Reached:
            bad.append(f"{name} [{cls}] {type(value).__name__}: reached the computing")
        except Exception as e:
            bad.append(f"{name} [{cls}]: {type(e).__name__}: {str(e)[:100]}")
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
    d = _design()
    for call, name in [
        (lambda: dse.load_design(None), "system"),
        (lambda: dse.evaluate("paper-config1-u280", "math500"), "design"),
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
    d = _design()
    with pytest.raises(ArgumentError, match=r"^seed: "):
        dse.simulate(d, "gsm8k", problems=5, seed=value)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.one_of(st.integers(), st.none(), st.just(""), st.tuples(st.text())),
                       st.integers(), min_size=1, max_size=3))
def test_override_keys_must_be_names(overrides: dict[Any, Any]) -> None:
    with pytest.raises(ArgumentError, match=r"^overrides: keys must be"):
        dse.load_design("paper-config1-u280", overrides=overrides)
