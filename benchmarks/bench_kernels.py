"""Benchmark of the theory kernels: time per call on n points, and kernel start-up time.

    python benchmarks/bench_kernels.py [--n 100000] [--L 2 3 4] [--repeat 10]

Prints, for each L, the best-of-``repeat`` time of ``prox_value_grad_hess``,
``loss_grad_hess`` and ``attention`` on n points (float64, one call, all points
vectorised), and the start-up time of ``get_kernels(L)`` in a fresh process from
a cold and from a warm on-disk cache.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def _best(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _startup(L: int, cache: str) -> float:
    code = (
        "import time; t = time.perf_counter()\n"
        "from attnphase.theory.kernels import get_kernels\n"
        f"get_kernels({L}); print(time.perf_counter() - t)"
    )
    env = dict(os.environ, ATTNPHASE_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--L", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    from attnphase.theory.kernels import get_kernels

    rng = np.random.default_rng(0)
    print(f"n = {args.n} points, best of {args.repeat}, numpy {np.__version__}")
    print(f"{'L':>2} {'prox_v_g_h':>12} {'loss_g_h':>10} {'attention':>10} {'per point':>10} {'cold start':>11} {'warm start':>11}")
    for L in args.L:
        with tempfile.TemporaryDirectory() as cache:
            cold = _startup(L, cache)
            warm = _startup(L, cache)
        k = get_kernels(L)
        h, w, hs = rng.normal(size=(3, args.n, L))
        V, s2 = np.full(L, 0.5), np.full(L, 0.25)
        T = k.target(hs, 0.3, np.full((L, L), 1.0 / L))
        t_prox = _best(lambda: k.prox_value_grad_hess(h, w, V, T, s2), args.repeat)
        t_loss = _best(lambda: k.loss_grad_hess(h, T, s2), args.repeat)
        t_att = _best(lambda: k.attention(h), args.repeat)
        print(
            f"{L:>2} {t_prox * 1e3:>10.1f}ms {t_loss * 1e3:>8.1f}ms {t_att * 1e3:>8.1f}ms "
            f"{t_prox / args.n * 1e9:>8.0f}ns {cold:>10.2f}s {warm:>10.3f}s"
        )


if __name__ == "__main__":
    main()
