"""Hostile arguments for every public function of the Python API (dse/api.py), by class:
each argument has a kind, each kind a table of hostile values by class (wrong type, None, NaN,
infinities, huge integers, empty or NUL strings, wrong containers, bools for numbers, out of
range). Shared by tests/test_api_arguments.py and scripts/reliability_report.py.

`no_compute` replaces the compute functions behind the API by ones that raise `Reached`, so a
value that slipped past the boundary shows (and nothing slow runs)."""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest import mock

import dse
from dse.errors import ArgumentError

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_FILE = ROOT / "scenarios" / "systems" / "paper-config1-u280.toml"
HF_CONFIG_FILE = ROOT / "tests" / "data" / "hf_configs" / "gpt2" / "config.json"


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
    "design": STRINGY,  # a Design, or a system name, a TOML path or a SystemSpec
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


def base_design() -> Any:
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
    "evaluate": (lambda: (base_design(), "gsm8k"), {},
                 {"design": "design", "workload": "ref", "evaluator": "choice",
                  "problems": "whole", "seed": "whole", "intervals": "flag",
                  "catalog": "catalog"}),
    "simulate": (lambda: (base_design(), "gsm8k"), {"problems": 20},
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
    "load_spec": (lambda: (str(SYSTEM_FILE),), {}, {"path": "path"}),
    "model_from_hf_config": (lambda: (str(HF_CONFIG_FILE),), {}, {"path": "path"}),
    "export": (lambda: (base_design(), "gsm8k"), {},
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


@contextlib.contextmanager
def no_compute() -> Iterator[None]:
    """Every compute function behind the API raises Reached while inside."""
    import dse.exporters
    import dse.io.resolve
    import dse.search

    base_design()
    targets = ((dse.io.resolve, "report"), (dse.io.resolve, "simulate"),
               (dse.io.resolve, "resolve_design"), (dse.search, "sweep"),
               (dse.search, "optimize"), (dse.exporters, "render_bundle"))
    for mod, name in targets:  # load every lazy name first: a module imported while the
        getattr(mod, name)     # patches are in place would keep the patched function

    def reached(*_: Any, **__: Any) -> Any:
        raise Reached

    with contextlib.ExitStack() as stack:
        for mod, name in targets:
            stack.enter_context(mock.patch.object(mod, name, reached))
        yield


def verdict(fn: str, name: str, value: Any) -> str | None:
    """What is wrong with calling dse.<fn> with argument `name` = value (inside no_compute),
    or None: it must raise ArgumentError, one line starting with the argument's name."""
    try:
        call(fn, name, value)
        return "accepted"
    except ArgumentError as e:
        msg = str(e)
        if "\n" in msg or not msg.startswith((f"{name}", "dirs[")) or len(msg) > 400:
            return f"message {msg[:120]!r}"
    except Reached:
        return f"{type(value).__name__}: reached the computing"
    except Exception as e:  # the point: nothing but ArgumentError
        return f"{type(e).__name__}: {str(e)[:100]}"
    return None


def call(fn: str, name: str, value: Any) -> None:
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
