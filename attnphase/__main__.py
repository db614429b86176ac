"""``python -m attnphase`` and the ``attnphase`` console script: the command, interruptible from its first instant.

The first thing this module does is make the process a command (:func:`attnphase.interrupts.handle_from_start`;
the package already does it for ``python -m attnphase`` and the console script): from then on a Ctrl-C, SIGTERM
or SIGHUP is the one-line stop (exit code 130, or 128 + the signal's number) wherever it lands.
"""

import sys

from attnphase import _is_a_spawned_child, _stop_at_top_level  # loaded with the package: no import runs here

_COMMAND = not _is_a_spawned_child()
if _COMMAND:
    sys.excepthook = _stop_at_top_level

from attnphase import interrupts  # noqa: E402 - after the hook: a Ctrl-C while it loads is the stop

if _COMMAND:
    interrupts.handle_from_start()


def run() -> int:
    """Import the command and run it (:func:`attnphase.cli.main`); returns its exit code, kept through the
    interpreter's shut-down where the run was stopped (:func:`attnphase.interrupts.exit_code_kept`)."""
    try:
        with interrupts.handling_termination():
            from attnphase.cli import main

            code = main()
    except BaseException as exc:
        if (stop := interrupts.as_stop(exc)) is None:
            raise
        code = interrupts.stopped(stop)
    return interrupts.exit_code_kept(code)


if __name__ == "__main__":
    sys.exit(run())
