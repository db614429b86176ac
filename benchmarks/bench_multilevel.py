"""What the multilevel cold start buys: a cold solve on a large rule, with and without starting from the
default rule's fixed point (numerics/se/state_evolution.py, MULTILEVEL_NODES).

    python benchmarks/bench_multilevel.py                    # sobol14:4 (the precise tier), three points
    python benchmarks/bench_multilevel.py --rule sobol12:4

Prints, per point, the wall time and SE evaluations on the large rule of both paths, and the largest
difference of the overlaps found (the same fixed point, or another of the rule's cluster).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnphase.numerics import SolverConfig, solve
from attnphase.numerics.se import state_evolution
from attnphase.theory.params import ModelParams

POINTS = (("positional", 2.0), ("semantic", 2.0), ("positional", 0.5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rule", default="sobol14:4")
    rule = ap.parse_args().rule
    params, cfg = ModelParams(omega=0.3), SolverConfig(quadrature=rule, error_bars=False)
    solve(params, 1.0, "semantic", config=SolverConfig(quadrature="sobol8:4"))  # compile outside the timings
    print("| point | multilevel: wall, evaluations | cold: wall, evaluations | max |overlap difference| |")
    print("|---|---|---|---|")
    default_nodes = state_evolution.MULTILEVEL_NODES
    for branch, alpha in POINTS:
        out = {}
        for name, nodes in (("multilevel", default_nodes), ("cold", 2 ** 40)):
            state_evolution.MULTILEVEL_NODES = nodes
            t0 = time.perf_counter()
            fp = solve(params, alpha, branch, config=cfg)
            out[name] = (fp, time.perf_counter() - t0)
        state_evolution.MULTILEVEL_NODES = default_nodes
        (a, ta), (b, tb) = out["multilevel"], out["cold"]
        diff = float(np.max(np.abs(a.overlaps.to_vector() - b.overlaps.to_vector())))
        print(f"| {branch} alpha = {alpha} | {ta:.1f} s, {a.status.iterations} ({a.status.converged}) | "
              f"{tb:.1f} s, {b.status.iterations} ({b.status.converged}) | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
