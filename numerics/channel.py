"""Channel expectations of the state evolution: one vectorised proximal solve over all nodes.

For the current overlaps and a quadrature rule over (xi, eta) (MODEL.md section 3):

    w_l = m_l + sqrt(q_l) xi_l,   h*_l = theta_l / sqrt(q_l) xi_l + sqrt(rho_l - theta_l^2 / q_l) eta_l,
    h_hat = prox(w, T(h*)),       g_l = (h_hat_l - w_l) / V_l,

and the moments E[g], E[g^2], E[g xi], E[g eta], the Moreau envelope E[M] and the
test-error integrand E[loss(w, T(h*))] (section 4) are sums over the nodes.  The
field and hat-overlap formulas come from :mod:`attnphase.theory.channel`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnphase.numerics.overlaps import HatOverlaps, Overlaps
from attnphase.numerics.prox import Candidates, ProxResult, aligned_prox, global_prox, local_prox
from attnphase.numerics.quadrature import QuadratureRule
from attnphase.numerics.symmetry import SymmetryElement, symmetrize
from attnphase.theory.channel import channel_fields, hat_overlaps, token_variances
from attnphase.theory.params import ModelParams

PROX_MODES = ("global", "local", "aligned")


@dataclass(frozen=True, eq=False)
class ChannelMoments:
    """Quadrature estimates at one state; every array has shape (L,).

    Attributes:
        E_g, E_g2, E_gxi, E_geta: E[g_l], E[g_l^2], E[g_l xi_l], E[g_l eta_l].
        E_M: E[M], the Moreau envelope (minimum value of the proximal objective).
        eps_g: test error E[loss(w, T(h*))] of MODEL.md section 4 (NaN from a global-mode polish,
            which is never reported).
        prox_failures: number of nodes whose proximal solve did not converge.
        candidates: distinct local minima per node (global mode), to warm-start the next solve.
    """

    E_g: np.ndarray
    E_g2: np.ndarray
    E_gxi: np.ndarray
    E_geta: np.ndarray
    E_M: float
    eps_g: float
    prox_failures: int
    candidates: Candidates | None


def channel_moments(
    kernels: Any,
    params: ModelParams,
    ov: Overlaps,
    rule: QuadratureRule,
    prox: str = "global",
    candidates: Candidates | None = None,
    full_search: bool = True,
    target: np.ndarray | None = None,
) -> ChannelMoments:
    """All channel expectations at overlaps ``ov`` with one batched proximal solve.

    ``candidates``/``full_search`` are passed to :func:`attnphase.numerics.prox.global_prox`.
    ``target``: T(h*) at the rule's nodes if the caller already has it -- at th0 = 0,
    h*_l = sqrt(rho_l) eta_l does not depend on the state (see :func:`teacher_target`).
    """
    if prox not in PROX_MODES:
        raise ValueError(f"prox must be one of {PROX_MODES}, got {prox!r}")
    L = params.L
    sigma2 = params.sigma2
    xi, eta = rule.nodes[:, :L], rule.nodes[:, L:]
    w, hstar = channel_fields(xi, eta, ov.q0, ov.m, ov.th0, sigma2, params.rho0)
    V = token_variances(ov.V0, sigma2)
    T = kernels.target(hstar, params.omega, params.A_array) if target is None else target
    if prox == "global":
        res, candidates = global_prox(kernels, w, V, T, sigma2, candidates=candidates, full_search=full_search)
    elif prox == "aligned":
        res, candidates = aligned_prox(kernels, w, V, T, sigma2, hstar), None
    else:
        res, candidates = local_prox(kernels, w, V, T, sigma2), None
    g = (res.h - w) / V
    wt = rule.weights
    return ChannelMoments(
        E_g=wt @ g,
        E_g2=wt @ (g * g),
        E_gxi=wt @ (g * xi),
        E_geta=wt @ (g * eta),
        E_M=float(wt @ res.value),
        # eps_g is read only from evaluations that are a function of the state alone (full
        # searches, local/aligned modes); a polish skips it (NaN) -- one loss kernel less per step
        eps_g=float(wt @ kernels.loss(w, T, sigma2)) if (full_search or candidates is None or prox != "global") else math.nan,
        prox_failures=int((~res.converged).sum()),
        candidates=candidates,
    )


def prox_at_nodes(
    kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule, prox: str = "global"
) -> tuple[np.ndarray, np.ndarray, ProxResult]:
    """(w, V, proximal result) at the rule's nodes for the state ``ov``: one full search (global
    mode), or the local / aligned minimiser.  For evaluations outside the SE iteration (finer rules)."""
    if prox not in PROX_MODES:
        raise ValueError(f"prox must be one of {PROX_MODES}, got {prox!r}")
    L = params.L
    xi, eta = rule.nodes[:, :L], rule.nodes[:, L:]
    w, hstar = channel_fields(xi, eta, ov.q0, ov.m, ov.th0, params.sigma2, params.rho0)
    V = token_variances(ov.V0, params.sigma2)
    T = kernels.target(hstar, params.omega, params.A_array)
    if prox == "global":
        res, _ = global_prox(kernels, w, V, T, params.sigma2)
    elif prox == "aligned":
        res = aligned_prox(kernels, w, V, T, params.sigma2, hstar)
    else:
        res = local_prox(kernels, w, V, T, params.sigma2)
    return w, V, res


def envelope_mean(
    kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule, prox: str = "global"
) -> tuple[float, int]:
    """E[M] alone, M = min_h sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T(h*)) (MODEL.md section 4).

    The same proximal solve as :func:`channel_moments` (a full search in global mode) without the
    g-moments and the test error: the term of Phi that :mod:`attnphase.numerics.training_objective`
    re-evaluates on a finer rule.  Returns (E[M], number of nodes whose proximal solve did not converge).
    """
    _, _, res = prox_at_nodes(kernels, params, ov, rule, prox)
    return float(rule.weights @ res.value), int((~res.converged).sum())


def teacher_target(kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule) -> np.ndarray:
    """T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A at the rule's nodes, for the state ``ov``."""
    L = params.L
    _, hstar = channel_fields(rule.nodes[:, :L], rule.nodes[:, L:], ov.q0, ov.m, ov.th0, params.sigma2, params.rho0)
    return kernels.target(hstar, params.omega, params.A_array)


def hats_from_moments(
    params: ModelParams, ov: Overlaps, alpha: float, mom: ChannelMoments, group: list[SymmetryElement]
) -> HatOverlaps:
    """Hat overlaps (theory formulas) from the moments, symmetrised over the state's symmetry ``group``."""
    qhat, mhat, thhat, Vhat = hat_overlaps(
        alpha, mom.E_g2, mom.E_g, mom.E_geta, mom.E_gxi, ov.q0, ov.th0, params.sigma2, params.rho0
    )
    return symmetrize(HatOverlaps(qhat=qhat, mhat=mhat, thhat=thhat, Vhat=Vhat), group)
