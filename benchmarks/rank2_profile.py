"""Where the rank-2 phase diagram's time goes, by counts: every solve of the census-driven search
(:func:`~attnphase.numerics.phase.lowest_branch.lowest_branch_boundaries`) tallied by phase (census search, census
polish, follow, ends, changes, alpha_l, block re-solves), by requested label and by alpha, with its SE-map evaluations
(``status.iterations``) and its CPU seconds; the census points found at each alpha censused; the rule's nodes.

Counts do not depend on the machine's load; CPU seconds do (a shared machine: compare counts, or interleave).

    nice -n 10 .venv/bin/python benchmarks/rank2_profile.py --omega 0.1 --quadrature sobol8:4 [--json FILE [--trace]]

Compare two runs with benchmarks/rank2_compare.py; try stall windows on a traced run with
benchmarks/rank2_stall_windows.py.
"""

from __future__ import annotations

import argparse
import collections
import json
import time


def traced_runs() -> tuple[list[dict], tuple]:
    """Every :class:`~attnphase.numerics.se.fixed_point.FixedPointSolver` run from now on, appended to the list
    returned: its unknowns, whether it converged, its evaluations and the best exact residual after each evaluation
    (inf before the first exact one); and what restores the solver."""
    import math

    from attnphase.numerics.se import fixed_point

    runs: list[dict] = []
    saved = (fixed_point.FixedPointSolver._eval, fixed_point.FixedPointSolver.solve)

    def _eval(self, x, exact=False):
        ev = saved[0](self, x, exact)
        best = self.__dict__.setdefault("best_trace", [])
        best.append(self.best.residual if self.best is not None else math.inf)
        return ev

    def solve(self, x, warm=False):
        res = saved[1](self, x, warm)
        runs.append({"unknowns": len(x), "converged": bool(res.converged), "evaluations": res.evaluations,
                     "best": getattr(self, "best_trace", [])})
        return res

    fixed_point.FixedPointSolver._eval, fixed_point.FixedPointSolver.solve = _eval, solve
    return runs, saved


