"""Stability of theta = 0 (theory/stability.py, numerics/se/stability.py): where the semantic branch is born.

lambda = d th0_new / d th0 at th0 = 0 comes from a likelihood-ratio derivative of the channel
averages (no derivative of the jumping proximal map).  Checked here: the sympy score of a
covariance, the derivative identity against central differences for a smooth stand-in for g
(exact Gauss-Hermite), lambda = 0 where the target ignores the teacher (omega = 1), and the
bifurcation at the paper's point against docs/model.md's careful value (~0.71).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnphase.numerics import SolverConfig, solve, sweep
from attnphase.numerics.quadrature.rules import gauss_hermite_rule, make_rule
from attnphase.numerics.phase.bifurcation import branch_bifurcation
from attnphase.numerics.se.stability import theta_stability_at
from attnphase.theory.channel import channel_fields
from attnphase.theory.params import ModelParams
from attnphase.theory.stability import covariance_score_expr, theta_stability, theta_stability_expr


def test_covariance_score_is_xy_over_ab() -> None:
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    a, b = sp.symbols("a b", positive=True)
    assert sp.simplify(covariance_score_expr() - x * y / (a * b)) == 0


def test_lambda_expression_and_kernel_agree() -> None:
    """The generated kernel evaluates alpha V0 / sqrt(q0) sum_l sigma_l E[g_l S_l] (unequal sigmas)."""
    import sympy as sp

    expr = theta_stability_expr(2)
    assert {str(f) for f in expr.atoms(sp.Function)} == {"E(g_1 S_1)", "E(g_2 S_2)"}
    got = theta_stability(0.7, 120.0, 0.2, 1.3, [0.25, 0.64], [1e-3, -2e-3])
    assert got == pytest.approx(0.7 * 120.0 / np.sqrt(0.2) * (0.5 * 1e-3 + 0.8 * -2e-3), rel=1e-14)


@pytest.mark.parametrize("sigma2, m", [((0.25, 0.25), (0.0, 0.0)), ((0.25, 0.64), (0.3, -0.1))])
def test_theta_derivative_of_a_channel_average_is_the_likelihood_ratio_form(sigma2, m) -> None:
    """d E[f_l eta_l] / d th0 at th0 = 0 equals E[f_l S_l] / sqrt(q0 rho0), S_l = eta_l sum_k xi_k eta_k - xi_l,
    for a smooth f of (w, h*) (Gauss-Hermite order 24 is exact to ~1e-12 here; central differences in th0)."""
    s2, m = np.array(sigma2), np.array(m)
    q0, rho0 = 0.2, 1.3
    rule = gauss_hermite_rule(2, 24)
    xi, eta, wt = rule.nodes[:, :2], rule.nodes[:, 2:], rule.weights

    def f(w, hs):
        return np.stack([np.exp(-(w[:, 0] - hs[:, 0]) ** 2 - 0.3 * (w[:, 1] - 0.5 * hs[:, 1]) ** 2) + 0.2 * hs[:, 0] * w[:, 1],
                         np.tanh(2 * w[:, 1] + hs[:, 1] - 0.4 * w[:, 0]) * (1 + hs[:, 0] * w[:, 1])], axis=1)

    def E_f_eta(th0):
        w, hs = channel_fields(xi, eta, q0, m, th0, s2, rho0)
        return wt @ (f(w, hs) * eta)

    h = 1e-5
    fd = (E_f_eta(h) - E_f_eta(-h)) / (2 * h)
    w, hs = channel_fields(xi, eta, q0, m, 0.0, s2, rho0)
    S = eta * (xi * eta).sum(axis=1, keepdims=True) - xi
    lr = wt @ (f(w, hs) * S) / np.sqrt(q0 * rho0)
    assert np.abs(fd).max() > 1e-2  # the test function does respond to theta
    np.testing.assert_allclose(lr, fd, rtol=1e-6, atol=1e-9)


def test_lambda_vanishes_when_the_target_ignores_the_teacher() -> None:
    """omega = 1: T = A does not depend on h*, so g does not either and E[g_l S_l] = 0 exactly in the
    limit (E[eta_l eta_k] = delta_lk): lambda is 0 to the rule's accuracy, far below 1."""
    p = ModelParams(omega=1.0)
    fp = solve(p, 1.0, "agnostic", config=SolverConfig(quadrature="sobol10"))
    lam, failures = theta_stability_at(p, 1.0, fp.overlaps, make_rule(2, "sobol14"))
    assert failures == 0
    assert abs(lam) < 0.02


