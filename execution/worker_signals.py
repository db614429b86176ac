"""Run in every worker process of a local Dask cluster as it starts (``distributed.worker.preload``, set by
:func:`attnphase.execution.executor.dask_client`): SIGINT is ignored there.

A Ctrl-C (and ``timeout -s INT``) reaches every process of the group; the command stops on it and closes its
cluster, which ends the workers.  A worker that took the SIGINT itself raised KeyboardInterrupt in its event loop
and printed that traceback, about 30 lines per worker, before the command's one-line ``attnphase: interrupted``.
"""

from __future__ import annotations

import signal
from typing import Any


def dask_setup(worker: Any) -> None:
    """Ignore SIGINT in this worker process (in its main thread, where its event loop runs; elsewhere nothing)."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals cannot be set here
        pass
