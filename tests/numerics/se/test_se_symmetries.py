"""Hypothesis properties of the state-evolution fixed points: exact symmetries and limits.

* Q -> -Q: the SE map commutes with m -> -m, and fixed points come in mirror pairs;
* relabelling the tokens together with sigma, P and A permutes m and leaves every scalar unchanged
  (for one SE step, and for fixed points);
* alpha -> 0: q0 = O(alpha) (measured q0 / alpha = 0.28 at alpha = 1e-3 up to 0.34 at 0.1) and
  V0 -> 1 / lambda with V0 lambda - 1 = O(sqrt(alpha)) (measured 0.42-0.54 sqrt(alpha));
* omega = 1: the target does not depend on h*, so E[g eta] = 0 and thhat = 0 for every state:
  no semantic fixed point.

Two known limitations are pinned as strict xfails at the end (each turns into a failure once
fixed, so the marker has to go); two former defects are regression tests there.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from attnphase.numerics import SolverConfig, solve
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.quadrature.rules import make_rule, reduce_rule
from attnphase.numerics.se.se_map import hat_step
from attnphase.numerics.se.updates import update
from attnphase.numerics.quadrature.symmetry import symmetry_group
from attnphase.theory.params import ModelParams

PAPER = ModelParams(omega=0.3)
A2 = ((0.3, 0.7), (0.8, 0.2))  # the second A of the literature: not swap-invariant
A3 = ((0.7, 0.3), (0.4, 0.6))  # not swap-invariant, but A_11 + A_22 >= 1 (the loss keeps exact zeros)
SLOW = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=10, deadline=None)
@given(alpha=st.floats(0.2, 3.0), q0=st.floats(0.05, 0.6), V0=st.floats(10.0, 120.0), m0=st.floats(0.01, 0.4))
def test_se_map_commutes_with_m_to_minus_m(alpha: float, q0: float, V0: float, m0: float) -> None:
    """F(-m) = -F(m) for one SE step at any positional state (the full rule, no symmetrisation help)."""
    rule = make_rule(2, "gh6")
    hats = []
    for sign in (1.0, -1.0):
        ov = Overlaps(q0, V0, [sign * m0, -sign * m0], 0.0)
        hats.append(hat_step(PAPER, alpha, ov, rule, group=[])[0])
    np.testing.assert_allclose(hats[1].mhat, -hats[0].mhat, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(hats[1].Vhat, hats[0].Vhat, rtol=1e-9, atol=1e-15)
    lam_ = [PAPER.lam + PAPER.sigma2 @ h.Vhat for h in hats]
    if min(lam_) <= 1e-9:  # far from a fixed point the ridge update may not exist (Lam <= 0): for neither
        assert max(lam_) <= 1e-8
        return
    a, b = (update(PAPER, h) for h in hats)
    np.testing.assert_allclose(b.m, -a.m, rtol=1e-9, atol=1e-14)
    assert b.q0 == pytest.approx(a.q0, rel=1e-10)
    assert b.V0 == pytest.approx(a.V0, rel=1e-10)
    assert abs(a.th0) < 1e-14 and abs(b.th0) < 1e-14  # not symmetrised here: thhat = 0 up to rounding


@SLOW
@given(alpha=st.floats(1.2, 3.0), m0=st.floats(0.22, 0.3))
def test_fixed_points_come_in_mirror_pairs(alpha: float, m0: float) -> None:
    """If (q0, V0, m) is a fixed point, so is (q0, V0, -m), with the same e_t and eps_g.

    (Two independent solves from m and from -m need not end at mirror images: with a
    low-order rule the positional map is piecewise smooth and has several nearby fixed
    points -- gh6 at alpha = 1.5 has m = 0.2535 (V0 = 55.0) and m = 0.2468 (V0 = 58.2) --
    and rounding picks between them.)
    """
    a = solve(PAPER, alpha, "positional", init=Overlaps(0.2, 44.0, [m0, -m0], 0.0), config=SolverConfig(quadrature="gh8"))
    assert a.status.converged and a.branch == "positional", a.status
    ov = a.overlaps
    b = solve(PAPER, alpha, "positional", init=Overlaps(ov.q0, ov.V0, -ov.m, 0.0), config=SolverConfig(quadrature="gh8"))
    assert b.status.converged and b.branch == "positional", b.status
    np.testing.assert_allclose(b.overlaps.m, -a.overlaps.m, rtol=1e-8, atol=1e-12)
    assert b.overlaps.q0 == pytest.approx(a.overlaps.q0, rel=1e-8)
    assert b.overlaps.V0 == pytest.approx(a.overlaps.V0, rel=1e-8)
    assert b.overlaps.th0 == 0.0
    assert b.observables.e_t == pytest.approx(a.observables.e_t, rel=1e-10)
    assert b.observables.eps_g == pytest.approx(a.observables.eps_g, rel=1e-10)


@settings(max_examples=8, deadline=None)
@given(
    alpha=st.floats(0.3, 3.0),
    state=st.sampled_from(["positional", "semantic"]),
    s=st.tuples(st.floats(0.4, 0.7), st.floats(0.4, 0.7)),
    c=st.floats(-0.85, 0.85),
    d=st.floats(0.75, 1.2),
)
def test_se_map_commutes_with_token_relabelling(alpha, state, s, c, d) -> None:
    """One SE step: relabelling pi = (2 1) of sigma, P, A (the literature's asymmetric A2) and the
    state permutes the hat overlaps and leaves E[M], eps_g unchanged."""
    pi = [1, 0]
    A, P, sig = np.array(A2), np.array([[1.0, c], [c, d]]), np.array(s)
    p1 = ModelParams(sigma=tuple(sig), A=A, P=P, omega=0.3)
    p2 = ModelParams(sigma=tuple(sig[pi]), A=A[np.ix_(pi, pi)], P=P[np.ix_(pi, pi)], omega=0.3)
    ov = Overlaps(0.2, 40.0, [0.3, -0.2], 0.0) if state == "positional" else Overlaps(0.5, 40.0, [0.05, 0.1], 0.5)
    rule = make_rule(2, "gh6")
    h1, m1 = hat_step(p1, alpha, ov, rule)
    h2, m2 = hat_step(p2, alpha, Overlaps(ov.q0, ov.V0, ov.m[pi], ov.th0), rule)
    for name in ("qhat", "mhat", "thhat", "Vhat"):
        np.testing.assert_allclose(getattr(h2, name), getattr(h1, name)[pi], rtol=1e-9, atol=1e-15)
    assert m2.E_M == pytest.approx(m1.E_M, rel=1e-12) and m2.eps_g == pytest.approx(m1.eps_g, rel=1e-12)


@SLOW
@given(
    alpha=st.floats(0.8, 2.5),
    branch=st.sampled_from(["positional", "semantic"]),
    s=st.tuples(st.floats(0.4, 0.7), st.floats(0.4, 0.7)),
    c=st.floats(-0.85, 0.85),
    d=st.floats(0.75, 1.2),
)
def test_relabelled_fixed_point_is_a_fixed_point(alpha, branch, s, c, d) -> None:
    """A fixed point of (sigma, P, A) relabelled by pi = (2 1) is a fixed point of the relabelled model,
    with m permuted and q0, V0, th0, e_t, eps_g unchanged.

    A = [[0.7, 0.3], [0.4, 0.6]] (not swap-invariant, A_11 + A_22 >= 1): with the literature's A2 the
    proximal search is not reliably global (see test_global_prox.py) and the solver's map then
    depends on its warm-start history (strict xfail below).  Two solves from relabelled *starts*
    need not end at relabelled points where several fixed points coexist (e.g. an agnostic one and
    a positional one with m ~ 1e-2): rounding in the accelerated iteration picks between them.
    """
    pi = [1, 0]
    A, P, sig = np.array(A3), np.array([[1.0, c], [c, d]]), np.array(s)
    p1 = ModelParams(sigma=tuple(sig), A=A, P=P, omega=0.3)
    p2 = ModelParams(sigma=tuple(sig[pi]), A=A[np.ix_(pi, pi)], P=P[np.ix_(pi, pi)], omega=0.3)
    init = Overlaps(0.2, 40.0, [0.3, -0.2], 0.0) if branch == "positional" else Overlaps(0.5, 40.0, [0.0, 0.0], 0.5)
    f1 = solve(p1, alpha, branch, init=init, config=SolverConfig(quadrature="gh6"))
    assume(f1.status.converged)  # not every (P, A, alpha) has this branch; its existence is not the point
    ov = f1.overlaps
    f2 = solve(p2, alpha, branch, init=Overlaps(ov.q0, ov.V0, ov.m[pi], ov.th0), config=SolverConfig(quadrature="gh6"))
    assert f2.status.converged, f2.status
    assert f2.branch == f1.branch
    np.testing.assert_allclose(f2.overlaps.m, f1.overlaps.m[pi], rtol=1e-8, atol=1e-12)
    for name in ("q0", "V0", "th0"):
        assert getattr(f2.overlaps, name) == pytest.approx(getattr(f1.overlaps, name), rel=1e-8, abs=1e-14)
    for name in ("e_t", "eps_g", "eps_lin"):
        assert getattr(f2.observables, name) == pytest.approx(getattr(f1.observables, name), rel=1e-9)


@settings(max_examples=6, deadline=None)
@given(alpha=st.floats(1e-3, 0.01), branch=st.sampled_from(["agnostic", "positional"]))
def test_small_alpha_limit(alpha: float, branch: str) -> None:
    """alpha -> 0: q0 -> 0 linearly, m -> 0, V0 -> 1 / lambda (ridge prior alone)."""
    fp = solve(PAPER, alpha, branch, config=SolverConfig(quadrature="gh6"))
    assert fp.status.converged, fp.status
    ov = fp.overlaps
    assert 0.0 < ov.q0 < 0.5 * alpha
    assert ov.q0 > 0.2 * alpha
    assert abs(ov.V0 * PAPER.lam - 1.0) < np.sqrt(alpha)
    assert np.all(np.abs(ov.m) <= np.sqrt(ov.q0))  # |m| is bounded by the norm of Q
    assert fp.observables.e_t < 0.02 * alpha + 1e-12  # e_t <= alpha E[loss] + lambda q0 / 2 = O(alpha)


@settings(max_examples=3, deadline=None)
@given(alpha=st.floats(0.3, 3.0))
def test_omega_1_has_no_semantic_fixed_point(alpha: float) -> None:
    """omega = 1 (the target is A, whatever h*): the semantic solve ends agnostic, or fails -- never
    a converged point with theta != 0."""
    fp = solve(ModelParams(omega=1.0), alpha, "semantic", config=SolverConfig(quadrature="sobol10"))
    assert not (fp.status.converged and fp.branch in ("semantic", "mixed")), fp.overlaps
    if fp.status.converged:
        assert abs(fp.overlaps.th0) < 1e-9


@settings(max_examples=5, deadline=None)
@given(alpha=st.floats(0.3, 3.0), q0=st.floats(0.05, 1.0), V0=st.floats(5.0, 120.0), r=st.floats(-0.95, 0.95))
def test_omega_1_kills_thhat_on_the_full_rule(alpha, q0, V0, r) -> None:
    """One SE step at omega = 1 on the full (unreduced) tensor rule maps any semantic state to th0 = 0."""
    p = ModelParams(omega=1.0)
    ov = Overlaps(q0, V0, [0.0, 0.0], r * np.sqrt(q0 * p.rho0))
    hat, _ = hat_step(p, alpha, ov, make_rule(2, "gh6"))
    assert np.all(np.abs(hat.thhat) < 1e-14)  # hence th0 = rho0 sum_l sigma_l^2 thhat_l / Lam = 0


@pytest.mark.parametrize("L, spec", [(2, "sobol9:2"), (3, "sobol7"), (4, "sobol5")])
def test_a_union_of_images_reduced_under_its_group_from_its_base_is_the_union_reduced(L, spec, monkeypatch) -> None:
    """A symmetrised rule reduced under its whole group (the agnostic point's: 96 elements at L = 4, where the union's
    reduction took 2-6 s a step) is reduced from its base nodes to the union's reduction, nodes and weights bit for
    bit; a subgroup, and a union whose base has two nodes on one orbit, take the union's way."""
    from attnphase.numerics.quadrature import rules
    from attnphase.numerics.quadrature.symmetry import model_symmetry_group

    group = model_symmetry_group(ModelParams(L=L, omega=0.3))
    rule = rules.symmetrize_rule(make_rule(L, spec), L, group)
    assert rule.size == len(group) * make_rule(L, spec).size and rules._union_base(rule, L, group) is not None
    fast, exact = reduce_rule(rule, L, group)
    monkeypatch.setattr(rules, "_union_base", lambda *a: None)
    slow, _ = reduce_rule(rule, L, group)
    monkeypatch.undo()
    assert exact and fast.size == make_rule(L, spec).size and fast.name == slow.name
    assert np.array_equal(fast.nodes, slow.nodes) and np.array_equal(fast.weights, slow.weights)
    assert rules._union_base(rule, L, group[: len(group) // 2]) is None
    base = make_rule(L, spec)
    twin = replace(base, nodes=np.vstack([base.nodes[:-1], -base.nodes[:1]]))  # the first node's mirror image
    assert rules._union_base(rules.symmetrize_rule(twin, L, group), L, group) is None


# --- known defects (strict xfails: they turn into failures once fixed, so the marker gets removed) ---


@pytest.mark.xfail(strict=True, reason=(
    "reduce_rule merges (xi, eta) with (-xi, -eta) assuming g(-xi) = -g(xi), but global_prox breaks "
    "exact mirror ties (nodes with xi_1 = xi_2 at omega = 1) by start order: the reduced rule "
    "then gives thhat = 4.8e-3 where the full rule gives 1e-19.  The solver therefore never reduces "
    "axis-aligned rules (QuadratureRule.axis_aligned); reduce_rule itself stays tie-unsafe on them"))
def test_reduced_rule_at_omega_1_gives_the_full_rule_hats() -> None:
    p = ModelParams(omega=1.0)
    ov = Overlaps(0.4112338911958485, 101.87412278243106, [0.0, 0.0], 0.2419520981486577)
    rule = make_rule(2, "gh6")
    group = symmetry_group(p, ov)
    reduced, exact = reduce_rule(rule, 2, group)
    assert exact
    full, _ = hat_step(p, 2.0, ov, rule, group=group)
    red, _ = hat_step(p, 2.0, ov, reduced, group=group)
    np.testing.assert_allclose(red.thhat, full.thhat, atol=1e-12)
    np.testing.assert_allclose(red.Vhat, full.Vhat, rtol=1e-9)


@pytest.mark.xfail(strict=True, reason=(
    "tensor Gauss-Hermite puts finite weight on the set xi_1 = xi_2, eta_1 = -eta_2, where h*_1 + h*_2 "
    "= 2 (theta / sqrt q) xi exactly and the choice between the mirror minima follows sign(theta): "
    "the SE map jumps at theta = 0 (th0 = 1e-7 -> 2.6e-4 at alpha = 0.01), so gh rules find a "
    "spurious semantic branch at every small alpha"))
def test_se_map_is_continuous_at_theta_0_on_gauss_hermite() -> None:
    _assert_continuous_at_theta_0(make_rule(2, "gh6"))


def test_se_map_is_continuous_at_theta_0_on_symmetrised_sobol() -> None:
    """The same check on a symmetrised scrambled Sobol rule (no nodes on the tie set) passes."""
    from attnphase.numerics.quadrature.rules import symmetrize_rule
    from attnphase.numerics.quadrature.symmetry import model_symmetry_group

    rule = symmetrize_rule(make_rule(2, "sobol10"), 2, model_symmetry_group(PAPER))
    _assert_continuous_at_theta_0(rule)


def _assert_continuous_at_theta_0(rule) -> None:
    alpha, q0, V0 = 0.01, 0.003015, 105.0
    for th0 in (1e-7, 1e-5):
        hat, _ = hat_step(PAPER, alpha, Overlaps(q0, V0, [0.0, 0.0], th0), rule)
        # the map is smooth and odd in th0 near 0: |F(th0)| = O(th0) (the spurious jump is 2.6e-4)
        assert abs(update(PAPER, hat).th0) < 1e3 * th0


def test_unconverged_status_reports_the_full_search_residual() -> None:
    alpha = 0.018803015465431967
    """The reported residual is the full-search residual at the reported overlaps, converged or not.

    (The best residual of any evaluation, polish-only ones included, would be 3.9e-13 with
    converged = False where the full-search residual is 3.2e-2.)
    """
    fp = solve(PAPER, alpha, "positional", config=SolverConfig(quadrature="gh8"))
    hat, _ = hat_step(PAPER, alpha, fp.overlaps, make_rule(2, "gh8"))
    x, fx = fp.overlaps.to_vector(), update(PAPER, hat).to_vector()
    full = float(np.max(np.abs(fx - x) / np.maximum(1.0, np.abs(x))))
    assert fp.status.residual == pytest.approx(full, rel=1e-6, abs=1e-13)
    assert fp.status.converged == (full <= 1e-10)


def test_converged_point_with_A2_is_fixed_under_a_fresh_step() -> None:
    """With A2 a map that took previous minima as extra starts of the full search would depend on the
    warm-start history, and a 'converged' point would have a fresh one-step residual of 2e-6."""
    p = ModelParams(sigma=(0.625, 0.5), A=A2, P=((1.0, 0.0), (0.0, 1.0)), omega=0.3)
    fp = solve(p, 1.0, "positional", init=Overlaps(0.2, 40.0, [0.3, -0.2], 0.0), config=SolverConfig(quadrature="gh6"))
    assert fp.status.converged
    hat, _ = hat_step(p, 1.0, fp.overlaps, make_rule(2, "gh6"))
    x, fx = fp.overlaps.to_vector(), update(p, hat).to_vector()
    assert np.max(np.abs(fx - x) / np.maximum(1.0, np.abs(x))) < 1e-9
