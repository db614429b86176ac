"""AMP at finite d over seeds against the Bayes-optimal state evolution (docs/bayes-optimal.md, "AMP at finite d").

One line per call: mean |theta| over the seeds with its standard error, the state evolution's q0, every run's status
(c converged, b budget) and |theta|, the iterations, the escape iteration (the first with |theta_t| > q0 / 2), how far |theta| still moves in the budget runs (its standard
deviation over their last 200 iterations), the converged runs' mean and how often the adaptive damping halved its step;
``--init-scale``/``--damping``/``--adaptive`` (the step halved on oscillation)/``--start spectral`` change the AMP
configuration (validation/amp.py; ``--damp-after N``: N undamped iterations, then ``--damping``; ``--max-iter``,
default 1000; seeds ``--first-seed`` onwards; one torch thread).

    python studies/amp_seeds.py --d 2000 --alpha 0.4 --seeds 16          # ~100 s on a free core
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from attnphase.theory.params import ModelParams
from attnphase.validation.amp import AmpConfig
from attnphase.validation.amp_run import AmpSpec, run_amp


def escape(r) -> int | str:
    """The first iteration at which |theta_t| exceeds half the state evolution's q0 ("-" if none)."""
    return next((t for t, m in enumerate(r.theta_path) if abs(m) > 0.5 * r.se_q0), "-")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.35)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--damping", type=float, default=0.0)
    ap.add_argument("--init-scale", type=float, default=1e-4)
    ap.add_argument("--damp-after", type=int, default=0,
                    help="iterations run undamped before --damping applies (validation/amp.py, settling)")
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--start", default="random", choices=("random", "spectral"),
                    help="AMP's start: random (default) or the spectral estimator's direction (validation/amp_spectral.py)")
    ap.add_argument("--adaptive", action="store_true",
                    help="the step halved on oscillation (validation/amp.py)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = AmpConfig(max_iter=args.max_iter, damping=args.damping, init_scale=args.init_scale, adaptive=args.adaptive,
                    damp_after=args.damp_after, start=args.start)
    t0 = time.perf_counter()
    runs = [run_amp(AmpSpec(d=args.d, alpha=args.alpha, seed=s, params=ModelParams(), amp=cfg, device="cpu"))
            for s in range(args.first_seed, args.first_seed + args.seeds)]
    m = np.array([abs(r.theta) for r in runs])
    conv = np.array([r.converged for r in runs])
    se = lambda x: float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan  # noqa: E731
    print(f"d = {args.d}, alpha = {args.alpha}, {args.seeds} seeds, {args.start} start, {'adaptive' if args.adaptive else 'fixed'} step: mean |theta| = {m.mean():.4f} +- {se(m):.4f}, "
          f"SE q0 = {runs[0].se_q0:.4f}, z = {(m.mean() - runs[0].se_q0) / se(m):+.2f}; "
          f"status {''.join(r.status[0] for r in runs)}; |theta| {np.round(m, 3).tolist()}; "
          f"step halvings {[r.halvings for r in runs]}; iterations {[r.iterations for r in runs]}; "
          f"escape iteration (first t with |theta_t| > q0 / 2; - never) {[escape(r) for r in runs]}; "
          f"std of |theta| over the last 200 iterations of the budget runs "
          f"{[round(float(np.abs(r.theta_path[-200:]).std()), 4) for r in runs if r.status == 'budget']}; "
          f"converged runs' mean {m[conv].mean() if conv.any() else math.nan:.4f} +- {se(m[conv]):.4f} "
          f"({int(conv.sum())} runs); {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