def test_semantic_bifurcation_at_the_papers_point() -> None:
    """omega = 0.3: lambda = 1 on the agnostic branch at ~0.714 (sobol15; seeds 0-5: 0.708-0.722);
    docs/model.md's careful solution: the semantic branch ends continuously near 0.71."""
    b = branch_bifurcation(ModelParams(omega=0.3), 0.8, "theta", config=SolverConfig(bifurcation_quadrature="sobol15"))
    assert b.converged, b.message
    assert 0.70 < b.alpha < 0.73
    assert b.slope > 0  # theta = 0 is stable below, unstable above
    a = [pt for pt in b.points]
    assert min(abs(lam - 1) for _, lam in a) < 1e-3


def test_mean_shift_score_and_m_block_kernel() -> None:
    """The sympy mean-shift score is x / q, and the generated J_m is alpha V0 P G, G[l, j] = E[g_l xi_j] / sqrt(q_j)."""
    import sympy as sp

    from attnphase.theory.stability import m_stability, mean_score_expr

    x = sp.Symbol("x", real=True)
    q = sp.Symbol("q", positive=True)
    assert sp.simplify(mean_score_expr() - x / q) == 0
    P = np.array([[1.0, -0.6], [-0.6, 1.2]])
    E = np.array([[1e-3, 2e-4], [-3e-4, 7e-4]])
    s2 = np.array([0.25, 0.64])
    J = m_stability(0.9, 40.0, 0.2, s2, P, E)
    np.testing.assert_allclose(J, 0.9 * 40.0 * P @ (E / np.sqrt(s2 * 0.2)[None, :]), rtol=1e-13)


def test_m_derivative_of_a_channel_average_is_the_likelihood_ratio_form() -> None:
    """d E[f_l] / d m_j at m = 0 equals E[f_l xi_j] / sqrt(q_j) for a smooth f of (w, h*) (Gauss-Hermite)."""
    s2, q0, rho0 = np.array([0.25, 0.64]), 0.2, 1.0
    rule = gauss_hermite_rule(2, 24)
    xi, eta, wt = rule.nodes[:, :2], rule.nodes[:, 2:], rule.weights

    def f(w, hs):
        return np.stack([np.tanh(3 * w[:, 0] * hs[:, 0] + w[:, 1]), np.exp(-(w[:, 1] - hs[:, 1]) ** 2) * w[:, 0]], axis=1)

    def E_f(m):
        w, hs = channel_fields(xi, eta, q0, m, 0.0, s2, rho0)
        return wt @ f(w, hs)

    h = 1e-5
    fd = np.stack([(E_f(h * e) - E_f(-h * e)) / (2 * h) for e in np.eye(2)], axis=1)  # [l, j]
    w, hs = channel_fields(xi, eta, q0, np.zeros(2), 0.0, s2, rho0)
    lr = np.einsum("n,nl,nj->lj", wt, f(w, hs), xi) / np.sqrt(s2 * q0)[None, :]
    assert np.abs(fd).max() > 1e-2
    np.testing.assert_allclose(lr, fd, rtol=1e-6, atol=1e-9)


@pytest.mark.heavy
def test_positional_sweep_ends_where_the_agnostic_branch_restabilises_in_m() -> None:
    """omega = 0.15: the positional branch, followed up, is lost near 1.16 by solver failure on
    sobol12 (alpha(|m|) is flat there); the agnostic branch's m eigenvalue falls through 1 at ~1.50
    (sobol15), where a sobol14 trace at fixed |m| put the branch's points (1.41-1.49 for |m| 0.24 -> 0.05)."""
    from attnphase.numerics.phase.continuation import sweep

    sw = sweep(ModelParams(omega=0.15), np.linspace(0.1, 3.0, 12), "positional", past_end=False)
    assert sw.end.method == "eigenvalue" and sw.end.kind == "bifurcation", sw.end.note
    assert 1.45 < sw.end.alpha < 1.56 and sw.end_side == "above"


