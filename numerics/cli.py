"""What ``attnphase solve``, ``sweep`` and ``phase-diagram`` do (numerics layer; never imports torch).

Their options are defined in :mod:`attnphase.cli` with the shared groups of
:mod:`attnphase.options`; the model and the solver configuration are built there
(:func:`~attnphase.options.params_from_args`, :func:`~attnphase.options.config_from_args`).
Every option is checked before any work; the solvers are imported inside the functions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys

from attnphase import options as opt

RECORD_KEYS = (
    "alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta",
    "eps_g", "e_t", "eps_lin", "converged", "iterations", "residual",
)


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The shared model group (:func:`attnphase.options.add_model_options`, one omega); kept for
    commands that register their own parser (``check``)."""
    opt.add_model_options(p)


def params_from_args(args: argparse.Namespace):
    """The ModelParams of the shared model group at its one omega (:func:`attnphase.options.params_from_args`)."""
    return opt.params_from_args(args, omega=opt.single_omega(args, getattr(args, "command", None) or ""))


def cmd_solve(args: argparse.Namespace) -> int:
    """``attnphase solve``: one fixed point; exit code 1 if it did not converge."""
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True, hint="sweep follows a branch over a range of alpha")
    params = opt.params_from_args(args, omega=opt.single_omega(args, "solve"))
    cfg = opt.config_from_args(args)
    opt.check_supported(params, cfg)
    n_rules = opt.error_estimate_from_args(args)

    from attnphase.numerics.state_evolution import solve

    fp = solve(params, alpha, args.branch, config=cfg)
    rec = {k: fp.record[k] for k in RECORD_KEYS}
    if n_rules:
        from attnphase.numerics.quadrature_error import quadrature_error

        err = quadrature_error(fp, n_rules=n_rules, config=cfg)
        rec.update({f"err_{k}": v for k, v in err.std.items()})
    if args.json:
        print(json.dumps(opt.json_value(rec)))
    else:
        width = max(len(k) for k in rec)
        for k, v in rec.items():
            print(f"{k:>{width}}  {v}")
    if fp.branch != args.branch:
        print(f"attnphase: note: requested the {args.branch} branch, reached a {fp.branch} fixed point", file=sys.stderr)
    if not fp.status.converged:
        print(f"attnphase: warning: not converged ({fp.status.message}, residual {fp.status.residual:.2e})",
              file=sys.stderr)
        return 1
    return 0


def sweep_file_name(branch: str, omega: float) -> str:
    """The table ``sweep`` writes into ``--out DIR``."""
    return f"sweep_{branch}_omega{omega:g}.csv"


def cmd_sweep(args: argparse.Namespace) -> int:
    """``attnphase sweep``: one branch over alpha into DIR/sweep_<branch>_omega<omega>.csv; 1 if a point failed."""
    import csv

    alphas = opt.parse_values(args.alpha, "--alpha", positive=True)
    params = opt.params_from_args(args, omega=opt.single_omega(args, "sweep"))
    cfg = opt.config_from_args(args)
    opt.check_supported(params, cfg)
    out_dir = opt.out_dir_from_args(args)

    from tqdm import tqdm

    from attnphase.numerics.continuation import sweep

    with tqdm(total=len(alphas), desc=f"{args.branch} sweep", unit="pt", file=sys.stderr, disable=args.quiet) as bar:
        res = sweep(params, alphas, args.branch, config=cfg, progress=lambda _: bar.update())
    rows = [{k: fp.record[k] for k in RECORD_KEYS} for fp in res.points]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / sweep_file_name(args.branch, params.omega)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=RECORD_KEYS)
        w.writeheader()
        w.writerows(rows)
    ends = not math.isnan(res.end.alpha)
    if ends:
        where = "above" if res.end_side == "below" else "below"
        print(f"{args.branch} branch ends at alpha = {res.end.alpha:.4f} (it exists {where} that; "
              f"{res.end.kind}, located by {res.end.method})", file=sys.stderr)
    n_bad = sum(not r["converged"] for r in rows)
    if args.json:
        print(json.dumps(opt.json_value({
            "branch": args.branch, "params": params.to_dict(), "solver": cfg.as_dict(), "file": str(path),
            "end": {"alpha": res.end.alpha, "side": res.end_side, "kind": res.end.kind, "method": res.end.method}
            if ends else None,
            "rows": rows,
        })))
    print(f"wrote {len(rows)} rows to {path}" + (f" ({n_bad} not converged)" if n_bad else ""), file=sys.stderr)
    return 0 if n_bad == 0 else 1


def cmd_phase_diagram(args: argparse.Namespace) -> int:
    """``attnphase phase-diagram``: the boundaries over omega into ``--out DIR``."""
    alphas = opt.parse_values(args.alpha, "--alpha", positive=True)
    params, omegas = opt.omegas_from_args(args)
    cfg = opt.config_from_args(args)
    opt.check_supported(params, cfg)
    n_rules = opt.error_estimate_from_args(args)
    out_dir = opt.out_dir_from_args(args)

    from attnphase.numerics.report import run_phase_diagram

    # --json: the table run_phase_diagram prints goes to stderr; stdout gets phase_diagram.json alone
    redirect = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    with redirect:
        code = run_phase_diagram(params, omegas, alphas, out_dir=out_dir, config=cfg, quiet=args.quiet,
                                 error_estimate=n_rules)
    if args.json:
        meta = json.loads((out_dir / "phase_diagram.json").read_text())
        print(json.dumps(opt.json_value(meta | {"out": str(out_dir)})))
    return int(code or 0)
