"""State-evolution fixed points at the paper's point (docs/model.md section 6) and what makes them fixed points.

Measured with tensor Gauss--Hermite gh8 (alpha = 2, omega = 0.3, sigma = 0.5, lambda = 0.01):

=========== ============== ============ ===============================
branch      overlap        eps_g        docs/model.md (Sobol 2^18, global)
=========== ============== ============ ===============================
positional  m = 0.26075    3.4515e-3    m = 0.2581, eps_g = 3.474e-3
semantic    th0 = 0.63223  1.40654e-3   th0 = 0.6326, eps_g = 1.4042e-3
=========== ============== ============ ===============================

On the positional branch the hat overlaps average a proximal map that jumps, so the
fixed point converges slowly in the order: m = 0.2608 (gh8), 0.2606 (gh10), 0.2583
(gh12), 0.2552 (gh16), 0.2590 (ghr12), 0.2585 (sobol16).  Hence the tolerances below:
2 % on the positional branch, 0.5 % on the semantic branch.

Delta e_t = e_t(semantic) - e_t(positional) with gh8: +4.07e-5 at alpha = 1.2,
+7.9e-7 at 1.25, -4.25e-5 at 1.3 (alpha_c ~= 1.249; docs/model.md: 1.2515 +- 0.0005).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics import solve
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import SolverMemory
from attnphase.numerics.prox.global_prox import global_prox
from attnphase.numerics.quadrature.rules import make_rule, reduce_rule
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.se_map import hat_step
from attnphase.numerics.se.updates import update
from attnphase.numerics.quadrature.symmetry import symmetry_group
from attnphase.theory.channel import channel_fields, token_variances
from attnphase.theory.kernels import get_kernels
from attnphase.theory.params import ModelParams

PAPER = ModelParams(omega=0.3)
RULE = "gh8"
#: Start of the positional branch near its alpha = 2 fixed point (m -> -m is a symmetry).
POS_INIT = Overlaps(q0=0.2, V0=44.0, m=[0.26, -0.26], th0=0.0)


@pytest.fixture(scope="module")
def semantic2():
    return solve(PAPER, 2.0, "semantic", config=SolverConfig(quadrature=RULE))


@pytest.fixture(scope="module")
def positional2():
    return solve(PAPER, 2.0, "positional", init=POS_INIT, config=SolverConfig(quadrature=RULE))


@pytest.fixture(scope="module")
def agnostic05():
    return solve(PAPER, 0.5, "agnostic", config=SolverConfig(quadrature=RULE))


def _fixed_points(semantic2, positional2, agnostic05):
    return {"semantic": semantic2, "positional": positional2, "agnostic": agnostic05}


def test_published_point_alpha_2(semantic2, positional2) -> None:
    """docs/model.md section 6 at alpha = 2: 2 % on the positional branch, 0.5 % on the semantic branch."""
    for fp, label in ((semantic2, "semantic"), (positional2, "positional")):
        assert fp.status.converged, fp.status
        assert fp.status.residual <= 1e-10
        assert fp.branch == label
    pos = positional2
    assert abs(pos.overlaps.m[0]) == pytest.approx(0.2581, rel=0.02)
    assert pos.overlaps.m[1] == pytest.approx(-pos.overlaps.m[0], abs=1e-12)  # p_2 = -p_1
    assert pos.overlaps.th0 == 0.0
    assert pos.observables.eps_g == pytest.approx(3.474e-3, rel=0.02)
    sem = semantic2
    assert sem.overlaps.th0 == pytest.approx(0.6326, rel=0.005)  # model units Q.Q*/d
    assert sem.overlaps.th0 * PAPER.sigma2[0] == pytest.approx(0.15816, rel=0.005)  # per token
    assert np.all(sem.overlaps.m == 0.0)
    assert sem.observables.eps_g == pytest.approx(1.4042e-3, rel=0.005)
    # eps_lin is alpha-independent and the same on every branch
    assert sem.observables.eps_lin == pytest.approx(1.971384e-3, rel=1e-6)
    assert pos.observables.eps_lin == sem.observables.eps_lin
    # at alpha = 2 > alpha_c the semantic point is the global minimum and beats the linear baseline
    assert sem.observables.e_t < pos.observables.e_t
    assert sem.observables.eps_g < sem.observables.eps_lin < pos.observables.eps_g


def test_positional_cold_start_reaches_the_same_branch(positional2) -> None:
    """A cold start (continuation from small alpha) lands on the m ~ 0.26 fixed point, not on the
    other positional fixed point (m ~ 0.02-0.12, V0 ~ 90, e_t higher) a direct cold iteration can reach."""
    cold = solve(PAPER, 2.0, "positional", config=SolverConfig(quadrature="gh6"))
    warm = solve(PAPER, 2.0, "positional", init=POS_INIT, config=SolverConfig(quadrature="gh6"))
    assert cold.status.converged and warm.status.converged
    assert cold.branch == warm.branch == "positional"
    assert abs(cold.overlaps.m[0]) == pytest.approx(abs(warm.overlaps.m[0]), rel=1e-6)
    assert cold.overlaps.V0 == pytest.approx(warm.overlaps.V0, rel=1e-6)
    assert cold.observables.e_t == pytest.approx(warm.observables.e_t, rel=1e-9)
    # and that is the published branch (gh6: m = 0.2513)
    assert abs(cold.overlaps.m[0]) == pytest.approx(0.2581, rel=0.04)


@pytest.mark.parametrize("branch", ["semantic", "positional", "agnostic"])
def test_fixed_point_is_fixed_under_one_more_se_step(branch, semantic2, positional2, agnostic05) -> None:
    """One more SE map on the FULL (unreduced) rule moves every overlap by < 1e-9 (scaled by max(1, |x|)).

    Measured: <= 2e-11 (the solve's own residual is computed on the orbit-reduced rule).
    """
    fp = _fixed_points(semantic2, positional2, agnostic05)[branch]
    assert fp.status.converged and fp.branch == branch
    hat, _ = hat_step(PAPER, fp.alpha, fp.overlaps, make_rule(2, RULE))
    x, fx = fp.overlaps.to_vector(), update(PAPER, hat).to_vector()
    assert np.all(np.abs(fx - x) / np.maximum(1.0, np.abs(x)) < 1e-9)
    # the reported conjugates are those of the reported state
    for name in ("qhat", "mhat", "thhat", "Vhat"):
        np.testing.assert_allclose(getattr(fp.hat, name), getattr(hat, name), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("branch", ["semantic", "positional", "agnostic"])
def test_orbit_reduced_rule_gives_the_full_rule_hats(branch, semantic2, positional2, agnostic05) -> None:
    """At the paper's fixed points, the symmetry-reduced rule reproduces the full rule's hat overlaps."""
    fp = _fixed_points(semantic2, positional2, agnostic05)[branch]
    rule = make_rule(2, RULE)
    group = symmetry_group(PAPER, fp.overlaps)
    reduced, exact = reduce_rule(rule, 2, group)
    assert exact and reduced.size < rule.size / 3
    full, _ = hat_step(PAPER, fp.alpha, fp.overlaps, rule, group=group)
    red, _ = hat_step(PAPER, fp.alpha, fp.overlaps, reduced, group=group)
    for name in ("qhat", "mhat", "thhat", "Vhat"):
        np.testing.assert_allclose(getattr(red, name), getattr(full, name), rtol=1e-11, atol=1e-15)


@pytest.mark.parametrize("branch", ["semantic", "positional", "agnostic"])
def test_training_objective_identity(branch, semantic2, positional2, agnostic05) -> None:
    """At a fixed point e_t = -Phi = lambda q0 / 2 + alpha E[loss(h_hat, T(h*))] (docs/derivation.md).

    E[loss(h_hat)] is computed here from the proximal minimisers on the same rule, not from
    the solver's moments.  Measured: agreement to <= 2e-11 relative; asserted 1e-9.
    """
    fp = _fixed_points(semantic2, positional2, agnostic05)[branch]
    k, p, ov = get_kernels(2), PAPER, fp.overlaps
    rule = make_rule(2, RULE)
    w, hstar = channel_fields(rule.nodes[:, :2], rule.nodes[:, 2:], ov.q0, ov.m, ov.th0, p.sigma2, p.rho0)
    T = k.target(hstar, p.omega, p.A_array)
    res, _ = global_prox(k, w, token_variances(ov.V0, p.sigma2), T, p.sigma2)
    assert res.converged.all()
    e_loss = float(rule.weights @ k.loss(res.h, T, p.sigma2))
    assert fp.observables.e_t == pytest.approx(p.lam * ov.q0 / 2 + fp.alpha * e_loss, rel=1e-9)


def test_alpha_c_between_1_2_and_1_3() -> None:
    """Delta e_t = e_t(sem) - e_t(pos) changes sign between alpha = 1.2 and 1.3; its linear root is
    within 0.01 of docs/model.md's alpha_c = 1.2515 (gh8: 1.249)."""
    delta = {}
    for alpha in (1.2, 1.3):
        sem = solve(PAPER, alpha, "semantic", config=SolverConfig(quadrature=RULE))
        pos = solve(PAPER, alpha, "positional", init=POS_INIT, config=SolverConfig(quadrature=RULE))
        assert sem.status.converged and sem.branch == "semantic" and sem.overlaps.th0 > 0.3
        # the right positional fixed point (the other one has |m| ~ 0.1 and V0 ~ 90)
        assert pos.status.converged and pos.branch == "positional" and abs(pos.overlaps.m[0]) > 0.2
        delta[alpha] = sem.observables.e_t - pos.observables.e_t
    assert delta[1.2] > 0 > delta[1.3]
    root = 1.2 + 0.1 * delta[1.2] / (delta[1.2] - delta[1.3])
    assert root == pytest.approx(1.2515, abs=0.01)


def test_eps_g_quadrature_error_shrinks_with_order(semantic2) -> None:
    """eps_g (no proximal step: smooth) at the semantic fixed point, theta != 0 (no factorisation).

    Against gh20 (whose own error is < 1e-9 here), measured relative errors:
    gh6 8.1e-4, gh8 8.2e-5, gh10 1.5e-5, gh12 6.5e-7.  The hat overlaps, by contrast, average
    the jumping proximal map and improve only slowly (about 1e-3 relative from gh6 to gh16).
    """
    k, p, ov = get_kernels(2), PAPER, semantic2.overlaps

    def eps_g(spec: str) -> float:
        rule = make_rule(2, spec)
        w, hstar = channel_fields(rule.nodes[:, :2], rule.nodes[:, 2:], ov.q0, ov.m, ov.th0, p.sigma2, p.rho0)
        return float(rule.weights @ k.loss(w, k.target(hstar, p.omega, p.A_array), p.sigma2))

    ref = eps_g("gh20")
    assert semantic2.observables.eps_g == pytest.approx(eps_g(RULE), rel=1e-12)  # what the solver reports
    err = [abs(eps_g(f"gh{n}") / ref - 1) for n in (6, 8, 10, 12)]
    for coarse, fine in zip(err, err[1:]):
        assert fine < coarse / 3
    assert err[-1] < 2e-6


def test_warm_start_memory_changes_the_path_not_the_fixed_point(semantic2) -> None:
    """A warm start seeded with the previous solve's memory (Jacobian, prox candidates, reduced
    rules) converges to the same verified fixed point as one without it, in fewer SE steps."""
    near = solve(PAPER, 1.95, "semantic", init=semantic2.overlaps, config=SolverConfig(quadrature=RULE))  # a warm solve: has a Jacobian
    assert isinstance(near.memory, SolverMemory) and near.memory.jacobian is not None and near.memory.basis is None
    plain = solve(PAPER, 1.9, "semantic", init=near.overlaps, config=SolverConfig(quadrature=RULE))
    seeded = solve(PAPER, 1.9, "semantic", init=near.overlaps, memory=near.memory, config=SolverConfig(quadrature=RULE))
    assert plain.status.converged and seeded.status.converged
    assert seeded.status.iterations < plain.status.iterations
    np.testing.assert_allclose(seeded.overlaps.to_vector(), plain.overlaps.to_vector(), rtol=1e-8, atol=1e-9)
    # memory from another rule is ignored, not misapplied
    other = solve(PAPER, 1.9, "semantic", init=near.overlaps, memory=near.memory, config=SolverConfig(quadrature="gh6"))
    assert other.status.converged and other.quadrature != seeded.quadrature


def test_semantic_branch_end_accepts_the_mirror_start(semantic2) -> None:
    """theta -> -theta is a symmetry at m = 0: tracing the branch end from the mirrored start
    (th0 < 0, as a sweep can hand over near the end) gives the same points as from th0 > 0."""
    from dataclasses import replace

    from attnphase.numerics.phase.branch_end import trace_branch_end

    cfg = SolverConfig(quadrature=RULE)
    ov = semantic2.overlaps
    mirror = replace(semantic2, overlaps=Overlaps(q0=ov.q0, V0=ov.V0, m=ov.m, th0=-ov.th0))
    kw = dict(n_steps=2, min_ratio=0.5, max_alpha_jump=1.0, config=cfg)
    a = trace_branch_end(PAPER, semantic2, "semantic", **kw)
    b = trace_branch_end(PAPER, mirror, "semantic", **kw)
    assert len(a.points) == len(b.points) == 2
    assert a.alpha == pytest.approx(b.alpha, rel=1e-8)
    assert a.method == b.method == "trace"


@pytest.mark.heavy
def test_semantic_end_trace_goes_on_where_alpha_theta_is_steep() -> None:
    """Regression: with sobol12 seed 1 the trace from the sweep's last point (theta 0.39) met a step
    of alpha > 0.1 at theta ~ 0.3, where alpha(theta) is steep, and with two subdivisions stopped
    there, reporting the branch's end at 0.865; the branch goes on to theta = 0.02 (alpha ~ 0.6)."""
    import numpy as np

    from attnphase.numerics.phase.continuation import sweep

    sw = sweep(PAPER, np.linspace(0.1, 3.0, 12), "semantic",
               config=SolverConfig(quadrature="sobol12:1:1", branch_end="trace"), past_end=False)
    assert sw.end.method == "trace" and sw.end.kind == "bifurcation"
    assert min(abs(p.overlaps.th0) for p in sw.end.points) < 0.05
    assert sw.end.alpha < 0.8


def test_solve_at_theta_returns_a_fixed_point_of_the_alpha_it_reports(semantic2) -> None:
    """At fixed theta the solver finds alpha from the prior's theta equation; the point it returns
    must be an ordinary fixed point at that alpha (one more SE step at alpha moves nothing)."""
    from attnphase.numerics.se.fixed_order_solve import solve_at_order

    th = 0.8 * semantic2.overlaps.th0
    fp = solve_at_order(PAPER, "th0", th, semantic2.overlaps, config=SolverConfig(quadrature=RULE))
    assert fp.status.converged and fp.branch == "semantic"
    assert fp.overlaps.th0 == pytest.approx(th, rel=1e-9)
    assert 0.5 < fp.alpha < 2.0  # theta falls with alpha on this branch
    ov = fp.overlaps
    rule, _ = reduce_rule(make_rule(2, RULE), 2, [])
    hat = hat_step(PAPER, fp.alpha, ov, rule, group=symmetry_group(PAPER, ov))[0]
    np.testing.assert_allclose(update(PAPER, hat).to_vector(), ov.to_vector(), rtol=1e-8, atol=1e-9)


def test_semantic_sweep_ignores_noise_level_theta(semantic2) -> None:
    """A converged point labelled semantic but with |th0| below the sweep's floor (quadrature noise
    near the agnostic point) does not count as on the semantic branch."""
    from dataclasses import replace

    from attnphase.numerics.phase.branch_end import SEMANTIC_THETA_FLOOR, on_branch as _ok

    ov = semantic2.overlaps
    tiny = replace(semantic2, overlaps=Overlaps(q0=ov.q0, V0=ov.V0, m=ov.m, th0=0.2 * SEMANTIC_THETA_FLOOR))
    assert tiny.branch == "semantic" and not _ok(tiny, "semantic")
    assert _ok(semantic2, "semantic")


@pytest.mark.heavy
def test_sweep_stops_at_the_branch_end_when_asked() -> None:
    """past_end=False: no rows beyond the alpha where the semantic branch was found to end (the
    first alpha past it, where the continuation failed, included)."""
    from attnphase.numerics.phase.continuation import sweep

    for end in ("trace", "bifurcation"):
        sw = sweep(PAPER, [0.2, 0.4, 1.2, 2.0], "semantic", config=SolverConfig(quadrature="sobol10", branch_end=end),
                   past_end=False)
        assert [round(p.alpha, 6) for p in sw.points] == [1.2, 2.0]
        assert 0.4 < sw.end.alpha < 1.2 and sw.end.method == {"trace": "trace", "bifurcation": "eigenvalue"}[end]
        assert [p.alpha for p in sw.on_branch()] == [1.2, 2.0]


def test_aligned_prox_keeps_a_semantic_point_below_the_global_branch_end(semantic2) -> None:
    """At alpha = 2 the teacher-aligned basin is the global minimum (same fixed point); at
    alpha = 0.5, below the end of the global-prox semantic branch, the aligned map still has a
    semantic fixed point (GD from the semantic start keeps theta ~ 0.2 there, docs/validation.md)."""
    aligned2 = solve(PAPER, 2.0, "semantic", config=SolverConfig(quadrature=RULE, prox="aligned"))
    np.testing.assert_allclose(aligned2.overlaps.to_vector(), semantic2.overlaps.to_vector(), rtol=1e-6, atol=1e-9)
    low_g = solve(PAPER, 0.5, "semantic", config=SolverConfig(quadrature="sobol10"))
    low_a = solve(PAPER, 0.5, "semantic", config=SolverConfig(quadrature="sobol10", prox="aligned"))
    assert low_g.status.converged and low_g.branch == "agnostic"
    assert low_a.status.converged and low_a.branch == "semantic" and 0.15 < low_a.overlaps.th0 < 0.3


def test_aligned_prox_keeps_a_positional_point_where_the_global_map_has_none() -> None:
    """A = [[0.3, 0.7], [0.8, 0.2]], omega = 0.14, alpha = 0.75: the global-prox solve from the positional
    start ends at the agnostic point (m = 0), the aligned map (basin of the positional mirror image) keeps a
    positional point with |m_l| ~ 0.1 -- the plateau gradient descent from the positional start sits on
    (docs/validation.md, case (c) of the general suite)."""
    params = ModelParams(A=((0.3, 0.7), (0.8, 0.2)), omega=0.14)
    glob = solve(params, 0.75, "positional", config=SolverConfig(quadrature="sobol10"))
    alig = solve(params, 0.75, "positional", config=SolverConfig(quadrature="sobol10", prox="aligned"))
    assert glob.status.converged and np.abs(glob.overlaps.m).max() < 0.01  # agnostic up to the rule's noise
    assert alig.status.converged and alig.branch == "positional"
    assert 0.07 < np.abs(alig.overlaps.m).max() < 0.15 and alig.overlaps.th0 == 0.0


def test_student_mean_field_is_the_regression_of_w_on_the_teacher_field() -> None:
    """E[w_l | h*] = m_l + (th0 / rho0) h*_l (theory.channel.student_mean_field), checked on samples of the
    fields: the least-squares fit of w_l on (1, h*_l) has that intercept and slope."""
    from attnphase.theory.channel import student_mean_field

    rng = np.random.default_rng(3)
    xi, eta = rng.normal(size=(400_000, 2)), rng.normal(size=(400_000, 2))
    q0, m, th0, rho0, s2 = 0.4, np.array([0.2, -0.1]), 0.25, 0.8, np.array([0.25, 0.36])
    w, hstar = channel_fields(xi, eta, q0, m, th0, s2, rho0)
    mean = student_mean_field(hstar, m, th0, rho0)
    for l in range(2):
        X = np.stack([np.ones(len(w)), hstar[:, l]], axis=1)
        coef = np.linalg.lstsq(X, w[:, l], rcond=None)[0]
        fit = coef[0] + coef[1] * hstar[:, l]
        assert abs(coef[0] - m[l]) < 4e-3 and abs(coef[1] - th0 / rho0) < 4e-3
        assert np.abs(fit - mean[:, l]).max() < 0.03


def test_positional_sweep_ignores_noise_level_m(positional2) -> None:
    """A converged point labelled positional but with |m| below the floor (RQMC noise past the
    branch's end) does not count as on the positional branch."""
    from dataclasses import replace

    from attnphase.numerics.phase.branch_end import POSITIONAL_M_FLOOR, on_branch as _ok

    ov = positional2.overlaps
    tiny = replace(positional2, overlaps=Overlaps(ov.q0, ov.V0, 0.1 * POSITIONAL_M_FLOOR * ov.m / np.linalg.norm(ov.m), 0.0))
    assert tiny.branch == "positional" and not _ok(tiny, "positional")
    assert _ok(positional2, "positional")


def test_solve_at_m_returns_a_fixed_point_of_the_alpha_it_reports(positional2) -> None:
    """At fixed |m| alpha solves the prior's m equation (|m|(alpha) = alpha |a| / (lambda + alpha b));
    the point returned must be an ordinary fixed point at that alpha, with the |m| asked for."""
    from attnphase.numerics.se.fixed_order_solve import solve_at_order

    target = 0.95 * float(np.linalg.norm(positional2.overlaps.m))
    fp = solve_at_order(PAPER, "m", target, positional2.overlaps, config=SolverConfig(quadrature=RULE))
    assert fp.status.converged and fp.branch == "positional"
    assert float(np.linalg.norm(fp.overlaps.m)) == pytest.approx(target, rel=1e-9)
    assert np.sign(fp.overlaps.m[0]) == np.sign(positional2.overlaps.m[0])  # the direction of init is kept
    assert abs(fp.alpha - 2.0) < 1.5
    ov = fp.overlaps
    hat = hat_step(PAPER, fp.alpha, ov, make_rule(2, RULE), group=symmetry_group(PAPER, ov))[0]
    np.testing.assert_allclose(update(PAPER, hat).to_vector(), ov.to_vector(), rtol=1e-8, atol=1e-9)
    with pytest.raises(ValueError, match="positional"):
        solve_at_order(PAPER, "m", target, Overlaps(ov.q0, ov.V0, [0.0, 0.0], 0.0))
    with pytest.raises(ValueError, match="fixed m must be > 0"):
        solve_at_order(PAPER, "m", 0.0, ov)


def test_positional_branch_end_traces_points_at_the_sizes_scheduled(positional2) -> None:
    """The positional end trace: every traced point is converged, positional, at a |m| of the
    schedule (geometric from 0.9 |m(start)| to 0.8 |m(start)| here, a failed value approached by a
    geometric half-step from the last good point), shrinking; the end is the largest alpha reached.
    (At alpha = 2, omega = 0.3, |m| still grows with alpha: the trace runs to smaller alpha.)"""
    from attnphase.numerics.phase.branch_end import trace_branch_end

    size = float(np.linalg.norm(positional2.overlaps.m))
    end = trace_branch_end(PAPER, positional2, "positional", n_steps=2, min_ratio=0.8, max_alpha_jump=5.0,
                           config=SolverConfig(quadrature=RULE))
    sizes = np.array([float(np.linalg.norm(p.overlaps.m)) for p in end.points]) / size
    assert len(sizes) >= 1 and np.all(np.diff(sizes) < 0) and np.all((sizes >= 0.8 - 1e-9) & (sizes < 1))
    assert sizes[-1] == pytest.approx(0.8, rel=1e-9)
    assert all(p.status.converged and p.branch == "positional" for p in end.points)
    assert end.alpha == max([positional2.alpha] + [p.alpha for p in end.points])
    assert all(p.alpha < positional2.alpha for p in end.points)


def test_a_warm_start_with_stale_candidates_still_converges() -> None:
    """Memory from a distant solve seeds proximal candidates that miss basins of the new state:
    the polished map then converges to a point of its own that the verifying full search rejects.
    The solver must go on from the full search's residual (keeping the polished one, which no later
    step can beat, it would give up: omega = 0.15, alpha 0.3 -> 1.0, residual 5e-4)."""

    p = ModelParams(omega=0.15)
    cfg = SolverConfig(max_iter=60)
    far = solve(p, 0.3, "positional", config=cfg)
    fp = solve(p, 1.0, "positional", init=far.overlaps, memory=far.memory, config=cfg)
    fresh = solve(p, 1.0, "positional", init=far.overlaps, config=cfg)
    assert fp.status.converged and fresh.status.converged
    np.testing.assert_allclose(fp.overlaps.to_vector(), fresh.overlaps.to_vector(), rtol=1e-6, atol=1e-8)
