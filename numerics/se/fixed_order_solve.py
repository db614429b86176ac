"""The fixed point with an order parameter held fixed and alpha solved for (docs/model.md section 3): the
natural-parameter continuation that follows a branch to its end (:mod:`attnphase.numerics.phase.branch_end`),
at r = r* = 1.
"""

from __future__ import annotations

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.fixed_point import FixedPointSolver
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import FixedPoint, SolverMemory, fixed_point_from
from attnphase.numerics.se.se_map import FixedOrder, SEMap, admissible, model_rule
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params


def solve_at_order(
    params: ModelParams, order: str, value: float, init: Overlaps, *,
    config: SolverConfig | None = None,
    memory: SolverMemory | None = None,
) -> FixedPoint:
    """The fixed point with an order parameter held at ``value``; alpha is solved for.

    ``order = "th0"``: a semantic fixed point with overlap th0 = value (``init`` semantic, m = 0).
    ``order = "m"``: a positional fixed point with |m| = value (``init`` positional: th0 = 0,
    m != 0; the direction of m is iterated).  At each SE step alpha is the root of the prior's equation for
    the order parameter (:class:`~attnphase.numerics.se.se_map.FixedOrder`); well conditioned where alpha(order)
    turns or flattens, at a branch's end.  ``FixedPoint.alpha`` is the solved alpha.
    """
    cfg = config or SolverConfig()
    params = se_params(params)
    if not (value > 0):
        raise ValueError(f"the fixed {order} must be > 0, got {value}")
    if order == "th0":
        if np.any(init.m != 0):
            raise ValueError("a solve at fixed th0 follows the semantic branch: init must have m = 0")
        ov0, requested = Overlaps(q0=init.q0, V0=init.V0, m=init.m, th0=value), "semantic"
        if not admissible(ov0, params.rho0):
            raise ValueError(f"th0 = {value} is not admissible with q0 = {init.q0} (need th0^2 < q0 rho0)")
    elif order == "m":
        norm = float(np.linalg.norm(init.m))
        if init.th0 != 0 or norm == 0:
            raise ValueError("a solve at fixed |m| follows the positional branch: init must have th0 = 0 and m != 0")
        ov0, requested = Overlaps(q0=init.q0, V0=init.V0, m=init.m * (value / norm), th0=0.0), "positional"
    else:
        raise ValueError(f"order must be 'th0' or 'm', got {order!r}")
    smap = SEMap(params, FixedOrder(order, value), model_rule(params, cfg), cfg, memory=memory)
    return fixed_point_from(smap, FixedPointSolver(smap, cfg).solve(ov0.to_vector(), warm=True), ov0, requested)
