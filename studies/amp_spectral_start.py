"""AMP from its random start against AMP from the spectral start, on the same data sets (docs/bayes-optimal.md,
"AMP at finite d": the spectral start).

Per seed at one (d, alpha): the spectral direction's cosine with Q* (validation/amp_spectral.py, shift c of
T = G (G + c I)^-1, ``--shift``) and its CPU seconds, and, from the random start (``AmpConfig()``) and from the
spectral one (``AmpConfig(start="spectral")``, the same norm ``--init-scale``, default the random start's 1e-4),
the final |theta|, the status (c converged, b budget) and the iterations; then the means over the seeds with their
standard errors against the state evolution's q0, and the largest |difference| of the two final |theta|.
One torch thread; ``--max-iter`` 1000 as ``validate``'s plan.

    nice -n 10 python studies/amp_spectral_start.py --d 4000 --alpha 0.4 --seeds 3     # ~3 min CPU
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from attnphase.numerics.se.bayes import BayesModel, solve_bayes
from attnphase.theory.params import ModelParams
from attnphase.validation.amp import AmpConfig, gamp, revealed_fields
from attnphase.validation.amp_spectral import SPECTRAL_SHIFT, spectral_direction
from attnphase.validation.data import make_teacher, n_samples, sample
from attnphase.validation.experiments import generator


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.4)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--shift", type=float, default=SPECTRAL_SHIFT)
    ap.add_argument("--init-scale", type=float, default=1e-4)
    ap.add_argument("--max-iter", type=int, default=1000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    p = ModelParams(omega=0.3)
    n = n_samples(args.alpha, args.d)
    q0 = solve_bayes(BayesModel.of(p), n / args.d, "uninformative").q0
    cfg = AmpConfig(max_iter=args.max_iter, init_scale=args.init_scale)
    rand, spec = [], []
    for s in range(args.first_seed, args.first_seed + args.seeds):
        teacher = make_teacher(p, args.d, generator(s, "teacher"), device=torch.device("cpu"), dtype=torch.float64)
        data = sample(teacher, n, generator(s, "train"))
        g = generator(s, "amp")
        Y = revealed_fields(data.hstar, g)
        r = gamp(data.X, Y, p.rho0, teacher.Qstar, g, cfg)  # as run_amp: signs, then the start, from one stream
        Qs = teacher.Qstar.reshape(-1)
        c0 = time.process_time()
        e, _ = spectral_direction(data.X, Y, p.rho0, args.shift)
        t_spec = time.process_time() - c0
        cos = abs(float(e @ Qs)) / float(Qs.norm())
        start = math.sqrt(args.init_scale * p.rho0 * args.d) * e
        sp = gamp(data.X, Y, p.rho0, teacher.Qstar, generator(s, "amp"), cfg, start=start)  # draws nothing it uses
        rand.append(abs(r.theta))
        spec.append(abs(sp.theta))
        print(f"seed {s}: spectral cosine {cos:.3f} ({t_spec:.1f} CPU-s); random start |theta| = {abs(r.theta):.4f} "
              f"({r.status[0]}, {r.iterations}); spectral start |theta| = {abs(sp.theta):.4f} ({sp.status[0]}, {sp.iterations})",
              flush=True)
    se = lambda x: float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan  # noqa: E731
    print(f"d = {args.d}, alpha = {args.alpha}, SE q0 = {q0:.4f}: random {np.mean(rand):.4f} +- {se(rand):.4f}, "
          f"spectral {np.mean(spec):.4f} +- {se(spec):.4f}; largest |difference| "
          f"{max(abs(a - b) for a, b in zip(rand, spec)):.4f}")


if __name__ == "__main__":
    main()
