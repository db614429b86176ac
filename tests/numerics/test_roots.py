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
