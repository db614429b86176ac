"""A branch end's points checked on ``config.end_quadrature``, a rule finer than the solve rule (docs/method.md
section 5).  Near an end the order parameter's direction is soft, and on the solve rule the quadrature's jumps can
make fixed points the branch does not have; one solve on the finer rule, at the order parameter of the point in
question (alpha solved for, :func:`~attnphase.numerics.se.fixed_order_solve.solve_at_order`), tells them apart:

* :func:`points_below_crossing` -- the semantic branch's points below its eigenvalue crossing;
* :func:`traced_end_on_finer` -- the extreme point of a trace at fixed order parameter.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import finer_rule
from attnphase.numerics.se.fixed_order_solve import solve_at_order
from attnphase.numerics.se.results import FixedPoint
from attnphase.theory.params import ModelParams


def points_below_crossing(params: ModelParams, good: FixedPoint, crossing: float, cfg: SolverConfig) -> tuple[str, str]:
    """Whether the semantic branch's points below its eigenvalue crossing (at ``crossing`` on the solve rule;
    ``good`` the lowest of them) are the branch's: (why they are, "" where they are not; the note saying so).

    Below a supercritical crossing the agnostic point is the only fixed point, but near the end the theta direction
    is soft and the solve rule's alpha(theta) can lie below the branch's (``sweep --sigma 0.4,0.6 --omega 0.15
    --branch semantic``: at theta = 0.103 alpha 0.610 on ``sobol10:4``, 0.6525 on ``sobol12:4``, 0.6537 on
    ``sobol13:4``, the crossing 0.6375).  So at ``good``'s theta alpha is solved for (fixed theta, warm from
    ``good``) on ``cfg.end_quadrature``, a finer rule: where it lies above the crossing the points below it are the
    solve rule's and the crossing is the end; where it does not (a subcritical crossing, its end a fold below), or the
    solve does not converge, the trace decides."""
    finer = finer_rule(params.L, cfg.end_quadrature, cfg.quadrature)
    theta = abs(float(good.overlaps.th0))
    if finer is None:
        return f"the branch has points below its crossing at {crossing:.4f} and no finer end rule to check them", ""
    fp = solve_at_order(params, "th0", theta, replace(good.overlaps, th0=theta), config=replace(cfg, quadrature=finer))
    if not (fp.status.converged and fp.branch == "semantic" and math.isfinite(fp.alpha)):
        return (f"the branch has points below its crossing at {crossing:.4f}; on {finer} at theta = {theta:.3g} "
                "(its lowest point's) the solve does not converge"), ""
    if fp.alpha <= crossing:
        return (f"the branch has points below its crossing at {crossing:.4f}, on {finer} too (theta = {theta:.3g} at "
                f"alpha = {fp.alpha:.4f})"), ""
    return "", (f"at theta = {theta:.3g} (the point at {good.alpha:.4g}) {finer}, a finer rule, puts the branch at "
                f"alpha = {fp.alpha:.4f}, above the crossing: below it the points are the solve rule's, not the "
                "branch's")


def traced_end_on_finer(params: ModelParams, end: FixedPoint, branch: str, cfg: SolverConfig) -> tuple[float, str]:
    """(alpha, note): where the branch lies at the order parameter of ``end``, a trace's extreme point on the solve
    rule, on ``cfg.end_quadrature`` (alpha solved for at fixed |th0| on the semantic branch, |m| on the positional
    one, warm from ``end``).  NaN where there is no finer end rule or its solve does not reach the branch (the
    note says which).

    The trace at fixed order parameter runs on the solve rule down to the branch's floor, where that rule's jumps
    can move alpha far: ``phase-diagram --precision fast --branch-end trace --omega 0.3`` traced the semantic branch
    on ``sobol8:4`` down to alpha = 0.5577 at theta = 0.02, where ``sobol10:4`` puts it at 0.7157 and the
    eigenvalue crossing lies at 0.7009 +- 0.0067."""
    finer = finer_rule(params.L, cfg.end_quadrature, cfg.quadrature)
    if finer is None:
        return math.nan, ""
    semantic = branch == "semantic"
    order, name = ("th0", "theta") if semantic else ("m", "|m|")
    size = abs(float(end.overlaps.th0)) if semantic else float(np.linalg.norm(end.overlaps.m))
    start = replace(end.overlaps, th0=size) if semantic else end.overlaps
    fp = solve_at_order(params, order, size, start, config=replace(cfg, quadrature=finer))
    at = f"at {name} = {size:.3g} (the trace's end on {cfg.quadrature}, alpha = {end.alpha:.4f})"
    if not (fp.status.converged and fp.branch == branch and math.isfinite(fp.alpha)):
        return math.nan, f"{at} the solve on {finer}, a finer rule, does not converge: the end is the solve rule's"
    return fp.alpha, f"{at} {finer}, a finer rule, puts the branch at alpha = {fp.alpha:.4f}"
