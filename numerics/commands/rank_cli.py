"""``attnphase solve --rank R --teacher-rank R*`` with r or r* >= 2: the rank-r state evolution
(numerics/se/se_map.py, numerics/se/matrix_solve.py, docs/model.md section 7).  Called by :func:`attnphase.numerics.commands.cli.cmd_solve`.

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

from attnphase import options as opt
from attnphase import solver_options
from attnphase import execution_options
from attnphase import outputs, work, workload
from attnphase.numerics.commands.common import TASKS_FOLDER, command_line, sweep_exit_code
from attnphase.numerics.capabilities import check
from attnphase.numerics.commands.point_record import print_record


def rank_error_estimate(fp: Any, n_rules: int, config: Any) -> dict[str, Any]:
    """err_<key> of each of :data:`~attnphase.numerics.se.results.MATRIX_ERROR_KEYS`: the standard error from the solve rule's R scrambling blocks,
    std_j / sqrt(R) over the block fixed points warm-started from ``fp`` (:mod:`attnphase.numerics.errors.replicates`);
    for a rule of one block, the standard deviation over ``n_rules`` independent rules (the solve's and
    ``config.variant(k)``, k = 1 .. n_rules - 1).  A replicate that does not converge on ``fp``'s branch is
    left out: ``err_replicates`` counts those used (NaN errors below two), ``err_replicates_tried`` all
    (:func:`attnphase.numerics.phase.rank_census.replicate_points` and ``replicate_errors``)."""
    from attnphase.numerics.phase.rank_census import replicate_errors, replicate_points

    reps, blocks = replicate_points(fp, config, n_rules)
    return replicate_errors(fp, reps, blocks)


def rank_solve_record(fp: Any, requested: str) -> dict[str, Any]:
    """The ``solve --rank --json`` keys of one rank-r solve (module doc); the overlaps, invariants and observables
    None where it did not converge."""
    params, rec = fp.params, fp.record
    out = {"alpha": fp.alpha, "omega": params.omega, "sigma": list(params.sigma), "lam": params.lam,
           "L": params.L, "A": [list(x) for x in params.A], "P": [list(x) for x in params.P], "rho0": params.rho0,
           "loss": params.loss, "rank": params.r, "teacher_rank": rec["r_star"], "branch": rec["branch"] if fp.status.converged else None,
           "requested_branch": requested}
    for key in ("q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms", "directions", "eps_g", "e_t",
                "e_t_direct", "gauge_angle"):
        out[key] = rec[key] if fp.status.converged else None
    out.update({k: rec[k] for k in ("converged", "iterations", "residual", "prox_failures", "quadrature")})
    out["overlaps"] = rec["canonical_overlaps"] if fp.status.converged else None
    return out


def cmd_solve_rank(args: argparse.Namespace, alpha: float, r: int, r_star: int) -> int:
    """One rank-r fixed point (see the module doc); exit code 1 if it did not converge, 3 if it converged
    on another branch than ``--branch``."""
    if args.branch == "mixed":
        check("mixed_branch", r, r_star)
    from attnphase.numerics.se.state_evolution import solve

    params, cfg = rank_model_and_config(args, r, r_star, opt.single_omega(args, "solve"))
    opt.check_branch_possible(params, args.branch)
    from attnphase.numerics.errors.quadrature_error import point_rules
    from attnphase.numerics.errors.replicates import replicate_count

    n_rules = point_rules(cfg, solver_options.error_estimate_from_args(args))
    opt.announce_defaults(args, params)
    work.begin("solving the rank-r state evolution")
    fp = solve(params, alpha, args.branch, config=cfg)
    reason = ""
    if not fp.status.converged:
        reason = f"{fp.status.message}; residual {fp.status.residual:.2e}: no fixed point, so no overlaps are reported"
    elif fp.branch != args.branch:
        reason = (f"no {args.branch} fixed point found at alpha = {alpha:g}, omega = {params.omega:g}: "
                  f"the solve from the {args.branch} start converged to the {fp.branch} one")
    out = rank_solve_record(fp, args.branch)
    if fp.status.converged and cfg.error_bars and (replicate_count(cfg) or n_rules):
        out.update(rank_error_estimate(fp, n_rules, cfg))
        if out["err_replicates"] < out["err_replicates_tried"]:
            print(f"attnphase: note: error bars from {out['err_replicates']} of {out['err_replicates_tried']} replicates "
                  "(the others did not converge on this branch)" + ("; none shown" if out["err_replicates"] < 2 else ""),
                  file=sys.stderr)
        if out["err_replicates"] < 2:
            out["error_note"] = (f"no error bars: only {out['err_replicates']} of {out['err_replicates_tried']} replicates "
                                 "converged on this branch (a spread needs two)")
    elif fp.status.converged:
        from attnphase.numerics.errors.quadrature_error import error_bars_note

        out["error_note"] = error_bars_note(cfg, n_rules)
        print(f"attnphase: note: {out['error_note']}", file=sys.stderr)
    out["reason"] = reason
    return print_record(out, reason, fp.status.converged, args.json, show=outputs.json_value)


def sweep_rank_file_name(branch: str, omega: float, r: int, r_star: int) -> str:
    """The table ``sweep --rank`` writes into ``--out DIR``."""
    return f"sweep_{branch}_omega{omega:g}_rank{r}x{r_star}.csv"


def cmd_sweep_rank(args: argparse.Namespace, r: int, r_star: int) -> int:
    """``attnphase sweep --rank R --teacher-rank R*`` (r or r* >= 2): the branch followed over the alpha grid
    by warm starts (:func:`~attnphase.numerics.phase.rank_boundaries.follow_rank_branch`; the first point from the
    rank-1 fixed points), one row per alpha into
    DIR/sweep_<branch>_omega<omega>_rank<r>x<r*>.csv: alpha, branch, e_t, eps_g, the invariants (one column
    per eigenvalue / singular value / token), gauge_angle, converged, iterations, residual, reason.  A
    point that does not converge onto the branch is retried from the embedded start before it is reported.
    Branch ends are located by ``phase-diagram --rank``, not here.  Exit code 1 if a point did not converge, 3 if no point is on the branch."""
    import csv
    import io

    if args.branch == "mixed":
        check("mixed_branch", r, r_star)
    alphas = sorted(opt.parse_values(args.alpha, "--alpha", positive=True))
    from attnphase.numerics.phase.rank_boundaries import follow_rank_branch

    params, cfg = rank_model_and_config(args, r, r_star, opt.single_omega(args, "sweep"))
    opt.check_branch_possible(params, args.branch)
    workload.check_grid(len(alphas), workload.MAX_SWEEP_POINTS, "alpha values", "--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    opt.announce_defaults(args, params)
    work.begin("sweeping the rank-r branch")
    L = params.L
    cols = (["alpha", "omega", "branch", "e_t", "eps_g"] + [f"q0_eig_{i + 1}" for i in range(r)]
            + [f"V0_eig_{i + 1}" for i in range(r)] + [f"th0_sv_{i + 1}" for i in range(min(r, r_star))]
            + [f"m_norm_{l + 1}" for l in range(L)] + ["gauge_angle", "converged", "iterations", "residual", "reason"])
    rows = []

    def said(fp: Any) -> None:
        if not args.quiet:
            on = fp.branch if fp.status.converged else "not converged"
            print(f"attnphase: alpha = {fp.alpha:g}: {on}, e_t = {fp.observables.e_t:.6g}", file=sys.stderr, flush=True)

    for fp in follow_rank_branch(params, alphas, args.branch, cfg, progress=said):
        alpha = fp.alpha
        rec = fp.record
        row: dict[str, Any] = {"alpha": alpha, "omega": params.omega, "branch": rec["branch"] if fp.status.converged else "",
                               "converged": fp.status.converged, "iterations": fp.status.iterations, "residual": fp.status.residual}
        vals = {"e_t": [rec["e_t"]], "eps_g": [rec["eps_g"]], "q0_eig": rec["q0_eigenvalues"],
                "V0_eig": rec["V0_eigenvalues"], "th0_sv": rec["th0_singular_values"], "m_norm": rec["m_norms"],
                "gauge_angle": [rec["gauge_angle"]]}
        for name, v in vals.items():
            for i, x in enumerate(v):
                key = name if len(v) == 1 and name in ("e_t", "eps_g", "gauge_angle") else f"{name}_{i + 1}"
                row[key] = x if fp.status.converged else float("nan")
        if not fp.status.converged:
            row["reason"] = f"{fp.status.message}; residual {fp.status.residual:.2e}: no overlaps"
        elif fp.branch != args.branch:
            row["reason"] = f"no {args.branch} fixed point here: the solve converged to the {fp.branch} one"
        else:
            row["reason"] = ""
        rows.append(row)
    path = out_dir / sweep_rank_file_name(args.branch, params.omega, r, r_star)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    with outputs.staged_output(out_dir, job=f"sweep_{args.branch}_rank{r}x{r_star}_omega{params.omega:g}",
                               model=params.to_dict() | {"alpha": list(alphas)}) as stage:
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


def rank_model_and_config(args: argparse.Namespace, r: int, r_star: int, omega: float) -> tuple[Any, Any]:
    """(ModelParams with the ranks, SolverConfig) of a rank-r command, every option checked: the model group's
    checks see a rank-1 model (the ranks are set after); the rank-r solver takes ``--prox global`` and Sobol rules."""
    from attnphase.numerics.se.starts import with_ranks

    params = with_ranks(opt.params_from_args(_rank_one(args), omega=omega), r, r_star)
    if params.correlated_tokens:
        raise ValueError("--token-cov: the rank-r state evolution (and --branch mixed) implements independent tokens "
                         "only (a diagonal C; correlated tokens are solved at rank 1)")
    return params, rank_config(args, params)


def _rank_one(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` at rank 1 (the model group's checks see a rank-1 model; the ranks are set after)."""
    plain = copy.copy(args)
    plain.rank, plain.teacher_rank = 1, 1
    return plain


