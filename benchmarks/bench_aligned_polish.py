"""What polishing between full searches buys the aligned proximal map on matrix fields (rank r >= 2).

    python benchmarks/bench_aligned_polish.py                      # six rank-2 points on sobol10:4
    python benchmarks/bench_aligned_polish.py --quadrature sobol12:4

Each point is solved with ``--prox aligned`` twice, interleaved so that both see the same load: as the solver does
it (the last full search's picks and their mirror images polished between full searches) and with a full search at
every evaluation (the polish switched off here).  Printed per point: wall and CPU seconds, SE evaluations, whether
both converged, and the largest difference of their invariants (the same fixed point: to the solver's tolerance).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

POINTS = ((1, 0.3, 2.0, "positional"), (1, 0.3, 2.0, "semantic"), (1, 0.3, 0.5, "mixed"), (1, 0.3, 2.0, "mixed"),
          (2, 0.3, 2.0, "semantic"), (1, 0.1, 1.2, "mixed"))


def main() -> None:
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.prox import local_prox
    from attnphase.numerics.se import channel
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory.params import ModelParams

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quadrature", default="sobol10:4")
    args = ap.parse_args()
    cfg = SolverConfig(quadrature=args.quadrature, prox="aligned", error_bars=False)
    solve(ModelParams(omega=0.3, r=2), 2.0, "semantic", config=cfg.replace(quadrature="sobol6:2"))  # compile first

    def searched(*a, **k):
        return local_prox.aligned_prox(*a, **(k | {"full_search": True}))

    def timed(p, alpha, branch):
        t, c = time.perf_counter(), time.process_time()
        fp = solve(p, alpha, branch, config=cfg)
        return fp, time.perf_counter() - t, time.process_time() - c

    print(f"aligned prox, rank 2, L = 2, {args.quadrature}; polished / a full search at every evaluation")
    print("| r* | omega | alpha | branch | wall (s) | CPU (s) | SE evaluations | converged | largest invariant diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    totals = np.zeros(2)
    for rs, omega, alpha, branch in POINTS:
        p = ModelParams(omega=omega, r=2, r_star=rs)
        polished = timed(p, alpha, branch)
        channel.aligned_prox = searched
        try:
            full = timed(p, alpha, branch)
        finally:
            channel.aligned_prox = local_prox.aligned_prox
        a, b = (np.concatenate([fp.invariants[k] for k in sorted(fp.invariants)]) for fp, _, _ in (full, polished))
        totals += (polished[1], full[1])
        print(f"| {rs} | {omega} | {alpha} | {branch} | {polished[1]:.2f} / {full[1]:.2f} | {polished[2]:.2f} / "
              f"{full[2]:.2f} | {polished[0].status.iterations} / {full[0].status.iterations} | "
              f"{polished[0].status.converged} / {full[0].status.converged} | {np.abs(a - b).max():.1e} |")
    print(f"total wall {totals[0]:.1f} s / {totals[1]:.1f} s: x{totals[1] / totals[0]:.2f}")


if __name__ == "__main__":
    main()
