"""Cost of the rank-r state evolution vs L, r and r* (docs/model.md section 7).

For each (L, r, r*): the one-off kernel generation, one full SE evaluation (the multi-start global
proximal search over the rule's nodes), and one semantic fixed point at alpha = 2 from the cold
start or, with --start embedded, from the rank-1 fixed points (wall time, SE evaluations, converged?).  Prints a markdown table.

    .venv/bin/python benchmarks/bench_rank.py [--quadrature sobol12] [--cases 2,2,1 3,2,1 ...]

``--fixed-points`` instead times what ``attnphase solve --rank R --teacher-rank R*`` does at L = 2 (one
fixed point with its default error bars): for each r,r*,branch
triple the embedded-start solve on the default rule (sobol10:4) and its error bars (the warm block solves
of :func:`~attnphase.numerics.errors.replicates.replicate_points`), each as user CPU seconds of this process and wall seconds, with the
SE evaluations and the machine's load average (the cores are shared: CPU seconds are the comparable figure).

    .venv/bin/python benchmarks/bench_rank.py --fixed-points [--points 2,1,mixed 2,2,positional ...]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("ATTNPHASE_QUIET", "1")

CASES = ("2,1,1", "2,2,1", "2,2,2", "3,1,1", "3,2,1", "2,3,1", "4,2,1")
POINTS = ("2,1,semantic", "2,1,positional", "2,1,mixed", "2,2,semantic", "2,2,positional", "2,2,mixed")


def fixed_points(points: list[str], alpha: float) -> None:
    """The ``--fixed-points`` table (module doc)."""
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.errors.replicates import replicate_errors, replicate_points
    from attnphase.numerics.se.starts import with_ranks
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory.params import ModelParams

    cfg = SolverConfig()
    print(f"L = 2, omega = 0.3, alpha = {alpha}, rule {cfg.quadrature}, embedded start; cores: {os.cpu_count()}")
    print("| r | r* | branch | converged | residual | SE evaluations | solve CPU (s) | solve wall (s) | "
          "error bars: block evaluations, used | bars CPU (s) | bars wall (s) | total CPU (s) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for point in points:
        r, rs, branch = point.split(",")
        params = with_ranks(ModelParams(L=2, omega=0.3), int(r), int(rs))
        c0, t0 = time.process_time(), time.perf_counter()
        fp = solve(params, alpha, branch, config=cfg)
        c1, t1 = time.process_time(), time.perf_counter()
        bars = "-"
        if fp.status.converged:
            from attnphase.numerics.se.se_map import SEMap

            count = [0]
            evaluate = SEMap.evaluate

            def counted(self, x, exact=False):  # type: ignore[no-untyped-def]
                count[0] += 1
                return evaluate(self, x, exact)

            SEMap.evaluate = counted
            try:
                out = replicate_errors(fp, *replicate_points(fp, cfg, 0))
            finally:
                SEMap.evaluate = evaluate
            bars = f"{count[0]}, {out['replicates']} of {out['replicates_tried']}"
        c2, t2 = time.process_time(), time.perf_counter()
        print(f"| {r} | {rs} | {branch} | {fp.status.converged} | {fp.status.residual:.1e} | {fp.status.iterations} | {c1 - c0:.1f} | "
              f"{t1 - t0:.1f} | {bars} | {c2 - c1:.1f} | {t2 - t1:.1f} | {c2 - c0:.1f} | {os.getloadavg()[0]:.1f} |",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quadrature", default="sobol12")
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("--cases", nargs="*", default=list(CASES), help="L,r,r* triples")
    ap.add_argument("--start", default="cold", choices=("cold", "embedded"),
                    help="start of the timed solve (embedded: includes the rank-1 solves it starts from)")
    ap.add_argument("--fixed-points", action="store_true", help="time solves with error bars at L = 2 (module doc)")
    ap.add_argument("--points", nargs="*", default=list(POINTS), help="r,r*,branch triples for --fixed-points")
    args = ap.parse_args()
    if args.fixed_points:
        fixed_points(args.points, args.alpha)
        return

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.quadrature.rules import matrix_rule
    from attnphase.numerics.se.channel import channel_moments
    from attnphase.numerics.se.starts import initial_overlaps, with_ranks
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory.params import ModelParams
    from attnphase.theory.kernels import get_kernels

    print(f"rule {args.quadrature}, alpha = {args.alpha}, semantic branch, {args.start} start; cores: {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| L | r | r* | dims L(r+r*) | kernel generation (s) | one full SE evaluation (s) | fixed point (s) | SE evaluations | converged |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        L, r, rs = (int(x) for x in case.split(","))
        params = with_ranks(ModelParams(L=L, omega=0.3), r, rs)
        t0 = time.perf_counter()
        get_kernels(L, r)
        t_gen = time.perf_counter() - t0
        rule = matrix_rule(L, r, rs, args.quadrature)
        ov = initial_overlaps(params, "semantic")
        channel_moments(get_kernels(L, r), params, ov, rule)  # warm-up (numba cache load)
        t0 = time.perf_counter()
        channel_moments(get_kernels(L, r), params, ov, rule)
        t_eval = time.perf_counter() - t0
        t0 = time.perf_counter()
        fp = solve(params, args.alpha, "semantic", config=SolverConfig(quadrature=args.quadrature),
                        start=args.start)
        t_fp = time.perf_counter() - t0
        print(f"| {L} | {r} | {rs} | {L * (r + rs)} | {t_gen:.1f} | {t_eval:.2f} | {t_fp:.1f} | {fp.status.iterations} | "
              f"{fp.status.converged} |", flush=True)


if __name__ == "__main__":
    main()
