"""``attnphase sweep``: one branch over an alpha grid at each omega, every rank, into ``--out DIR``: a CSV per omega
and one dataset (docs/reference/outputs.md); where the branch ends is reported.  Each omega is a task (resumed
from DIR/tasks).  Exit code 1 if a point failed, 3 if the branch is at no alpha.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from attnphase import options as opt
from attnphase import execution_options, outputs, solver_options, work, workload
from attnphase.display import finite, with_error
from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.commands.common import (check_omega_file_names, command_line, error_note, model_and_config,
                                                staged_job, task_store)
from attnphase.numerics.commands.point_record import (EXIT_NO_BRANCH, RECORD_KEYS, exact_zero_rows_note,
                                                      max_relative_error, model_echo, precision_note)
from attnphase.numerics.commands.row_reasons import (SOLVER_FAILURE, beyond_end_note, birth_line, past_end_note,
                                                     row_reasons, several_branches)

NAME = "sweep"
HELP = "follow a branch over a range of alpha (continuation), write a CSV table"
DESCRIPTION = ("Follow one branch of fixed points over alpha by continuation and write one row per alpha to "
               "DIR/sweep_<branch>_omega<omega>.csv; where the branch ends, and where the positional branch is born "
               "from the agnostic point below its first point, is reported. Several omegas: one sweep per omega, each "
               "a task (--workers, --scheduler), all in DIR/sweep_<branch>.nc; the model, solver, ends and rows (what "
               "--json prints) in DIR/sweep_<branch>.json.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``sweep``'s options (docs/reference/commands.md)."""
    p.add_argument("--alpha", required=True, metavar="RANGE", help=f"alpha values > 0: {opt.RANGE_SYNTAX}")
    solver_options.add_branch_option(p, mixed=True, bayes=True,
                                     bayes_default="informative or uninformative (default: both)")
    opt.add_estimator_option(p, "both of its branches (or --branch's) into DIR/sweep_bayes-optimal_omega<omega>.csv, "
                             "DIR/sweep_bayes-optimal.nc and .json, with its thresholds")
    opt.add_model_options(p, omega_range=True, omega_default="0.3")
    solver_options.add_solver_options(p, "sweep")
    solver_options.add_error_estimate_option(p, "every point's observables (err_<key> columns)")
    outputs.add_out_option(p, "results", "sweep_<branch>_omega<omega>.csv per omega (rank r >= 2: "
                           "..._rank<r>x<r*>.csv) and sweep_<branch>.nc and .json (rank r >= 2: "
                           "sweep_<branch>_rank<r>x<r*>.nc, .json)")
    execution_options.add_job_options(p, workload.MAX_SWEEP_POINTS)


def run(args: argparse.Namespace) -> int:
    """The sweep of the module doc, every option checked first; its exit code."""
    from attnphase.numerics.commands.bayes_optimal import by_estimator, sweep_bayes_optimal

    check_omega_file_names(opt.parse_values(args.omega, "--omega"))  # one file per omega, either estimator
    if (code := by_estimator(args, lambda: sweep_bayes_optimal(args))) is not None:
        return code
    alphas = opt.parse_values(args.alpha, "--alpha", positive=True)
    omegas = opt.parse_values(args.omega, "--omega")
    params, cfg = model_and_config(args, omegas, args.branch)
    opt.check_branch_possible(params, args.branch)
    from attnphase.numerics.errors.quadrature_error import independent_rules

    n_rules = independent_rules(cfg, solver_options.error_estimate_from_args(args))
    executor = execution_options.executor_from_args(args)
    workload.check_grid(len(alphas) * len(omegas), workload.MAX_SWEEP_POINTS, "alpha values (x omegas)", "--alpha",
                        args.large)
    out_dir = outputs.out_dir_from_args(args)
    if alphas != sorted(alphas):
        print("attnphase: note: --alpha values sorted ascending (the branch is followed by continuation in alpha)",
              file=sys.stderr)
    opt.announce_defaults(args, params)
    if args.branch == "mixed" and not is_scalar_form(params.r, params.r_star):
        print(MIXED_NOTE, file=sys.stderr)
    return _sweeps(args, params, cfg, n_rules, omegas, alphas, executor, out_dir)


