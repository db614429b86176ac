"""Honest quadrature error bars for a fixed point, or for the phase boundaries: re-solve on independent rules.

For a randomised rule (scrambled Sobol, seed s) the fixed point x*(s) is a random
variable; its spread over independent seeds is the quadrature error of a single
solve.  Each re-solve is warm-started from the given fixed point, so it costs a few
Newton steps.  For a deterministic rule (Gauss--Hermite) the comparison is with the
same rule at a higher order instead.  The phase boundaries (alpha_c, alpha_l, spinodals) get
the same treatment in :func:`boundary_errors`: the whole computation is repeated on the other rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from attnphase.numerics.phase_diagram import ALPHA_C_QUADRATURE, Boundaries, phase_boundaries
from attnphase.numerics.stability import BIFURCATION_QUADRATURE
from attnphase.numerics.state_evolution import FixedPoint, SolverConfig, solve
from attnphase.theory.params import ModelParams

ERROR_KEYS = ("q", "m", "V", "theta", "eps_g", "e_t")
BOUNDARY_KEYS = ("alpha_c", "alpha_l", "spinodal_semantic", "spinodal_positional")


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


def rule_variants(spec: str, n: int) -> list[str]:
    """``n`` independent rules of the kind ``spec`` names: Sobol seeds base, base+1, ...; Gauss--Hermite
    orders N, N+2, ... (the first is ``spec``'s own rule)."""
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
    e_t_specs = rule_variants(cfg.e_t_quadrature, n_rules) if cfg.e_t_quadrature else [None] * n_rules
    for variant, e_t_spec in zip(rule_variants(spec, n_rules), e_t_specs):
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
    alpha_c_quadrature: str | None = ALPHA_C_QUADRATURE,
    branch_end: str = "bifurcation",
    bifurcation_quadrature: str = BIFURCATION_QUADRATURE,
    progress: Callable[[Boundaries], None] | None = None,
) -> list[dict[str, float]]:
    """Spread of each boundary of ``rows`` over ``n_rules`` independent rules (``rows`` is the first).

    The boundaries at every omega of ``rows`` are recomputed on the other ``n_rules - 1`` variants
    of the solve rule, of the alpha_c correction's rule and of the bifurcation's rule
    (:func:`rule_variants`); for each key of
    BOUNDARY_KEYS the result holds ``<key>_err``, the sample standard deviation over the rules where
    the boundary was found (NaN with fewer than two), and ``<key>_found``, on how many rules it was.
    """
    if n_rules < 2:
        raise ValueError(f"an error estimate needs n_rules >= 2, got {n_rules}")
    cfg = config or SolverConfig()
    specs = rule_variants(cfg.quadrature, n_rules)[1:]
    fine = rule_variants(alpha_c_quadrature, n_rules)[1:] if alpha_c_quadrature else [None] * (n_rules - 1)
    bif = rule_variants(bifurcation_quadrature, n_rules)[1:]
    out = []
    for b in rows:
        p = params.replace(omega=b.omega)
        runs = [b]
        for spec, fine_spec, bif_spec in zip(specs, fine, bif):
            other = phase_boundaries(
                p, alphas, prox=cfg.prox, config=replace(cfg, quadrature=spec), alpha_c_quadrature=fine_spec,
                branch_end=branch_end, bifurcation_quadrature=bif_spec,
            )
            runs.append(other)
            if progress is not None:
                progress(other)
        row: dict[str, float] = {}
        for key in BOUNDARY_KEYS:
            values = [float(getattr(r, key)) for r in runs]
            row[f"{key}_err"] = _spread(values)
            row[f"{key}_found"] = sum(math.isfinite(v) for v in values)
        out.append(row)
    return out
