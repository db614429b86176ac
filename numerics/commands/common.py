"""What the numerics' commands share: the ranks of the model options, the set-up of one point, the
tasks folder and the command line of a job, and a sweep's exit code.

The command modules import these from here; one imports another only to hand a case over, downwards:
``cli`` and ``scan`` give their rank-r case to ``rank_cli`` and ``phase-diagram --census`` to ``census`` (which
uses ``rank_cli``'s records at r >= 2).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from attnphase import options as opt
from attnphase import solver_options
from attnphase import workload
from attnphase.numerics.commands.point_record import EXIT_NO_BRANCH


#: Where a job keeps its finished tasks, under its --out folder (docs/distributed.md).
TASKS_FOLDER = "tasks"


def command_line() -> str:
    """The command as typed (a dataset's ``command`` attribute)."""
    import shlex

    return "attnphase " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def point_setup(args: argparse.Namespace, command: str):
    """The model, SolverConfig and independent-rule count of its error estimate (0: none, or from the
    rules' blocks) of a command at one (alpha, omega)
    (``solve``, ``census``): checked (one-line errors before any work) and the defaults announced."""
    params = opt.params_from_args(args, omega=opt.single_omega(args, command))
    cfg = solver_options.config_from_args(args)
    solver_options.check_supported(params, cfg)
    from attnphase.numerics.errors.quadrature_error import point_rules

    n_rules = point_rules(cfg, solver_options.error_estimate_from_args(args))
    opt.announce_defaults(args, params)
    workload.announce_rules(params.L, cfg)
    return params, cfg, n_rules


def ranks_from_args(args: argparse.Namespace) -> tuple[int, int]:
    """(r, r*) from ``--rank`` / ``--teacher-rank`` (1 where a command has neither); ValueError naming the option."""
    out = []
    for option, dest in (("--rank", "rank"), ("--teacher-rank", "teacher_rank")):
        v = getattr(args, dest, 1)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{option} must be an integer >= 1, got {v!r}")
        out.append(int(v))
    return out[0], out[1]


def sweep_exit_code(branch: str, n_failed: int, n_on: int) -> int:
    """1 if a point (or a task) failed, EXIT_NO_BRANCH (said on stderr) if the branch is at no alpha, else 0."""
    if n_failed:
        return 1
    if n_on == 0:
        print(f"attnphase: no {branch} fixed point at any alpha of the grid (exit code {EXIT_NO_BRANCH})",
              file=sys.stderr)
        return EXIT_NO_BRANCH
    return 0


def check_distinct_models(field: str, values: list, models: list) -> None:
    """Two scanned values that give the same model (``--sigma "0.5;0.5,0.5"``: a scalar and the same value per
    token) are a ValueError naming the option, before any work."""
    import json

    seen: dict[str, object] = {}
    for v, m in zip(values, models):
        key = json.dumps(m.to_dict(), sort_keys=True, default=str)
        if key in seen:
            raise ValueError(f"--{field.replace('_', '-')}: the values {str(seen[key])!r} and {str(v)!r} give the same "
                             f"model; give each once")
        seen[key] = v
