"""State evolution (docs/model.md sections 3 and 7): :func:`solve` at every rank, the scalar path at
r = r* = 1 and :mod:`attnphase.numerics.se.matrix_solve` with :func:`embedded_start` otherwise
(docs/method.md sections 4 and 11).  A solve that did not converge says so in its status, never relabelled.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from attnphase.numerics.config import BRANCHES, PRECISION_TIERS, SolverConfig
from attnphase.numerics.se.fixed_point import FixedPointSolver
from attnphase.numerics.se.matrix_solve import MATRIX_MIN_DAMPING, matrix_config, solve_matrix, solve_with_basin_changes
from attnphase.numerics.se.overlaps import Overlaps, on_branch_subspace
from attnphase.numerics.se.starts import (
    FIXED_MIXTURES, check_branch, check_init, check_solve_arguments, further_positional_directions, initial_overlaps,
    mixture, noise_axes, signal_axes, teacher_rank,
)
from attnphase.numerics.se.results import FixedPoint, SolverMemory, fixed_point_from
from attnphase.numerics.se.stalls import judge_agnostic_image, judge_stalled
from attnphase.numerics.quadrature.rules import QuadratureRule, rule_nodes
from attnphase.numerics.se.se_map import FixedAlpha, SEMap, admissible, model_rule
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params


#: A cold start whose first SE step leaves the admissible region is tried again with V0 times this
#: factor, up to COLD_V0_TRIES times (V0 up to 4^5 = 1024, past 1/lambda at lambda >= 1e-3).
COLD_V0_FACTOR = 4.0
COLD_V0_TRIES = 5
#: Then with q0 times that factor, up to this many times (:func:`larger_starts`).
COLD_Q0_TRIES = 3


def larger_starts(ov0: Overlaps) -> Iterator[tuple[str, Overlaps]]:
    """(what was changed, the start) for ``ov0`` with V0 x COLD_V0_FACTOR^k, k = 1 .. COLD_V0_TRIES, then with q0 x
    COLD_V0_FACTOR^k, k = 1 .. COLD_Q0_TRIES: the starts tried, in turn, where the first SE step from ``ov0`` leaves
    the admissible region (V0 far below the fixed point's gives Lam <= 0; so does q0 far below it: without the
    ridge penalty the agnostic point's q0 is 1.18 at alpha = 2, the cold start's 0.1)."""
    for factor in (COLD_V0_FACTOR ** k for k in range(1, COLD_V0_TRIES + 1)):
        yield f"V0 x {factor:g}", replace(ov0, V0=ov0.V0 * factor)
    for factor in (COLD_V0_FACTOR ** k for k in range(1, COLD_Q0_TRIES + 1)):
        yield f"q0 x {factor:g}", replace(ov0, q0=ov0.q0 * factor)


#: Cold starts of the positional branch above this alpha go through a short continuation.
POSITIONAL_COLD_ALPHA = 0.3

#: A cold semantic solve that does not reach the branch is retried from above (:func:`semantic_from_above`):
#: from the cold start at alpha * SEMANTIC_RETRY_FACTOR**k (k = 1 .. SEMANTIC_RETRY_TRIES), the first that
#: reaches the branch followed down to alpha in geometric steps of ratio SEMANTIC_RETRY_STEP.
SEMANTIC_RETRY_FACTOR = 1.25
SEMANTIC_RETRY_TRIES = 2
#: At r >= 2 or r* >= 2, where one start costs 5-20 s, the retry from 1.25 alpha only.
MATRIX_SEMANTIC_RETRY_TRIES = 1
SEMANTIC_RETRY_STEP = 1.04


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float; ValueError unless it is a finite number > 0 (a 0-d array holds one)."""
    if isinstance(alpha, np.ndarray) and alpha.ndim == 0:  # a 0-d array (np.array(2.0)) holds one number
        alpha = alpha[()]
    ok = isinstance(alpha, (int, float, np.integer, np.floating)) and not isinstance(alpha, (bool, np.bool_))
    a = float(alpha) if ok else math.nan  # a string, None or a bool is no alpha
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    return a


#: A cold solve on a rule of more nodes than this starts from the fixed point of MULTILEVEL_START.
MULTILEVEL_NODES = 2 ** 13

