"""attnphase: the solvable model of dot-product attention, theory <- numerics <- validation.

The layers live in :mod:`attnphase.theory`, :mod:`attnphase.numerics` and :mod:`attnphase.validation`;
importing this package imports none of them. Imported as the first step of the command itself (``python -m
attnphase`` or the console script), it makes the process a command at once
(:func:`attnphase.interrupts.handle_from_start`); a library import changes nothing.
"""

import sys as _sys

__version__ = "0.1.0"


def _is_a_spawned_child() -> bool:
    """True in a process that multiprocessing started by running the command again (the workers of a local Dask
    cluster): that process is not the command and keeps Python's default signal actions."""
    return "--multiprocessing-fork" in _sys.orig_argv or any("multiprocessing.forkserver" in a for a in _sys.orig_argv)


def _is_the_command() -> bool:
    """Whether this process is the ``attnphase`` command starting: ``python -m attnphase`` being located, or the
    console script as ``__main__``; never a spawned worker (:func:`_is_a_spawned_child`)."""
    if _is_a_spawned_child():
        return False
    orig = _sys.orig_argv
    argv0 = _sys.argv[0] if _sys.argv else ""
    if argv0 == "-m":
        return any(a == "-m" and b == "attnphase" or a == "-mattnphase" for a, b in zip(orig, orig[1:] + [""]))
    main = _sys.modules.get("__main__")
    return (argv0.rsplit("/", 1)[-1] == "attnphase" and main is not None
            and getattr(main, "__file__", None) == argv0 and getattr(main, "__spec__", None) is None)


def _stop_at_top_level(kind: type, value: BaseException, tb: object) -> None:
    """``sys.excepthook`` while the command's modules load (the package's, then :mod:`attnphase.__main__`'s): a
    Ctrl-C that lands there is the one-line stop."""
    if isinstance(value, KeyboardInterrupt):
        import os

        print("attnphase: interrupted", file=_sys.stderr, flush=True)
        os._exit(130)
    from attnphase import interrupts

    interrupts.stop_at_top_level(kind, value, tb)


def _send_again(unraisable: object) -> None:
    """``sys.unraisablehook`` while the command's handlers load: a Ctrl-C that Python can only print and drop (each
    import ends in a weakref callback of importlib's) is sent again in 10 ms, from a thread; anything else as Python
    would. The modules used here are loaded with the interpreter: no import runs in the hook."""
    if not isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
        _sys.__unraisablehook__(unraisable)
        return
    import _signal
    import _thread
    import os
    import time

    def send() -> None:
        time.sleep(0.01)
        os.kill(os.getpid(), _signal.SIGINT)

    _thread.start_new_thread(send, ())


_library_excepthook = _sys.excepthook
# before the first call: a Ctrl-C that arrived while the package loaded is raised on entering a function (here
# _is_the_command's), and there it must already be the command's stop; a library import gets Python's hook back
_sys.excepthook = _stop_at_top_level
if _is_the_command():
    _sys.unraisablehook = _send_again  # and one that lands where Python drops it is sent again
    from attnphase import interrupts as _interrupts

    _interrupts.THE_COMMAND = True
    _interrupts.handle_from_start()
else:
    _sys.excepthook = _library_excepthook
