"""The Bayes-optimal state evolution (docs/model.md section 9; derivations and measurements: docs/bayes-optimal.md).

On the Nishimori line the state is q0 = Q . Q* / d = |Q|^2 / d of the posterior mean.  Per token, with
rho_l = sigma_l^2 rho0,

    q_l = sigma_l^2 q0,   V_l = sigma_l^2 (rho0 - q0),   Ve_l = V_l + Delta rho_l
    Qhat = alpha K(q0),   K(q0) = sum_l sigma_l^2 E[g_out_l(Y; w, Ve)^2],   q0' = rho0^2 Qhat / (1 + rho0 Qhat)

so every q0 in (0, rho0) is a fixed point at exactly one alpha*(q0) = q0 / (rho0 (rho0 - q0) K(q0)); the branches
are the monotone pieces of alpha*(q0) (stable where it increases).  K and Psi_out are reduced to smooth
two-dimensional integrals (:func:`sign_deficit`, :func:`sign_entropy` on a :class:`SignRule`); an error bar is
the change from the rule of order n - ORDER_STEP.  :func:`channel_hats` computes the three hats directly on an
:class:`InvariantRule` (the check of the reduced forms); eps_g is averaged on tensor Gauss-Hermite grids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from attnphase.numerics.quadrature.rules import gauss_hermite_1d, tensor_grid
from attnphase.theory.channels.bayes_optimal import BayesOptimalChannel
from attnphase.theory.softmax import row_softmax
from attnphase.theory.priors.gaussian import GaussianPrior

#: Nodes per variable of the default :class:`InvariantRule` (its error bar: the change from order n - ORDER_STEP).
DEFAULT_ORDER = 48
ORDER_STEP = 16

#: Gauss-Hermite order per dimension of eps_g's averages over w and over h ~ N(w, Ve), by L.
EPS_G_ORDER = {1: 60, 2: 24, 3: 10, 4: 6}

#: The grid of x = q0 / rho0 on which alpha*(q0) is scanned: logistic in t (dense at both ends; from x = 2e-9,
#: so an uninformative point is found from alpha - alpha_WR ~ 1e-9 alpha_WR on).
GRID_T = np.concatenate([np.linspace(-20.0, -11.5, 18), np.linspace(-11.0, 13.0, 193)])


@dataclass(frozen=True)
class BayesModel:
    """What the Bayes-optimal state evolution depends on: L, sigma_l^2, rho0 and the noise Delta (omega enters
    eps_g alone; A, P, lambda not at all)."""

    sigma2: tuple[float, ...]
    rho0: float = 1.0
    noise: float = 0.0

    def __post_init__(self) -> None:
        if np.ndim(self.sigma2) != 1:
            raise ValueError(f"sigma2 must be a sequence of per-token variances, got {self.sigma2!r}")
        object.__setattr__(self, "sigma2", tuple(float(s) for s in self.sigma2))
        if not self.sigma2 or not all(math.isfinite(s) and s > 0 for s in self.sigma2):
            raise ValueError(f"sigma2 must be finite positive per-token variances, got {self.sigma2}")
        for name, low, strict in (("rho0", 0.0, True), ("noise", 0.0, False)):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < low or (strict and value == low):
                raise ValueError(f"{name} must be finite and {'>' if strict else '>='} 0, got {getattr(self, name)}")
            object.__setattr__(self, name, value)

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
class InvariantRule:
    """A product rule for the rotation-invariant averages of the map: in each field's prior units they depend on
    (xi, eta) only through |xi| ~ chi_L, eta_par = eta . xi / |xi| ~ N(0, 1) and |eta_perp| ~ chi_{L-1}
    (generalised Gauss-Laguerre, Gauss-Hermite; ``order`` nodes each): the nodes r, par, perp (N,), weights (N,).
    """

    L: int
    order: int
    r: np.ndarray
    par: np.ndarray
    perp: np.ndarray
    weights: np.ndarray


def chi_nodes(k: int, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of ``order`` points for rho ~ chi_k: generalised Gauss-Laguerre in
    s = rho^2 / 2 ~ Gamma(k / 2)."""
    from scipy.special import gamma, roots_genlaguerre

    s, w = roots_genlaguerre(order, k / 2 - 1)
    return np.sqrt(2 * s), w / gamma(k / 2)


