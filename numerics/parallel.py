"""Independent computations (one per omega) in the order given, through the execution layer.

:func:`map_in_order` is the library's entry to :mod:`attnphase.execution` (no result store):
``workers`` > 1 runs the items on a local Dask cluster of that many one-thread worker processes
(BLAS on one thread each, numba as :func:`attnphase.execution.executor.worker_env` sets it: two
workers on two cores keep both busy through the numpy work between the compiled loops, which one
process with two numba threads does not).  Results
are identical to a serial run (every item is computed by the same deterministic code; the node
loop's thread count does not change a node's result).  Results cross the process boundary without
their solver memory (prox candidates, Jacobians: warm-start data, megabytes per point).  The
commands' jobs use :func:`attnphase.execution.run_tasks` directly, with a store.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_in_order(fn: Callable[[T], R], items: Sequence[T], workers: int = 1,
                 progress: Callable[[R], None] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on ``workers`` local Dask worker processes when workers > 1 (``fn``
    must be a module-level function).  ``progress`` is called with each result as it completes; a
    failing item raises :class:`attnphase.execution.TaskFailed` once the others are done."""
    from attnphase.execution import map_tasks

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    return map_tasks(fn, items, workers, progress)


def without_memory(fp: Any) -> Any:
    """A FixedPoint without its solver memory (for crossing a process boundary)."""
    return replace(fp, memory=None) if getattr(fp, "memory", None) is not None else fp
