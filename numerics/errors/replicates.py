"""Standard errors from a pooled rule's independent randomisation blocks (docs/method.md section 7).

A fixed point x* on a pooled rule of R blocks (``sobol10:4``) gets

    err = std_j(x*_j) / sqrt(R),

x*_j the fixed point on block j alone, warm from x* (:func:`replicate_points`); a boundary b (a root of g) the
blocks' linearised roots b_j = b - g_j(b) / g'(b) (:func:`linearised_root_error`).  An error bar covers the
rules' error only, not the solver's tolerance nor which of several close fixed points a solve lands on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import replicates, rule_blocks
from attnphase.numerics.se.matrix_solve import stalled_at_jump_scale
from attnphase.numerics.se.overlaps import on_branch_subspace
from attnphase.numerics.se.stalls import confirm_jump_acceptance
from attnphase.numerics.se.state_evolution import FixedPoint, solve

#: The observables of a fixed point that carry error bars (``err_<key>``).
ERROR_KEYS = ("q", "m", "V", "theta", "eps_g", "e_t")


@dataclass(frozen=True)
class QuadratureError:
    """Error bars of a fixed point's record: ``std`` by key of :func:`error_keys` (ERROR_KEYS at r = r* = 1, the gauge
    invariants too at r >= 2, a list for a list-valued key; the blocks' standard error, or the standard deviation
    over independent rules; NaN below two converged re-solves), the ``rules`` used, and how many re-solves
    ``converged`` on the same branch."""

    std: dict[str, Any]
    rules: tuple[str, ...]
    converged: int


#: Relative round-off of one double: the least error bar a computed number carries.
ROUNDOFF = float(np.finfo(float).eps)


def spread(values: Sequence[float]) -> float:
    """std(values, ddof=1) over the finite values, at least their round-off ROUNDOFF * max |value| (0 where all
    are exactly 0); NaN with fewer than two."""
    finite = [float(v) for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return math.nan
    return max(float(np.std(finite, ddof=1)), ROUNDOFF * max(abs(v) for v in finite))


def standard_error(values: Sequence[float]) -> float:
    """:func:`spread` / sqrt(n) over the n finite values (NaN with fewer than two)."""
    n = sum(math.isfinite(v) for v in values)
    return spread(values) / math.sqrt(n) if n >= 2 else math.nan


def replicate_count(config: SolverConfig) -> int:
    """R, the blocks every error bar of ``config`` is the spread over: the solve rule's randomisations
    (0 when it has one, or when ``config.error_bars`` is off)."""
    return len(rule_blocks(config.quadrature)) if config.error_bars else 0


def block_config(config: SolverConfig, j: int) -> SolverConfig:
    """``config`` with every quadrature role of as many blocks as the solve rule's reduced to its block j
    (the roles of another block count keep their whole rule)."""
    n = replicates(config.quadrature)
    changes = {role: rule_blocks(spec)[j] for role, spec in config.rules().items() if replicates(spec) == n}
    return config.replace(**changes)


def resolved(fp: FixedPoint, config: SolverConfig) -> FixedPoint:
    """``fp`` re-solved on ``config``, warm from its overlaps on its branch's subspace: the one re-solve of every
    error bar (at r >= 2 or r* >= 2 with ``fp``'s quasi-Newton Jacobian; at r = r* = 1 without memory)."""
    memory = fp.memory if fp.overlaps.is_matrix else None
    return solve(fp.params, fp.alpha, fp.requested, init=on_branch_subspace(fp.overlaps, fp.branch), config=config,
                 memory=memory)


def replicate_configs(config: SolverConfig, n_rules: int) -> tuple[list[SolverConfig], bool]:
    """(the configs a point's replicates are solved on, whether they are blocks): the solve rule's R >= 2 blocks,
    else ``config.variant(k)``, k < n_rules (none when ``config.error_bars`` is off or n_rules < 2)."""
    R = replicate_count(config)
    if R:
        return [block_config(config, j) for j in range(R)], True
    if not config.error_bars or n_rules < 2:
        return [], False
    return [config.variant(k) for k in range(n_rules)], False


def replicate_solves(fp: FixedPoint, config: SolverConfig, n_rules: int) -> tuple[list[FixedPoint], bool]:
    """(``fp`` re-solved on each config of :func:`replicate_configs`, wherever each lands; whether they are blocks)."""
    configs, blocks = replicate_configs(config, n_rules)
    return [resolved(fp, cfg) for cfg in configs], blocks


def on_its_branch(fp: FixedPoint, solves: Sequence[FixedPoint]) -> list[FixedPoint | None]:
    """The replicates of ``fp`` among its re-solves ``solves``: None in place where one did not converge on its
    branch."""
    return [p if p.status.converged and p.branch == fp.branch else None for p in solves]


def replicate_points(fp: FixedPoint, config: SolverConfig, n_rules: int) -> tuple[list[FixedPoint | None], bool]:
    """(the replicates of ``fp``, whether they are blocks): its re-solves (:func:`replicate_solves`) that stay on its
    branch (:func:`on_its_branch`), None in place of the others."""
    solves, blocks = replicate_solves(fp, config, n_rules)
    return on_its_branch(fp, solves), blocks


def error_keys(fp: FixedPoint) -> tuple[str, ...]:
    """The keys of ``fp``'s record that carry error bars (the gauge invariants too at r >= 2 or r* >= 2)."""
    from attnphase.numerics.se.results import MATRIX_ERROR_KEYS

    return MATRIX_ERROR_KEYS if fp.overlaps.is_matrix else ERROR_KEYS


def replicate_errors(fp: FixedPoint, reps: Sequence[FixedPoint | None], blocks: bool,
                     keys: Sequence[str] | None = None) -> dict[str, Any]:
    """``err_<key>`` for each of ``keys`` (default :func:`error_keys`; a list, entry by entry, for a list-valued
    key): :func:`standard_error` over the converged replicates for blocks, :func:`spread` for independent rules,
    at least the point's offset (:func:`at_least_the_offset`); ``replicates`` (used) and ``replicates_tried``."""
    recs = [p.record for p in reps if p is not None]
    out: dict[str, Any] = {"replicates": len(recs), "replicates_tried": len(reps)}
    bar = standard_error if blocks else spread
    for key in (error_keys(fp) if keys is None else keys):
        ref = np.atleast_1d(np.asarray(fp.record[key], dtype=float))
        vals = [np.atleast_1d(np.asarray(r[key], dtype=float)) for r in recs]
        sd = [at_least_the_offset(bar([float(v[i]) for v in vals]), float(ref[i]), [float(v[i]) for v in vals])
              for i in range(ref.size)]
        out[f"err_{key}"] = sd[0] if np.ndim(fp.record[key]) == 0 else sd
    return out


def derived_errors(fp: FixedPoint, reps: Sequence[FixedPoint | None], blocks: bool,
                   values: Callable[[FixedPoint], Mapping[str, float]]) -> dict[str, float]:
    """``err_<key>`` of each number ``values(fp)`` holds (a quantity derived from the point, e.g. a norm of its
    overlaps), as :func:`replicate_errors` makes a record key's: over ``values`` of the converged replicates."""
    ref = values(fp)
    got = [values(p) for p in reps if p is not None]
    bar = standard_error if blocks else spread
    return {f"err_{k}": at_least_the_offset(bar([float(g[k]) for g in got]), float(v), [float(g[k]) for g in got])
            for k, v in ref.items()}


def judged_matrix_point(fp: FixedPoint, config: SolverConfig, n_rules: int = 0) -> tuple[FixedPoint, dict[str, Any]]:
    """A rank-r solve (r >= 2 or r* >= 2) judged as ``attnphase solve`` judges it, with its error bars: where it did
    not converge, accepted at the rule's jump scale where the map jumps by at least its residual next to it
    (:func:`~attnphase.numerics.se.matrix_solve.stalled_at_jump_scale`); where converged, ``err_<key>``,
    ``replicates`` and ``replicates_tried`` from its replicates (:func:`replicate_errors`; {} where no bar is made),
    and an acceptance at the jump scale that fewer than two replicates reproduce withdrawn
    (:func:`~attnphase.numerics.se.stalls.confirm_jump_acceptance`: not converged, {})."""
    fp = stalled_at_jump_scale(fp, config)
    if not (fp.status.converged and replicate_configs(config, n_rules)[0]):
        return fp, {}
    err = replicate_errors(fp, *replicate_points(fp, config, n_rules))
    confirmed = confirm_jump_acceptance(fp, err["replicates"], err["replicates_tried"])
    return (confirmed, err) if confirmed.status.converged else (confirmed, {})


def no_errors(fp: FixedPoint) -> dict[str, Any]:
    """``err_<key>`` of every key of :func:`error_keys`, NaN (a list of NaN for a list-valued key): a point without
    error bars."""
    return {f"err_{k}": math.nan if np.ndim(fp.record[k]) == 0 else [math.nan] * len(fp.record[k])
            for k in error_keys(fp)}


#: A point farther than this many spreads from the mean of its replicates lies outside their cloud.
OFFSET_SPREADS = 3.0


def at_least_the_offset(err: float, value: float, replicates: Sequence[float]) -> float:
    """``err``, or, where the point lies outside its replicates' cloud (farther than OFFSET_SPREADS times
    their :func:`spread` from their mean), that distance: the replicates do not reproduce such a point."""
    finite = [v for v in replicates if math.isfinite(v)]
    if not (math.isfinite(err) and len(finite) >= 2 and math.isfinite(value)):
        return err
    offset = abs(value - float(np.mean(finite)))
    return max(err, offset) if offset > OFFSET_SPREADS * spread(finite) else err


def linearised_root_error(root: float, block_values: Sequence[float], slope: float) -> float:
    """Standard error of a root b of g (pooled rules) from the blocks' values g_j(b):
    std_j(b - g_j(b) / g'(b)) / sqrt(R) (NaN when the slope is 0 or not finite)."""
    if not (math.isfinite(slope) and slope != 0.0):
        return math.nan
    return standard_error([root - g / slope for g in block_values])
