"""Rerun every `$ dse ...` example of the README and the command pages and paste its output
back into the page (what tests/test_readme_examples.py and, for serve.md,
tests/test_serving.py compare).

    python scripts/refresh_examples.py            # rewrite the pages in place
    python scripts/refresh_examples.py --check    # exit 1 if any page would change

Each example runs as the test runs it: in-process, 100 columns (COLUMNS unset), a study in a
fresh directory that the page calls /tmp/ex, an export into a fresh bundle directory that the
page names. A search's timing is whatever this run took.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from dse.cli import main as dse_main

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "docs/commands/catalog-roofline.md", "docs/commands/evaluate-simulate.md",
         "docs/commands/search.md", "docs/commands/serve.md", "docs/commands/compare.md")
BLOCK = re.compile(r"^```\n(\$ dse .*?)^```", re.S | re.M)
STUDY_DIR = "/tmp/ex"


def _run(cmd: str) -> str:
    argv = shlex.split(cmd)[1:]
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        swap: list[tuple[str, str]] = []
        if argv[0] == "optimize":
            os.chdir(tmp)
            swap.append((tmp, STUDY_DIR))
        if argv[0] == "export":
            i = argv.index("--out") + 1
            swap.append((str(Path(tmp) / "bundle"), argv[i]))
            argv[i] = str(Path(tmp) / "bundle")
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = dse_main(argv)
        finally:
            os.chdir(here)
        if code != 0:
            raise SystemExit(f"{cmd}: exit {code}: {err.getvalue().strip()}")
        text = out.getvalue().rstrip("\n")
        for a, b in swap:
            text = text.replace(a, b)
        return "\n".join(ln.rstrip() for ln in text.splitlines())


def refresh(text: str) -> str:
    def block(m: re.Match[str]) -> str:
        parts = re.split(r"^\$ ", m.group(1), flags=re.M)
        new = []
        for part in parts[1:]:
            cmd = part.partition("\n")[0]
            gap = "\n" * (len(part) - len(part.rstrip("\n")))  # the page's spacing after it
            new.append(f"$ {cmd}\n{_run(cmd)}{gap or chr(10)}")
        return "```\n" + "".join(new) + "```"

    return BLOCK.sub(block, text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    os.environ.pop("COLUMNS", None)
    stale = []
    for page in PAGES:
        path = ROOT / page
        old = path.read_text(encoding="utf-8")
        new = refresh(old)
        if new != old:
            stale.append(page)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    print(("stale: " if args.check else "rewrote: ") + (", ".join(stale) or "none"))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
