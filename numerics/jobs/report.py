"""The ``phase-diagram`` job at every rank: the boundaries over omega as tasks (:mod:`attnphase.numerics.jobs.tasks`,
stored under ``DIR/tasks``; ``--continuation``: a task per chain of omegas), written as CSV, JSON, netCDF and
figures and printed as a table (:mod:`attnphase.numerics.jobs.boundary_table`).
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from attnphase.execution import ExecutorSpec, Outcome, ResultStore, code_version, run_tasks
from attnphase.execution.outputs import json_value, outputs_current, record_outputs
from attnphase.execution.progress import TaskBar, failure_summary, job_summary, task_counts
from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.jobs.boundary_table import (
    alpha_max_of, births_note, boundary_table, bracket_widths, csv_columns, error_label, print_boundary_table,
    unbarred_note,
)
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.boundary_refinement import alpha_c_method
from attnphase.numerics.jobs.tasks import (
    boundaries_or_failure, boundaries_task, chain_task, numerics_version, omega_chains, prepare_kernels,
)
from attnphase.numerics.errors.quadrature_error import replicate_spread
from attnphase.numerics.errors.replicates import replicate_count
from attnphase.theory.params import ModelParams

CURVES_OMEGA = 0.3


def curves_omega(omegas: Sequence[float]) -> float | None:
    """The omega of the branch-curves figure: the one of ``omegas`` below 1 nearest CURVES_OMEGA (the smaller on a tie);
    None when there is none."""
    return min((float(w) for w in omegas if float(w) < 1), key=lambda w: (abs(w - CURVES_OMEGA), w), default=None)


@dataclass(frozen=True)
class BoundaryRuns:
    """The boundaries of a list of models, their errors (or None), the outcome of each model's first task, the task
    counts and failures, and the keys of all the tasks."""

    rows: list[Boundaries]
    errors: list[dict[str, float]] | None
    outcomes: list[Outcome]
    counts: dict[str, int]
    failures: str
    keys: tuple[str, ...] = ()


def compute_boundaries(models: Sequence[ModelParams], alphas: Sequence[float], config: SolverConfig,
                       n_rules: int = 0, *, executor: ExecutorSpec = ExecutorSpec(), store: ResultStore | None = None,
                       fresh: bool = False, quiet: bool = False, desc: str = "phase diagram",
                       tags: Sequence[str] | None = None, curves_at: float | None = CURVES_OMEGA) -> BoundaryRuns:
    """phase_boundaries at every model (one task each, labelled after ``tags``), and on ``n_rules - 1`` more rules
    when ``n_rules`` >= 2, their spread each boundary's error; otherwise the rules' blocks' errors (the bracket widths
    at r >= 2 or r* >= 2).  ``curves_at``: the omega whose first task also follows the whole positional branch."""
    reps = max(1, n_rules)
    tags = tags or [""] * len(models)
    version = numerics_version()
    # at the curves' omega the first rule's task also follows the whole positional branch (its curves)
    tasks = [boundaries_task(m, alphas, config, k, tag, version,
                             whole=k == 0 and curves_at is not None and abs(m.omega - curves_at) < 1e-12)
             for m, tag in zip(models, tags) for k in range(reps)]
    # the smallest omegas first: they take longest, so they do not end the run alone
    order = sorted(range(len(tasks)), key=lambda i: tasks[i].arg.params.omega)
    with TaskBar(desc, unit="task", quiet=quiet) as bar:
        done = run_tasks([tasks[i] for i in order], executor=executor, store=store, fresh=fresh, version=version,
                         progress=bar, prepare=partial(prepare_kernels, models[0], config) if models else None)
    outs = [o for _, o in sorted(zip(order, done), key=lambda pair: pair[0])]  # back in the tasks' order
    rows = [boundaries_or_failure(outs[i * reps], m.omega, m.r, m.r_star) for i, m in enumerate(models)]
    replicas = [[boundaries_or_failure(o, m.omega) for o in outs[i * reps:(i + 1) * reps]]
                for i, m in enumerate(models)] if n_rules else None
    return _boundary_runs(rows, replicas, config, [outs[i * reps] for i in range(len(models))], outs, tasks)


def compute_boundaries_continued(params: ModelParams, omegas: Sequence[float], alphas: Sequence[float],
                                 config: SolverConfig, n_rules: int = 0, *, n_chains: int = 1,
                                 executor: ExecutorSpec = ExecutorSpec(), store: ResultStore | None = None,
                                 fresh: bool = False, quiet: bool = False) -> BoundaryRuns:
    """:func:`compute_boundaries` at each of ``omegas``, continued in omega along ``n_chains`` contiguous chains (one
    task each per rule, the one holding :func:`curves_omega` anchored there); a failed chain's rows are NaN."""
    reps = max(1, n_rules)
    version = numerics_version()
    at = curves_omega(omegas)
    chains = omega_chains(omegas, n_chains, anchor_at=at)
    tasks = [chain_task(params, alphas, config, ch, k, whole=k == 0 and at is not None and abs(ch[0] - at) < 1e-12,
                        version=version) for k in range(reps) for ch in chains]
    with TaskBar("phase diagram", unit="chain", quiet=quiet) as bar:
        outs = run_tasks(tasks, executor=executor, store=store, fresh=fresh, version=version, progress=bar,
                         prepare=partial(prepare_kernels, params, config))
    per_rule: list[dict[float, tuple[Boundaries, Outcome]]] = [{} for _ in range(reps)]
    for i, o in enumerate(outs):
        k, (anchor, up, down) = i // len(chains), chains[i % len(chains)]
        for w in [anchor, *up, *down]:
            got = [b for b in (o.value if o.ok else []) if abs(b.omega - w) < 1e-12]
            per_rule[k][w] = (got[0] if got else boundaries_or_failure(o, w), o)
    # the chains hold the omegas as float(omega): each one's cells are found by that key
    replicas = [[per_rule[k][float(w)][0] for k in range(reps)] for w in omegas] if n_rules else None
    first = [per_rule[0][float(w)] for w in omegas]
    return _boundary_runs([b for b, _ in first], replicas, config, [o for _, o in first], outs, tasks)