def test_bifurcation_secant_starts_where_the_eigenvalue_is_exactly_zero(monkeypatch) -> None:
    """Regression (fast tier, omega = 0.1): an eigenvalue of exactly 0 at the first agnostic point made the
    secant's first step divide by zero; it now takes its longest step towards 1 and converges."""
    from types import SimpleNamespace

    from attnphase.numerics.phase import bifurcation

    agnostic = SimpleNamespace(status=SimpleNamespace(converged=True), branch="agnostic", overlaps=None, memory=None)
    monkeypatch.setattr(bifurcation, "solve", lambda *a, **kw: SimpleNamespace(**vars(agnostic), alpha=a[1]))
    monkeypatch.setattr(bifurcation, "node_solves", lambda *a, **kw: SimpleNamespace(minima=None))
    # mu(alpha) = 0 at the start, then falling through 1 at alpha = 1.3 (the positional branch's end)
    mu = {"m": (lambda p, alpha, ov, rule, cfg, solves: (0.0 if alpha == 1.0 else 2.3 - alpha, 0)), "theta": None}
    monkeypatch.setattr(bifurcation, "DIRECTIONS", {"m": (mu["m"], -1.0)})
    bif = bifurcation.branch_bifurcation(ModelParams(omega=0.1), 1.0, "m", config=SolverConfig(error_bars=False))
    assert bif.converged and bif.alpha == pytest.approx(1.3, abs=1e-3)


def test_the_secants_first_step_towards_alpha_zero_stays_above_it(monkeypatch) -> None:
    """Regression (``--lam 0.05 --omega 0.1``, the positional birth looked for from alpha = 0.1): the first step,
    up to 4 ``step`` long, went to alpha = -0.1 and the agnostic solve there raised ValueError; it now stops halfway
    to 0 and the secant converges."""
    from types import SimpleNamespace

    from attnphase.numerics.phase import bifurcation

    agnostic = SimpleNamespace(status=SimpleNamespace(converged=True), branch="agnostic", overlaps=None, memory=None)
    alphas = []

    def solve(params, alpha, branch, **kw):
        alphas.append(alpha)
        return SimpleNamespace(**vars(agnostic), alpha=alpha)
    monkeypatch.setattr(bifurcation, "solve", solve)
    monkeypatch.setattr(bifurcation, "node_solves", lambda *a, **kw: SimpleNamespace(minima=None))
    # mu(alpha) = 0.3 at alpha = 0.1, rising through 1 at 0.2 (a birth): the first step, from the slope of an end
    # (mu falling), points to 0.1 - 0.2
    mu = (lambda p, alpha, ov, rule, cfg, solves: (0.3 + 7.0 * (alpha - 0.1), 0))
    monkeypatch.setattr(bifurcation, "DIRECTIONS", {"m": (mu, -1.0)})
    bif = bifurcation.branch_bifurcation(ModelParams(omega=0.1), 0.1, "m", config=SolverConfig(error_bars=False),
                                         step=0.05)
    assert min(alphas) > 0 and alphas[1] == 0.05
    assert bif.converged and bif.alpha == pytest.approx(0.2, abs=1e-3)


def test_a_secant_through_a_jump_of_the_eigenvalue_is_no_crossing(monkeypatch) -> None:
    """``phase-diagram --omega 0.3 --lam 0.05 --precision fast``: the zero student's mu goes from 0.70 at alpha = 0.25
    to 1487 at 0.35; the secant through them took a step below its tolerance and "converged" at 0.25 with mu = 0.70,
    a positional birth at 0.24997 +- 5e-6 where ``solve`` finds the agnostic point stable in m up to 0.36.  A secant
    that stops with its eigenvalue far from 1 located nothing; a smooth crossing still converges."""
    from types import SimpleNamespace

    from attnphase.numerics.phase import bifurcation

    agnostic = SimpleNamespace(status=SimpleNamespace(converged=True), branch="agnostic", overlaps=None, memory=None)
    monkeypatch.setattr(bifurcation, "solve", lambda *a, **kw: SimpleNamespace(**vars(agnostic), alpha=a[1]))
    monkeypatch.setattr(bifurcation, "node_solves", lambda *a, **kw: SimpleNamespace(minima=None))
    jump = (lambda p, alpha, ov, rule, cfg, solves: (0.23 + 1.9 * (alpha - 0.1) if alpha < 0.3 else 1487.0, 0))
    monkeypatch.setattr(bifurcation, "DIRECTIONS", {"m": (jump, -1.0)})
    bif = bifurcation.branch_bifurcation(ModelParams(omega=0.3, lam=0.05), 0.1, "m",
                                         config=SolverConfig(error_bars=False))
    assert not bif.converged and math.isnan(bif.alpha) and "no crossing of 1" in bif.message, bif
    smooth = (lambda p, alpha, ov, rule, cfg, solves: (0.23 + 1.9 * (alpha - 0.1), 0))  # through 1 at 0.5053
    monkeypatch.setattr(bifurcation, "DIRECTIONS", {"m": (smooth, -1.0)})
    bif = bifurcation.branch_bifurcation(ModelParams(omega=0.3, lam=0.05), 0.1, "m",
                                         config=SolverConfig(error_bars=False))
    assert bif.converged and bif.alpha == pytest.approx(0.1 + 0.77 / 1.9, abs=1e-3)


