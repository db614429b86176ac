"""Which models and options the Bayes-optimal estimator takes (docs/bayes-optimal.md), shared by ``solve``, ``sweep``
and ``phase-diagram --estimator bayes-optimal``, and the model its records echo (without ``lam`` and ``loss``).
"""

from __future__ import annotations

import argparse
from typing import Any

from attnphase import execution_options, outputs, workload
from attnphase import options as opt
from attnphase.numerics.commands.point_record import model_echo
from attnphase.numerics.se.bayes_curve import BAYES_BRANCHES


def check_estimator_branch(estimator: str, branch: str | None) -> str:
    """The branch to solve for (the estimator's default where ``branch`` is None); ValueError naming --branch
    where the branch belongs to the other estimator."""
    if estimator == "bayes-optimal":
        if branch is None:
            return "informative"
        if branch not in BAYES_BRANCHES:
            raise ValueError(f"--branch {branch} is an ERM branch; --estimator bayes-optimal has "
                             f"{' and '.join(BAYES_BRANCHES)}")
        return branch
    if branch in BAYES_BRANCHES:
        raise ValueError(f"--branch {branch} needs --estimator bayes-optimal")
    return branch or "semantic"


def bayes_model_echo(params) -> dict:
    """:func:`~attnphase.numerics.commands.point_record.model_echo` without ``loss`` and ``P``: the posterior mean
    minimises no training loss and does not use the positions."""
    return {k: v for k, v in model_echo(params).items() if k not in ("loss", "P")}


#: The yes/no columns of the Bayes-optimal rows: 1/0 in a CSV or a dataset, true/false in JSON
#: (docs/reference/outputs.md).
YES_NO = ("stable", "perfect_recovery", "coincides")


def json_rows(rows: list[dict]) -> list[dict]:
    """``rows`` as JSON gives them: each :data:`YES_NO` entry true/false (null where unknown: a failed task's)."""
    return [{k: bool(v) if k in YES_NO and v is not None else v for k, v in r.items()} for r in rows]


def bayes_params(params) -> dict:
    """The model's parameters (``ModelParams.to_dict``) without ``lam``, ``loss`` and ``P``, which the Bayes-optimal
    estimator does not use (docs/model.md section 9)."""
    return {k: v for k, v in params.to_dict().items() if k not in ("lam", "loss", "P")}


def check_bayes_model(args: argparse.Namespace, params) -> None:
    """What the Bayes-optimal state evolution solves: rank 1, independent tokens, omega < 1; no ``--lam`` (the
    posterior mean has no ridge penalty) and no ``--P`` (it does not use the positions) (one-line ValueErrors)."""
    given = opt.model_options_given(args)
    if "--lam" in given:
        raise ValueError(f"--lam {args.lam}: the Bayes-optimal estimator (the posterior mean) has no ridge penalty; "
                         "leave --lam out with --estimator bayes-optimal")
    if "--P" in given:
        raise ValueError(f"--P {args.P}: the Bayes-optimal estimator does not use the positional encodings (the "
                         "teacher never sees them: docs/model.md section 9); leave --P out with --estimator "
                         "bayes-optimal")
    if (getattr(args, "rank", None) or 1) != 1 or (getattr(args, "teacher_rank", None) or 1) != 1:
        raise ValueError("--rank and --teacher-rank: --estimator bayes-optimal is solved at rank 1")
    if not params.omega < 1.0:
        raise ValueError(f"--omega {params.omega:g}: --estimator bayes-optimal needs omega < 1 (at omega = 1 the "
                         "target T = A does not depend on Q*: nothing to estimate)")
    if params.correlated_tokens:
        raise ValueError("--token-cov: --estimator bayes-optimal is solved for independent tokens")


def bayes_job(args: argparse.Namespace, alphas: list[float], max_points: int, what: str,
              option: str) -> tuple[Any, list[float], Any, Any, float]:
    """(model, omegas, executor, ``--out`` folder, CPU seconds of one task) of a Bayes-optimal job over ``alphas``:
    the model at every omega, the solver options and the grid's size checked, the defaults announced."""
    params, omegas = opt.omegas_from_args(args)
    for w in omegas:
        check_bayes_model(args, params.replace(omega=w))
    check_bayes_solver_options(args)
    per_task = workload.bayes_task_seconds(len(alphas), params.L)
    workload.check_grid(len(alphas) * len(omegas), max_points, what, option, args.large, per_task * len(omegas),
                        f"of CPU time, the Bayes-optimal state evolution at L = {params.L}")
    executor = execution_options.executor_from_args(args)
    out_dir = outputs.out_dir_from_args(args)
    opt.announce_defaults(args, params)
    return params, omegas, executor, out_dir, per_task


def check_bayes_solver_options(args: argparse.Namespace) -> None:
    """One-line ValueError naming the first ERM solver option given with ``--estimator bayes-optimal``: its state
    evolution is solved on its own Gauss rule (docs/bayes-optimal.md), so they would be ignored."""
    from attnphase.solver_options import SOLVER_OPTIONS

    given = [option for option, field in SOLVER_OPTIONS if getattr(args, field, None) is not None]
    if getattr(args, "precision", None) is not None:
        given.append("--precision")
    if str(getattr(args, "error_estimate", "auto")).strip().lower() != "auto":
        given.append("--error-estimate")
    if given:
        raise ValueError(f"{given[0]}: an option of the ERM solver; --estimator bayes-optimal solves its state "
                         "evolution on its own Gauss rule, each error bar the change from the rule of 16 nodes fewer "
                         "(docs/bayes-optimal.md)")
