"""The rank-2 semantic branches at small alpha (r = 2, r* = 1, omega = 0.3; docs/general.md, holes): where does
a semantic fixed point exist at alpha = 0.5, and why does `solve --rank 2 --alpha 0.5 --branch semantic` not
find it?

Follows the semantic branch down in alpha, warm from step to step, from `solve`'s start at the top alpha
(``--start embedded``, the default: the rank-1 semantic point embedded where it exists, alpha >= 0.72; below, the
matrix cold start q0 = rho0, th0 = 0.8 rho0 taken as a warm start; or ``--start cold``).  At omega = 0.3 the
embedded start at 0.78125 reaches one semantic branch (sv th0 falling as sqrt(alpha - alpha_end)), the one at
0.7 another, which goes on below 0.5.  One line per alpha: converged, residual, the singular value of th0, the
eigenvalues of q0, e_t; and where the branch is lost, the agnostic point there (warm from the projection) for
comparison.  Last, the fit of
sv th0^2 linear in alpha over the converged points below ``--fit-below``: its root is the end of a branch born
from the theta = 0 subspace (sv th0 ~ sqrt(alpha - alpha_end)).  ``--blocks``: the last converged point re-solved
on each scrambling block of the rule (:func:`~attnphase.numerics.errors.replicates.replicate_points`), to tell a
fixed point of the model (reproduced by the blocks) from one of the rule's jumps.

    .venv/bin/python studies/rank2_semantic_branches.py --top 0.78125 --bottom 0.5 --ratio 1.04
    .venv/bin/python studies/rank2_semantic_branches.py --alphas 0.7 0.65 0.6 0.56 0.53 0.51 0.5 0.48 0.46
    .venv/bin/python studies/rank2_semantic_branches.py --alphas 0.7 0.65 0.6 0.56 0.53 0.51 0.5 --blocks

(each about 1 to 2 minutes on 2 busy cores at the default rule sobol10:4.)
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("ATTNPHASE_QUIET", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=float, default=0.78125)
    ap.add_argument("--bottom", type=float, default=0.5)
    ap.add_argument("--ratio", type=float, default=1.04, help="alpha_k / alpha_{k+1} of the steps down")
    ap.add_argument("--alphas", nargs="*", type=float, help="the alphas, top first (instead of --top/--bottom/--ratio)")
    ap.add_argument("--start", choices=("embedded", "cold"), default="embedded")
    ap.add_argument("--teacher-rank", type=int, default=1)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--quadrature", default="sobol10:4")
    ap.add_argument("--fit-below", type=float, default=0.6)
    ap.add_argument("--blocks", action="store_true", help="re-solve the last converged point on each block of the rule")
    args = ap.parse_args()

    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.overlaps import on_branch_subspace
    from attnphase.numerics.se.starts import with_ranks
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory.params import ModelParams

    params = with_ranks(ModelParams(omega=args.omega), 2, args.teacher_rank)
    cfg = SolverConfig(quadrature=args.quadrature, error_bars=False)
    alphas = args.alphas or [args.top]
    while not args.alphas and alphas[-1] / args.ratio > args.bottom:
        alphas.append(alphas[-1] / args.ratio)
    if not args.alphas and alphas[-1] != args.bottom:
        alphas.append(args.bottom)
    prev, fit = None, []
    for a in alphas:
        t = time.time()
        if prev is None:
            fp = solve(params, a, "semantic", config=cfg, start=args.start)
        else:
            fp = solve(params, a, "semantic", config=cfg, init=prev.overlaps, memory=prev.memory)
        inv = fp.invariants
        sv = inv["th0_singular_values"][0]
        print(f"alpha {a:.5f}  converged {fp.status.converged}  residual {fp.status.residual:.2e}  branch {fp.branch}  "
              f"sv_th0 {sv:.4f}  q0 {np.round(inv['q0_eigenvalues'], 4).tolist()}  e_t {fp.observables.e_t:.7f}  "
              f"({time.time() - t:.0f} s)", flush=True)
        if fp.status.converged and fp.branch == "semantic":
            prev = fp
            if a <= args.fit_below:
                fit.append((a, sv ** 2))
        elif prev is not None:
            ag = solve(params, a, "agnostic", config=cfg, init=on_branch_subspace(prev.overlaps, "agnostic"))
            print(f"  agnostic at {a:.5f}: converged {ag.status.converged}  q0 "
                  f"{np.round(ag.invariants['q0_eigenvalues'], 4).tolist()}  e_t {ag.observables.e_t:.7f}", flush=True)
    if args.blocks and prev is not None:
        from attnphase.numerics.errors.replicates import replicate_points

        reps, _ = replicate_points(prev, SolverConfig(quadrature=args.quadrature), 0)  # error bars on: the blocks
        print(f"alpha {prev.alpha:.5f} on the rule's {len(reps)} blocks: " + "; ".join(
            "not on the branch" if r is None else f"sv_th0 {r.invariants['th0_singular_values'][0]:.4f}" for r in reps))
    if len(fit) >= 2:
        x, y = np.array(fit).T
        slope, icpt = np.polyfit(x, y, 1)
        print(f"sv_th0^2 linear in alpha over {len(fit)} converged points <= {args.fit_below}: slope {slope:.4f}, "
              f"root (the branch's end) alpha = {-icpt / slope:.4f}")


if __name__ == "__main__":
    main()
