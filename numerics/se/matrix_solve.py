"""The matrix state evolution's path of :func:`~attnphase.numerics.se.state_evolution.solve` (r >= 2 or r* >= 2,
docs/model.md section 7): the staged solve from a start (docs/method.md section 11) and its fixed point.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnphase.numerics.capabilities import check
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import QuadratureRule, matrix_rule, parse_rule_spec, rule_blocks, split_block
from attnphase.numerics.se.fixed_point import FixedPointSolver
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.gauge import reflection_pattern
from attnphase.numerics.se.se_map import FixedAlpha, SEMap, admissible, model_rule
from attnphase.numerics.se.starts import MATRIX_STARTS, check_branch, noise_axes, settle_noise_axes, teacher_rank
from attnphase.numerics.se.results import FixedPoint, SolverMemory, fixed_point_from
from attnphase.numerics.se.stalls import at_jump_scale
from attnphase.theory.params import ModelParams

#: The least damping the matrix map is iterated with.
MATRIX_MIN_DAMPING = 0.5

#: The damping of the second attempt of a solve that did not converge.
SECOND_ATTEMPT_DAMPING = 0.8

def matrix_config(params: ModelParams, alpha: float, branch: str, config: SolverConfig, start: str) -> SolverConfig:
    """``config`` checked for a matrix solve, its damping raised to :data:`MATRIX_MIN_DAMPING` when smaller
    (ValueError on a branch, prox or start the matrix state evolution does not have)."""
    cfg = config.replace(damping=max(config.damping, MATRIX_MIN_DAMPING))
    check_branch(branch)
    if cfg.prox == "local":
        check("local_prox", params.r, teacher_rank(params), cfg.prox)
    if cfg.backend == "torch":
        check("torch_backend", params.r, teacher_rank(params))
    if start not in MATRIX_STARTS:
        raise ValueError(f"start must be 'embedded' or 'cold', got {start!r}")
    return cfg


def solve_matrix(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, ov0: Overlaps, *,
                 warm: bool, staged: bool, jacobian: SolverMemory | None = None, coarse: bool = True) -> FixedPoint:
    """The rank-r fixed point on ``branch`` at alpha from ``ov0``, with e_t, eps_g and a status.

    ``cfg`` is :func:`matrix_config`'s.  ``warm``: ``ov0`` is close to the fixed point; ``staged``: ``ov0`` is a
    start, not a given init; ``jacobian``: a nearby solve's ``FixedPoint.memory``, used from a given init.
    A staged solve (:func:`_staged`) that does not converge is followed by the plain solve from the start, then
    (``coarse``, a branch of COARSE_RETRY_BRANCHES) by the solve from a coarser rule's fixed point
    (:func:`_from_coarser_rule`), every evaluation counted."""
    rule = model_rule(params, cfg)
    if not admissible(ov0, params.rho0):
        raise ValueError(f"initial overlaps are not admissible: {ov0.as_dict()}")
    if not staged:
        return _solve(params, alpha, branch, cfg, rule, ov0, warm=True, jacobian=jacobian)
    stages = rule_blocks(cfg.quadrature)[:1] if split_block(cfg.quadrature)[1] is None else []
    first = matrix_rule(params.L, params.r, teacher_rank(params), stages[0]) if stages else rule
    settled = 0
    if warm:
        ov0, settled = settle_noise_axes(ov0, noise_axes(params, branch),
                                         SEMap(params, FixedAlpha(alpha), first, cfg, branch=branch).image)
    fp, spent, projected = _staged(params, alpha, branch, cfg, [first, rule] if stages else [rule], ov0, warm)
    if fp.status.converged:
        return fp.with_status(iterations=settled + spent)
    plain = _solve(params, alpha, branch, cfg, rule, ov0, warm=warm)
    total = settled + spent + plain.status.iterations
    if not plain.status.converged and not projected and fp.status.residual < plain.status.residual:
        plain = fp  # the failure of least residual of the map itself on the whole rule
    if not plain.status.converged and coarse and branch in COARSE_RETRY_BRANCHES:
        found = _from_coarser_rule(params, alpha, branch, cfg, rule, ov0, warm)
        if found is not None:
            return found.with_status(iterations=total + found.status.iterations)
    return plain.with_status(iterations=total)


def solve_with_basin_changes(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig,
                             ov0: Overlaps) -> FixedPoint:
    """The solve of the map on the whole rule from the start ``ov0`` (``cfg`` as :func:`matrix_config` gives it),
    its finite-difference Jacobian's columns polished from w as well as from the base point's minima, so that a node
    may change basin between base and column (every other solve keeps each node in its basin there): the last try of
    a start every other path missed.  ``solve --rank 2 --teacher-rank 2 --alpha 1.5 --branch mixed`` converges so
    (e_t 0.0043877) where the staged solve, the plain one and the census's mixtures stall at residuals 2.6e-4 to
    3.0e-4 beside the rule's jumps."""
    return _solve(params, alpha, branch, cfg, model_rule(params, cfg), ov0, warm=True, frozen_columns=False)


