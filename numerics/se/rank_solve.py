"""Solving the rank-r state evolution (docs/model.md section 7): the staged solve from a start and the fixed point.

:func:`solve_rank` iterates the SE map of :mod:`attnphase.numerics.se.rank_se` (:class:`~attnphase.numerics.se.rank_se.
RankSEMap`) with the quasi-Newton of :mod:`attnphase.numerics.se.rank_newton`: without ``init`` it is staged --
projected on the start's reflection pattern over block 0 of the rule, then over the whole rule, then
unprojected (docs/method.md section 11, rank r >= 2) -- and a solve that does not converge is retried from its best point
with more damping.  :class:`RankFixedPoint` is its result: overlaps in the canonical gauge, hats, observables,
gauge invariants and the solver's status.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import rule_blocks, split_block
from attnphase.numerics.se.rank_newton import CarriedJacobian, RankFixedPointSolver
from attnphase.numerics.se.rank_overlaps import (
    RankOverlaps, branch_label, canonical, direction_labels, invariants, reflection_pattern,
)
from attnphase.numerics.se.rank_se import (
    RANK_MIN_DAMPING, RETRY_DAMPING, RankHats, RankRule, RankSEMap, admissible, make_rank_rule,
)
from attnphase.numerics.se.rank_starts import (
    RANK_BRANCHES, embedded_start, initial_rank_overlaps, noise_axes, settle_noise_axes, teacher_rank,
)
from attnphase.theory import rank as rk
from attnphase.theory.params import ModelParams


@dataclass(frozen=True, eq=False)
class RankFixedPoint:
    """A rank-r fixed point: overlaps (canonical gauge), hats, observables, invariants, status."""

    params: ModelParams
    alpha: float
    branch: str
    requested: str
    overlaps: RankOverlaps
    hat: RankHats | None
    eps_g: float
    e_t: float
    e_t_direct: float
    E_M: float
    converged: bool
    residual: float
    evaluations: int
    message: str
    prox_failures: int
    quadrature: str
    extra: dict[str, Any] = field(default_factory=dict)
    jacobian: CarriedJacobian | None = None  # the last quasi-Newton Jacobian (to seed a nearby solve)

    @property
    def invariants(self) -> dict[str, list[float]]:
        return invariants(self.overlaps)

    def record(self) -> dict[str, Any]:
        """Plain-JSON summary: invariants, directions, observables, status."""
        out: dict[str, Any] = {
            "alpha": self.alpha, "branch": self.branch, "requested": self.requested,
            "r": self.params.r, "r_star": teacher_rank(self.params),
        }
        out.update(self.invariants)
        out["directions"] = direction_labels(self.overlaps)
        out.update({
            "eps_g": self.eps_g, "e_t": self.e_t, "e_t_direct": self.e_t_direct,
            "converged": self.converged, "iterations": self.evaluations, "residual": self.residual,
            "prox_failures": self.prox_failures, "quadrature": self.quadrature,
            **self.extra, "overlaps": self.overlaps.as_dict(), "canonical_overlaps": canonical(self.overlaps).as_dict(),
        })
        return out


def solve_rank(params: ModelParams, alpha: float, branch: str = "semantic", *,
               config: SolverConfig | None = None, init: RankOverlaps | None = None,
               start: str = "embedded", jacobian: CarriedJacobian | None = None) -> RankFixedPoint:
    """The rank-r fixed point on ``branch`` at alpha, with e_t, eps_g and a status.

    Starts from ``init`` if given, else from :func:`embedded_start` (``start="embedded"``, the
    default) or :func:`initial_rank_overlaps` (``start="cold"``).  ``config``: tol, max_iter,
    anderson settings and ``quadrature`` (a Sobol spec); its damping is raised to
    :data:`RANK_MIN_DAMPING` when smaller.  ``jacobian``: a quasi-Newton Jacobian of a nearby solve
    (:attr:`RankFixedPoint.jacobian`) to start from.

    Without ``init`` the solve is staged (:func:`_staged`): on the start's reflection pattern over block 0
    of the rule (for a rule of R >= 2 scrambling blocks), then over the whole rule, then unprojected, each
    stage warm from the last with its Jacobian; where a stage does not converge, the plain solve from the
    start follows (every evaluation counted)."""
    cfg = config or SolverConfig()
    if cfg.damping < RANK_MIN_DAMPING:
        cfg = cfg.replace(damping=RANK_MIN_DAMPING)
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha}")
    if branch not in RANK_BRANCHES:
        raise ValueError(f"branch must be one of {RANK_BRANCHES}, got {branch!r}")
    if cfg.prox != "global":
        raise ValueError("the rank-r state evolution implements the global proximal map only")
    rs = teacher_rank(params)
    rule = make_rank_rule(params.L, params.r, rs, cfg.quadrature)
    if start not in ("embedded", "cold"):
        raise ValueError(f"start must be 'embedded' or 'cold', got {start!r}")
    if init is not None:
        ov0 = init
    elif start == "embedded":
        ov0 = embedded_start(params, float(alpha), branch, cfg)
    else:
        ov0 = initial_rank_overlaps(params, branch)
    if not admissible(ov0, params.rho0):
        raise ValueError(f"initial overlaps are not admissible: {ov0.as_dict()}")
    if init is not None:
        return _solve(params, float(alpha), branch, cfg, rule, ov0, warm=True, jacobian=jacobian)
    warm = start == "embedded"
    stages = rule_blocks(cfg.quadrature)[:1] if split_block(cfg.quadrature)[1] is None else []
    first = make_rank_rule(params.L, params.r, rs, stages[0]) if stages else rule
    settled = 0
    if warm:
        ov0, settled = settle_noise_axes(ov0, noise_axes(params, branch),
                                         RankSEMap(params, float(alpha), branch, first, backend=cfg.backend).image)
    fp, spent, projected = _staged(params, float(alpha), branch, cfg, [first, rule] if stages else [rule], ov0, warm)
    if fp.converged:
        return dataclasses.replace(fp, evaluations=settled + spent)
    plain = _solve(params, float(alpha), branch, cfg, rule, ov0, warm=warm)
    total = settled + spent + plain.evaluations
    if not plain.converged and not projected and fp.residual < plain.residual:
        plain = fp  # the failure of least residual of the map itself on the whole rule
    return dataclasses.replace(plain, evaluations=total)


def _staged(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rules: list[RankRule],
            ov0: RankOverlaps, warm: bool) -> tuple[RankFixedPoint, int, bool]:
    """(fixed point, evaluations, whether it is a projected stage's) of the staged solve: on the start's
    reflection pattern
    (:func:`~attnphase.numerics.se.rank_overlaps.reflection_pattern`: the map projected on the coordinates
    the start's symmetry leaves free) over each rule of ``rules`` in turn (block 0, then the whole rule),
    then the unprojected map on the last rule; each stage warm from the last, with its Jacobian.

    Measured (L = 2, r = 2, r* = 1, alpha = 2, mixed, sobol10:4): from the embedded start the plain solve took
    116 - 149 evaluations, most of them far from the fixed point, with gauge rotations and sign flips of m
    between the axes; on the pattern there is no continuous gauge and 7 unknowns instead of 11, one block
    costs a quarter of the rule, and the fixed point there is the rule's up to the rule's own symmetry
    breaking (off-pattern entries ~ 1e-3 of the diagonal)."""
    pattern = reflection_pattern(ov0)
    ov, J, spent, fp = ov0, None, 0, None
    for k, rule in enumerate(rules):
        fp = _solve(params, alpha, branch, cfg, rule, ov, warm=warm or k > 0, jacobian=J, pattern=pattern)
        spent += fp.evaluations
        if not fp.converged:
            return fp, spent, True
        ov, J = fp.overlaps, fp.jacobian
    fp = _solve(params, alpha, branch, cfg, rules[-1], ov, warm=True, jacobian=J)
    spent += fp.evaluations
    if fp.converged:
        fp = dataclasses.replace(fp, message=fp.message + f" (from the fixed point on the start's "
                                 f"reflection pattern, {spent - fp.evaluations} evaluations there)")
    return fp, spent, False


def _solve(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rule: RankRule, ov0: RankOverlaps,
           warm: bool, jacobian: CarriedJacobian | None = None, pattern: np.ndarray | None = None) -> RankFixedPoint:
    """One solve of the (projected) map on ``rule`` from ``ov0``, retried once from its best point."""
    smap = RankSEMap(params, alpha, branch, rule, pattern, backend=cfg.backend)
    smap.seed = jacobian
    result = RankFixedPointSolver(smap, cfg).solve(ov0.to_vector(), warm=warm)
    if not result.converged and result.evaluation is not None and cfg.damping < RETRY_DAMPING:
        # measured (L = 2, r = 2, alpha = 2, positional): Anderson at damping 0.5 stalls at residual
        # 0.2; at damping 0.7 it converges -- a second attempt from the best point, more damped and
        # with a full proximal search at every evaluation
        more = cfg.replace(damping=RETRY_DAMPING)
        smap.full_only = True  # and every evaluation exact: the polished map's noise can stall quasi-Newton
        again = RankFixedPointSolver(smap, more).solve(result.evaluation.x, warm=False)
        if again.converged or again.residual < result.residual:
            result = type(again)(again.evaluation, again.converged, result.evaluations + again.evaluations,
                                 again.message + " (second attempt, damping %g)" % RETRY_DAMPING)
    return _finish(smap, result, ov0)


def _finish(smap: RankSEMap, result: Any, ov0: RankOverlaps) -> RankFixedPoint:
    p, alpha = smap.params, smap.alpha
    ev = result.evaluation
    nan = math.nan
    if ev is None:
        return RankFixedPoint(p, alpha, branch_label(ov0), smap.branch, ov0, None, nan, nan, nan, nan, False, nan,
                              result.evaluations, result.message, 0, smap.rule.name)
    ov = smap.unpack(ev.x)
    hat, mom, angle = ev.data
    phi = rk.free_entropy(ov.q0, ov.V0, ov.m, ov.th0, hat.qhat, hat.mhat, hat.thhat, hat.Vhat, p.sigma2,
                          p.P_array, p.lam, p.rho0, alpha, mom.E_M)
    e_direct = 0.5 * p.lam * float(np.trace(ov.q0)) + alpha * mom.E_loss
    return RankFixedPoint(
        p, alpha, branch_label(ov), smap.branch, ov, hat, mom.eps_g, -phi, e_direct, mom.E_M,
        bool(result.converged), float(ev.residual), result.evaluations, result.message,
        mom.prox_failures, smap.rule.name, {"gauge_angle": angle}, smap.kept,
    )
