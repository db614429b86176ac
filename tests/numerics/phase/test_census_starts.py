"""Where the census looks (numerics/phase/census_starts.py): the model's starts at r = r* = 1 and at r >= 2, and the
rule its searching solves run on."""

from __future__ import annotations

import math

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase import census_starts as cs
from attnphase.numerics.phase.census_starts import search_rule
from attnphase.numerics.se.se_map import admissible
from attnphase.numerics.se.starts import FIXED_MIXTURES, with_ranks
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol10:4")
ALPHA = 2.0


def test_search_rule_is_a_quarter_of_a_large_sobol_rule() -> None:
    assert search_rule("sobol12") == "sobol10:1:0" and search_rule("sobol14:2:3") == "sobol12:2:3"
    assert search_rule("sobol11") == "sobol10:1:0" and search_rule("sobol10") == "sobol10"
    assert search_rule("gh8") == "gh8" and search_rule("sobol8") == "sobol8"


def test_search_runs_on_the_quarter_rule_at_rank_one_and_on_the_solve_rule_above() -> None:
    cfg = SolverConfig(quadrature="sobol12:4")
    scalar, polish = cs.search_config(ModelParams(omega=0.3), cfg)
    assert (scalar.quadrature, scalar.max_iter, polish) == ("sobol10:4:0", cs.SCALAR_SEARCH_MAX_ITER, True)
    matrix, polish = cs.search_config(with_ranks(ModelParams(omega=0.3), 2, 1), cfg)
    assert (matrix.quadrature, matrix.max_iter, polish) == ("sobol12:4", cs.MATRIX_SEARCH_MAX_ITER, False)


def test_rank_one_starts_are_the_branches_and_a_grid_with_distinct_names() -> None:
    starts = cs.census_starts(ModelParams(omega=0.3), ALPHA, CFG)
    assert len(starts) == 21 and len({s.name for s in starts}) == 21
    assert [s.kind for s in starts[:3]] == ["cold"] * 3 and all(s.kind == "init" for s in starts[3:])
    mixed = [s for s in starts[3:] if np.any(s.overlaps.m) and s.overlaps.th0 != 0]
    assert len(mixed) == 8 and all(s.branch == "agnostic" for s in mixed)
    assert cs.perturbed_starts(ModelParams(omega=0.3), []) == []


def test_starts_are_admissible_and_reproducible() -> None:
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    cfg = CFG
    one = cs.census_starts(params, ALPHA, cfg, seed=3)
    again = cs.census_starts(params, ALPHA, cfg, seed=3)
    kinds = [s.kind for s in one]
    assert kinds.count("embedded") == 4 and kinds.count("cold") == 3
    # the agnostic point from the rank-1 one: its cold start left the admissible region at alpha >= 2.5
    assert [s.branch for s in one if s.kind == "embedded"] == ["semantic", "positional", "mixed", "agnostic"]
    assert "agnostic" not in [s.branch for s in one if s.kind == "cold"]
    assert kinds.count("init") == len(FIXED_MIXTURES) + cs.RANDOM_MIXTURES
    inits = [s.overlaps for s in one if s.kind == "init"]
    assert all(admissible(ov, params.rho0) for ov in inits)
    assert all(np.array_equal(x.overlaps.to_vector(), y.overlaps.to_vector())
               for x, y in zip(one, again) if x.kind == "init")
    # a tilted mixture puts positional overlap on the semantic axis (a direction carrying both)
    tilted = cs.mixture(inits[0], 1.0, 1.0, math.pi / 3)
    assert np.abs(tilted.m[:, 0]).max() > 0 and np.abs(tilted.th0[0]).max() > 0


def test_a_start_whose_first_step_leaves_the_admissible_region_is_retried_from_a_larger_V0() -> None:
    # A = I, alpha = 2: the agnostic point has V0 = 76, and from the grid's V0 = 1 (m = th0 = 0) the first SE step
    # gives Lam <= 0 -- no state reached, residual NaN, nothing learnt about the fixed points
    params = ModelParams(omega=0.3, A=[[1.0, 0.0], [0.0, 1.0]])
    inits = [s for s in cs.grid_starts(params) if s.kind == "init" and s.overlaps.V0 == 1.0 and s.overlaps.th0 == 0.0]
    start = next(s for s in inits if not np.any(s.overlaps.m))
    cfg, _ = cs.search_config(params, CFG)
    bare = cs.solve(params, ALPHA, start.branch, config=cfg, init=start.overlaps)
    assert not bare.status.converged and math.isnan(bare.status.residual)
    fp = cs.solve_start(params, ALPHA, start, cfg)
    assert fp.status.converged and fp.branch == "agnostic"
    assert "from V0 x" in fp.status.message and fp.status.iterations > bare.status.iterations
    assert fp.overlaps.V0 > 50.0  # the agnostic point, far above the start's V0
    # a start whose first step is defined is solved once, as before
    ok = next(s for s in inits if s.overlaps.m.max() == 0.5)
    assert "from V0 x" not in cs.solve_start(params, ALPHA, ok, cfg).status.message
