"""Signals as exceptions, and the short stretches that must not be cut by one.

* ``SIGINT`` (Ctrl-C) is Python's ``KeyboardInterrupt``; ``SIGTERM`` and ``SIGHUP`` (``kill``, ``timeout``, a
  closed terminal, a batch system's wall time) become :class:`Terminated` while a command runs
  (:func:`handling_termination`), so every ``finally`` and context manager of the command runs: the local
  cluster is closed, the staging folder removed, a temporary file unlinked.  The command's exit code is
  ``128 + signal number`` (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
* Every signal that arrives while :func:`handling_termination` (or :func:`handle_from_start`) holds is
  recorded (:func:`arrived`): a C extension that turns the ``KeyboardInterrupt`` raised inside it into another
  exception (numpy's import makes an ``ImportError`` of a Ctrl-C that lands while it loads) still ends the
  command as the stop it was, never a traceback.
* A stop raised where Python prints and drops exceptions -- a C library's callback into Python, a ``__del__``, the
  weakref callback that ends each import -- goes to the command's ``sys.unraisablehook`` (:func:`_redeliver`; while
  the package loads, :func:`attnphase._send_again`) and is sent again as its signal; a signal handled while that hook
  runs is sent again too, never raised inside it.
* :func:`deferred` holds both back over a stretch that cannot be cut cleanly (starting or closing a local
  Dask cluster, moving the finished outputs into ``--out DIR``): a signal that arrives there is raised
  when the stretch ends.

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

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


#: The signals that stop a command (SIGINT is Python's KeyboardInterrupt).
TERMINATING = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)


def stopped(exc: BaseException) -> int:
    """The one line and the exit code of a run stopped by Ctrl-C (130) or a termination signal (128 + N)."""
    if isinstance(exc, Terminated):
        print(f"attnphase: terminated ({exc.name})", file=sys.stderr)
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
    """``code``; where the command's run was stopped (in the command's own process only,
    :data:`THE_COMMAND`), the process ends here with it: SIGINT, SIGTERM and SIGHUP ignored from now on,
    the ``atexit`` functions run, the streams flushed, then ``os._exit(code)``.  Left to the interpreter's own exit,
    a stop could still end as death by SIGINT (-2): CPython kills itself with SIGINT at exit when a Ctrl-C went
    unhandled in code a C library ran through ``PyRun_*`` while the command's modules loaded, even where that
    library turned it into the error the command then stopped on; and a signal sent again (:func:`_redeliver`) or a
    second Ctrl-C could land while the interpreter restores the default actions."""
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


def _raise_terminated(signum: int, frame: object) -> None:
    """:class:`Terminated`, the signal recorded; inside :func:`_redeliver`, sent again instead
    (:func:`_held_in_the_hook`)."""
    _ARRIVED.append(signum)
    if _held_in_the_hook(signum, frame):
        return
    raise Terminated(signum)


def _raise_interrupt(signum: int, frame: object) -> None:
    """Python's own SIGINT action (``KeyboardInterrupt``), the signal recorded; inside :func:`_redeliver`, sent again
    instead (:func:`_held_in_the_hook`)."""
    _ARRIVED.append(signum)
    if _held_in_the_hook(signum, frame):
        return
    raise KeyboardInterrupt


def _held_in_the_hook(signum: int, frame: object) -> bool:
    """Whether the handler runs inside :func:`_redeliver` (``frame`` or a caller of it is the hook's): then it raises
    nothing and the signal is sent again (:func:`_send_again`).  An exception raised by ``sys.unraisablehook`` is
    printed and dropped by Python ("Exception ignored in sys.unraisablehook"), and the command would run to its end:
    the copy the hook sends lands there when the hook is slow to return (a busy machine), as does a second Ctrl-C."""
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
    if len(_ARRIVED) <= mark:
        return None
    signum = _ARRIVED[mark]
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def as_stop(exc: BaseException) -> BaseException | None:
    """The stop ``exc`` stands for: itself if it is one (``KeyboardInterrupt``, :class:`Terminated`); the
    recorded signal's stop if one arrived (the exception is then what a C extension made of it); None otherwise."""
    if isinstance(exc, (KeyboardInterrupt, Terminated)):
        return exc
    signum = arrived()
    if signum is None or isinstance(exc, SystemExit):
        return None
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


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
    """``sys.unraisablehook`` of the console command: a stop raised where Python can only print and drop it (inside
    a C library's callback into Python -- numba's compiler calls back while it compiles; a ``__del__`` or a weakref
    callback the garbage collector runs) is sent again as the signal it came from (:func:`_send_again`), and so raised
    at the next point that can take it, with no traceback; anything else goes to the previous hook.  This hook waits
    for nothing, and a signal handled while it runs is sent again too (:func:`_held_in_the_hook`), never raised here."""
    exc = getattr(unraisable, "exc_value", None)
    if isinstance(exc, (KeyboardInterrupt, Terminated)):
        _send_again(exc.signum if isinstance(exc, Terminated) else signal.SIGINT)
        return
    _PREVIOUS_UNRAISABLE_HOOK(unraisable)


#: The signals :func:`_send_again` has yet to send (at most one copy of each in flight).
_TO_SEND: set[int] = set()


def _send_again(signum: int) -> None:
    """Send ``signum`` to this process again in 10 ms, from a thread started without waiting for it (a
    ``threading.Thread`` waits for its start, and a signal handled in that wait is raised in the hook); nothing if a
    copy is already on its way.  After a reported stop the copy is ignored (:func:`exit_code_kept`)."""
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
    """Make the running process a command from this instant: SIGTERM and SIGHUP raise :class:`Terminated`,
    SIGINT raises ``KeyboardInterrupt``, both recorded, and one that escapes to the top level is the one-line
    stop (``sys.excepthook``).  Called once, first thing, by the console command (:mod:`attnphase.__main__`);
    never by a library import.  A stop that lands in a C library's callback, where Python drops exceptions, is
    sent again (``sys.unraisablehook``) until it reaches the command's code."""
    if not _in_main_thread():
        return
    sys.unraisablehook = _redeliver
    _install(TERMINATING, _raise_terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)
    sys.excepthook = stop_at_top_level


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back while the block runs; the first one that arrived is raised
    (``KeyboardInterrupt`` or :class:`Terminated`) once the block is done.  A stop already unwinding when the
    block runs wins (a clean-up in a ``finally``: a second Ctrl-C during the clean-up of a SIGTERM leaves the exit
    code 143).  An error the block raises after a signal arrived is taken for its consequence and the stop is
    raised in its place: ``timeout`` signals the whole process group, so the local cluster's workers, starting,
    die of the same SIGTERM and the cluster's start fails ("Nanny failed to start worker process")."""
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
        if arrived:
            return KeyboardInterrupt() if arrived[0] == signal.SIGINT else Terminated(arrived[0])
        return None

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
