"""Bad input or a failed computation: which one an error raised by a command is.

Every option is checked before any work (exit code 2, ``attnphase: error: --OPTION ...``).  Once
its checks have passed, a command says so with :func:`begin`; a ``ValueError`` raised after that
point comes from inside a computation (a solve, a training, writing a dataset), not from the
user's input, and :func:`attnphase.cli.main` reports it as a failure (exit code 1,
``attnphase: failed: while WHAT: ...``), never as bad input.
"""

from __future__ import annotations

from contextvars import ContextVar

#: What the running command is doing once its checks have passed (None: still checking its input).
_WORK: ContextVar[str | None] = ContextVar("attnphase_work", default=None)


def begin(what: str) -> None:
    """The command's input is checked; from here on it computes ``what`` (words: "solving the
    state evolution")."""
    _WORK.set(what)


def current() -> str | None:
    """What the command computes since :func:`begin`, or None while it checks its input."""
    return _WORK.get()


def reset() -> None:
    """A new command starts: its input is not checked yet."""
    _WORK.set(None)


def failure_message(what: str, exc: BaseException) -> str:
    """The one line printed for an error raised while computing ``what`` (exit code 1)."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return f"attnphase: failed: while {what}: {msg} (a failure of the computation, not of the input)"
