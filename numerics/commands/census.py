"""``attnphase census``: every fixed point at one (alpha, omega), for every L, r, r*, ranked by e_t with error bars
(:mod:`attnphase.numerics.phase.census`, docs/method.md section 12; the outputs: docs/reference/outputs.md).
``phase-diagram --census`` runs :func:`phase_diagram_census`.  Exit code 0, or 1 when no start converged.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from attnphase import options as opt
from attnphase import outputs, solver_options, work, workload
from attnphase.display import finite, values_with_errors, with_error
from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.commands.common import command_line, error_note, point_setup, ranks_from_args
from attnphase.numerics.commands.point_record import exact_zero_rows_note, matrix_record, solve_record

NAME = "census"
HELP = "every fixed point at one (alpha, omega), ranked by e_t: is the global minimum among the branches?"
DESCRIPTION = (
    "Search the state evolution for every fixed point (positional, semantic, agnostic, mixed) from a spread of "
    "starting overlaps at one alpha and omega; remove duplicates (points on one orbit of the model's symmetry "
    "group), label them, test their stability and rank them by the training objective e_t with error bars, lowest "
    "first (docs/method.md section 12, the census). The starts: at r = r* = 1 a grid of overlaps, mixed states "
    "included; with --rank R --teacher-rank R* (r or r* >= 2) each branch's embedded and cold starts and mixtures "
    "of the semantic and positional states, and each point's height above the minimum gets the per-block error of "
    "the difference. Exit code 1 if no start converged.")

#: census.csv's columns at r = r* = 1 (one row per fixed point, lowest e_t first).
CSV_COLUMNS = ("branch", "e_t", "err_e_t", "eps_g", "err_eps_g", "q", "err_q", "m", "err_m", "V", "err_V", "theta",
               "err_theta", "stable", "leading_eigenvalue", "starts")

#: census.csv's columns at r >= 2 or r* >= 2, before and after the invariants' (q0_eig_1 .., m_norm_1 ..) and their
#: bars (err_q0_eig_1 .., NaN without error bars).
MATRIX_HEAD = ("rank_in_e_t", "branch", "e_t", "err_e_t", "delta_e_t", "err_delta_e_t", "separation_paired",
               "separation_combined", "eps_g", "err_eps_g")
MATRIX_TAIL = ("stable", "leading_eigenvalue", "gauge_angle", "residual", "iterations", "starts", "replicates")

#: census_starts.csv's columns (one row per start).
START_COLUMNS = ("start", "requested_branch", "kind", "converged", "fixed_point", "residual", "message")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The census's options: ``--alpha``, the model and solver groups, ``--error-estimate``, ``--out``, ``--json``."""
    p.add_argument("--alpha", required=True, metavar="ALPHA", help="sample complexity alpha = n/d > 0 (one number)")
    opt.add_model_options(p)
    solver_options.add_solver_options(p, "census")
    solver_options.add_error_estimate_option(p, "every fixed point's observables (err_<key>)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"output folder: writes census.json, census.csv, census_starts.csv and census.nc there "
                   f"({outputs.OUT_RULE}; default: none written)")
    outputs.add_json_option(p)


