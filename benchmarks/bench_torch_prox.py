"""Benchmark of the proximal backends: the full global search on 2^12 .. 2^16 channel nodes.

    python benchmarks/bench_torch_prox.py [--L 2] [--K 12 16] [--repeat 3] [--backends numpy numba torch]
                                          [--state semantic|positional] [--device cuda] [--torch-threads 1]

Nodes: the scrambled Sobol rule sobolK (2^K points) of the default model (omega = 0.3, sigma = 0.5)
at a state near its alpha = 2 fixed point on the chosen branch; one call is ``global_prox`` (every
start, the refinement pass, the selection of the winners and of the candidates).  Prints the torch
device (``--device``, else ``$ATTNPHASE_TORCH_DEVICE``, else cuda when present, else cpu), the
threads of numba and torch, the load average, and for each backend and size the best and the median
of ``repeat`` timed calls after one untimed call (JIT, CUDA context and kernel loading excluded),
and the largest |h| difference from the first backend's result.  Runs unchanged on a CPU-only or a
CUDA machine.  On a busy CPU run it with ``OMP_WAIT_POLICY=PASSIVE``: spinning OpenMP threads
contend with the other processes' work (torch on 8192 nodes, one thread, on 2 busy cores: 0.40 s
passive, 6.3 s with ACTIVE, 2-12 s unset; two threads unset: 10x slower than one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

#: States near the alpha = 2 fixed points of the default model (gh5 solves): q0, V0, m, th0.
STATES = {
    "semantic": (0.456, 52.6, (0.0, 0.0), 0.626),
    "positional": (0.212, 47.0, (0.255, -0.255), 0.0),
}


def nodes(L: int, K: int, state: str):
    """(kernels, w, V, T, sigma^2) at the 2^K nodes of sobolK for the default model at ``state``."""
    from attnphase.numerics.quadrature.rules import make_rule
    from attnphase.theory.channel import channel_fields, token_variances
    from attnphase.theory.kernels import get_kernels
    from attnphase.theory.params import ModelParams

    params = ModelParams(L=L, omega=0.3)
    q0, V0, m, th0 = STATES[state]
    m = np.r_[m, np.zeros(L - 2)]
    k = get_kernels(L)
    x = make_rule(L, f"sobol{K}").nodes
    w, hstar = channel_fields(x[:, :L], x[:, L:], q0, m, th0, params.sigma2, params.rho0)
    T = k.target(hstar, params.omega, params.A_array)
    return k, w, token_variances(V0, params.sigma2), T, params.sigma2


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """(best, median) seconds of ``repeat`` calls after one untimed call, and the last result."""
    out = fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--L", type=int, default=2)
    ap.add_argument("--K", type=int, nargs=2, default=(12, 16), metavar=("KMIN", "KMAX"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", nargs="+", default=["numpy", "numba", "torch"])
    ap.add_argument("--state", choices=sorted(STATES), default="semantic")
    ap.add_argument("--device", default=None, help="torch device (default $ATTNPHASE_TORCH_DEVICE, else cuda if present)")
    ap.add_argument("--torch-threads", type=int, default=None, help="torch's CPU threads (default: torch's own choice)")
    args = ap.parse_args()
    if args.device:
        from attnphase.numerics.config import TORCH_DEVICE_ENV

        os.environ[TORCH_DEVICE_ENV] = args.device

    import numba
    import torch

    from attnphase.numerics.prox import torch_backend as prox_torch
    from attnphase.numerics.prox.global_prox import global_prox

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    dev = prox_torch.torch_device()
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"global_prox, L = {args.L}, {args.state} state (omega = 0.3, alpha = 2); torch {torch.__version__} on "
          f"{dev} ({name}), torch threads {torch.get_num_threads()}, numba threads {numba.get_num_threads()}, "
          f"{os.cpu_count()} cores, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'nodes':>7} {'backend':>7} {'best s':>9} {'median s':>9} {'us/node':>8} {'max|dh|':>9}")
    for K in range(args.K[0], args.K[1] + 1):
        k, w, V, T, s2 = nodes(args.L, K, args.state)
        ref = None
        for b in args.backends:
            best, med, (res, _) = timed(lambda: global_prox(k, w, V, T, s2, backend=b), args.repeat)
            ref = res.h if ref is None else ref
            dh = float(np.max(np.abs(res.h - ref)))
            print(f"{2**K:>7} {b:>7} {best:>9.4f} {med:>9.4f} {1e6 * best / 2**K:>8.2f} {dh:>9.1e}", flush=True)
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
