"""The package's layers (docs/architecture.md, "Packages and modules"; issue 39, part 7): every
import inside dse/, at module level, inside a function or under TYPE_CHECKING, and every module
path a lazy table names, goes from a module to its own package or to a package of a lower
layer, never up. Two packages of one layer do not import each other. No module but the few in
LOOSE stays at the top of dse/, and every package has its layer, so a new one must be placed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dse"

# Layers, lowest first: (the packages or top-level modules of the layer, what they are)
LAYERS: list[tuple[tuple[str, ...], str]] = [
    (("errors", "data"), "error types and exit codes; the package's data files and their one "
                         "reader: nothing of dse below them"),
    (("core",), "what every layer may use: the roles, the caps, array aliases, special "
                "functions, the API's argument checks, lazy names, process settings"),
    (("specs",), "the strict loader and the catalog kinds: hardware, models, workloads and "
                 "systems"),
    (("devices", "width"), "the cost primitives of a model on a device; the width model (a PRM "
                           "ranking or voting over N samples)"),
    (("model",), "what the model is: a system resolved into a Design, its workflow and "
                 "verifier, the PRM's scores, the schedules and the mean-value model"),
    (("engine",), "the evaluators of a design (closed form, simulator) and the Report"),
    (("uncertainty",), "intervals and provenance from declared evidence"),
    (("io",), "what the tool reads and writes: a request resolved into a Design and a Report, "
              "design files, output paths, atomic writes"),
    (("serving",), "many requests at once: a model or a whole design at a load"),
    (("search", "exporters"), "design spaces searched (at one stream or at a load); a "
                              "design's build and serving files"),
    (("api",), "the public Python API's functions (dse/__init__.py loads them on first use)"),
    (("validation",), "fits to published measurements and their cross-validation, some run "
                      "through the public API"),
    (("paper",), "the paper side by side, with its intervals"),
    (("views",), "the dashboard's view-model (and the paper rows the CLI prints)"),
    (("cli",), "the `dse` command"),
    (("launch",), "the `dse` script's entry point: it loads dse.cli"),
]
LAYER = {name: i for i, (names, _) in enumerate(LAYERS) for name in names}

# The modules that stay at the top of dse/ (besides __init__.py, the public names).
LOOSE = {
    "api": "the public API's functions, the one road every client takes",
    "errors": "the public error types and exit codes, below everything",
    "launch": "the `dse` script's entry point, which must load before dse.cli (a module inside "
              "dse/cli/ would load the command table first)",
}

DSE_PATH = re.compile(r"dse(\.\w+)+")


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module under dse/ (a package by its __init__.py)."""
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports(tree: ast.AST, name: str, is_package: bool, known: set[str]
            ) -> list[tuple[int, str]]:
    """(line, dse module) of every import in the tree, wherever it stands; a module path that
    a lazy table names (a string) counts as an import of it. A name imported from a package
    that is not a module of it is an import of the package."""
    here = name if is_package else name.rpartition(".")[0]

    def longest(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    out = []
    for node in ast.walk(tree):
        found: list[str] = []
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here.split(".")[:len(here.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                     for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and DSE_PATH.fullmatch(node.value):
            found = [node.value]
        for f in found:
            if f == "dse" or f.startswith("dse."):
                m = longest(f)
                if m is not None:
                    out.append((node.lineno, m))
    return out


def part(module: str) -> str | None:
    """The package (or top-level module) of dse a module belongs to; None for dse itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def import_map() -> list[tuple[str, int, str]]:
    mods = modules()
    known = set(mods)
    out = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, target in imports(tree, name, path.name == "__init__.py", known):
            out.append((name, line, target))
    return out


def test_the_import_finder_sees_every_kind_of_import():
    src = ("import dse.engine.report\n"
           "from dse.search import grid\n"
           "from . import state\n"
           "def f():\n"
           "    from dse.cli import main\n"
           "if TYPE_CHECKING:\n"
           "    from dse.api import evaluate\n"
           "TABLE = {'x': 'dse.serving.load'}\n")
    known = {"dse", "dse.engine", "dse.engine.report", "dse.search", "dse.search.grid", "dse.cli",
             "dse.api", "dse.serving", "dse.serving.load", "dse.views", "dse.views.state"}
    found = [m for _, m in imports(ast.parse(src), "dse.views.figures", False, known)]
    assert sorted(found) == ["dse.api", "dse.cli", "dse.engine.report", "dse.search.grid",
                             "dse.serving.load", "dse.views.state"]


def test_no_import_goes_up_a_layer():
    """A module imports from its own package or from a lower layer. `dse` itself (its
    __init__.py, the public names) stands above every layer; a name taken from it (the
    version) is loaded before any module of the package anyway, so it counts as no import."""
    up = []
    for source, line, target in import_map():
        a, b = part(source), part(target)
        if a is None or b is None or a == b:
            continue
        if a not in LAYER or b not in LAYER:
            continue  # test_every_package_has_a_layer names it
        if LAYER[b] >= LAYER[a]:
            up.append(f"{source} (line {line}) -> {target}: layer {LAYER[a]} {a!r} imports "
                      f"layer {LAYER[b]} {b!r}")
    assert not up, "imports that go up (or across) a layer:\n" + "\n".join(sorted(set(up)))


def test_every_package_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.is_file() and p.suffix == ".py" and p.name != "__init__.py")
            or (p.is_dir() and (p / "__init__.py").exists())}
    assert sorted(tops - set(LAYER)) == [], "packages or modules without a layer in LAYERS"
    assert sorted(set(LAYER) - tops) == [], "LAYERS names packages that are gone"


def test_only_the_documented_modules_stay_loose():
    loose = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert loose == sorted(LOOSE), (
        f"top-level modules of dse/ besides __init__.py: {loose}; put a new module in the "
        f"package of its concern (docs/architecture.md), or document it in LOOSE: {LOOSE}")