#: The rule of that first, coarse solve (the default tier's).
MULTILEVEL_START = PRECISION_TIERS["default"]["quadrature"]


def finish_stalled(fp: FixedPoint, cfg: SolverConfig, rule: QuadratureRule) -> FixedPoint:
    """A cold solve's result judged once more by :mod:`attnphase.numerics.se.stalls` (which re-solves with
    :func:`solve`): where it did not converge, and where it converged next to a stable agnostic point."""
    return judge_agnostic_image(judge_stalled(fp, cfg, rule, solve), cfg, rule, solve)


def solve(
    params: ModelParams,
    alpha: float,
    branch: str = "semantic",
    *,
    config: SolverConfig | None = None,
    init: Overlaps | None = None,
    rule: QuadratureRule | None = None,
    memory: SolverMemory | None = None,
    start: str | None = None,
    rank_one: Mapping[str, Overlaps | None] | None = None,
) -> FixedPoint:
    """Solve the state evolution at (params, alpha) starting on ``branch`` (or from ``init``), at every rank.

    ``config`` holds every setting; ``rule`` overrides ``config.quadrature`` (r = r* = 1 only); ``memory`` (a
    nearby solve's ``FixedPoint.memory`` on the same rule) seeds a warm start.  At r >= 2 or r* >= 2 the matrix
    solve (:func:`~attnphase.numerics.se.matrix_solve.solve_matrix`) starts from ``start`` = ``"embedded"``
    (default, :func:`embedded_start`) or ``"cold"``; at r = r* = 1 ``start`` may only be None or ``"cold"``.
    ``rank_one`` (from :func:`rank_one_overlaps` at the same alpha) holds rank-1 fixed points the embedded start
    needs, solved once for several solves.  Cold starts: docs/method.md section 4.  Correlated tokens are solved in
    their whitened form (``init`` too).  Returns a :class:`FixedPoint` whose ``status`` says whether the residual
    reached ``config.tol`` (or stalled at the rule's jump scale, its message says); ValueError for a bad alpha,
    branch, start or init.  A converged point may carry the requested label and yet lie below the branch's floor,
    the rule's noise beside the agnostic point (``attnphase solve`` then exits 1):
    :func:`~attnphase.numerics.phase.branch_end.on_branch` tells; its error bars:
    :func:`~attnphase.numerics.errors.quadrature_error.fixed_point_error`.
    """
    check_solve_arguments(params, config, start)
    alpha = check_alpha(alpha)
    cfg = config or SolverConfig()
    check_init(params, init)
    cfg.check_e_t_rule(params.L)
    if rule is not None and not isinstance(rule, QuadratureRule):
        raise ValueError(f"rule must be a QuadratureRule (make_rule(L, spec)) or None, got {type(rule).__name__}; a "
                         f"rule spec such as 'sobol8:4' goes in SolverConfig(quadrature=...)")
    if params.r != 1 or teacher_rank(params) != 1:
        return _solve_matrix(params, alpha, branch, cfg, init, rule, memory, start or "embedded", rank_one=rank_one)
    if rank_one is not None:
        raise ValueError("rank_one builds the embedded start of a solve at r >= 2 or r* >= 2; at r = r* = 1 none")
    return _solve_scalar(params, alpha, branch, cfg, init, rule, memory)


def _solve_matrix(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, init: Overlaps | None,
                  rule: QuadratureRule | None, memory: SolverMemory | None, start: str,
                  retry: bool = True, rank_one: Mapping[str, Overlaps | None] | None = None) -> FixedPoint:
    """:func:`solve` at r >= 2 or r* >= 2 (its docstring); a start (no ``init``) that misses the semantic branch
    retried from above (:func:`semantic_from_above`) unless ``retry`` is off."""
    if rule is not None:
        model_rule(params, cfg, rule)  # ValueError: the matrix form takes its rule from config.quadrature
    given = cfg
    cfg = matrix_config(params, alpha, branch, cfg, start)
    ov0 = init if init is not None else (embedded_start(params, alpha, branch, cfg, rank_one) if start == "embedded"
                                         else initial_overlaps(params, branch))
    fp = solve_matrix(params, alpha, branch, cfg, ov0, warm=init is not None or start == "embedded",
                      staged=init is None, jacobian=memory)
    if init is None and branch == "semantic" and retry and not (fp.status.converged and fp.branch == "semantic"):
        fp = semantic_from_above(fp, given, lambda a, c: _solve_matrix(params, a, branch, c, None, None, None, start,
                                                                       retry=False), tries=MATRIX_SEMANTIC_RETRY_TRIES)
    return fp


