"""What a state-evolution solve returns: the fixed point with its status and its memory.

A :class:`FixedPoint` holds the overlaps x = (q0, V0, m_1..m_L, th0) with F(x) = x (docs/model.md
section 3), their conjugates, the observables and a :class:`SolverStatus`; its :class:`SolverMemory`
is what a nearby solve may start from.  The solvers are in :mod:`attnphase.numerics.se.state_evolution`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphase.numerics.prox.global_prox import Candidates
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.observables import Observables
from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import original, positional_overlaps


@dataclass(frozen=True)
class SolverStatus:
    """How the fixed-point iteration ended.

    ``jump``: for a point accepted at the rule's jump scale (residual > tol, docs/method.md section
    4), the measured jump of the SE map next to it (:func:`attnphase.numerics.se.stalls.jump_at`), which
    bounds the residual; NaN otherwise.
    """

    converged: bool
    iterations: int
    residual: float
    message: str
    prox_failures: int = 0
    jump: float = math.nan


@dataclass(frozen=True, eq=False)
class SolverMemory:
    """What a solve learned that helps a nearby solve (continuation warm starts).

    Attributes:
        key: the state's symmetry group (a tuple of SymmetryElement) the memory belongs to.
        rule: the (symmetrised) quadrature rule the candidates and reduced rules refer to.
        jacobian: the quasi-Newton Jacobian of the scaled residual on the symmetric subspace
            (None if the solve ended without one).
        candidates: the distinct proximal minima per node of the last evaluation (global prox).
        reduced_rules: the rule reduced to orbit representatives, by symmetry group (reducing
            costs more than a polished SE step, so continuation passes them on).
        fixed: the order parameter held fixed by the solve (``"th0"`` for ``solve_at_theta``,
            ``"m"`` for ``solve_at_m``; None at fixed alpha): the maps, and their Jacobians, differ.
    """

    key: tuple
    rule: QuadratureRule
    jacobian: np.ndarray | None
    candidates: Candidates | None
    reduced_rules: dict = field(default_factory=dict, repr=False)
    fixed: str | None = None


@dataclass(frozen=True, eq=False)
class FixedPoint:
    """A state-evolution fixed point with its conjugates, observables and status.

    ``branch`` is the label of the point actually reached (never the requested one
    relabelled); ``requested`` is what the caller asked for.
    """

    params: ModelParams
    alpha: float
    overlaps: Overlaps
    hat: HatOverlaps
    observables: Observables
    status: SolverStatus
    branch: str
    requested: str
    prox: str
    quadrature: str
    memory: SolverMemory | None = field(default=None, repr=False)

    @property
    def record(self) -> dict[str, Any]:
        """The CLI's JSON/CSV record: q = |Q|^2/d, theta = Q.Q*/d, m = p_1.Q/sqrt(d), V = V0 (a whitened
        model's m mapped back to the tokens' variables, m_h = B m_v: docs/model.md section 7)."""
        p = self.params
        return {
            "alpha": self.alpha,
            "omega": p.omega,
            "sigma": original(p).sigma_value,
            "lam": p.lam,
            "branch": self.branch,
            "q": self.overlaps.q0,
            "m": float(positional_overlaps(p, self.overlaps.m)[0]),
            "V": self.overlaps.V0,
            "theta": self.overlaps.th0,
            "eps_g": self.observables.eps_g,
            "e_t": self.observables.e_t,
            "eps_lin": self.observables.eps_lin,
            "converged": bool(self.status.converged),
            "iterations": int(self.status.iterations),
            "residual": float(self.status.residual),
        }