def run(args: argparse.Namespace) -> int:
    """``attnphase census``: exit code 0, or 1 when no start converged."""
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True)
    # r or r* >= 2 without --error-estimate K: the census's own number of rules (CENSUS_RULES), not POINT_RULES
    params, cfg, n_rules = point_setup(args, NAME, independent=not is_scalar_form(*ranks_from_args(args)))
    out_dir = outputs.out_dir_from_args(args) if args.out is not None else None
    work.begin("taking the census of fixed points")
    if not args.quiet:  # an estimate, as every command's: --quiet hides it
        print(_announcement(params, alpha, cfg, n_rules), file=sys.stderr, flush=True)

    from attnphase.numerics.errors.quadrature_error import error_bars_note
    from attnphase.numerics.phase import census as census_mod

    from attnphase.numerics.phase.branch_end import BRANCH_FLOORS, below_floor, overlap_size

    def said(start: Any, fp: Any) -> None:
        got = (f"{fp.branch}, e_t = {fp.observables.e_t:.8g}" if fp.status.converged
               else f"not converged (residual {fp.status.residual:.1e})")
        if below_floor(fp, fp.branch):  # an order parameter at the rule's noise: a point of fewer broken symmetries
            low = ", ".join(f"|{'theta' if k == 'th0' else k}| = {overlap_size(fp, k):.2g}"
                            for k, floor in BRANCH_FLOORS[fp.branch]
                            if overlap_size(fp, k) < floor)
            got += f" ({low}, below the branch's floor: the {census_mod.floor_label(fp)} point at the rule's resolution)"
        at = max(fp.status.message.find("from V0 x"), fp.status.message.find("from q0 x"))
        if at >= 0:  # its first step left the admissible region: retried
            got += f", {fp.status.message[at:]}"
        print(f"attnphase: start {start.name}: {got} ({fp.status.iterations} evaluations)", file=sys.stderr, flush=True)

    res = census_mod.census(params, alpha, config=cfg, n_rules=n_rules,
                            progress=None if getattr(args, "quiet", False) else said)
    obj = census_object(res, cfg, n_rules)
    if other := merged_note(obj["fixed_points"]):  # a point of another label folded in: said, not only in the JSON
        print(f"attnphase: note: {other}", file=sys.stderr)
    # no bars asked for; or a bar of 0, never silent (as solve's and sweep's error_note): the symmetry holding it at 0
    obj |= error_note("; ".join(n for n in (exact_zero_rows_note(obj["fixed_points"]), unreproduced_note(res),
                                            unpaired_note(obj["fixed_points"])) if n)
                      if cfg.error_bars else error_bars_note(cfg, n_rules))
    if out_dir is not None:
        _write(out_dir, obj, res)
    if args.json:
        print(json.dumps(outputs.json_value(obj)))
    else:
        _print_table(obj["fixed_points"], "rank" not in obj)
    return _summary(obj, cfg)


def merged_note(points: list[dict]) -> str:
    """The points of another label merged into a listed one, each with why (within its error bars, its blocks landing
    on the other point, or the rule's noise beside it): "" where none was (census --alpha 0.72 --omega 0.3 folded a
    semantic point of theta 0.024 into the agnostic one and said so nowhere)."""
    said = [f"a {m['branch']} point (e_t {m['e_t']:.8g}, {len(m['starts'])} start{'' if len(m['starts']) == 1 else 's'}"
            f") into the {p['branch']} one ({m['reason']})" for p in points for m in p["merged"]
            if m["branch"] != p["branch"]]
    return "merged as one fixed point, by the rules of docs/method.md section 12: " + "; ".join(said) if said else ""


def _announcement(params: Any, alpha: float, cfg: Any, n_rules: int) -> str:
    """What the census is about to do, and about how long it takes."""
    from attnphase.execution.executor import usable_cores
    from attnphase.numerics.phase.census_starts import grid_starts
    from attnphase.theory.whitening import se_params

    head = f"attnphase: census at alpha = {alpha:g}, omega = {params.omega:g}"
    cores = usable_cores()
    on = f"on {cores} core{'s' if cores != 1 else ''}"
    if is_scalar_form(params.r, params.r_star):
        cpu = workload.census_seconds(params.L, cfg)
        return (f"{head}: {len(grid_starts(se_params(params)))} starts, error bars: {error_bars_text(cfg, n_rules)}; "
                "about "
                f"{workload.format_duration(workload.on_cores(cpu, cores, workload.CENSUS_CORE_USE))} {on} "
                f"({workload.cpu_phrase(cpu)}; {workload.CENSUS_SECONDS:.0f} CPU s measured at the defaults: "
                "a busy or slower machine takes longer)")
    cpu = workload.RANK2_CENSUS_COMMAND_SECONDS * workload.matrix_rule_factor(params.L, cfg)
    return (f"{head}, r = {params.r}, r* = {params.r_star} on {cfg.quadrature}: embedded, cold and mixture starts, "
            f"error bars: {error_bars_text(cfg, n_rules)}; about "
            f"{workload.format_duration(workload.on_cores(cpu, cores, workload.RANK2_CORE_USE))} {on} "
            f"({workload.cpu_phrase(cpu)}; one census measured "
            f"{workload.RANK2_CENSUS_COMMAND_SECONDS:.0f} CPU s at r = 2, r* = 1 on {workload.RANK2_RULE}: a busy or "
            "slower machine takes longer)")


def unreproduced_note(res: Any) -> str:
    """The points listed without error bars, said ("" when every point has them): fewer than two of a point's
    re-solves on the rule's blocks (or the independent rules) stayed on its branch, so its bars are not estimated
    (docs/method.md section 12: a point the blocks do not reproduce)."""
    bare = [e for e in res.entries if e.unreproduced]
    if not bare:
        return ""
    where = "blocks" if bare[0].blocks else "independent rules"
    said = ", ".join(f"{e.point.branch} (e_t {e.point.observables.e_t:.7g}: {e.reproduced} of {len(e.replicates)})"
                     for e in bare)
    return (f"no err_ on {said}: fewer than two of the point's re-solves on the rule's {where} stayed on its branch, "
            "so its error bars are not estimated (a point the rule's jumps displace, or a re-solve that does not "
            "converge there)")


