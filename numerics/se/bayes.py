"""The Bayes-optimal state evolution (docs/model.md section 9; docs/bayes-optimal.md).

On the Nishimori line the state is one number, q0 = Q . Q* / d = |Q|^2 / d of the posterior mean Q (the
ERM's units, docs/model.md section 1).  Per token, with rho_l = sigma_l^2 rho0,

    q_l = sigma_l^2 q0,   V_l = sigma_l^2 (rho0 - q0),   Ve_l = V_l + Delta rho_l
    w_l = sqrt(q_l) xi_l,   Y_l = w_l + sqrt(Ve_l) eta_l                   (xi, eta ~ N(0, I_L): the rule's nodes)
    Qhat = alpha K(q0),     K(q0) = sum_l sigma_l^2 E[g_out_l(Y; w, Ve)^2]
    q0'  = rho0^2 Qhat / (1 + rho0 Qhat)                                   (theory/priors/gaussian.py)

with g_out of theory/channels/bayes_optimal.py.  Alpha enters only through Qhat = alpha K, so every q0 in
(0, rho0) is a fixed point at exactly one alpha,

    alpha*(q0) = Qhat(q0) / K(q0) = q0 / (rho0 (rho0 - q0) K(q0)),

and the branches are the monotone pieces of alpha*(q0): a fixed point is stable where alpha* increases.
q0 = 0 is a fixed point at every alpha (g_out = 0 there), and, noiseless, so is q0 = rho0 (perfect recovery).
Solving at an alpha is finding the roots of alpha*(q0) = alpha on a grid of q0 refined by Brent's method;
the uninformative branch is where the iteration from q0 = 0+ ends (the first root), the informative one
where the iteration from q0 = rho0- ends (the last root, or rho0).

The free entropy (to be maximised over the stable fixed points; its crossing is alpha_IT):

    Phi(q0) = psi(Qhat) - q0 Qhat / 2 + alpha Psi_out(q0),    Psi_out = E[log Z_out(Y; w, Ve)]

and the Bayes-optimal test error, in the ERM's units (docs/model.md section 4),

    eps_g = 1/2 sum_{l,k} sigma_k^2 E_w[ Var(T(h)[l, k] | w) ],   h ~ N(w, Ve)
          = (1 - omega)^2 1/2 sum_{l,k} sigma_k^2 E_w[ Var(softmax_row(h h^T)[l, k] | w) ]

(the predictor E[T | data] of a fresh sample; at q0 = 0 it is the linear baseline's eps_lin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

from attnphase.numerics.quadrature.rules import QuadratureRule, gauss_hermite_1d, make_rule
from attnphase.theory.channels.bayes_optimal import BayesOptimalChannel
from attnphase.theory.kernels import row_softmax
from attnphase.theory.priors.gaussian import GaussianPrior

#: The default rule: 4 independent scramblings of 2^10 Sobol points (the ERM default; their spread is the bar).
DEFAULT_RULE = "sobol10:4"

#: Gauss-Hermite order per dimension of the inner average over h ~ N(w, Ve) in eps_g, by L.
EPS_G_INNER_ORDER = {1: 40, 2: 16, 3: 8, 4: 6}

#: The grid of x = q0 / rho0 on which alpha*(q0) is scanned: logistic in t (dense at both ends).
GRID_T = np.linspace(-11.0, 13.0, 193)


@dataclass(frozen=True)
class BayesModel:
    """What the Bayes-optimal state evolution depends on: L, sigma_l^2, rho0 and the noise Delta.

    (omega enters eps_g alone, as (1 - omega)^2; A, P, lambda not at all: docs/bayes-optimal.md.)"""

    sigma2: tuple[float, ...]
    rho0: float = 1.0
    noise: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", tuple(float(s) for s in self.sigma2))
        if not self.sigma2 or min(self.sigma2) <= 0:
            raise ValueError(f"sigma2 must be positive per-token variances, got {self.sigma2}")

    @classmethod
    def of(cls, params: Any, noise: float = 0.0) -> "BayesModel":
        """The model of a :class:`~attnphase.theory.params.ModelParams` (its sigma^2 and rho0)."""
        return cls(tuple(np.asarray(params.sigma2, dtype=float)), float(params.rho0), noise)

    @property
    def L(self) -> int:
        return len(self.sigma2)

    @property
    def channel(self) -> BayesOptimalChannel:
        return BayesOptimalChannel(self.noise)

    @property
    def prior(self) -> GaussianPrior:
        return GaussianPrior(self.rho0)

    def s2(self) -> np.ndarray:
        return np.asarray(self.sigma2)

    def variances(self, q0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q_l, V_l, Ve_l) at q0 (module doc)."""
        s2 = self.s2()
        q = s2 * q0
        V = s2 * (self.rho0 - q0)
        return q, V, self.channel.effective_variance(V, s2 * self.rho0)


