"""The one-dimensional root finders of ``numerics/roots.py`` on functions whose roots are known in closed form."""

from __future__ import annotations

import math

import pytest

from attnphase.numerics.roots import RootNotFound, bracketed_log_root, brent_root, safeguarded_newton


def test_brent_root_finds_the_root_inside_the_bracket_to_xtol() -> None:
    assert brent_root(lambda x: x ** 3 - 2.0, 0.0, 2.0, 1e-12) == pytest.approx(2 ** (1 / 3), abs=1e-12)


def test_bracketed_log_root_steps_to_the_sign_change_then_refines_it() -> None:
    """gap(u) = 1/x0 - 1/x at x = e^u increases through its root at u = log x0: found from a start on either side,
    and a gap that is NaN above some u is stepped back from; no sign change in the range gives None."""
    x0 = 37.0

    def gap(u: float) -> float:
        return 1.0 / x0 - 1.0 / math.exp(u)

    for start in (0.0, 6.0):
        assert bracketed_log_root(gap, start, math.log(1e-4), math.log(1e3)) == pytest.approx(math.log(x0), abs=1e-12)

    def nan_above(u: float) -> float:
        return math.nan if u > math.log(100.0) else gap(u)

    assert bracketed_log_root(nan_above, math.log(500.0), math.log(1e-4), math.log(1e3)) == pytest.approx(
        math.log(x0), abs=1e-12)
    assert bracketed_log_root(gap, 0.0, math.log(1e-4), math.log(10.0)) is None


def test_safeguarded_newton_converges_with_the_functions_slope_and_says_when_it_cannot() -> None:
    f = lambda x: (2.0 - x * x, -2.0 * x)  # noqa: E731 - decreasing on [0, 3], root sqrt(2)
    assert safeguarded_newton(f, 0.0, 3.0, 2.0, -7.0, 1e-13) == pytest.approx(math.sqrt(2.0), abs=1e-12)
    with pytest.raises(RootNotFound):
        safeguarded_newton(f, 0.0, 3.0, 2.0, -7.0, 1e-300, max_iter=3)


class _Lost(RuntimeError):
    pass


def _patchy(root: float, patch: tuple[float, float], tried: list[float]):
    """A decreasing line with its root at ``root`` that raises _Lost on ``patch`` (a solver failing there)."""
    def f(x: float) -> tuple[float, float]:
        tried.append(x)
        if patch[0] <= x <= patch[1]:
            raise _Lost(f"lost at {x}")
        return root - x, -1.0
    return f


def test_safeguarded_newton_steps_aside_from_an_iterate_where_the_function_fails() -> None:
    # the first iterate, the bracket's interpolant 1.6405, lies on the patch where f fails
    tried: list[float] = []
    f = _patchy(1.6462, (1.640, 1.641), tried)
    with pytest.raises(_Lost):
        safeguarded_newton(f, 1.6, 1.7, 0.405, -0.595, 1e-4)
    tried.clear()
    x = safeguarded_newton(f, 1.6, 1.7, 0.405, -0.595, 1e-4, aside=5e-3, failure=_Lost)
    assert x == pytest.approx(1.6462, abs=1e-12)
    assert tried[:2] == pytest.approx([1.6405, 1.6455])  # the iterate, then aside by 5e-3 above it
    # other exceptions are not stepped around
    with pytest.raises(ZeroDivisionError):
        safeguarded_newton(lambda x: (1 / 0, -1.0), 1.6, 1.7, 0.405, -0.595, 1e-4, aside=5e-3, failure=_Lost)


def test_safeguarded_newton_raises_the_failure_where_the_root_lies_on_the_patch() -> None:
    # stepping aside shrinks the bracket onto the patch; where f fails on both sides too, the failure is raised
    tried: list[float] = []
    with pytest.raises(_Lost, match="lost at 1.6405"):
        safeguarded_newton(_patchy(1.6405, (1.640, 1.641), tried), 1.6, 1.7, 0.3, -0.7, 1e-4, aside=5e-3,
                           failure=_Lost)
    assert all(1.6 < x < 1.7 for x in tried) and len(tried) < 40
