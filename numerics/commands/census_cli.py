"""What ``attnphase census`` does (numerics layer): every fixed point at one (alpha, omega), ranked by e_t.

:func:`phase_diagram_census` is ``phase-diagram --census`` (one stored census task per omega's alpha_c).
Options are defined in :mod:`attnphase.cli` with the shared groups; every option is checked before
any work.  ``--json`` prints one object whose key ``fixed_points`` is the list of
:mod:`attnphase.numerics.phase.census`, lowest e_t first, each with the ``solve --json`` keys, ``err_<key>``
(the spread over ``--error-estimate K`` rules, default 4; null with K = 0), ``stable``,
``leading_eigenvalue`` and ``starts``; ``--out DIR`` writes it to census.json and a row per fixed point to
census.csv.  With ``--rank R --teacher-rank R*`` (r or r* >= 2): :mod:`attnphase.numerics.commands.rank_census_cli`.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import time

from attnphase import options as opt
from attnphase import outputs, work, workload
from attnphase.numerics.commands.common import point_setup, ranks_from_args


def cmd_census(args: argparse.Namespace) -> int:
    """``attnphase census``: exit code 0, or 1 when no start converged."""
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True)

    r, r_star = ranks_from_args(args)
    if (r, r_star) != (1, 1):
        from attnphase.numerics.commands.rank_census_cli import cmd_census_rank

        return cmd_census_rank(args, alpha, r, r_star)

    params, cfg, n_rules = point_setup(args, "census")
    out_dir = outputs.out_dir_from_args(args) if getattr(args, "out", None) is not None else None

    from attnphase.numerics.phase.census import census, census_starts, entry_errors
    from attnphase.numerics.commands.point_record import solve_record

    work.begin("taking the census of fixed points")
    print(f"attnphase: census at alpha = {alpha:g}, omega = {params.omega:g}: {len(census_starts(params))} starts, "
          f"error bars {_error_source(cfg, n_rules)}, about {workload.format_duration(workload.census_seconds(params.L, cfg))} "
          f"(one process; {workload.CENSUS_SECONDS:.0f} CPU s measured at the defaults: a busy or slower machine "
          f"takes longer)",
          file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    res = census(params, alpha, config=cfg, n_rules=n_rules)
    seconds = time.perf_counter() - t0
    points = []
    for e in res.entries:
        rec, _ = solve_record(e.point, e.point.branch)
        points.append(rec | entry_errors(e) | {"stable": e.stable, "leading_eigenvalue": e.leading_eigenvalue,
                                               "starts": e.starts})
    out = {
        "alpha": alpha, "omega": params.omega, "params": params.to_dict(), "solver": cfg.as_dict(),
        "error_estimate": n_rules, "search_quadrature": res.search.rule, "starts": res.search.starts,
        "not_converged": res.search.not_converged, "polish_failures": res.search.polish_failures,
        "global_minimum": points[0]["branch"] if points else None, "separation": res.separation(),
        "seconds": seconds, "fixed_points": points,
    }
    if not cfg.error_bars:
        from attnphase.numerics.errors.quadrature_error import error_bars_note

        out["error_note"] = error_bars_note(cfg, n_rules)
        print(f"attnphase: note: {out['error_note']}", file=sys.stderr)
    if out_dir is not None:
        _write(out_dir, out, params.to_dict() | {"alpha": alpha})
    if args.json:
        print(json.dumps(outputs.json_value(out)))
    else:
        from attnphase.display import with_error

        cols = ("q", "m", "V", "theta", "e_t")
        print(f"{'branch':>10} " + " ".join(f"{k:>22}" for k in cols) + f" {'stable':>6} {'lead':>6} starts")
        for p in points:
            cells = " ".join(f"{with_error(p[k], p.get('err_' + k)):>22}" for k in cols)
            print(f"{p['branch']:>10} {cells} {str(p['stable']):>6} {p['leading_eigenvalue']:6.3f} {p['starts']}")
    dropped = (f"{res.search.not_converged} of {res.search.starts} starts did not converge on {res.search.rule}, "
               f"{res.search.polish_failures} points found there not on {cfg.quadrature} (dropped); {seconds:.1f} s")
    if not points:
        print(f"attnphase: no fixed point found ({dropped})", file=sys.stderr)
        return 1
    sep = res.separation()
    gap = "the only fixed point" if math.isinf(sep) else \
        f"the next e_t {sep:.1f} error bars higher" if math.isfinite(sep) else "no error bars (--error-estimate 0)"
    print(f"attnphase: global minimum: {points[0]['branch']} ({len(points)} distinct fixed points; {gap}; {dropped})",
          file=sys.stderr)
    return 0


#: census.csv's columns at rank 1 (one row per fixed point, lowest e_t first).
CSV_COLUMNS = ("branch", "e_t", "err_e_t", "eps_g", "err_eps_g", "q", "err_q", "m", "err_m", "V", "err_V", "theta",
               "err_theta", "stable", "leading_eigenvalue", "starts")


def _write(out_dir, out: dict, model: dict) -> None:
    """``--out DIR``: census.json (the --json object) and census.csv (:data:`CSV_COLUMNS`), both or neither."""
    import csv

    buf = io.StringIO()
    wr = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n", extrasaction="ignore")
    wr.writeheader()
    wr.writerows(out["fixed_points"])
    with outputs.staged_output(out_dir, job="census", model=model) as stage:
        outputs.write_text_atomic(stage / "census.json", json.dumps(outputs.json_value(out), indent=1))
        outputs.write_text_atomic(stage / "census.csv", buf.getvalue())


def _error_source(cfg, n_rules: int) -> str:
    from attnphase.numerics.phase.census import CENSUS_RULES
    from attnphase.numerics.errors.replicates import replicate_count

    if not cfg.error_bars:
        return "off"
    R = replicate_count(cfg)
    return f"from the rule's {R} scrambling blocks" if R else f"from {n_rules or CENSUS_RULES} independent rules"


def phase_diagram_census(params, rows: list[dict], cfg, n_rules: int, out, *, executor=None, store=None,
                         fresh: bool = False, quiet: bool = True) -> tuple[list[dict], int]:
    """``phase-diagram --census``: the census at each row's alpha_c
    (:func:`attnphase.numerics.phase.census.census_check`; error bars from ``n_rules`` rules, the census's
    default 4 when 0), one task per omega with an alpha_c (:func:`attnphase.numerics.jobs.tasks.census_task`:
    stored in ``store``, read back on a rerun), into ``out``/census.csv, a line per omega printed;
    returns (the rows, how many census tasks failed)."""
    import csv

    from attnphase.execution import ExecutorSpec, run_tasks
    from attnphase.execution.progress import TaskBar
    from attnphase.numerics.phase.census import CENSUS_RULES, CENSUS_COLUMNS, census_check
    from attnphase.numerics.jobs.tasks import census_task, numerics_version

    version = numerics_version()
    alpha_cs = [r["alpha_c"] if r["alpha_c"] is not None else math.nan for r in rows]
    todo = [i for i, a in enumerate(alpha_cs) if math.isfinite(a)]
    tasks = [census_task(params.replace(omega=rows[i]["omega"]), alpha_cs[i], cfg, n_rules or CENSUS_RULES, version)
             for i in todo]
    with TaskBar("census", unit="task", quiet=quiet) as bar:
        done = run_tasks(tasks, executor=executor or ExecutorSpec(), store=store, fresh=fresh, version=version,
                         progress=bar)
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
    buf = io.StringIO()
    wr = csv.DictWriter(buf, fieldnames=CENSUS_COLUMNS, lineterminator="\n")
    wr.writeheader()
    wr.writerows(table)
    outputs.write_text_atomic(out / "census.csv", buf.getvalue())
    return table, failed
