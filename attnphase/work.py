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
from dataclasses import dataclass, field

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


@dataclass
class Notes:
    """A command's notes so far: each distinct warning said (``said``, in order), numpy's floating-point warnings
    counted by kind (``counts``)."""

    said: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)


#: The notes of the command running in this context (None: none is).
_NOTES: ContextVar[Notes | None] = ContextVar("attnphase_notes", default=None)


def _say(key: str) -> None:
    print(f"attnphase: note: {key}", file=sys.stderr)


def _floating_point_note(counts: Counter[str]) -> None:
    kinds = ", ".join(f"{k} (at {n} place{'s' if n > 1 else ''})" for k, n in counts.most_common())
    _say(f"floating-point {kinds} in intermediate values: numbers beyond double precision (an extreme model "
         f"value?); a result is reported only where its solve converged to finite values")


@contextmanager
def warnings_as_notes(into: Notes | None = None) -> Iterator[None]:
    """Python warnings raised while a command runs as one-line notes, each distinct one once; numpy's
    floating-point warnings counted and summed up in one note at the end.  Inside another (a task run in the
    command's process) the notes are the outer one's: each said once in all.  With ``into`` (a task, on a worker
    or not) they are collected there and not printed: the command's process says them with :func:`add_notes`."""
    outer = _NOTES.get()
    notes = into if into is not None else outer if outer is not None else Notes()
    printing = into is None

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).split())
        if issubclass(category, RuntimeWarning) and " encountered in " in text:
            notes.counts[text.split(" encountered in ")[0]] += 1  # once per place (the default filter)
            return
        key = f"{category.__name__}: {text}"
        if key not in notes.said:
            notes.said.append(key)
            if printing:
                _say(key)

    token = _NOTES.set(notes)
    with warnings.catch_warnings():
        warnings.showwarning = show
        try:
            yield
        finally:
            _NOTES.reset(token)
            if printing and outer is None and notes.counts:
                _floating_point_note(notes.counts)


def add_notes(task: Notes) -> None:
    """A task's collected notes said in the command's process: each warning not said yet, the floating-point counts
    added to the command's (said at its end); said at once where no command's notes are open here."""
    notes = _NOTES.get()
    for key in task.said:
        if notes is None or key not in notes.said:
            if notes is not None:
                notes.said.append(key)
            _say(key)
    if notes is not None:
        notes.counts.update(task.counts)
    elif task.counts:
        _floating_point_note(task.counts)
