"""Signals as exceptions, and the short stretches that must not be cut by one.

* ``SIGINT`` (Ctrl-C) is Python's ``KeyboardInterrupt``; ``SIGTERM`` and ``SIGHUP`` become :class:`Terminated`
  while a command runs (:func:`handling_termination`), so every ``finally`` of the command runs; the exit code
  is ``128 + signal number``.
* Every signal that arrives meanwhile is recorded (:func:`arrived`): an exception a C extension made of a
  ``KeyboardInterrupt`` (numpy's import makes an ``ImportError`` of it) still ends the command as the stop.
* A stop raised where Python prints and drops exceptions is sent again as its signal (:func:`_redeliver`).
* :func:`deferred` holds signals back over a stretch that cannot be cut cleanly (starting or closing a local
  Dask cluster, moving the finished outputs into ``--out DIR``).

This module imports the standard library only.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
from typing import Iterator


class Terminated(BaseException):
    """The command was asked to stop by ``signum`` (SIGTERM, SIGHUP): exit code ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


#: The signals that stop a command (SIGINT is Python's KeyboardInterrupt).
TERMINATING = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


def stopped(exc: BaseException) -> int:
    """The one line and the exit code of a run stopped by Ctrl-C (130) or a termination signal (128 + N)."""
    if isinstance(exc, Terminated):
        print(f"attnphase: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        _STOPPED.append(exc.exit_code)
        return exc.exit_code
    print("attnphase: interrupted", file=sys.stderr)
    _STOPPED.append(130)
    return 130


#: Whether this process is the ``attnphase`` command: set by the package as the command starts (:mod:`attnphase`),
#: never by a library import.
THE_COMMAND = False

#: The exit codes of the stops this process has reported (:func:`stopped`).
_STOPPED: list[int] = []


def exit_code_kept(code: int) -> int:
    """``code``; where the command's run was stopped (in the command's own process only, :data:`THE_COMMAND`), the
    process ends here with it (signals ignored, ``atexit`` run, streams flushed, ``os._exit(code)``): left to the
    interpreter's own exit, CPython may kill itself with SIGINT (-2) after a Ctrl-C a C library turned into an error."""
    if not (_STOPPED and THE_COMMAND and _in_main_thread()):  # never in a process that imported the library
        return code
    import atexit

    for s in (signal.SIGINT, *TERMINATING):
        signal.signal(s, signal.SIG_IGN)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


#: The signals that arrived while this module's handlers held, first first.
_ARRIVED: list[int] = []


def _stop_of(signum: int) -> BaseException:
    """The stop a signal stands for: ``KeyboardInterrupt`` for SIGINT, else :class:`Terminated`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _raise_interrupt(signum: int, frame: object) -> None:
    """The signal recorded and its stop raised; inside :func:`_redeliver`, sent again (:func:`_held_in_the_hook`)."""
    _ARRIVED.append(signum)
    if _held_in_the_hook(signum, frame):
        return
    raise _stop_of(signum)


def _held_in_the_hook(signum: int, frame: object) -> bool:
    """Whether the handler runs inside :func:`_redeliver` (``frame`` or a caller of it is the hook's): then the signal
    is sent again (:func:`_send_again`) instead of raised there, where Python would print and drop it."""
    while frame is not None:
        if getattr(frame, "f_code", None) is _redeliver.__code__:
            _send_again(signum)
            return True
        frame = getattr(frame, "f_back", None)
    return False


def arrived() -> int | None:
    """The first signal recorded by this module's handlers (SIGINT, SIGTERM, SIGHUP), or None."""
    return _ARRIVED[0] if _ARRIVED else None


def recorded() -> int:
    """How many signals this module's handlers have recorded so far: a mark for :func:`stop_since`."""
    return len(_ARRIVED)


def stop_since(mark: int) -> BaseException | None:
    """The stop (``KeyboardInterrupt`` or :class:`Terminated`) of the first signal recorded after ``mark``
    (:func:`recorded`), or None: an error a command raised after it is what a library made of the stop."""
    return _stop_of(_ARRIVED[mark]) if len(_ARRIVED) > mark else None


def as_stop(exc: BaseException) -> BaseException | None:
    """The stop ``exc`` stands for: itself if it is one (``KeyboardInterrupt``, :class:`Terminated`); the
    recorded signal's stop if one arrived (the exception is then what a C extension made of it); None otherwise."""
    if isinstance(exc, (KeyboardInterrupt, Terminated)):
        return exc
    signum = arrived()
    return None if signum is None or isinstance(exc, SystemExit) else _stop_of(signum)


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
    previous = _install(TERMINATING, _raise_interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Ctrl-C recorded, as it arrives
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def stop_at_top_level(kind: type, value: BaseException, tb: object) -> None:
    """``sys.excepthook`` of the console command: a stop that reaches the top level (a signal in the instant
    before :func:`attnphase.__main__.run` takes over) is its one line and exit code; anything else the default."""
    stop = as_stop(value)
    if stop is None:
        sys.__excepthook__(kind, value, tb)
        return
    code = stopped(stop)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(code)


def _redeliver(unraisable: object) -> None:
    """``sys.unraisablehook`` of the console command: a stop raised where Python would drop it is sent again as its
    signal (:func:`_send_again`); once a signal has arrived, anything else raised there is what a library made of the
    stop (a destructor of an object whose construction the stop cut: llvmlite's ``ModuleRef`` without its handle,
    compiling numba's loops) and is not printed, the stop ending the command; otherwise it goes to the previous hook."""
    exc = getattr(unraisable, "exc_value", None)
    if isinstance(exc, (KeyboardInterrupt, Terminated)):
        _send_again(exc.signum if isinstance(exc, Terminated) else signal.SIGINT)
        return
    if arrived() is not None:
        return
    _PREVIOUS_UNRAISABLE_HOOK(unraisable)


#: The signals :func:`_send_again` has yet to send (at most one copy of each in flight).
_TO_SEND: set[int] = set()


def _send_again(signum: int) -> None:
    """Send ``signum`` to this process again in 10 ms, from a thread started without waiting for it; nothing if a
    copy is already on its way."""
    if signum in _TO_SEND:
        return
    _TO_SEND.add(signum)

    def send() -> None:
        time.sleep(0.01)
        _TO_SEND.discard(signum)
        os.kill(os.getpid(), signum)

    _thread.start_new_thread(send, ())


_PREVIOUS_UNRAISABLE_HOOK = sys.unraisablehook


def handle_from_start() -> None:
    """Make the running process a command from this instant: SIGTERM and SIGHUP raise :class:`Terminated`, SIGINT
    ``KeyboardInterrupt``, both recorded; one that escapes to the top level is the one-line stop, one that Python
    would drop is sent again (:func:`_redeliver`). Called by the console command only, never by a library import."""
    if not _in_main_thread():
        return
    sys.unraisablehook = _redeliver
    _install(TERMINATING, _raise_interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)
    sys.excepthook = stop_at_top_level


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while the block runs and raise the first that arrived after it (a stop
    already unwinding wins; an error raised after a signal arrived is replaced by the stop)."""
    if not _in_main_thread():
        yield
        return
    arrived: list[int] = []
    unwinding = sys.exc_info()[1]

    def hold(signum: int, frame: object) -> None:
        arrived.append(signum)
        _ARRIVED.append(signum)

    def stop() -> BaseException | None:
        if isinstance(unwinding, (KeyboardInterrupt, Terminated)):
            return unwinding
        return _stop_of(arrived[0]) if arrived else None

    previous = _install((signal.SIGINT, *TERMINATING), hold)
    try:
        yield
    except Exception:
        held = stop()
        if held is None:
            raise
        raise held from None
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
    if arrived and unwinding is None:  # a stretch run while an exception unwinds: that one wins
        raise stop()
