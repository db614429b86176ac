"""Cost of the global proximal map on matrix fields (h in R^{L x r}) per SE evaluation, numpy vs numba, and of whole rank-2 solves.

(1) Per evaluation (L = 2, 3; r = 1, 2; r* = 1; omega = 0.3, alpha = 2): the proximal search of one SE
evaluation at the embedded semantic start (numerics/se/state_evolution.py) over the nodes of ``--quadrature``:
the full search (the six starts plus the previous minima, as the solver makes it) and the polish (the
previous minima and w), best of ``--repeat`` on each backend, and the largest difference of the minimisers.
(2) The whole commands ``attnphase solve --rank 2 --teacher-rank R* --alpha 2 --branch B --json`` (default
rule and error bars; imports and the kernel cache load included), each as wall and user+system CPU seconds
of the child process, with the 1-minute load average before and after (the 2 cores are shared: CPU
seconds are the comparable figure).

    .venv/bin/python benchmarks/bench_prox_matrix_fields.py [--quadrature sobol12] [--repeat 3] [--no-commands]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("ATTNPHASE_QUIET", "1")

CASES = ("2,1,1", "2,2,1", "3,1,1", "3,2,1")
COMMANDS = ("2,semantic", "2,mixed", "1,mixed")


def _best(fn, repeat: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(wall, CPU seconds of this process: every thread) of the fastest of ``repeat`` calls."""
    out = []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - t0, time.process_time() - c0))
    return min(out)


def per_evaluation(cases: list[str], quadrature: str, repeat: int) -> None:
    """Table (1) of the module doc."""
    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.prox.global_prox import global_prox
    from attnphase.numerics.prox.selection import Candidates
    from attnphase.numerics.quadrature.rules import matrix_rule, split_nodes
    from attnphase.numerics.se.starts import with_ranks
    from attnphase.numerics.se.state_evolution import embedded_start
    from attnphase.theory.params import ModelParams
    from attnphase.theory import matrix_channel as rk
    from attnphase.theory.kernels import get_kernels
    from attnphase.theory.softmax import target

    print(f"(1) one SE evaluation's proximal search, rule {quadrature}, embedded semantic start, alpha = 2; "
          f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print("wall / CPU seconds (CPU: all threads of this process), best of the repeats")
    print("| L | r | r* | nodes | full search numpy (s) | numba (s) | speed-up (CPU) | polish numpy (s) | numba (s) | "
          "speed-up (CPU) | max abs dh |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        L, r, rs = (int(x) for x in case.split(","))
        params = with_ranks(ModelParams(L=L, omega=0.3), r, rs)
        ov = embedded_start(params, 2.0, "semantic", SolverConfig(quadrature=quadrature))
        rule = matrix_rule(L, r, rs, quadrature)
        s2 = params.sigma2
        w, hstar = rk.channel_fields(*split_nodes(rule, L, r, rs), ov.q0, ov.m, ov.th0, s2, params.rho0)  # as channel_moments
        T = target(hstar, params.omega, params.A_array)
        k = get_kernels(L, r)
        prev = global_prox(k, w, ov.V0, T, s2, hstar, backend="numba")[1]  # also loads / compiles the instance
        row = [f"{L}", f"{r}", f"{rs}", f"{w.shape[0]}"]
        res = {}
        for mode, kw in (("full", {"candidates": prev}), ("polish", {"candidates": prev, "full_search": False})):
            times = {}
            for backend in ("numpy", "numba"):
                def run(backend: str = backend, kw: dict = kw) -> None:
                    global_prox(k, w, ov.V0, T, s2, hstar, backend=backend, **kw)

                times[backend] = _best(run, repeat)
                res[mode, backend] = global_prox(k, w, ov.V0, T, s2, hstar, backend=backend, **kw)[0].h
            (wn, cn), (wb, cb) = times["numpy"], times["numba"]
            row += [f"{wn:.3f} / {cn:.3f}", f"{wb:.3f} / {cb:.3f}", f"{cn / cb:.0f}x"]
        dh = max(float(np.abs(res[m, "numpy"] - res[m, "numba"]).max()) for m in ("full", "polish"))
        print("| " + " | ".join(row + [f"{dh:.1e}"]) + " |", flush=True)


def commands(points: list[str], repeat: int) -> None:
    """Table (2) of the module doc."""
    exe = Path(sys.executable).with_name("attnphase")
    print(f"\n(2) whole commands (default rule and error bars); {os.cpu_count()} cores")
    print("| command | wall (s) | user+sys CPU (s) | converged | error-bar blocks used | load before / after |")
    print("|---|---|---|---|---|---|")
    for point in points:
        rs, branch = point.split(",")
        cmd = [str(exe), "solve", "--rank", "2", "--teacher-rank", rs, "--alpha", "2", "--branch", branch, "--json"]
        for _ in range(repeat):
            load0 = os.getloadavg()[0]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            rec = json.loads(out.stdout) if out.returncode in (0, 1) and out.stdout.strip() else {}
            used = f"{rec.get('replicates', '-')} of {rec.get('replicates_tried', '-')}"
            print(f"| r* = {rs} {branch} | {wall:.1f} | {cpu:.1f} | {rec.get('converged')} | {used} | "
                  f"{load0:.1f} / {os.getloadavg()[0]:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quadrature", default="sobol12")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", nargs="*", default=list(CASES), help="L,r,r* triples for (1)")
    ap.add_argument("--commands", nargs="*", default=list(COMMANDS), help="r*,branch pairs for (2)")
    ap.add_argument("--no-commands", action="store_true", help="only table (1)")
    ap.add_argument("--command-repeat", type=int, default=1)
    args = ap.parse_args()
    if args.cases:
        per_evaluation(args.cases, args.quadrature, args.repeat)
    if not args.no_commands:
        commands(args.commands, args.command_repeat)


if __name__ == "__main__":
    main()
