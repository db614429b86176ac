"""The Bayes-optimal checks (``attnphase check --estimator bayes-optimal``): the Nishimori identities at the
Bayes-optimal fixed point, each to its error bar (docs/bayes-optimal.md, "The Nishimori identities").

At the informative fixed point q0 (numerics/se/bayes.py), with per token q_l = sigma_l^2 q0,
Ve_l = sigma_l^2 (rho0 - q0) + Delta sigma_l^2 rho0, w_l = sqrt(q_l) xi_l, Y_l = w_l + sqrt(Ve_l) eta_l
(xi, eta ~ N(0, I_L)) and g = g_out(Y; w, Ve), the three estimators of the channel's hat

    qhat = E[sum_l sigma_l^2 g_l^2],  mhat = E[sum_l sigma_l^2 g_l eta_l / sqrt(Ve_l)],  Vhat = -E[sum_l sigma_l^2 dg_ll]

agree (check 1, plain Monte Carlo; also the solver's reduced K(q0) and the rotation-invariant rule's hats), and the
Gaussian prior's update from them, V0' = 1 / (1 / rho0 + alpha Vhat), q0' = (alpha qhat + rho0 (alpha mhat)^2) V0'^2,
m0' = rho0 alpha mhat V0', has q0' = m0', V0' = rho0 - q0' and q0' = q0 (check 2, by the delta method).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from attnphase.numerics.se.bayes import BayesModel, channel_hats, hat_sum, invariant_rule, sign_rule, solve_bayes
from attnphase.theory.channels.bayes_optimal import BayesOptimalChannel
from attnphase.theory.params import ModelParams

from .common import U, Z, CheckResult, CheckSizes, _worst, run_timed

#: Orders of the rotation-invariant rule whose difference is the reduced hats' error bar.
REDUCED_ORDERS = (48, 32)


def bayes_check_alpha(L: int, noise: float = 0.0) -> float:
    """The default alpha of the Bayes-optimal checks: halfway between alpha_WR and 1 / L, where the informative
    fixed point is strictly inside (0, rho0) (below alpha_WR it is 0, above 1 / L perfect recovery)."""
    return 0.5 * (BayesOptimalChannel(noise).weak_recovery_alpha(L) + 1.0 / L)


def _samples(model, q0: float, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Per sample (n,): the three summed hat estimators of the module doc at q0."""
    q, _, Ve = model.variances(q0)
    s2 = model.s2()
    xi, eta = rng.standard_normal((n, model.L)), rng.standard_normal((n, model.L))
    w = np.sqrt(q) * xi
    Y = w + np.sqrt(Ve) * eta
    ch = model.channel
    g = ch.g_out(Y, w, Ve)
    dg = np.diagonal(ch.dg_out(Y, w, Ve), axis1=-2, axis2=-1)
    return {"qhat": (g * g) @ s2, "mhat": (g * eta / np.sqrt(Ve)) @ s2, "Vhat": -(dg @ s2)}


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))


def _at_fixed_point(params: ModelParams, alpha: float) -> tuple[object, object, str]:
    """(model, fixed point, "" or why the identities cannot be checked there)."""
    model = BayesModel.of(params)
    fp = solve_bayes(model, alpha, "informative")
    if fp.perfect:
        return model, fp, (f"perfect recovery at alpha = {alpha:g} (q0 = rho0: the hats diverge); take --alpha between "
                           f"alpha_WR = {model.channel.weak_recovery_alpha(model.L):.4g} and 1/L = {1 / model.L:.4g}")
    if fp.q0 == 0.0:
        return model, fp, (f"q0 = 0 at alpha = {alpha:g} (below alpha_WR = "
                           f"{model.channel.weak_recovery_alpha(model.L):.4g}): every hat is 0, nothing to compare")
    return model, fp, ""


