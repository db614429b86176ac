"""Is there a mixed fixed point (one positional, one semantic direction) for a rank-2 student, and does
it beat the pure ones by e_t?  (docs/general.md.)

For each (r, r*) and alpha: the semantic, positional and mixed branches (embedded starts from the
rank-1 fixed points), each on K independent Sobol rules (warm starts from the first; the same K rules
for every branch), printing one JSON line per (r, r*, alpha, branch): the mean and standard deviation
over the rules of e_t, eps_g and the invariants.

    .venv/bin/python studies/mixed_point_science.py --ranks 2,1 2,2 --alphas 1.0 2.0 --quadrature sobol12 --rules 3
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("ATTNPHASE_QUIET", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", nargs="*", default=["2,1", "2,2"])
    ap.add_argument("--alphas", nargs="*", type=float, default=[2.0])
    ap.add_argument("--branches", nargs="*", default=["semantic", "positional", "mixed"])
    ap.add_argument("--quadrature", default="sobol12")
    ap.add_argument("--rules", type=int, default=3)
    ap.add_argument("--omega", type=float, default=0.3)
    args = ap.parse_args()

    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.starts import with_ranks
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory.params import ModelParams

    cfg = SolverConfig(quadrature=args.quadrature, max_iter=200)
    keys = ("e_t", "eps_g", "q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms", "gauge_angle")
    for rr in args.ranks:
        r, rs = (int(x) for x in rr.split(","))
        params = with_ranks(ModelParams(omega=args.omega), r, rs)
        for alpha in args.alphas:
            for branch in args.branches:
                t0 = time.perf_counter()
                fp = solve(params, alpha, branch, config=cfg)
                recs = [fp.record] if fp.status.converged else []
                for k in range(1, args.rules if fp.status.converged else 0):
                    other = solve(params, alpha, branch, config=cfg.variant(k), init=fp.overlaps)
                    if other.status.converged:
                        recs.append(other.record)
                out = {"r": r, "r_star": rs, "alpha": alpha, "omega": args.omega, "requested": branch,
                       "converged_rules": len(recs), "rules": args.rules, "quadrature": args.quadrature,
                       "seconds": round(time.perf_counter() - t0, 1), "message": fp.status.message}
                if recs:
                    out["branch"] = [x["branch"] for x in recs]
                    out["directions"] = recs[0]["directions"]
                    for key in keys:
                        vals = np.array([np.atleast_1d(np.asarray(x[key], dtype=float)) for x in recs])
                        out[key] = vals.mean(axis=0).tolist()
                        out[f"err_{key}"] = (vals.std(axis=0, ddof=1) / np.sqrt(len(recs))).tolist() if len(recs) > 1 else None
                    out["canonical_overlaps"] = recs[0]["canonical_overlaps"]
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