def test_a_secant_step_whose_warm_agnostic_solve_fails_is_solved_from_the_starts(monkeypatch) -> None:
    # --omega 0:0.45:46, omega = 0.19: the positional end's secant stopped with "no agnostic fixed point at alpha =
    # 1.7177" when the solve warm from the previous step did not converge; the cold start is tried too
    from types import SimpleNamespace

    from attnphase.numerics.phase import bifurcation

    calls = []

    def solve(params, alpha, branch, init=None, memory=None, config=None):
        calls.append((alpha, init is None))
        ok = init is None or alpha == 1.0  # the warm solves after the first step fail
        return SimpleNamespace(status=SimpleNamespace(converged=ok, message="m"), branch="agnostic", overlaps=alpha,
                               memory=None, alpha=alpha)

    monkeypatch.setattr(bifurcation, "solve", solve)
    monkeypatch.setattr(bifurcation, "node_solves", lambda *a, **kw: SimpleNamespace(minima=None))
    mu = (lambda p, alpha, ov, rule, cfg, solves: (2.3 - alpha, 0))
    monkeypatch.setattr(bifurcation, "DIRECTIONS", {"m": (mu, -1.0)})
    bif = bifurcation.branch_bifurcation(ModelParams(omega=0.1), 1.0, "m", config=SolverConfig(error_bars=False),
                                         starts=(None,))
    assert bif.converged and bif.alpha == pytest.approx(1.3, abs=1e-3)
    later = [cold for alpha, cold in calls if alpha != 1.0]
    assert later[:2] == [False, True]  # warm first, then the cold start


def _fast_bifurcation_config() -> SolverConfig:
    """Small rules; no multilevel step (the secant's own end, verified at its last point)."""
    return SolverConfig(quadrature="sobol8:4", bifurcation_quadrature="sobol12:4", end_quadrature=None)


def test_multilevel_end_is_the_end_on_the_finer_solve_rule() -> None:
    """The multilevel step (secant on sobol8:4, its last point's agnostic fixed point re-solved on sobol10:4, one
    linearised step) lands where the whole secant on sobol10:4 ends: both are the root of e(alpha) = 1 with the
    agnostic point on sobol10:4 and the same bifurcation rule, up to the secant's tolerance (1e-3) and the
    step's linearisation; the end moves away from the coarse secant's by more than that."""
    from attnphase.numerics.phase import bifurcation

    p, coarse = ModelParams(omega=0.3), _fast_bifurcation_config()
    fine_only = bifurcation.branch_bifurcation(p, 0.75, "theta", config=coarse.replace(quadrature="sobol10:4"))
    ml = bifurcation.branch_bifurcation(p, 0.75, "theta", config=coarse.replace(end_quadrature="sobol10:4"))
    plain = bifurcation.branch_bifurcation(p, 0.75, "theta", config=coarse)
    assert ml.converged and fine_only.converged and "sobol10:4" in ml.message
    assert ml.alpha == pytest.approx(fine_only.alpha, abs=1.5e-3)
    assert abs(plain.alpha - fine_only.alpha) > 3e-3
    # where the end lies on the solve rule (what the branch's own points are compared with): the secant's root
    assert ml.solve_rule_alpha == pytest.approx(plain.alpha, abs=1e-12) and plain.solve_rule_alpha == plain.alpha
    # its error bar comes from sobol10:4's blocks: about that of the whole computation on sobol10:4
    assert 0.5 < ml.err / fine_only.err < 2.0


def test_multilevel_step_only_on_a_finer_rule_and_when_short(monkeypatch) -> None:
    """An end rule of no more nodes than the solve rule is no refinement (the secant's end, unchanged); a step
    longer than MAX_MULTILEVEL_STEP is not trusted: the secant's end, verified, with the reason."""
    from attnphase.numerics.phase import bifurcation

    p, cfg = ModelParams(omega=0.3), _fast_bifurcation_config()
    plain = bifurcation.branch_bifurcation(p, 0.75, "theta", config=cfg)
    same = bifurcation.branch_bifurcation(p, 0.75, "theta", config=cfg.replace(end_quadrature="sobol8:4"))
    assert same.alpha == plain.alpha and same.message == "converged"
    monkeypatch.setattr(bifurcation, "MAX_MULTILEVEL_STEP", 0.0)
    refused = bifurcation.branch_bifurcation(p, 0.75, "theta", config=cfg.replace(end_quadrature="sobol10:4"))
    assert refused.converged and refused.alpha == pytest.approx(plain.alpha, abs=1e-12)
    assert "not refined" in refused.message and "longer than" in refused.message


