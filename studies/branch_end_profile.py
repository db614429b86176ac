"""alpha(order parameter) along a branch near its end: how sharply the state evolution locates it on a rule.

    python studies/branch_end_profile.py                                          # positional, omega = 0.15, sobol12
    python studies/branch_end_profile.py --omega 0.1 --quadrature sobol14         # 4x the points, ~4x the time
    python studies/branch_end_profile.py --branch semantic --omega 0.3 --quadrature sobol10:4 --start 1 \\
        --min 0.02 --step 0.2 --geometric --solve-at 0.74               # the semantic end, default rule

The branch is followed by continuation in alpha towards ``--start``, as far as it converges (positional: up from
alpha = 0.1 in steps of 0.05; semantic: from 1.5 ``--start`` down to it), then at a fixed order parameter (|m|
positional, |theta| semantic; `attnphase.numerics.se.fixed_order_solve.solve_at_order`) from its value there down to
``--min``, in steps of ``--step`` (with ``--geometric`` relative ones: the size times 1 - step), each point
warm-started from the last accepted one (converged on the branch, and not more than 0.1 past it in alpha the wrong
way: below the maximum of |m| every size is reached twice, the other time near the positional branch's birth at
small alpha). One line per size: the alpha that solves the prior's equation for the order parameter, q0, V0, e_t and
the solver status. Where alpha(order) is flat or not monotone the branch's end is only as sharp as the spread of
these alphas (docs/method.md, sections 5 and 9). ``--solve-at A``: at each alpha A, the plain solve (alpha fixed)
warm from each of the three traced points nearest A in alpha, and the order parameter it converges to: several
different ones are several fixed points of the rule at A.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.branch_end import on_branch, overlap_size
from attnphase.numerics.phase.continuation import sweep
from attnphase.numerics.se.fixed_order_solve import solve_at_order
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams

#: The order parameter each branch is traced in, for solve_at_order and overlap_size.
ORDER = {"positional": "m", "semantic": "th0"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--branch", choices=tuple(ORDER), default="positional")
    ap.add_argument("--omega", type=float, default=0.15)
    ap.add_argument("--quadrature", default="sobol12")
    ap.add_argument("--start", type=float, default=1.35, help="the last alpha followed at fixed alpha")
    ap.add_argument("--min", type=float, default=0.05, help="the smallest order parameter traced")
    ap.add_argument("--step", type=float, default=0.01, help="the order parameter's step (relative: --geometric)")
    ap.add_argument("--geometric", action="store_true", help="steps of size x (1 - step) instead of size - step")
    ap.add_argument("--solve-at", default="", help="comma-separated alphas to solve at, warm from the trace")
    args = ap.parse_args()

    params, branch, order = ModelParams(omega=args.omega), args.branch, ORDER[args.branch]
    cfg = SolverConfig(max_iter=60, quadrature=args.quadrature)
    up = branch == "positional"
    grid = list(np.arange(0.1, args.start, 0.05)) + [args.start] if up else [1.5 * args.start, args.start]
    t0 = time.perf_counter()
    followed = sweep(params, grid, branch, config=cfg, past_end=False).on_branch()
    if not followed:
        raise SystemExit(f"the {branch} branch was not found on {args.quadrature} at alpha = {grid}")
    cur = followed[-1] if up else followed[0]  # the point nearest the end
    size = overlap_size(cur, order)
    print(f"omega = {args.omega}, {args.quadrature}: {branch} branch followed to alpha = {cur.alpha:.4f}, "
          f"|{order}| = {size:.4f} ({time.perf_counter() - t0:.1f} s)")
    print(f"{'|' + order + '|':>7} {'alpha':>8} {'q0':>8} {'V0':>8} {'e_t':>12}  converged  evaluations  seconds")
    traced = [cur]
    while True:
        size = size * (1 - args.step) if args.geometric else size - args.step
        if size < args.min - 1e-12:
            break
        t = time.perf_counter()
        # a mirrored semantic point's memory belongs to the mirror state: not reused
        memory = cur.memory if up or cur.overlaps.th0 > 0 else None
        fp = solve_at_order(params, order, float(size), cur.overlaps, config=cfg, memory=memory)
        ov = fp.overlaps
        print(f"{size:7.3f} {fp.alpha:8.4f} {ov.q0:8.4f} {ov.V0:8.2f} {fp.observables.e_t:12.6e}  "
              f"{fp.status.converged!s:>9}  {fp.status.iterations:11d}  {time.perf_counter() - t:7.2f}")
        ahead = fp.alpha - cur.alpha if up else cur.alpha - fp.alpha  # towards the end: > 0
        if fp.status.converged and fp.branch == branch and ahead > -0.1:
            cur = fp
            traced.append(fp)
    for a in (float(x) for x in args.solve_at.split(",") if x):
        found = []
        for near in sorted(traced, key=lambda p: abs(p.alpha - a))[:3]:
            fp = solve(params, a, branch, init=near.overlaps, config=cfg)
            got = f"|{order}| = {overlap_size(fp, order):.4f}" if on_branch(fp, branch) else (
                f"{fp.branch} (|{order}| = {overlap_size(fp, order):.4f})" if fp.status.converged else "not converged")
            found.append(f"from |{order}| = {overlap_size(near, order):.3f} (alpha {near.alpha:.4f}): {got}")
        print(f"alpha = {a:g}: " + "; ".join(found))


if __name__ == "__main__":
    main()
