"""Evenly spaced grids of alpha and omega: the one formula behind ``START:STOP:NUM`` on every command and the
phase diagram's default alpha grid."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence


def even_grid(start: Fraction | float | str, stop: Fraction | float | str, num: int) -> list[float]:
    """``num`` >= 2 points x_i = start + (stop - start) i / (num - 1), both ends included, each the float nearest its
    exact value (start and stop taken exactly as given: the decimal "0.45" as 45/100), so that 0:0.45:10 gives 0.15
    and 0.3 where float steps give 0.15000000000000002 and 0.30000000000000004."""
    a, b = Fraction(start), Fraction(stop)
    return [float(a + (b - a) * i / (num - 1)) for i in range(num)]


def checked_grid(name: str, values: Sequence[float], singular: str, least: float = 0.0, most: float = math.inf,
                 least_open: bool = True) -> list[float]:
    """``values`` (a grid of ``name``, e.g. alphas) as floats in their order; ValueError for a string, an empty
    sequence, a value that is no finite number in the interval from ``least`` (excluded with ``least_open``) to
    ``most``, or one given twice (each ``singular`` once)."""
    if isinstance(values, str):
        raise ValueError(f"{name} must be a sequence of numbers, got the string {values!r}")
    try:
        grid = [float(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers, got {values!r}") from None
    above = (lambda v: v > least) if least_open else (lambda v: v >= least)
    if not grid or not all(math.isfinite(v) and above(v) and v <= most for v in grid):
        interval = (f"> {least:g}" if least_open else f">= {least:g}") if most == math.inf else \
            f"in {'(' if least_open else '['}{least:g}, {most:g}]"
        raise ValueError(f"{name} must be finite and {interval}, got {list(values)}")
    if len(set(grid)) < len(grid):
        raise ValueError(f"each {singular} once: {list(values)} repeats a value")
    return grid
