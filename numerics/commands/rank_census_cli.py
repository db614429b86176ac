"""``attnphase census --rank R --teacher-rank R*`` (r or r* >= 2): every rank-r fixed point found at one
(alpha, omega), ranked by e_t (:mod:`attnphase.numerics.phase.rank_census`, docs/method.md section 12).

``--json`` prints one object: the census's settings, ``starts`` / ``not_converged`` (counts) and
``not_converged_starts`` (each failed start's name, requested branch, residual and solver message: no overlaps),
``global_minimum`` (the branch label of the lowest e_t), ``separation`` (the next point's height in combined error
bars, as at rank 1) and ``separation_paired`` (in the error of the per-block difference), and ``fixed_points``,
lowest e_t first, each with the ``solve --rank --json`` keys, ``err_<key>``, ``starts`` (how many starts reached it),
``start_names``, ``merged`` (the points found that lie within its error bars: label, e_t, starts), and its height
above the minimum (``delta_e_t``, ``err_delta_e_t``, ``separation_paired``,
``separation_combined``).  ``--out DIR`` writes that object to census.json, one row per fixed point to census.csv
and one row per start to census_starts.csv.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import time
from typing import Any

from attnphase import outputs, work

#: census.csv's columns (the invariants' columns are added per rank: q0_eig_1 .., m_norm_1 ..).
HEAD = ("rank_in_e_t", "branch", "e_t", "err_e_t", "delta_e_t", "err_delta_e_t", "separation_paired",
        "separation_combined", "eps_g", "err_eps_g")
TAIL = ("gauge_angle", "residual", "iterations", "starts", "err_replicates")


def cmd_census_rank(args: argparse.Namespace, alpha: float, r: int, r_star: int) -> int:
    """The rank-r census; exit code 0, or 1 when no start converged."""
    from attnphase import solver_options
    from attnphase import options as opt
    from attnphase.numerics.errors.quadrature_error import independent_rules
    from attnphase.numerics.commands.common import model_and_config

    params, cfg = model_and_config(args, opt.single_omega(args, "census"))
    n_rules = independent_rules(cfg, solver_options.error_estimate_from_args(args))
    out_dir = outputs.out_dir_from_args(args) if args.out is not None else None
    opt.announce_defaults(args, params)
    work.begin("taking the rank-r census of fixed points")

    from attnphase.numerics.phase.rank_census import rank_census

    print(f"attnphase: rank census at alpha = {alpha:g}, omega = {params.omega:g}, r = {r}, r* = {r_star} on "
          f"{cfg.quadrature}: embedded, cold and mixture starts, then error bars per distinct point (measured 6-10 min "
          "of CPU at L = 2, r = 2, r* = 1 on sobol10:4, 4-16 min wall on 2 shared cores)", file=sys.stderr, flush=True)

    def said(start: Any, fp: Any) -> None:
        if getattr(args, "quiet", False):
            return
        got = f"{fp.branch}, e_t = {fp.observables.e_t:.8g}" if fp.status.converged else f"not converged (residual {fp.status.residual:.1e})"
        print(f"attnphase: start {start.name}: {got} ({fp.status.iterations} evaluations)", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    res = rank_census(params, alpha, config=cfg, n_rules=n_rules, progress=said)
    seconds = time.perf_counter() - t0
    obj = census_object(res, cfg, n_rules, seconds)
    points = obj["fixed_points"]
    if out_dir is not None:
        _write(out_dir, obj, res)
    if args.json:
        print(json.dumps(outputs.json_value(obj)))
    else:
        print(f"{'branch':>10} {'e_t':>24} {'above min (paired err)':>30} {'eps_g':>9}  invariants (q0 eig; V0 eig; "
              "th0 sv; |m_l|), starts")
        from attnphase.display import with_error

        for p in points:
            e_t = with_error(p["e_t"], p["err_e_t"])
            up = ("minimum" if p is points[0] else f"{with_error(p['delta_e_t'], p['err_delta_e_t'])} "
                  f"({p['separation_paired']:.1f})" if _finite(p["err_delta_e_t"]) else f"{p['delta_e_t']:.2e}")
            inv = "; ".join(" ".join(f"{x:.4g}" for x in p[k]) for k in ("q0_eigenvalues", "V0_eigenvalues",
                                                                          "th0_singular_values", "m_norms"))
            print(f"{p['branch']:>10} {e_t:>24} {up:>30} {p['eps_g']:9.6f}  {inv}, {p['starts']}")
    dropped = f"{obj['not_converged']} of {obj['starts']} starts did not converge; {seconds:.1f} s"
    if not points:
        print(f"attnphase: no fixed point found ({dropped})", file=sys.stderr)
        return 1
    sep, sep_p = obj["separation"], obj["separation_paired"]
    gap = ("the only fixed point" if math.isinf(sep_p) else
           f"the next e_t {sep_p:.1f} paired error bars higher ({sep:.1f} combined)" if _finite(sep_p)
           else "no error bars (--error-estimate 0 or replicates not converged)")
    print(f"attnphase: global minimum: {points[0]['branch']} ({len(points)} distinct fixed points; {gap}; {dropped})",
          file=sys.stderr)
    return 0


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def census_object(res: Any, cfg: Any, n_rules: int, seconds: float) -> dict[str, Any]:
    """The ``--json`` object of the module doc."""
    from attnphase.numerics.commands.point_record import matrix_record
    from attnphase.numerics.se.starts import teacher_rank

    params = res.params
    points = []
    for e in res.entries:
        rec = matrix_record(e.point, e.point.requested) | e.errors
        rec |= {"starts": len(e.starts), "start_names": list(e.starts),
                "merged": [{"branch": b, "e_t": v, "starts": list(n)} for b, v, n in e.merged]} | res.above_minimum(e)
        points.append(rec)
    return {
        "alpha": res.alpha, "omega": params.omega, "rank": params.r, "teacher_rank": teacher_rank(params),
        "params": params.to_dict(), "solver": cfg.as_dict(), "error_estimate": n_rules,
        "starts": len(res.starts), "not_converged": len(res.failures),
        "not_converged_starts": [{"start": n, "requested_branch": next(s.branch for s in res.starts if s.name == n),
                                  "residual": rsd, "message": msg} for n, rsd, msg in res.failures],
        "global_minimum": points[0]["branch"] if points else None,
        "separation": res.separation() if points else math.nan,
        "separation_paired": res.separation_paired() if points else math.nan,
        "seconds": seconds, "fixed_points": points,
    }


def _csv(rows: list[dict], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _write(out_dir: Any, obj: dict, res: Any) -> None:
    """census.json, census.csv (a row per fixed point) and census_starts.csv (a row per start), all or none."""
    params = res.params
    inv = (("q0_eigenvalues", "q0_eig", params.r), ("V0_eigenvalues", "V0_eig", params.r),
           ("th0_singular_values", "th0_sv", min(params.r, obj["teacher_rank"])), ("m_norms", "m_norm", params.L))
    cols = list(HEAD) + [f"{short}_{i + 1}" for _, short, n in inv for i in range(n)] + list(TAIL)
    rows = []
    for k, p in enumerate(obj["fixed_points"]):
        row = {c: p.get(c) for c in HEAD + TAIL} | {"rank_in_e_t": k + 1}
        for key, short, n in inv:
            row |= {f"{short}_{i + 1}": p[key][i] for i in range(n)}
        rows.append(row)
    reached = {name: k + 1 for k, p in enumerate(obj["fixed_points"]) for name in p["start_names"]}
    failed = {f["start"]: f for f in obj["not_converged_starts"]}
    starts = [{"start": s.name, "requested_branch": s.branch, "kind": s.kind,
               "converged": s.name not in failed, "fixed_point": reached.get(s.name, ""),
               "residual": failed[s.name]["residual"] if s.name in failed else "",
               "message": failed[s.name]["message"] if s.name in failed else ""} for s in res.starts]
    with outputs.staged_output(out_dir, job="census", model=params.to_dict() | {"alpha": res.alpha}) as stage:
        outputs.write_text_atomic(stage / "census.json", json.dumps(outputs.json_value(obj), indent=1))
        outputs.write_text_atomic(stage / "census.csv", _csv(rows, cols))
        outputs.write_text_atomic(stage / "census_starts.csv",
                                  _csv(starts, ["start", "requested_branch", "kind", "converged", "fixed_point",
                                                "residual", "message"]))
