"""The state evolution of a rank-r student and a rank-r* teacher (docs/model.md section 7).

One SE step at matrix overlaps x = (q0, V0, m, th0) (:class:`Overlaps`' matrix form), on a quadrature rule
over the L (r + r*) standard Gaussians (xi_l in R^r, eta_l in R^{r*}):

    w, h*   = channel_fields(x)                         (theory/matrix_channel.py)
    h_hat   = global_prox(w, V, T(h*))                  (numerics/prox/global_prox.py)
    g_l     = V_l^{-1} (h_hat_l - w_l);  E[g g^T], E[g], E[g eta^T], E[g xi^T], E[M]
    hats    = update_hat(...)  projected on the branch's invariant subspace   (numerics/se/updates.py)
    F(x)    = update(hats)     the ridge prior                                (numerics/se/updates.py)

Branches (``branch``): the subspaces m = 0 and th0 = 0 are exactly invariant under the SE map (the
symmetries (xi, eta) -> -(xi, eta) at m = 0 and eta -> -eta at th0 = 0 make E[g] = 0, resp.
E[g eta^T] = 0), so ``semantic`` sets mhat = 0, ``positional`` thhat = 0, ``agnostic`` both, and
``mixed`` nothing -- the projection the r = 1 solver makes by symmetrisation.  The map is iterated by
the generic :class:`~attnphase.numerics.se.fixed_point.FixedPointSolver` as it is (equivariant under
the rotation gauge); quasi-Newton works transversally to the gauge orbits (:class:`RankSEMap`).
:func:`~attnphase.numerics.se.matrix_solve.solve_matrix` (numerics/se/matrix_solve.py) stages a solve of this map from a
start (projected on the start's reflection pattern, on one block of the rule, then the whole rule, then
unprojected; docs/method.md section 11) with the quasi-Newton of numerics/se/rank_newton.py.  Results are reported by gauge invariants and in the canonical gauge of
:func:`~attnphase.numerics.se.gauge.canonical` (a gauge-fixed map was tried first and
rejected: its fixed points include "relative" ones, F(x) = O x with O != I -- at r = 1 it accepted
a positional point whose image had m -> -m, with e_t < 0).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc

from attnphase.numerics.se.fixed_point import Evaluation, scaled_residual
from attnphase.numerics.se.rank_newton import CarriedJacobian
from attnphase.numerics.quadrature.rules import check_rule_size, parse_rule_spec, split_block
from attnphase.numerics.se.overlaps import Overlaps, RankHats
from attnphase.numerics.se.updates import update, update_hat
from attnphase.numerics.se.gauge import align_gauge, gauge_tangents
from attnphase.numerics.prox.global_prox import global_prox
from attnphase.numerics.prox.selection import Candidates
from attnphase.numerics.se.starts import RANK_BRANCHES, initial_overlaps, teacher_rank, with_ranks
from attnphase.theory import matrix_channel as rk
from attnphase.theory.params import ModelParams
from attnphase.theory.kernels import Kernels, get_kernels
from attnphase.theory.softmax import target

#: A full multi-start proximal search every this many SE evaluations; in between, the minima of the
#: last one are polished (an approximate map; a converged point is always verified by a full search).
FULL_SEARCH_EVERY = 8

#: The least damping the rank-r map is iterated with (measured at L = 2, r = 2, alpha = 2: undamped
#: Anderson left the admissible region from the semantic start; damping 0.5 converged in 23 steps).
RANK_MIN_DAMPING = 0.5

#: The damping of the second attempt of a solve that did not converge.
RETRY_DAMPING = 0.8

#: Branches of the rank-r solver (docs/model.md section 7).
@dataclass(frozen=True, eq=False)
class RankRule:
    """Nodes xi (N, L, r), eta (N, L, r*) and weights (N,) of a rule over L (r + r*) Gaussians."""

    xi: np.ndarray
    eta: np.ndarray
    weights: np.ndarray
    name: str


def make_rank_rule(L: int, r: int, r_star: int, spec: str) -> RankRule:
    """A scrambled Sobol rule ``sobolK[:REPS:SEED]`` (2^K points x REPS scramblings, Gaussian by the
    inverse CDF) over the L (r + r*) dimensions, laid out (xi_1..xi_L, eta_1..eta_L) row-major; with
    ``@j`` its block j alone (:func:`~attnphase.numerics.quadrature.rules.rule_blocks`)."""
    kind, args = parse_rule_spec(spec)
    if kind != "sobol":
        raise ValueError(f"the rank-r state evolution uses scrambled Sobol rules (sobolK[:REPS:SEED]), got {spec!r}")
    check_rule_size(L, spec)
    log2_n, reps, seed = args
    dim = L * (r + r_star)
    rng = np.random.default_rng(seed)
    blocks = [ndtri(np.clip(qmc.Sobol(d=dim, scramble=True, seed=rng).random_base2(log2_n), 1e-300, 1 - 1e-16))
              for _ in range(reps)]
    block = split_block(spec)[1]
    z = np.concatenate(blocks if block is None else blocks[block:block + 1], axis=0)
    N = z.shape[0]
    xi = np.ascontiguousarray(z[:, :L * r].reshape(N, L, r))
    eta = np.ascontiguousarray(z[:, L * r:].reshape(N, L, r_star))
    return RankRule(xi, eta, np.full(N, 1.0 / N), f"sobol2^{log2_n}x{reps}(seed={seed}, dim={dim})"
                    + ("" if block is None else f"@{block}"))


@dataclass(frozen=True, eq=False)
class RankMoments:
    """Channel averages at one state: E[g g^T] (L, r, r), E[g] (L, r), E[g eta^T] (L, r, r*),
    E[g xi^T] (L, r, r), E[M], E[loss(h_hat)] (the training loss), eps_g = E[loss(w)], prox failures."""

    E_ggT: np.ndarray
    E_g: np.ndarray
    E_geta: np.ndarray
    E_gxi: np.ndarray
    E_M: float
    E_loss: float
    eps_g: float
    prox_failures: int


def channel_moments(k: Kernels, params: ModelParams, ov: Overlaps, rule: RankRule,
                    previous: np.ndarray | None = None, polish: bool = False,
                    backend: str = "auto") -> tuple[RankMoments, np.ndarray]:
    """All channel averages at ``ov`` with one global proximal solve over the rule's nodes, and the
    minimisers h_hat (N, L, r).  ``previous``: the minimisers of an earlier search at a nearby state,
    an extra start of a full search, or (``polish``) the only start besides w.  ``backend``: of the
    proximal descent (numerics/prox/global_prox.py), normally ``SolverConfig.backend``."""
    s2 = params.sigma2
    w, hstar = rk.channel_fields(rule.xi, rule.eta, ov.q0, ov.m, ov.th0, s2, params.rho0)
    T = target(hstar, params.omega, params.A_array)
    candidates = None if previous is None else Candidates(np.arange(previous.shape[0]), previous)
    res, _ = global_prox(k, w, ov.V0, T, s2, hstar, candidates=candidates, full_search=not polish, backend=backend)
    Vinv = np.linalg.inv(ov.V0)
    g = np.einsum("ab,nlb->nla", Vinv, res.h - w) / s2[None, :, None]
    wt = rule.weights
    return RankMoments(
        E_ggT=np.einsum("n,nla,nlb->lab", wt, g, g),
        E_g=np.einsum("n,nla->la", wt, g),
        E_geta=np.einsum("n,nla,nlb->lab", wt, g, rule.eta),
        E_gxi=np.einsum("n,nla,nlb->lab", wt, g, rule.xi),
        E_M=float(wt @ res.value),
        E_loss=float(wt @ k.loss(res.h, T, s2)),
        eps_g=float(wt @ k.loss(w, T, s2)),
        prox_failures=int((~res.converged).sum()),
    ), res.h


def admissible(ov: Overlaps, rho0: float) -> bool:
    """Finite, q0 and V0 positive definite, rho0 I - th0^T q0^{-1} th0 positive definite."""
    x = ov.to_vector()
    if not np.all(np.isfinite(x)):
        return False
    try:
        if np.linalg.eigvalsh(ov.V0).min() <= 0:
            return False
        rk.check_state(ov.q0, ov.th0, rho0)
    except (ValueError, np.linalg.LinAlgError):
        return False
    return True


class RankSEMap:
    """The SE map x -> F(x) on matrix overlaps as the generic fixed-point solver iterates it.

    F is equivariant under the gauge (numerics/se/gauge.py), so its fixed points come in
    orbits and its Jacobian has the eigenvalue 1 along them: :meth:`subspace` gives quasi-Newton
    the coordinates the branch leaves free minus the orbit's tangent directions at x (the
    generators of SO(r) x SO(r*) applied to x), on which the Jacobian is regular.  Convergence is
    judged on the full residual F(x) - x, so a point whose image is only a rotation of itself is
    never accepted.  ``backend``: of the proximal descent (full searches and polishes alike), normally
    ``SolverConfig.backend``; ``"torch"`` (which the precise tier picks on a GPU for the rank-1 solves)
    runs it on ``"auto"``: there is no torch rank-r descent (numerics/prox/global_prox.py).
    """

    def __init__(self, params: ModelParams, alpha: float, branch: str, rule: RankRule,
                 pattern: np.ndarray | None = None, backend: str = "auto"):
        self.params, self.alpha, self.branch, self.rule = params, alpha, branch, rule
        self.backend = "auto" if backend == "torch" else backend
        self.pattern = pattern  # iterate F projected on these coordinates (:func:`reflection_pattern`)
        self.L, self.r, self.rs = params.L, params.r, teacher_rank(params)
        self.kernels = get_kernels(params.L, params.r, channel=params.channel)
        self.previous: np.ndarray | None = None  # minimisers of the last full search
        self.since_full = 0
        self.full_only = False  # set when a polished fixed point was rejected by a full search
        self.frozen = False  # within :meth:`polishing`
        self.seed: CarriedJacobian | None = None  # a Jacobian from another solve, used once
        self.kept: CarriedJacobian | None = None  # the last quasi-Newton Jacobian, with its basis
        self._basis: tuple[np.ndarray, np.ndarray] | None = None  # (x, B) of the last :meth:`subspace`

    def unpack(self, x: np.ndarray) -> Overlaps:
        return Overlaps.from_vector(x, self.L, self.r, self.rs)

    def step(self, ov: Overlaps, full: bool = True) -> tuple[Overlaps, RankHats, RankMoments]:
        """The map F(ov), its hats and moments: a full proximal search (``full``), else a polish of the
        last full search's minima (approximate; :data:`FULL_SEARCH_EVERY`)."""
        mom, h = channel_moments(self.kernels, self.params, ov, self.rule, self.previous, polish=not full,
                                 backend=self.backend)
        if full:
            self.previous, self.since_full = h, 0
        elif not self.frozen:
            self.since_full += 1
        hat = update_hat(self.params, self.alpha, ov, mom, self.branch)
        return update(self.params, hat), hat, mom

    def evaluate(self, x: np.ndarray, exact: bool = False) -> Evaluation | None:
        ov = self.unpack(x)
        if not admissible(ov, self.params.rho0):
            return None
        if self.frozen and self.previous is not None:
            full = exact
        else:
            full = exact or self.full_only or self.previous is None or self.since_full >= FULL_SEARCH_EVERY - 1
        try:
            new, hat, mom = self.step(ov, full)
        except (ValueError, np.linalg.LinAlgError):
            return None
        if not np.all(np.isfinite(new.to_vector())):
            return None
        if self.pattern is not None:  # no continuous gauge on the pattern: project, do not align
            fx, angle = np.where(self.pattern, new.to_vector(), 0.0), 0.0
        else:
            aligned, angle = align_gauge(new, ov)
            fx = aligned.to_vector()
        return Evaluation(x.copy(), fx, scaled_residual(x, fx), full, (hat, mom, angle))

    def admissible(self, x: np.ndarray) -> bool:
        return admissible(self.unpack(x), self.params.rho0)

    def image(self, ov: Overlaps) -> tuple[Overlaps, float] | None:
        """(F(ov) aligned to ov's gauge, the scaled residual) from a full search, or None where F is not defined."""
        ev = self.evaluate(ov.to_vector(), exact=True) if admissible(ov, self.params.rho0) else None
        return None if ev is None else (self.unpack(ev.fx), ev.residual)

    def _free(self, n: int) -> list[int]:
        r, L = self.r, self.L
        k = r * (r + 1) // 2
        free = list(range(2 * k))
        if self.branch in ("positional", "mixed"):
            free += list(range(2 * k, 2 * k + L * r))
        if self.branch in ("semantic", "mixed"):
            free += list(range(2 * k + L * r, n))
        return free

    def subspace(self, x: np.ndarray) -> np.ndarray:
        """Orthonormal basis of the branch's free coordinates orthogonal to the gauge orbit's tangents at x."""
        ov = self.unpack(x)
        free = self._free(x.size)
        if self.pattern is not None:
            free = [i for i in free if self.pattern[i]]
        C = np.zeros((x.size, len(free)))
        C[free, np.arange(len(free))] = 1.0
        tang = gauge_tangents(ov) if self.pattern is None else np.zeros((x.size, 0))
        if tang.shape[1]:
            tang = C @ (C.T @ tang)
            U, sv, _ = np.linalg.svd(tang, full_matrices=False)
            U = U[:, sv > 1e-8 * max(1.0, float(np.abs(x).max()))]
            C = C - U @ (U.T @ C)
            Uc, svc, _ = np.linalg.svd(C, full_matrices=False)
            C = Uc[:, svc > 0.5]
        self._basis = (np.array(x, copy=True), C)
        return C

    def jacobian_seed(self, n: int) -> np.ndarray | None:
        """The carried Jacobian (:attr:`seed`, once) moved to the basis of the last :meth:`subspace`."""
        seed, self.seed = self.seed, None
        if seed is None or self._basis is None:
            return None
        J = seed.moved_to(self._basis[1], self._basis[0])
        return J if J is not None and J.shape == (n, n) and np.all(np.isfinite(J)) else None

    def keep_jacobian(self, J: np.ndarray) -> None:
        if self._basis is not None and J.shape[0] == self._basis[1].shape[1]:
            self.kept = CarriedJacobian(np.array(J, copy=True), self._basis[1], self._basis[0])

    @contextmanager
    def polishing(self) -> Iterator[None]:
        """Every inexact evaluation within polishes the last full search's minima (none is a full search
        and none counts towards the next one): the finite differences of numerics/se/rank_newton.py."""
        before, self.frozen = self.frozen, True
        try:
            yield
        finally:
            self.frozen = before

    def distrust_approximation(self) -> None:
        """Full proximal searches from now on (a polished iteration converged to a point of its own)."""
        self.full_only = True


#: This module's names, and the starts ones its importers take from here (the solve itself:
#: :func:`attnphase.numerics.se.state_evolution.solve`).
__all__ = [
    "RANK_BRANCHES", "RankMoments", "RankRule", "RankSEMap", "admissible", "align_gauge",
    "channel_moments", "gauge_tangents", "initial_overlaps", "make_rank_rule",
    "teacher_rank", "with_ranks",
]