def test_polished_secant_finds_the_searched_secants_end(monkeypatch) -> None:
    """The secant's later steps polish the first step's minima (fewer full searches than steps) and end
    where a secant that searches at every step ends, error bar included (the block eigenvalues polished
    from the verifying search's minima)."""
    from attnphase.numerics.phase import bifurcation

    p, cfg = ModelParams(omega=0.3), _fast_bifurcation_config()
    polished = bifurcation.branch_bifurcation(p, 0.75, "theta", config=cfg)
    assert polished.converged and len(polished.points) >= 3
    assert polished.searches < len(polished.points) + 1  # some steps polished, the last one verified
    search_only = bifurcation.node_solves
    monkeypatch.setattr(bifurcation, "node_solves",
                        lambda params, ov, rule, config, polish_from=None: search_only(params, ov, rule, config))
    searched = bifurcation.branch_bifurcation(p, 0.75, "theta", config=cfg)
    assert searched.converged
    assert polished.alpha == pytest.approx(searched.alpha, abs=1e-10)
    assert polished.err == pytest.approx(searched.err, rel=1e-8)


def test_a_polish_that_misses_a_basin_is_caught_by_the_verifying_search(monkeypatch) -> None:
    """A polished eigenvalue that differs from the full search's at the converged point (a basin the
    polish could not see, simulated by a perturbed polish) is replaced by the searched value, and the
    secant goes on from it."""
    from dataclasses import replace as dc_replace

    from attnphase.numerics.phase import bifurcation

    p, cfg = ModelParams(omega=0.3), _fast_bifurcation_config()
    honest = bifurcation.node_solves

    def missed_basin(params, ov, rule, config, polish_from=None):
        s = honest(params, ov, rule, config, polish_from)
        return dc_replace(s, g=s.g * 1.01) if polish_from is not None else s

    monkeypatch.setattr(bifurcation, "node_solves", missed_basin)
    bif = bifurcation.branch_bifurcation(p, 0.75, "theta", config=cfg)
    assert bif.converged
    monkeypatch.setattr(bifurcation, "node_solves", honest)
    last_alpha, last_value = bif.points[-1]
    fp = bifurcation.solve(p, last_alpha, "agnostic", config=cfg)
    exact, _ = theta_stability_at(p, last_alpha, fp.overlaps, make_rule(2, cfg.bifurcation_quadrature), cfg)
    assert last_value == pytest.approx(exact, abs=1e-6)  # the verified (searched) value, not the perturbed one
    assert bif.searches >= 2


def test_a_block_of_a_pooled_rule_is_its_slice() -> None:
    """The error bars polish block j on the pooled rule's minima at nodes j n .. (j + 1) n - 1: the block's
    own rule must be that slice of the pooled one."""
    pooled = make_rule(2, "sobol9:4")
    for j in range(4):
        np.testing.assert_array_equal(make_rule(2, f"sobol9:4@{j}").nodes, pooled.nodes[j * 512:(j + 1) * 512])


def test_mu_is_the_leading_eigenvalue_on_the_range_of_P() -> None:
    """J = c P G maps into range(P): with the default Gram (null direction m_1 + m_2) J has an exact 0 eigenvalue
    that is no m direction; mu is the leading eigenvalue on range(P), negative where the positional one is
    (it was reported as 0, and the bifurcation secant saw a flat mu: fast tier, omega = 0.1)."""
    from attnphase.numerics.se.stability import leading_on_range

    P = np.array([[1.0, -1.0], [-1.0, 1.0]])
    G = np.array([[-0.7, 0.2], [0.1, -0.4]])
    J = 1.5 * P @ G
    assert np.max(np.linalg.eigvals(J).real) == pytest.approx(0.0, abs=1e-12)
    mu = leading_on_range(J, P)
    nonzero = [e for e in np.linalg.eigvals(J).real if abs(e) > 1e-9]
    assert mu == pytest.approx(max(nonzero)) and mu < 0
    P3 = np.eye(3) + 0.2  # positive definite: the whole space
    J3 = P3 @ np.diag([0.5, -1.0, 0.3])
    assert leading_on_range(J3, P3) == pytest.approx(np.max(np.linalg.eigvals(J3).real))


