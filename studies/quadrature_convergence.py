"""How a fixed point's quadrature error falls with the number of Sobol points, and what 1e-6 would cost.

    python studies/quadrature_convergence.py                  # sobol10..14, 6 seeds, 4 points (~3 min)
    python studies/quadrature_convergence.py --max-log2 16    # adds 2^16 (~10 min more)

At each point (omega = 0.3; alpha = 0.5 and 2, positional and semantic) the fixed point is solved
on ``--seeds`` independent scramblings of 2^k points for each k (warm starts from a sobol12
solution), and the spread (standard deviation over seeds) of q, m or theta, eps_g and e_t is
the quadrature error of one solve.  A least-squares fit std ~ C N^-rate over k gives, for each
quantity, the number of points -- and, at the measured seconds per warm solve and point, the
time -- at which the error would reach 1e-6.  Writes ``--out`` (JSON) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from attnphase.numerics.se.state_evolution import SolverConfig, solve
from attnphase.theory.params import ModelParams

POINTS = (("positional", 0.5), ("semantic", 0.5), ("semantic", 2.0), ("positional", 2.0))
KEYS = ("q", "m", "theta", "eps_g", "e_t")
TARGET = 1e-6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-log2", type=int, default=10)
    ap.add_argument("--max-log2", type=int, default=14)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results_quadrature_convergence.json"))
    args = ap.parse_args()

    params = ModelParams(omega=args.omega)
    ks = list(range(args.min_log2, args.max_log2 + 1, 2))
    results = []
    for branch, alpha in POINTS:
        base = solve(params, alpha, branch)
        rows = []
        for k in ks:
            values, seconds = {key: [] for key in KEYS}, []
            for seed in range(args.seeds):
                t = time.perf_counter()
                fp = solve(params, alpha, branch, init=base.overlaps, config=SolverConfig(quadrature=f"sobol{k}:1:{seed}"))
                seconds.append(time.perf_counter() - t)
                if fp.status.converged and fp.branch == base.branch:
                    for key in KEYS:
                        values[key].append(float(fp.record[key]))
            std = {key: float(np.std(v, ddof=1)) if len(v) > 1 else float("nan") for key, v in values.items()}
            rows.append({"log2_n": k, "std": std, "converged": len(values["q"]), "seconds": float(np.median(seconds))})
            print(f"{branch:>10} alpha={alpha}: sobol{k} " + " ".join(f"{key} {std[key]:.1e}" for key in KEYS)
                  + f"  ({rows[-1]['converged']}/{args.seeds} converged, {rows[-1]['seconds']:.2f} s per warm solve)",
                  flush=True)
        fits = {}
        n = np.array([2.0 ** r["log2_n"] for r in rows])
        sec_per_point = float(np.median([r["seconds"] / 2.0 ** r["log2_n"] for r in rows[-2:]]))
        for key in KEYS:
            s = np.array([r["std"][key] for r in rows])
            ok = np.isfinite(s) & (s > 1e-10)  # zero by symmetry (theta on m = 0 branches, ...)
            if ok.sum() < 2:
                continue
            slope, icpt = np.polyfit(np.log(n[ok]), np.log(s[ok]), 1)
            rate = -slope
            n_target = float(np.exp((np.log(TARGET) - icpt) / slope)) if rate > 0 else float("inf")
            fits[key] = {"rate": float(rate), "n_for_1e-6": n_target,
                         "seconds_for_1e-6": n_target * sec_per_point}
        results.append({"branch": branch, "alpha": alpha, "reached": base.branch, "rows": rows, "fits": fits})
        print(f"{'':>10} fit std ~ N^-rate: " + "; ".join(
            f"{key} rate {f['rate']:.2f}, 1e-6 at N = {f['n_for_1e-6']:.1e} (~{f['seconds_for_1e-6']:.0f} s warm)"
            for key, f in fits.items()))
    Path(args.out).write_text(json.dumps({"omega": args.omega, "seeds": args.seeds, "points": results}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
