"""Honest quadrature error bars for a fixed point, or for the phase boundaries: re-solve on independent rules.

For a randomised rule (scrambled Sobol, seed s) the fixed point x*(s) is a random
variable; its spread over independent seeds is the quadrature error of a single
solve.  Each re-solve is warm-started from the given fixed point, so it costs a few
Newton steps.  For a deterministic rule (Gauss--Hermite) the comparison is with the
same rule at a higher order instead.  The phase boundaries (alpha_c, alpha_l, branch ends) get
the same treatment in :func:`boundary_errors`: the whole computation is repeated on the other rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from attnphase.numerics.boundaries import BOUNDARY_KEYS, Boundaries, boundaries_job
from attnphase.numerics.parallel import map_in_order
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.state_evolution import FixedPoint, solve
from attnphase.theory.params import ModelParams

ERROR_KEYS = ("q", "m", "V", "theta", "eps_g", "e_t")

#: Fewest rules an error estimate is made from (a spread needs two).
MIN_RULES = 2


@dataclass(frozen=True)
class QuadratureError:
    """Spread of the fixed point's record over independent rules.

    Attributes:
        std: for each key of ERROR_KEYS, the sample standard deviation over the rules
            (the error of one solve; NaN if fewer than two re-solves converged).
        rules: the rule names used.
        converged: how many re-solves converged on the same branch.
    """

    std: dict[str, float]
    rules: tuple[str, ...]
    converged: int


def check_rules(n_rules: int, option: str = "n_rules") -> int:
    """``n_rules`` if an error estimate can be made from it (>= 2), else ValueError naming ``option``."""
    if int(n_rules) != n_rules or n_rules < MIN_RULES:
        raise ValueError(f"{option} needs K >= {MIN_RULES} independent rules (or 0 for no error estimate), got {n_rules}")
    return int(n_rules)


def quadrature_error(fp: FixedPoint, n_rules: int = 4, config: SolverConfig | None = None) -> QuadratureError:
    """Re-solve ``fp`` on ``n_rules`` independent rules of the same kind (warm starts); the spread.

    The rules are :meth:`SolverConfig.variant` 0, 1, ...: for Sobol rules the seeds base, base+1,
    ...; for Gauss--Hermite the orders N, N+2, N+4, ... (then the spread is an upper estimate
    dominated by the lowest order).  The e_t rule varies along (a fixed one would hide its error).
    """
    n_rules = check_rules(n_rules)
    cfg = config or SolverConfig(prox=fp.prox)
    values = {k: [] for k in ERROR_KEYS}
    rules = []
    ok = 0
    for k in range(n_rules):
        other = solve(fp.params, fp.alpha, fp.requested, init=fp.overlaps, config=cfg.variant(k))
        rules.append(other.quadrature)
        if other.status.converged and other.branch == fp.branch:
            ok += 1
            for k in ERROR_KEYS:
                values[k].append(float(other.record[k]))
    std = {k: (float(np.std(v, ddof=1)) if len(v) >= 2 else math.nan) for k, v in values.items()}
    return QuadratureError(std=std, rules=tuple(rules), converged=ok)


def _spread(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.std(finite, ddof=1)) if len(finite) >= 2 else math.nan


def boundary_errors(
    params: ModelParams,
    rows: Sequence[Boundaries],
    alphas: Sequence[float],
    n_rules: int,
    *,
    config: SolverConfig | None = None,
    progress: Callable[[Boundaries], None] | None = None,
    workers: int = 1,
) -> list[dict[str, float]]:
    """Spread of each boundary of ``rows`` over ``n_rules`` independent rules (``rows`` is the first).

    The boundaries at every omega of ``rows`` are recomputed on the other ``n_rules - 1`` variants
    of every quadrature role of ``config`` (:meth:`SolverConfig.variant`), on ``workers`` processes;
    for each key of BOUNDARY_KEYS the result holds ``<key>_err``, the sample standard deviation over
    the rules where the boundary was found (NaN with fewer than two), and ``<key>_found``, on how
    many rules it was.
    """
    n_rules = check_rules(n_rules)
    cfg = config or SolverConfig()
    jobs = [(params.replace(omega=b.omega), list(alphas), cfg.variant(k)) for b in rows for k in range(1, n_rules)]
    others = map_in_order(boundaries_job, jobs, workers, progress)
    return [replicate_spread([b] + others[i * (n_rules - 1):(i + 1) * (n_rules - 1)]) for i, b in enumerate(rows)]


def replicate_spread(runs: Sequence[Boundaries]) -> dict[str, float]:
    """For each key of BOUNDARY_KEYS, ``<key>_err``: the sample standard deviation of the boundary over
    ``runs`` (the same omega on independent rules) where it was found (NaN with fewer than two), and
    ``<key>_found``: on how many runs it was."""
    row: dict[str, float] = {}
    for key in BOUNDARY_KEYS:
        values = [float(getattr(r, key)) for r in runs]
        row[f"{key}_err"] = _spread(values)
        row[f"{key}_found"] = sum(math.isfinite(v) for v in values)
    return row
