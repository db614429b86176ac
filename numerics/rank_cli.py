"""``attnphase solve --rank R --teacher-rank R*`` with r or r* >= 2: the rank-r state evolution
(numerics/rank_se.py, docs/model.md section 7).  Called by :func:`attnphase.numerics.cli.cmd_solve`.

The record has the rank-1 record's scalar keys that keep their meaning (alpha, omega, lam, branch,
requested_branch, eps_g, e_t, converged, iterations, residual, reason) and, in place of the scalar
overlaps, the gauge invariants: q0_eigenvalues, V0_eigenvalues, th0_singular_values, m_norms, the
per-direction labels, the overlaps in the canonical gauge, e_t_direct (lambda Tr q0 / 2 + alpha
E[loss]) and gauge_angle (the rule's breaking of the rotation symmetry).  With ``--error-estimate K``
every scalar and invariant gets err_<key>: its standard deviation over K independent Sobol rules
(warm starts from the first).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import Any

import numpy as np

from attnphase import options as opt
from attnphase import outputs, workload
from attnphase.numerics.cli import print_record, sweep_exit_code

#: Record entries with a standard deviation under ``--error-estimate``.
ERROR_KEYS = ("eps_g", "e_t", "q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms")


def ranks_from_args(args: argparse.Namespace) -> tuple[int, int]:
    """(r, r*) from ``--rank`` / ``--teacher-rank`` (1 where a command has neither); ValueError naming the option."""
    out = []
    for option, dest in (("--rank", "rank"), ("--teacher-rank", "teacher_rank")):
        v = getattr(args, dest, 1)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{option} must be an integer >= 1, got {v!r}")
        out.append(int(v))
    return out[0], out[1]


def rank_error_estimate(fp: Any, n_rules: int, config: Any) -> dict[str, Any]:
    """err_<key>: the standard deviation of each of :data:`ERROR_KEYS` over ``n_rules`` independent rules
    (the solve's and ``config.variant(k)``, k = 1 .. n_rules - 1, warm-started from ``fp``)."""
    from attnphase.numerics.rank_se import solve_rank

    recs = [fp.record()]
    for k in range(1, n_rules):
        other = solve_rank(fp.params, fp.alpha, fp.requested, config=config.variant(k), init=fp.overlaps)
        if not other.converged:
            raise RuntimeError(f"the replicate on rule {config.variant(k).quadrature} did not converge: {other.message}")
        recs.append(other.record())
    out: dict[str, Any] = {}
    for key in ERROR_KEYS:
        vals = np.array([np.atleast_1d(np.asarray(r[key], dtype=float)) for r in recs])
        sd = vals.std(axis=0, ddof=1)
        out[f"err_{key}"] = float(sd[0]) if np.ndim(recs[0][key]) == 0 else sd.tolist()
    return out


def cmd_solve_rank(args: argparse.Namespace, alpha: float, r: int, r_star: int) -> int:
    """One rank-r fixed point (see the module doc); exit code 1 if it did not converge, 3 if it converged
    on another branch than ``--branch``."""
    if args.branch == "mixed" and r < 2:
        raise ValueError(f"--branch mixed needs --rank >= 2 (a positional and a semantic direction), got --rank {r}")
    plain = copy.copy(args)
    plain.rank, plain.teacher_rank = 1, 1  # the model group's checks see a rank-1 model; the ranks are set below
    from attnphase.numerics.rank_se import solve_rank, with_ranks

    params = with_ranks(opt.params_from_args(plain, omega=opt.single_omega(args, "solve")), r, r_star)
    cfg = opt.config_from_args(args)
    if cfg.prox != "global":
        raise ValueError(f"--prox {cfg.prox}: the rank-r state evolution implements the global proximal map only")
    if not str(cfg.quadrature).strip().lower().startswith("sobol"):
        raise ValueError(f"--quadrature {cfg.quadrature}: the rank-r state evolution uses scrambled Sobol rules "
                         f"(sobolK[:REPS:SEED]); its L (r + r*) = {params.L * (r + r_star)} dimensions rule out tensor grids")
    opt.check_supported(params, cfg)
    n_rules = opt.error_estimate_from_args(args)
    opt.announce_defaults(args, params)
    fp = solve_rank(params, alpha, args.branch, config=cfg)
    rec = fp.record()
    reason = ""
    if not fp.converged:
        reason = f"{fp.message}; residual {fp.residual:.2e}: no fixed point, so no overlaps are reported"
    elif fp.branch != args.branch:
        reason = (f"no {args.branch} fixed point found at alpha = {alpha:g}, omega = {params.omega:g}: "
                  f"the solve from the {args.branch} start converged to the {fp.branch} one")
    out = {"alpha": alpha, "omega": params.omega, "sigma": list(params.sigma), "lam": params.lam,
           "L": params.L, "A": [list(x) for x in params.A], "P": [list(x) for x in params.P], "rho0": params.rho0,
           "rank": r, "teacher_rank": r_star, "branch": rec["branch"] if fp.converged else None,
           "requested_branch": args.branch}
    for key in ("q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms", "directions", "eps_g", "e_t",
                "e_t_direct", "gauge_angle"):
        out[key] = rec[key] if fp.converged else None
    out.update({k: rec[k] for k in ("converged", "iterations", "residual", "prox_failures", "quadrature")})
    out["overlaps"] = rec["canonical_overlaps"] if fp.converged else None
    if n_rules and fp.converged:
        out.update(rank_error_estimate(fp, n_rules, cfg))
    out["reason"] = reason
    return print_record(out, reason, fp.converged, args.json, show=outputs.json_value)


def sweep_rank_file_name(branch: str, omega: float, r: int, r_star: int) -> str:
    """The table ``sweep --rank`` writes into ``--out DIR``."""
    return f"sweep_{branch}_omega{omega:g}_rank{r}x{r_star}.csv"


def cmd_sweep_rank(args: argparse.Namespace, r: int, r_star: int) -> int:
    """``attnphase sweep --rank R --teacher-rank R*`` (r or r* >= 2): the branch followed over the alpha grid
    by warm starts (the first point from the rank-1 fixed points), one row per alpha into
    DIR/sweep_<branch>_omega<omega>_rank<r>x<r*>.csv: alpha, branch, e_t, eps_g, the invariants (one column
    per eigenvalue / singular value / token), gauge_angle, converged, iterations, residual, reason.  A
    point that does not converge is retried from the embedded start before it is reported.  Branch ends
    are not located at rank r >= 2.  Exit code 1 if a point did not converge, 3 if no point is on the branch."""
    import csv
    import io

    if args.branch == "mixed" and r < 2:
        raise ValueError(f"--branch mixed needs --rank >= 2 (a positional and a semantic direction), got --rank {r}")
    alphas = sorted(opt.parse_values(args.alpha, "--alpha", positive=True))
    plain = copy.copy(args)
    plain.rank, plain.teacher_rank = 1, 1
    from attnphase.numerics.rank_se import solve_rank, with_ranks

    params = with_ranks(opt.params_from_args(plain, omega=opt.single_omega(args, "sweep")), r, r_star)
    cfg = opt.config_from_args(args)
    if cfg.prox != "global":
        raise ValueError(f"--prox {cfg.prox}: the rank-r state evolution implements the global proximal map only")
    if not str(cfg.quadrature).strip().lower().startswith("sobol"):
        raise ValueError(f"--quadrature {cfg.quadrature}: the rank-r state evolution uses scrambled Sobol rules")
    opt.check_supported(params, cfg)
    workload.check_grid(len(alphas), workload.MAX_SWEEP_POINTS, "alpha values", "--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    opt.announce_defaults(args, params)
    L = params.L
    cols = (["alpha", "omega", "branch", "e_t", "eps_g"] + [f"q0_eig_{i + 1}" for i in range(r)]
            + [f"V0_eig_{i + 1}" for i in range(r)] + [f"th0_sv_{i + 1}" for i in range(min(r, r_star))]
            + [f"m_norm_{l + 1}" for l in range(L)] + ["gauge_angle", "converged", "iterations", "residual", "reason"])
    rows, prev = [], None
    for alpha in alphas:
        fp = solve_rank(params, alpha, args.branch, config=cfg, init=prev) if prev is not None else None
        if fp is None or not fp.converged:
            fp = solve_rank(params, alpha, args.branch, config=cfg)
        rec = fp.record()
        row: dict[str, Any] = {"alpha": alpha, "omega": params.omega, "branch": rec["branch"] if fp.converged else "",
                               "converged": fp.converged, "iterations": fp.evaluations, "residual": fp.residual}
        vals = {"e_t": [rec["e_t"]], "eps_g": [rec["eps_g"]], "q0_eig": rec["q0_eigenvalues"],
                "V0_eig": rec["V0_eigenvalues"], "th0_sv": rec["th0_singular_values"], "m_norm": rec["m_norms"],
                "gauge_angle": [rec["gauge_angle"]]}
        for name, v in vals.items():
            for i, x in enumerate(v):
                key = name if len(v) == 1 and name in ("e_t", "eps_g", "gauge_angle") else f"{name}_{i + 1}"
                row[key] = x if fp.converged else float("nan")
        if not fp.converged:
            row["reason"] = f"{fp.message}; residual {fp.residual:.2e}: no overlaps"
        elif fp.branch != args.branch:
            row["reason"] = f"no {args.branch} fixed point here: the solve converged to the {fp.branch} one"
        else:
            row["reason"] = ""
            prev = fp.overlaps
        rows.append(row)
        if not args.quiet:
            print(f"attnphase: alpha = {alpha:g}: {row['branch'] or 'not converged'}, e_t = {row['e_t']:.6g}",
                  file=sys.stderr, flush=True)
    path = out_dir / sweep_rank_file_name(args.branch, params.omega, r, r_star)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    with outputs.staged_output(out_dir) as stage:
        outputs.write_text_atomic(stage / path.name, buf.getvalue())
    n_failed = sum(not r_["converged"] for r_ in rows)
    n_on = sum(not r_["reason"] for r_ in rows)
    if args.json:
        print(json.dumps(outputs.json_value({"branch": args.branch, "requested_branch": args.branch, "rank": r,
                                             "teacher_rank": r_star, "params": params.to_dict(), "solver": cfg.as_dict(),
                                             "file": str(path), "end": None, "on_branch": n_on,
                                             "not_converged": n_failed, "rows": rows})))
    print(f"wrote {len(rows)} rows to {path}" + (f" ({n_failed} not converged)" if n_failed else ""), file=sys.stderr)
    return sweep_exit_code(args.branch, n_failed, n_on)
