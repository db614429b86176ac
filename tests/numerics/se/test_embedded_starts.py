"""Starts of the matrix solve: the noise axes of the embedded start settled by the map."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.quadrature.rules import matrix_rule
from attnphase.numerics.se.se_map import FixedAlpha, SEMap
from attnphase.numerics.se.starts import with_ranks
from attnphase.numerics.se.starts import (
    LIFT_STEPS, SETTLE_STEPS, SETTLE_WEIGHT, further_positional_directions, noise_axes, settle_noise_axes,
)
from attnphase.numerics.se.state_evolution import embedded_start, solve
from attnphase.theory.params import ModelParams


def test_noise_axes_of_each_branch() -> None:
    p22, p21, p31 = (with_ranks(ModelParams(omega=0.3), r, rs) for r, rs in ((2, 2), (2, 1), (3, 1)))
    assert noise_axes(p22, "positional") == [0] and noise_axes(p22, "semantic") == []
    assert noise_axes(p21, "semantic") == [1] and noise_axes(p21, "mixed") == []
    assert noise_axes(p31, "mixed") == [1] and noise_axes(p31, "agnostic") == []


def _toy_image(target: tuple[float, float], a: int):
    """A map that sends the noise axis' (q0_aa, V0_aa) to ``target`` and leaves the rest; residual |log x / target|."""
    def image(ov: Overlaps):
        q, V = np.array(ov.q0), np.array(ov.V0)
        res = max(abs(np.log(q[a, a] / target[0])), abs(np.log(V[a, a] / target[1])))
        q[a, a], V[a, a] = target
        return Overlaps(q, V, ov.m, ov.th0), res
    return image


def test_settle_moves_only_the_noise_diagonal_by_geometric_steps_and_keeps_the_best() -> None:
    ov = Overlaps(np.diag([0.2, 0.3]), np.diag([46.0, 50.0]), np.array([[0.0, 0.25], [0.0, -0.25]]), np.zeros((2, 2)))
    out, n = settle_noise_axes(ov, [0], _toy_image((0.4, 100.0), 0))
    assert n == SETTLE_STEPS
    # each step x <- x^(1-w) F^w towards the constant image: log distance shrinks by (1 - w) per step
    shrink = (1 - SETTLE_WEIGHT) ** (SETTLE_STEPS - 1)
    assert np.isclose(np.log(out.V0[0, 0] / 100.0), shrink * np.log(46.0 / 100.0))
    assert np.isclose(np.log(out.q0[0, 0] / 0.4), shrink * np.log(0.2 / 0.4))
    assert out.q0[1, 1] == 0.3 and out.V0[1, 1] == 50.0 and np.array_equal(out.m, ov.m)
    # a map worse everywhere than at the start: the start is kept
    def away(x: Overlaps):
        img, _ = _toy_image((0.4, 100.0), 0)(x)
        return img, 1.0 + abs(np.log(x.V0[0, 0] / 46.0))
    kept, _ = settle_noise_axes(ov, [0], away)
    assert kept is ov
    # no noise axes: nothing evaluated
    assert settle_noise_axes(ov, [], away) == (ov, 0)


def test_settle_first_step_takes_the_geometric_mean_of_the_start_and_the_maps_image() -> None:
    """On the real map (r = r* = 2, positional, alpha = 2): the noise axis' V0 after one step is
    sqrt(V0 F(V0)) with F the SE map's image there."""
    params = with_ranks(ModelParams(omega=0.3), 2, 2)
    cfg = SolverConfig(quadrature="sobol8")
    ov = embedded_start(params, 2.0, "positional", cfg)
    assert ov.V0[0, 0] == ov.V0[1, 1] and ov.q0[0, 0] == ov.q0[1, 1]  # the positional axis' values
    smap = SEMap(params, FixedAlpha(2.0), matrix_rule(2, 2, 2, "sobol8"), SolverConfig(), branch="positional")
    img, res0 = smap.image(ov)
    seen = []

    def image(x: Overlaps):
        seen.append(x)
        return smap.image(x)

    settle_noise_axes(ov, [0], image)
    assert np.isclose(seen[1].V0[0, 0], np.sqrt(ov.V0[0, 0] * img.V0[0, 0]))
    assert np.isclose(seen[1].q0[0, 0], np.sqrt(ov.q0[0, 0] * img.q0[0, 0]))


