"""Branch ends as bifurcations: the alpha where the agnostic branch's eigenvalue in theta or m crosses 1
(docs/method.md sections 5 and 7).

Secant steps on e(alpha) - 1, e the eigenvalue of :mod:`attnphase.numerics.se.stability` (lambda in theta, mu in m)
at the agnostic fixed point, every e on the same fine rule (``config.bifurcation_quadrature``).  The first step's
global proximal minima are searched (every start), the next ones polished from them; the converged secant's last
point is verified by a full search (where it differs the secant goes on with the searched value, searching at every
later step).  Multilevel step (``config.end_quadrature``, finer than the solve rule): the last point a re-solved on
the finer rule and the end moved by one linearised step, alpha_end = a - (e_fine(a) - 1) / slope.  The standard
error (:func:`bifurcation_error`) from the rules' blocks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnphase.numerics.config import SolverConfig, check_positive
from attnphase.numerics.prox.global_prox import Candidates
from attnphase.numerics.quadrature.rules import finer_rule, make_rule, rule_nodes
from attnphase.numerics.errors.replicates import block_config, linearised_root_error, replicate_count
from attnphase.numerics.se.stability import DIRECTIONS, node_solves
from attnphase.numerics.se.state_evolution import FixedPoint, solve
from attnphase.theory.params import ModelParams

#: A multilevel step longer than this is not trusted to be linear (at the default rules they are up to ~0.01; the
#: secant's own scale is 0.05): the secant's end on the solve rule is kept, with a note.
MAX_MULTILEVEL_STEP = 0.05

#: A converged secant's last eigenvalue (both, where they bracket the root) farther than this from 1 is no crossing:
#: a step below the tolerance there came from a secant through a jump of the eigenvalue (a smooth one moves by ~1e-2
#: at most within 1e-3 of its root).  At lam = 0.05, omega = 0.3 on sobol13:4 the zero student's mu goes from 0.70 at
#: alpha 0.25 to 1487 at 0.35, and the secant through them stopped at 0.25 with mu = 0.70.
MAX_ROOT_JUMP = 0.2

#: A polished eigenvalue that differs from the full search's by more than this at the verified point means the
#: polish missed a basin (a polish moves the eigenvalue by ~1e-12, one node switching basin by ~1e-6).
VERIFY_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class Bifurcation:
    """Root of e(alpha) = 1 along the agnostic branch.

    Attributes:
        alpha: where e = 1 (NaN unless converged).
        converged: the secant steps reached ``tol``.
        message: how it ended.
        slope: d e / d alpha from the last two evaluations.
        points: the evaluations, (alpha, e) in order.
        prox_failures: failed proximal solves over all e evaluations.
        err: standard error of ``alpha`` from the rules' blocks (:func:`bifurcation_error`; NaN
            when not converged, without blocks, or with ``config.error_bars`` off).
        searches: full proximal searches on the bifurcation rule (the others were polishes).
        solve_rule_alpha: the secant's root, on the agnostic points of the solve rule (``alpha`` before the
            multilevel step; equal to it without one): a branch's own points, solved on that rule, are
            compared with it (NaN unless converged).
    """

    alpha: float
    converged: bool
    message: str
    slope: float
    points: tuple[tuple[float, float], ...]
    prox_failures: int
    err: float = math.nan
    searches: int = 0
    solve_rule_alpha: float = math.nan


class _NoAgnosticPoint(RuntimeError):
    """The agnostic fixed point was not found at some alpha."""


def branch_bifurcation(
    params: ModelParams,
    alpha_guess: float,
    direction: str,
    *,
    config: SolverConfig | None = None,
    starts: Sequence[FixedPoint | None] = (None,),
    step: float = 0.05,
    tol: float = 1e-3,
    max_iter: int = 12,
) -> Bifurcation:
    """alpha where the agnostic branch's eigenvalue in ``direction`` ("theta" or "m") equals 1 (module doc).

    Secant steps from ``alpha_guess``; each solves the agnostic fixed point (warm from the previous one, where that
    does not converge, and at the first point, from each of ``starts`` in turn until one converges, None meaning a
    cold start).  Converged when a secant step is below ``tol``, or when the last two points bracket the root within
    ``tol`` (then the multilevel step).  The second point assumes the eigenvalue proportional to alpha, within
    4 ``step`` of the first and at least 0.2 ``step`` away.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {tuple(DIRECTIONS)}, got {direction!r}")
    step, tol = check_positive("step", step), check_positive("tol", tol)
    eigenvalue, sign = DIRECTIONS[direction]
    cfg = config or SolverConfig()
    rule = make_rule(params.L, cfg.bifurcation_quadrature)
    prev: FixedPoint | None = None
    pts: list[tuple[float, float]] = []
    failures, searches = 0, 0
    minima: Candidates | None = None  # of the last full search on the rule
    last_searched = False  # whether the last point's eigenvalue came from a full search
    trust_polish = cfg.prox == "global"  # until a verifying search finds a basin a polish missed
    fine_note = ""  # why the multilevel step on config.end_quadrature was not taken
    end_rule = finer_rule(params.L, cfg.end_quadrature, cfg.quadrature)

    def evaluate(fp: FixedPoint, search: bool) -> float:
        nonlocal failures, searches, minima, last_searched
        solves = node_solves(params, fp.overlaps, rule, cfg, polish_from=None if search else minima)
        if search:
            minima, searches = solves.minima, searches + 1
        last_searched = search
        value, bad = eigenvalue(params, fp.alpha, fp.overlaps, rule, cfg, solves=solves)
        failures += bad
        return value

    def f_at(alpha: float) -> float:
        nonlocal prev
        for init in ((prev,) if prev is not None else ()) + tuple(starts):  # warm, then the starts
            fp = solve(params, alpha, "agnostic", init=None if init is None else init.overlaps,
                       memory=None if init is None else init.memory, config=cfg)
            if fp.status.converged and fp.branch == "agnostic":
                break
        else:
            raise _NoAgnosticPoint(f"no agnostic fixed point at alpha = {alpha:.4f} ({fp.status.message}, {fp.branch})")
        prev = fp
        pts.append((alpha, evaluate(fp, search=not (trust_polish and minima is not None))))
        return pts[-1][1] - 1.0

    def verified() -> float | None:
        """The last point's eigenvalue - 1 from a full search when it differs from the polished one (every
        later step then searches), else None."""
        nonlocal trust_polish
        if last_searched or prev is None:
            return None
        value = evaluate(prev, search=True)
        if abs(value - pts[-1][1]) <= VERIFY_TOL:
            return None
        pts[-1], trust_polish = (pts[-1][0], value), False
        return value - 1.0

    def done(alpha: float, ok: bool, message: str) -> Bifurcation:
        slope = _secant_slope(pts)
        err = (bifurcation_error(params, prev, direction, slope, cfg, minima if last_searched else None)
               if ok and prev is not None else math.nan)
        return Bifurcation(alpha if ok else math.nan, ok, message, slope, tuple(pts), failures, err, searches,
                           alpha if ok else math.nan)

    def multilevel(root: float) -> Bifurcation | str:
        """The converged secant's last point a re-solved on ``cfg.end_quadrature`` (warm) and one linearised
        step, alpha = a - (e_fine(a) - 1) / slope, e_fine from a full search; its error from that rule's
        blocks (``root``: the secant's root on the solve rule).  A message instead when the re-solve fails or
        the step is too long to be linear."""
        nonlocal last_searched
        slope = _secant_slope(pts)
        fine_cfg = cfg.replace(quadrature=end_rule)
        fine = solve(params, prev.alpha, "agnostic", init=prev.overlaps, config=fine_cfg)
        if not (fine.status.converged and fine.branch == "agnostic"):
            return f"re-solve on {end_rule}: {fine.status.message}, {fine.branch}"
        e_fine = evaluate(fine, search=True)
        alpha = prev.alpha - (e_fine - 1.0) / slope
        if not abs(alpha - prev.alpha) <= MAX_MULTILEVEL_STEP:
            last_searched = False  # the secant's last point is still to be verified
            return f"the step on {end_rule} ({alpha - prev.alpha:+.3f}) is longer than {MAX_MULTILEVEL_STEP}"
        err = bifurcation_error(params, fine, direction, slope, fine_cfg, minima)
        return Bifurcation(alpha, True, f"converged (agnostic point on {end_rule})", slope, tuple(pts),
                           failures, err, searches, root)

    try:
        a0 = float(alpha_guess)
        f0 = f_at(a0)
        slope0 = sign * (f0 + 1.0) / a0  # 0 where the eigenvalue is exactly 0 (no direction: the longest step)
        move = float(np.clip(-f0 / slope0, -4 * step, 4 * step)) if slope0 else 4 * step * (1.0 if -f0 * sign > 0 else -1.0)
        if abs(move) < 0.2 * step:
            move = 0.2 * step * (1.0 if -f0 * sign > 0 else -1.0)
        a1 = a0 + move if a0 + move > 0 else 0.5 * a0  # a first step towards alpha = 0 stops halfway there
        f1 = f_at(a1)
        for _ in range(max_iter):
            if f1 == f0:
                return done(a1, False, "the eigenvalue is flat between two steps")
            a2 = a1 - f1 * (a1 - a0) / (f1 - f0)
            a2 = float(np.clip(a2, a1 - 4 * step, a1 + 4 * step))  # a secant through noise can overshoot
            if a2 <= 0:
                return done(a2, False, "the secant left alpha > 0")
            if abs(a2 - a1) < tol or (f0 * f1 < 0 and abs(a1 - a0) < tol):
                bracket = f0 * f1 < 0 and abs(a1 - a0) < tol
                if max(abs(f1), abs(f0) if bracket else 0.0) > MAX_ROOT_JUMP:
                    return done(a2, False, f"no crossing of 1: the secant stopped at alpha = {a1:.5g} with the "
                                           f"eigenvalue {f1 + 1:.3g}, its last step through {f0 + 1:.3g} at "
                                           f"{a0:.5g} (a jump of the eigenvalue)")
                if end_rule is not None and not fine_note:
                    fine = multilevel(a2)
                    if isinstance(fine, Bifurcation):
                        return fine
                    fine_note = fine  # the secant's own end, verified at its last point below
                searched = verified()
                if searched is None:
                    return done(a2, True, f"converged (not refined: {fine_note})" if fine_note else "converged")
                f1 = searched  # a basin the polish missed: the secant again, with the searched value
                continue
            a0, f0, a1, f1 = a1, f1, a2, f_at(a2)
    except _NoAgnosticPoint as exc:
        return done(math.nan, False, str(exc))
    return done(a1, False, f"not converged to {tol} in {max_iter} secant steps")


