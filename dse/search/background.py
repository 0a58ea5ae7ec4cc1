"""Work that runs in a forked process while this one does something else: `dse optimize` at a
load sweeps the target-only and width arrangements (a few seconds on one CPU) while its
single-stream study runs on another (`Background`). Where processes are not forked, or this
process has one CPU, the work runs in this process when its result is asked for: the result
is the same either way (tested)."""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, TypeVar

from dse.search.exhaustive import FORKS, default_processes

T = TypeVar("T")


def _child(conn: Any, fn: Callable[[], Any]) -> None:
    # Ctrl-C reaches the whole process group: the parent stops this one (SIGTERM) and says
    # one line; the child must not run the command's own handlers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        out: tuple[str, Any] = ("ok", fn())
    except BaseException as e:  # every failure goes back to the parent
        out = ("error", e)
    try:
        conn.send(out)
    except Exception as e:  # an unpicklable result or error: say what it was
        conn.send(("error", RuntimeError(f"background work failed: {e}")))
    finally:
        conn.close()


class Background(Generic[T]):
    """`fn()` started now in a forked process (on a machine with two or more CPUs), its value
    (or its exception, raised again) from `result()`. Use it as a context manager: leaving
    the block stops a process whose result was never asked for."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._proc: Any = None
        self._conn: Any = None
        if FORKS and default_processes() >= 2:
            ctx = multiprocessing.get_context("fork")
            self._conn, child = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_child, args=(child, fn), daemon=True)
            self._proc.start()
            child.close()

    @property
    def forked(self) -> bool:
        return self._proc is not None

    def result(self) -> T:
        if self._proc is None:
            return self._fn()
        try:
            status, value = self._conn.recv()
        except EOFError:  # the process died without a word (killed)
            raise RuntimeError("the background sweep ended without a result") from None
        finally:
            self.close()
        if status == "error":
            raise value
        return value

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.terminate()
            self._proc.join()
            self._conn.close()
            self._proc = None
            self._fn = _gone

    def __enter__(self) -> Background[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _gone() -> Any:
    raise RuntimeError("the background work was stopped before its result was read")
