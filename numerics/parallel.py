"""Independent computations (one per omega) in the order given, through the execution layer
(:func:`attnphase.execution.map_tasks`, no result store; docs/distributed.md).  Results are identical to a
serial run and cross the process boundary without their solver memory.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_in_order(fn: Callable[[T], R], items: Sequence[T], workers: int = 1,
                 progress: Callable[[R], None] | None = None) -> list[R]:
    """``[fn(x) for x in items]`` by :func:`attnphase.execution.map_tasks` (``fn`` module-level when workers > 1)."""
    from attnphase.execution import map_tasks

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    return map_tasks(fn, items, workers, progress)


def without_memory(fp: Any) -> Any:
    """A FixedPoint without its solver memory (for crossing a process boundary)."""
    return replace(fp, memory=None) if getattr(fp, "memory", None) is not None else fp
