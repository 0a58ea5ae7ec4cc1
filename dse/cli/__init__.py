"""The `dse` command: a table of subcommands, all printing and exit codes.

Exit codes: 0 ok, 1 other error, 2 usage error / unknown name, 3 malformed spec file,
4 infeasible design, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). Errors print one line
on stderr (a traceback only with --debug).

One module per command group (catalog + roofline, evaluate + simulate, compare, reproduce, search:
sweep / optimize / studies, export, serve); each imports its heavy dependencies inside its run
function, so that `dse --help` and `dse catalog` load no engine, search, sympy or optuna.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence

from dse import __version__
from dse.cli import catalog, compare, evaluate, export, reproduce, search, serve
from dse.cli.common import Command, WithOutput, check_given, once_by_default
from dse.core.process import retain_freed_memory
from dse.errors import (
    EXIT_SIGINT,
    INTERRUPTED,
    DseError,
    FlagValueError,
    SpecError,
    Terminated,
    UsageError,
    clear_stop,
    note_stop,
)
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
    Command("serve", "a model or a whole design serving many requests: throughput, latency "
            "percentiles, goodput, energy and cost at a load", serve.serve_args,
            serve.run_serve),
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
        once_by_default(sp)  # an option given twice is refused, never the last one winning
        c.add_args(sp)
    return p


# exit codes of a stopped command, as a shell reports a process killed by the signal
EXIT_SIGTERM = 143


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `dse` command; the exit code. Ctrl-C and SIGTERM end it with one line and exit
    130 / 143 (every temporary removed on the way out: dse.io.atomic writes in `finally`)."""
    retain_freed_memory()
    if sys.stderr is None:  # started with stderr closed (2>&-): its lines go nowhere, never
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # to stdout (print's fallback)
    code = _main(argv)
    if argv is None and threading.current_thread() is threading.main_thread():
        # the command's work is done and its code decided: a Ctrl-C or SIGTERM that arrives
        # now (the interpreter shutting down) must not turn a written result's exit 0, or a
        # stopped run's 130/143, into a death by signal (exit -2)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        if code in (EXIT_SIGINT, EXIT_SIGTERM):
            # a stopped run has said so and removed its temporaries; leave now: an interrupt
            # that landed in code the interpreter ran for a library (PyRun_*) marks it
            # "unhandled", and the interpreter's own exit would then kill the process by
            # SIGINT (exit -2) although the command caught it
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    return code


def _main(argv: Sequence[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in given
    # the command's name for a line about a signal that lands before the arguments are parsed
    name = given[0] if given and given[0] in {c.name for c in COMMANDS} else ""
    with _sigterm_raises():
        try:
            parser = build_parser()  # in the try: it loads modules, a Ctrl-C may land there
            args = parser.parse_args(argv)
            name, debug = args.command, args.debug
            return _run(args)
        except KeyboardInterrupt as e:
            _traceback(debug, e)
            return _stopped(name, INTERRUPTED, EXIT_SIGINT)
        except Terminated as e:
            _traceback(debug, e)
            return _stopped(name, "terminated (SIGTERM); nothing more was written",
                            EXIT_SIGTERM)
        except Exception as e:  # a library's cleanup failing while the signal unwound it
            sig = _signal_under(e)
            if sig is None:
                raise
            _traceback(debug, e)
            if isinstance(sig, KeyboardInterrupt):
                return _stopped(name, INTERRUPTED, EXIT_SIGINT)
            return _stopped(name, "terminated (SIGTERM); nothing more was written",
                            EXIT_SIGTERM)


def _signal_under(e: BaseException) -> BaseException | None:
    """The Ctrl-C or SIGTERM an exception was raised while handling, if any: e.g. Optuna's
    trial runner referencing a state it had not set yet when Terminated arrived inside it
    (UnboundLocalError, its context the Terminated)."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, KeyboardInterrupt | Terminated):
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


def _stopped(name: str, why: str, code: int) -> int:
    say(f"dse {name}: {why}" if name else f"dse: {why}")
    return code


def say(line: str) -> None:
    """Write one line to stderr. The exit code never depends on whether it could be written:
    a closed stderr (`2>&-`: sys.stderr is None) drops it (never to stdout, where print would
    put it), and one that fails or whose reader left (a broken pipe) is pointed at /dev/null,
    so that the interpreter's last flush does not fail again (exit 120)."""
    err = sys.stderr
    if err is None:
        return
    try:
        print(line, file=err, flush=True)
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), err.fileno())


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises Terminated and Ctrl-C KeyboardInterrupt while inside, each also noted
    (dse.errors.note_stop) for the long loops to raise again where a library lost it (main
    thread only; the previous handlers come back on leaving)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(_signum: int, _frame: object) -> None:
        note_stop(Terminated)  # raised again by the long loops if this one is lost
        raise Terminated

    def raise_interrupt(_signum: int, _frame: object) -> None:
        note_stop(KeyboardInterrupt)
        raise KeyboardInterrupt

    def unraisable(u: sys.UnraisableHookArgs) -> None:
        # a stop raised inside a clean-up the interpreter runs for a library (a weakref or
        # finaliser callback) is "ignored" with a traceback on standard error; it is noted and
        # raised again by the long loops, so the command still ends in its one line: say
        # nothing here, and pass every other unraisable exception on
        if isinstance(u.exc_value, KeyboardInterrupt | Terminated):
            return
        previous_hook(u)

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    previous_int = signal.signal(signal.SIGINT, raise_interrupt)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    clear_stop()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        sys.unraisablehook = previous_hook
        clear_stop()


