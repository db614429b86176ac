"""Where the r = 1 global search needs the axis starts (w with one token's field set to 0), on random L = 2 nodes.

    python benchmarks/axis_starts.py                 # 1152 settings x 3000 nodes, a few minutes on 2 cores
    python benchmarks/axis_starts.py --nodes 500     # quicker

Over a grid of settings (V0 0.5-1500, omega 0-1, four A, q 0.05-4, sigma^2 0.25-2.25; fields w = m + (q sigma^2)^{1/2}
xi, teacher fields of random scale), the compiled full search runs from the other starts, and from those plus
:func:`~attnphase.numerics.prox.starts.axis_starts` at every node.  Printed: the nodes where the axis starts find a
lower minimum, and the smallest largest |w_l| among them -- which :data:`~attnphase.numerics.prox.starts.AXIS_FIELD`
(the field above which a node runs them) must stay below.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.numerics.prox.starts import AXIS_FIELD, axis_starts, starting_points
from attnphase.theory.kernels import get_kernels

V0S = (0.5, 3.0, 12.0, 50.0, 250.0, 1500.0)
OMEGAS = (0.0, 0.3, 0.7, 1.0)
AS = (((0.6, 0.4), (0.4, 0.6)), ((0.3, 0.7), (0.8, 0.2)), ((0.1, 0.9), (0.9, 0.1)), ((0.9, 0.1), (0.1, 0.9)))
QS = (0.05, 0.5, 2.0, 4.0)
SIGMA2S = (0.25, 1.0, 2.25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=3000, help="nodes per setting (default 3000)")
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    k = get_kernels(2, 1)
    rng = np.random.default_rng(args.seed)
    N, total, largest = args.nodes, 0, []
    for V0, omega, A, q, s in itertools.product(V0S, OMEGAS, AS, QS, SIGMA2S):
        s2 = np.array([s, s])
        hs = rng.standard_normal((N, 2)) * np.sqrt(s) * rng.uniform(0.3, 2.0)
        w = rng.standard_normal((N, 2)) * np.sqrt(q * s) + rng.standard_normal(2) * 0.3
        T = k.target(hs, omega, np.array(A))
        V = np.array([V0 * s, V0 * s])
        base = starting_points(w, T, kernels=k)
        axes, _ = axis_starts(w, k)
        nodes = np.arange(N)
        _, v0, _, _, b0 = prox_compiled.global_rows(k, np.stack(base, axis=1), w, V, T, s2)
        _, v1, _, _, b1 = prox_compiled.global_rows(k, np.stack(base + axes, axis=1), w, V, T, s2)
        lower = v1[nodes, b1] < v0[nodes, b0] - 1e-10 * (1 + np.abs(v0[nodes, b0]))
        largest += list(np.abs(w[lower]).max(axis=1))
        total += N
    largest = np.sort(np.array(largest))
    print(f"{total} nodes: the axis starts find a lower minimum at {largest.size}")
    if largest.size:
        print(f"  the smallest largest |w_l| among them: {largest[0]:.3f} (AXIS_FIELD = {AXIS_FIELD}); "
              f"quantiles 1 %, 10 %, 50 %: {', '.join(f'{x:.2f}' for x in np.quantile(largest, [0.01, 0.1, 0.5]))}")


if __name__ == "__main__":
    main()
