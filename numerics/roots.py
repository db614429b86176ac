"""One-dimensional root finders of the numerics, in one place."""

from __future__ import annotations

import math
from typing import Callable, TypeVar

T = TypeVar("T")


class RootNotFound(RuntimeError):
    """A root finder ran out of steps."""


def brent_root(f: Callable[[float], float], a: float, b: float, xtol: float) -> float:
    """Root of f on [a, b] (f(a) f(b) <= 0) to ``xtol`` (and brentq's default rtol, 4 eps), by Brent's method."""
    from scipy.optimize import brentq  # here: scipy.optimize costs ~0.5 s of start-up, and most commands need no root
    return float(brentq(f, a, b, xtol=xtol))


def safeguarded_newton(
    f: Callable[[float], tuple[float, float]], a: float, b: float, fa: float, fb: float, xtol: float,
    max_iter: int = 40, *, aside: float = 0.0, failure: type[Exception] | tuple[type[Exception], ...] = (),
) -> float:
    """Root of a decreasing f on [a, b] (fa > 0 >= fb) by Newton steps with f's own slope (``f(x)`` returns
    (value, slope)) from the linear interpolant, bisection where a step leaves the bracket or the slope is
    not negative, until a step is below ``xtol``; RootNotFound after ``max_iter`` steps.  Where f raises
    ``failure`` at an iterate x, the iterate is x + ``aside``, else x - ``aside`` (each at most half-way to the
    bracket's end on its side: :func:`_stepped_aside`); the failure is raised where f fails at all three."""
    x = b if fb == 0 else a + (b - a) * fa / (fa - fb)
    for _ in range(max_iter):
        x, (fx, slope) = _stepped_aside(f, x, a, b, aside, failure)
        if fx == 0:
            return x
        a, b = (x, b) if fx > 0 else (a, x)
        nxt = x - fx / slope if slope < 0 else math.nan
        if not a < nxt < b:
            nxt = 0.5 * (a + b)
        if abs(nxt - x) < xtol or b - a < xtol:
            return nxt
        x = nxt
    raise RootNotFound(f"root not bracketed to {xtol} after {max_iter} steps (bracket [{a:.5f}, {b:.5f}])")


def _stepped_aside(f: Callable[[float], T], x: float, a: float, b: float, aside: float,
                   failure: type[Exception] | tuple[type[Exception], ...]) -> tuple[float, T]:
    """(x, f(x)); where f raises ``failure`` at x and ``aside`` > 0: (y, f(y)) at the first of y = min(x + aside,
    (x + b) / 2), max(x - aside, (a + x) / 2) where it does not (inside the bracket [a, b], which so still shrinks),
    the first failure raised where f fails at all three."""
    try:
        return x, f(x)
    except failure as exc:
        if aside <= 0:
            raise
        first = exc
    for y in (min(x + aside, 0.5 * (x + b)), max(x - aside, 0.5 * (a + x))):
        try:
            return y, f(y)
        except failure:
            continue
    raise first


def bracketed_log_root(
    gap: Callable[[float], float], start: float, lo: float, hi: float, step: float = math.log(2.0)
) -> float | None:
    """Root in u = log x of an increasing ``gap(u)`` that is NaN beyond some u: from ``start`` (clipped to
    [lo, hi], stepped down while gap is NaN) by steps of ``step`` towards the sign change, then Brent to 1e-14;
    None when no sign change lies in [lo, hi] before gap turns NaN."""
    a = min(max(start, lo), hi)
    ga = gap(a)
    while not math.isfinite(ga) and a > lo:  # past the domain: come down until the function exists
        a = max(a - step, lo)
        ga = gap(a)
    if not math.isfinite(ga):
        return None
    while True:
        b = min(max(a + (step if ga < 0 else -step), lo), hi)  # towards the sign change (ga keeps its sign here)
        gb = gap(b)
        if not math.isfinite(gb) or b == a:
            return None
        if (ga < 0) != (gb < 0):
            return brent_root(gap, min(a, b), max(a, b), 1e-14)
        a, ga = b, gb


def bisect_last_true(holds: Callable[[float, T], T | None], good_x: float, good: T, bad_x: float, tol: float) -> float:
    """Bisect between ``good_x`` (where the predicate holds, with witness ``good``) and ``bad_x`` for where it
    stops holding: the midpoint of the final bracket (within ``tol``).  ``holds(x, witness)``, tried from the
    nearest good point's witness, returns the new witness or None where the predicate fails."""
    while abs(bad_x - good_x) > tol:
        mid = 0.5 * (good_x + bad_x)
        w = holds(mid, good)
        if w is not None:
            good_x, good = mid, w
        else:
            bad_x = mid
    return 0.5 * (good_x + bad_x)


def illinois_bracket(f: Callable[[float], float], a: float, b: float, fa: float, fb: float, xtol: float,
                     max_iter: int = 40) -> tuple[float, float, float]:
    """Root of f on [a, b] (fa, fb of opposite signs) by regula falsi with the Illinois modification
    (the kept end's value halved when the same end is kept twice in a row), and a bisection step
    whenever two steps did not halve the bracket; once the estimate moves by less than ``xtol / 2``
    the next point is placed 0.4 ``xtol`` past it, towards the far end.  Returns (root, a', b'): the
    falsi point inside the final bracket a' <= root <= b' of width <= ``xtol`` (a zero-width one where f
    vanishes at a point tried); RootNotFound after ``max_iter`` evaluations."""
    if fa == 0 or fb == 0:
        return (a, a, a) if fa == 0 else (b, b, b)
    if (fa < 0) == (fb < 0):
        raise ValueError(f"no sign change on [{a}, {b}]: f = {fa:.3g}, {fb:.3g}")
    kept, widths, last = 0, [b - a], math.nan
    for _ in range(max_iter):
        if b - a <= xtol:
            return a + (b - a) * fa / (fa - fb), a, b
        slow = len(widths) >= 3 and b - a > 0.5 * widths[-3]
        x = 0.5 * (a + b) if slow else a + (b - a) * fa / (fa - fb)
        if abs(x - last) < 0.5 * xtol:  # the estimate has settled: step past it to close the bracket
            x = x + 0.4 * xtol if x - a < b - x else x - 0.4 * xtol
        x = last = min(max(x, a + 0.25 * xtol), b - 0.25 * xtol)
        fx = f(x)
        if fx == 0:
            return x, x, x
        if (fx < 0) == (fa < 0):
            a, fa = x, fx
            fb, kept = (0.5 * fb if kept == 1 else fb), 1
        else:
            b, fb = x, fx
            fa, kept = (0.5 * fa if kept == -1 else fa), -1
        widths.append(b - a)
    if b - a > xtol:
        raise RootNotFound(f"root not bracketed to {xtol} after {max_iter} steps (bracket [{a:.5f}, {b:.5f}])")
    return a + (b - a) * fa / (fa - fb), a, b