def _run(args: argparse.Namespace) -> int:
    cmd = next(c for c in COMMANDS if c.name == args.command)
    try:
        if sys.stdout is None:  # started with stdout closed (`>&-`): refuse before computing
            raise UsageError("standard output is closed (>&-); give it a file or /dev/null")
        check_given(args)
        cat = Catalog.load(args.catalog)
        payload, text = cmd.run(args, cat)
    except WithOutput as e:  # the output first, then the error's line and code
        out = json.dumps(jsonable(e.payload), indent=2, sort_keys=True) if args.json else e.text
        code = _print_output(args.command, out)
        say(f"dse {args.command}: error: {e}")
        return code or e.exit_code
    except DseError as e:
        _traceback(args.debug, e)
        e = _blamed_on_set(e)
        say(f"dse {args.command}: error: {e}")
        return e.exit_code
    except (OSError, ValueError) as e:
        _traceback(args.debug, e)
        text = (f"{e.filename}: {e.strerror}" if isinstance(e, OSError)
                and e.filename is not None and e.strerror else str(e))
        say(f"dse {args.command}: error: {text}")
        return 1
    out = json.dumps(jsonable(payload), indent=2, sort_keys=True) if args.json else text
    return _print_output(args.command, out)


def _traceback(debug: bool, e: BaseException) -> None:
    """With --debug, the error's traceback on stderr; the command then ends as without it
    (its one line, its exit code: --debug never changes the code)."""
    if debug and sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            traceback.print_exception(e, file=sys.stderr)


def _blamed_on_set(e: DseError) -> DseError:
    """A check across a system's keys that fails only once `--set` changed it (a target whose
    tokenizer the draft does not share, found where the design is built) is a flag's error:
    it names --set and exits 2, as `--set`'s other errors do (the reason kept), not the
    shipped file it was read from."""
    from dse.io.resolve import edited_by

    if isinstance(e, SpecError) and not isinstance(e, FlagValueError) and \
            edited_by(e.path, "--set"):
        return FlagValueError("--set", e.key, e.reason)
    return e


def _print_output(name: str, out: str) -> int:
    """Print the command's output: a path that is not UTF-8 comes out as the bytes it was
    given (surrogateescape); a reader that left (`| head`) is no error; a full or failing
    stdout (`>/dev/full`) is one line and exit 1."""
    stdout = sys.stdout
    if hasattr(stdout, "reconfigure"):
        with contextlib.suppress(Exception):
            stdout.reconfigure(errors="surrogateescape")
    try:
        try:
            print(out, file=stdout)
        except UnicodeEncodeError:  # an encoding without the character: escape it
            if hasattr(stdout, "reconfigure"):
                stdout.reconfigure(errors="backslashreplace")
            print(out, file=stdout)
        stdout.flush()
    except BrokenPipeError:  # `dse ... | head`: the reader left; not an error
        _detach_stdout()
    except OSError as e:
        _detach_stdout()
        say(f"dse {name}: error: cannot write the output to standard output: "
            f"{e.strerror or e}")
        return 1
    return 0


def _detach_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
