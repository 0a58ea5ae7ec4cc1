"""The `dse` command's entry point (pyproject's [project.scripts]; `python -m dse.launch`).

It catches a Ctrl-C that arrives while the command's modules load (numpy and the command
table: about a quarter of a second, before `dse.cli.main` can catch anything), so that the
command ends with its one line and exit 130 rather than a traceback, then hands over to
`dse.cli.main`, which handles every later Ctrl-C and SIGTERM. Only the `dse` package itself
(about 50 ms, no numpy) loads before this module runs.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from dse.errors import EXIT_SIGINT, INTERRUPTED


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    command = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else ""
    sys.stderr.write(f"dse{' ' + command if command else ''}: {INTERRUPTED}\n")
    sys.stderr.flush()
    os._exit(EXIT_SIGINT)  # nothing has run, so nothing needs unwinding


def main() -> int:
    signal.signal(signal.SIGINT, _interrupted_while_starting)
    from dse.cli import main as run

    signal.signal(signal.SIGINT, signal.default_int_handler)  # dse.cli.main's from here on
    return run()


if __name__ == "__main__":
    sys.exit(main())