@dataclass(frozen=True)
class BayesHats:
    """Per-sample channel averages at q0 (multiply the hats by alpha), per token (L,).

    Attributes:
        qhat: E[g_l^2].
        mhat: E[g_l eta_l] / sqrt(Ve_l) = E[d g_l / d Y_l] (Stein): the teacher-overlap hat.
        Vhat: -E[d g_l / d w_l].
        psi_out: E[log Z_out].
    On the Nishimori line the three hats agree in expectation (a check of the channel and the rule).
    """

    qhat: np.ndarray
    mhat: np.ndarray
    Vhat: np.ndarray
    psi_out: float


def _nodes(rule: QuadratureRule, L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if rule.dim != 2 * L:
        raise ValueError(f"the rule has {rule.dim} dimensions, the state evolution needs 2L = {2 * L}")
    return rule.nodes[:, :L], rule.nodes[:, L:], rule.weights


def channel_hats(model: BayesModel, rule: QuadratureRule, q0: float) -> BayesHats:
    """The averages of :class:`BayesHats` on ``rule`` at q0 in [0, rho0)."""
    xi, eta, wt = _nodes(rule, model.L)
    q, _, Ve = model.variances(q0)
    w = np.sqrt(q) * xi
    Y = w + np.sqrt(Ve) * eta
    ch = model.channel
    g = ch.g_out(Y, w, Ve)
    dg = np.diagonal(ch.dg_out(Y, w, Ve), axis1=-2, axis2=-1)
    return BayesHats(qhat=wt @ (g * g), mhat=(wt @ (g * eta)) / np.sqrt(Ve), Vhat=-(wt @ dg),
                     psi_out=float(wt @ ch.log_z_out(Y, w, Ve)))


def hat_sum(model: BayesModel, rule: QuadratureRule, q0: float) -> float:
    """K(q0) = sum_l sigma_l^2 E[g_out_l^2] (module doc), so that Qhat = alpha K."""
    return float(model.s2() @ channel_hats(model, rule, q0).qhat)


def se_step(model: BayesModel, rule: QuadratureRule, alpha: float, q0: float) -> float:
    """One step of the map: q0' = rho0^2 Qhat / (1 + rho0 Qhat), Qhat = alpha K(q0)."""
    return model.prior.overlap(alpha * hat_sum(model, rule, q0))


def alpha_of_overlap(model: BayesModel, rule: QuadratureRule, q0: float) -> float:
    """alpha*(q0) = q0 / (rho0 (rho0 - q0) K(q0)): the alpha at which q0 in (0, rho0) is a fixed point."""
    return model.prior.hat_of_overlap(q0) / hat_sum(model, rule, q0)


def free_entropy(model: BayesModel, rule: QuadratureRule, alpha: float, q0: float) -> float:
    """Phi = psi(Qhat) - q0 Qhat / 2 + alpha Psi_out(q0) with Qhat = alpha K(q0) (module doc); q0 < rho0."""
    h = channel_hats(model, rule, q0)
    Qhat = alpha * float(model.s2() @ h.qhat)
    return model.prior.free_entropy_term(Qhat) - 0.5 * q0 * Qhat + alpha * h.psi_out


def bayes_eps_g(model: BayesModel, rule: QuadratureRule, omega: float, q0: float, chunk: int = 512) -> float:
    """The Bayes-optimal eps_g at q0 (module doc): the outer average over w on the rule's xi nodes, the
    inner variance over h ~ N(w, Ve) on a tensor Gauss-Hermite grid (:data:`EPS_G_INNER_ORDER`); 0 at
    perfect recovery (q0 = rho0, noiseless)."""
    L = model.L
    q, _, Ve = model.variances(q0)
    if not np.all(Ve > 0):
        return 0.0
    xi, _, wt = _nodes(rule, L)
    x, wx = gauss_hermite_1d(EPS_G_INNER_ORDER.get(L, 6))
    grid = np.stack([g.reshape(-1) for g in np.meshgrid(*([x] * L), indexing="ij")], axis=1)
    gw = np.prod(np.stack([g.reshape(-1) for g in np.meshgrid(*([wx] * L), indexing="ij")], axis=1), axis=1)
    s2 = model.s2()
    total = 0.0
    for start in range(0, xi.shape[0], chunk):
        w = np.sqrt(q) * xi[start:start + chunk]
        h = w[:, None, :] + np.sqrt(Ve) * grid[None, :, :]
        S = row_softmax(h[..., :, None] * h[..., None, :])
        mean = np.einsum("j,njlk->nlk", gw, S)
        var = np.einsum("j,njlk->nlk", gw, S * S) - mean * mean
        total += float(wt[start:start + chunk] @ np.einsum("nlk,k->n", var, s2))
    return 0.5 * (1.0 - omega) ** 2 * total


# --------------------------------------------------------------------------------------------- branches


@dataclass(frozen=True)
class AlphaCurve:
    """alpha*(q0) on the grid x = q0 / rho0 = expit(GRID_T) of one rule."""

    x: np.ndarray
    alpha: np.ndarray


def alpha_curve(model: BayesModel, rule: QuadratureRule, t: np.ndarray = GRID_T) -> AlphaCurve:
    x = 1.0 / (1.0 + np.exp(-t))
    a = np.array([alpha_of_overlap(model, rule, model.rho0 * xx) for xx in x])
    return AlphaCurve(x, a)


def _root(model: BayesModel, rule: QuadratureRule, alpha: float, x0: float, x1: float) -> float:
    f = lambda x: alpha_of_overlap(model, rule, model.rho0 * x) - alpha  # noqa: E731
    return brentq(f, x0, x1, xtol=1e-14, rtol=1e-13)


@dataclass(frozen=True)
class BayesFixedPoint:
    """One Bayes-optimal fixed point.

    Attributes:
        alpha: the sample ratio.
        branch: ``"uninformative"`` (where the iteration from q0 = 0+ ends) or ``"informative"`` (from rho0-).
        q0: overlap Q . Q* / d = |Q|^2 / d of the posterior mean (also m0 = q0: Nishimori).
        stable: whether the map's slope is < 1 there.
        perfect: q0 = rho0 exactly (noiseless, alpha L > 1).
    """

    alpha: float
    branch: str
    q0: float
    stable: bool
    perfect: bool = False


def fixed_points(model: BayesModel, rule: QuadratureRule, alpha: float, curve: AlphaCurve | None = None
                 ) -> list[tuple[float, bool]]:
    """Every fixed point x = q0 / rho0 at alpha with its stability, ascending: 0 (stable iff alpha < alpha_WR),
    the roots of alpha*(x) = alpha (stable where alpha* increases), and, noiseless, 1 (stable iff alpha
    exceeds alpha*(1-) = 1 / L: the last grid value decides)."""
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    c = curve or alpha_curve(model, rule)
    out = [(0.0, alpha < model.channel.weak_recovery_alpha(model.L))]
    d = c.alpha - alpha
    for i in np.nonzero(np.sign(d[:-1]) != np.sign(d[1:]))[0]:
        out.append((_root(model, rule, alpha, c.x[i], c.x[i + 1]), bool(d[i] < 0)))
    if model.noise == 0.0:
        out.append((1.0, bool(alpha > c.alpha[-1])))
    return out


def solve_bayes(model: BayesModel, alpha: float, branch: str = "informative", rule: QuadratureRule | str = DEFAULT_RULE,
                curve: AlphaCurve | None = None) -> BayesFixedPoint:
    """The fixed point of ``branch`` at alpha (module doc): the lowest stable one for ``uninformative``, the
    highest for ``informative``."""
    if branch not in ("informative", "uninformative"):
        raise ValueError(f"branch must be informative or uninformative, got {branch!r}")
    rule = make_rule(model.L, rule) if isinstance(rule, str) else rule
    pts = [p for p in fixed_points(model, rule, alpha, curve) if p[1]]
    x, stable = (pts[0] if branch == "uninformative" else pts[-1]) if pts else (math.nan, False)
    return BayesFixedPoint(float(alpha), branch, model.rho0 * x, stable, perfect=(x == 1.0))
