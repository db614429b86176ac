"""The grids a user's script gives the library: each value a finite number in its range, given once, refused before any
work where not (the sweep's alphas, the phase diagram's omegas and alphas)."""

from __future__ import annotations

import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.grids import checked_grid
from attnphase.numerics.phase.boundaries import phase_diagram
from attnphase.numerics.phase.continuation import sweep
from attnphase.theory.params import ModelParams


def test_checked_grid_keeps_the_order_and_refuses_each_kind_of_bad_grid() -> None:
    assert checked_grid("alphas", (2, 0.5, 1.0), "alpha") == [2.0, 0.5, 1.0]
    assert checked_grid("omegas", [0, 1], "omega", least_open=False, most=1.0) == [0.0, 1.0]
    for bad, match in (("0.3", "a sequence of numbers, got the string '0.3'"), ([], "finite and > 0"),
                       ([1.0, "x"], "a sequence of numbers"), ([0.0, 1.0], "finite and > 0"),
                       ([1.0, float("nan")], "finite and > 0"), ([1.0, 1.0], "each alpha once")):
        with pytest.raises(ValueError, match=match):
            checked_grid("alphas", bad, "alpha")
    with pytest.raises(ValueError, match=r"omegas must be finite and in \[0, 1\], got \[1.3\]"):
        checked_grid("omegas", [1.3], "omega", least_open=False, most=1.0)


def test_the_phase_diagram_refuses_a_bad_grid_before_any_work(monkeypatch) -> None:
    """phase_diagram(params, "0.3") read the string's characters ("could not convert string to float: '.'"),
    [0.3, 0.3] computed omega 0.3 twice, and alphas [-1, 1] failed inside every task (TaskFailed)."""
    import attnphase.numerics.phase.boundaries as boundaries

    monkeypatch.setattr(boundaries, "map_in_order", lambda *a, **k: pytest.fail("work started"))
    cfg = SolverConfig(quadrature="sobol8:4")
    for omegas, alphas, match in (("0.3", None, "omegas must be a sequence of numbers, got the string"),
                                  ([0.3, 0.3], None, "each omega once"), ([1.3], None, r"omegas must be finite and in"),
                                  ([0.3], [-1, 1], "alphas must be finite and > 0"),
                                  ([0.3], [1, 1], "each alpha once")):
        with pytest.raises(ValueError, match=match):
            phase_diagram(ModelParams(), omegas, alphas, config=cfg)


def test_a_sweep_refuses_the_same_grids() -> None:
    with pytest.raises(ValueError, match="alphas must be a sequence of numbers, got the string '1,2'"):
        sweep(ModelParams(), "1,2", "semantic")
    with pytest.raises(ValueError, match="each alpha once"):
        sweep(ModelParams(), [1.0, 2.0, 1.0], "semantic")
