"""``attnphase census``: every fixed point at one (alpha, omega), ranked by the training objective e_t.

``--json`` prints one object whose key ``fixed_points`` is the list of :mod:`attnphase.numerics.phase.census`,
lowest e_t first, each with the ``solve --json`` keys, ``err_<key>``, ``stable``, ``leading_eigenvalue`` and
``starts``; ``--out DIR`` writes it to census.json and a row per fixed point to census.csv (rank r: and
census_starts.csv).  Exit code 1 if no start converged.  The census itself is
:func:`attnphase.numerics.commands.census_cli.cmd_census` (every rank), imported inside :func:`run`.
"""

from __future__ import annotations

import argparse

from attnphase import options as opt
from attnphase import outputs, solver_options

NAME = "census"
HELP = "every fixed point at one (alpha, omega), ranked by e_t: is the global minimum among the branches?"
DESCRIPTION = ("Search the state evolution for every fixed point (positional, semantic, agnostic, mixed) from a "
               "spread of starting overlaps at one alpha and omega; remove duplicates, label them, test their stability and "
               "rank them by the training objective e_t with error bars, lowest first (docs/method.md section 12, the census). "
               "With --rank R --teacher-rank R* (r or r* >= 2): the rank-r state evolution from each branch's embedded and "
               "cold starts and mixtures of the semantic and positional states, ranked by e_t with the per-block error "
               "of each point's height above the minimum (no stability test). Exit code 1 if no start converged.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--alpha``, the model group, the solver group, ``--error-estimate``, ``--out DIR``, ``--json``."""
    p.add_argument("--alpha", required=True, metavar="ALPHA", help="sample complexity alpha = n/d > 0 (one number)")
    opt.add_model_options(p)
    solver_options.add_solver_options(p)
    solver_options.add_error_estimate_option(p, "every fixed point's observables (err_<key>)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"output folder: writes census.json and census.csv (rank r: and census_starts.csv) there "
                   f"({outputs.OUT_RULE}; default: none written)")
    outputs.add_json_option(p)


def run(args: argparse.Namespace) -> int:
    """The census of the module doc; exit code 0, or 1 when no start converged."""
    from attnphase.numerics.commands.census_cli import cmd_census

    return cmd_census(args)
