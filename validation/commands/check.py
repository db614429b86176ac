"""``attnphase check``: the derivation checks for the model given on the command line, as a table (``--json``: one
object; ``--out DIR``: check.md, check.json, check.csv, docs/reference/outputs.md).  Exit code 0 when no check
fails (skipped checks say why), 1 when one fails or none ran (every one skipped), 2 for bad input.  Nothing heavy
is imported at module level.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from attnphase import options as opt
from attnphase import outputs, work

NAME = "check"
HELP = "derivation checks for a model: generated kernels, limit loss, SE equations, Phi, eps_lin"
DESCRIPTION = ("Run, for the given model, every identity that ties the derivation together (docs/model.md "
               "sections 2-5) and print a table: check, what it compares, measured error, tolerance, pass/fail. "
               "Exit code 0 when no check fails (skipped checks say why), 1 when one fails or none ran (every one "
               "skipped), 2 for bad input.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The model group, ``--alpha``, ``--estimator``, the selection and size of the checks, ``--seed``, ``--json``, ``--out DIR``."""
    opt.add_model_options(p, command="check")
    p.add_argument("--alpha", default=None, metavar="ALPHA",
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
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder: writes check.md (a markdown table), check.json (the --json object) and "
                   "check.csv (one row per check: error, tolerance, status, passed 1/0) there "
                   f"({outputs.OUT_RULE}; default: none written)")


def run(args: argparse.Namespace) -> int:
    """``attnphase check``: run the checks, print the table (or one JSON object), optionally write check.md."""
    from attnphase.validation.derivation_checks import (FULL, QUICK, check_csv, markdown_table, run_checks,
                                                        select_checks, text_table, to_json)

    params = opt.params_from_args(args, omega=opt.single_omega(args, NAME))
    bayes = getattr(args, "estimator", "erm") == "bayes-optimal"
    if bayes:
        from attnphase.numerics.commands.bayes_options import check_bayes_model
        from attnphase.validation.derivation_checks.nishimori_check import bayes_check_alpha

        if args.only is not None:
            raise ValueError("--only selects among the ERM checks; --estimator bayes-optimal runs the two Nishimori checks")
        check_bayes_model(args, params)
        args.alpha = bayes_check_alpha(params.L) if args.alpha is None else args.alpha
    args.alpha = 2.0 if args.alpha is None else args.alpha
    try:
        select_checks(args.only)  # an unknown name fails before any work
    except ValueError as exc:
        raise ValueError(f"--only: {exc}") from None
    args.alpha = opt.parse_value(str(args.alpha), "--alpha", positive=True)  # as every command reads one alpha
    out_dir = outputs.out_dir_from_args(args) if args.out is not None else None  # --out "" refused, as everywhere
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    opt.announce_defaults(args, params)

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
    obj = (to_json(params, args.alpha, results) | {"seed": args.seed, "quick": bool(args.quick)}
           | ({"estimator": "bayes-optimal"} if bayes else {}))
    if bayes:  # the model as the Bayes-optimal records give it: no lam, no loss
        from attnphase.numerics.commands.bayes_options import bayes_params

        obj["model"] = bayes_params(params)
    print(json.dumps(obj, allow_nan=False) if args.json else text_table(results))
    if out_dir is not None:
        model = params.to_dict() | {"alpha": args.alpha, "estimator": args.estimator if bayes else "erm"}
        with outputs.staged_output(out_dir, job="check", model=model) as stage:
            outputs.write_text_atomic(stage / "check.md", markdown_table(params, args.alpha, results, ridge=not bayes))
            outputs.write_text_atomic(stage / "check.json", json.dumps(obj, allow_nan=False, indent=1) + "\n")
            outputs.write_text_atomic(stage / "check.csv", check_csv(args.alpha, results))
        if not args.json:
            print(f"wrote check.md, check.json, check.csv into {out_dir}", file=sys.stderr)
    failed = [r for r in results if r.status == "fail"]
    for r in failed:
        print(f"attnphase: check failed: {r.line()}", file=sys.stderr)
    if results and all(r.status == "skip" for r in results):  # nothing was verified: not a pass
        print("attnphase: warning: no check ran: every check asked for was skipped (the table says why)",
              file=sys.stderr)
        return 1
    return 1 if failed else 0