def mixed_from_mixtures(fp: FixedPoint, cfg: SolverConfig) -> FixedPoint:
    """A mixed solve at r >= 2 whose start missed the mixed branch (``fp``), retried from the census's fixed
    mixtures of the embedded mixed state (:data:`~attnphase.numerics.se.starts.FIXED_MIXTURES`, :func:`mixture`) in
    their order (docs/method.md section 4), then from the embedded start with nodes free to change basin within
    the Jacobian's columns (:func:`~attnphase.numerics.se.matrix_solve.solve_with_basin_changes`): the first solve
    that converges on the mixed branch, its message naming the start; ``fp`` where none does, its message saying
    so.  Its evaluations count every try."""
    params, alpha = fp.params, fp.alpha
    spent = fp.status.iterations
    base = embedded_start(params, alpha, "mixed", cfg)
    for start, ov in fixed_mixtures(base, params.rho0):
        near = solve(params, alpha, "mixed", config=cfg, init=ov)
        spent += near.status.iterations
        if near.status.converged and near.branch == "mixed":
            return near.with_status(message=f"converged from the mixture start {start} (one of the census's); from "
                                            f"the embedded start: {fp.status.message}", iterations=spent)
    last = solve_with_basin_changes(params, alpha, "mixed", matrix_config(params, alpha, "mixed", cfg, "embedded"),
                                    base)
    spent += last.status.iterations
    if last.status.converged and last.branch == "mixed":
        return last.with_status(message=f"converged from the embedded start with the Jacobian's columns polished from "
                                        f"w too (nodes free to change basin); from the embedded start: "
                                        f"{fp.status.message}; the census's mixture starts did not converge",
                                iterations=spent)
    return fp.with_status(iterations=spent, message=f"{fp.status.message}; none of the census's mixture starts "
                                                    "converged on the mixed branch either, nor the embedded start with "
                                                    "the Jacobian's columns polished from w too")


def fixed_mixtures(base: Overlaps, rho0: float) -> list[tuple[str, Overlaps]]:
    """(name, start) of each admissible mixture of :data:`~attnphase.numerics.se.starts.FIXED_MIXTURES` applied to
    ``base`` (:func:`~attnphase.numerics.se.starts.mixture`), in their order."""
    mixtures = [(f"th0 x{w_th:g}, m x{w_m:g}, tilt {math.degrees(tilt):.0f} deg", mixture(base, w_th, w_m, tilt))
                for w_th, w_m, tilt in FIXED_MIXTURES]
    return [(name, ov) for name, ov in mixtures if admissible(ov, rho0)]