def profile(omega: float, quadrature: str, alphas: str = "0.1:3:12", r_star: int = 1, trace: bool = False) -> dict:
    import attnphase.numerics.phase.census as census_mod
    import attnphase.numerics.phase.census_continuation as cc
    import attnphase.numerics.phase.census_starts as cs
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se import fixed_point
    from attnphase.numerics.phase.lowest_branch import lowest_branch_boundaries
    from attnphase.numerics.grids import even_grid
    from attnphase.numerics.quadrature.rules import rule_nodes
    from attnphase.theory import ModelParams

    start, stop, num = alphas.split(":")
    grid = even_grid(start, stop, int(num))  # the command's grid, float for float (the search is sensitive to it)
    params = ModelParams(omega=omega, r=2, r_star=r_star)
    cfg = SolverConfig(quadrature=quadrature)
    rows: list[dict] = []
    state = {"cont": None}
    runs, solver = traced_runs() if trace else (None, None)

    def wrap(fn, where):
        def wrapped(*a, **k):
            c0 = time.process_time()
            fp = fn(*a, **k)
            cont = state["cont"]
            phase = where if where != "continuation" else (cont.phase if cont is not None else "?")
            rows.append({"phase": phase, "label": str(a[2] if len(a) > 2 else k.get("branch", "")),
                         "alpha": float(a[1]), "evaluations": int(fp.status.iterations),
                         "converged": bool(fp.status.converged), "cpu": time.process_time() - c0})
            if runs is not None:  # the solver runs of this solve (and of the block re-solves before it)
                rows[-1]["runs"] = runs[:]
                runs.clear()
            return fp
        return wrapped

    Continuation = cc.Continuation
    init = Continuation.__init__

    def init_and_keep(self, *a, **k):
        init(self, *a, **k)
        state["cont"] = self

    saved = (cc.solve, cs.solve, census_mod.solve, Continuation.__init__)
    cc.solve, cs.solve, census_mod.solve = (wrap(cc.solve, "continuation"), wrap(cs.solve, "census search"),
                                            wrap(census_mod.solve, "census polish"))
    Continuation.__init__ = init_and_keep
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        b = lowest_branch_boundaries(params, grid, cfg)
    finally:
        cc.solve, cs.solve, census_mod.solve, Continuation.__init__ = saved
        if solver is not None:
            fixed_point.FixedPointSolver._eval, fixed_point.FixedPointSolver.solve = solver
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    cont = state["cont"]
    by_phase: dict = collections.defaultdict(lambda: [0, 0, 0.0, 0])
    by_label: dict = collections.defaultdict(lambda: [0, 0, 0.0])
    for r in rows:
        p = by_phase[r["phase"]]
        p[0] += 1
        p[1] += r["evaluations"]
        p[2] += r["cpu"]
        p[3] += not r["converged"]
        lab = by_label[(r["phase"], r["label"])]
        lab[0] += 1
        lab[1] += r["evaluations"]
        lab[2] += r["cpu"]
    census_alphas = sorted({r["alpha"] for r in rows if r["phase"] == "census search"})
    out = {"omega": omega, "quadrature": quadrature, "nodes": rule_nodes(2, quadrature), "alphas": alphas,
           "cpu": cpu, "wall": wall, "alpha_c": b.alpha_c, "alpha_c_err": b.alpha_c_err,
           "alpha_c_from": b.alpha_c_from, "alpha_c_to": b.alpha_c_to, "alpha_l": b.alpha_l,
           "work": cont.count, "seconds": cont.seconds,
           "by_phase": {k: {"solves": v[0], "evaluations": v[1], "cpu": v[2], "not_converged": v[3]}
                        for k, v in by_phase.items()},
           "by_label": {f"{k[0]} / {k[1]}": {"solves": v[0], "evaluations": v[1], "cpu": v[2]}
                        for k, v in by_label.items()},
           "alpha_c_method": b.alpha_c_method, "alpha_l_err": b.alpha_l_err, "alpha_l_branch": b.alpha_l_branch,
           "ends": [{"branch": e.branch, "alpha": e.alpha, "err": e.err, "exists": e.exists, "kind": e.kind}
                    for e in b.ends],
           "notes": list(b.notes),
           "census_alphas": census_alphas,
           "branches": {br.name: sorted(br.points) for br in cont.branches},
           "solves": rows}
    print(f"omega {omega} on {quadrature} ({out['nodes']} nodes): {cpu:.0f} CPU s, {wall:.0f} s wall; alpha_c "
          f"{b.alpha_c:.4g} +- {b.alpha_c_err:.2g} ({b.alpha_c_from} -> {b.alpha_c_to}), alpha_l {b.alpha_l:.4g}")
    print("phase             solves  evaluations  not conv.  CPU s   CPU s / evaluation")
    for k, v in out["by_phase"].items():
        print(f"{k:17s} {v['solves']:6d} {v['evaluations']:12d} {v['not_converged']:10d} {v['cpu']:7.1f}  "
              f"{v['cpu'] / max(v['evaluations'], 1):.4f}")
    print("phase / label: solves, evaluations, CPU s")
    for k, v in out["by_label"].items():
        print(f"  {k:32s} {v['solves']:5d} {v['evaluations']:7d} {v['cpu']:7.1f}")
    print("censuses at alpha:", ", ".join(f"{a:.4g}" for a in census_alphas))
    print("branches:", "; ".join(f"{n} on {len(p)} grid/off-grid points" for n, p in out["branches"].items()))
    print("work:", cont.count, {k: round(v, 1) for k, v in cont.seconds.items()})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omega", type=float, default=0.1)
    ap.add_argument("--quadrature", default="sobol8:4")
    ap.add_argument("--alphas", default="0.1:3:12")
    ap.add_argument("--teacher-rank", type=int, default=1)
    ap.add_argument("--json", default=None, help="write every solve's row and the tallies here")
    ap.add_argument("--trace", action="store_true", help="with each row, its solver runs' best residual after each "
                    "evaluation (benchmarks/rank2_stall_windows.py reads them)")
    a = ap.parse_args()
    out = profile(a.omega, a.quadrature, a.alphas, a.teacher_rank, a.trace)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=float)


if __name__ == "__main__":
    main()
