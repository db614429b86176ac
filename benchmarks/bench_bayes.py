"""Time the Bayes-optimal estimator's two workloads (docs/bayes-optimal.md):

* the BO curve: 40 values of alpha, both branches, q0 and eps_g each with its error bar
  (numerics/se/bayes_curve.py, what ``sweep --estimator bayes-optimal`` runs), and the three thresholds with
  their bars, at L = 2 and L = 3 (target: <= 60 s on 2 cores);
* one AMP run at d = 2000, alpha = 0.4 to convergence (validation/amp_run.py, what ``simulate --algorithm amp``
  runs: data, GAMP and the state evolution's prediction), one torch thread (target: <= 30 s CPU).

    python benchmarks/bench_bayes.py          # prints wall and CPU seconds of each
"""

from __future__ import annotations

import time

import numpy as np


def curve(L: int, omega: float = 0.3) -> tuple[float, float]:
    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel
    from attnphase.numerics.se.bayes_curve import bayes_curve

    wall, cpu = time.perf_counter(), time.process_time()
    model = BayesModel((0.25,) * L)
    pts = bayes_curve(model, omega, np.linspace(0.05, 1.0, 40))
    th = bayes_thresholds(model)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"BO curve, L = {L}: {len(pts)} points (40 alphas x 2 branches) and the thresholds in {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU; " + ", ".join(f"{k} = {v:.8g}" for k, v in th.as_dict().items()
                                            if "note" not in k and v is not None))
    return wall, cpu


def amp(d: int = 2000, alpha: float = 0.4, seed: int = 0) -> tuple[float, float]:
    import torch

    from attnphase.theory.params import ModelParams
    from attnphase.validation.amp import AmpConfig
    from attnphase.validation.amp_run import AmpSpec, run_amp

    torch.set_num_threads(1)
    wall, cpu = time.perf_counter(), time.process_time()
    r = run_amp(AmpSpec(d=d, alpha=alpha, seed=seed, params=ModelParams(), amp=AmpConfig(max_iter=1000), device="cpu"))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"AMP, d = {d}, alpha = {alpha}, seed {seed}: {r.status} after {r.iterations} iterations, |theta| = {abs(r.theta):.4f} "
          f"(state evolution {r.se_q0:.4f}) in {wall:.2f} s wall, {cpu:.2f} s CPU (one torch thread)")
    return wall, cpu


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help says what it times
    for L in (2, 3):
        curve(L)
    amp()
