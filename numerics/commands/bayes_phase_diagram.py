"""``attnphase phase-diagram --estimator bayes-optimal`` (docs/bayes-optimal.md): at every omega the thresholds
alpha_weak_recovery, alpha_it, alpha_amp with their error bars and the estimator's q0 and eps_g over the alpha grid;
and the thresholds the ERM ``phase-diagram --json`` reports beside its boundaries (:func:`threshold_keys`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from attnphase import options as opt
from attnphase import outputs, work, workload
from attnphase.display import with_error
from attnphase.numerics.commands.bayes_options import bayes_job, bayes_model_echo, bayes_params, json_rows


def threshold_keys(params) -> dict:
    """The Bayes-optimal thresholds as ``phase-diagram --json`` reports them beside the ERM boundaries, with
    ``err_<key>`` and ``<key>_note`` (null with the reason at a rank above 1 or for correlated tokens); the same at
    every omega < 1."""
    from attnphase.numerics.phase.bayes_thresholds import THRESHOLD_KEYS

    why = ""
    if getattr(params, "r", 1) != 1 or getattr(params, "r_star", 1) != 1:
        why = "the Bayes-optimal state evolution is solved at rank 1"
    elif params.correlated_tokens:
        why = "the Bayes-optimal state evolution is solved for independent tokens"
    if why:
        return {c: v for k in THRESHOLD_KEYS for c, v in ((k, None), (f"err_{k}", None), (f"{k}_note", why))}
    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel

    out = bayes_thresholds(BayesModel.of(params)).as_dict()
    return out | {f"{k}_note": f"{out[f'{k}_note']}; the same at every omega < 1" for k in THRESHOLD_KEYS}


def check_bayes_diagram_options(args: argparse.Namespace) -> None:
    """One-line ValueErrors for the ERM-only options of ``phase-diagram`` given with ``--estimator bayes-optimal``
    (the solver's options, --error-estimate among them, are refused as on every command:
    ``bayes_options.check_bayes_solver_options``)."""
    if getattr(args, "census", False):
        raise ValueError("--census searches the ERM fixed points; --estimator bayes-optimal has no census")
    if getattr(args, "continuation", "auto") == "on":
        raise ValueError("--continuation on continues the ERM boundaries in omega; --estimator bayes-optimal computes "
                         "its thresholds at each omega directly")


def phase_diagram_bayes_optimal(args: argparse.Namespace) -> int:
    """``attnphase phase-diagram --estimator bayes-optimal``: the thresholds at every omega and the estimator's q0 and
    eps_g over the alpha grid, into DIR/phase_diagram_bayes-optimal.*.  Exit 1 if a value is not finite."""
    check_bayes_diagram_options(args)
    alphas = sorted(opt.parse_values(args.alpha, "--alpha", positive=True))
    params, omegas, executor, out_dir, per_task = bayes_job(
        args, alphas, workload.MAX_DIAGRAM_POINTS, "(omega, alpha) points (omegas x alphas)", "--omega/--alpha")
    workload.announce_tasks(f"Bayes-optimal phase diagram over {len(omegas)} omega x {len(alphas)} alpha values",
                            [per_task] * len(omegas), executor.workers, f"~{per_task:.2g} CPU s per omega",
                            quiet=args.quiet, min_seconds=0, own=workload.BAYES_DIAGRAM_COMMAND_SECONDS)

    from attnphase.execution import run_tasks
    from attnphase.execution.dataset import job_attrs, write_netcdf
    from attnphase.execution.progress import TaskBar, failure_summary, task_counts
    from attnphase.numerics.commands.common import command_line, staged_job, task_store
    from attnphase.numerics.jobs.bayes_dataset import (BAYES_DIAGRAM_COLUMNS, BAYES_DIAGRAM_CURVES, bayes_diagram_csv,
                                                       bayes_diagram_dataset)
    from attnphase.numerics.jobs.bayes_plots import plot_bayes_diagram
    from attnphase.numerics.jobs.tasks import bayes_diagram_task, numerics_version
    from attnphase.numerics.jobs.bayes_dataset import bayes_described
    from attnphase.numerics.phase.bayes_thresholds import THRESHOLD_KEYS

    work.begin("computing the Bayes-optimal phase diagram")
    version = numerics_version()
    # one task per omega, run like the ERM diagram's: --workers, --scheduler, stored in DIR/tasks, --fresh
    ordered = sorted(omegas)
    with TaskBar("Bayes-optimal omegas", quiet=args.quiet) as bar:
        outs = run_tasks([bayes_diagram_task(params.replace(omega=w), alphas, version) for w in ordered],
                         executor=executor, store=task_store(out_dir), fresh=args.fresh, version=version, progress=bar)
    failures = failure_summary(outs)
    if not any(o.ok for o in outs):  # nothing to write: the tasks' errors are the answer
        raise RuntimeError(f"while computing the Bayes-optimal phase diagram: {failures}")
    # a failed omega is a row of no thresholds whose notes are its task's error, as the ERM diagram records it
    rows = [{k: o.value[0][k] for k in BAYES_DIAGRAM_COLUMNS if k in o.value[0]} if o.ok
            else failed_row(float(params.replace(omega=w).omega), o.reason) for w, o in zip(ordered, outs)]
    curves = {float(params.replace(omega=w).omega): o.value[1]["points"] if o.ok else failed_points(alphas)
              for w, o in zip(ordered, outs)}
    tasks = {"status": [o.status if o.ok else "failed" for o in outs], "error": [o.error for o in outs]}
    rule = next(o.value[2] for o in outs if o.ok)
    stem = "phase_diagram_bayes-optimal"  # beside an ERM diagram's files, never over them
    attrs = job_attrs("phase-diagram", version=version, model=bayes_params(params) | {"omega": "scanned"},
                      rule=rule, command=command_line(), estimator="bayes-optimal",
                      title="The Bayes-optimal thresholds of dot-product attention over omega")
    obj = {"estimator": "bayes-optimal", "params": bayes_params(params) | {"omega": [r["omega"] for r in rows]},
           "model": bayes_model_echo(params), "alphas": list(alphas), "omegas": [r["omega"] for r in rows],
           "rule": rule, "code_version": version, "rows": rows,
           "curves": {repr(float(w)): json_rows(c) for w, c in curves.items()},  # keys: omegas' entries, in full
           "variables": bayes_described(BAYES_DIAGRAM_COLUMNS + BAYES_DIAGRAM_CURVES),
           "tasks": task_counts(outs) | {"failures": failures}}  # as the ERM diagram's JSON
    from attnphase.numerics.commands.bayes_optimal import bayes_rows_error_note

    exact = [f"err_{k}" for k in THRESHOLD_KEYS if any(r[f"err_{k}"] == 0.0 for r in rows)]
    obj["error_note"] = "; ".join(n for n in (  # a bar of 0 or NaN is never silent (as the sweep's)
        bayes_rows_error_note([p for c in curves.values() for p in c], params.rho0),
        f"{' = '.join(exact)} = 0 where the threshold is exact (its <threshold>_note says why)" if exact else "") if n)
    same = all(all(r[k] == rows[0][k] for k in THRESHOLD_KEYS) for r in rows)
    if same:  # one model for every omega (< 1): the thresholds once more at the top, as the ERM diagram has them
        obj |= {c: rows[0][c] for k in THRESHOLD_KEYS for c in (k, f"err_{k}", f"{k}_note")}
    job_model = bayes_params(params) | {"omega": list(omegas), "alpha": list(alphas), "estimator": "bayes-optimal"}
    with staged_job(out_dir, stem, job_model, args.json) as stage:
        outputs.write_text_atomic(stage / f"{stem}.csv", bayes_diagram_csv(rows))
        write_netcdf(bayes_diagram_dataset(rows, alphas, curves, attrs | {"error_note": obj["error_note"]}, tasks),
                     stage / f"{stem}.nc")  # the JSON's error_note, in the dataset too (as the sweep's)
        outputs.write_text_atomic(stage / f"{stem}.json", json.dumps(outputs.json_value(obj), indent=1) + "\n")
        plot_bayes_diagram(rows, alphas, curves, stage / f"{stem}.png",
                           title=f"Bayes-optimal estimator, L = {params.L}, over omega (rule {rule})")
        _print_bayes_diagram(rows, THRESHOLD_KEYS)
        print(f"wrote {stem}.csv, .json, .nc, .png into {stage}")
    if args.json:
        print(json.dumps(outputs.json_value(obj | {"out": str(out_dir)})))
    bad = [p for c in curves.values() for p in c if not (math.isfinite(p["q"]) and math.isfinite(p["eps_g"]))]
    if failures:
        print(f"attnphase: {failures} (their rows have no thresholds, their notes the error; a rerun computes them "
              "again)", file=sys.stderr)
    return 1 if bad or failures else 0


def failed_row(omega: float, reason: str) -> dict:
    """The row of an omega whose task failed: no threshold, each note the task's error."""
    from attnphase.numerics.jobs.bayes_dataset import BAYES_DIAGRAM_COLUMNS

    row = {c: None for c in BAYES_DIAGRAM_COLUMNS} | {"omega": omega, "estimator": "bayes-optimal"}
    return row | {c: f"task failed: {reason}" for c in BAYES_DIAGRAM_COLUMNS if c.endswith("_note")}


def failed_points(alphas) -> list[dict]:
    """The curve of an omega whose task failed: no number at any alpha."""
    return [{"alpha": float(a), "branch": "", "q": math.nan, "err_q": math.nan, "eps_g": math.nan,
             "err_eps_g": math.nan, "perfect_recovery": None} for a in alphas]


def _print_bayes_diagram(rows: list[dict], keys) -> None:
    """One line per omega: each threshold with its error bar (or ``none``), then each null threshold's reason once."""
    print("omega  " + "  ".join(f"{k:>26}" for k in keys))
    for r in rows:
        cells = ["none" if r[k] is None else with_error(r[k], r[f"err_{k}"]) for k in keys]
        print(f"{r['omega']:<6g} " + "  ".join(f"{c:>26}" for c in cells))
    for k in keys:
        notes = sorted({r[f"{k}_note"] for r in rows})
        print(f"{k}: {'; '.join(notes)}")
