"""The Bayes-optimal fixed points over a grid of alpha, both branches, each with its error bars
(docs/bayes-optimal.md; ``attnphase solve`` and ``sweep --estimator bayes-optimal``).

A point is the fixed point q0 of one branch of :mod:`attnphase.numerics.se.bayes` at one alpha on the rule of
order n (:data:`~attnphase.numerics.se.bayes.DEFAULT_ORDER`), with the residual of one map step, the free
entropy Phi_n(q0) (null at perfect recovery) and its error bars, the change from the rule of order n - ORDER_STEP:

    err_q   = |q0_n - q0_(n - ORDER_STEP)|
    err_eps = |eps_g(q0_n) - eps_g(q0_(n - ORDER_STEP))|   (the second on eps_g's grid of 4 nodes fewer per dimension)
    err_Phi = |Phi_n(q0_n) - Phi_(n - ORDER_STEP)(q0_(n - ORDER_STEP))|
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from attnphase.numerics.se.bayes import (DEFAULT_ORDER, EPS_G_CHECK_RTOL, EPS_G_ORDER, ORDER_STEP, AlphaCurve,
                                         BayesModel, SignRule, alpha_curve, bayes_eps_g, bayes_eps_g_sobol,
                                         free_entropy, se_step, sign_rule, solve_bayes)

#: The branches of the Bayes-optimal state evolution, in the order a curve reports them.
BAYES_BRANCHES = ("informative", "uninformative")


@dataclass(frozen=True)
class BayesRules:
    """The two rules of a point's error bar (orders n and n - ORDER_STEP) and their curves alpha*(q0)."""

    fine: SignRule
    coarse: SignRule
    fine_curve: AlphaCurve
    coarse_curve: AlphaCurve


def bayes_rules(model: BayesModel, order: int = DEFAULT_ORDER) -> BayesRules:
    """The rules of orders ``order`` and ``order - ORDER_STEP`` with their curves alpha*(q0)."""
    fine, coarse = sign_rule(model.L, order), sign_rule(model.L, order - ORDER_STEP)
    return BayesRules(fine, coarse, alpha_curve(model, fine), alpha_curve(model, coarse))


@dataclass(frozen=True)
class BayesPoint:
    """One Bayes-optimal fixed point with its error bars (module doc): q0 = |Q|^2 / d of the posterior mean, the
    test error eps_g (ERM's units), the free entropy Phi(q0) (None at perfect recovery), the ``residual`` of one
    more map step, ``stable``, ``perfect`` as in :class:`~attnphase.numerics.se.bayes.BayesFixedPoint`, and
    ``coincides``: the other branch's point is the same."""

    alpha: float
    omega: float
    branch: str
    q0: float
    err_q0: float
    eps_g: float
    err_eps_g: float
    free_entropy: float | None
    residual: float
    stable: bool
    perfect: bool
    coincides: bool
    err_free_entropy: float | None = None


def bayes_point(model: BayesModel, omega: float, alpha: float, branch: str, rules: BayesRules) -> BayesPoint:
    """The fixed point of ``branch`` at alpha with its error bars (module doc)."""
    if branch not in BAYES_BRANCHES:
        raise ValueError(f"branch must be one of {BAYES_BRANCHES}, got {branch!r}")
    fp = solve_bayes(model, alpha, branch, rules.fine, rules.fine_curve)
    coarse = solve_bayes(model, alpha, branch, rules.coarse, rules.coarse_curve)
    other = "uninformative" if branch == "informative" else "informative"
    twin = solve_bayes(model, alpha, other, rules.fine, rules.fine_curve)
    eps, err_eps = point_eps_g(model, omega, fp.q0, coarse.q0)
    residual = 0.0 if fp.perfect else abs(se_step(model, rules.fine, alpha, fp.q0) - fp.q0)
    phi = None if fp.perfect else free_entropy(model, rules.fine, alpha, fp.q0)
    err_phi = (None if phi is None or coarse.perfect else 0.0 if fp.q0 == 0.0 == coarse.q0  # Phi(0): closed form
               else abs(phi - free_entropy(model, rules.coarse, alpha, coarse.q0)))
    return BayesPoint(float(alpha), float(omega), branch, fp.q0, abs(fp.q0 - coarse.q0), eps, err_eps, phi,
                      residual, fp.stable, fp.perfect, twin.q0 == fp.q0, err_phi)


