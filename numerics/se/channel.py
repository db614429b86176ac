"""Channel expectations of the state evolution: one vectorised proximal solve over all nodes (docs/model.md
sections 3, 4 and 7).  At every node of the rule over (xi, eta):

    w_l = m_l + q_l^{1/2} xi_l,  h*_l = theta_l^T q_l^{-1/2} xi_l + rho_tilde_l^{1/2} eta_l,
    h_hat = prox(w, T(h*)),      g_l = V_l^{-1} (h_hat_l - w_l),

and E[g g^T], E[g], E[g xi^T], E[g eta^T], E[M], eps_g are sums over the nodes (fields: theory/channel.py at
r = r* = 1 with the generated one-dimensional kernels, theory/matrix_channel.py otherwise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.prox.local_prox import aligned_prox, local_prox
from attnphase.numerics.prox.global_prox import global_prox
from attnphase.numerics.prox.selection import Candidates
from attnphase.numerics.prox.newton_steps import ProxResult
from attnphase.numerics.quadrature.rules import QuadratureRule, split_nodes
from attnphase.theory import matrix_channel as rk
from attnphase.theory.channel import channel_fields, student_mean_field, token_variances
from attnphase.theory.params import ModelParams
from attnphase.theory.softmax import target as matrix_target


@dataclass(frozen=True, eq=False)
class ChannelMoments:
    """Quadrature estimates at one state: E[g_l], E[g_l g_l^T] (E[g_l^2] at r = 1), E[g_l xi_l^T], E[g_l eta_l^T]
    (shape (L,) in the scalar form), E[M], eps_g (NaN from a polish), the failed proximal solves, the minima a
    next evaluation polishes, and E[loss(h_hat, T(h*))] (matrix form, NaN from a polish; else NaN)."""

    E_g: np.ndarray
    E_ggT: np.ndarray
    E_gxi: np.ndarray
    E_geta: np.ndarray
    E_M: float
    eps_g: float
    prox_failures: int
    candidates: Candidates | np.ndarray | None
    E_loss: float = math.nan


def channel_moments(
    kernels: Any,
    params: ModelParams,
    ov: Overlaps,
    rule: QuadratureRule,
    config: SolverConfig | None = None,
    candidates: Candidates | None = None,
    full_search: bool = True,
    target: np.ndarray | None = None,
    frozen: bool = False,
) -> ChannelMoments:
    """All channel expectations at overlaps ``ov`` with one batched proximal solve (``config.prox`` on
    ``config.backend``; ``candidates``/``full_search``/``frozen`` as for
    :func:`attnphase.numerics.prox.global_prox.global_prox`).
    ``target``: T(h*) at the rule's nodes if the caller has it (at th0 = 0 it does not depend on the state).
    """
    cfg = config or SolverConfig()
    if ov.is_matrix:
        return _matrix_moments(kernels, params, ov, rule, cfg, candidates, full_search, frozen)
    xi, eta = rule.nodes[:, :params.L], rule.nodes[:, params.L:]
    w, V, res, candidates, T = _node_prox(kernels, params, ov, rule, cfg, candidates, full_search, target)
    g = (res.h - w) / V
    wt = rule.weights
    return ChannelMoments(
        E_g=wt @ g,
        E_ggT=wt @ (g * g),
        E_gxi=wt @ (g * xi),
        E_geta=wt @ (g * eta),
        E_M=float(wt @ res.value),
        # a polish (not a function of the state alone) skips eps_g
        eps_g=(float(wt @ kernels.loss(w, T, params.sigma2))
               if full_search or candidates is None or cfg.prox != "global" else math.nan),
        prox_failures=int((~res.converged).sum()),
        candidates=candidates,
    )


def _matrix_moments(kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule, cfg: SolverConfig,
                    previous: np.ndarray | None, full_search: bool, frozen: bool = False) -> ChannelMoments:
    """:func:`channel_moments` of the matrix form: one proximal solve over the rule's nodes, global or (``config.prox``
    ``"aligned"``) :func:`~attnphase.numerics.prox.local_prox.aligned_prox` (the backend ``config.backend``;
    ``"torch"`` runs on ``"auto"``: there is no torch rank-r descent)."""
    s2 = params.sigma2
    xi, eta = split_nodes(rule, ov.L, ov.r, ov.r_star)
    w, hstar = rk.channel_fields(xi, eta, ov.q0, ov.m, ov.th0, s2, params.rho0)
    T = matrix_target(hstar, params.omega, params.A_array)
    backend = "auto" if cfg.backend == "torch" else cfg.backend
    if cfg.prox == "aligned":  # the last full search's minimisers among its starts, or polished
        res = aligned_prox(kernels, w, ov.V0, T, s2, student_mean_field(hstar, ov.m, ov.th0, params.rho0),
                           backend=backend, hstar=hstar, previous=previous, full_search=full_search)
    else:
        candidates = None if previous is None else Candidates(np.arange(previous.shape[0]), previous)
        res, _ = global_prox(kernels, w, ov.V0, T, s2, hstar, candidates=candidates,
                             full_search=full_search or previous is None, frozen=frozen, backend=backend)
    Vinv = np.linalg.inv(ov.V0)
    g = np.einsum("ab,nlb->nla", Vinv, res.h - w) / s2[None, :, None]
    wt = rule.weights
    exact = full_search or previous is None  # a polish is not a function of the state alone: no eps_g, E_loss
    return ChannelMoments(
        E_g=np.einsum("n,nla->la", wt, g),
        E_ggT=np.einsum("n,nla,nlb->lab", wt, g, g),
        E_gxi=np.einsum("n,nla,nlb->lab", wt, g, xi),
        E_geta=np.einsum("n,nla,nlb->lab", wt, g, eta),
        E_M=float(wt @ res.value),
        eps_g=float(wt @ kernels.loss(w, T, s2)) if exact else math.nan,
        prox_failures=int((~res.converged).sum()),
        candidates=res.h,
        E_loss=float(wt @ kernels.loss(res.h, T, s2)) if exact else math.nan,
    )


def _fields(
    kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule, target: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(w, V, T(h*), h*) at the rule's nodes for the state ``ov`` (docs/model.md section 3)."""
    L = params.L
    w, hstar = channel_fields(rule.nodes[:, :L], rule.nodes[:, L:], ov.q0, ov.m, ov.th0, params.sigma2, params.rho0)
    V = token_variances(ov.V0, params.sigma2)
    T = kernels.target(hstar, params.omega, params.A_array) if target is None else target
    return w, V, T, hstar