def _solve_scalar(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig, init: Overlaps | None,
                  rule: QuadratureRule | None, memory: SolverMemory | None) -> FixedPoint:
    """:func:`solve` at r = r* = 1 (its docstring)."""
    cold = init is None
    check_branch(branch, BRANCHES)
    params = se_params(params)  # correlated tokens: their whitened form (docs/model.md section 7)
    if init is None and rule is None and rule_nodes(params.L, cfg.quadrature) > MULTILEVEL_NODES:
        # multilevel: a cold start on a large rule begins from the fixed point of the default rule
        coarse = solve(params, alpha, branch, config=replace(cfg, quadrature=MULTILEVEL_START, e_t_quadrature=None))
        if coarse.status.converged and coarse.branch == branch:
            init = coarse.overlaps
    rule = model_rule(params, cfg, rule)
    if init is None and branch == "positional" and alpha > POSITIONAL_COLD_ALPHA:
        # the positional branch is the one continued from small alpha (docs/method.md section 4)
        fp, path = None, [POSITIONAL_COLD_ALPHA]
        while path[-1] * 1.3 < alpha:  # geometric steps up to alpha
            path.append(path[-1] * 1.3)
        for a in path + [alpha]:
            # the finer e_t rule only for the point asked for, not for the path's steps
            step_cfg = cfg if a == alpha else replace(cfg, e_t_quadrature=None)
            fp = solve(params, a, branch, init=None if fp is None else fp.overlaps, config=step_cfg, rule=rule,
                       memory=None if fp is None else fp.memory)
            if not (fp.status.converged and fp.branch == branch):
                break
        if fp.alpha == alpha:
            return finish_stalled(fp, cfg, rule)
        # a path point the ridge penalty holds at Q = 0 (a fixed point at every alpha) seeds nothing: the cold start
        init = None if fp.overlaps.zero_student else fp.overlaps
        if init is not None and fp.status.converged and fp.branch == "agnostic":
            init = _agnostic_path_start(params, [a for a in path + [alpha] if a > fp.alpha], init, cfg, rule)
    ov0 = init if init is not None else initial_overlaps(params, branch)
    if not admissible(ov0, params.rho0):
        raise ValueError(f"initial overlaps are not admissible (need q0 > 0, V0 > 0, th0^2 < q0 rho0): {ov0}")
    smap = SEMap(params, FixedAlpha(alpha), rule, cfg, memory=memory if init is not None else None)
    result = FixedPointSolver(smap, cfg).solve(ov0.to_vector(), warm=init is not None)
    spent = result.evaluations
    if cold and result.evaluation is None:
        # the first step from the cold start left the domain (Lam <= 0: V0 or q0 far below the branch's): larger
        for _, ov0 in larger_starts(initial_overlaps(params, branch)):
            smap = SEMap(params, FixedAlpha(alpha), rule, cfg)
            result = FixedPointSolver(smap, cfg).solve(ov0.to_vector())
            spent += result.evaluations
            if result.evaluation is not None:
                break
    fp = fixed_point_from(smap, replace(result, evaluations=spent), ov0, branch)
    if not cold:
        return fp
    fp = finish_stalled(fp, cfg, rule)
    if branch == "semantic" and not (fp.status.converged and fp.branch == "semantic"):
        fp = semantic_followed_down(fp, cfg, rule)
    return fp


def semantic_followed_down(fp: FixedPoint, cfg: SolverConfig, rule: QuadratureRule | None = None) -> FixedPoint:
    """:func:`semantic_from_above` from the cold semantic start: the retry of a cold semantic solve at ``fp``'s alpha
    that missed the branch (or reached a point the rule's blocks do not reproduce) on ``rule`` (None: the model's)."""
    params = fp.params
    rule = model_rule(params, cfg, rule)
    return semantic_from_above(fp, cfg, lambda a, c: solve(params, a, "semantic", init=initial_overlaps(
        params, "semantic"), config=c, rule=rule), rule)