def point_eps_g(model: BayesModel, omega: float, q0: float, q0_coarse: float) -> tuple[float, float]:
    """eps_g at q0 and its error bar: on the Gauss-Hermite grids, the change from EPS_G_ORDER - 4 nodes per dimension
    at the coarse rule's q0; where that change exceeds EPS_G_CHECK_RTOL, on the Sobol rule (:func:`bayes_eps_g_sobol`)
    instead when its bar -- hypot(the scramblings' standard error, the change at the coarse q0 on the same nodes) --
    is the smaller or the grid's value lies beyond 3 of the two bars combined (rho0 = 100: 0.03467 +- 8.7e-4 on
    the grid where eps_g = eps_lin = 0.036435)."""
    eps = bayes_eps_g(model, omega, q0)
    err = abs(eps - bayes_eps_g(model, omega, q0_coarse, order=EPS_G_ORDER.get(model.L, 6) - 4))
    if err <= EPS_G_CHECK_RTOL * eps:
        return eps, err
    est = bayes_eps_g_sobol(model, omega, [q0, q0_coarse])
    blocks = est.shape[1]
    value = float(est[0].mean())
    err_s = math.hypot(float(est[0].std(ddof=1)) / math.sqrt(blocks), abs(value - float(est[1].mean())))
    if err_s < err or abs(eps - value) > 3.0 * math.hypot(err, err_s):
        return value, err_s
    return eps, err


def bayes_curve(model: BayesModel, omega: float, alphas: Sequence[float],
                branches: Sequence[str] = BAYES_BRANCHES, order: int = DEFAULT_ORDER) -> list[BayesPoint]:
    """:func:`bayes_point` at every alpha of ``alphas`` (ascending) for every branch of ``branches``: the
    rows ordered by branch, then alpha."""
    if not 0.0 <= omega < 1.0:
        raise ValueError(f"omega must lie in [0, 1) for the Bayes-optimal estimator, got {omega}")
    if any(not (math.isfinite(a) and a > 0) for a in alphas):
        raise ValueError(f"every alpha must be a finite number > 0, got {list(alphas)}")
    rules = bayes_rules(model, order)
    return [bayes_point(model, omega, float(a), br, rules) for br in branches for a in sorted(alphas)]


def estimator_point(model: BayesModel, omega: float, alpha: float, rules: BayesRules) -> BayesPoint:
    """The fixed point the Bayes-optimal estimator attains at alpha: the branch of the larger free entropy Phi
    (the informative one where the two coincide or where it has perfect recovery, Phi = +inf)."""
    inf = bayes_point(model, omega, alpha, "informative", rules)
    if inf.coincides or inf.perfect:
        return inf
    uni = bayes_point(model, omega, alpha, "uninformative", rules)
    if uni.free_entropy is not None and inf.free_entropy is not None and uni.free_entropy > inf.free_entropy:
        return uni
    return inf


#: The columns of a Bayes-optimal sweep's table, in the ERM record's units (q = theta = q0, m = 0, V = rho0 - q0).
BAYES_SWEEP_COLUMNS = ("alpha", "omega", "estimator", "branch", "q", "m", "V", "theta", "eps_g", "eps_lin",
                       "free_entropy", "stable", "perfect_recovery", "coincides", "residual", "err_q", "err_m", "err_V",
                       "err_theta", "err_eps_g", "err_free_entropy", "reason")


def sweep_row(p: BayesPoint, rho0: float, eps_lin: float) -> dict:
    """The row of :data:`BAYES_SWEEP_COLUMNS` of one point (``reason`` empty: every Bayes-optimal branch exists at
    every alpha; ``coincides`` 1 where both branches are the same point)."""
    return {"alpha": p.alpha, "omega": p.omega, "estimator": "bayes-optimal", "branch": p.branch, "q": p.q0, "m": 0.0,
            "V": rho0 - p.q0, "theta": p.q0, "eps_g": p.eps_g, "eps_lin": eps_lin,
            "free_entropy": math.nan if p.free_entropy is None else p.free_entropy, "stable": int(p.stable),
            "perfect_recovery": int(p.perfect), "coincides": int(p.coincides), "residual": p.residual, "err_q": p.err_q0, "err_m": 0.0,
            "err_V": p.err_q0, "err_theta": p.err_q0, "err_eps_g": p.err_eps_g,
            "err_free_entropy": math.nan if p.err_free_entropy is None else p.err_free_entropy, "reason": ""}


__all__ = ["BAYES_BRANCHES", "BAYES_SWEEP_COLUMNS", "BayesPoint", "BayesRules", "bayes_curve", "bayes_point",
           "bayes_rules", "estimator_point", "sweep_row"]
