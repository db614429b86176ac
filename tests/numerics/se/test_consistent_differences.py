"""Quasi-Newton of the matrix solve: reflection pattern, consistent differences, carried Jacobian, staging."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import matrix_rule
from attnphase.numerics.se.channel import channel_moments
from attnphase.numerics.se.fixed_point import FD_STEP_CONSISTENT, FixedPointSolver, moved_jacobian
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import SolverMemory
from attnphase.numerics.se.gauge import reflection_pattern
from attnphase.numerics.se.se_map import FixedAlpha, SEMap
from attnphase.numerics.se.starts import with_ranks
from attnphase.numerics.se.updates import update, update_hat
from attnphase.numerics.se.state_evolution import embedded_start, solve
from attnphase.theory.params import ModelParams


def _mixed_start() -> Overlaps:
    return Overlaps(np.diag([0.46, 0.2]), np.diag([50.9, 44.4]), np.array([[0.0, 0.26], [0.0, -0.26]]),
                        np.array([[0.63], [0.0]]))


def test_reflection_pattern_keeps_the_diagonals_and_the_start_entries() -> None:
    ov = _mixed_start()
    # (q00, q01, q11, V00, V01, V11, m10, m11, m20, m21, th00, th10)
    want = [1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0]
    assert reflection_pattern(ov).tolist() == [bool(w) for w in want]
    # no reflection fixes a state with every entry nonzero: nothing projected
    full = Overlaps(np.array([[0.4, 0.1], [0.1, 0.3]]), np.array([[50.0, 1.0], [1.0, 40.0]]),
                        np.array([[0.1, 0.2], [-0.1, -0.2]]), np.array([[0.5], [0.1]]))
    assert reflection_pattern(full).all()


def test_the_pattern_is_invariant_under_the_map_up_to_the_rules_symmetry_breaking() -> None:
    """F(x) at a start on the pattern: the entries off it are small against those on it (the rule is not
    exactly reflection symmetric), so the projected map is the map of the symmetric rule's subspace."""
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    ov = _mixed_start()
    smap = SEMap(params, FixedAlpha(2.0), matrix_rule(2, 2, 1, "sobol12"), SolverConfig(), branch="mixed")
    mom = channel_moments(smap.kernels, params, ov, smap.rule)
    img = update(params, update_hat(params, 2.0, ov, mom, "mixed"))  # the map itself, not aligned to ov's gauge
    fx, mask = img.to_vector(), reflection_pattern(ov)
    assert np.abs(fx[~mask]).max() < 0.05 * np.abs(fx[mask]).max()
    assert np.abs(img.m[:, 0]).max() < 0.1 * np.abs(img.m[:, 1]).max()


def test_carried_jacobian_is_the_same_linear_map_on_a_new_basis() -> None:
    rng = np.random.default_rng(0)
    n, k = 6, 4
    B0 = np.linalg.qr(rng.normal(size=(n, k)))[0]
    x0 = rng.normal(size=n) * 3
    J0 = rng.normal(size=(k, k))

    def moved(B1, x1):
        return moved_jacobian(J0, B0, x0, B1, x1)

    np.testing.assert_allclose(moved(B0, x0), J0, atol=1e-12)
    # a rotated basis of the same span: J1 = R^T J0 R
    R = np.linalg.qr(rng.normal(size=(k, k)))[0]
    np.testing.assert_allclose(moved(B0 @ R, x0), R.T @ J0 @ R, atol=1e-12)
    # a direction outside the old span: F' = 0 there, so its diagonal entry is -D = -1 / max(1, |x|)
    e = np.zeros((n, 1))
    e[0] = 1.0
    perp = e - B0 @ (B0.T @ e)
    perp /= np.linalg.norm(perp)
    J1 = moved(perp, x0)
    assert np.isclose(J1[0, 0], -float((perp[:, 0] ** 2) @ (1 / np.maximum(1.0, np.abs(x0)))))
    assert moved(np.eye(n + 1)[:, :k], np.zeros(n + 1)) is None


def test_finite_differences_are_those_of_the_exact_map() -> None:
    """The consistent finite-difference Jacobian (full search at x, columns polished from its minima) against
    forward differences of the exact map (a full search at every point)."""
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    cfg = SolverConfig(quadrature="sobol9")
    smap = SEMap(params, FixedAlpha(2.0), matrix_rule(2, 2, 1, "sobol9"), SolverConfig(), branch="semantic")
    x = embedded_start(params, 2.0, "semantic", cfg).to_vector()
    B = smap.subspace(x)
    D = 1.0 / np.maximum(1.0, np.abs(x))

    def resid(xv, fv):
        return B.T @ (D * (fv - xv))

    solver = FixedPointSolver(smap, cfg, consistent_differences=True)
    G = resid(x, smap.evaluate(x, exact=True).fx)
    before = smap.since_full
    J = solver._fd_jacobian(x, G, B, resid)
    assert smap.since_full == before  # the polished columns do not count towards a full search
    exact = np.empty_like(J)
    for j in range(B.shape[1]):
        h = FD_STEP_CONSISTENT * max(1.0, abs(float(B[:, j] @ x)))
        xj = x + h * B[:, j]
        exact[:, j] = (resid(xj, smap.evaluate(xj, exact=True).fx) - G) / h
    assert np.abs(J - exact).max() <= 1e-3 * max(1.0, np.abs(exact).max())


def test_staged_solve_converges_on_the_unprojected_map_and_carries_its_jacobian() -> None:
    """Block 0 on the pattern, the whole rule on the pattern, then the map itself: the result is a fixed point
    of the unprojected map of the whole rule (its residual recomputed here), and a warm re-solve from it with
    its Jacobian converges at once."""
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    cfg = SolverConfig(quadrature="sobol8:2")
    fp = solve(params, 2.0, "semantic", config=cfg)
    assert fp.status.converged and fp.status.residual <= 1e-10, fp.status.message
    assert fp.branch == "semantic" and "reflection pattern" in fp.status.message
    memory = fp.memory  # the one memory type of every rank: here the Jacobian with its basis and point
    assert isinstance(memory, SolverMemory) and memory.jacobian.shape == (memory.basis.shape[1],) * 2
    assert memory.moved_to(memory.basis, memory.at) == pytest.approx(memory.jacobian, rel=1e-12, abs=1e-12)
    smap = SEMap(params, FixedAlpha(2.0), matrix_rule(2, 2, 1, "sobol8:2"), SolverConfig(), branch="semantic")
    assert smap.evaluate(fp.overlaps.to_vector(), exact=True).residual <= 1e-10
    again = solve(params, 2.0, "semantic", config=cfg, init=fp.overlaps, memory=fp.memory)
    assert again.status.converged and again.status.iterations <= 2
