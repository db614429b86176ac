"""``python -m attnphase`` and the ``attnphase`` console script: the command, interruptible from its first instant.

The command's modules are imported, and its options parsed, inside :func:`run`, so a Ctrl-C or SIGTERM that
arrives while they load is the same one-line stop as one that arrives later (exit code 130, or 128 + the
signal's number), not a traceback through the import machinery.
"""

import sys


def run() -> int:
    """Import the command and run it (:func:`attnphase.cli.main`); returns its exit code."""
    try:
        from attnphase.interrupts import Terminated, handling_termination, stopped
    except KeyboardInterrupt:
        print("attnphase: interrupted", file=sys.stderr)
        return 130
    try:
        with handling_termination():
            from attnphase.cli import main

            return main()
    except (KeyboardInterrupt, Terminated) as exc:
        return stopped(exc)


if __name__ == "__main__":
    raise SystemExit(run())
