"""A theory point of the validation suites: on the rule, or where that misses the branch, on its next scrambling.

The proximal maps jump where a node's minimiser changes basin, and one rule can stall on such a jump where an
independent scrambling of it converges (measured: docs/validation.md).  :func:`solve_on_branch` solves on
``config``'s rule and, where that does not converge on the requested branch, on ``config.variant(1)``, ...,
up to ``tries`` rules, and says what each rule before the one kept gave.  Where the branch does not exist every
rule says so, and the last outcome is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from attnphase.numerics.config import SolverConfig

if TYPE_CHECKING:
    from attnphase.numerics.se.results import FixedPoint

#: Independent rules a theory point is tried on before its outcome is taken (the rule, then its next scrambling).
TRIES = 2


def solve_on_branch(solve: Callable[[SolverConfig], FixedPoint], config: SolverConfig, branch: str,
                    tries: int = TRIES) -> tuple[FixedPoint, SolverConfig, list[str]]:
    """(fixed point, the config it was solved with, ``"<rule>: <what it gave>"`` for each rule before it).

    ``solve(config)`` returns a fixed point of any rank (its status and label say what it gave)."""
    missed: list[str] = []
    for k in range(tries):
        cfg = config.variant(k)
        fp = solve(cfg)
        converged, label, residual = fp.status.converged, fp.branch, fp.status.residual
        if (converged and label == branch) or k + 1 == tries:
            return fp, cfg, missed
        missed.append(f"{cfg.quadrature}: " + (f"{label}" if converged else f"not converged (residual {residual:.1e})"))
    raise ValueError(f"tries must be >= 1, got {tries}")