def _check_rule(name: str, L: int, order: int) -> None:
    if L < 1 or order < 2:
        raise ValueError(f"{name} needs L >= 1 and order >= 2, got L = {L}, order = {order}")


def invariant_rule(L: int, order: int = DEFAULT_ORDER) -> InvariantRule:
    """The :class:`InvariantRule` of L tokens with ``order`` nodes per variable (L = 1: no eta_perp)."""
    _check_rule("invariant_rule", L, order)
    r, wr = chi_nodes(L, order)
    par, wp = gauss_hermite_1d(order)
    perp, wq = chi_nodes(L - 1, order) if L > 1 else (np.zeros(1), np.ones(1))
    R, Pa, Pe = (g.reshape(-1) for g in np.meshgrid(r, par, perp, indexing="ij"))
    W = np.einsum("i,j,k->ijk", wr, wp, wq).reshape(-1)
    return InvariantRule(L, order, R, Pa, Pe, W / W.sum())


@dataclass(frozen=True)
class BayesHats:
    """Per-sample channel averages at q0, summed over tokens with sigma_l^2 (multiply by alpha): qhat = K =
    sum_l sigma_l^2 E[g_l^2], mhat = sum_l sigma_l^2 E[g_l eta_l] / sqrt(Ve_l), Vhat = -sum_l sigma_l^2
    E[d g_l / d w_l] (equal on the Nishimori line) and psi_out = E[log Z_out]."""

    qhat: float
    mhat: float
    Vhat: float
    psi_out: float


def channel_hats(model: BayesModel, rule: InvariantRule, q0: float) -> BayesHats:
    """The averages of :class:`BayesHats` at q0 in [0, rho0) in the coordinates of :class:`InvariantRule`:
    w~ = sqrt(x) |xi| e_1, Y~ = w~ + s (eta_par e_1 + |eta_perp| e_2), x = q0 / rho0, s^2 = 1 - x + Delta."""
    if rule.L != model.L:
        raise ValueError(f"the rule is for L = {rule.L}, the model has L = {model.L}")
    L, rho0 = model.L, model.rho0
    x = q0 / rho0
    s2 = 1.0 - x + model.noise
    D = min(L, 2)
    w = np.zeros((rule.r.size, D))
    w[:, 0] = np.sqrt(x) * rule.r
    eta = np.stack([rule.par, rule.perp], axis=1)[:, :D]
    Y = w + np.sqrt(s2) * eta
    Ve = np.full(D, s2)
    ch = model.channel
    g = ch.g_out(Y, w, Ve)
    trace_dg = np.trace(ch.dg_out(Y, w, Ve), axis1=-2, axis2=-1) - (L - D) / s2
    wt = rule.weights
    log_z = ch.log_z_out(Y, w, Ve) - 0.5 * (L - D) * np.log(2 * np.pi * s2) - 0.5 * float(np.sum(np.log(model.s2() * rho0)))
    return BayesHats(qhat=float(wt @ np.sum(g * g, axis=1)) / rho0,
                     mhat=float(wt @ np.sum(g * eta, axis=1)) / (rho0 * np.sqrt(s2)),
                     Vhat=-float(wt @ trace_dg) / rho0, psi_out=float(wt @ log_z))


@dataclass(frozen=True)
class SignRule:
    """The product rule of :func:`hat_sum`: rho ~ chi_L (generalised Gauss-Laguerre in rho^2 / 2) times
    y ~ N(0, 1) (Gauss-Hermite), ``order`` nodes each; weights (N,) summing to 1."""

    L: int
    order: int
    rho: np.ndarray
    y: np.ndarray
    weights: np.ndarray


def sign_rule(L: int, order: int = DEFAULT_ORDER) -> SignRule:
    """The :class:`SignRule` of L tokens with ``order`` nodes per variable."""
    _check_rule("sign_rule", L, order)
    rho, wr = chi_nodes(L, order)
    y, wy = gauss_hermite_1d(order)
    R, Y = (g.reshape(-1) for g in np.meshgrid(rho, y, indexing="ij"))
    W = np.outer(wr, wy).reshape(-1)
    return SignRule(L, order, R, Y, W / W.sum())


