"""The `dse` command: a table of subcommands, all printing and exit codes.

Exit codes: 0 ok, 1 other error, 2 usage error / unknown name, 3 malformed spec file,
4 infeasible design. Errors print one line on stderr (a traceback only with --debug).

One module per command group (catalog + roofline, evaluate + simulate, compare, reproduce, search:
sweep / optimize / studies, export); each imports its heavy dependencies inside its run
function, so that `dse --help` and `dse catalog` load no engine, search, sympy or optuna.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from dse import __version__
from dse.cli import catalog, compare, evaluate, export, reproduce, search
from dse.cli.common import Command
from dse.errors import DseError
from dse.specs import Catalog
from dse.specs.emit import jsonable

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


COMMANDS: list[Command] = [
    Command("catalog", "list boards, models, serving profiles or scenarios",
            catalog.catalog_args, catalog.run_catalog),
    Command("roofline", "per-token decode and prefill cost of a model on a device",
            catalog.roofline_args, catalog.run_roofline),
    Command("evaluate", "closed-form metrics of a system under each schedule",
            evaluate.evaluate_args, evaluate.run_evaluate),
    Command("simulate", "trace-driven simulation: latency distribution and timeline",
            evaluate.simulate_args, evaluate.run_simulate),
    Command("compare", "designs side by side: each one's difference from the first, with the "
            "joint 90 percent interval of the difference", compare.compare_args,
            compare.run_compare),
    Command("reproduce", "every number the HeteroReason paper reports beside the tool's",
            reproduce.reproduce_args, reproduce.run_reproduce),
    Command("sweep", "exhaustive vectorised search of a design space: exact optimum or front",
            search.sweep_args, search.run_sweep),
    Command("optimize", "Optuna search of a design space (resumable, shareable studies)",
            search.optimize_args, search.run_optimize),
    Command("studies", "list the Optuna studies in a storage with their best values",
            search.studies_args, search.run_studies),
    Command("export", "write a design's build and serving files (FPGA, vLLM, host) as a "
            "bundle", export.export_args, export.run_export),
]


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--catalog", action="append", default=[], metavar="DIR",
                        help="extra catalog directory (boards, models, scenarios); repeatable")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--debug", action="store_true", help="show tracebacks")
    p = argparse.ArgumentParser(prog="dse", description="hetero-dse: design-space exploration "
                                "for heterogeneous FPGA-GPU speculative reasoning")
    p.add_argument("--version", action="version", version=f"dse {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for c in COMMANDS:
        sp = sub.add_parser(c.name, help=c.help, description=c.help, parents=[common])
        c.add_args(sp)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cmd = next(c for c in COMMANDS if c.name == args.command)
    try:
        cat = Catalog.load(args.catalog)
        payload, text = cmd.run(args, cat)
    except DseError as e:
        if args.debug:
            raise
        print(f"dse {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except (OSError, ValueError) as e:
        if args.debug:
            raise
        print(f"dse {args.command}: error: {e}", file=sys.stderr)
        return 1
    try:
        if args.json:
            print(json.dumps(jsonable(payload), indent=2, sort_keys=True))
        else:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `dse ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
