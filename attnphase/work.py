"""Bad input or a failed computation: which one an error raised by a command is.

Once its checks have passed, a command says so with :func:`begin`; a ``ValueError`` raised after that point
comes from a computation, and :func:`attnphase.cli.main` reports it as a failure (exit code 1, ``attnphase:
failed: while WHAT: ...``), never as bad input (exit code 2). Warnings are one-line notes (:func:`warnings_as_notes`).
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: What the running command is doing once its checks have passed (None: still checking its input).
_WORK: ContextVar[str | None] = ContextVar("attnphase_work", default=None)
#: The signals recorded when the command started (:func:`attnphase.interrupts.recorded`; None: not run by
#: :func:`attnphase.cli.main`).
_MARK: ContextVar[int | None] = ContextVar("attnphase_signal_mark", default=None)


def begin(what: str) -> None:
    """The command's input is checked; from here on it computes ``what`` ("solving the state evolution").  A signal
    that arrived since the command started and whose stop a library swallowed (code that clears the error raised
    in it) is raised here, before the computation."""
    from attnphase.interrupts import stop_since

    mark = _MARK.get()
    stop = None if mark is None else stop_since(mark)
    if stop is not None:
        raise stop
    _WORK.set(what)


def current() -> str | None:
    """What the command computes since :func:`begin`, or None while it checks its input."""
    return _WORK.get()


def reset(mark: int | None = None) -> None:
    """A new command starts, ``mark`` signals recorded so far: its input is not checked yet."""
    _WORK.set(None)
    _MARK.set(mark)


def failure_message(what: str, exc: BaseException) -> str:
    """The one line printed for an error raised while computing ``what`` (exit code 1)."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, OverflowError):  # math's (errno, strerror) pair or numpy's text: say what it means
        said = exc.args[1] if len(exc.args) == 2 and isinstance(exc.args[0], int) else msg
        msg = f"floating-point overflow ({said}): a number beyond double precision (an extreme model value?)"
    return f"attnphase: failed: while {what}: {msg} (a failure of the computation, not of the input)"


@contextmanager
def warnings_as_notes() -> Iterator[None]:
    """Python warnings raised while a command runs as one-line notes, each distinct one once; numpy's
    floating-point warnings counted and summed up in one note at the end."""
    counts: Counter[str] = Counter()
    said: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split())
        if issubclass(category, RuntimeWarning) and " encountered in " in text:
            counts[text.split(" encountered in ")[0]] += 1  # once per place (the default filter)
            return
        key = f"{category.__name__}: {text}"
        if key not in said:
            said.add(key)
            print(f"attnphase: note: {key}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        try:
            yield
        finally:
            if counts:
                kinds = ", ".join(f"{k} (at {n} place{'s' if n > 1 else ''})" for k, n in counts.most_common())
                print(f"attnphase: note: floating-point {kinds} in intermediate values: numbers beyond double "
                      f"precision (an extreme model value?); a result is reported only where its solve converged "
                      f"to finite values", file=sys.stderr)
