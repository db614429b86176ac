"""Task functions of tests/execution/test_execution.py (module-level: Dask workers receive them by value)."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def square(x: float) -> float:
    return x * x


def square_or_raise(x: float) -> float:
    if x == 3:
        raise ArithmeticError(f"no square of {x} today")
    return x * x


def die_once(arg: tuple[str, float]) -> float:
    """Kill this worker process the first time (a marker file says it happened), then answer."""
    marker, x = Path(arg[0]), arg[1]
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def sleepy(seconds: float) -> float:
    """Sleep ``seconds`` (a task that is still running when its worker goes away)."""
    import time

    time.sleep(seconds)
    return seconds


def square_if_prepared(arg: tuple[str, float]) -> float:
    """x squared where the marker file a job's ``prepare`` writes exists, else an error."""
    marker, x = Path(arg[0]), arg[1]
    if not marker.exists():
        raise RuntimeError("the job's prepare did not run before its tasks")
    return x * x
