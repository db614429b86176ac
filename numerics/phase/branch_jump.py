"""A root of Delta e_t that is a jump, not a crossing: the solves of one label on either side of it reached two
different fixed points (docs/general.md, "How alpha_c is found where the branches never cross").

Delta e_t(alpha) = e_t(S~) - e_t(X~) is solved warm from the nearest known point of each branch, so where the grid
point below the change holds another point of the semantic label than the one above it -- a small-|th0| point next
to the agnostic one where the agnostic point is nearly marginal in theta and the rule's jumps make fixed points of
their own, beside the semantic branch proper -- Brent's method converges to where the warm starts switch from one to
the other, a jump of Delta e_t.  :func:`jump_at` tells such a root by the order parameter of the solves beside it;
:func:`follow_down` then follows the point of the upper side down by warm steps, so that the change is located on
the branch that is the lowest above it (:func:`~attnphase.numerics.phase.lowest_point_change.lowest_point_alpha_c`).
"""

from __future__ import annotations

from collections.abc import Mapping

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.branch_end import BRANCH_FLOORS, on_branch, overlap_size
from attnphase.numerics.phase.continuation import solve_from
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.results import FixedPoint
from attnphase.theory.params import ModelParams

#: Two solves of one label whose order parameters (|th0| on the semantic branch, |m| on the positional) differ by
#: more than this fraction of the larger are two fixed points, not one branch: beside a root of Delta e_t (its
#: bracket 1e-4 wide) one branch moves its order parameter by far less, and a warm step of the follow (an eighth of
#: its way down at most, halved where it fails) by less than this; the jump at ``--sigma 0.8 --omega 0.2`` went from
#: |th0| 0.048 to 0.54.
JUMP_FRACTION = 0.5

#: The number of warm steps :func:`follow_down` starts with between its top point and its lower limit, and the
#: steps it tries further on where one fails before halving it.
FOLLOW_STEPS, SKIPS = 8, 2


def order_parameter(fp: FixedPoint, branch: str) -> float:
    """The size of ``branch``'s order parameter at ``fp`` (|th0| semantic, |m| positional)."""
    ((name, _),) = BRANCH_FLOORS[branch][:1]
    return overlap_size(fp, name)


def is_jump(a: FixedPoint, b: FixedPoint, branch: str) -> bool:
    """Whether ``a`` and ``b`` (points of ``branch``'s label) are two fixed points, not one branch: their order
    parameters differ by more than :data:`JUMP_FRACTION` of the larger."""
    x, y = order_parameter(a, branch), order_parameter(b, branch)
    return abs(x - y) > JUMP_FRACTION * max(x, y)


def jump_at(points: Mapping[float, FixedPoint], branch: str, root: float,
            width: float) -> tuple[FixedPoint, FixedPoint] | None:
    """(the point below, the point above) of the first pair of neighbours among ``points`` (``branch``'s, by alpha)
    whose interval meets [root - width, root + width] and which are two fixed points (:func:`is_jump`): a root
    found to ``width`` lies between such neighbours where Delta e_t jumps there; None where every such pair is one
    branch."""
    alphas = sorted(points)
    for a, b in zip(alphas, alphas[1:]):
        if a <= root + width and b >= root - width and is_jump(points[a], points[b], branch):
            return points[a], points[b]
    return None


def follow_down(params: ModelParams, branch: str, top: FixedPoint, lower: float, min_step: float,
                config: SolverConfig, rule: QuadratureRule) -> list[FixedPoint]:
    """``top``'s branch followed down to ``lower`` by warm steps (:data:`FOLLOW_STEPS` of them to begin with): where
    a step's solve does not converge, leaves the branch or jumps to another point of its label (:func:`is_jump`),
    the solves one and two steps further on from the same point (:data:`SKIPS`: the rule's jumps leave single alphas
    where no solve converges), and where those fail too the step halved, until ``lower`` is reached or the step
    falls below ``min_step``.  The points reached, in increasing alpha, ``top`` last."""
    path = [top]
    step = (top.alpha - lower) / FOLLOW_STEPS
    while path[-1].alpha > lower and step >= min_step:
        reached = None
        for k in range(1, SKIPS + 2):
            alpha = max(lower, path[-1].alpha - k * step)
            fp = solve_from(params, alpha, branch, path[-1], config, rule)
            if on_branch(fp, branch) and not is_jump(path[-1], fp, branch):
                reached = fp
                break
            if alpha == lower:
                break
        if reached is None:
            step /= 2
        else:
            path.append(reached)
    return path[::-1]