def unpaired_note(points: list[dict]) -> str:
    """The points above the global minimum whose height above it has no paired error (``err_delta_e_t`` and
    ``separation_paired`` null: fewer than two of the rule's blocks re-solve both on their branches), said ("" when
    every one has it, or the rows carry no height: r = r* = 1)."""
    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    bare = [p for p in points[1:] if "err_delta_e_t" in p and missing(p["err_delta_e_t"])]
    if not bare:
        return ""
    said = ", ".join(f"{p['branch']} (e_t {p['e_t']:.7g}: {p.get('delta_pairs', 0)} pair)" for p in bare)
    return (f"err_delta_e_t and separation_paired null on {said}: its height above the global minimum needs the two "
            "points re-solved on at least two common blocks of the rule (separation_combined uses their own bars)")


def error_bars_text(cfg: Any, n_rules: int) -> str:
    """What the census's ``err_`` keys are (the JSON's and the dataset's ``error_bars``, worded as the phase
    diagram's): "none", or a standard error over the rule's blocks, or a spread over independent rules."""
    from attnphase.numerics.errors.replicates import replicate_count
    from attnphase.numerics.phase.census import CENSUS_RULES

    if not cfg.error_bars:
        return "none"
    R = replicate_count(cfg)
    return f"standard error over {R} scrambling blocks of the rule" if R else \
        f"spread over {n_rules or CENSUS_RULES} independent rules"


def census_object(res: Any, cfg: Any, n_rules: int) -> dict[str, Any]:
    """The ``--json`` object (docs/reference/outputs.md, census)."""
    from attnphase.numerics.phase.census import entry_errors
    from attnphase.numerics.phase.census_separation import DISTINGUISHABLE

    params, search = res.params, res.search
    scalar = is_scalar_form(params.r, params.r_star)
    points = []
    if not scalar:
        from attnphase.numerics.phase.lowest_branch import teacher_eps_lin

        lin = teacher_eps_lin(params, cfg)
    for e in res.entries:
        rec = (solve_record(e.point, e.point.branch)[0] | entry_errors(e) if scalar
               else matrix_record(e.point, e.point.requested, lin) | e.errors)
        rec |= {"stable": e.stable, "leading_eigenvalue": e.leading_eigenvalue, "starts": len(e.starts),
                "merged": [{"branch": m.branch, "e_t": m.e_t, "starts": list(m.starts), "reason": m.reason}
                           for m in e.merged]}
        if not scalar:
            rec |= {"start_names": list(e.starts)} | res.above_minimum(e)
        points.append(rec)
    obj: dict[str, Any] = {
        "alpha": res.alpha, "omega": params.omega, "params": params.to_dict(), "solver": cfg.as_dict(),
        "independent_rules": n_rules, "error_bars": error_bars_text(cfg, n_rules), "search_quadrature": search.rule,
        "starts": len(search.starts),
        "not_converged": search.not_converged, "polish_failures": search.polish_failures,
        "global_minimum": points[0]["branch"] if points else None,
        "separation": res.separation(), "seconds": res.seconds, "fixed_points": points,
    }
    if not scalar:
        requested = {s.name: s.branch for s in search.starts}
        obj |= {"rank": params.r, "teacher_rank": params.r_star,
                "not_converged_starts": [{"start": n, "requested_branch": requested[n], "residual": rsd, "message": msg}
                                         for n, rsd, msg in search.failures],
                "separation_paired": res.separation_paired() if points else math.nan}
    sep = obj.get("separation_paired", math.nan)
    sep = sep if finite(sep) else obj["separation"]
    obj["global_minimum_distinguishable"] = (None if not points or math.isnan(sep) else
                                             bool(sep >= DISTINGUISHABLE))
    return obj


def _stable(point: dict) -> str:
    """The table's stability cell: True / False, ? where the leading eigenvalue is not known."""
    return "?" if point["stable"] is None else str(point["stable"])


