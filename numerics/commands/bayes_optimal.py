"""The Bayes-optimal estimator in ``solve`` and ``sweep`` (docs/bayes-optimal.md): its fixed point at one alpha, and
both its branches over an alpha grid.  The record has the ERM record's keys in the same units, with
``free_entropy`` in place of ``e_t`` and the thresholds beside them (docs/reference/outputs.md); it and the echoed
model leave out what the estimator does not use (``lam``, ``loss``: :mod:`attnphase.numerics.commands.bayes_options`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable

from attnphase import options as opt
from attnphase import outputs, work, workload
from attnphase.numerics.commands.bayes_options import (bayes_job, bayes_model_echo, bayes_params, check_bayes_model,
                                                       check_bayes_solver_options, check_estimator_branch, json_rows)
from attnphase.numerics.commands.point_record import max_relative_error, print_record
from attnphase.numerics.se.bayes_curve import BAYES_BRANCHES, BAYES_SWEEP_COLUMNS


def solve_bayes_optimal(args: argparse.Namespace, alpha: float) -> int:
    """The Bayes-optimal fixed point of ``--branch`` (informative by default) at alpha
    (:func:`attnphase.numerics.se.bayes_curve.bayes_point`)."""
    branch = check_estimator_branch("bayes-optimal", args.branch)
    params = opt.params_from_args(args, omega=opt.single_omega(args, "solve"))
    check_bayes_model(args, params)
    check_bayes_solver_options(args)
    opt.announce_defaults(args, params)
    if params.L >= opt.MAX_BAYES_L[0]:  # its tensor grids grow as (nodes per dimension)^L
        print(f"attnphase: note: at L = {params.L} one Bayes-optimal solve takes half a minute or more ("
              f"{opt.MAX_BAYES_L[1].split('; ')[0]})", file=sys.stderr, flush=True)

    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel
    from attnphase.numerics.se.bayes_curve import bayes_point, bayes_rules
    from attnphase.numerics.se.observables import eps_lin

    work.begin("solving the Bayes-optimal state evolution")
    model = BayesModel.of(params)
    rules = bayes_rules(model)
    p = bayes_point(model, params.omega, alpha, branch, rules)
    found = math.isfinite(p.q0)  # never a NaN point reported as converged (exit 0)
    echo = {k: v for k, v in bayes_model_echo(params).items() if k != "sigma_l"}
    rec = {"alpha": alpha, "omega": params.omega, "sigma": params.sigma_value} | echo | {
        "estimator": "bayes-optimal", "branch": branch, "requested_branch": branch,
        "q": p.q0, "m": 0.0, "V": model.rho0 - p.q0, "theta": p.q0, "eps_g": p.eps_g, "e_t": None,
        "eps_lin": eps_lin(params), "free_entropy": p.free_entropy, "perfect_recovery": p.perfect,
        "converged": found, "iterations": 0, "residual": p.residual,
    }
    rec["reason"] = "" if found else (f"no stable {branch} fixed point found at alpha = {alpha:g} on the rule "
                                      f"sign{rules.fine.order}: q0 is not a number")
    if p.coincides:
        at = "perfect recovery" if p.perfect else f"q = {p.q0!r}, short of perfect recovery q = {model.rho0:g}"
        note = f"the informative and uninformative branches coincide at alpha = {alpha!r} ({at})"
        rec["note"] = note
        print(f"attnphase: note: {note}", file=sys.stderr)
    rec.update({"err_q": p.err_q0, "err_m": 0.0, "err_V": p.err_q0, "err_theta": p.err_q0, "err_eps_g": p.err_eps_g,
                "err_e_t": None, "err_free_entropy": p.err_free_entropy})
    rec["max_relative_error"] = max_relative_error(rec)
    rec["error_note"] = bayes_error_note(p, model.rho0)
    print(f"attnphase: note: {rec['error_note']}", file=sys.stderr)
    rec.update(bayes_thresholds(model).as_dict())
    if args.json:  # what made it, as solve's ERM record says (its rule in place of the ERM solver's settings)
        from attnphase.numerics.jobs.tasks import numerics_version

        rec |= {"rule": f"sign{rules.fine.order}", "code_version": numerics_version()}
    return print_record(rec, rec["reason"], found, args.json)


def bayes_error_note(p, rho0: float) -> str:
    """Why some numbers of a Bayes-optimal point carry no bar or a bar of 0 (e_t and, at perfect recovery,
    free_entropy null; q, V, theta exact at q0 = 0 and q0 = rho0, where every rule gives the same point, and eps_g = 0
    exactly at q0 = rho0)."""
    said = ["e_t null: the Bayes-optimal estimator minimises no training loss (free_entropy = Phi instead)",
            "err_m = 0: m = 0 exactly (the posterior mean does not see the positions)"]
    if p.free_entropy is None:
        said.append("free_entropy null: Phi diverges at perfect recovery (q0 = rho0)")
    if p.err_q0 == 0.0 and (p.q0 == 0.0 or p.q0 == rho0):
        more = " = err_free_entropy" if p.q0 == 0.0 else " = err_eps_g"  # at perfect recovery eps_g = 0 exactly
        said.append(f"err_q = err_V = err_theta{more} = 0: q0 = {p.q0:g} is exact here "
                    f"({'no recovery' if p.q0 == 0.0 else 'perfect recovery, eps_g = 0'}: every rule gives it)")
    return "; ".join(said)


def bayes_rows_error_note(rows: list[dict], rho0: float) -> str:
    """:func:`bayes_error_note` for a sweep's rows: why its bars are 0 or NaN, each case once (err_m = 0 always;
    free_entropy NaN at perfect recovery; err_q = err_V = err_theta = 0 where q0 = 0 or q0 = rho0; err_eps_g = 0 at
    perfect recovery)."""
    said = ["err_m = 0: m = 0 exactly (the posterior mean does not see the positions)"] if rows and "err_m" in rows[0] \
        else []
    if any(r["perfect_recovery"] and not math.isfinite(r.get("free_entropy", 0.0)) for r in rows):
        said.append("free_entropy and err_free_entropy NaN where perfect_recovery = 1: Phi diverges at q0 = rho0")
    ends = sorted({"no recovery, q0 = 0" if r["q"] == 0.0 else "perfect recovery, q0 = rho0" for r in rows
                   if r["err_q"] == 0.0 and r["q"] in (0.0, rho0)})
    if ends:
        bars = " = ".join(k for k in ("err_q", "err_V", "err_theta") if k in rows[0])
        said.append(f"{bars} = 0 at the rows of {' and of '.join(ends)}: every rule gives it")
    if any(r["perfect_recovery"] and r.get("err_eps_g") == 0.0 for r in rows):
        said.append("err_eps_g = 0 where perfect_recovery = 1: eps_g = 0 exactly there")
    return "; ".join(said)


def by_estimator(args: argparse.Namespace, bayes_optimal: Callable[[], int]) -> int | None:
    """A command's estimator: with ``--estimator bayes-optimal`` the exit code of ``bayes_optimal()`` (its
    Bayes-optimal run); otherwise None, ``args.branch`` set to the ERM branch (semantic by default)."""
    estimator = getattr(args, "estimator", "erm")
    if estimator == "bayes-optimal":
        return bayes_optimal()
    args.branch = check_estimator_branch(estimator, args.branch)
    return None


def sweep_bayes_optimal(args: argparse.Namespace) -> int:
    """``attnphase sweep --estimator bayes-optimal``: both Bayes-optimal branches (or ``--branch``'s) over the alpha
    grid at each omega into DIR/sweep_bayes-optimal*; exit 0 where every point exists."""
    branches = BAYES_BRANCHES if args.branch is None else (check_estimator_branch("bayes-optimal", args.branch),)
    alphas = sorted(opt.parse_values(args.alpha, "--alpha", positive=True))
    params, omegas, executor, out_dir, per_task = bayes_job(args, alphas, workload.MAX_SWEEP_POINTS,
                                                            "alpha values (x omegas)", "--alpha")
    workload.announce_tasks(f"Bayes-optimal sweep of {len(alphas)} alpha values, {len(branches)} branch"
                            f"{'es' if len(branches) > 1 else ''}" + (f" at {len(omegas)} omegas" if len(omegas) > 1 else ""),
                            [per_task] * (len(omegas) * len(branches)), executor.workers,
                            f"~{per_task:.2g} CPU s per branch and omega", quiet=args.quiet, min_seconds=0,
                            own=workload.BAYES_COMMAND_SECONDS)

    from attnphase.execution import run_tasks
    from attnphase.execution.dataset import csv_text, job_attrs, write_netcdf
    from attnphase.execution.progress import TaskBar, failure_summary, task_counts
    from attnphase.numerics.commands.common import command_line, task_store
    from attnphase.numerics.jobs.bayes_dataset import bayes_sweep_dataset
    from attnphase.numerics.jobs.tasks import bayes_sweep_task, numerics_version
    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel
    from attnphase.numerics.se.bayes_curve import bayes_rules

    work.begin("sweeping the Bayes-optimal state evolution")
    model = BayesModel.of(params)  # the same at every omega (< 1): omega enters eps_g alone
    rules = bayes_rules(model)
    version = numerics_version()
    # one task per (omega, branch), run like the ERM sweep's: --workers, --scheduler, stored in DIR/tasks, --fresh
    cells = [(float(w), br) for w in omegas for br in branches]
    tasks = [bayes_sweep_task(params.replace(omega=w), alphas, br, version) for w, br in cells]
    with TaskBar("Bayes-optimal sweeps", quiet=args.quiet) as bar:
        outs = run_tasks(tasks, executor=executor, store=task_store(out_dir), fresh=args.fresh, version=version,
                         progress=bar)
    rows_by_omega: dict[float, list[dict]] = {float(w): [] for w in omegas}
    for (w, br), o in zip(cells, outs):
        rows_by_omega[w] += o.value if o.ok else [_failed_row(params.replace(omega=w), a, br, o.error) for a in alphas]
    thresholds = bayes_thresholds(model).as_dict()
    attrs = job_attrs("sweep", version=version, model=bayes_params(params) | {"omega": "scanned"},
                      rule=f"sign{rules.fine.order}", command=command_line(), estimator="bayes-optimal",
                      title="The Bayes-optimal state evolution of dot-product attention over alpha",
                      **{k: v for k, v in thresholds.items() if v is not None and not k.endswith("_note")})
    paths = {w: out_dir / f"sweep_bayes-optimal_omega{params.replace(omega=w).omega:g}.csv" for w in rows_by_omega}
    job_model = bayes_params(params) | {"omega": list(omegas), "alpha": list(alphas), "branches": list(branches)}
    # a bar of 0 or NaN is never silent (solve --estimator bayes-optimal's error_note, for the rows)
    bars_note = bayes_rows_error_note([r for rows in rows_by_omega.values() for r in rows if not r["reason"]],
                                      model.rho0)
    failures = failure_summary(outs)
    from attnphase.numerics.jobs.bayes_dataset import bayes_described

    objs = [{"estimator": "bayes-optimal", "branches": list(branches), "params": bayes_params(params.replace(omega=w)),
             "model": bayes_model_echo(params), "file": paths[w].name, "rows": json_rows(rows)}
            for w, rows in rows_by_omega.items()]
    obj = objs[0] if len(objs) == 1 else {"estimator": "bayes-optimal", "branches": list(branches),
                                          "omegas": list(omegas), "sweeps": objs}
    counts = {**task_counts(outs), "failures": failures}
    obj = outputs.json_value(obj | thresholds | {"error_note": bars_note, "tasks": counts,
                                                 "rule": f"sign{rules.fine.order}", "code_version": version,
                                                 "dataset": "sweep_bayes-optimal.nc",
                                                 "variables": bayes_described(BAYES_SWEEP_COLUMNS)})
    with outputs.staged_output(out_dir, job="sweep_bayes-optimal", model=job_model) as stage:
        for w, rows in rows_by_omega.items():
            outputs.write_text_atomic(stage / paths[w].name, csv_text(rows, BAYES_SWEEP_COLUMNS))
        write_netcdf(bayes_sweep_dataset(rows_by_omega, alphas, branches, attrs | {"error_note": bars_note}),
                     stage / "sweep_bayes-optimal.nc")  # the JSON's error_note, in the dataset too
        outputs.write_text_atomic(stage / "sweep_bayes-optimal.json", json.dumps(obj, indent=1) + "\n")
    for w, rows in rows_by_omega.items():
        rows_word = "row" if len(rows) == 1 else "rows"
        print(f"wrote {len(rows)} {rows_word} to {paths[w]} ({', '.join(branches)})", file=sys.stderr)
    print(f"wrote {out_dir / 'sweep_bayes-optimal.json'} and sweep_bayes-optimal.nc (the run's model, thresholds and "
          "rows; the dataset)", file=sys.stderr)
    print(f"attnphase: note: {bars_note}", file=sys.stderr)
    if args.json:
        print(json.dumps(obj | {"out": str(out_dir)}))
    if failures:
        print(f"attnphase: {failures}", file=sys.stderr)
    bad = [r for rows in rows_by_omega.values() for r in rows if not math.isfinite(r["q"])]
    return 1 if bad or failures else 0


def _failed_row(params, alpha: float, branch: str, error: str) -> dict:
    """The row of a point whose task failed: NaN numbers, the task's error as its reason."""
    row = {k: math.nan for k in BAYES_SWEEP_COLUMNS}
    return row | {"alpha": alpha, "omega": params.omega, "estimator": "bayes-optimal", "branch": branch,
                  "stable": 0, "perfect_recovery": 0, "coincides": 0,
                  "reason": f"task failed: {(error or 'unknown error').splitlines()[0]}"}