def _node_prox(kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule, cfg: SolverConfig,
               candidates: Candidates | None, full_search: bool, target: np.ndarray | None = None,
               ) -> tuple[np.ndarray, np.ndarray, ProxResult, Candidates | None, np.ndarray]:
    """(w, V, proximal result, its distinct local minima per node, T(h*)) at the rule's nodes for the state ``ov``
    (``candidates``, ``full_search``, ``target`` as for :func:`channel_moments`): the global search, or a local
    proximal map (minima None) from the loss zero aligned with the student's mean field E[w | h*] = m + (th0 / rho0)
    h* (``aligned``) or from h = 0 (``local``)."""
    w, V, T, hstar = _fields(kernels, params, ov, rule, target)
    if cfg.prox == "global":
        res, minima = global_prox(kernels, w, V, T, params.sigma2, candidates=candidates, full_search=full_search,
                                  backend=cfg.backend)
        return w, V, res, minima, T
    if cfg.prox == "aligned":
        reference = student_mean_field(hstar, ov.m, ov.th0, params.rho0)
        return w, V, aligned_prox(kernels, w, V, T, params.sigma2, reference, backend=cfg.backend), None, T
    return w, V, local_prox(kernels, w, V, T, params.sigma2, backend=cfg.backend), None, T


def prox_with_minima(
    kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None,
    polish_from: Candidates | None = None,
) -> tuple[np.ndarray, np.ndarray, ProxResult, Candidates | None]:
    """(w, V, proximal result, its distinct local minima per node) at the rule's nodes for the state ``ov``: one
    full search (global mode; minima None in the local / aligned modes); with ``polish_from`` (an earlier full
    search's minima at the same nodes) those polished and returned instead."""
    return _node_prox(kernels, params, ov, rule, config or SolverConfig(), polish_from, polish_from is None)[:4]


def envelope_mean(
    kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None
) -> tuple[float, int]:
    """(E[M], nodes whose proximal solve failed), M = min_h sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T(h*))
    (docs/model.md section 4), from one full search."""
    res = prox_with_minima(kernels, params, ov, rule, config)[2]
    return float(rule.weights @ res.value), int((~res.converged).sum())


def teacher_target(kernels: Any, params: ModelParams, ov: Overlaps, rule: QuadratureRule) -> np.ndarray:
    """T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A at the rule's nodes, for the state ``ov``."""
    return _fields(kernels, params, ov, rule)[2]