def stalled_at_jump_scale(fp: FixedPoint, config: SolverConfig) -> FixedPoint:
    """A matrix solve from its start (``fp``, on ``config``) that did not converge, accepted as converged to the
    rule's jump scale where the map jumps by at least its residual next to it
    (:func:`~attnphase.numerics.se.stalls.at_jump_scale`, as a cold scalar solve is); else ``fp``.  The solve of
    ``attnphase solve`` (docs/method.md section 4), whose error bars tell whether the rule's blocks reproduce it."""
    if fp.status.converged or not np.isfinite(fp.status.residual) or fp.requested is None:
        return fp
    cfg = matrix_config(fp.params, fp.alpha, fp.requested, config, "embedded")
    smap = SEMap(fp.params, FixedAlpha(fp.alpha), model_rule(fp.params, cfg), cfg, branch=fp.requested)
    return at_jump_scale(fp, smap)[0]


def coarser_spec(spec: str) -> str | None:
    """The Sobol rule of half the points per block (``sobol10:4`` -> ``sobol9:4``); None below COARSE_MIN_LOG2 or
    for Gauss--Hermite."""
    base, block = split_block(spec)
    kind, args = parse_rule_spec(base)
    if kind != "sobol" or args[0] - 1 < COARSE_MIN_LOG2:
        return None
    return f"sobol{args[0] - 1}:{args[1]}:{args[2]}" + ("" if block is None else f"@{block}")


#: The branches whose failed solve is retried from a coarser rule's fixed point (on the semantic branch it
#: reached points of the rule's jumps: docs/general.md, "Holes").
COARSE_RETRY_BRANCHES = ("mixed",)

#: The coarsest rule :func:`coarser_spec` gives: 2^9 points per block (the default rule is sobol10:4).
COARSE_MIN_LOG2 = 9


def _from_coarser_rule(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rule: QuadratureRule,
                       ov0: Overlaps, warm: bool) -> FixedPoint | None:
    """A staged solve from ``ov0`` that did not converge on ``rule``, retried on the rule of :func:`coarser_spec`
    and, where that converges on ``branch``, on ``rule`` warm from its fixed point; None where either fails."""
    if (spec := coarser_spec(cfg.quadrature)) is None:
        return None
    c = solve_matrix(params, alpha, branch, cfg.replace(quadrature=spec), ov0, warm=warm, staged=True, coarse=False)
    if not (c.status.converged and c.branch == branch):
        return None
    fp = _solve(params, alpha, branch, cfg, rule, c.overlaps, warm=True)
    if not fp.status.converged:
        return None
    message = fp.status.message + (f" (warm from the fixed point on {spec}, {c.status.iterations} evaluations there: "
                                   f"the staged solve from the start did not converge on {cfg.quadrature})")
    return fp.with_status(message=message, iterations=fp.status.iterations + c.status.iterations)


def _staged(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rules: list[QuadratureRule],
            ov0: Overlaps, warm: bool) -> tuple[FixedPoint, int, bool]:
    """(fixed point, evaluations, whether it is a projected stage's) of the staged solve: the map projected on
    the start's reflection pattern over each rule of ``rules`` (block 0, the whole rule), then unprojected on
    the last; each stage warm from the last, with its Jacobian."""
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
        fp = fp.with_status(message=message)
    return fp, spent, False


def _solve(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, rule: QuadratureRule, ov0: Overlaps,
           warm: bool, jacobian: SolverMemory | None = None, pattern: np.ndarray | None = None,
           frozen_columns: bool = True) -> FixedPoint:
    """One solve of the (projected) map on ``rule`` from ``ov0``, retried once from its best point
    (``frozen_columns``: :class:`~attnphase.numerics.se.se_map.SEMap`'s)."""
    smap = SEMap(params, FixedAlpha(alpha), rule, cfg, jacobian, branch=branch, pattern=pattern,
                 frozen_columns=frozen_columns)
    result = FixedPointSolver(smap, cfg, consistent_differences=True).solve(ov0.to_vector(), warm=warm)
    if not result.converged and result.evaluation is not None and cfg.damping < SECOND_ATTEMPT_DAMPING:
        # a second attempt from the best point, more damped and with every evaluation exact
        more = cfg.replace(damping=SECOND_ATTEMPT_DAMPING)
        smap.full_only = True
        again = FixedPointSolver(smap, more, consistent_differences=True).solve(result.evaluation.x, warm=False)
        farthest = max((x for x in (result.farthest, again.farthest) if x is not None), default=None,
                       key=lambda x: float(np.max(np.abs(x))))  # of both attempts, whichever is reported
        if again.converged or again.residual < result.residual:
            result = replace(again, evaluations=result.evaluations + again.evaluations, farthest=farthest,
                             message=again.message + " (second attempt, damping %g)" % SECOND_ATTEMPT_DAMPING)
        else:
            result = replace(result, farthest=farthest)
    return fixed_point_from(smap, result, ov0, branch)
