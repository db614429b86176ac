"""Signals as exceptions, and the short stretches that must not be cut by one.

* ``SIGINT`` (Ctrl-C) is Python's ``KeyboardInterrupt``; ``SIGTERM`` and ``SIGHUP`` (``kill``, ``timeout``, a
  closed terminal, a batch system's wall time) become :class:`Terminated` while a command runs
  (:func:`handling_termination`), so every ``finally`` and context manager of the command runs: the local
  cluster is closed, the staging folder removed, a temporary file unlinked.  The command's exit code is
  ``128 + signal number`` (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
* :func:`deferred` holds both back over a stretch that cannot be cut cleanly (starting or closing a local
  Dask cluster, moving the finished outputs into ``--out DIR``): a signal that arrives there is raised
  when the stretch ends.

This module imports the standard library only.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Iterator


class Terminated(BaseException):
    """The command was asked to stop by ``signum`` (SIGTERM, SIGHUP): exit code ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


#: The signals that stop a command (SIGINT is Python's KeyboardInterrupt).
TERMINATING = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


def stopped(exc: BaseException) -> int:
    """The one line and the exit code of a run stopped by Ctrl-C (130) or a termination signal (128 + N)."""
    if isinstance(exc, Terminated):
        print(f"attnphase: terminated ({exc.name})", file=sys.stderr)
        return exc.exit_code
    print("attnphase: interrupted", file=sys.stderr)
    return 130


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _install(signals: tuple, handler: object) -> dict:
    """``handler`` for each of ``signals`` that is not ignored (nor set outside Python); the previous handlers."""
    previous = {}
    for s in signals:
        old = signal.getsignal(s)
        if old is not signal.SIG_IGN and old is not None:
            previous[s] = old
            signal.signal(s, handler)
    return previous


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def handling_termination() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` (a signal set to be ignored stays
    ignored); the previous handlers are restored after it."""
    if not _in_main_thread():
        yield
        return
    previous = _install(TERMINATING, _raise_terminated)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while the block runs; the first one that arrived is raised
    (``KeyboardInterrupt`` or :class:`Terminated`) once the block is done.  An exception of the block wins, and
    so does one already unwinding when the block runs (a clean-up in a ``finally``: a second Ctrl-C during the
    clean-up of a SIGTERM leaves the exit code 143)."""
    if not _in_main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, frame: object) -> None:
        arrived.append(signum)

    previous = _install((signal.SIGINT, *TERMINATING), hold)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
    if arrived and sys.exc_info()[1] is None:  # a stretch run while an exception unwinds: that one wins
        if arrived[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(arrived[0])