def _sech(z: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(z))
    return 2.0 * e / (1.0 + e * e)


def sign_deficit(L: int, x: float, s2: float, rule: SignRule) -> float:
    """E = (s^2 / (x + s^2))^(L/2) E_{rho ~ chi_L, y ~ N(0,1)}[ (y^2 + L - 1) / 2 sech(tau rho y) ],
    tau = sqrt(x / (x + s^2)): what the unknown sign costs in K (:func:`hat_sum`; docs/bayes-optimal.md)."""
    tau = math.sqrt(x / (x + s2))
    return (s2 / (x + s2)) ** (L / 2) * float(rule.weights @ (0.5 * (rule.y ** 2 + L - 1) * _sech(tau * rule.rho * rule.y)))


def _even_log_partition(z: np.ndarray) -> np.ndarray:
    """H(z) = 2 cosh(z) log(1 + e^{-2z}) + 2 z e^{-z}: even and analytic (H(-z) = H(z)), ~(1 + 2|z|) e^{-|z|}."""
    z = np.minimum(np.abs(z), 700.0)
    l = np.log1p(np.exp(-2.0 * z))
    return (np.exp(z) + np.exp(-z)) * l + 2.0 * z * np.exp(-z)


def sign_entropy(L: int, x: float, s2: float, rule: SignRule) -> float:
    """E[log(1 + e^{-2a})] = (s^2 / (x + s^2))^(L/2) E_{rho ~ chi_L, y ~ N(0,1)}[H(tau rho y) / 2],
    tau = sqrt(x / (x + s^2)), H of :func:`_even_log_partition`: the unknown sign's term of Psi_out."""
    tau = math.sqrt(x / (x + s2))
    return (s2 / (x + s2)) ** (L / 2) * float(rule.weights @ (0.5 * _even_log_partition(tau * rule.rho * rule.y)))


def psi_out(model: BayesModel, rule: SignRule, q0: float) -> float:
    """Psi_out = E[log Z_out] = -L/2 - 1/2 sum_l log(2 pi rho_l s^2) + :func:`sign_entropy`, s^2 = 1 - x + Delta
    (E[-|Y - w|^2 / (2 Ve)] = -L/2: Y - w is independent of w with variance Ve)."""
    x = q0 / model.rho0
    s2 = 1.0 - x + model.noise
    logdet = float(np.sum(np.log(2 * np.pi * model.s2() * model.rho0 * s2)))
    return -0.5 * model.L - 0.5 * logdet + sign_entropy(model.L, x, s2, rule)


def hat_sum(model: BayesModel, rule: SignRule, q0: float) -> float:
    """K(q0) = sum_l sigma_l^2 E[g_out_l^2] = (L - 2 E) / (rho0 s^2), s^2 = 1 - x + Delta, x = q0 / rho0,
    E = :func:`sign_deficit` (derivation: docs/bayes-optimal.md): Qhat = alpha K."""
    if rule.L != model.L:
        raise ValueError(f"the rule is for L = {rule.L}, the model has L = {model.L}")
    x = q0 / model.rho0
    s2 = 1.0 - x + model.noise
    return (model.L - 2.0 * sign_deficit(model.L, x, s2, rule)) / (model.rho0 * s2)


def se_step(model: BayesModel, rule: SignRule, alpha: float, q0: float) -> float:
    """One step of the map: q0' = rho0^2 Qhat / (1 + rho0 Qhat), Qhat = alpha K(q0)."""
    return model.prior.overlap(alpha * hat_sum(model, rule, q0))


def alpha_of_overlap(model: BayesModel, rule: SignRule, q0: float) -> float:
    """alpha*(q0) = q0 / (rho0 (rho0 - q0) K(q0)): the alpha at which q0 in (0, rho0) is a fixed point."""
    return model.prior.hat_of_overlap(q0) / hat_sum(model, rule, q0)


def free_entropy(model: BayesModel, rule: SignRule, alpha: float, q0: float) -> float:
    """Phi = psi(Qhat) - q0 Qhat / 2 + alpha Psi_out(q0) with Qhat = alpha K(q0) (module doc); q0 < rho0."""
    Qhat = alpha * hat_sum(model, rule, q0)
    return model.prior.free_entropy_term(Qhat) - 0.5 * q0 * Qhat + alpha * psi_out(model, rule, q0)


