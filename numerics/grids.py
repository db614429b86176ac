"""Evenly spaced grids of alpha and omega: the one formula behind ``START:STOP:NUM`` on every command and the
phase diagram's default alpha grid."""

from __future__ import annotations

from fractions import Fraction


def even_grid(start: Fraction | float | str, stop: Fraction | float | str, num: int) -> list[float]:
    """``num`` >= 2 points x_i = start + (stop - start) i / (num - 1), both ends included, each the float nearest its
    exact value (start and stop taken exactly as given: the decimal "0.45" as 45/100), so that 0:0.45:10 gives 0.15
    and 0.3 where float steps give 0.15000000000000002 and 0.30000000000000004."""
    a, b = Fraction(start), Fraction(stop)
    return [float(a + (b - a) * i / (num - 1)) for i in range(num)]
