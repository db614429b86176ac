"""Where gradient descent puts a rank-2 student of a rank-1 teacher across the rank-2 phase diagram.

    python studies/rank2_gd_scan.py                     # omega 0.1, 0.2, 0.3; alpha 0.8:3:5; d = 400, 2 seeds
    python studies/rank2_gd_scan.py --d 800 --seeds 3 --out results/rank2_gd

docs/general.md ("Phase diagram for r = 2") finds, in the rank-2 state evolution, a *mixed* fixed point (one
student direction semantic, the other positional) with the lowest e_t wherever all three branches converged
from alpha = 0.8 up.  Here, at the same grid, Armijo gradient descent (``attnphase simulate --rank 2
--teacher-rank 1``) runs from the semantic, the positional and a random start; per start, mean +- std over
the seeds of the largest singular value of theta (= Q^T Q* / d), |m| = (sum_l |m_l|^2)^(1/2), the training
objective e_t and the test error eps_g, and the label of the end point: *mixed* when both the semantic
overlap and |m| exceed ``--threshold`` (finite-d overlaps of a direction that carries none are ~sqrt(q0/d),
0.02-0.03 at d = 400), else semantic / positional / agnostic.  Written: ``OUT/rank2_gd_scan.csv`` (every run)
and the table on stdout.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np

from attnphase.theory.params import ModelParams
from attnphase.validation.experiments import SimSpec, run_simulation

INITS = ("semantic", "positional", "random")


def label(theta: float, m: float, threshold: float) -> str:
    """The branch an end point belongs to by its overlaps (module doc)."""
    return {(True, True): "mixed", (True, False): "semantic", (False, True): "positional",
            (False, False): "agnostic"}[(theta > threshold, m > threshold)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--omega", default="0.1,0.2,0.3")
    ap.add_argument("--alpha", default="0.8,1.35,1.9,2.45,3.0")
    ap.add_argument("--d", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--out", default="results/rank2_gd_scan")
    args = ap.parse_args()
    omegas = [float(x) for x in args.omega.split(",")]
    alphas = [float(x) for x in args.alpha.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0, load0 = time.process_time(), os.getloadavg()[0]
    rows = []
    for w in omegas:
        params = ModelParams(omega=w, r=2, r_star=1)
        for a in alphas:
            for init in INITS:
                for s in range(args.seeds):
                    r = run_simulation(SimSpec(d=args.d, alpha=a, init=init, seed=s, params=params, device="cpu"))
                    th = max(r.theta_singular_values)
                    rows.append(dict(omega=w, alpha=a, init=init, seed=s, theta=th, m=r.m_norm, e_t=r.e_t,
                                     eps_g=r.eps_g, eps_lin=r.eps_lin, converged=r.converged, steps=r.steps,
                                     label=label(th, r.m_norm, args.threshold)))
    tmp = out / "rank2_gd_scan.csv.tmp"
    with open(tmp, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    tmp.replace(out / "rank2_gd_scan.csv")
    print(f"d = {args.d}, {args.seeds} seeds, threshold {args.threshold}; {time.process_time() - t0:.0f} CPU s, "
          f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f}; every run converged: {all(r['converged'] for r in rows)}")
    print("| omega | alpha | start | theta | \\|m\\| | e_t | eps_g | end point (labels over seeds) |")
    print("|---|---|---|---|---|---|---|---|")
    for w in omegas:
        for a in alphas:
            for init in INITS:
                sel = [r for r in rows if r["omega"] == w and r["alpha"] == a and r["init"] == init]
                cell = lambda k, f: f"{np.mean([r[k] for r in sel]):{f}} +- {np.std([r[k] for r in sel]):{f}}"  # noqa: E731
                labels = ", ".join(sorted({r["label"] for r in sel}))
                print(f"| {w} | {a} | {init} | {cell('theta', '.3f')} | {cell('m', '.3f')} | {cell('e_t', '.7f')} | "
                      f"{cell('eps_g', '.5f')} | {labels} |")


if __name__ == "__main__":
    main()