def bayes_eps_g(model: BayesModel, omega: float, q0: float, order: int | None = None, chunk: int = 256) -> float:
    """The Bayes-optimal eps_g at q0 (module doc): w_l = sqrt(q_l) xi_l and h = w + sqrt(Ve) z on tensor
    Gauss-Hermite grids (xi and z, ``order`` nodes per dimension, default :data:`EPS_G_ORDER`); 0 at perfect
    recovery (q0 = rho0, noiseless).  ValueError for omega outside [0, 1] or q0 outside [0, rho0]."""
    if not (math.isfinite(omega) and 0.0 <= omega <= 1.0):
        raise ValueError(f"omega must lie in [0, 1], got {omega}")
    if not (math.isfinite(q0) and 0.0 <= q0 <= model.rho0 * (1.0 + 1e-12)):
        raise ValueError(f"q0 must lie in [0, rho0 = {model.rho0:g}], got {q0}")
    L = model.L
    q, _, Ve = model.variances(min(q0, model.rho0))
    if not np.all(Ve > 0):
        return 0.0
    xi, wt = tensor_grid(*gauss_hermite_1d(order or EPS_G_ORDER.get(L, 6)), L)
    s2 = model.s2()
    total = 0.0
    for start in range(0, xi.shape[0], chunk):
        w = np.sqrt(q) * xi[start:start + chunk]
        h = w[:, None, :] + np.sqrt(Ve) * xi[None, :, :]
        S = row_softmax(h[..., :, None] * h[..., None, :])
        mean = np.einsum("j,njlk->nlk", wt, S)
        dev = S - mean[:, None]  # centred: E[S^2] - E[S]^2 cancels to round-off where S is nearly constant
        var = np.einsum("j,njlk->nlk", wt, dev * dev)
        total += float(wt[start:start + chunk] @ np.einsum("nlk,k->n", var, s2))
    return 0.5 * (1.0 - omega) ** 2 * total


#: Where the Gauss-Hermite eps_g is uncertain by more than this (relative; a sharp softmax: rho0 sigma^2 >~ 10, or
#: L >= 3's coarse grids) it is checked on the Sobol rule :data:`EPS_G_SOBOL` (:func:`bayes_eps_g_sobol`).
EPS_G_CHECK_RTOL = 1e-4
#: log2 of the nodes per scrambling and the scramblings of that rule.
EPS_G_SOBOL = (18, 4)


def bayes_eps_g_sobol(model: BayesModel, omega: float, q0s: Sequence[float]) -> np.ndarray:
    """eps_g at each q0 of ``q0s`` on every scrambling of a Sobol rule over the 3L Gaussians (xi, z, z'), from
    Var_z(S) = E[(S(h) - S(h'))^2] / 2:

        eps_g = (1/4) (1 - omega)^2 E[ sum_{l,k} sigma_k^2 (S_lk(h) - S_lk(h'))^2 ],  h = sqrt(q) xi + sqrt(Ve) z,
                                                                                     h' = sqrt(q) xi + sqrt(Ve) z'

    (no smoothness needed: the softmax may be nearly a step).  Returns the (len(q0s), scramblings) estimates, the
    same nodes at every q0 (their differences are accurate), and 0 where q0 = rho0 without noise."""
    from attnphase.numerics.quadrature.rules import sobol_rule

    L, (log2_n, blocks), s2 = model.L, EPS_G_SOBOL, model.s2()
    out = np.zeros((len(q0s), blocks))
    for j in range(blocks):
        nodes = sobol_rule(L, log2_n, seed=0, randomizations=blocks, block=j, dim=3 * L).nodes
        xi, z1, z2 = nodes[:, :L], nodes[:, L:2 * L], nodes[:, 2 * L:]
        for i, q0 in enumerate(q0s):
            q, _, Ve = model.variances(q0)
            if not np.all(Ve > 0):
                continue
            S1, S2 = (row_softmax(h[:, :, None] * h[:, None, :]) for h in (np.sqrt(q) * xi + np.sqrt(Ve) * z
                                                                          for z in (z1, z2)))
            out[i, j] = 0.25 * (1.0 - omega) ** 2 * float(np.mean(np.einsum("nlk,k->n", (S1 - S2) ** 2, s2)))
    return out


