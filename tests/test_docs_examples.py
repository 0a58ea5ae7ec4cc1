"""The Python examples of the README and docs/python-api.md run as written.

Each page's ```python blocks run in order in one namespace (later blocks use earlier names), in
a temporary working directory, and must print something."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/python-api.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: str) -> list[str]:
    return BLOCK.findall((ROOT / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES)
def test_page_has_python_examples(page: str) -> None:
    assert python_blocks(page), f"{page} has no ```python block"


@pytest.mark.parametrize("page", PAGES)
def test_python_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for i, block in enumerate(python_blocks(page)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"{page} block {i + 1}", "exec"), namespace)
        assert out.getvalue().strip(), f"{page} block {i + 1} printed nothing"
