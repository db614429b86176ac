"""Time the Bayes-optimal curve: 40 values of alpha (both branches, q0 with its error bar, eps_g with its bar) and
the three thresholds with their bars, at L = 2 and L = 3 (docs/bayes-optimal.md).

    python benchmarks/bench_bayes.py          # prints the seconds per L and the thresholds
"""

from __future__ import annotations

import time

import numpy as np

from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
from attnphase.numerics.se.bayes import (DEFAULT_ORDER, EPS_G_ORDER, ORDER_STEP, BayesModel, alpha_curve, bayes_eps_g,
                                         sign_rule, solve_bayes)


def curve(L: int, omega: float = 0.3) -> float:
    start = time.perf_counter()
    model = BayesModel((0.25,) * L)
    rules = [sign_rule(L, n) for n in (DEFAULT_ORDER, DEFAULT_ORDER - ORDER_STEP)]
    curves = [alpha_curve(model, r) for r in rules]
    for alpha in np.linspace(0.05, 1.0, 40):
        for branch in ("uninformative", "informative"):
            fine, coarse = (solve_bayes(model, alpha, branch, r, c) for r, c in zip(rules, curves))
            bayes_eps_g(model, omega, fine.q0)
            bayes_eps_g(model, omega, coarse.q0, order=EPS_G_ORDER.get(L, 6) - 4)
    th = bayes_thresholds(model)
    seconds = time.perf_counter() - start
    print(f"L = {L}: {seconds:.1f} s; " + ", ".join(f"{k} = {v}" for k, v in th.as_dict().items() if "note" not in k))
    return seconds


if __name__ == "__main__":
    for L in (2, 3):
        curve(L)
