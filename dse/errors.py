"""Error types. Each carries one line a user can act on; the CLI prints it and exits non-zero."""

from __future__ import annotations


class DseError(Exception):
    """Base class: an error whose message is meant for the user, printed as one line."""

    exit_code = 1


class SpecError(DseError):
    """A catalog, design or trace file is malformed: names the file and the key."""

    exit_code = 3

    def __init__(self, path: object, key: str, message: str) -> None:
        self.path = str(path)
        self.key = key
        self.reason = message
        where = ": ".join(x for x in (self.path, key) if x)
        super().__init__(f"{where}: {message}" if where else message)


class FlagValueError(SpecError):
    """A bad `--set key=value` (or a dashboard URL parameter of the same form): a flag, so the
    exit code of a usage error; the message names `--set` and the key."""

    exit_code = 2


class UnknownNameError(DseError):
    """A name that is not in a registry; the message lists the valid ones."""

    exit_code = 2

    def __init__(self, what: str, name: str, valid: list[str] | tuple[str, ...]) -> None:
        self.what, self.name = what, name
        shown = ", ".join(sorted(valid)) if valid else "(none)"
        super().__init__(f"unknown {what} {name!r}; valid: {shown}")


class Terminated(BaseException):
    """SIGTERM arrived (the `dse` command turns it into this, as Python turns SIGINT into
    KeyboardInterrupt): not an Exception, so no `except Exception` swallows it, and every
    `finally` (temporary files, database sessions) runs on the way out."""


# The stop a signal asked for (Ctrl-C or SIGTERM), kept by the `dse` command's handlers beside
# the exception they raise: an exception raised where the interpreter ignores it (a __del__ or
# a weakref callback that a library's garbage runs, "Exception ignored in ...") is lost, and a
# long loop would then run on for ever. The loops of the long commands (each Optuna trial,
# each hardware choice of a sweep) call `raise_if_stopped` and raise it again.
_STOP: list[type[BaseException]] = []


def note_stop(kind: type[BaseException]) -> None:
    """A signal's handler: remember the stop it asked for (see _STOP)."""
    _STOP[:] = [kind]


def clear_stop() -> None:
    """A command starts (or ends): no stop pending."""
    _STOP.clear()


def raise_if_stopped() -> None:
    """Raise the stop a signal asked for, if any (KeyboardInterrupt or Terminated)."""
    if _STOP:
        raise _STOP[0]()


class InfeasibleError(DseError):
    """A design that cannot run (a model that does not fit, a build beyond the board)."""

    exit_code = 4


class UsageError(DseError):
    """A missing or contradictory command-line option."""

    exit_code = 2


class ArgumentError(UsageError):
    """An argument of the Python API (`import dse`) of the wrong type or out of range: the
    message names the argument and says what it takes."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}")


# exit code and line of a command stopped by Ctrl-C, as a shell reports a process killed by
# SIGINT (the `dse` entry point's, dse.launch, and dse.cli.main's)
EXIT_SIGINT = 130
INTERRUPTED = "interrupted (Ctrl-C); nothing more was written"