def check_nishimori_hats(params: ModelParams, alpha: float, sizes: CheckSizes, seed: int) -> CheckResult:
    """Check 1: qhat = mhat = Vhat at the Bayes-optimal fixed point (module doc)."""
    r = CheckResult(1, "nishimori-hats", "Nishimori: qhat = mhat = Vhat",
                    "three estimators of the channel's hat at the BO fixed point (Monte Carlo; reduced rule); "
                    "the solver's K(q0)")
    model, fp, r.reason = _at_fixed_point(params, alpha)
    if r.reason:  # a skip: the status a CheckResult starts with
        return r
    n = sizes.bayes_samples
    s = _samples(model, fp.q0, n, np.random.default_rng([seed, 101]))
    (qh, qse), (mh, mse), (vh, vse) = (_mean_se(s[k]) for k in ("qhat", "mhat", "Vhat"))
    d_qm, se_qm = _mean_se(s["qhat"] - s["mhat"])
    d_qv, se_qv = _mean_se(s["qhat"] - s["Vhat"])
    K = hat_sum(model, sign_rule(model.L), fp.q0)  # the reduced (sign-paired) integral the solver iterates
    fine, coarse = (channel_hats(model, invariant_rule(model.L, o), fp.q0) for o in REDUCED_ORDERS)
    bar = max(abs(fine.qhat - coarse.qhat), abs(fine.mhat - coarse.mhat), abs(fine.Vhat - coarse.Vhat))
    floor = 1e3 * U * max(1.0, abs(fine.qhat))
    comps = {
        "qhat - mhat (MC)": (abs(d_qm), Z * se_qm),
        "qhat - Vhat (MC)": (abs(d_qv), Z * se_qv),
        "K(q0) - qhat (MC)": (abs(K - qh), Z * qse + bar + floor),
        "qhat - mhat (rule)": (abs(fine.qhat - fine.mhat), bar + floor),
        "qhat - Vhat (rule)": (abs(fine.qhat - fine.Vhat), bar + floor),
    }
    r.tolerance_from = (f"{Z:g} standard errors of the paired Monte Carlo differences ({n} samples); the reduced rule's "
                        f"bar (order {REDUCED_ORDERS[1]} -> {REDUCED_ORDERS[0]}) + round-off")
    r.details = {"alpha": alpha, "q0": fp.q0, "samples": n,
                 "Monte Carlo": {"qhat": qh, "mhat": mh, "Vhat": vh, "se": max(qse, mse, vse)},
                 "reduced rule": {"qhat": fine.qhat, "mhat": fine.mhat, "Vhat": fine.Vhat, "bar": bar},
                 "solver K(q0)": K}
    return _worst(r, comps, "per-sample hat, summed over tokens with sigma_l^2")


def _prior(rho0: float, A: float, B: float, C: float) -> tuple[float, float, float]:
    """(q0', V0', m0') of the Gaussian prior from the summed hats A = alpha qhat, B = alpha mhat, C = alpha Vhat."""
    V = 1.0 / (1.0 / rho0 + C)
    return (A + rho0 * B * B) * V * V, V, rho0 * B * V


def check_nishimori_overlaps(params: ModelParams, alpha: float, sizes: CheckSizes, seed: int) -> CheckResult:
    """Check 2: q0' = m0', V0' = rho0 - q0' and q0' = q0 from the prior update with the three Monte Carlo hats."""
    r = CheckResult(2, "nishimori-overlaps", "Nishimori: q = m, V = rho0 - q",
                    "the Gaussian prior's update from the three hats: q0 = m0, V0 = rho0 - q0, and the fixed point")
    model, fp, r.reason = _at_fixed_point(params, alpha)
    if r.reason:  # a skip: the status a CheckResult starts with
        return r
    n, rho0 = sizes.bayes_samples, model.rho0
    s = _samples(model, fp.q0, n, np.random.default_rng([seed, 102]))
    X = alpha * np.stack([s["qhat"], s["mhat"], s["Vhat"]])  # (3, n)
    A, B, C = X.mean(axis=1)
    cov = np.cov(X) / n
    q, V, m = _prior(rho0, A, B, C)
    # gradients of q0', m0', V0' in (A, B, C): the delta method
    dq = np.array([V * V, 2 * rho0 * B * V * V, -2 * (A + rho0 * B * B) * V ** 3])
    dm = np.array([0.0, rho0 * V, -rho0 * B * V * V])
    dV = np.array([0.0, 0.0, -V * V])
    se = lambda g: math.sqrt(max(float(g @ cov @ g), 0.0))  # noqa: E731
    floor = 1e3 * U * rho0
    comps = {
        "q0 - m0": (abs(q - m), Z * se(dq - dm) + floor),
        "V0 - (rho0 - q0)": (abs(V - (rho0 - q)), Z * se(dV + dq) + floor),
        "q0' - q0 (fixed point)": (abs(q - fp.q0), Z * se(dq) + floor),
    }
    r.tolerance_from = f"{Z:g} standard errors (delta method over the Monte Carlo hats, {n} samples) + round-off"
    r.details = {"alpha": alpha, "q0 (solver)": fp.q0, "prior update": {"q0": q, "m0": m, "V0": V}, "samples": n}
    return _worst(r, comps, "overlap (q0 = |Q|^2 / d)")


#: The Bayes-optimal checks in order: (number, key, function).
BAYES_CHECKS: tuple[tuple[int, str, Callable[[ModelParams, float, CheckSizes, int], CheckResult]], ...] = (
    (1, "nishimori-hats", check_nishimori_hats),
    (2, "nishimori-overlaps", check_nishimori_overlaps),
)


def run_bayes_checks(params: ModelParams, alpha: float, sizes: CheckSizes, seed: int = 0,
                     progress: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Every Bayes-optimal check at alpha (one result each; timed)."""
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha}")
    if params.r != 1 or params.r_star != 1 or params.C is not None or not params.omega < 1.0:
        raise ValueError("the Bayes-optimal checks need rank 1, independent tokens and omega < 1")
    return run_timed([partial(fn, params, alpha, sizes, seed) for _, _, fn in BAYES_CHECKS], progress)
