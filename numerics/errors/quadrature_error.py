"""The error bar of a fixed point or of the phase boundaries (docs/method.md section 7): from the pooled rule's
blocks (:mod:`attnphase.numerics.errors.replicates`), else the spread over K independent rules
(``--error-estimate K``; for Gauss--Hermite the same rule at higher orders: an upper estimate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnphase.numerics.phase.boundary_results import BOUNDARY_KEYS, Boundaries
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import rule_blocks
from attnphase.numerics.errors.replicates import (QuadratureError, error_keys, no_errors,
                                                 replicate_configs, replicate_errors, replicate_points, spread)
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.state_evolution import FixedPoint

#: Fewest rules an error estimate is made from (a spread needs two).
MIN_RULES = 2


def independent_rules(config: SolverConfig, k: int | None) -> int:
    """How many independent rules an error estimate repeats a computation on: ``k`` (``--error-estimate``)
    when the solve rule has one block and k >= 2, else 0 (blocks give the error bar, or none is asked)."""
    return int(k) if k and k >= MIN_RULES and not rule_blocks(config.quadrature) else 0


#: Independent rules the error bar of one point (``solve``, ``census``) is made from when its rule has one
#: block (sobolK, ghN) and no K is given: a few warm re-solves, so one point never goes without its bar.
POINT_RULES = 4


def point_rules(config: SolverConfig, k: int | None) -> int:
    """:func:`independent_rules` for one point: ``k`` (``--error-estimate``), else POINT_RULES when the solve
    rule has one block and error bars are on (0 when its blocks give the bar, or none is asked)."""
    if k is None and config.error_bars and not rule_blocks(config.quadrature):
        return POINT_RULES
    return independent_rules(config, k)


def error_bars_note(config: SolverConfig, n_rules: int) -> str:
    """Why the results of ``config`` carry no error bar ("" when they do: from the solve rule's blocks, or
    from ``n_rules`` >= 2 independent rules)."""
    if not config.error_bars:
        return "no error bars: --error-estimate 0 asks for none"
    if rule_blocks(config.quadrature) or n_rules >= MIN_RULES:
        return ""
    return (f"no error bars: the rule {config.quadrature} is one rule (a single scrambling, or deterministic), so it "
            f"has no spread; --error-estimate K (K >= 2) repeats the job on K independent rules, or a rule of "
            f"several scramblings (sobolK:4) gives them at no extra cost")


def e_t_rule_note(config: SolverConfig) -> str:
    """What err_e_t leaves out where the e_t rule (``--e-t-quadrature``) does not vary over the replicates: its blocks
    are the solve rule's blocks' partners only with as many of them (:func:`~attnphase.numerics.errors.replicates.
    block_config`); a rule of one scrambling is the same in every block re-solve, so its own quadrature error is
    not in the bar ("" where it is, or where no bar is made from blocks)."""
    from attnphase.numerics.quadrature.rules import replicates

    spec, R = config.e_t_quadrature, replicates(config.quadrature)
    if not config.error_bars or spec is None or R < 2 or replicates(spec) == R:
        return ""
    return (f"err_e_t leaves out the e_t rule's own error: --e-t-quadrature {spec} has {replicates(spec)} "
            f"scrambling(s) where the solve rule {config.quadrature} has {R} blocks, so every block re-solve reads "
            f"e_t on the same rule (give it {R}, e.g. {spec.split(':')[0]}:{R}, and its blocks enter the bar)")


def fixed_point_error(fp: FixedPoint, config: SolverConfig, n_rules: int = 0) -> QuadratureError | None:
    """The error bar of ``fp`` over its replicates (:func:`~attnphase.numerics.errors.replicates.replicate_configs`):
    the standard error over the pooled rule's blocks, else the spread over ``n_rules`` >= 2 independent rules
    ``config.variant(k)`` (module doc), for the keys of :func:`~attnphase.numerics.errors.replicates.error_keys` (at
    r >= 2 the invariants); NaN, none re-solved, for a point that did not converge (as :func:`point_errors`); None
    without a rule to re-solve on (also when ``config.error_bars`` is off).  ValueError for an ``n_rules`` that is no
    integer >= 0, and for a ``config`` whose rule is not the one ``fp`` was solved on (its bar would be that rule's:
    ``fp.quadrature`` against :func:`~attnphase.numerics.se.se_map.model_rule`)."""
    if isinstance(n_rules, bool) or not isinstance(n_rules, (int, np.integer)) or n_rules < 0:
        raise ValueError(f"n_rules must be an integer >= 0, got {n_rules!r}")
    if fp.quadrature and (named := model_rule(fp.params, config).name) != fp.quadrature:
        raise ValueError(f"the point was solved on the rule {fp.quadrature}, the config names {named} "
                         f"(quadrature={config.quadrature!r}): pass the config the point was solved with")
    configs, blocks = replicate_configs(config, n_rules)
    if not configs:
        return None
    rules = tuple(c.quadrature for c in configs)
    if not fp.status.converged:
        return QuadratureError(std={k[len("err_"):]: v for k, v in no_errors(fp).items()}, rules=rules, converged=0)
    err = replicate_errors(fp, replicate_points(fp, config, n_rules)[0], blocks)
    return QuadratureError(std={k: err[f"err_{k}"] for k in error_keys(fp)}, rules=rules, converged=err["replicates"])


def point_errors(points: Sequence[FixedPoint], config: SolverConfig, n_rules: int = 0) -> tuple[dict[str, Any], ...]:
    """``{"err_<key>": ...}`` of every point, at every rank, for the keys of
    :func:`~attnphase.numerics.errors.replicates.error_keys`: the numbers of :func:`fixed_point_error`; NaN for a
    point that did not converge, and for every point when no error bar is made."""
    barred = config.error_bars and (rule_blocks(config.quadrature) or n_rules >= MIN_RULES)
    out = []
    for fp in points:
        keys = error_keys(fp)
        if barred and fp.status.converged:
            err = replicate_errors(fp, *replicate_points(fp, config, n_rules))
            out.append({f"err_{k}": err[f"err_{k}"] for k in keys})
        else:
            out.append(no_errors(fp))
    return tuple(out)


def replicate_spread(runs: Sequence[Boundaries]) -> dict[str, float]:
    """For each key of BOUNDARY_KEYS, ``err_<key>``: the sample standard deviation of the boundary over
    ``runs`` (the same omega on independent rules) where it was found (NaN with fewer than two), and
    ``<key>_found``: on how many runs it was."""
    row: dict[str, float] = {}
    for key in BOUNDARY_KEYS:
        values = [float(getattr(r, key)) for r in runs]
        row[f"err_{key}"] = spread(values)
        row[f"{key}_found"] = sum(math.isfinite(v) for v in values)
    return row
