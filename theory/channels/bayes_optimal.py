"""The Bayes-optimal channel of the attention model (docs/model.md section 9; docs/bayes-optimal.md).

A sample reveals its teacher attention T(h*) exactly, hence for omega < 1 the fields h* up to one sign shared by
the L tokens (:func:`fields_from_attention`). So the channel observes

    Y = +-(h* + zeta),   zeta_l ~ N(0, Delta rho_l),   rho_l = sigma_l^2 rho0,

(Delta = 0: the model of section 1; Delta > 0: the noisy teacher of section 9). Given a Gaussian estimate
h* ~ N(w, V), with Ve_l = V_l + Delta rho_l:

    Z_out(Y; w, V) = sum_{s = +-1} N(s Y; w, Ve)
    g_out_l        = d_{w_l} log Z_out = (tanh(a) Y_l - w_l) / Ve_l,   a = sum_l Y_l w_l / Ve_l
    dg_out[l, k]   = d_{w_k} g_out_l = (1 - tanh(a)^2) Y_l Y_k / (Ve_l Ve_k) - delta_lk / Ve_l

Not an ERM loss, so not in the loss registry; the Bayes-optimal state evolution (numerics/se/bayes.py) calls it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ArrayLike = Any


def _arrays(Y: ArrayLike, w: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(Y, dtype=float), np.asarray(w, dtype=float)


@dataclass(frozen=True)
class BayesOptimalChannel:
    """The sign-blind observation of the fields (module doc), with ``noise`` Delta >= 0 in units of rho_l."""

    noise: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", float(self.noise))
        if not (np.isfinite(self.noise) and self.noise >= 0.0):
            raise ValueError(f"the channel noise Delta must be finite and >= 0, got {self.noise}")

    def effective_variance(self, V: ArrayLike, rho: ArrayLike) -> np.ndarray:
        """Ve_l = V_l + Delta rho_l: the variance of Y - w given w (estimate's plus observation's)."""
        return np.asarray(V, dtype=float) + self.noise * np.asarray(rho, dtype=float)

    def sign_field(self, Y: ArrayLike, w: ArrayLike, Ve: ArrayLike) -> np.ndarray:
        """a = sum_l Y_l w_l / Ve_l over the last axis; E[s | Y, w] = tanh(a)."""
        Y, w = _arrays(Y, w)
        return np.sum(Y * w / Ve, axis=-1)

    def log_z_out(self, Y: ArrayLike, w: ArrayLike, Ve: ArrayLike) -> np.ndarray:
        """log Z_out = log N(Y; w, Ve) + log(1 + exp(-2 a)), stable at any a (module doc)."""
        Y, w = _arrays(Y, w)
        Ve = np.asarray(Ve, dtype=float)
        gauss = -0.5 * np.sum((Y - w) ** 2 / Ve + np.log(2.0 * np.pi * Ve), axis=-1)
        return gauss + np.logaddexp(0.0, -2.0 * self.sign_field(Y, w, Ve))

    def g_out(self, Y: ArrayLike, w: ArrayLike, Ve: ArrayLike) -> np.ndarray:
        """g_out_l = (tanh(a) Y_l - w_l) / Ve_l, shape of Y (module doc)."""
        Y, w = _arrays(Y, w)
        t = np.tanh(self.sign_field(Y, w, Ve))
        return (t[..., None] * Y - w) / Ve

    def dg_out(self, Y: ArrayLike, w: ArrayLike, Ve: ArrayLike) -> np.ndarray:
        """dg_out[..., l, k] = d g_out_l / d w_k = (1 - tanh(a)^2) Y_l Y_k / (Ve_l Ve_k) - delta_lk / Ve_l."""
        Y, w = _arrays(Y, w)
        Ve = np.broadcast_to(np.asarray(Ve, dtype=float), Y.shape)
        t = np.tanh(self.sign_field(Y, w, Ve))
        u = Y / Ve
        return (1.0 - t * t)[..., None, None] * u[..., :, None] * u[..., None, :] - np.eye(Y.shape[-1]) / Ve[..., :, None]

    def weak_recovery_alpha(self, L: int) -> float:
        """alpha_WR = (1 + Delta)^2 / (L (L + 1)): where the uninformative fixed point q0 = 0 loses stability
        (the state evolution linearised at q0 = 0; docs/bayes-optimal.md)."""
        if L < 1:
            raise ValueError(f"L must be >= 1, got {L}")
        return (1.0 + self.noise) ** 2 / (L * (L + 1))


def fields_from_attention(T: ArrayLike, omega: float, A: ArrayLike) -> np.ndarray:
    """The fields h* (L = 2) up to their shared sign from the teacher attention T (..., 2, 2), omega < 1: with
    T' = (T - omega A) / (1 - omega), delta = sqrt(logit T'_11 + logit T'_22), s = (logit T'_11 - logit T'_22) /
    delta, h* = ((s + delta) / 2, (s - delta) / 2)."""
    if not omega < 1.0:
        raise ValueError(f"the fields are revealed only for omega < 1, got {omega}")
    Tp = (np.asarray(T, dtype=float) - omega * np.asarray(A, dtype=float)) / (1.0 - omega)
    l11 = np.log(Tp[..., 0, 0] / Tp[..., 0, 1])
    l22 = np.log(Tp[..., 1, 1] / Tp[..., 1, 0])
    delta = np.sqrt(np.maximum(l11 + l22, 0.0))
    s = (l11 - l22) / delta
    return np.stack([(s + delta) / 2.0, (s - delta) / 2.0], axis=-1)


def bayes_exprs(L: int) -> dict[str, Any]:
    """The module doc's channel and the Gaussian prior's Nishimori form (theory/priors/gaussian.py) as sympy
    expressions in the symbols Y_l, w_l, Ve_l, rho0, Qhat (``attnphase derive`` prints them; a test evaluates them
    against :class:`BayesOptimalChannel` and :class:`~attnphase.theory.priors.gaussian.GaussianPrior`):

        Z_out = sum_{s = +-1} prod_l N(s Y_l; w_l, Ve_l),   g_out_l = d log Z_out / d w_l,
        dg_out[l, k] = d g_out_l / d w_k,   q0 = rho0^2 Qhat / (1 + rho0 Qhat),   psi = 1/2 [rho0 Qhat - log(1 + rho0 Qhat)]

    (g_out and dg_out differentiated by sympy, then rewritten with tanh where that holds exactly)."""
    import sympy as sp

    from attnphase.theory.symbols import token_scalars

    Y, w = token_scalars("Y", L, real=True), token_scalars("w", L, real=True)
    Ve = token_scalars("Ve", L, positive=True)
    rho0, Qhat = sp.Symbol("rho0", positive=True), sp.Symbol("Qhat", nonnegative=True)

    def gauss(s: int) -> Any:
        return sp.Mul(*[sp.exp(-(s * Y[l] - w[l]) ** 2 / (2 * Ve[l])) / sp.sqrt(2 * sp.pi * Ve[l]) for l in range(L)])

    z_out = gauss(1) + gauss(-1)
    a = sum(Y[l] * w[l] / Ve[l] for l in range(L))
    g = [sp.diff(sp.log(z_out), w[l]) for l in range(L)]
    tanh_form = [(sp.tanh(a) * Y[l] - w[l]) / Ve[l] for l in range(L)]
    dg = sp.Matrix(L, L, lambda l, k: sp.diff(tanh_form[l], w[k]))
    return {"Y": Y, "w": w, "Ve": Ve, "rho0": rho0, "Qhat": Qhat, "a": a, "z_out": z_out, "g_out_derived": g,
            "g_out": tanh_form, "dg_out": dg, "q0": rho0 ** 2 * Qhat / (1 + rho0 * Qhat),
            "psi": (rho0 * Qhat - sp.log(1 + rho0 * Qhat)) / 2}


__all__ = ["BayesOptimalChannel", "bayes_exprs", "fields_from_attention"]