def _print_table(points: list[dict], scalar: bool) -> None:
    """The fixed points, lowest e_t first, each value with its error bar (``scalar``: r = r* = 1)."""
    if scalar:
        cols = ("q", "m", "V", "theta", "e_t")
        print(f"{'branch':>10} " + " ".join(f"{k:>22}" for k in cols) + f" {'stable':>6} {'lead':>6} starts")
        for p in points:
            cells = " ".join(f"{with_error(p[k], p.get('err_' + k)):>22}" for k in cols)
            print(f"{p['branch']:>10} {cells} {_stable(p):>6} {p['leading_eigenvalue']:6.3f} {p['starts']}")
        return
    print(f"{'branch':>10} {'e_t':>24} {'above min (paired err)':>30} {'eps_g':>22} {'stable':>6} {'lead':>6}  "
          "invariants (q0 eig; V0 eig; th0 sv; |m_l|), starts")
    for p in points:
        up = ("minimum" if p is points[0] else f"{with_error(p['delta_e_t'], p['err_delta_e_t'])} "
              f"({p['separation_paired']:.1f})" if finite(p["err_delta_e_t"]) else f"{p['delta_e_t']:.2e}")
        inv = "; ".join(" ".join(values_with_errors(p[k], p.get(f"err_{k}"))) for k in ("q0_eigenvalues", "V0_eigenvalues",
                                                                                "th0_singular_values", "m_norms"))
        print(f"{p['branch']:>10} {with_error(p['e_t'], p.get('err_e_t')):>24} {up:>30} "
              f"{with_error(p['eps_g'], p.get('err_eps_g')):>22} {_stable(p):>6} {p['leading_eigenvalue']:6.3f}  "
              f"{inv}, {p['starts']}")


def _summary(obj: dict, cfg: Any) -> int:
    """The last line on stderr (the global minimum, or that there is none) and the exit code."""
    lost = obj["polish_failures"]
    again = "on it again with the full budget" if obj["search_quadrature"] == cfg.quadrature else f"on {cfg.quadrature}"
    dropped = (f"{obj['not_converged']} of {obj['starts']} starts did not converge on {obj['search_quadrature']}, "
               f"{lost} point{'' if lost == 1 else 's'} found there not converging {again} (dropped); "
               f"{obj['seconds']:.1f} s")
    points = obj["fixed_points"]
    if not points:
        print(f"attnphase: no fixed point found ({dropped})", file=sys.stderr)
        return 1
    sep, sep_p = obj["separation"], obj.get("separation_paired")
    if math.isinf(sep):
        gap = "the only fixed point"
    elif finite(sep_p):
        gap = f"the next e_t {sep_p:.1f} paired error bars higher ({sep:.1f} combined)"
    elif math.isfinite(sep):
        gap = f"the next e_t {sep:.1f} error bars higher"
    else:
        gap = "no error bars (--error-estimate 0, or replicates not converged)"
    if obj["global_minimum_distinguishable"] is False:
        from attnphase.numerics.phase.census_separation import DISTINGUISHABLE

        print(f"attnphase: global minimum: not resolved at this rule: {points[0]['branch']} or {points[1]['branch']} "
              f"({gap}, below {DISTINGUISHABLE:g}; a finer --quadrature may separate them; {len(points)} distinct "
              f"fixed points; {dropped})", file=sys.stderr)
        return 0
    print(f"attnphase: global minimum: {points[0]['branch']} ({len(points)} distinct fixed points; {gap}; {dropped})",
          file=sys.stderr)
    return 0


def _invariant_bars(point: dict) -> dict:
    """The point's invariants' bars as census.csv's columns (err_q0_eig_1 ..), those it has (a list each)."""
    from attnphase.numerics.jobs.variables import INVARIANT_COLUMNS, flat_invariants

    have = {f"err_{key}": point[f"err_{key}"] for key, _ in INVARIANT_COLUMNS
            if isinstance(point.get(f"err_{key}"), list)}
    return flat_invariants(have, "err_") if len(have) == len(INVARIANT_COLUMNS) else {}


