"""What ``attnphase simulate`` (one finite-d gradient-descent run) and ``validate`` (grid + report) do.

    attnphase simulate --d 1000 --alpha 2 --omega 0.3 --init semantic --json
    attnphase validate --quick --out results/validation

The options (the shared model group included) are defined in :mod:`attnphase.cli`.
Nothing heavy is imported at module level: torch, numpy and the numerics are
imported inside the command functions, after every option is checked. Bad
parameters raise ``ValueError`` naming the parameter (the top-level CLI prints
one line, exit code 2).
"""

from __future__ import annotations

import argparse
import json
import sys

from attnphase import options as opt

_INITS = ("semantic", "positional", "random")


def _check_choice(value: str, choices: tuple[str, ...], name: str) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def _check_threads(threads: int | None) -> None:
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")


def run_simulate(args: argparse.Namespace) -> int:
    """``attnphase simulate``: returns 0 when training converged, 1 otherwise."""
    _check_choice(args.init, _INITS, "init")
    _check_choice(args.optimizer, ("gd", "adam"), "optimizer")
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True)
    from attnphase.validation.data import check_dimension, n_samples

    check_dimension(args.d)
    n_samples(alpha, args.d)
    params = opt.params_from_args(args, omega=opt.single_omega(args, "simulate")).replace(r=args.rank)
    if params.L > args.d:
        raise ValueError(f"d (embedding dimension) must be >= L = {params.L}, got {args.d}")
    _check_threads(args.threads)
    import torch

    from attnphase.validation.experiments import SimSpec, resolve_dtype, run_simulation
    from attnphase.validation.training import TrainConfig

    resolve_dtype(args.dtype)
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    spec = SimSpec(
        d=args.d, alpha=alpha, init=args.init, seed=args.seed, params=params,
        train=TrainConfig(optimizer=args.optimizer, grad_tol=args.grad_tol, max_steps=args.max_steps),
        n_test=args.n_test, device=args.device, dtype=args.dtype,
    )
    res = run_simulation(spec)
    if args.json:
        print(json.dumps(opt.json_value(res.to_json())))
    else:
        out = res.to_dict()
        width = max(len(k) for k in out)
        for k, v in out.items():
            print(f"{k:>{width}}  {v}")
    if not res.converged:
        print(f"attnphase: warning: training stopped without converging ({res.status}, "
              f"|grad R|/sqrt(d) = {res.grad_norm:.2e} after {res.steps} steps)", file=sys.stderr)
        return 1
    return 0


def run_validate(args: argparse.Namespace) -> int:
    """``attnphase validate``: runs the grid, writes the report; returns 0 (1 if a run did not converge)."""
    params = opt.params_from_args(args, omega=opt.single_omega(args, "validate"))
    out_dir = opt.out_dir_from_args(args)
    if args.d is not None:
        from attnphase.validation.data import check_dimension

        check_dimension(args.d)
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {args.seeds}")
    _check_threads(args.threads)

    import torch

    from attnphase.validation.campaign import run_validation, validation_plan
    from attnphase.validation.experiments import resolve_device, resolve_dtype

    resolve_device(args.device)
    resolve_dtype(args.dtype)
    # The theory runs in a single-threaded worker process alongside: leave it one core.
    torch.set_num_threads(args.threads if args.threads is not None else max(1, torch.get_num_threads() - 1))
    plan = validation_plan(quick=args.quick, d=args.d, seeds=args.seeds, params=params, device=args.device,
                           dtype=args.dtype)
    summary = run_validation(plan, out_dir, progress=not args.quiet)
    if args.json:
        print(json.dumps(opt.json_value(summary)))
    print(f"wrote {out_dir}/report.md, summary.json and figures ({summary['wall_seconds']:.0f} s)", file=sys.stderr)
    return 0 if summary["all_converged"] else 1
