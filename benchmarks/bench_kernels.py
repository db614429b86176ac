"""Benchmark of the theory kernels: time per call on n points, and kernel start-up time.

    python benchmarks/bench_kernels.py [--n 100000] [--L 2 3 4] [--repeat 10] [--prox-n 4096] [--prox-only]

Prints, for each L, the best-of-``repeat`` time of ``prox_value_grad_hess``,
``loss_grad_hess`` and ``attention`` on n points (float64, one call, all points
vectorised), the start-up time of ``get_kernels(L)`` in a fresh process from
a cold and from a warm on-disk cache, and the time of a later ``get_kernels(L)`` in the same
process (no in-memory cache of its own: the generated module is imported once).

Then, for L = 2 and 3, the full global proximal search (``global_prox``, all starts and
the refinement pass) of ``prox-n`` nodes at a realistic state (omega = 0.3, sigma = 0.5,
V_l = 20, w ~ N(0, 0.1^2), h* ~ N(0, sigma^2)) on the numpy and the compiled (numba)
backend, and, in a fresh process (warm kernel cache), the time to import the solver and
numba and the first call of the compiled solver (the template instance loaded from numba's
on-disk cache; the one-off JIT when that cache is cold).
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


def _prox_startup(L: int) -> tuple[float, float, float]:
    """Fresh process: (import attnphase.numerics.prox.global_prox + get_kernels, import numba, first numba global_prox on 8 nodes).

    The first numba call includes the instance of the template :mod:`attnphase.numerics.prox.rows`
    (loaded from numba's on-disk cache once a process has compiled it)."""
    code = (
        "import time; t0 = time.perf_counter()\n"
        "import numpy as np\n"
        "from attnphase.numerics.prox.global_prox import global_prox\n"
        "from attnphase.theory.kernels import get_kernels\n"
        f"k = get_kernels({L}); k.scalar; t1 = time.perf_counter()\n"
        "import numba; t2 = time.perf_counter()\n"
        f"w = np.full((8, {L}), 0.1); T = k.target(w, 0.3, np.full(({L}, {L}), 1 / {L}))\n"
        f"global_prox(k, w, np.full({L}, 20.0), T, np.full({L}, 0.25), backend='numba')\n"
        "print(t1 - t0, t2 - t1, time.perf_counter() - t2)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    a, b, c = (float(x) for x in out.stdout.split())
    return a, b, c


def bench_prox(n: int, repeat: int) -> None:
    from attnphase.numerics.prox.global_prox import global_prox
    from attnphase.theory.kernels import get_kernels

    import numba

    print(f"\nglobal_prox full search, {n} nodes, best of {repeat} (numba {numba.__version__}, "
          f"{numba.get_num_threads()} threads); fresh-process start-up (warm kernel cache)")
    print(f"{'L':>2} {'numpy':>9} {'numba':>9} {'speed-up':>8} {'max|dh|':>9} {'import':>8} {'numba imp':>9} {'JIT':>7}")
    for L in (2, 3):
        rng = np.random.default_rng(1)
        k = get_kernels(L)
        s2 = np.full(L, 0.25)
        A = np.full((L, L), 0.4 / (L - 1)) + (0.6 - 0.4 / (L - 1)) * np.eye(L)
        w = rng.normal(0.0, 0.1, size=(n, L))
        T = k.target(0.5 * rng.normal(size=(n, L)), 0.3, A)
        V = np.full(L, 20.0)
        t_np = _best(lambda: global_prox(k, w, V, T, s2, backend="numpy"), repeat)
        t_nb = _best(lambda: global_prox(k, w, V, T, s2, backend="numba"), repeat)
        dh = np.abs(global_prox(k, w, V, T, s2, backend="numpy")[0].h - global_prox(k, w, V, T, s2, backend="numba")[0].h).max()
        imp, nb_imp, jit = _prox_startup(L)
        print(f"{L:>2} {t_np * 1e3:>7.1f}ms {t_nb * 1e3:>7.1f}ms {t_np / t_nb:>7.1f}x {dh:>9.1e} "
              f"{imp:>7.2f}s {nb_imp:>8.2f}s {jit:>6.2f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--L", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--prox-n", type=int, default=4096, help="nodes of the global_prox benchmark")
    parser.add_argument("--prox-only", action="store_true", help="only the global_prox benchmark")
    args = parser.parse_args()
    if args.prox_only:
        bench_prox(args.prox_n, args.repeat)
        return
    from attnphase.theory.kernels import get_kernels

    rng = np.random.default_rng(0)
    print(f"n = {args.n} points, best of {args.repeat}, numpy {np.__version__}")
    print(f"{'L':>2} {'prox_v_g_h':>12} {'loss_g_h':>10} {'attention':>10} {'per point':>10} {'cold start':>11} {'warm start':>11} {'again':>8}")
    for L in args.L:
        with tempfile.TemporaryDirectory() as cache:
            cold = _startup(L, cache)
            warm = _startup(L, cache)
        k = get_kernels(L)
        again = _best(lambda: get_kernels(L), args.repeat)
        h, w, hs = rng.normal(size=(3, args.n, L))
        V, s2 = np.full(L, 0.5), np.full(L, 0.25)
        T = k.target(hs, 0.3, np.full((L, L), 1.0 / L))
        t_prox = _best(lambda: k.prox_value_grad_hess(h, w, V, T, s2), args.repeat)
        t_loss = _best(lambda: k.loss_grad_hess(h, T, s2), args.repeat)
        t_att = _best(lambda: k.attention(h), args.repeat)
        print(
            f"{L:>2} {t_prox * 1e3:>10.1f}ms {t_loss * 1e3:>8.1f}ms {t_att * 1e3:>8.1f}ms "
            f"{t_prox / args.n * 1e9:>8.0f}ns {cold:>10.2f}s {warm:>10.3f}s {again * 1e3:>6.2f}ms"
        )
    bench_prox(args.prox_n, args.repeat)


if __name__ == "__main__":
    main()