#: Said by a mixed sweep before it starts (docs/howto/rank-r-and-the-mixed-phase.md).
MIXED_NOTE = ("attnphase: note: the mixed label can have several branches close together: the sweep follows one by "
              "warm steps, and a step can pass to another (at omega = 0.1 from |th0| 0.049 at alpha = 0.5 to 0.167 at "
              "0.625); `attnphase phase-diagram --rank 2` follows each, `attnphase census` lists every point at one "
              "alpha")


def sweep_record(fp: Any, eps_lin: float = math.nan) -> dict:
    """One fixed point's values in the sweep's columns (:func:`~attnphase.numerics.jobs.variables.sweep_columns`): its
    RECORD_KEYS at r = r* = 1, else the gauge invariants and angle in place of q, m, V, theta (``eps_lin`` given)."""
    rec = fp.record
    if not fp.is_matrix:
        return {k: rec[k] for k in RECORD_KEYS}
    from attnphase.numerics.jobs.variables import flat_invariants
    from attnphase.theory.whitening import original

    p = fp.params
    return ({"alpha": fp.alpha, "omega": p.omega, "sigma": original(p).sigma_value, "lam": p.lam, "branch": fp.branch}
            | flat_invariants(rec) | {"eps_g": rec["eps_g"], "e_t": rec["e_t"], "eps_lin": eps_lin,
                                      "gauge_angle": rec["gauge_angle"], "converged": rec["converged"],
                                      "iterations": rec["iterations"], "residual": rec["residual"]})


def _sweep_rows(res, branch: str, columns: tuple[str, ...], eps_lin: float = math.nan
                ) -> tuple[list[dict], list[dict], list[str]]:
    """The CSV rows of one sweep (``columns``), the same with the invariants and their bars as lists (what
    :func:`~attnphase.numerics.commands.point_record.exact_zero_rows_note` reads), and each row's reason."""
    from attnphase.numerics.jobs.variables import flat_invariants

    reasons = row_reasons(res, branch)
    no_bars = {c: math.nan for c in columns if c.startswith("err_")}
    results = [c[4:] for c in no_bars] + (["gauge_angle"] if "gauge_angle" in columns else [])
    rows, listed = [], []
    for i, (fp, reason) in enumerate(zip(res.points, reasons)):
        rec, err = sweep_record(fp, eps_lin), (res.errors[i] if res.errors else {})
        flat = {k: v for k, v in err.items() if np.ndim(v) == 0} | (flat_invariants(err, "err_") if err else {}) \
            if fp.is_matrix else err
        if not fp.status.converged:
            rec.update({k: math.nan for k in results}, branch="")
        rows.append(rec | no_bars | flat | {"reason": reason})
        listed.append({k: v for k, v in fp.record.items() if np.ndim(v) == 1} | err | {"reason": reason}
                      if fp.is_matrix else rows[-1])
    return rows, listed, reasons


def _bare_end_note(branch: str, bare: list[tuple[float, str]]) -> str:
    """The ends located without an error bar, said ("" where none): at which omegas, and why where the way each was
    located says (:func:`~attnphase.numerics.jobs.boundary_table.no_bar_reason`)."""
    from attnphase.numerics.jobs.boundary_table import no_bar_reason

    if not bare:
        return ""
    why = no_bar_reason({method for _, method in bare}, "the JSON's end.method says how it was located")
    return f"the {branch} end has no error bar at omega = " + ", ".join(f"{w:g}" for w, _ in bare) + f": {why}"


