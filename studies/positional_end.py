"""alpha(|m|) along the positional branch near its end: how sharply the state evolution locates it.

    python studies/positional_end.py                                   # omega = 0.15, sobol12
    python studies/positional_end.py --omega 0.1 --quadrature sobol14  # 4x the points, ~4x the time

The positional branch is followed by continuation in alpha up to ``--start`` (steps of 0.05
from alpha = 0.1; as far as it converges), then at fixed |m|
(`attnphase.numerics.se.fixed_order_solve.solve_at_order`) for |m| from |m(start)| - ``--m-step`` down to
``--m-min``, each point warm-started from the last accepted one (converged, and not more than 0.1
lower in alpha: below the maximum of |m| every size is reached twice, the other time near the
branch's birth at small alpha). One line per |m|: the alpha that solves
the prior's m equation, q0, V0, e_t and the solver status. Where alpha(|m|) is flat the
branch's end is only as sharp as the spread of these alphas (docs/method.md, section 5, branches and boundaries).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnphase.numerics.phase.continuation import sweep
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.fixed_order_solve import solve_at_order
from attnphase.theory.params import ModelParams


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--omega", type=float, default=0.15)
    ap.add_argument("--quadrature", default="sobol12")
    ap.add_argument("--start", type=float, default=1.35, help="last alpha followed at fixed alpha")
    ap.add_argument("--m-min", type=float, default=0.05)
    ap.add_argument("--m-step", type=float, default=0.01)
    args = ap.parse_args()

    params = ModelParams(omega=args.omega)
    cfg = SolverConfig(max_iter=60, quadrature=args.quadrature)
    grid = [a for a in np.arange(0.1, args.start, 0.05)] + [args.start]
    t0 = time.perf_counter()
    sw = sweep(params, grid, "positional", config=cfg, past_end=False)
    cur = sw.on_branch()[-1]
    print(f"omega = {args.omega}, {args.quadrature}: positional branch followed to alpha = {cur.alpha:.4f}, "
          f"|m| = {np.linalg.norm(cur.overlaps.m):.4f} ({time.perf_counter() - t0:.1f} s)")
    print(f"{'|m|':>7} {'alpha':>8} {'q0':>8} {'V0':>8} {'e_t':>12}  converged  evaluations  seconds")
    sizes = np.arange(float(np.linalg.norm(cur.overlaps.m)) - args.m_step, args.m_min - 1e-12, -args.m_step)
    for size in sizes:
        t = time.perf_counter()
        fp = solve_at_order(params, "m", float(size), cur.overlaps, config=cfg, memory=cur.memory)
        ov = fp.overlaps
        print(f"{size:7.3f} {fp.alpha:8.4f} {ov.q0:8.4f} {ov.V0:8.2f} {fp.observables.e_t:12.6e}  "
              f"{fp.status.converged!s:>9}  {fp.status.iterations:11d}  {time.perf_counter() - t:7.2f}")
        if fp.status.converged and fp.alpha > cur.alpha - 0.1:
            cur = fp


if __name__ == "__main__":
    main()
