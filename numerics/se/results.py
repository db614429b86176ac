"""What a state-evolution solve returns at every rank: the :class:`FixedPoint` (overlaps with F(x) = x,
conjugates, observables) with its :class:`SolverStatus` and its :class:`SolverMemory`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnphase.numerics.prox.global_prox import Candidates
from attnphase.numerics.quadrature.rules import QuadratureRule, make_rule
from attnphase.numerics.se.fixed_point import moved_jacobian
from attnphase.numerics.se.observables import Observables, eps_lin, observables
from attnphase.numerics.se.gauge import canonical, direction_labels, invariants
from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps, branch_label
from attnphase.numerics.se.training_objective import refined_training_objective
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import original, positional_overlaps


#: The entries of a matrix fixed point's record that get error bars (err_<key>: ``solve --error-estimate``, the census).
MATRIX_ERROR_KEYS = ("eps_g", "e_t", "q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms")


@dataclass(frozen=True)
class SolverStatus:
    """How the fixed-point iteration ended.

    ``jump``: for a point accepted at the rule's jump scale (docs/method.md section 4), the jump of the SE map
    next to it (:func:`attnphase.numerics.se.stalls.jump_at`); NaN otherwise.  ``farthest_q``: q = Tr q0 at the
    point the iterates reached farthest from the origin (:attr:`FixedPointResult.farthest
    <attnphase.numerics.se.fixed_point.FixedPointResult.farthest>`; NaN where unknown): :func:`runaway_q` reads it.
    """

    converged: bool
    iterations: int
    residual: float
    message: str
    prox_failures: int = 0
    jump: float = math.nan
    farthest_q: float = math.nan


@dataclass(frozen=True, eq=False)
class SolverMemory:
    """What a solve learned that helps a nearby solve (warm starts, continuation, the error bars' re-solves).

    Attributes:
        rule: the (symmetrised) quadrature rule the solve ran on; the candidates and reduced rules refer to it.
        jacobian: the last quasi-Newton Jacobian of the scaled residual (or None): at r = r* = 1 on the invariant
            subspace of the symmetry group ``key``, in the matrix form on ``basis`` at the point ``at``.
        key: the state's symmetry group (r = r* = 1).
        candidates: the distinct proximal minima per node of the last evaluation (global prox; r = r* = 1).
        reduced_rules: the rule reduced to orbit representatives, by symmetry group (r = r* = 1).
        fixed: the order parameter held fixed by the solve (``"th0"``, ``"m"``; None at fixed alpha).
        basis, at: the matrix form's basis B0 (n x k) and point x0 (n,) of ``jacobian``.
    """

    rule: QuadratureRule
    jacobian: np.ndarray | None
    key: tuple = ()
    candidates: Candidates | None = None
    reduced_rules: dict = field(default_factory=dict, repr=False)
    fixed: str | None = None
    basis: np.ndarray | None = None
    at: np.ndarray | None = None

    def moved_to(self, B1: np.ndarray, x1: np.ndarray) -> np.ndarray | None:
        """The Jacobian on the basis B1 at x1 (:func:`~attnphase.numerics.se.fixed_point.moved_jacobian`), or None
        without a basis."""
        if self.jacobian is None or self.basis is None:
            return None
        return moved_jacobian(self.jacobian, self.basis, self.at, B1, x1)


@dataclass(frozen=True, eq=False)
class FixedPoint:
    """A state-evolution fixed point with its conjugates, observables and status, at every rank.

    ``branch`` is the label of the point reached (``requested`` what the caller asked for); ``memory`` what a
    nearby solve may start from.  ``overlaps`` in the form of the rank (the matrix form in the canonical gauge),
    ``hat`` likewise (None where the first matrix step failed); ``extra`` (matrix form): e_t_direct and the
    gauge angle of the last step.  ``observables.eps_lin`` is NaN in the matrix form (r >= 2 or r* >= 2; a solve does
    not compute the baseline there, and ``record`` has no ``eps_lin``): take
    :func:`~attnphase.numerics.se.observables.eps_lin` ``(params)`` at r* = 1, ``(params,
    quadrature=config.quadrature)`` at r* >= 2, as the commands do.
    """

    params: ModelParams
    alpha: float
    overlaps: Overlaps
    hat: HatOverlaps | None  # in the form of the overlaps; None where the first matrix step failed
    observables: Observables
    status: SolverStatus
    branch: str
    requested: str
    prox: str
    quadrature: str
    memory: SolverMemory | None = field(default=None, repr=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_matrix(self) -> bool:
        """Whether the overlaps are the matrix ones (r >= 2 or r* >= 2)."""
        return self.overlaps.is_matrix

    def with_status(self, **changes: Any) -> "FixedPoint":
        """This point with the fields ``changes`` of its :class:`SolverStatus` replaced."""
        return replace(self, status=replace(self.status, **changes))

    @property
    def invariants(self) -> dict[str, list[float]]:
        """The gauge invariants (:func:`~attnphase.numerics.se.gauge.invariants`)."""
        return invariants(self.overlaps)

    @property
    def record(self) -> dict[str, Any]:
        """The fixed point's own numbers: at r = r* = 1 q = |Q|^2/d, theta = Q.Q*/d, m = p_1.Q/sqrt(d) (mapped back
        to the tokens' variables for a whitened model), V = V0; otherwise (after the same alpha, omega, sigma, lam
        and the branch reached and requested) the gauge invariants, the directions' labels, the observables, the
        status and the overlaps (``overlaps`` as iterated, ``canonical_overlaps`` in
        the canonical gauge).  What ``solve --json`` prints (docs/reference/outputs.md) is built from it: the
        command adds the model, the requested branch, ``err_*``
        (:func:`~attnphase.numerics.errors.quadrature_error.fixed_point_error`) and ``reason``, names the canonical
        overlaps ``overlaps``, and leaves the numbers null where the solve did not converge (here they are the last
        iterate's, ``converged`` False)."""
        if self.is_matrix:
            return self._matrix_record()
        p, ov, obs, status = self.params, self.overlaps, self.observables, self.status
        return {
            "alpha": self.alpha, "omega": p.omega, "sigma": original(p).sigma_value, "lam": p.lam,
            "branch": self.branch, "q": ov.q0, "m": float(positional_overlaps(p, ov.m)[0]), "V": ov.V0,
            "theta": ov.th0, "eps_g": obs.eps_g, "e_t": obs.e_t, "eps_lin": obs.eps_lin,
            "converged": bool(status.converged), "iterations": int(status.iterations),
            "residual": float(status.residual),
        }

    def _matrix_record(self) -> dict[str, Any]:
        extra = dict(self.extra)
        e_t_direct = extra.pop("e_t_direct", math.nan)
        return {
            "alpha": self.alpha, "omega": self.params.omega, "sigma": original(self.params).sigma_value,
            "lam": self.params.lam, "branch": self.branch, "requested_branch": self.requested,
            "r": self.params.r, "r_star": self.overlaps.r_star, **self.invariants,
            "directions": direction_labels(self.overlaps),
            "eps_g": self.observables.eps_g, "e_t": self.observables.e_t, "e_t_direct": e_t_direct,
            "converged": self.status.converged, "iterations": self.status.iterations,
            "residual": self.status.residual, "prox_failures": self.status.prox_failures,
            "quadrature": self.quadrature, **extra, "overlaps": self.overlaps.as_dict(),
            "canonical_overlaps": canonical(self.overlaps).as_dict(),
        }


def fixed_point_from(smap: Any, result: Any, ov0: Overlaps, requested: str) -> FixedPoint:
    """The fixed-point solver's ``result`` on the SE map ``smap`` as a :class:`FixedPoint` (without an evaluation:
    ``ov0``, NaN observables); e_t on ``config.e_t_quadrature`` where set (r = r* = 1); in the matrix form
    ``extra`` holds e_t_direct = lambda/2 tr q0 + alpha E[loss(h_hat)] and the gauge angle."""
    params, cfg, matrix = smap.params, smap.cfg, smap.is_matrix
    prox = cfg.prox
    ev = result.evaluation
    nan = math.nan
    farthest_q = smap.unpack(result.farthest).q if result.farthest is not None else nan
    if ev is None:
        return FixedPoint(
            params=params, alpha=smap.variant.alpha, overlaps=ov0,
            hat=None if matrix else HatOverlaps(*(np.full(params.L, nan) for _ in range(4))),
            observables=Observables(nan, nan, nan if matrix else eps_lin(params)),
            status=SolverStatus(False, result.evaluations, nan,
                                result.message if matrix else "the first SE step left the admissible region",
                                farthest_q=farthest_q),
            branch=branch_label(ov0), requested=requested, prox=prox, quadrature=smap.rule.name,
            extra={"e_t_direct": nan} if matrix else {},
        )
    step = ev.data
    ov = smap.unpack(ev.x)
    obs = observables(params, step.alpha, ov, step.hat, step.moments)
    failures = step.moments.prox_failures
    extra: dict[str, Any] = {}
    if matrix:
        extra = {"e_t_direct": 0.5 * params.lam * ov.q + step.alpha * step.moments.E_loss,
                 "gauge_angle": step.angle}
        memory = smap.jacobian_now()
    else:
        if cfg.e_t_quadrature is not None and result.converged:
            fine = refined_training_objective(params, step.alpha, ov, step.hat,
                                              make_rule(params.L, cfg.e_t_quadrature), cfg)
            obs, failures = replace(obs, e_t=fine.e_t, E_M=fine.E_M), failures + fine.prox_failures
        memory = None if smap.key is None else SolverMemory(
            smap.rule, smap.jacobian_now(), key=smap.key, candidates=smap.candidates, reduced_rules=smap.reduced,
            fixed=smap.variant.name)
    status = SolverStatus(result.converged, result.evaluations, ev.residual, result.message, failures,
                          farthest_q=farthest_q)
    return FixedPoint(
        params=params, alpha=step.alpha, overlaps=ov, hat=step.hat, observables=obs, status=status,
        branch=branch_label(ov), requested=requested, prox=prox, quadrature=smap.rule.name, memory=memory,
        extra=extra,
    )


#: Without a ridge (lam = 0), a solve that did not converge and whose iterates reached q = Tr q0 above this many
#: times the teacher's (rho0 r*) ran away: nothing bounds the student's norm (:func:`runaway_q`).
RUNAWAY_Q = 100.0


def runaway_q(fp: FixedPoint) -> float:
    """q = Tr q0 at the point the iterates of ``fp``'s solve reached farthest from the origin (its best point's where
    larger) where that solve ran away: not converged, lam = 0, and q above :data:`RUNAWAY_Q` rho0 r*; NaN otherwise.  Without a ridge the
    SE map can grow q by a factor at every step (lam = 0, omega = 0.3, alpha = 0.5 on the positional branch: 0.1,
    14, 190, ..., 5e16), so that no fixed point is reached from the start and the best point is the start itself."""
    p, q = fp.params, fp.overlaps.q
    if math.isfinite(fp.status.farthest_q):
        q = max(q, fp.status.farthest_q)
    if fp.status.converged or p.lam != 0 or not q > RUNAWAY_Q * p.rho0 * p.r_star:
        return math.nan
    return q
