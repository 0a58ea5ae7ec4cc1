"""The command line answers at once: each command imports only what it uses (issue part 7).

Not timed (benchmarks/bench_cli.py times them): a fresh interpreter runs `dse.cli.main(argv)`
and reports which modules it loaded. sympy (the mean-value model), optuna (studies), plotly
(charts) and streamlit (the dashboard) cost 0.3-1 s each to import and none of these commands
uses them; scipy.stats and scipy.optimize neither, and `dse evaluate` loads no scipy at all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import contextlib, io, json, sys
from dse.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as e:
        rc = e.code
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""
NEVER = ("sympy", "optuna", "plotly", "streamlit", "scipy.stats", "scipy.optimize")
# the parser's --objective choices and constraint flags come from the search's tables, a module
# that imports neither numpy nor the engine; nothing else of dse.search loads
SEARCH_VOCABULARY = {"dse.search", "dse.search.objectives"}
EVALUATE = ["evaluate", "--system", "paper-config1-u280", "--scenario", "math500"]
ROOFLINE = ["roofline", "--model", "qwen2.5-0.5b-instruct", "--device", "u280"]


def loaded(argv: list[str]) -> tuple[int, set[str]]:
    p = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                       check=True, timeout=120)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["rc"], set(out["modules"])


def under(modules: set[str], top: str) -> list[str]:
    return sorted(m for m in modules if m == top or m.startswith(top + "."))


@pytest.mark.parametrize("argv", [["--help"], ["catalog", "boards"], ROOFLINE],
                         ids=["help", "catalog", "roofline"])
def test_parser_catalog_and_roofline_import_no_scipy(argv):
    rc, mods = loaded(argv)
    assert rc == 0
    assert "dse.cli" in mods and "numpy" in mods
    for top in (*NEVER, "scipy", "dse.engine"):
        assert not under(mods, top), f"dse {' '.join(argv)} imported {under(mods, top)[:5]}"
    assert set(under(mods, "dse.search")) <= SEARCH_VOCABULARY, under(mods, "dse.search")


def test_evaluate_imports_no_scipy_sympy_optuna_plotly_or_streamlit():
    """Not even scipy.special: the closed form's special functions are dse/core/special.py's."""
    rc, mods = loaded(EVALUATE)
    assert rc == 0
    assert "dse.engine.closed_form" in mods  # it did evaluate
    for top in (*NEVER, "scipy"):
        assert not under(mods, top), f"dse evaluate imported {under(mods, top)[:5]}"


def test_search_vocabulary_imports_no_numpy():
    """The tables the parser is built from load without numpy (and without the engine)."""
    code = ("import json, sys; import dse.search.objectives as o; assert o.CONSTRAINT_TABLE; "
            "print(json.dumps(sorted(sys.modules)))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=120)
    mods = set(json.loads(p.stdout))
    assert not under(mods, "numpy") and not under(mods, "dse.engine")
    assert set(under(mods, "dse.search")) == SEARCH_VOCABULARY


def test_library_leaves_process_settings_to_the_entry_points():
    """The library never loads dse.core.process (glibc's malloc thresholds: the `dse` command and
    the dashboard set them at start); the `dse` command does."""
    code = ("import json, sys; from dse.model.design import build_design; "
            "from dse.io.design_files import load_system; from dse.engine.evaluate import "
            "evaluate; from dse.model.schedules import PRESETS; from dse.specs import Catalog; "
            "from dse.uncertainty import attach; cat = Catalog.load(); "
            "d = build_design(cat, load_system(cat, 'paper-config1-u280'), PRESETS['rsd']); "
            "w = cat.workload('math500'); attach(evaluate(d, w), d, w); "
            "print(json.dumps(sorted(sys.modules)))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=120)
    assert "dse.core.process" not in json.loads(p.stdout.strip().splitlines()[-1])
    assert "dse.core.process" in loaded(EVALUATE)[1]
