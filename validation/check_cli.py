"""Subcommand ``check``: the derivation checks for the model given on the command line.

    attnphase check                                   # the paper's model, alpha = 2
    attnphase check --A "0.3,0.7;0.8,0.2" --omega 0.14 --json
    attnphase check --L 3 --out results/checks         # also writes results/checks/check.md

Exit code 0 when no check fails (skipped checks say why), 1 when one fails, 2 for bad input.
Nothing heavy is imported at module level (the checks import torch for autograd, inside check 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from attnphase import options as opt
from attnphase import outputs, work


# --- model options: the one place this command reads them (a shared options module is coming) ---
def _add_model_options(p: argparse.ArgumentParser) -> None:
    from attnphase.numerics.commands.cli import add_model_arguments

    add_model_arguments(p)


def _model_from_args(args: argparse.Namespace) -> Any:
    from attnphase.numerics.commands.cli import params_from_args

    return params_from_args(args)


def cmd_check(args: argparse.Namespace) -> int:
    """``attnphase check``: run the checks, print the table (or one JSON object), optionally write check.md."""
    from attnphase.validation.derivation_checks import FULL, QUICK, markdown_table, run_checks, select_checks, text_table, to_json

    params = _model_from_args(args)
    bayes = getattr(args, "estimator", "erm") == "bayes-optimal"
    if bayes:
        from attnphase.validation.derivation_checks.nishimori_check import bayes_check_alpha

        args.alpha = bayes_check_alpha(params.L) if args.alpha is None else args.alpha
        if args.only is not None:
            raise ValueError("--only selects among the ERM checks; --estimator bayes-optimal runs the two Nishimori checks")
        if not params.omega < 1.0:
            raise ValueError(f"--omega {params.omega:g}: --estimator bayes-optimal needs omega < 1 (at omega = 1 the "
                             "target T = A does not depend on Q*: nothing to estimate)")
        if params.C is not None:
            raise ValueError("--token-cov: --estimator bayes-optimal is solved for independent tokens")
        if params.r != 1 or params.r_star != 1:
            raise ValueError("--rank and --teacher-rank: --estimator bayes-optimal is solved at rank 1")
    args.alpha = 2.0 if args.alpha is None else args.alpha
    try:
        select_checks(args.only)  # an unknown name fails before any work
    except ValueError as exc:
        raise ValueError(f"--only: {exc}") from None
    if not (0 < args.alpha < float("inf")):
        raise ValueError(f"--alpha must be a finite number > 0, got {args.alpha}")
    out_dir = outputs.out_dir_from_args(args) if args.out else None
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")

    def progress(res: Any) -> None:
        if not (args.json or getattr(args, "quiet", False)):
            print(f"  {res.line()}  ({res.seconds:.1f} s)", file=sys.stderr, flush=True)

    work.begin("running the derivation checks")
    sizes = QUICK if args.quick else FULL
    if bayes:
        from attnphase.validation.derivation_checks.nishimori_check import run_bayes_checks

        results = run_bayes_checks(params, args.alpha, sizes, seed=args.seed, progress=progress)
    else:
        results = run_checks(params, args.alpha, sizes, only=args.only, seed=args.seed, progress=progress)
    if args.json:
        print(json.dumps(to_json(params, args.alpha, results), allow_nan=False))
    else:
        print(text_table(results))
    if out_dir is not None:
        with outputs.staged_output(out_dir, job="check", model=params.to_dict() | {"alpha": args.alpha}) as stage:
            outputs.write_text_atomic(stage / "check.md", markdown_table(params, args.alpha, results))
        if not args.json:
            print(f"wrote {out_dir / 'check.md'}", file=sys.stderr)
    failed = [r for r in results if r.status == "fail"]
    for r in failed:
        print(f"attnphase: check failed: {r.line()}", file=sys.stderr)
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand."""
    p = sub.add_parser(
        "check",
        help="derivation checks for a model: generated kernels, limit loss, SE equations, Phi, eps_lin",
        description="Run, for the given model, every identity that ties the derivation together (docs/model.md "
        "sections 2-5) and print a table: check, what it compares, measured error, tolerance, pass/fail. "
        "Exit code 0 when no check fails, 1 when one fails, 2 for bad input.",
    )
    _add_model_options(p)
    p.add_argument("--alpha", type=float, default=None,
                   help="alpha of the fixed-point checks (default 2; with --estimator bayes-optimal halfway between "
                   "alpha_WR and 1/L)")
    opt.add_estimator_option(p, "the Nishimori identities qhat = mhat = Vhat and q = m, V = rho0 - q at its fixed point, "
                             "each to its Monte Carlo error bar")
    p.add_argument("--only", default=None, metavar="LIST",
                   help="comma list of checks by number or name: 1 prox, 2 limit-loss, 3 hats, 4 prior, "
                        "5 fixed-point, 6 eps-lin, 7 codegen (default: all)")
    p.add_argument("--quick", action="store_true", help="small sizes (the test suite's): wider tolerances, seconds")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object with a list of checks")
    p.add_argument("--out", default=None, metavar="DIR", help="also write DIR/check.md (a markdown table)")
    p.set_defaults(func=cmd_check)