def _boundary_runs(rows: list[Boundaries], replicas: list[list[Boundaries]] | None, config: SolverConfig,
                   outcomes: list[Outcome], outs: list[Outcome], tasks: list) -> BoundaryRuns:
    """The :class:`BoundaryRuns` of ``rows``: each row's errors the spread over its ``replicas`` (one per rule, with
    ``--error-estimate K``), else its own (the rules' blocks, or the bracket widths at r >= 2 or r* >= 2)."""
    errors = ([replicate_spread(reps) for reps in replicas] if replicas is not None
              else [b.errors() for b in rows] if replicate_count(config) or bracket_widths(rows) else None)
    if replicas is not None:  # alpha_c_method names the spread over the rules its error now is
        rows = [replace(b, alpha_c_method=alpha_c_method(config, math.nan, len(reps)))
                if b.alpha_c_method and is_scalar_form(b.r, b.r_star) else b for b, reps in zip(rows, replicas)]
    return BoundaryRuns(rows, errors, outcomes, task_counts(outs), failure_summary(outs), tuple(t.key for t in tasks))


def run_phase_diagram(params: ModelParams, omegas: Sequence[float], alphas: Sequence[float], *,
                      out_dir: str | Path = "results", config: SolverConfig | None = None, quiet: bool = False,
                      error_estimate: int = 0, executor: ExecutorSpec = ExecutorSpec(),
                      store: ResultStore | None = None, fresh: bool = False, command: str = "",
                      existing: str | Path | None = None, chains: int = 0,
                      amend: Callable[[dict], dict] | None = None,
                      shaping: dict[str, Any] | None = None) -> tuple[int, dict]:
    """Compute the boundaries at every omega and write phase_diagram.csv/.json/.nc/.png and the branch curves at
    :func:`curves_omega`; returns the exit code (1 when a task failed) and the content of phase_diagram.json.
    ``error_estimate`` K >= 2: the errors over K independent rules; ``existing``: an earlier run's outputs, kept
    where they are this job's (:mod:`attnphase.execution.outputs`); ``chains``: :func:`compute_boundaries_continued`;
    ``amend(meta)``: the JSON's content with what the caller adds (after the table is printed), written into the
    file before the outputs are recorded; ``shaping``: the caller's options that change what ``amend`` adds
    (``--census``), so that earlier outputs made without them are not taken as this run's."""
    cfg = config or SolverConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    models = [params.replace(omega=float(w)) for w in omegas]
    scalar = is_scalar_form(params.r, params.r_star)
    at = curves_omega(omegas) if scalar else None
    if chains:
        runs = compute_boundaries_continued(params, omegas, alphas, cfg, error_estimate, n_chains=chains,
                                            executor=executor, store=store, fresh=fresh, quiet=quiet)
    else:
        runs = compute_boundaries(models, alphas, cfg, error_estimate, executor=executor, store=store,
                                  fresh=fresh, quiet=quiet, curves_at=at)
    rows, errors = runs.rows, runs.errors
    table = boundary_table(rows, errors)
    files = ["phase_diagram.csv", "phase_diagram.png", "phase_diagram.nc", "phase_diagram.json"]
    curves = next((b for b in rows if at is not None and abs(b.omega - at) < 1e-12 and b.semantic is not None
                   and b.semantic.points), None)
    if curves is not None:
        files.append(f"curves_omega{curves.omega:g}.png")  # the branch-curves figure
    elif not quiet and scalar:
        failed = at is not None and any(abs(b.omega - at) < 1e-12 and not o.ok for b, o in zip(rows, runs.outcomes))
        print(("attnphase: note: no branch-curves figure: the omega = {:g} task {}".format(
                   at, "failed (below)" if failed else "has no converged semantic point"))
              if at is not None else "attnphase: note: no branch-curves figure (no omega below 1)", file=sys.stderr)
    # what the files are made of: the tasks, the options that shape the files, the presenting code
    identity = {"tasks": runs.keys, "omegas": list(omegas), "alphas": list(alphas), "error_estimate": error_estimate,
                "params": params.to_dict(), "presentation": code_version("attnphase", "attnphase.numerics",
                                                                         "attnphase.execution"),
                "shaping": dict(shaping or {})}
    unchanged = runs.counts["computed"] == 0 and not runs.failures and outputs_current(
        Path(existing) if existing is not None else out, "phase_diagram", identity, files)
    if unchanged:
        meta = json.loads((Path(existing if existing is not None else out) / "phase_diagram.json").read_text())
        meta |= {"tasks": runs.counts | {"failures": runs.failures}, "seconds": time.perf_counter() - t0}
    else:
        from attnphase.numerics.jobs.plots import plot_branch_curves, plot_phase_diagram

        shape = model_shape(params)
        plot_phase_diagram(rows, out / "phase_diagram.png", alpha_max=alpha_max_of(rows, alphas), errors=errors,
                           model=model_title(params))
        if curves is not None:
            pc = params.replace(omega=curves.omega)
            at = [i for i, b in enumerate(rows) if b.omega == curves.omega]  # its row's error bars
            plot_branch_curves(curves.semantic, curves.positional, curves.semantic.points[0].observables.eps_lin,
                               curves.alpha_c, curves.alpha_l, out / files[-1],
                               title=(f"{shape}, " if shape else "")
                               + f"omega = {curves.omega:g}, sigma = {pc.sigma_value}, lambda = {pc.lam}",
                               alpha_max=alpha_max_of([curves], alphas),
                               errors=errors[at[0]] if errors and at else None)
        meta = write_boundary_files(
            out, "phase_diagram", table, runs, [{"omega": b.omega} for b in rows], params, omegas, alphas, cfg,
            error_estimate, command, t0, "Phase diagram of dot-product attention: alpha_c, alpha_l "
            "and the branch ends over omega", {"params": params.to_dict() | ({"omega": "scanned"} if len(omegas) > 1
                                                                               else {})},
            more={"continuation_chains": chains},
            tail=None if scalar else {"curves": json_value({f"{b.omega:g}": b.curves for b in rows})})
    print_boundary_table(table, error_label(cfg, error_estimate, rows) if errors else "", params.r)
    if errors and (note := unbarred_note(table, params.r)):
        print(f"attnphase: note: {note}", file=sys.stderr)
    if note := births_note(table, params.r):
        print(f"attnphase: note: {note}", file=sys.stderr)
    if amend is not None:
        meta = amend(meta)
        if not unchanged:  # the file holds what the caller prints (--json), census and notes included
            (out / "phase_diagram.json").write_text(json.dumps(json_value(meta), indent=2, default=str))
    if not unchanged:
        record_outputs(out, "phase_diagram", identity, files)
    what = "outputs up to date in" if unchanged else "wrote"
    return job_summary(f"{what} {out}/phase_diagram.csv, .json, .nc, .png"
                       + (f", {files[-1]}" if curves is not None else ""),
                       time.perf_counter() - t0, runs.counts, runs.failures), meta