def test_rank2_teacher2_positional_converges_from_the_settled_start() -> None:
    """From V0 = 1 on the noise axis (start residual 616) an unsettled start stalls at 1e-2; the settled one converges."""
    params = with_ranks(ModelParams(omega=0.3), 2, 2)
    fp = solve(params, 2.0, "positional", config=SolverConfig(quadrature="sobol8"))
    assert fp.status.converged and fp.status.residual <= 1e-10, fp.status.message
    assert fp.branch == "positional"
    inv = fp.invariants
    assert min(inv["q0_eigenvalues"]) > 0.1 and inv["th0_singular_values"] == [0.0, 0.0]


def test_settle_lifts_the_noise_q0_where_the_map_is_undefined_at_the_start() -> None:
    """A map undefined below q0_aa = 0.3 (as Lam is at L = 3 for a small noise q0): the noise q0 is lifted
    geometrically towards the signal axis' q0 (0.8) until it is defined, then settled."""
    ov = Overlaps(np.diag([0.8, 0.05]), np.diag([35.0, 35.0]), np.zeros((3, 2)), np.array([[0.85], [0.0]]))
    toy = _toy_image((0.25, 160.0), 1)
    seen = []

    def image(x: Overlaps):
        seen.append(float(x.q0[1, 1]))
        return None if x.q0[1, 1] < 0.3 else toy(x)

    out, n = settle_noise_axes(ov, [1], image)
    lifts = [0.05, np.sqrt(0.05 * 0.8), np.sqrt(np.sqrt(0.05 * 0.8) * 0.8)]  # 0.05, 0.2, 0.4
    assert np.allclose(seen[:3], lifts)
    assert n == 3 + SETTLE_STEPS - 1 and out.q0[0, 0] == 0.8
    assert 0.3 <= out.q0[1, 1] < lifts[2]  # settled from the lifted start towards 0.25, never where undefined
    # a map undefined everywhere: after LIFT_STEPS lifts the (last) start is returned, unsettled
    out, n = settle_noise_axes(ov, [1], lambda x: None)
    assert n == 1 + LIFT_STEPS and out.q0[1, 1] < 0.8


def test_rank2_at_L3_semantic_converges_to_a_fixed_point_of_the_map() -> None:
    """L = 3, r = 2, r* = 1, alpha = 2, semantic: the embedded start's noise axis (q0 = 0.05) made Lam
    indefinite at the first step; lifted, the solve converges, and the map on the whole rule (a full
    proximal search) moves the fixed point by no more than the tolerance."""
    params = with_ranks(ModelParams(L=3, omega=0.3), 2, 1)
    cfg = SolverConfig(quadrature="sobol8:2")
    fp = solve(params, 2.0, "semantic", config=cfg)
    assert fp.status.converged and fp.status.residual <= cfg.tol, fp.status.message
    assert fp.branch == "semantic"
    img = SEMap(params, FixedAlpha(2.0), matrix_rule(3, 2, 1, "sobol8:2"), SolverConfig(), branch="semantic").image(fp.overlaps)
    assert img is not None and img[1] <= cfg.tol
    inv = fp.invariants
    assert min(inv["q0_eigenvalues"]) > 0.1 and inv["m_norms"] == [0.0, 0.0, 0.0]


