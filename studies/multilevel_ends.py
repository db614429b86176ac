"""Would a finer rule for the agnostic fixed point shrink the branch ends' error?  (the ends' accuracy frontier)

    python studies/multilevel_ends.py                          # omega = 0.1 (positional end), 0.4 (semantic end)
    python studies/multilevel_ends.py --fine sobol12:4,sobol13:4,sobol14:4

A branch end is the root of e(alpha) = 1, e the agnostic branch's eigenvalue (lambda in theta, mu in m) on the
bifurcation rule (``SolverConfig.bifurcation_quadrature``) at the agnostic fixed point solved on the solve
rule (``SolverConfig.quadrature``).  docs/method.md (section 7, error bars and precision tiers) finds the end's standard error dominated by that
fixed point's own quadrature error.  This script locates each end as ``phase-diagram`` does
(:func:`attnphase.numerics.phase.bifurcation.branch_bifurcation`, default configuration), then, at the secant's last
point a, re-solves the agnostic fixed point on a finer rule (warm, a multilevel step) and takes one more
linearised step, end = a - (e_fine(a) - 1) / slope, the eigenvalue on the same bifurcation rule; its standard
error from the finer rule's blocks (:func:`attnphase.numerics.phase.bifurcation.bifurcation_error` with the finer
rule as the solve rule).  Printed per end and rule: the end, its standard error, the added CPU seconds.
"""

from __future__ import annotations

import argparse
import os
import time

from attnphase.numerics.phase.bifurcation import bifurcation_error, branch_bifurcation
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import make_rule
from attnphase.numerics.se.stability import DIRECTIONS, node_solves
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams

#: (omega, direction, first guess): the default phase diagram's ends with the largest error bars
CASES = ((0.1, "m", 1.29), (0.4, "theta", 0.88))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fine", default="sobol12:4,sobol13:4,sobol14:4", help="finer solve rules, comma-separated")
    args = ap.parse_args()
    cfg = SolverConfig()
    print(f"load average {os.getloadavg()[0]:.2f}; solve rule {cfg.quadrature}, bifurcation rule "
          f"{cfg.bifurcation_quadrature}; CPU seconds")
    for omega, direction, guess in CASES:
        params = ModelParams(omega=omega)
        t = time.process_time()
        bif = branch_bifurcation(params, guess, direction, config=cfg)
        t_bif = time.process_time() - t
        a = bif.points[-1][0]
        coarse = solve(params, a, "agnostic", config=cfg)
        print(f"omega {omega}, {direction}: end {bif.alpha:.5f} +- {bif.err:.2e} ({t_bif:.1f} s, "
              f"{len(bif.points)} secant points, slope {bif.slope:+.3f}); last point a = {a:.5f}")
        eigenvalue, _ = DIRECTIONS[direction]
        rule = make_rule(params.L, cfg.bifurcation_quadrature)
        for spec in args.fine.split(","):
            fine_cfg = cfg.replace(quadrature=spec)
            t = time.process_time()
            fp = solve(params, a, "agnostic", init=coarse.overlaps, config=fine_cfg)
            t_solve = time.process_time() - t
            solves = node_solves(params, fp.overlaps, rule, cfg)
            e_fine = eigenvalue(params, a, fp.overlaps, rule, cfg, solves=solves)[0]
            end = a - (e_fine - 1.0) / bif.slope
            t_e = time.process_time() - t - t_solve
            err = bifurcation_error(params, fp, direction, bif.slope, fine_cfg, solves.minima)
            t_err = time.process_time() - t - t_solve - t_e
            print(f"  agnostic on {spec:10s}: end {end:.5f} +- {err:.2e}   (converged {fp.status.converged}; "
                  f"re-solve {t_solve:.2f} s, eigenvalue {t_e:.2f} s, error bar {t_err:.2f} s; "
                  f"q0 {coarse.overlaps.q0:.5f} -> {fp.overlaps.q0:.5f}, V0 {coarse.overlaps.V0:.3f} -> {fp.overlaps.V0:.3f})")


if __name__ == "__main__":
    main()