def write_boundary_files(out: Path, stem: str, table: list[dict], runs: BoundaryRuns, at: Sequence[dict[str, Any]],
                         params: ModelParams, omegas: Sequence[float], alphas: Sequence[float], cfg: SolverConfig,
                         error_estimate: int, command: str, t0: float, title: str, head: dict, *,
                         more: dict | None = None, tail: dict | None = None,
                         scanned: dict[str, Sequence[Any]] | None = None, model: dict | None = None,
                         amend: Callable[[dict], dict] | None = None) -> dict:
    """``<stem>``.csv/.nc/.json of a boundaries job (phase-diagram; scan, the values ``scanned`` {field: values}
    before omega): ``table``'s rows, the dataset's cell i ``runs``' row i at the coordinates ``at[i]``; returns the
    JSON's record, ``head``, ``more`` and ``tail`` before, amid and after the keys every such job has; ``model``: the
    datasets' model attribute (default ``params`` with omega and the scanned values "scanned"); ``amend(meta)``: the
    record with what the caller adds, written once."""
    from attnphase.execution.dataset import csv_text, job_attrs, write_netcdf
    from attnphase.numerics.jobs.dataset import boundaries_dataset
    from attnphase.numerics.jobs.variables import described

    r, r_star, errors, first = params.r, params.r_star, runs.errors, tuple(scanned or ())
    # what the err_ columns are, as the printed table's heading says
    bars = error_label(cfg, error_estimate, runs.rows) if errors else "none"
    version = numerics_version()
    (out / f"{stem}.csv").write_text(csv_text(table, first + csv_columns(r, bool(errors))))
    cells = [{"at": a, "b": b, "err": errors[i] if errors else None, "status": o.status if o.ok else "failed",
              "error": o.error} for i, (a, b, o) in enumerate(zip(at, runs.rows, runs.outcomes))]
    attrs = job_attrs("scan" if first else "phase-diagram", version=version, solver=cfg.as_dict(), rule=cfg.quadrature,
                      model=model or params.to_dict() | {"omega": "scanned"} | dict.fromkeys(first, "scanned"),
                      command=command,
                      **({"scanned": first[0]} if first else {}), **{k: head[k] for k in ("models",) if k in head},
                      independent_rules=error_estimate,
                      error_bars=bars,
                      title=title + (f" (rank r = {r}, r* = {r_star})" if (r, r_star) != (1, 1) else ""))
    # the record's numbers about the run (continuation_chains: continuation changes the boundaries) in the file too
    attrs |= {k: v for k, v in (more or {}).items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)}
    coords = dict(scanned or {}) | {"omega": [float(w) for w in omegas]}
    write_netcdf(boundaries_dataset(cells, tuple(coords), coords, alphas, attrs, r), out / f"{stem}.nc")
    meta = head | {"rank": r, "teacher_rank": r_star, "omegas": list(omegas), "alphas": list(alphas),
                   "solver": cfg.as_dict(), "independent_rules": error_estimate, "error_bars": bars} | (more or {}) | {
        "rows": json_value(table), "tasks": runs.counts | {"failures": runs.failures}, "dataset": f"{stem}.nc",
        "variables": described(first + csv_columns(r, bool(errors))), "code_version": version,
        "seconds": time.perf_counter() - t0} | (tail or {})
    if amend is not None:
        meta = amend(meta)
    (out / f"{stem}.json").write_text(json.dumps(meta, indent=2, default=str))
    return meta


def model_title(params: ModelParams) -> str:
    """What a phase diagram's title says of the model (omega is its axis): sigma and lambda, then
    :func:`model_shape`, e.g. "sigma = 0.5, lambda = 0.01, L = 3"."""
    return ", ".join(filter(None, [f"sigma = {params.sigma_value}, lambda = {params.lam:g}", model_shape(params)]))


def model_shape(params: ModelParams) -> str:
    """What a figure's title says of the model beyond omega, sigma and lambda: L, and P and A where they are not
    L's defaults ("" for the paper's L = 2 model), e.g. "L = 3, P = 1,0,0;0,1,0;0,0,1"."""
    import numpy as np

    def text(M: object) -> str:
        return ";".join(",".join(f"{x:.3g}" for x in row) for row in np.asarray(M, dtype=float))

    default = ModelParams(L=params.L)
    parts = [f"L = {params.L}"] if params.L != 2 else []
    parts += [f"{k} = {text(getattr(params, k))}" for k in ("P", "A")
              if not np.array_equal(np.asarray(getattr(params, k)), np.asarray(getattr(default, k)))]
    return ", ".join(parts)