def semantic_from_above(fp: FixedPoint, cfg: SolverConfig, start_at: Callable[[float, SolverConfig], FixedPoint],
                        rule: QuadratureRule | None = None, tries: int | None = None) -> FixedPoint:
    """A semantic solve from a start that missed the branch (``fp``), retried from the same start at alpha' = alpha
    SEMANTIC_RETRY_FACTOR**k, k = 1 .. ``tries`` (None: SEMANTIC_RETRY_TRIES) (``start_at(alpha', config)``, which
    retries nothing) and followed down to alpha (docs/method.md section 4): the converged semantic point; the
    agnostic point at alpha where the branch followed down fell onto it above alpha (that point followed down); a
    failure where it stalled at alpha itself; or ``fp`` unchanged where no start reaches or keeps the branch."""
    params, alpha = fp.params, fp.alpha
    step_cfg = replace(cfg, e_t_quadrature=None)
    spent = fp.status.iterations
    for k in range(1, (SEMANTIC_RETRY_TRIES if tries is None else tries) + 1):
        top = alpha * SEMANTIC_RETRY_FACTOR ** k
        near = start_at(top, step_cfg)
        spent += near.status.iterations
        if near.status.converged and near.branch == "semantic":
            break
    else:
        return fp
    path = [top]
    while path[-1] / SEMANTIC_RETRY_STEP > alpha:
        path.append(path[-1] / SEMANTIC_RETRY_STEP)
    reached = near
    for a in path[1:] + [alpha]:
        near = solve(params, a, "semantic", init=reached.overlaps, memory=reached.memory,
                     config=cfg if a == alpha else step_cfg, rule=rule)
        spent += near.status.iterations
        if not (near.status.converged and near.branch == "semantic"):
            break
        reached = near
    if near.status.converged and near.branch == "semantic":
        message = (f"converged by continuation from alpha = {top:.4g}, where the cold semantic start reaches the "
                   f"branch; from the cold start here: {fp.status.message}")
        return near.with_status(message=message, iterations=spent)
    if near.status.converged and near.branch == "agnostic" and near.alpha > alpha:
        # the branch ended above alpha, onto the agnostic point: that point followed down to alpha is where the
        # semantic start's continuation lands (as a cold start that converges to it), judged as such by the caller
        fell, ag = near, near
        for a in [a for a in path[1:] if a < fell.alpha] + [alpha]:
            ag = solve(params, a, "agnostic", init=ag.overlaps, memory=ag.memory, config=cfg if a == alpha else step_cfg,
                       rule=rule)
            spent += ag.status.iterations
            if not (ag.status.converged and ag.branch == "agnostic"):
                return fp
        message = (f"no semantic point: the semantic branch, followed down from alpha = {top:.4g}, where the cold "
                   f"semantic start reaches it, converged down to alpha = {reached.alpha:.4g} and fell onto the "
                   f"agnostic point at alpha = {fell.alpha:.4g}; that point followed down to alpha = {alpha:.4g}; from "
                   f"the cold start here: {fp.status.message}")
        return replace(ag, requested=fp.requested).with_status(message=message, iterations=spent)
    if near.status.converged or near.branch != "semantic" or near.alpha != alpha:
        return fp  # the continuation fell off the branch elsewhere, or stalled before alpha: nothing learnt at alpha
    # the branch was followed down to the step before alpha and stalled on it at alpha: a solver
    # failure, never reported as the branch's absence
    message = (f"not converged: the semantic branch, followed down from alpha = {top:.4g}, converged down to "
               f"alpha = {reached.alpha:.4g} and stalled at alpha = {alpha:.4g} (best residual "
               f"{near.status.residual:.2e}), a solver failure, not the branch's absence; what the cold start here alone "
               f"gave: {fp.status.message}")
    return near.with_status(message=message, iterations=spent)


def _agnostic_path_start(params: ModelParams, path: list[float], agnostic: Overlaps, cfg: SolverConfig,
                         rule: QuadratureRule) -> Overlaps:
    """The positional start at the end of ``path`` when the positional continuation fell onto the agnostic
    branch (m = 0, which a warm start would keep): the agnostic branch followed along ``path``, the positional
    start's m put on its last converged point."""
    ov = agnostic
    for a in path:
        fp = solve(params, a, "agnostic", init=ov, config=replace(cfg, e_t_quadrature=None), rule=rule)
        if not fp.status.converged:
            break
        ov = fp.overlaps
    return replace(ov, m=initial_overlaps(params, "positional").m)


def positional_past_agnostic(params: ModelParams, alpha: float, agnostic: FixedPoint, cfg: SolverConfig,
                             rule: QuadratureRule) -> FixedPoint | None:
    """The cold positional solve at alpha, given ``agnostic``, the agnostic point at alpha' <= alpha (where a cold
    positional solve fell to it, alpha' >= POSITIONAL_COLD_ALPHA; or alpha' = alpha) (``params`` in their SE form): the
    same start as the cold solve's (:func:`_agnostic_path_start`), reached in one warm step from alpha'; None where
    that step fails or ``agnostic`` is Q = 0."""
    if agnostic.overlaps.zero_student:  # Q = 0 stays Q = 0 at every alpha: the cold solve finds the agnostic point
        return None
    ag = solve(params, alpha, "agnostic", init=on_branch_subspace(agnostic.overlaps, "agnostic"),
               config=replace(cfg, e_t_quadrature=None), rule=rule)
    if not (ag.status.converged and ag.branch == "agnostic"):
        return None
    start = replace(ag.overlaps, m=initial_overlaps(params, "positional").m)
    fp = finish_stalled(solve(params, alpha, "positional", init=start, config=cfg, rule=rule), cfg, rule)
    return fp.with_status(iterations=fp.status.iterations + ag.status.iterations)


