"""The execution group of the long jobs (``--workers --scheduler --fresh``, docs/distributed.md) and
the :class:`~attnphase.execution.ExecutorSpec` it becomes (checked before any work)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re

from attnphase import outputs


def add_workers_option(p: argparse.ArgumentParser) -> None:
    """The executor group: ``--workers N``, ``--scheduler ADDRESS``, ``--fresh`` (docs/distributed.md)."""
    g = p.add_argument_group("execution (docs/distributed.md)")
    g.add_argument("--workers", default="auto", metavar="N",
                   help="local worker processes the job's tasks run on (a Dask cluster started and stopped by the "
                   "command); 'auto' (default): the cores this process may use; 1: in this process")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the tasks on an existing Dask cluster instead, e.g. tcp://host:8786 (--workers is then "
                   "the cluster's)")
    g.add_argument("--fresh", action="store_true",
                   help="recompute every task (default: tasks finished by an earlier run of the same command, "
                   "stored under DIR/tasks, are read back)")


def workers_from_args(args: argparse.Namespace) -> int:
    """``--workers N``: N >= 1, or 'auto' = the usable cores (os.sched_getaffinity)."""
    text = str(args.workers).strip().lower()
    if text == "auto":
        from attnphase.execution.executor import usable_cores

        return usable_cores()
    with contextlib.suppress(ValueError):
        if (n := int(text)) >= 1:
            return n
    raise ValueError(f"--workers must be 'auto' or an integer >= 1, got {args.workers!r}")


_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://[^\s]+$|^[\w.\-]+:\d+$")


def executor_from_args(args: argparse.Namespace):
    """The :class:`~attnphase.execution.ExecutorSpec` of the execution group (checked before any work)."""
    from attnphase.execution.executor import ExecutorSpec

    workers = workers_from_args(args)
    scheduler = getattr(args, "scheduler", None)
    if scheduler is not None:
        from attnphase.options import option_given

        if option_given(args, "--workers", "auto"):
            raise ValueError(f"--workers {args.workers}: with --scheduler the cluster's workers run the tasks; leave "
                             "--workers out")
        scheduler = str(scheduler).strip()
        if not _ADDRESS.match(scheduler):
            raise ValueError(f"--scheduler must be a Dask scheduler address such as tcp://host:8786, got {scheduler!r}")
        check_reachable(scheduler)
    return ExecutorSpec(workers=workers, scheduler=scheduler, worker_timeout=worker_timeout_from_env())


#: Seconds the execution group waits for a TCP connection to ``--scheduler`` before any work.
REACH_SECONDS = 5.0


def check_reachable(address: str) -> None:
    """A one-line ValueError where nothing listens at a ``tcp://host:port`` (or ``host:port``) scheduler address,
    before any work (other schemes are left to Dask's connect)."""
    import socket

    match = re.match(r"^(?:tcp://)?\[?([^\s\]]+?)\]?:(\d+)/?$", address)
    if match is None:
        return
    try:
        socket.create_connection((match.group(1), int(match.group(2))), timeout=REACH_SECONDS).close()
    except OSError as exc:
        raise ValueError(f"--scheduler {address}: cannot connect ({exc.strerror or exc}); is a Dask scheduler "
                         "running there (dask scheduler)?") from None


#: The environment variable of the seconds a job waits while its ``--scheduler`` has no worker.
WORKER_TIMEOUT_ENV = "ATTNPHASE_WORKER_TIMEOUT"


def worker_timeout_from_env() -> float:
    """``$ATTNPHASE_WORKER_TIMEOUT`` seconds (default 60): how long a job waits while ``--scheduler`` has no
    worker, at its start (then a one-line error, exit code 2) or during it (then its unfinished tasks fail)."""
    text = os.environ.get(WORKER_TIMEOUT_ENV, "").strip()
    if not text:
        return 60.0
    with contextlib.suppress(ValueError):
        if (value := float(text)) > 0 and math.isfinite(value):
            return value
    raise ValueError(f"{WORKER_TIMEOUT_ENV} must be a number of seconds > 0, got {text!r}")


def add_job_options(p: argparse.ArgumentParser, max_points: int, what: str = "solves") -> None:
    """What every job command takes after its own options: ``--large`` (a grid of more than ``max_points``
    ``what``), the execution group (:func:`add_workers_option`), ``--quiet`` and ``--json``."""
    p.add_argument("--large", action="store_true", help=f"allow a grid of more than {max_points} {what}")
    add_workers_option(p)
    outputs.add_quiet_option(p)
    outputs.add_json_option(p)
