"""Benchmark: one full-batch gradient-descent run to convergence at d = 1000, alpha = 2.

    .venv/bin/python benchmarks/bench_gd.py                 # every init, float64, auto device
    .venv/bin/python benchmarks/bench_gd.py --threads 2 --init positional --dtype float32

Prints one line per run (steps, objective evaluations, training seconds, total
seconds including data generation and the 10^4-sample test set) and, with
``--json``, one JSON object per line. The target is <= 60 s per run on a CPU.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("--init", action="append", choices=("semantic", "positional", "random"))
    ap.add_argument("--optimizer", default="gd", choices=("gd", "adam"))
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import torch

    from attnphase.validation.experiments import SimSpec, run_simulation
    from attnphase.validation.training import TrainConfig

    if args.threads:
        torch.set_num_threads(args.threads)
    ok = True
    for init in args.init or ["semantic", "positional", "random"]:
        spec = SimSpec(d=args.d, alpha=args.alpha, init=init, seed=args.seed, device=args.device, dtype=args.dtype,
                       train=TrainConfig(optimizer=args.optimizer))
        r = run_simulation(spec)
        ok &= r.converged
        if args.json:
            print(json.dumps({**r.to_dict(), "threads": torch.get_num_threads()}))
        else:
            print(f"d={r.d} alpha={r.alpha} init={init:10s} {args.optimizer} {r.dtype} {r.device} "
                  f"threads={torch.get_num_threads()}: {r.steps} steps, {r.status}, "
                  f"train {r.train_seconds:.2f} s, total {r.seconds:.2f} s  "
                  f"(theta={r.theta:.4f} m={r.m:.4f} eps_g={r.eps_g:.3e})")
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
