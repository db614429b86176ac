"""Channel expectations by pre-integration: one Gaussian direction integrated piecewise across the jumps.

The global proximal map h_hat jumps between minima across a surface in the Gaussian variables
z = (xi, eta) (docs/method.md section 1), so the channel integrand

    f(z) = (g, g g, g xi, g eta, M, loss(w, T(h*))),   g_l = (h_hat_l - w_l) / V_l   (docs/model.md section 3)

is discontinuous there and a sampled rule over all 2L variables converges slowly.  Here one
direction t is integrated per outer point o -- an axis, z_j = t and o = z without z_j, or an oblique
unit vector v, z = U o + t v -- and only the outer average is sampled:

    E[f] = E_o [ F(o) ],    F(o) = int f(o, t) phi(t) dt = sum_pieces int_{a_k}^{b_k} f(o, t) phi(t) dt.

On each line t is cut into cells of equal Gaussian mass, u = Phi(t) in [u_0, 1 - u_0] (u_0 = 1e-9,
the tails' mass is dropped and the rest renormalised).  At the cell edges the global minimiser is
found by the full multi-start search; a cell holds a jump when the minimiser at one edge, continued
by Newton to the other edge, is not the global one there (checked in both directions).  Inside a
jump cell the jump t* is the root of

    D(t) = M_A(t) - M_B(t),

the difference of the two local minima's values, A continued from the left edge, B from the right
(Illinois regula falsi on the bracket, the minima continued by Newton from the nearest bracket end).
Each smooth piece is integrated by Gauss-Legendre in u (``n_gl`` nodes), the minimiser continued
from that piece's edge.  F(o) is then a continuous function of o, and the outer rule (scrambled
Sobol in the 2L - 1 remaining variables) converges at the faster rate of smooth integrands where
the jumps were the integrand's only roughness.  Measured against plain Sobol in
``studies/quadrature_jumps.py`` (docs/method.md section 1): at the default model's fixed points few
lines cross a jump and the line integrand is steep though continuous, so 8 x 4 nodes per line err
by up to 1 % and the method is not cheaper than plain Sobol there; not used by the solver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri

from attnphase.numerics.prox.global_prox import global_prox, newton_minimize
from attnphase.numerics.se.channel import ChannelMoments
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.theory.channel import channel_fields, token_variances
from attnphase.theory.params import ModelParams

#: Gaussian mass left out at each end of a line (about Phi(-6)).
TAIL_MASS = 1e-9

#: Relative distance below which two minimisers are the same minimum.
SAME_MINIMUM_RTOL = 1e-6


@dataclass(frozen=True)
class LineRule:
    """How each line is integrated: ``cells`` cells of equal Gaussian mass, ``n_gl`` Gauss-Legendre
    nodes (in u = Phi(t)) per smooth piece, ``root_steps`` regula-falsi steps per jump, direction
    ``axis`` (index into z = (xi_1..xi_L, eta_1..eta_L)), or an oblique unit ``direction`` v in R^{2L}
    (z = U o + t v, U an orthonormal basis of v's complement): a line along an axis never crosses a jump
    surface that contains that axis, an oblique one crosses every such surface.  ``search_nodes``: the
    global search at every Gauss-Legendre node too, instead of continuing the piece's minimum."""

    cells: int = 8
    n_gl: int = 4
    root_steps: int = 12
    axis: int = 0
    direction: tuple[float, ...] | None = None
    search_nodes: bool = False

    def __post_init__(self) -> None:
        if self.cells < 1 or self.n_gl < 1 or self.root_steps < 1:
            raise ValueError(f"LineRule needs cells, n_gl, root_steps >= 1, got {self}")


@dataclass(frozen=True, eq=False)
class OuterRule:
    """Points o in R^{2L-1} (standard normal) and their weights for the outer average."""

    nodes: np.ndarray
    weights: np.ndarray
    name: str


def outer_sobol_rule(L: int, log2_n: int, seed: int = 0, randomizations: int = 1,
                     sign_images: bool = True, axis: int = 0) -> OuterRule:
    """Scrambled Sobol points in the 2L - 1 outer variables (``randomizations`` scramblings of 2^log2_n
    points, pooled), with their sign images o -> (s o_xi, t o_eta), s, t = +-1 when ``sign_images``
    (the line's own variable is integrated over a symmetric range, so the images are lines of the rule).
    The outer variables are z = (xi_1..xi_L, eta_1..eta_L) without z_axis."""
    from scipy.stats import qmc

    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(randomizations):
        engine = qmc.Sobol(d=2 * L - 1, scramble=True, seed=rng)
        blocks.append(ndtri(np.clip(engine.random_base2(log2_n), 1e-300, 1 - 1e-16)))
    nodes = np.concatenate(blocks, axis=0)
    if sign_images:
        n_xi = L - 1 if axis < L else L
        images = []
        for s in (1.0, -1.0):
            for t in (1.0, -1.0):
                images.append(np.concatenate([s * nodes[:, :n_xi], t * nodes[:, n_xi:]], axis=1))
        nodes = np.concatenate(images, axis=0)
    weights = np.full(nodes.shape[0], 1.0 / nodes.shape[0])
    return OuterRule(nodes, weights, f"outer-sobol2^{log2_n}x{randomizations}(seed={seed})")


def _gauss_legendre_unit(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1]."""
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1.0), 0.5 * w


class _Line:
    """Fields along the lines z(t) = (o with t inserted at ``axis``) for one state."""

    def __init__(self, kernels: Any, params: ModelParams, ov: Overlaps, outer: np.ndarray, line: LineRule) -> None:
        self.kernels, self.params, self.ov, self.outer, self.axis = kernels, params, ov, outer, line.axis
        self.basis = None
        if line.direction is not None:
            v = np.asarray(line.direction, dtype=float)
            if v.shape != (2 * params.L,) or not np.any(v):
                raise ValueError(f"LineRule.direction must be a non-zero vector of length 2L = {2 * params.L}")
            v = v / np.linalg.norm(v)
            q, _ = np.linalg.qr(np.column_stack([v, np.eye(2 * params.L)]))
            self.v, self.basis = v, q[:, 1:2 * params.L]
        self.V = token_variances(ov.V0, params.sigma2)
        self.sigma2 = params.sigma2

    def fields(self, rows: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z, w, T(h*)) at the outer points ``rows`` and line positions ``t`` (same length)."""
        L = self.params.L
        if self.basis is None:
            z = np.insert(self.outer[rows], self.axis, t, axis=1)
        else:
            z = self.outer[rows] @ self.basis.T + t[:, None] * self.v[None, :]
        w, hstar = channel_fields(z[:, :L], z[:, L:], self.ov.q0, self.ov.m, self.ov.th0, self.sigma2, self.params.rho0)
        T = self.kernels.target(hstar, self.params.omega, self.params.A_array)
        return z, w, T

    def polish(self, h0: np.ndarray, w: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The local minimum reached by Newton from ``h0``: (h, M)."""
        res = newton_minimize(self.kernels, h0, w, self.V, T, self.sigma2)
        return res.h, res.value


def _false_position(ua: np.ndarray, ub: np.ndarray, Da: np.ndarray, Db: np.ndarray) -> np.ndarray:
    """The secant root of D on [ua, ub] (D(ua) <= 0 <= D(ub)); the midpoint where D is flat."""
    denom = Db - Da
    uc = np.where(denom > 0, ua - Da * (ub - ua) / np.where(denom > 0, denom, 1.0), 0.5 * (ua + ub))
    return np.clip(uc, ua, ub)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.max(np.abs(a - b), axis=1) <= SAME_MINIMUM_RTOL * (1.0 + np.max(np.abs(b), axis=1))


def preintegrated_moments(kernels: Any, params: ModelParams, ov: Overlaps, outer: OuterRule,
                          line: LineRule | None = None) -> ChannelMoments:
    """E[g], E[g g] (diagonal), E[g xi], E[g eta], E[M] and eps_g at overlaps ``ov`` by pre-integration
    (module doc): the line integral F(o) of every moment at each outer point, then sum_o w_o F(o).

    Global proximal map only.  ``prox_failures`` counts the nodes (edges, roots' last iterates, piece
    nodes) whose Newton descent did not converge; ``candidates`` is None.
    """
    lr = line or LineRule()
    L = params.L
    N = outer.nodes.shape[0]
    ln = _Line(kernels, params, ov, outer.nodes, lr)
    K = lr.cells
    u_edges = np.linspace(TAIL_MASS, 1.0 - TAIL_MASS, K + 1)
    t_edges = ndtri(u_edges)
    failures = 0

    # 1. the global minimiser at every cell edge of every line
    rows_e = np.repeat(np.arange(N), K + 1)
    t_e = np.tile(t_edges, N)
    _, w_e, T_e = ln.fields(rows_e, t_e)
    res, _ = global_prox(kernels, w_e, ln.V, T_e, ln.sigma2)
    failures += int((~res.converged).sum())
    h_e = res.h.reshape(N, K + 1, L)

    # 2. jumps: the left edge's minimum continued to the right edge, and back
    left = h_e[:, :-1].reshape(-1, L)
    right = h_e[:, 1:].reshape(-1, L)
    rows_c = np.repeat(np.arange(N), K)
    cell = np.tile(np.arange(K), N)
    per_line = lambda a: a.reshape((N, K + 1) + a.shape[1:])  # noqa: E731
    cells_of = lambda a: a.reshape((N * K,) + a.shape[2:])  # noqa: E731
    w_l, T_l = cells_of(per_line(w_e)[:, :-1]), cells_of(per_line(T_e)[:, :-1])
    w_r, T_r = cells_of(per_line(w_e)[:, 1:]), cells_of(per_line(T_e)[:, 1:])
    fwd, M_fwd = ln.polish(left, w_r, T_r)
    bwd, M_bwd = ln.polish(right, w_l, T_l)
    jump = ~(_same(fwd, right) & _same(bwd, left))
    M_e = res.value.reshape(N, K + 1)

    # 3. the jump's position: root of D(u) = M_A - M_B in u = Phi(t), Illinois regula falsi
    u_star = np.full(N * K, np.nan)
    hA_end = left.copy()   # the A minimum at the bracket's left end
    hB_end = right.copy()  # the B minimum at the bracket's right end
    if jump.any():
        J = np.flatnonzero(jump)
        ua, ub = u_edges[cell[J]], u_edges[cell[J] + 1]
        ha, hb = left[J].copy(), right[J].copy()
        # D <= 0 at the left end (A is the global minimum there), D >= 0 at the right end
        Da = np.minimum(M_e[:, :-1].ravel()[J] - M_bwd[J], 0.0)
        Db = np.maximum(M_fwd[J] - M_e[:, 1:].ravel()[J], 0.0)
        side = np.zeros(J.size, dtype=int)
        for _ in range(lr.root_steps):
            uc = _false_position(ua, ub, Da, Db)
            _, w_c, T_c = ln.fields(rows_c[J], ndtri(uc))
            hA, MA = ln.polish(ha, w_c, T_c)
            hB, MB = ln.polish(hb, w_c, T_c)
            D = MA - MB
            merged = _same(hA, hB)
            # where the two continuations meet, one minimum has ceased to exist: the one that moved farther
            a_lost = merged & (np.max(np.abs(hA - ha), axis=1) > np.max(np.abs(hB - hb), axis=1))
            D = np.where(merged, np.where(a_lost, 1.0, -1.0) * 1e-300, D)
            to_left = D > 0  # the root lies in [ua, uc]
            Da = np.where(to_left & (side == 1), 0.5 * Da, Da)    # Illinois: the end kept twice loses half its value
            Db = np.where(~to_left & (side == -1), 0.5 * Db, Db)
            ub, Db = np.where(to_left, uc, ub), np.where(to_left, D, Db)
            ua, Da = np.where(to_left, ua, uc), np.where(to_left, Da, D)
            side = np.where(to_left, 1, -1)
            hb = np.where((to_left & ~merged)[:, None], hB, hb)
            ha = np.where((~to_left & ~merged)[:, None], hA, ha)
        u_star[J] = _false_position(ua, ub, Da, Db)
        hA_end[J], hB_end[J] = ha, hb

    # 4. Gauss-Legendre in u on every smooth piece: [u_k, u*] from A, [u*, u_k+1] from B; whole cells from A
    x, wx = _gauss_legendre_unit(lr.n_gl)
    u0, u1 = u_edges[cell], u_edges[cell + 1]
    us = np.where(jump, u_star, u1)
    pieces = [(u0, us, hA_end), (us, u1, hB_end)]
    mass = u_edges[-1] - u_edges[0]
    sums = {k: np.zeros(L) for k in ("g", "g2", "gxi", "geta")}
    E_M = 0.0
    eps = 0.0
    wo = np.repeat(outer.weights, K)
    for lo, hi, h_start in pieces:
        width = hi - lo
        keep = width > 0
        if not keep.any():
            continue
        idx = np.flatnonzero(keep)
        u_nodes = (lo[idx, None] + width[idx, None] * x[None, :]).ravel()
        weight = (wo[idx, None] * width[idx, None] * wx[None, :]).ravel() / mass
        rows = np.repeat(rows_c[idx], lr.n_gl)
        z, w, T = ln.fields(rows, ndtri(u_nodes))
        if lr.search_nodes:
            res, _ = global_prox(kernels, w, ln.V, T, ln.sigma2)
        else:
            res = newton_minimize(kernels, np.repeat(h_start[idx], lr.n_gl, axis=0), w, ln.V, T, ln.sigma2)
        failures += int((~res.converged).sum())
        g = (res.h - w) / ln.V
        sums["g"] += weight @ g
        sums["g2"] += weight @ (g * g)
        sums["gxi"] += weight @ (g * z[:, :L])
        sums["geta"] += weight @ (g * z[:, L:])
        E_M += float(weight @ res.value)
        eps += float(weight @ kernels.loss(w, T, ln.sigma2))
    return ChannelMoments(E_g=sums["g"], E_ggT=sums["g2"], E_gxi=sums["gxi"], E_geta=sums["geta"], E_M=E_M,
                          eps_g=eps if math.isfinite(eps) else math.nan, prox_failures=failures, candidates=None)
