"""Honest quadrature error bars for a fixed point: re-solve it on independent randomised rules.

For a randomised rule (scrambled Sobol, seed s) the fixed point x*(s) is a random
variable; its spread over independent seeds is the quadrature error of a single
solve.  Each re-solve is warm-started from the given fixed point, so it costs a few
Newton steps.  For a deterministic rule (Gauss--Hermite) the comparison is with the
same rule at a higher order instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from attnphase.numerics.state_evolution import FixedPoint, SolverConfig, solve

ERROR_KEYS = ("q", "m", "V", "theta", "eps_g", "e_t")


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


def _variants(spec: str, n: int) -> list[str]:
    s = spec.strip().lower()
    if s.startswith("sobol"):
        parts = s[5:].split(":")
        log2_n, reps = parts[0], parts[1] if len(parts) > 1 else "1"
        base = int(parts[2]) if len(parts) > 2 else 0
        return [f"sobol{log2_n}:{reps}:{base + k}" for k in range(n)]
    if s.startswith("gh"):
        prefix = "ghr" if s.startswith("ghr") else "gh"
        order = int(s[len(prefix):].split(":")[0])
        return [f"{prefix}{order + 2 * k}" for k in range(n)]
    raise ValueError(f"cannot derive error-estimate rules from {spec!r}")


def quadrature_error(fp: FixedPoint, n_rules: int = 4, config: SolverConfig | None = None) -> QuadratureError:
    """Re-solve ``fp`` on ``n_rules`` independent rules of the same kind (warm starts); the spread.

    For Sobol rules the seeds are base, base+1, ...; for Gauss--Hermite the orders
    N, N+2, N+4, ... (then the spread is an upper estimate dominated by the lowest order).
    """
    cfg = config or SolverConfig(prox=fp.prox)
    spec = cfg.quadrature
    values = {k: [] for k in ERROR_KEYS}
    rules = []
    ok = 0
    # a fixed e_t rule would hide its own error from the spread: vary its seed along
    e_t_specs = _variants(cfg.e_t_quadrature, n_rules) if cfg.e_t_quadrature else [None] * n_rules
    for variant, e_t_spec in zip(_variants(spec, n_rules), e_t_specs):
        other = solve(
            fp.params, fp.alpha, fp.requested, init=fp.overlaps,
            config=replace(cfg, quadrature=variant, e_t_quadrature=e_t_spec),
        )
        rules.append(other.quadrature)
        if other.status.converged and other.branch == fp.branch:
            ok += 1
            for k in ERROR_KEYS:
                values[k].append(float(other.record[k]))
    std = {k: (float(np.std(v, ddof=1)) if len(v) >= 2 else math.nan) for k, v in values.items()}
    return QuadratureError(std=std, rules=tuple(rules), converged=ok)