#: Solver options of the rank-1 machinery that the rank-r path has no use for (refused when given).
def rank_config(args: argparse.Namespace, params: Any) -> Any:
    """The SolverConfig of a rank-r command: ``--prox global`` and a Sobol rule, checked against ``params``;
    the scalar form's capabilities (:mod:`attnphase.numerics.capabilities`: its extra rules, the torch backend,
    the local proximal maps) are refused."""
    from attnphase.numerics.capabilities import SCALAR_RULES

    r, r_star = params.r, params.r_star
    for name in SCALAR_RULES:
        if getattr(args, name, None) is not None:
            check(name, r, r_star)
    cfg = solver_options.config_from_args(args)
    if getattr(args, "backend", None) == "torch":
        check("torch_backend", r, r_star)
    if cfg.prox != "global":
        check("local_prox", r, r_star, cfg.prox)
    if not str(cfg.quadrature).strip().lower().startswith("sobol"):
        raise ValueError(f"--quadrature {cfg.quadrature}: the rank-r state evolution uses scrambled Sobol rules "
                         f"(sobolK[:REPS:SEED]); its L (r + r*) = {params.L * (params.r + params.r_star)} dimensions rule out tensor grids")
    solver_options.check_supported(params, cfg)
    return cfg


def cmd_phase_diagram_rank(args: argparse.Namespace, r: int, r_star: int) -> int:
    """``attnphase phase-diagram --rank R --teacher-rank R*`` (r or r* >= 2): per omega one task of
    :func:`~attnphase.numerics.phase.rank_boundaries.rank_phase_boundaries` (branches semantic, positional and,
    at r >= 2, mixed; their ends, alpha_c, alpha_l, each with its bracket width), into ``--out DIR``:
    phase_diagram.csv/.json/.nc/.png (numerics/jobs/rank_report.py).  Exit code 1 if a task failed."""
    import contextlib


    if solver_options.error_estimate_from_args(args):
        check("diagram_error_estimate", r, r_star)
    alphas = sorted(opt.parse_values(args.alpha, "--alpha", positive=True))
    omegas = opt.parse_values(args.omega, "--omega")
    from attnphase.numerics.jobs.report import check_semantic_signal

    check_semantic_signal(omegas)
    params, cfg = rank_model_and_config(args, r, r_star, omegas[0])
    opt.check_branch_possible(params, "positional", "the phase diagram's boundaries")
    for w in omegas:
        rank_model_and_config(args, r, r_star, w)
    executor = execution_options.executor_from_args(args)
    workload.check_grid(len(omegas) * len(alphas), workload.MAX_DIAGRAM_POINTS, "(omega, alpha) points (omegas x alphas)",
                   "--omega/--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    opt.announce_defaults(args, params)
    work.begin("computing the rank-r phase diagram")
    from attnphase.execution import ResultStore
    from attnphase.numerics.phase.rank_boundaries import rank_branches
    from attnphase.numerics.jobs.rank_report import run_rank_phase_diagram

    if not args.quiet:
        print(f"attnphase: rank r = {r}, r* = {r_star}: branches {', '.join(rank_branches(r))} over {len(alphas)} alpha "
              f"values at {len(omegas)} omega(s) on {cfg.quadrature}, then bisections and root searches", file=sys.stderr)
    from attnphase.execution.executor import usable_cores

    per_omega = workload.rank_boundaries_task_seconds(len(alphas), params.L, cfg)
    workload.announce_tasks(f"rank-{r} phase diagram", [per_omega] * len(omegas), executor.workers,
                            f"~{per_omega:.0f} CPU s per omega, measured at r = 2, r* = 1; the compiled loops use "
                            f"every core", quiet=args.quiet, min_seconds=0,
                            cores=usable_cores() if executor.scheduler is None else 0)
    store = ResultStore(out_dir / TASKS_FOLDER)
    job_model = params.to_dict() | {"omega": list(omegas), "alpha": list(alphas), "rank": [r, r_star]}
    with outputs.staged_output(out_dir, job="phase_diagram", model=job_model) as stage:
        shown = {str(stage): str(out_dir)}
        stdout = outputs.Rewriting(sys.stderr if args.json else sys.stdout, shown)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(outputs.Rewriting(sys.stderr, shown)):
            code = run_rank_phase_diagram(params, omegas, alphas, out_dir=stage, config=cfg, quiet=args.quiet,
                                          executor=executor, store=store, fresh=args.fresh, command=command_line())
        meta = json.loads((stage / "phase_diagram.json").read_text())
    if args.json:
        print(json.dumps(outputs.json_value(meta | {"out": str(out_dir)})))
    return int(code or 0)


def cmd_scan_rank(args: argparse.Namespace, r: int, r_star: int) -> int:
    """``attnphase scan --rank R --teacher-rank R*`` (r or r* >= 2): the rank-r boundaries of
    :func:`cmd_phase_diagram_rank` at every (scanned value, omega), one task each, into scan.csv/.json/.nc
    and a figure per value (numerics/jobs/rank_report.py).  Exit code 1 if a task failed."""
    import contextlib

    from attnphase.numerics.se.starts import with_ranks

    if solver_options.error_estimate_from_args(args):
        raise ValueError("--error-estimate: the rank-r boundaries report bracket widths as their errors; "
                         "replicates over rules are not implemented for them")
    alphas = sorted(opt.parse_values(args.alpha, "--alpha", positive=True))
    field, values, models, omegas = opt.scan_from_args(_rank_one(args))
    from attnphase.numerics.jobs.report import check_semantic_signal
    from attnphase.numerics.commands.common import check_distinct_models

    check_distinct_models(field, values, models)
    check_semantic_signal(omegas)
    models = [with_ranks(m, r, r_star) for m in models]
    cfg = None
    for m in models:
        cfg = rank_config(args, m)
    executor = execution_options.executor_from_args(args)
    workload.check_grid(len(models) * len(omegas) * len(alphas), workload.MAX_DIAGRAM_POINTS,
                   f"(--{field.replace('_', '-')}, omega, alpha) points", "--omega/--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    work.begin("scanning the rank-r boundaries")
    from attnphase.execution import ResultStore
    from attnphase.execution.executor import usable_cores
    from attnphase.numerics.jobs.rank_report import run_rank_scan

    costs = [workload.rank_boundaries_task_seconds(len(alphas), m.L, cfg) for m in models for _ in omegas]
    workload.announce_tasks(f"rank-{r} scan over {len(values)} {field} x {len(omegas)} omega", costs, executor.workers,
                            f"~{max(costs):.0f} CPU s per (value, omega), measured at r = 2, r* = 1; the compiled "
                            f"loops use every core", quiet=args.quiet, min_seconds=0,
                            cores=usable_cores() if executor.scheduler is None else 0)

    store = ResultStore(out_dir / TASKS_FOLDER)
    job_model = models[0].to_dict() | {field: [str(v) for v in values], "omega": list(omegas), "alpha": list(alphas)}
    with outputs.staged_output(out_dir, job="scan", model=job_model) as stage:
        shown = {str(stage): str(out_dir)}
        stdout = outputs.Rewriting(sys.stderr if args.json else sys.stdout, shown)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(outputs.Rewriting(sys.stderr, shown)):
            code = run_rank_scan(field, values, models, omegas, alphas, out_dir=stage, config=cfg, quiet=args.quiet,
                                 executor=executor, store=store, fresh=args.fresh, command=command_line())
        summary = json.loads((stage / "scan.json").read_text())
    if args.json:
        print(json.dumps(outputs.json_value(summary | {"out": str(out_dir)})))
    return int(code or 0)
