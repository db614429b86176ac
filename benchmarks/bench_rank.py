"""Cost of the rank-r state evolution vs L, r and r* (docs/model.md section 7; issue 12 targets).

For each (L, r, r*): the one-off kernel generation, one full SE evaluation (the multi-start global
proximal search over the rule's nodes), and one semantic fixed point at alpha = 2 from the cold
start or, with --start embedded, from the rank-1 fixed points (wall time, SE evaluations, converged?).  Prints a markdown table.

    .venv/bin/python benchmarks/bench_rank.py [--quadrature sobol12] [--cases 2,2,1 3,2,1 ...]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("ATTNPHASE_QUIET", "1")

CASES = ("2,1,1", "2,2,1", "2,2,2", "3,1,1", "3,2,1", "2,3,1", "4,2,1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quadrature", default="sobol12")
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("--cases", nargs="*", default=list(CASES), help="L,r,r* triples")
    ap.add_argument("--start", default="cold", choices=("cold", "embedded"),
                    help="start of the timed solve (embedded: includes the rank-1 solves it starts from)")
    args = ap.parse_args()

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.rank_se import (
        channel_moments, initial_rank_overlaps, make_rank_rule, solve_rank, with_ranks,
    )
    from attnphase.theory.params import ModelParams
    from attnphase.theory.rank_kernels import get_rank_kernels

    print(f"rule {args.quadrature}, alpha = {args.alpha}, semantic branch, {args.start} start; cores: {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| L | r | r* | dims L(r+r*) | kernel generation (s) | one full SE evaluation (s) | fixed point (s) | SE evaluations | converged |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        L, r, rs = (int(x) for x in case.split(","))
        params = with_ranks(ModelParams(L=L, omega=0.3), r, rs)
        t0 = time.perf_counter()
        get_rank_kernels(L, r)
        t_gen = time.perf_counter() - t0
        rule = make_rank_rule(L, r, rs, args.quadrature)
        ov = initial_rank_overlaps(params, "semantic")
        channel_moments(get_rank_kernels(L, r), params, ov, rule)  # warm-up (numba cache load)
        t0 = time.perf_counter()
        channel_moments(get_rank_kernels(L, r), params, ov, rule)
        t_eval = time.perf_counter() - t0
        t0 = time.perf_counter()
        fp = solve_rank(params, args.alpha, "semantic", config=SolverConfig(quadrature=args.quadrature),
                        start=args.start)
        t_fp = time.perf_counter() - t0
        print(f"| {L} | {r} | {rs} | {L * (r + rs)} | {t_gen:.1f} | {t_eval:.2f} | {t_fp:.1f} | {fp.evaluations} | "
              f"{fp.converged} |", flush=True)


if __name__ == "__main__":
    main()