def embedded_branches(params: ModelParams, branch: str) -> tuple[str, ...]:
    """The rank-1 branches :func:`embedded_start` builds ``branch``'s start from (:func:`signal_axes`)."""
    if branch == "agnostic":
        return ("agnostic",)
    n_sem, pos_axis = signal_axes(params, branch)
    return tuple(b for b, used in (("positional", pos_axis is not None), ("semantic", n_sem > 0)) if used)


def rank_one_overlaps(params: ModelParams, alpha: float, branches: Sequence[str], config: SolverConfig,
                      known: Mapping[str, Overlaps | None] | None = None) -> dict[str, Overlaps | None]:
    """The rank-1 fixed points :func:`embedded_start` builds from: for each of ``branches``, :func:`solve` at
    r = r* = 1 (the model otherwise the same) at alpha on ``config`` with damping at least
    :data:`~attnphase.numerics.se.matrix_solve.MATRIX_MIN_DAMPING` and no separate e_t rule (the same config for
    every caller, so that one solve serves them all); None where it does not converge on that branch.  Those of
    ``known`` are taken from it."""
    known = dict(known or {})
    cfg = config.replace(e_t_quadrature=None, damping=max(config.damping, MATRIX_MIN_DAMPING))
    for b in branches:
        if b not in known:
            fp = solve(params.replace(r=1, r_star=1), alpha, b, config=cfg)
            known[b] = fp.overlaps if fp.status.converged and fp.branch == b else None
    return known


def embedded_start(params: ModelParams, alpha: float, branch: str, config: SolverConfig,
                   rank_one: Mapping[str, Overlaps | None] | None = None) -> Overlaps:
    """A matrix solve's start built from the rank-1 fixed points at the same alpha (:func:`rank_one_overlaps`, those
    of ``rank_one`` taken from it).

    The first min(r, r*) axes (min(r - 1, r*) for ``mixed``) get the semantic point's (q0, V0, th0 on the
    matching teacher axis), the last axis of ``positional`` / ``mixed`` the positional point's (q0, V0, m); the
    other axes (:func:`noise_axes`) q0 = 0.05 and the signal axis's V0 (on ``positional`` its q0 and V0, and
    m along :func:`further_positional_directions`); ``agnostic``: the rank-1 agnostic point's q0 / r and V0 on
    every axis (Tr q0, the scores' scale, kept; from the cold start the solve stalls at alpha = 2, omega = 0.3 and
    its first step leaves the admissible region from 2.5 on).  :func:`initial_overlaps` where a rank-1 branch does
    not converge (docs/method.md section 11).
    """
    check_branch(branch)
    L, r, rs = params.L, params.r, teacher_rank(params)
    needed = embedded_branches(params, branch)
    got = rank_one_overlaps(params, alpha, needed, config, rank_one)
    if any(got[b] is None for b in needed):
        return initial_overlaps(params, branch)
    if branch == "agnostic":
        ag = got["agnostic"]
        return Overlaps(ag.q0 / r * np.eye(r), ag.V0 * np.eye(r), np.zeros((L, r)), np.zeros((r, rs)))
    n_sem, pos_axis = signal_axes(params, branch)
    q, V = np.zeros(r), np.zeros(r)
    m, th = np.zeros((L, r)), np.zeros((r, rs))
    noise = noise_axes(params, branch)
    sem, pos = got.get("semantic"), got.get("positional")
    for a in range(n_sem):
        q[a], V[a], th[a, a] = sem.q0, sem.V0, sem.th0
    if pos_axis is not None:
        q[pos_axis], V[pos_axis], m[:, pos_axis] = pos.q0, pos.V0, pos.m
    signal = min(set(range(r)) - set(noise))
    for a in noise:
        q[a], V[a] = (q[signal] if branch == "positional" else 0.05), V[signal]
    if branch == "positional":
        for a, u in zip(noise, further_positional_directions(params.P_array, m[:, pos_axis], len(noise))):
            m[:, a] = u
    return Overlaps(np.diag(q), np.diag(V), m, th)
