"""The matrix state evolution's path of :func:`~attnphase.numerics.se.state_evolution.solve` (r >= 2 or r* >= 2,
docs/model.md section 7): the staged solve from a start, and its fixed point.

:func:`solve_matrix` iterates the SE map (:class:`~attnphase.numerics.se.se_map.SEMap`, matrix form) with the
fixed-point solver's consistent finite differences (:mod:`attnphase.numerics.se.fixed_point`): from a start that
is not a warm start it is staged -- projected on the start's reflection pattern over block 0 of the rule, then
over the whole rule, then unprojected (docs/method.md section 11, rank r >= 2) -- and a solve that does not
converge is retried from its best point with more damping.  Its result is the one
:class:`~attnphase.numerics.se.results.FixedPoint` of every rank: overlaps in the canonical gauge, hats,
observables, the solver's status, and as ``memory`` the last quasi-Newton Jacobian with its basis (a
:class:`~attnphase.numerics.se.results.SolverMemory`, to seed a nearby solve).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from attnphase.numerics.capabilities import check
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import QuadratureRule, matrix_rule, parse_rule_spec, rule_blocks, split_block
from attnphase.numerics.se.fixed_point import FixedPointSolver
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.gauge import reflection_pattern
from attnphase.numerics.se.se_map import FixedAlpha, SEMap, admissible, model_rule
from attnphase.numerics.se.starts import MATRIX_BRANCHES, noise_axes, settle_noise_axes, teacher_rank
from attnphase.numerics.se.results import FixedPoint, SolverMemory, fixed_point_from
from attnphase.theory.params import ModelParams

#: The least damping the matrix map is iterated with (measured at L = 2, r = 2, alpha = 2: undamped
#: Anderson left the admissible region from the semantic start; damping 0.5 converged in 23 steps).
MATRIX_MIN_DAMPING = 0.5

#: The damping of the second attempt of a solve that did not converge.
RETRY_DAMPING = 0.8

#: How a matrix solve starts without ``init``: from the rank-1 fixed points (embedded) or the branch's cold start.
MATRIX_STARTS = ("embedded", "cold")


def matrix_config(params: ModelParams, alpha: float, branch: str, config: SolverConfig, start: str) -> SolverConfig:
    """``config`` checked for a matrix solve, its damping raised to :data:`MATRIX_MIN_DAMPING` when smaller
    (ValueError on a branch, prox or start the matrix state evolution does not have)."""
    cfg = config
    if cfg.damping < MATRIX_MIN_DAMPING:
        cfg = cfg.replace(damping=MATRIX_MIN_DAMPING)
    if branch not in MATRIX_BRANCHES:
        raise ValueError(f"branch must be one of {MATRIX_BRANCHES}, got {branch!r}")
    if cfg.prox != "global":
        check("local_prox", params.r, teacher_rank(params), cfg.prox)
    if start not in MATRIX_STARTS:
        raise ValueError(f"start must be 'embedded' or 'cold', got {start!r}")
    return cfg


def solve_matrix(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, ov0: Overlaps, *,
                 warm: bool, staged: bool, jacobian: SolverMemory | None = None, coarse: bool = True) -> FixedPoint:
    """The rank-r fixed point on ``branch`` at alpha from ``ov0``, with e_t, eps_g and a status.

    ``cfg`` is :func:`matrix_config`'s; its ``quadrature`` is a Sobol spec.  ``warm``: ``ov0`` is close to the
    fixed point (a given init, or the embedded start); ``staged``: ``ov0`` is a start, not a given init.
    ``jacobian``: a quasi-Newton Jacobian of a nearby solve (its ``FixedPoint.memory``), used from a given init.

    A staged solve (:func:`_staged`) runs on the start's reflection pattern over block 0 of the rule (for a rule
    of R >= 2 scrambling blocks), then over the whole rule, then unprojected, each stage warm from the last with
    its Jacobian; where a stage does not converge, the plain solve from the start follows (every evaluation
    counted), and where that does not converge either (``coarse``, a branch of COARSE_RETRY_BRANCHES), the solve
    from the fixed point of a coarser rule (:func:`_from_coarser_rule`)."""
    rs = teacher_rank(params)
    rule = model_rule(params, cfg)
    if not admissible(ov0, params.rho0):
        raise ValueError(f"initial overlaps are not admissible: {ov0.as_dict()}")
    if not staged:
        return _solve(params, alpha, branch, cfg, rule, ov0, warm=True, jacobian=jacobian)
    stages = rule_blocks(cfg.quadrature)[:1] if split_block(cfg.quadrature)[1] is None else []
    first = matrix_rule(params.L, params.r, rs, stages[0]) if stages else rule
    settled = 0
    if warm:
        ov0, settled = settle_noise_axes(ov0, noise_axes(params, branch),
                                         SEMap(params, FixedAlpha(alpha), first, cfg, branch=branch).image)
    fp, spent, projected = _staged(params, alpha, branch, cfg, [first, rule] if stages else [rule], ov0, warm)
    if fp.status.converged:
        return _counted(fp, settled + spent)
    plain = _solve(params, alpha, branch, cfg, rule, ov0, warm=warm)
    total = settled + spent + plain.status.iterations
    if not plain.status.converged and not projected and fp.status.residual < plain.status.residual:
        plain = fp  # the failure of least residual of the map itself on the whole rule
    if not plain.status.converged and coarse and branch in COARSE_RETRY_BRANCHES:
        found = _from_coarser_rule(params, alpha, branch, cfg, rule, ov0, warm)
        if found is not None:
            return _counted(found, total + found.status.iterations)
    return _counted(plain, total)


def coarser_spec(spec: str) -> str | None:
    """The Sobol rule of half the points per scrambling block (``sobol10:4`` -> ``sobol9:4``, seeds and blocks
    kept), or None below COARSE_MIN_LOG2 points per block or for a Gauss--Hermite rule."""
    base, block = split_block(spec)
    kind, args = parse_rule_spec(base)
    if kind != "sobol" or args[0] - 1 < COARSE_MIN_LOG2:
        return None
    return f"sobol{args[0] - 1}:{args[1]}:{args[2]}" + ("" if block is None else f"@{block}")


#: The branches whose failed solve is retried from a coarser rule's fixed point.  Mixed only: there the retry is
#: measured to reach a point the rules agree on (sobol9:4 and sobol10:4: |m| 0.314 / 0.313, e_t 0.0081394 /
#: 0.0081334); at r = 2, r* = 1, alpha = 0.5 it made the semantic solve converge (sobol10:4, e_t 0.0011910) to a
#: point that 3 of the rule's 4 blocks do not reproduce (docs/general.md, "Holes"): a point of the rule's jumps.
COARSE_RETRY_BRANCHES = ("mixed",)

#: The coarsest rule :func:`coarser_spec` gives: 2^9 points per block (the default rule is sobol10:4).
COARSE_MIN_LOG2 = 9


def _from_coarser_rule(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rule: QuadratureRule,
                       ov0: Overlaps, warm: bool) -> FixedPoint | None:
    """A staged solve from ``ov0`` that did not converge on ``rule``, retried once on the coarser rule of
    :func:`coarser_spec` from the same start and, where that converges on ``branch``, on ``rule`` warm from its
    fixed point: the fixed point of ``rule``'s map this reaches (verified there as every solve's), else None.

    Measured (L = 3, P = I, omega = 0.3, r = 2, r* = 1, alpha = 2, mixed; studies/l3_mixed_point.py): from the
    matrix cold start (the rank-1 positional point is absent there, so no embedded start) the solve on sobol10:4
    stalls at residual 0.19 with |m| ~ 0.02 -- the iterates lose m before the semantic direction forms -- while
    on sobol9:4 it converges (290 evaluations) to the mixed point, |m| = 0.314 on the positional axis, and from
    there on sobol10:4 in 30 evaluations (residual 6.6e-12, |m| = 0.313, e_t 0.0081334, below the rank-2 semantic
    point's 0.0083296): a start problem of the fine rule, not a point that does not exist."""
    spec = coarser_spec(cfg.quadrature)
    if spec is None:
        return None
    c = solve_matrix(params, alpha, branch, cfg.replace(quadrature=spec), ov0, warm=warm, staged=True, coarse=False)
    if not (c.status.converged and c.branch == branch):
        return None
    fp = _solve(params, alpha, branch, cfg, rule, c.overlaps, warm=True)
    if not fp.status.converged:
        return None
    message = fp.status.message + (f" (warm from the fixed point on {spec}, {c.status.iterations} evaluations there: "
                                   f"the staged solve from the start did not converge on {cfg.quadrature})")
    return dataclasses.replace(fp, status=dataclasses.replace(fp.status, message=message,
                                                              iterations=fp.status.iterations + c.status.iterations))


def _counted(fp: FixedPoint, evaluations: int) -> FixedPoint:
    """``fp`` with ``evaluations`` SE-map evaluations in its status."""
    return dataclasses.replace(fp, status=dataclasses.replace(fp.status, iterations=evaluations))


def _staged(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rules: list[QuadratureRule],
            ov0: Overlaps, warm: bool) -> tuple[FixedPoint, int, bool]:
    """(fixed point, evaluations, whether it is a projected stage's) of the staged solve: on the start's
    reflection pattern
    (:func:`~attnphase.numerics.se.gauge.reflection_pattern`: the map projected on the coordinates
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
        spent += fp.status.iterations
        if not fp.status.converged:
            return fp, spent, True
        ov, J = fp.overlaps, fp.memory
    fp = _solve(params, alpha, branch, cfg, rules[-1], ov, warm=True, jacobian=J)
    spent += fp.status.iterations
    if fp.status.converged:
        message = fp.status.message + (f" (from the fixed point on the start's reflection pattern, "
                                       f"{spent - fp.status.iterations} evaluations there)")
        fp = dataclasses.replace(fp, status=dataclasses.replace(fp.status, message=message))
    return fp, spent, False


def _solve(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rule: QuadratureRule, ov0: Overlaps,
           warm: bool, jacobian: SolverMemory | None = None, pattern: np.ndarray | None = None) -> FixedPoint:
    """One solve of the (projected) map on ``rule`` from ``ov0``, retried once from its best point."""
    smap = SEMap(params, FixedAlpha(alpha), rule, cfg, jacobian, branch=branch, pattern=pattern)
    result = FixedPointSolver(smap, cfg, consistent_differences=True).solve(ov0.to_vector(), warm=warm)
    if not result.converged and result.evaluation is not None and cfg.damping < RETRY_DAMPING:
        # measured (L = 2, r = 2, alpha = 2, positional): Anderson at damping 0.5 stalls at residual
        # 0.2; at damping 0.7 it converges -- a second attempt from the best point, more damped and
        # with a full proximal search at every evaluation
        more = cfg.replace(damping=RETRY_DAMPING)
        smap.full_only = True  # and every evaluation exact: the polished map's noise can stall quasi-Newton
        again = FixedPointSolver(smap, more, consistent_differences=True).solve(result.evaluation.x, warm=False)
        if again.converged or again.residual < result.residual:
            result = type(again)(again.evaluation, again.converged, result.evaluations + again.evaluations,
                                 again.message + " (second attempt, damping %g)" % RETRY_DAMPING)
    return fixed_point_from(smap, result, ov0, branch)
