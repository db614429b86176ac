"""Subcommands ``solve``, ``sweep`` and ``phase-diagram`` (numerics layer; never imports torch).

Nothing heavy is imported at module level: the solvers are imported inside the
command functions.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from typing import Any

RECORD_KEYS = (
    "alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta",
    "eps_g", "e_t", "eps_lin", "converged", "iterations", "residual",
)


def parse_range(text: str, name: str) -> list[float]:
    """``"START:STOP:NUM"`` -> NUM evenly spaced values (inclusive); a single number -> [number]."""
    import numpy as np

    parts = text.split(":")
    try:
        if len(parts) == 1:
            return [float(parts[0])]
        if len(parts) == 3:
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
            if num < 1:
                raise ValueError
            return [float(x) for x in np.linspace(start, stop, num)]
    except ValueError:
        pass
    raise ValueError(f"{name} must be START:STOP:NUM (e.g. 0.5:2:16) or a number, got {text!r}")


def add_model_arguments(p: argparse.ArgumentParser, omega: bool = True) -> None:
    """Model options shared by the numerics and validation commands (paper defaults)."""
    if omega:
        p.add_argument("--omega", type=float, default=0.3, help="weight of A in the teacher, in [0, 1] (default 0.3)")
    p.add_argument("--sigma", type=str, default="0.5", help="token std sigma, or comma list per token (default 0.5)")
    p.add_argument("--lam", type=float, default=0.01, help="ridge penalty lambda (default 0.01)")
    p.add_argument("--A", type=str, default=None, help='teacher matrix A, rows by ";" (default "0.6,0.4;0.4,0.6")')
    p.add_argument("--P", type=str, default=None, help='positional Gram matrix P (default "1,-1;-1,1")')
    p.add_argument("--L", type=int, default=2, help="sequence length L (default 2)")
    p.add_argument("--rho0", type=float, default=1.0, help="teacher norm rho0 (default 1)")


def params_from_args(args: argparse.Namespace, omega: float | None = None):
    """Validated ModelParams from the model options (ValueError names the bad parameter)."""
    from attnphase.theory.params import ModelParams, parse_matrix

    try:
        sigma = tuple(float(s) for s in args.sigma.split(","))
    except ValueError:
        raise ValueError(f"sigma must be a number or a comma list, got {args.sigma!r}") from None
    return ModelParams(
        L=args.L,
        sigma=sigma[0] if len(sigma) == 1 else sigma,
        P=None if args.P is None else parse_matrix(args.P),
        A=None if args.A is None else parse_matrix(args.A),
        omega=args.omega if omega is None else omega,
        lam=args.lam,
        rho0=args.rho0,
    )


def _add_solver_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prox", choices=("global", "local", "aligned"), default="global",
                   help="proximal map: global minimiser (default), local from h = 0 (the paper's), "
                        "or aligned with the teacher (L = 2; the basin GD from the semantic start keeps)")
    p.add_argument(
        "--quadrature", default=None,
        help="quadrature rule: sobolK[:reps:seed] (2^K scrambled Sobol points, symmetrised; default sobol12), "
        "ghN (Gauss-Hermite, N per dimension) or ghrN[:seed] (rotated Gauss-Hermite)",
    )
    p.add_argument("--tol", type=float, default=1e-10, help="fixed-point residual tolerance (default 1e-10)")
    p.add_argument(
        "--e-t-quadrature", default=None, metavar="SPEC",
        help="re-evaluate E[M] in e_t at each converged point on this finer rule (e.g. sobol16: e_t is "
        "stationary in the overlaps, so it gets that rule's accuracy; about 0.4 s per point)",
    )


def _add_branch_end_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--branch-end", choices=("bifurcation", "trace"), default="bifurcation",
        help="how a branch's end is located: where the agnostic branch turns unstable in theta "
        "(semantic) or stable again in m (positional), on sobol15 (default), or by a trace at fixed "
        "theta (semantic) and bisection in alpha (positional) -- noisier",
    )


def _config(args: argparse.Namespace):
    from attnphase.numerics.config import SolverConfig

    cfg = SolverConfig(tol=args.tol, prox=args.prox, e_t_quadrature=args.e_t_quadrature)
    if getattr(args, "branch_end", None):
        cfg = replace(cfg, branch_end=args.branch_end)
    fine = getattr(args, "alpha_c_quadrature", None)
    if fine is not None:
        cfg = replace(cfg, alpha_c_quadrature=None if fine.strip().lower() == "none" else fine)
    return cfg if args.quadrature is None else replace(cfg, quadrature=args.quadrature)


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def cmd_solve(args: argparse.Namespace) -> int:
    from attnphase.numerics.state_evolution import solve

    params = params_from_args(args)
    cfg = _config(args)
    fp = solve(params, args.alpha, args.branch, config=cfg)
    rec = {k: fp.record[k] for k in RECORD_KEYS}
    if args.error_estimate:
        from attnphase.numerics.quadrature_error import quadrature_error

        err = quadrature_error(fp, n_rules=args.error_estimate, config=cfg)
        rec.update({f"err_{k}": v for k, v in err.std.items()})
    if args.json:
        print(json.dumps({k: _json_value(v) for k, v in rec.items()}))
    else:
        width = max(len(k) for k in rec)
        for k, v in rec.items():
            print(f"{k:>{width}}  {v}")
    if fp.branch != args.branch:
        print(f"attnphase: note: requested the {args.branch} branch, reached a {fp.branch} fixed point", file=sys.stderr)
    if not fp.status.converged:
        print(f"attnphase: warning: not converged ({fp.status.message}, residual {fp.status.residual:.2e})", file=sys.stderr)
        return 1
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    import csv

    from tqdm import tqdm

    from attnphase.numerics.continuation import sweep

    params = params_from_args(args)
    alphas = parse_range(args.alpha, "--alpha")
    if min(alphas) <= 0:
        raise ValueError(f"--alpha values must be > 0, got {args.alpha!r}")
    with tqdm(total=len(alphas), desc=f"{args.branch} sweep", unit="pt", file=sys.stderr, disable=args.quiet) as bar:
        res = sweep(params, alphas, args.branch, config=_config(args), progress=lambda _: bar.update())
    rows = [fp.record for fp in res.points]
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=RECORD_KEYS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in RECORD_KEYS})
    if not math.isnan(res.end.alpha):
        where = "above" if res.end_side == "below" else "below"
        print(f"{args.branch} branch ends at alpha = {res.end.alpha:.4f} (it exists {where} that; "
              f"{res.end.kind}, located by {res.end.method})", file=sys.stderr)
    n_bad = sum(not r["converged"] for r in rows)
    print(f"wrote {len(rows)} rows to {args.out}" + (f" ({n_bad} not converged)" if n_bad else ""), file=sys.stderr)
    return 0 if n_bad == 0 else 1


def cmd_phase_diagram(args: argparse.Namespace) -> int:
    from attnphase.numerics.quadrature import parse_rule_spec
    from attnphase.numerics.report import run_phase_diagram

    params = params_from_args(args, omega=0.3)
    omegas = parse_range(args.omega, "--omega")
    alphas = parse_range(args.alpha, "--alpha")
    for w in omegas:  # validate every omega before any work
        params.replace(omega=w)
    if min(alphas) <= 0:
        raise ValueError(f"--alpha values must be > 0, got {args.alpha!r}")
    fine = None if args.alpha_c_quadrature.strip().lower() == "none" else args.alpha_c_quadrature
    if fine is not None:
        parse_rule_spec(fine)  # a bad spec fails before any work
    if args.error_estimate == 1 or args.error_estimate < 0:
        raise ValueError(f"--error-estimate needs K >= 2 rules (or 0 for none), got {args.error_estimate}")
    return run_phase_diagram(
        params, omegas, alphas, out_dir=args.out, config=_config(args), quiet=args.quiet,
        error_estimate=args.error_estimate,
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add the numerics subcommands to the top-level parser."""
    p = sub.add_parser("solve", help="solve the state evolution at one (alpha, omega)")
    p.add_argument("--alpha", type=float, required=True, help="sample complexity alpha = n/d > 0")
    add_model_arguments(p)
    p.add_argument("--branch", choices=("semantic", "positional", "agnostic"), default="semantic")
    _add_solver_arguments(p)
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument(
        "--error-estimate", type=int, default=0, metavar="K",
        help="also re-solve on K independent rules (warm starts) and add err_<key> = their spread",
    )
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("sweep", help="follow a branch over a range of alpha (continuation), write CSV")
    p.add_argument("--alpha", required=True, help="START:STOP:NUM")
    add_model_arguments(p)
    p.add_argument("--branch", choices=("semantic", "positional", "agnostic"), default="semantic")
    _add_solver_arguments(p)
    p.add_argument("--out", required=True, help="output CSV file")
    _add_branch_end_argument(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("phase-diagram", help="alpha_c, alpha_l and spinodals over omega (the main job)")
    p.add_argument("--omega", default="0:0.45:10", help="START:STOP:NUM (default 0:0.45:10)")
    p.add_argument("--alpha", default="0.1:3:12", help="alpha grid for the branch sweeps (default 0.1:3:12)")
    add_model_arguments(p, omega=False)
    _add_solver_arguments(p)
    p.add_argument(
        "--alpha-c-quadrature", default="sobol16", metavar="SPEC",
        help="rule for E[M] in the Newton correction of alpha_c (default sobol16; 'none': the solve rule's root)",
    )
    p.add_argument(
        "--error-estimate", type=int, default=0, metavar="K",
        help="repeat on K - 1 more independent rules (Sobol seeds) and add each boundary's spread over "
        "the K rules (<boundary>_err columns, error bars); about K times the time",
    )
    p.add_argument("--out", default="results", help="output directory (default results/)")
    _add_branch_end_argument(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_phase_diagram)