def _sweeps(args: argparse.Namespace, params: Any, cfg: Any, n_rules: int, omegas: list[float],
            alphas: list[float], executor: Any, out_dir: Any) -> int:
    """One branch over alpha into DIR/sweep_<branch>_omega<omega>.csv, at each omega of ``--omega`` (one task each),
    DIR/sweep_<branch>.nc and DIR/sweep_<branch>.json (the ``--json`` object), at every rank (the file names carry
    ``_rank<r>x<r*>`` after the model where r or r* >= 2)."""
    from attnphase.numerics.errors.quadrature_error import e_t_rule_note, error_bars_note
    from attnphase.numerics.errors.replicates import replicate_count

    r, r_star, L = params.r, params.r_star, params.L
    suffix = "" if is_scalar_form(r, r_star) else f"_rank{r}x{r_star}"
    workload.announce_rules(L, cfg, workload.SWEEP_ROLES)
    solves = len(alphas) * (1 + (replicate_count(cfg) or n_rules))
    per_solve = workload.sweep_point_seconds(args.branch, L, cfg) if not suffix else \
        workload.RANK2_SOLVE_SECONDS * workload.matrix_rule_factor(L, cfg)
    per_omega = per_solve * len(alphas) * max(1, n_rules) if not suffix else solves * per_solve
    from attnphase.execution.executor import usable_cores

    one = len(omegas) == 1  # one task, in this process, its compiled loops on every core
    workload.announce_tasks(f"sweep of {len(alphas)} alpha values" + ("" if one else f" at {len(omegas)} omegas"),
                            [per_omega] * len(omegas), 1 if one else executor.workers,
                            f"~{per_solve:.2g} CPU s per " + ("point" if not suffix else "solve"), quiet=args.quiet,
                            own=workload.JOB_COMMAND_SECONDS, cores=usable_cores() if one else 0,
                            core_use=workload.SWEEP_CORE_USE if not suffix else workload.RANK2_CORE_USE)

    work.begin("sweeping the branch")
    from tqdm import tqdm

    from attnphase.execution import run_tasks
    from attnphase.execution.dataset import csv_text, job_attrs, write_netcdf
    from attnphase.execution.progress import StoreNotes, TaskBar, failure_summary, task_counts
    from attnphase.numerics.jobs.dataset import sweeps_dataset
    from attnphase.numerics.jobs.tasks import numerics_version, sweep_job, sweep_task
    from attnphase.numerics.jobs.variables import described, sweep_columns
    from attnphase.numerics.phase.lowest_branch import teacher_eps_lin

    columns = sweep_columns(r, r_star, L)
    store = task_store(out_dir)
    version = numerics_version()
    tasks = [sweep_task(params.replace(omega=float(w)), alphas, args.branch, cfg, version, n_rules) for w in omegas]
    if len(tasks) == 1 and executor.scheduler is None:
        # one sweep in this process: a bar over its points (the same task and key, with a progress hook)
        with tqdm(total=len(alphas), desc=f"{args.branch} sweep", unit="pt", file=sys.stderr,
                  disable=args.quiet) as bar:
            tasks = [replace(tasks[0], fn=partial(sweep_job, progress=lambda _: bar.update()))]
            outs = run_tasks(tasks, store=store, fresh=args.fresh, version=version,
                             progress=StoreNotes(quiet=args.quiet))
            if outs[0].status == "stored":  # its points read back: the bar full
                bar.update(bar.total - bar.n)
    else:
        with TaskBar(f"{args.branch} sweeps", quiet=args.quiet) as tbar:
            outs = run_tasks(tasks, executor=executor, store=store, fresh=args.fresh, version=version,
                             progress=tbar)
    objs, n_on, n_failed, cells, n_unbarred, listed = [], 0, 0, [], 0, []
    bare_ends: list[tuple[float, str]] = []  # (omega, method) of each end located without an error bar
    rel_errors: list[float] = []  # max_relative_error of each row on the branch with bars
    job_model = params.to_dict() | {"omega": list(omegas), "alpha": list(alphas), "rank": [r, r_star],
                                    "solver": cfg.as_dict(), "independent_rules": n_rules}
    wrote: list[str] = []  # said once the files are in place
    dataset = f"sweep_{args.branch}{suffix}.nc"
    record = f"sweep_{args.branch}{suffix}.json"  # the --json object, beside the CSVs
    with staged_job(out_dir, f"sweep_{args.branch}{suffix}", job_model, args.json) as stage:
        for w, o in zip(omegas, outs):
            path = out_dir / f"sweep_{args.branch}_omega{params.replace(omega=w).omega:g}{suffix}.csv"
            if not o.ok:
                cells.append((float(w), None, "failed", o.error, []))
                continue
            res = o.value
            lin = teacher_eps_lin(params.replace(omega=w), cfg) if suffix else math.nan  # the rank-r* teacher's
            rows, as_lists, reasons = _sweep_rows(res, args.branch, columns, lin)
            rel_errors += [max_relative_error(lst | {"branch": row["branch"]})
                           for row, lst, why in zip(rows, as_lists, reasons) if not why]
            cells.append((float(w), res, o.status, o.error, rows))  # "done", or "stored" where read back
            listed += as_lists
            outputs.write_text_atomic(stage / path.name, csv_text(rows, columns))
            on = sum(not why for why in reasons)
            n_unbarred += sum(not why and not all(math.isfinite(row[c]) for c in columns if c.startswith("err_"))
                              for row, why in zip(rows, reasons))
            failed = sum(bool(why) and why.startswith("not converged") for why in reasons)
            # converged off the branch on the side of its end where it exists (row_reasons)
            missed = sum(why.startswith(SOLVER_FAILURE) for why in reasons)
            failed += missed
            n_on, n_failed = n_on + on, n_failed + failed
            ends = not math.isnan(res.end.alpha)
            if ends and not finite(res.end.err):
                bare_ends.append((float(w), res.end.method))
            if ends:
                where = "above" if res.end_side == "below" else "below"
                at = with_error(res.end.alpha, res.end.err) if finite(res.end.err) else f"{res.end.alpha:.4f}"
                several = several_branches(res)
                print(("the followed " if several else "") + f"{args.branch} branch ends at alpha = {at} (it exists "
                      f"{where} that; {res.end.kind}, located by {res.end.method})"
                      + (f" at omega = {w:g}" if len(omegas) > 1 else "")
                      + (f"; {past_end_note(res, args.branch)}" if several else ""), file=sys.stderr)
                if note := beyond_end_note(res):
                    print(f"attnphase: note: {note}" + (f" at omega = {w:g}" if len(omegas) > 1 else ""),
                          file=sys.stderr)
            if res.birth_note:
                print(f"attnphase: {birth_line(res)}" + (f" at omega = {w:g}" if len(omegas) > 1 else ""),
                      file=sys.stderr)
            if rule_rows := [fp.alpha for i, fp in enumerate(res.points) if res.rule_point(i)]:
                one = len(rule_rows) == 1
                print(f"attnphase: note: the {args.branch} point{'' if one else 's'} at alpha = "
                      f"{', '.join(f'{a:g}' for a in rule_rows)}" + (f" at omega = {w:g}" if len(omegas) > 1 else "")
                      + f" {'is' if one else 'are'} the solve rule's ({cfg.quadrature}): the solve from "
                      f"{'it' if one else 'each'} on a finer rule reaches the agnostic point (the reason column), so "
                      f"{'it is' if one else 'they are'} not on the branch; a finer --quadrature or --precision "
                      "follows the branch there", file=sys.stderr)
            objs.append({
                "branch": args.branch, "requested_branch": args.branch, "params": params.replace(omega=w).to_dict(),
                "model": model_echo(params), "solver": cfg.as_dict(), "file": path.name,
                "end": {"alpha": res.end.alpha, "err": res.end.err, "exists": where, "kind": res.end.kind,
                        "method": res.end.method} if ends else None,
                "birth": {"alpha": res.birth.alpha, "err": res.birth.err, "kind": res.birth.kind,
                          "method": res.birth.method, "note": res.birth_note} if res.birth_note else None,
                "on_branch": on, "not_converged": failed - missed, "solver_failure": missed,
                "off_branch": len(rows) - on - failed,
                "rows": [row | {"branch": row["branch"] or None} for row in rows],  # null where not converged
            } | ({"rank": r, "teacher_rank": r_star} if suffix else {}))
            notes = [f"{failed - missed} not converged"] if failed - missed else []
            notes += [f"{missed} solver failure where the branch exists (see the reason column)"] if missed else []
            if len(rows) - on - failed:
                off = (f"off the followed {args.branch} branch" if several_branches(res) else
                       f"where no {args.branch} fixed point exists")
                notes.append(f"{len(rows) - on - failed} {off} (see the reason column)")
            wrote.append(f"wrote {len(rows)} row{'' if len(rows) == 1 else 's'} to {path}"
                         + (f" ({'; '.join(notes)})" if notes else ""))
        bars_note = error_bars_note(cfg, n_rules)
        if not bars_note and n_unbarred:
            bars_note = (f"{n_unbarred} point(s) on the branch have no error bar (NaN err_*): fewer than two of their "
                         "rules reproduced the branch there (a spread needs two); such a point may be an artefact of "
                         "the rule")
        # a bar of 0 is never silent (as solve's error_note): the symmetry that holds the value at 0
        said = "; ".join(n for n in (bars_note, _bare_end_note(args.branch, bare_ends), exact_zero_rows_note(listed),
                                     e_t_rule_note(cfg)) if n)
        note = {"error_note": said} if said else {}
        attrs = job_attrs("sweep", version=version, model=params.to_dict() | {"omega": "scanned"},
                          solver=cfg.as_dict(), rule=cfg.quadrature, command=command_line(), branch=args.branch,
                          title=f"The {args.branch} branch of dot-product attention's state evolution over alpha",
                          **note)  # the JSON's error_note, in the dataset too
        write_netcdf(sweeps_dataset(cells, alphas, attrs, columns), stage / dataset)
        failures = failure_summary(outs)
        counts = {**task_counts(outs), "failures": failures}
        obj = objs[0] if len(omegas) == 1 and objs else {"branch": args.branch, "omegas": list(omegas), "sweeps": objs}
        obj = outputs.json_value(obj | {"tasks": counts, "dataset": dataset,
                                        "variables": described(columns), "code_version": version,
                                        "command": command_line()} | note)
        outputs.write_text_atomic(stage / record, json.dumps(obj, indent=1) + "\n")
    for line in wrote:
        print(line, file=sys.stderr)
    print(f"wrote {out_dir / record} and {dataset} (the run's model, solver, ends and rows; the dataset)",
          file=sys.stderr)
    error_note(said)
    if finite_rel := [e for e in rel_errors if math.isfinite(e)]:  # as solve says of its point
        precision_note(max(finite_rel), getattr(args, "precision", None) or "default")
    if jump_rows := [fp for _, res, status, _, _ in cells if res is not None for fp in res.points
                     if fp.status.converged and math.isfinite(fp.status.jump)]:
        print("attnphase: note: converged to the rule's jump scale (the residual above tol, the map jumping by more "
              "next to the point, as `attnphase solve` accepts it): alpha = "
              + ", ".join(f"{fp.alpha:g}" + (f" at omega = {fp.params.omega:g}" if len(omegas) > 1 else "")
                          for fp in jump_rows), file=sys.stderr)
    if args.json:
        print(json.dumps(obj | {"out": str(out_dir)}))
    if failures:
        print(f"attnphase: {failures}", file=sys.stderr)
    if n_failed or failures:  # a point, or a task, failed
        return 1
    if n_on == 0:
        print(f"attnphase: no {args.branch} fixed point at any alpha of the grid (exit code {EXIT_NO_BRANCH})",
              file=sys.stderr)
        return EXIT_NO_BRANCH
    return 0