def test_further_positional_directions_span_the_rest_of_Ps_range() -> None:
    """The positional branch's other axes start along range(P) orthogonal to the rank-1 m, at |m|; none
    where P has rank 1 (L = 2: the positional start is unchanged)."""
    m = np.array([0.4607, -0.2368, -0.2239])
    simplex = np.array([[1.0, -0.5, -0.5], [-0.5, 1.0, -0.5], [-0.5, -0.5, 1.0]])
    (u,) = further_positional_directions(simplex, m, 1)
    assert abs(u @ m) < 1e-12 and abs(u.sum()) < 1e-12  # orthogonal to m, in range(P) = {sum = 0}
    assert np.isclose(np.linalg.norm(u), np.linalg.norm(m))
    assert len(further_positional_directions(simplex, m, 3)) == 1  # range(P) has no third direction
    two = further_positional_directions(np.eye(3), m, 2)
    assert np.allclose(np.array(two) @ np.array(two).T, np.dot(m, m) * np.eye(2), atol=1e-12)
    assert further_positional_directions(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([0.3, -0.3]), 1) == []
    assert further_positional_directions(simplex, np.zeros(3), 1) == []


def test_embedded_starts_built_from_shared_rank_one_points_are_those_solved_alone(monkeypatch) -> None:
    """rank_one_overlaps solves each rank-1 point once; every branch's embedded start built from them is, to the bit,
    the one that solves its own (the census's base on an undamped config and a matrix solve's on a damped one
    included), and solves no rank-1 point itself."""
    from attnphase.numerics.se import state_evolution as se

    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    cfg = SolverConfig(quadrature="sobol8")
    real, calls, depth = se.solve, [], [0]

    def counting(p, alpha, branch="semantic", **kw):  # the solves called from outside solve
        if depth[0] == 0:
            calls.append((p.r, p.r_star, branch))
        depth[0] += 1
        try:
            return real(p, alpha, branch, **kw)
        finally:
            depth[0] -= 1

    monkeypatch.setattr(se, "solve", counting)
    shared = se.rank_one_overlaps(params, 2.0, ("positional", "semantic"), cfg)
    assert sorted(calls) == [(1, 1, "positional"), (1, 1, "semantic")]
    assert all(ov is not None for ov in shared.values())
    for branch, config in (("semantic", cfg), ("positional", cfg), ("mixed", cfg.replace(damping=0.5))):
        calls.clear()
        built = se.embedded_start(params, 2.0, branch, config, shared)
        assert calls == []
        alone = se.embedded_start(params, 2.0, branch, config)
        assert len(calls) == len(se.embedded_branches(params, branch)) > 0
        for x, y in zip((built.q0, built.V0, built.m, built.th0), (alone.q0, alone.V0, alone.m, alone.th0)):
            assert np.array_equal(x, y)
    with pytest.raises(ValueError, match="rank_one"):
        real(ModelParams(omega=0.3), 2.0, "semantic", config=cfg, rank_one=shared)


@pytest.mark.parametrize("alpha", [2.0, 3.0])
def test_rank2_agnostic_starts_from_the_rank1_agnostic_point_and_converges(alpha: float) -> None:
    # from the cold start (q0 = 0.1 I, V0 = I) this solve stalled at alpha = 2 (residual 2e-3) and left the admissible
    # region in its first step at 3
    params, cfg = ModelParams(omega=0.3, r=2), SolverConfig(error_bars=False)
    one = solve(ModelParams(omega=0.3), alpha, "agnostic", config=cfg.replace(damping=0.5, e_t_quadrature=None))
    start = embedded_start(params, alpha, "agnostic", cfg)
    assert np.allclose(start.q0, one.overlaps.q0 / 2 * np.eye(2)) and np.allclose(start.V0, one.overlaps.V0 * np.eye(2))
    fp = solve(params, alpha, "agnostic", config=cfg)
    assert fp.status.converged and fp.branch == "agnostic" and fp.status.residual <= cfg.tol
    assert np.all(fp.overlaps.m == 0) and np.all(fp.overlaps.th0 == 0)
    # isotropic but for the rule's breaking of the rotation symmetry, with Tr q0 near the rank-1 point's
    q = np.linalg.eigvalsh(fp.overlaps.q0)
    assert q[1] - q[0] < 0.1 * q.mean() and 0.9 < q.sum() / one.overlaps.q0 < 1.4