# --------------------------------------------------------------------------------------------- branches


@dataclass(frozen=True)
class AlphaCurve:
    """alpha*(q0) on the grid x = q0 / rho0 = expit(GRID_T) of one rule."""

    x: np.ndarray
    alpha: np.ndarray


def alpha_curve(model: BayesModel, rule: SignRule, t: np.ndarray = GRID_T) -> AlphaCurve:
    x = 1.0 / (1.0 + np.exp(-t))
    a = np.array([alpha_of_overlap(model, rule, model.rho0 * xx) for xx in x])
    return AlphaCurve(x, a)


def _root(model: BayesModel, rule: SignRule, alpha: float, x0: float, x1: float) -> float:
    from scipy.optimize import brentq  # here, not at the top: an ERM command does not pay for scipy.optimize

    f = lambda x: alpha_of_overlap(model, rule, model.rho0 * x) - alpha  # noqa: E731
    return brentq(f, x0, x1, xtol=1e-14, rtol=1e-13)


@dataclass(frozen=True)
class BayesFixedPoint:
    """One Bayes-optimal fixed point at alpha: its ``branch`` (``"uninformative"``, where the iteration from
    q0 = 0+ ends, or ``"informative"``, from rho0-), q0 = |Q|^2 / d of the posterior mean, whether the map's slope
    is < 1 there (``stable``), and whether q0 = rho0 exactly (``perfect``: noiseless, alpha L > 1)."""

    alpha: float
    branch: str
    q0: float
    stable: bool
    perfect: bool = False


def fixed_points(model: BayesModel, rule: SignRule, alpha: float, curve: AlphaCurve | None = None
                 ) -> list[tuple[float, bool]]:
    """Every fixed point x = q0 / rho0 at alpha with its stability, ascending: 0 (stable iff alpha <= alpha_WR),
    the roots of alpha*(x) = alpha (stable where alpha* increases; above the grid's last point, noiseless, the root
    between it and 1), and, noiseless, 1 (stable from alpha*(1-) = 1 / L on, marginally at it)."""
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    c = curve or alpha_curve(model, rule)
    # 0 is stable up to alpha_WR included (marginally at it)
    out = [(0.0, alpha <= model.channel.weak_recovery_alpha(model.L))]
    d = c.alpha - alpha
    for i in np.nonzero(np.sign(d[:-1]) != np.sign(d[1:]))[0]:
        out.append((_root(model, rule, alpha, c.x[i], c.x[i + 1]), bool(d[i] < 0)))
    if model.noise == 0.0:
        top = 1.0 / model.L  # alpha*(1-): q0 = rho0 is stable from it on (marginally at it)
        if c.alpha[-1] < alpha < top:  # the increasing root between the grid's last point and 1
            hi = next((1.0 - 10.0 ** -k for k in range(7, 16)
                       if alpha_of_overlap(model, rule, model.rho0 * (1.0 - 10.0 ** -k)) > alpha), None)
            if hi is not None:
                out.append((_root(model, rule, alpha, c.x[-1], hi), True))
        out.append((1.0, bool(alpha >= top)))
    return out


def solve_bayes(model: BayesModel, alpha: float, branch: str = "informative", rule: SignRule | None = None,
                curve: AlphaCurve | None = None) -> BayesFixedPoint:
    """The fixed point of ``branch`` at alpha (module doc): the lowest stable one for ``uninformative``, the
    highest for ``informative``."""
    if branch not in ("informative", "uninformative"):
        raise ValueError(f"branch must be informative or uninformative, got {branch!r}")
    if isinstance(alpha, bool) or not (isinstance(alpha, (int, float, np.floating, np.integer))
                                       and math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    rule = rule or sign_rule(model.L)
    pts = [p for p in fixed_points(model, rule, alpha, curve) if p[1]]
    x, stable = (pts[0] if branch == "uninformative" else pts[-1]) if pts else (math.nan, False)
    return BayesFixedPoint(float(alpha), branch, model.rho0 * x, stable, perfect=(x == 1.0))