def _secant_slope(pts: Sequence[tuple[float, float]]) -> float:
    """d e / d alpha from the last two secant points (alpha, e); NaN with fewer."""
    if len(pts) < 2:
        return math.nan
    (a0, e0), (a1, e1) = pts[-2], pts[-1]
    return (e1 - e0) / (a1 - a0)


#: A block's agnostic point with q = Tr q0 at most this is the zero student's (Q = 0 at round-off, or on its way
#: there): another fixed point than a pooled point above it.
NEAR_ZERO_STUDENT = 1e-8


def bifurcation_error(params: ModelParams, agnostic: FixedPoint, direction: str, slope: float,
                      config: SolverConfig, minima: Candidates | None = None) -> float:
    """Standard error of a bifurcation located on pooled rules, from their blocks, linearised at the
    last agnostic point a (:mod:`attnphase.numerics.errors.replicates`): on block j the agnostic fixed point
    (solve rule's block j, warm from ``agnostic``) and its eigenvalue e_j (bifurcation rule's block j)
    give the block's root a - (e_j - 1) / slope (a block whose agnostic point is Q = 0 where ``agnostic`` is not, or
    the converse, is left out: another fixed point).  ``minima``: those of a full search at ``agnostic`` on the
    pooled bifurcation rule; each block then polishes its nodes' share (the block points are within the
    rules' error of ``agnostic``), else it searches.  NaN without blocks or with ``config.error_bars`` off."""
    R = replicate_count(config)
    if R < 2:
        return math.nan
    eigenvalue, _ = DIRECTIONS[direction]
    n_pooled = rule_nodes(params.L, config.bifurcation_quadrature)
    values = []
    for j in range(R):
        cfg_j = block_config(config, j)
        fp = solve(params, agnostic.alpha, "agnostic", init=agnostic.overlaps, config=cfg_j)
        # a block that fell to Q = 0 where the pooled point is not (a strong ridge) reproduces another fixed point:
        # its eigenvalue (1 + 85321 at lam = 0.05, omega = 0.2, sobol8:4@0) is not this point's; one on its way there,
        # stopped by the solve's tolerance short of round-off, too (q 2.3e-12 against the pooled 2.5e-4, eigenvalue
        # 1916, at lam = 0.05, omega = 0.3, alpha = 0.56, sobol8:4@2: a bar of 447 on the semantic end)
        same = (fp.overlaps.q <= NEAR_ZERO_STUDENT) == (agnostic.overlaps.q <= NEAR_ZERO_STUDENT)
        if fp.status.converged and fp.branch == "agnostic" and same:
            rule = make_rule(params.L, cfg_j.bifurcation_quadrature)
            share = _block_share(minima, n_pooled, rule.nodes.shape[0], j, R) if cfg_j.prox == "global" else None
            solves = node_solves(params, fp.overlaps, rule, cfg_j, polish_from=share)
            values.append(eigenvalue(params, agnostic.alpha, fp.overlaps, rule, cfg_j, solves=solves)[0] - 1.0)
    return linearised_root_error(agnostic.alpha, values, slope)


def _block_share(minima: Candidates | None, n_pooled: int, n_block: int, j: int, R: int) -> Candidates | None:
    """The minima (at the nodes of a rule of ``n_pooled`` nodes) at block j's nodes, renumbered from 0: the
    whole set when the block's rule is the pooled one (a rule of another block count than the solve rule's
    is not split, :func:`~attnphase.numerics.errors.replicates.block_config`), block j's share when the pooled rule
    is R blocks of ``n_block`` nodes in order (:func:`attnphase.numerics.quadrature.rules.sobol_rule`), else None."""
    if minima is None or n_block == n_pooled:
        return minima
    if n_pooled != R * n_block:
        return None
    keep = (minima.node >= j * n_block) & (minima.node < (j + 1) * n_block)
    return Candidates(minima.node[keep] - j * n_block, minima.h[keep])
