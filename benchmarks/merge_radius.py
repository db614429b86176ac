"""What the compiled search's merging changes, on random nodes: the global minimum found with each merge radius
against the search without merging (every start run to its own end).

    python benchmarks/merge_radius.py                              # r = 1 and 2, 1152 settings x 100 nodes each
    python benchmarks/merge_radius.py --nodes 300 --radii 0.01,0.03,0.05,0.1

A start of the compiled search stops once it comes within the merge radius (relative, per coordinate) of a minimum
an earlier start of its node converged to, where the Hessian of P is positive definite, and takes that minimum
(:data:`~attnphase.numerics.prox.compiled.MERGE_RADIUS`).  Over a grid of settings (V0 0.5-1500, omega 0-1, four A,
q 0.05-4, sigma^2 0.25-2.25; at r = 2 an anisotropic V0 and r* = 1 or 2; fields w = m + (q sigma^2)^{1/2} xi, teacher
fields of random scale), the solver's full search (its starts, L = 2) runs with each radius and with none.  Printed
per rank and radius: the nodes whose global minimum is higher than without merging (by more than 1e-10 relative)
and the largest such excess, the nodes whose minimiser moved by more than 1e-8, and the seconds.
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any, Callable, Iterator

import numpy as np

from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.numerics.prox import newton_steps as steps
from attnphase.numerics.prox.global_prox import MAX_HALVINGS, MAX_ITER_BLOCKS, MAX_ITER_FIELDS, XTOL
from attnphase.numerics.prox.objective import step_constants
from attnphase.numerics.prox.starts import axis_starts, starting_points
from attnphase.theory.kernels import get_kernels
from attnphase.theory.softmax import target as matrix_target

V0S = (0.5, 3.0, 12.0, 50.0, 250.0, 1500.0)
OMEGAS = (0.0, 0.3, 0.7, 1.0)
AS = (((0.6, 0.4), (0.4, 0.6)), ((0.3, 0.7), (0.8, 0.2)), ((0.1, 0.9), (0.9, 0.1)), ((0.9, 0.1), (0.1, 0.9)))
QS = (0.05, 0.5, 2.0, 4.0)
SIGMA2S = (0.25, 1.0, 2.25)


def search_r1(k: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray, s2: np.ndarray,
              merge: float) -> tuple[np.ndarray, np.ndarray]:
    """(best value, best h) of the full search at r = 1 (starts, axis starts, refinement) with ``merge``."""
    base = starting_points(w, T, kernels=k)
    axes, large = axis_starts(w, k)
    starts = np.ascontiguousarray(np.stack(base + axes, axis=1))
    count = np.where(large, len(base) + len(axes), len(base))
    N, n0, L = starts.shape
    Vr = np.ascontiguousarray(np.broadcast_to(V, (N, L)))
    h, value, _, _, best = prox_compiled._run(
        k, starts, w, Vr, T, np.ascontiguousarray(np.broadcast_to(s2, (N, L))), 1.0 / Vr.min(axis=1),
        np.arange(n0, dtype=np.int64), True, steps.max_step(V), XTOL, MAX_ITER_FIELDS, MAX_HALVINGS, merge, None,
        count=count)
    nodes = np.arange(N)
    return value[nodes, best], h[nodes, best]


def search_r2(k: Any, w: np.ndarray, V0: np.ndarray, T: np.ndarray, s2: np.ndarray, hstar: np.ndarray,
              merge: float) -> tuple[np.ndarray, np.ndarray]:
    """(best value, best h) of the full search on matrix fields (the solver's starts) with ``merge``."""
    starts = starting_points(w, T, hstar=hstar)
    Vinv = np.linalg.inv(V0)[None] / s2[:, None, None]
    delta, max_step = step_constants(Vinv)
    h, value, conv, _ = prox_compiled.search_rows(k, np.stack(starts), w, Vinv, T, s2, delta, max_step,
                                                  np.arange(len(starts)), merge, xtol=XTOL, max_iter=MAX_ITER_BLOCKS,
                                                  max_halvings=MAX_HALVINGS)
    v = np.where(conv, value, np.inf)
    best = np.argmin(v, axis=0)
    nodes = np.arange(w.shape[0])
    return v[best, nodes], h[best, nodes]


def settings(rank: int, rng: np.random.Generator, N: int) -> Iterator[tuple[Callable[..., Any], tuple]]:
    """Per setting of the grid: the rank's search and its arguments but the merge radius."""
    for V0, omega, A, q, s in itertools.product(V0S, OMEGAS, AS, QS, SIGMA2S):
        s2 = np.array([s, s])
        if rank == 1:
            k = get_kernels(2, 1)
            hs = rng.standard_normal((N, 2)) * np.sqrt(s) * rng.uniform(0.3, 2.0)
            w = rng.standard_normal((N, 2)) * np.sqrt(q * s) + rng.standard_normal(2) * 0.3
            yield search_r1, (k, w, np.array([V0 * s, V0 * s]), k.target(hs, omega, np.array(A)), s2)
        else:
            k = get_kernels(2, 2)
            rs = 1 + int(rng.integers(2))
            hs = rng.standard_normal((N, 2, rs)) * np.sqrt(s) * rng.uniform(0.3, 2.0)
            w = rng.standard_normal((N, 2, 2)) * np.sqrt(q * s) + rng.standard_normal((2, 2)) * 0.3
            R = np.linalg.qr(rng.standard_normal((2, 2)))[0]
            V = V0 * R @ np.diag([1.0, rng.uniform(0.3, 1.0)]) @ R.T
            yield search_r2, (k, w, V, matrix_target(hs, omega, np.array(A)), s2, hs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=100, help="nodes per setting (default 100)")
    ap.add_argument("--radii", default="0.01,0.03,0.1", help="merge radii compared with none (default 0.01,0.03,0.1)")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    radii = [float(x) for x in args.radii.split(",")]
    for rank in (int(x) for x in args.ranks.split(",")):
        rng = np.random.default_rng(args.seed)
        total, worse, moved = 0, dict.fromkeys(radii, 0), dict.fromkeys(radii, 0)
        excess, secs = dict.fromkeys(radii, 0.0), dict.fromkeys([0.0] + radii, 0.0)
        for fn, a in settings(rank, rng, args.nodes):
            t0 = time.perf_counter()
            v0, h0 = fn(*a, 0.0)
            secs[0.0] += time.perf_counter() - t0
            for m in radii:
                t0 = time.perf_counter()
                v, h = fn(*a, m)
                secs[m] += time.perf_counter() - t0
                with np.errstate(invalid="ignore"):  # nodes where no start converged: inf on both sides
                    gap = np.where(np.isfinite(v0), v - v0, 0.0)
                bad = gap > 1e-10 * (1 + np.abs(v0))
                worse[m] += int(bad.sum())
                excess[m] = max(excess[m], float(gap[bad].max()) if bad.any() else 0.0)
                moved[m] += int((np.abs(h - h0).reshape(len(h), -1).max(axis=1) > 1e-8).sum())
            total += len(v0)
        print(f"r = {rank}: {total} nodes; no merging {secs[0.0]:.1f} s")
        for m in radii:
            print(f"  merge radius {m:g}: higher minimum at {worse[m]} nodes (largest excess {excess[m]:.2g}), "
                  f"minimiser moved at {moved[m]}; {secs[m]:.1f} s ({secs[m] / secs[0.0]:.2f} of no merging)")


if __name__ == "__main__":
    main()
