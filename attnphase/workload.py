"""How much work a command's grid is: the grid limits past which ``--large`` is needed, and rough time estimates.

* :func:`check_grid` -- a grid of more than :data:`MAX_SWEEP_POINTS` (``sweep``) or
  :data:`MAX_DIAGRAM_POINTS` (``phase-diagram``, ``scan``) solves is a one-line error unless
  ``--large`` (:func:`add_large_option`) was given; checked before any work.
* :func:`estimate_seconds` / :func:`announce_work` -- a rough wall time from
  :data:`SECONDS_PER_SOLVE` (measured at L = 2, sobol12, 2 cores) scaled by the rule's node count
  and by L, said on stderr when a computation may be long.
* :func:`announce_rules` -- every quadrature rule of the configuration with at least
  :data:`LARGE_RULE_NODES` nodes is named on stderr with an estimate of its memory.

This module imports the standard library and :mod:`attnphase.solver_options` only (the top-level parser imports it);
the quadrature's node count is imported where an estimate is made.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnphase.solver_options import SOLVER_DEFAULTS, SOLVER_OPTIONS

#: Grids past these sizes need ``--large`` (a rough second per solve at L = 2 with sobol12 on 2 cores).
MAX_SWEEP_POINTS = 500
MAX_DIAGRAM_POINTS = 1000
#: Rough wall time of one state-evolution solve at L = 2 with sobol12 (2^12 nodes), 2 cores (measured).
SECONDS_PER_SOLVE = 0.4


def check_grid(n: int, limit: int, what: str, option: str, large: bool) -> None:
    """A grid of ``n`` solves: past ``limit`` a ValueError unless ``--large`` was given."""
    if n > limit and not large:
        t = n * SECONDS_PER_SOLVE
        span = f"{t / 3600:.0f} h" if t >= 7200 else f"{t / 60:.0f} min"
        raise ValueError(f"{option}: {n} {what} is more than {limit} (roughly {span} or more at L = 2, sobol12, "
                         f"2 cores); pass --large to run it anyway")


def estimate_seconds(n_solves: int, L: int, config: Any) -> float:
    """A rough wall time of ``n_solves`` solves: scales with the solve rule's node count."""
    from attnphase.numerics.quadrature.rules import rule_nodes

    return n_solves * SECONDS_PER_SOLVE * rule_nodes(L, config.quadrature) / 2 ** 12 * (4 ** (L - 2))


def announce_work(what: str, n_solves: int, L: int, config: Any, *, quiet: bool = False, min_seconds: float = 30) -> None:
    """Say on stderr what a long computation does and roughly how long it may take."""
    t = estimate_seconds(n_solves, L, config)
    if quiet or t < min_seconds:
        return
    span = f"{t / 60:.0f} min" if t >= 120 else f"{t:.0f} s"
    print(f"attnphase: {what}: roughly {span} or more (a rough estimate; the progress bar tells)",
          file=sys.stderr, flush=True)


#: A rule above this many nodes is announced (memory ~2 kB per node in one proximal search).
LARGE_RULE_NODES = 2 ** 17


def announce_rules(L: int, config: Any, *, quiet: bool = False) -> None:
    """Name every rule of the configuration that is large, and larger than its role's default: its nodes and an
    estimate of its memory."""
    if quiet:
        return
    from attnphase.numerics.quadrature.rules import rule_nodes

    for option, field in SOLVER_OPTIONS:
        spec = getattr(config, field, None)
        if field.endswith("quadrature") and spec is not None:
            n = rule_nodes(L, spec)
            usual = SOLVER_DEFAULTS.get(field)
            if n >= LARGE_RULE_NODES and (usual is None or n > rule_nodes(L, usual)):
                print(f"attnphase: note: {option} {spec}: {n:.3g} nodes at L = {L} (about {n * 2e3 / 1e9:.1f} GB "
                      f"during a proximal search; each step ~{n / 2 ** 12:.0f}x the default rule's time)",
                      file=sys.stderr, flush=True)


def add_large_option(p: argparse.ArgumentParser, limit: int) -> None:
    p.add_argument("--large", action="store_true", help=f"allow a grid of more than {limit} solves")
