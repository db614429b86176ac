"""Subcommands ``simulate`` (one finite-d gradient-descent run) and ``validate`` (grid + report).

    attnphase simulate --d 1000 --alpha 2 --omega 0.3 --init semantic --json
    attnphase validate --quick --out results/validation

Nothing heavy is imported at module level: torch, numpy and the numerics are
imported inside the command functions, so ``attnphase --help`` and the
numerics subcommands never import torch. Bad parameters raise ``ValueError``
naming the parameter (the top-level CLI prints one line, exit code 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

_INITS = ("semantic", "positional", "random")


def _model_params(args: argparse.Namespace) -> Any:
    from attnphase.theory.params import ModelParams

    return ModelParams(omega=args.omega, sigma=args.sigma, lam=args.lam, r=args.rank)


def _add_model_and_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sigma", type=float, default=0.5, help="token standard deviation sigma (default 0.5)")
    p.add_argument("--lam", type=float, default=0.01, help="ridge penalty lambda (default 0.01)")
    p.add_argument("--device", default="auto", help='torch device: "auto" (cuda if available, else cpu), "cpu", "cuda", ...')
    p.add_argument("--dtype", default="float64", help="float64 (default) or float32")


def register(subparsers: Any) -> None:
    """Add ``simulate`` and ``validate`` to the top-level CLI."""
    p = subparsers.add_parser(
        "simulate",
        help="train the attention student at finite d with PyTorch and measure m, theta, q, eps_g, e_t, eps_lin",
        description="One finite-d simulation: teacher data, gradient descent (or Adam) from an initialisation, "
        "observables on a fresh test set (MODEL.md section 1).",
    )
    p.add_argument("--d", type=int, default=200, help="embedding dimension d >= 2 (default 200)")
    p.add_argument("--alpha", type=float, default=2.0, help="sample complexity alpha = n/d > 0 (default 2)")
    p.add_argument("--omega", type=float, default=0.3, help="weight of A in the teacher, in [0, 1] (default 0.3)")
    p.add_argument("--init", default="semantic", metavar="{semantic,positional,random}", help="initialisation (default semantic)")
    p.add_argument("--optimizer", default="gd", metavar="{gd,adam}", help="gd (Armijo gradient descent, default) or adam")
    p.add_argument("--seed", type=int, default=0, help="seed of every random stream (default 0)")
    p.add_argument("--rank", type=int, default=1, help="student rank r (default 1)")
    p.add_argument("--max-steps", type=int, default=20000, help="step budget (default 20000)")
    p.add_argument("--grad-tol", type=float, default=None, help="stop at |grad R| / sqrt(d) <= this (default 1e-6 in float64, 1e-5 in float32)")
    p.add_argument("--n-test", type=int, default=10000, help="fresh test samples (default 10000)")
    _add_model_and_run_options(p)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=run_simulate)

    p = subparsers.add_parser(
        "validate",
        help="grid of finite-d simulations against the state evolution; writes report.md, summary.json and figures",
        description="Gradient descent at finite d against the theory (numerics): Fig. 2 curves, Fig. 3 heat map, "
        "finite-size scaling, global versus local proximal theory.",
    )
    p.add_argument("--quick", action="store_true", help="d = 200 and a smaller grid (a few minutes on 2 cores)")
    p.add_argument("--out", default="results/validation", help="output directory (default results/validation)")
    p.add_argument("--d", type=int, default=None, help="override the main dimension (default 1000, quick 200)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per point (default 4, quick 2)")
    p.add_argument("--omega", type=float, default=0.3, help="omega of the alpha sweeps (default 0.3)")
    _add_model_and_run_options(p)
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads for the simulations (default: torch's default minus one, the theory worker's core)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run_validate)


def _check_choice(value: str, choices: tuple[str, ...], name: str) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def run_simulate(args: argparse.Namespace) -> int:
    """``attnphase simulate``: returns 0 when training converged, 1 otherwise."""
    _check_choice(args.init, _INITS, "init")
    _check_choice(args.optimizer, ("gd", "adam"), "optimizer")
    from attnphase.validation.data import check_dimension, n_samples

    check_dimension(args.d)
    n_samples(args.alpha, args.d)
    params = _model_params(args)  # validates omega, sigma, lam, rank

    if args.threads is not None and args.threads < 1:
        raise ValueError(f"threads must be >= 1, got {args.threads}")
    import torch

    from attnphase.validation.experiments import SimSpec, run_simulation
    from attnphase.validation.training import TrainConfig

    if args.threads is not None:
        torch.set_num_threads(args.threads)

    spec = SimSpec(
        d=args.d, alpha=args.alpha, init=args.init, seed=args.seed, params=params,
        train=TrainConfig(optimizer=args.optimizer, grad_tol=args.grad_tol, max_steps=args.max_steps),
        n_test=args.n_test, device=args.device, dtype=args.dtype,
    )
    res = run_simulation(spec)
    if args.json:
        print(json.dumps(res.to_json()))
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
    params = _model_params(argparse.Namespace(omega=args.omega, sigma=args.sigma, lam=args.lam, rank=1))
    if args.d is not None:
        from attnphase.validation.data import check_dimension

        check_dimension(args.d)
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {args.seeds}")
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"threads must be >= 1, got {args.threads}")

    import torch

    from attnphase.validation.experiments import resolve_device, resolve_dtype
    from attnphase.validation.campaign import run_validation, validation_plan

    resolve_device(args.device)
    resolve_dtype(args.dtype)
    # The theory runs in a single-threaded worker process alongside: leave it one core.
    torch.set_num_threads(args.threads if args.threads is not None else max(1, torch.get_num_threads() - 1))
    plan = validation_plan(quick=args.quick, d=args.d, seeds=args.seeds, params=params, device=args.device, dtype=args.dtype)
    summary = run_validation(plan, args.out, progress=not args.quiet)
    print(f"wrote {args.out}/report.md, summary.json and figures ({summary['wall_seconds']:.0f} s)", file=sys.stderr)
    return 0 if summary["all_converged"] else 1
