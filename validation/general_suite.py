"""``attnphase validate --suite general``: gradient descent against the theory for the general model of
docs/model.md section 7, case by case (docs/validation.md, "``validate --suite general``").

For each :class:`SuiteCase` gradient descent starts from the semantic and the positional initialisation at alphas
on both sides of the model's ``alpha_c`` (:mod:`.suite_alphas`), and the run means are compared, by the agreement
rule of :mod:`attnphase.validation.agreement`, with the state evolution's fixed point reached from the same start:
the rank-1 global-prox curves, or for a rank-r case (:func:`is_rank_case`) the rank-r ``solve`` points with the
mixed point beside them (:mod:`attnphase.validation.invariant_points`); each case also with the aligned-prox point
(:mod:`attnphase.validation.basin_theory`; a rank-1 case up to ``GeneralPlan.aligned_max_L``, from the start's branch;
a rank-r case the aligned-prox rank-r points, the start's branch's and the mixed one).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from .agreement import all_runs_converged, within_rule
from .basin_theory import aligned_config, aligned_task, has_aligned_theory
from .campaign import seed_means
from .experiments import SimResult, SimSpec
from .finite_size import trend_extrapolations
from .invariant_points import POINT_BRANCHES, InvariantPoints, point_config, point_task
from .reference import TheoryAtOmega
from .general_cases import COMPARED, INITS, OBSERVABLES, GeneralPlan, SuiteCase, is_rank_case
from .rule_retry import SolveJob
from .suite_alphas import alphas_around, landmark


def theory_point(theory: TheoryAtOmega | InvariantPoints | None, init: str, alpha: float) -> dict[str, Any] | None:
    """The theory's fixed point reached from ``init``'s start at ``alpha`` (global prox; for a rank-r theory the
    ``solve`` point on the start's branch), or None.  ``exists``: it is the start's branch (converged, its family,
    on the branch's side of its end); a point past the end is still compared (the report says which it is)."""
    if isinstance(theory, InvariantPoints):
        return theory.point(alpha, init)
    if theory is None or (init, "global") not in theory.curves:
        return None
    return theory.curve(init, "global").point(alpha, lambda rec: {
        "m_norm": rec.get("m_norm", abs(rec["m"])), "abs_theta": abs(rec["theta"]), "q": rec["q"],
        "eps_g": rec["eps_g"], "e_t": rec["e_t"]})



#: The observables a rank-r row is compared on against the mixed fixed point (both overlaps and eps_g).
MIXED_COMPARED = ("abs_theta", "m_norm", "eps_g")


def _compare(row: dict[str, Any], th: dict[str, Any] | None, observables: tuple[str, ...]) -> dict[str, bool | None]:
    """The agreement rule per observable against the theory point ``th`` (None: no converged point; False
    where a run of the row did not reach the gradient tolerance: never counted as agreement)."""
    out: dict[str, bool | None] = {}
    for obs in observables:
        ok = th is not None and th["converged"] and th.get(obs) is not None and math.isfinite(th[obs])
        out[obs] = (all_runs_converged(row) and within_rule(row[f"{obs}_mean"], row[f"{obs}_std"], row["n_runs"],
                                                             th[obs])) if ok else None
    return out


def case_rows(case: SuiteCase, results: list[SimResult], theory: TheoryAtOmega | InvariantPoints | None,
              mark: tuple[float, str], aligned: dict[tuple[float, str], dict[str, Any]] | None = None,
              ) -> list[dict[str, Any]]:
    """Mean and std over seeds per (alpha, init), the theory beside them and the verdict per compared observable;
    also the mixed point of a rank-r theory and the aligned-prox points where ``aligned`` has them (``mixed``,
    ``aligned``: the start's branch; ``aligned_mixed``: a rank-r case's aligned-prox mixed point) with the rule
    against each (``mixed_agrees``, ``aligned_agrees``, ``aligned_mixed_agrees``: None where it is no point on the
    branch)."""
    groups: dict[tuple[float, str], list[SimResult]] = {}
    for r in results:
        groups.setdefault((r.alpha, r.init), []).append(r)
    rows = []
    for (alpha, init), rs in sorted(groups.items()):
        row: dict[str, Any] = {"case": case.key, "alpha": alpha, "init": init, "n_runs": len(rs),
                               "n_converged": sum(r.converged for r in rs),
                               "grad_norm_max": max(r.grad_norm for r in rs), "steps_max": max(r.steps for r in rs),
                               "side": ("below" if alpha < mark[0] else "above") if math.isfinite(mark[0]) else "",
                               "theory": theory_point(theory, init, alpha)}
        row.update(seed_means(rs, OBSERVABLES))
        row["agrees"] = _compare(row, row["theory"], COMPARED[init])
        if isinstance(theory, InvariantPoints):
            row["mixed"] = mixed = theory.point(alpha, "mixed")
            row["mixed_agrees"] = _compare(row, mixed if mixed is not None and mixed["exists"] else None,
                                           MIXED_COMPARED)
        if aligned and (alpha, init) in aligned:
            row["aligned"] = pt = aligned[(alpha, init)]
            row["aligned_agrees"] = _compare(row, pt if pt["exists"] else None, COMPARED[init])
        if aligned and isinstance(theory, InvariantPoints) and (alpha, "mixed") in aligned:
            row["aligned_mixed"] = mx = aligned[(alpha, "mixed")]
            row["aligned_mixed_agrees"] = _compare(row, mx if mx["exists"] else None, MIXED_COMPARED)
        row["status"] = ("no theory" if theory is None else
                         "no theory point" if any(v is None for v in row["agrees"].values()) else
                         "GD not converged" if not all_runs_converged(row) else
                         "agrees" if all(row["agrees"].values()) else "disagrees")
        rows.append(row)
    return rows


def _run_specs(specs: list[SimSpec], bar: Any, executor: Any, store: Any, fresh: bool = False) -> list[SimResult]:
    """The runs of ``specs``, in order, as tasks on ``executor`` kept in ``store`` (a rerun reads them back unless
    ``fresh``), each finished one ticking ``bar``; RuntimeError where one failed."""
    from attnphase.execution import ExecutorSpec, run_tasks
    from attnphase.execution.executor import Progress

    from .jobs import simulation_task, simulation_version

    class Ticks(Progress):
        def finished(self, outcome: Any) -> None:
            bar.update(1)

    version = simulation_version()
    outs = run_tasks([simulation_task(s, version) for s in specs], executor=executor or ExecutorSpec(), store=store,
                     fresh=fresh, version=version, progress=Ticks())
    failed = [o for o in outs if not o.ok]
    if failed:
        raise RuntimeError(f"general suite: {len(failed)} simulation(s) failed: {failed[0].reason}")
    return [o.value for o in outs]


def run_general_suite(plan: GeneralPlan, out_dir: str | Path, progress: bool = True,
                      store: Any = None, executor: Any = None, fresh: bool = False) -> dict[str, Any]:
    """Theory and simulations of every case, as tasks of the execution layer on ``executor`` (default: this
    process), kept in ``store`` (default ``out_dir/tasks``: a rerun reads them back unless ``fresh``); returns the
    summary dict."""
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    with_theory = [c for c in plan.cases if not is_rank_case(c.params)]
    ranked = [c for c in plan.cases if is_rank_case(c.params)]
    # the d -> inf fits compare with the theory within its error bar: computed at every grid alpha
    jobs = [(c.params, plan.grid, ("global",), (), replace(plan.theory, error_alphas=tuple(plan.grid)))
            for c in with_theory]
    rcfg = point_config(plan.rank_quadrature)
    rank_jobs = [(c.key, SolveJob(c.params, float(a), b, rcfg)) for c in ranked for a in c.alphas
                 for b in POINT_BRANCHES]
    n_sims = len(plan.cases) * 2 * len(INITS) * len(plan.seeds)
    # the theory on the execution layer (kept in OUT/tasks: a rerun reuses it): one task per rank-1 case,
    # one per (alpha, branch) of a rank-r case
    from attnphase.execution import ExecutorSpec, ResultStore, run_tasks
    from attnphase.execution.progress import TaskBar
    from attnphase.numerics.phase.lowest_branch import teacher_eps_lin

    from .jobs import theory_task, validation_version

    version = validation_version()
    executor = executor or ExecutorSpec()
    store = store if store is not None else ResultStore(out_dir / "tasks")
    tasks = [theory_task(j, version) for j in jobs] + [point_task(j, version) for _, j in rank_jobs]
    cached = 0 if fresh else sum(store.load(t.key) is not None for t in tasks)
    with TaskBar("general-suite theory", unit="task", quiet=not progress) as tbar:
        outs = run_tasks(tasks, executor=executor, store=store, fresh=fresh, version=version,
                         progress=tbar)
    failed = [o for o in outs if not o.ok]
    if failed:
        raise RuntimeError(f"general-suite theory: {len(failed)} task(s) failed: {failed[0].reason}")
    theories: dict[str, Any] = {c.key: o.value for c, o in zip(with_theory, outs)}
    rank_outs = outs[len(jobs):]
    for c in ranked:
        points = {(j.alpha, j.branch): o.value for (key, j), o in zip(rank_jobs, rank_outs) if key == c.key}
        theories[c.key] = InvariantPoints(points, teacher_eps_lin(c.params, rcfg), rcfg.quadrature,
                                     sum(p["seconds"] for p in points.values()))
    marks = {c.key: (math.nan, "none (rank-r: the case's own alphas)") for c in ranked}
    marks |= {c.key: landmark(theories[c.key]) for c in with_theory}
    alphas = {c.key: alphas_around(plan.grid, marks[c.key][0], c.alphas) for c in plan.cases}
    # the aligned-prox state evolution at each (alpha, start) of a rank-1 case: the basin GD keeps
    acfg = aligned_config(plan.theory.tol)
    basin_jobs = [(c.key, SolveJob(c.params, float(a), i, acfg)) for c in with_theory
                  if has_aligned_theory(c.params) and c.params.L <= plan.aligned_max_L for a in alphas[c.key] for i in INITS]
    basin_tasks = [aligned_task(j, version) for _, j in basin_jobs]
    # a rank-r case: the aligned-prox rank-r points at its alphas, every branch of POINT_BRANCHES
    rank_basin = [(c.key, SolveJob(c.params, float(a), b, rcfg.replace(prox="aligned"))) for c in ranked
                  if has_aligned_theory(c.params) for a in c.alphas for b in POINT_BRANCHES]
    basin_jobs += rank_basin
    basin_tasks += [point_task(j, version) for _, j in rank_basin]
    cached += 0 if fresh else sum(store.load(t.key) is not None for t in basin_tasks)
    with TaskBar("general-suite aligned-prox theory", unit="task", quiet=not progress) as tbar:
        basin_outs = run_tasks(basin_tasks, executor=executor, store=store, fresh=fresh,
                               version=version, progress=tbar)
    aligned: dict[str, dict[tuple[float, str], dict[str, Any]]] = {}
    for (key, j), o in zip(basin_jobs, basin_outs):
        if not o.ok:
            raise RuntimeError(f"general-suite aligned-prox theory: a task failed: {o.reason}")
        aligned.setdefault(key, {})[(j.alpha, j.branch)] = o.value
    with tqdm(total=n_sims, desc="simulations", disable=not progress, file=sys.stderr) as bar:
        sim_t0 = time.perf_counter()
        specs = {c.key: [plan.spec(c, a, i, s) for a in alphas[c.key] for i in INITS for s in plan.seeds]
                 for c in plan.cases}
        done = iter(_run_specs([s for c in plan.cases for s in specs[c.key]], bar, executor, store, fresh))
        results = {c.key: [next(done) for _ in specs[c.key]] for c in plan.cases}  # one batch keeps the workers busy
        cases = []
        for c in plan.cases:
            th = theories.get(c.key)
            rows = case_rows(c, results[c.key], th, marks[c.key], aligned.get(c.key))
            for row in (r for r in rows if disagrees(r) and plan.trend_ds):
                row["trend"] = finite_size_trend(plan, c, row, results[c.key], bar, executor, store, fresh)
                row["extrapolations"] = trend_extrapolations(row)
            cases.append({
                "key": c.key, "title": c.title, "params": c.params.to_dict(), "alphas_note": c.alphas_note,
                "theory_kind": "rank-r" if is_rank_case(c.params) else "rank-1",
                "landmark": marks[c.key][0], "landmark_kind": marks[c.key][1], "alphas": list(alphas[c.key]),
                "theory": th.to_dict() if th is not None else None, "rows": rows,
            })
        sim_seconds = time.perf_counter() - sim_t0
    runs = [r for c in plan.cases for r in results[c.key]]
    return {
        "suite": "general", "plan": plan.to_dict(), "cases": cases,
        "wall_seconds": time.perf_counter() - t0, "simulation_seconds": sim_seconds,
        "theory_seconds": sum(t.seconds for t in theories.values())
        + sum(p["seconds"] for pts in aligned.values() for p in pts.values()),
        "theory_jobs_cached": cached, "workers": executor.workers,
        "n_simulations": len(runs) + sum(t["n"] for c in cases for row in c["rows"] for t in row.get("trend") or ()
                                         if t["d"] != plan.d),
        "all_converged": all(r.converged for r in runs),
        "runs": [{"case": c.key, **r.to_dict()} for c in plan.cases for r in results[c.key]],
    }


def disagrees(row: dict[str, Any]) -> bool:
    """The row disagrees with the point of its start's branch, or (rank r) with the mixed point."""
    return row["status"] == "disagrees" or False in (row.get("mixed_agrees") or {}).values()


def finite_size_trend(plan: GeneralPlan, case: SuiteCase, row: dict[str, Any], runs: list[SimResult],
                      bar: Any, executor: Any = None, store: Any = None, fresh: bool = False
                      ) -> list[dict[str, Any]]:
    """The compared observables of a disagreeing row (:func:`disagrees`; with the mixed point's at rank r) at
    ``plan.trend_ds`` and at ``plan.d`` (same seeds, same alpha and start): ``[{d, <obs>_mean, <obs>_std, n}]``
    by increasing d -- does the gap close with d?"""
    bar.total = (bar.total or 0) + len(plan.trend_ds) * len(plan.seeds)
    out = []
    for d in (*plan.trend_ds, plan.d):
        rs = [r for r in runs if r.alpha == row["alpha"] and r.init == row["init"]] if d == plan.d else \
            _run_specs([plan.spec(case, row["alpha"], row["init"], s, d=d) for s in plan.seeds], bar, executor, store,
                       fresh)
        compared = dict.fromkeys(COMPARED[row["init"]] + (MIXED_COMPARED if "mixed_agrees" in row else ()))
        out.append({"d": d, "n": len(rs), "converged": all(r.converged for r in rs), **seed_means(rs, compared)})
    return out


def run_general_validation(plan: GeneralPlan, out_dir: str | Path, progress: bool = True,
                           store: Any = None, executor: Any = None, fresh: bool = False,
                           command: str = "") -> dict[str, Any]:
    """Run the suite (:func:`run_general_suite`, its tasks on ``executor``, kept in ``store``, default
    ``out_dir/tasks``, every one computed again with ``fresh``) and write ``report.md``, ``summary.json`` (with
    ``command``, the command line that made it) and ``general_suite.png`` into ``out_dir``."""
    from .general_report import write_general_report

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = run_general_suite(plan, out, progress=progress, store=store, executor=executor, fresh=fresh)
    summary["command"] = command
    write_general_report(summary, out)
    return summary
