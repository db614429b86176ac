"""A theory point of the validation suites: on the rule, or where that misses the branch, on its next scrambling.

The proximal maps jump where a node's minimiser changes basin, and one rule can stall on such a jump where an
independent scrambling of it converges (measured: docs/validation.md).  :func:`solve_on_branch` solves on
``config``'s rule and, where that does not converge on the requested branch, on ``config.variant(1)``, ...,
up to ``tries`` rules, and says what each rule before the one kept gave.  Where the branch does not exist every
rule says so, and the last outcome is kept.
"""

from __future__ import annotations

from typing import Any, Callable

from attnphase.numerics.config import SolverConfig

#: Independent rules a theory point is tried on before its outcome is taken (the rule, then its next scrambling).
TRIES = 2


def solve_on_branch(solve: Callable[[SolverConfig], Any], config: SolverConfig, branch: str,
                    outcome: Callable[[Any], tuple[bool, str | None, float]], tries: int = TRIES,
                    ) -> tuple[Any, SolverConfig, list[str]]:
    """(fixed point, the config it was solved with, ``"<rule>: <what it gave>"`` for each rule before it).

    ``solve(config)`` returns a fixed point, ``outcome(fp)`` its (converged, branch label, residual)."""
    missed: list[str] = []
    for k in range(tries):
        cfg = config.variant(k)
        fp = solve(cfg)
        converged, label, residual = outcome(fp)
        if (converged and label == branch) or k + 1 == tries:
            return fp, cfg, missed
        missed.append(f"{cfg.quadrature}: " + (f"{label}" if converged else f"not converged (residual {residual:.1e})"))
    raise ValueError(f"tries must be >= 1, got {tries}")