def test_the_matrix_forms_leading_eigenvalue_is_taken_transverse_to_the_gauge_orbit() -> None:
    """The SE map commutes with the gauge, so its Jacobian maps the orbit's tangents to themselves (eigenvalue 1);
    the stability eigenvalue is the leading one on the complement: here 0.5, beside the tangent's 1."""
    from attnphase.numerics.se.stability import transverse_leading_eigenvalue
    from attnphase.numerics.se.gauge import gauge_tangents
    from attnphase.numerics.se.overlaps import Overlaps

    ov = Overlaps(np.array([[0.4, 0.1], [0.1, 0.2]]), np.array([[50.0, 3.0], [3.0, 40.0]]),
                  np.array([[0.2, 0.05], [-0.2, -0.05]]), np.array([[0.3], [0.1]]))
    T = gauge_tangents(ov)
    n = T.shape[0]
    U = np.linalg.qr(T)[0]
    C = np.linalg.svd(np.eye(n) - U @ U.T)[0][:, : n - T.shape[1]]
    rates = np.linspace(-0.3, 0.5, n - T.shape[1])
    J = U @ U.T + C @ np.diag(rates) @ C.T + U @ np.full((T.shape[1], n - T.shape[1]), 0.2) @ C.T
    assert np.max(np.linalg.eigvals(J).real) == pytest.approx(1.0)
    assert transverse_leading_eigenvalue(J, ov) == pytest.approx(0.5)


def test_the_aligned_map_ends_no_branch_by_a_bifurcation() -> None:
    """The aligned map picks a node's minimum by the sign of h . r, which flips with the order parameter: it is not
    smooth at the agnostic point, so the agnostic point's eigenvalue says nothing of where its branches end, and
    ``bifurcation_end`` declines with the reason (before any solve) where the global and local maps take it."""
    from attnphase.numerics.phase.branch_end import ALIGNED_END_NOTE, bifurcation_end, ends_by_bifurcation

    assert ends_by_bifurcation(SolverConfig()) and ends_by_bifurcation(SolverConfig(prox="local"))
    assert not ends_by_bifurcation(SolverConfig(prox="aligned"))
    assert not ends_by_bifurcation(SolverConfig(branch_end="trace"))
    end, why = bifurcation_end(ModelParams(omega=0.3), "semantic", "down", None, 0.9, SolverConfig(prox="aligned"))
    assert end is None and why == ALIGNED_END_NOTE


@pytest.mark.heavy
def test_an_aligned_semantic_sweep_goes_on_below_the_global_maps_end() -> None:
    """At omega = 0.3 the aligned semantic branch has points below the global one's end (0.716): alpha = 0.5,
    |theta| = 0.212 (the basin gradient descent keeps from the semantic start, docs/validation.md), while its solve
    at 0.7 does not converge.  The sweep keeps the 0.5 point on the branch and claims no end: an end at the global
    map's eigenvalue crossing (0.716) would make the validation report read the 0.5 point as past the end."""
    sw = sweep(ModelParams(omega=0.3), [0.5, 0.7, 0.9], "semantic", config=SolverConfig(prox="aligned", error_bars=False))
    low = sw.points[0]
    assert math.isnan(sw.end.alpha)
    assert low.alpha == 0.5 and low.status.converged and low.branch == "semantic" and abs(low.overlaps.th0) > 0.2


def test_a_bifurcations_bar_leaves_out_a_block_that_fell_to_the_zero_student():
    """``phase-diagram --lam 0.05 --omega 0.2 --precision fast``: the semantic end 0.548 printed as "0 +- 22000" (and
    the positional birth "+- 500"): on one block (sobol8:4@0) the agnostic point, a small student there (q0 = 0.0016
    pooled), fell to Q = 0 (q0 = 1.6e-19), where the theta eigenvalue is 1 + 85321.  That block reproduces another
    fixed point: the bar comes from the other three."""
    from attnphase.numerics.phase.bifurcation import bifurcation_error

    params = ModelParams(omega=0.2, lam=0.05)
    cfg = SolverConfig.for_precision("fast")
    agnostic = solve(params, 0.548, "agnostic", config=cfg)
    assert agnostic.branch == "agnostic" and not agnostic.overlaps.zero_student
    err = bifurcation_error(params, agnostic, "theta", 0.98, cfg)
    assert 0.0 < err < 0.2, err
