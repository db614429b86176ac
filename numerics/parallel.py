"""Independent computations (one per omega) on a local process pool, in the order given.

The phase boundaries at different omegas share nothing, so ``phase-diagram`` computes them in
``workers`` processes.  Each worker runs the compiled proximal solver on one thread
(``numba.set_num_threads(1)``): two workers on two cores keep both busy through the numpy work
between the compiled loops, which one process with two numba threads does not.  Results are
identical to a serial run (every omega is computed by the same deterministic code; the node loop's
thread count does not change a node's result).  Results cross the process boundary without their
solver memory (prox candidates, Jacobians: warm-start data, megabytes per point).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _one_numba_thread() -> None:
    # before the worker imports numba or numpy: one compiled thread, one BLAS thread per worker
    os.environ["NUMBA_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


def map_in_order(fn: Callable[[T], R], items: Sequence[T], workers: int = 1,
                 progress: Callable[[R], None] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on ``workers`` processes when workers > 1 (``fn`` must be a
    module-level function).  ``progress`` is called with each result as it completes."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1 or len(items) <= 1:
        out = []
        for x in items:
            out.append(fn(x))
            if progress is not None:
                progress(out[-1])
        return out
    results: list[Any] = [None] * len(items)
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: numba's threads set before its import
    with ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=ctx, initializer=_one_numba_thread) as pool:
        futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            if progress is not None:
                progress(results[futures[fut]])
    return results


def without_memory(fp: Any) -> Any:
    """A FixedPoint without its solver memory (for crossing a process boundary)."""
    return replace(fp, memory=None) if getattr(fp, "memory", None) is not None else fp
