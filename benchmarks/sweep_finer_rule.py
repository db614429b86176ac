"""What the sweep's finer-rule judgement of its rows costs (:func:`~attnphase.numerics.phase.absence.finer_rule_rows`,
docs/method.md section 5): the CPU seconds of one ``sweep`` job (:func:`~attnphase.numerics.jobs.tasks.sweep_job`,
with its error bars, as the command runs it) and of the judgement within it, with the rows on the branch and those judged the rule's.

    python benchmarks/sweep_finer_rule.py [--precision default] [--branch positional semantic] [--omega 0.3]
        [--L 2] [--alpha 0.5:3:11]
"""

from __future__ import annotations

import argparse
import time


def measure(precision: str, branch: str, omega: float, L: int, alphas: str) -> dict:
    """The sweep job's CPU seconds, the judgement's, the rows on the branch and the rows judged the rule's."""
    import attnphase.numerics.jobs.tasks as tasks
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.grids import even_grid
    from attnphase.theory import ModelParams

    spent = {"judgement": 0.0, "rule_rows": 0}
    real = tasks.finer_rule_rows

    def timed(sw, cfg):
        t = time.process_time()
        out = real(sw, cfg)
        spent["judgement"] += time.process_time() - t
        spent["rule_rows"] += sum(bool(x) for x in out.rule_points)
        return out

    tasks.finer_rule_rows = timed
    try:
        start, stop, num = alphas.split(":")
        cfg = SolverConfig.for_precision(precision)
        t = time.process_time()
        sw = tasks.sweep_job((ModelParams(L=L, omega=omega), even_grid(start, stop, int(num)), branch, cfg, 0))
        total = time.process_time() - t
    finally:
        tasks.finer_rule_rows = real
    return {"job": total, "on_branch": len(sw.on_branch())} | spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--precision", default="default")
    ap.add_argument("--branch", nargs="+", default=["positional", "semantic"])
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--L", type=int, default=2)
    ap.add_argument("--alpha", default="0.5:3:11", metavar="START:STOP:NUM")
    args = ap.parse_args()
    for branch in args.branch:
        m = measure(args.precision, branch, args.omega, args.L, args.alpha)
        print(f"{args.precision} {branch}, omega = {args.omega:g}, L = {args.L}, alpha {args.alpha}: sweep job "
              f"{m['job']:.1f} CPU s, judgement {m['judgement']:.2f} CPU s ({100 * m['judgement'] / m['job']:.0f} %); "
              f"{m['on_branch']} rows on the branch, {m['rule_rows']} the rule's")


if __name__ == "__main__":
    main()