def _write(out_dir: Any, obj: dict, res: Any) -> None:
    """census.json, census.csv, census_starts.csv and census.nc, all or none."""
    from attnphase.execution.dataset import csv_text, job_attrs, write_netcdf
    from attnphase.numerics.jobs.dataset import census_dataset
    from attnphase.numerics.jobs.tasks import numerics_version
    from attnphase.numerics.jobs.variables import flat_invariants, invariant_columns

    params, points = res.params, obj["fixed_points"]
    if is_scalar_form(params.r, params.r_star):
        cols, rows = list(CSV_COLUMNS), points
    else:
        invariants = invariant_columns(params.r, obj["teacher_rank"], params.L)
        bars = tuple(f"err_{c}" for c in invariants)
        cols = list(MATRIX_HEAD + invariants + bars + MATRIX_TAIL)
        rows = [{c: p.get(c) for c in MATRIX_HEAD + MATRIX_TAIL} | {"rank_in_e_t": k + 1} | flat_invariants(p)
                | dict.fromkeys(bars, math.nan) | _invariant_bars(p)
                for k, p in enumerate(points)]
    reached = {name: k + 1 for k, e in enumerate(res.entries) for name in e.starts}
    failed = {name: (rsd, msg) for name, rsd, msg in res.search.failures}
    dropped = dict(res.search.dropped)  # a start whose point the polish lost says so
    starts = [{"start": s.name, "requested_branch": s.branch, "kind": s.kind, "converged": s.name not in failed,
               "fixed_point": reached.get(s.name, ""), "residual": failed[s.name][0] if s.name in failed else "",
               "message": failed[s.name][1] if s.name in failed else dropped.get(s.name, "")}
              for s in res.search.starts]
    with outputs.staged_output(out_dir, job="census", model=params.to_dict() | {"alpha": res.alpha}) as stage:
        outputs.write_text_atomic(stage / "census.json", json.dumps(outputs.json_value(obj), indent=1))
        outputs.write_text_atomic(stage / "census.csv", csv_text(rows, cols))
        outputs.write_text_atomic(stage / "census_starts.csv", csv_text(starts, START_COLUMNS))
        attrs = job_attrs("census", version=numerics_version(), model=params.to_dict(), solver=obj["solver"],
                          rule=obj["solver"].get("quadrature", ""), command=command_line(), alpha=res.alpha,
                          independent_rules=obj["independent_rules"], error_bars=obj["error_bars"],
                          search_quadrature=obj["search_quadrature"],
                          **({"error_note": obj["error_note"]} if obj.get("error_note") else {}),  # the JSON's, too
                          title=f"Fixed points of the state evolution at alpha = {res.alpha:g}, omega = {params.omega:g}")
        write_netcdf(census_dataset(rows, cols, starts, START_COLUMNS, attrs), stage / "census.nc")


def phase_diagram_census(params: Any, rows: list[dict], cfg: Any, n_rules: int, out: Any, *, executor: Any,
                         store: Any, fresh: bool, quiet: bool) -> tuple[list[dict], int]:
    """``phase-diagram --census``: the census at each row's alpha_c
    (:func:`attnphase.numerics.phase.census.census_check`; ``n_rules`` rules, else CENSUS_RULES), one stored task per
    omega with an alpha_c, into ``out``/phase_diagram_census.csv, a line per omega printed; returns (the rows, how
    many census tasks failed)."""
    from attnphase.execution import run_tasks
    from attnphase.execution.dataset import csv_text
    from attnphase.execution.progress import TaskBar
    from attnphase.numerics.jobs.tasks import census_task, numerics_version
    from attnphase.numerics.phase.census import CENSUS_COLUMNS, CENSUS_RULES, census_check

    version = numerics_version()
    alpha_cs = [r["alpha_c"] if r["alpha_c"] is not None else math.nan for r in rows]
    todo = [i for i, a in enumerate(alpha_cs) if math.isfinite(a)]
    tasks = [census_task(params.replace(omega=rows[i]["omega"]), alpha_cs[i], cfg, n_rules or CENSUS_RULES, version)
             for i in todo]
    with TaskBar("census", unit="task", quiet=quiet) as bar:
        done = run_tasks(tasks, executor=executor, store=store, fresh=fresh, version=version, progress=bar)
    outcome = dict(zip(todo, done))
    table, failed = [], 0
    for i, r in enumerate(rows):
        row = census_check(params.replace(omega=r["omega"]), math.nan)  # the empty row: no alpha_c, or failed
        o = outcome.get(i)
        if o is None:
            print(f"census at omega = {r['omega']:.3f}: no alpha_c, no census")
        elif not o.ok:
            failed += 1
            print(f"census at omega = {r['omega']:.3f}, alpha_c = {alpha_cs[i]:.4f}: failed ({o.reason})")
        else:
            row = o.value
            verdict = (f"beaten by {row['census_beaten_by']}" if row["census_beaten_by"]
                       else "no other fixed point beats the semantic and positional ones")
            print(f"census at omega = {r['omega']:.3f}, alpha_c = {alpha_cs[i]:.4f}: {row['census_fixed_points']} fixed "
                  f"points, lowest e_t {row['census_global_min'] or 'none'}; {verdict}")
        table.append(row)
    outputs.write_text_atomic(out / "phase_diagram_census.csv", csv_text(table, CENSUS_COLUMNS))
    return table, failed
