"""The L = 3 mixed point (P = I, default A, omega = 0.3, r = 2, r* = 1): the rule's start problem, not a stall of
the map (docs/general.md, "Holes").

`attnphase solve --L 3 --rank 2 --alpha 2 --branch mixed` stops on the default rule (sobol10:4) at residual 0.19
with |m| ~ 0.02: its start is the matrix cold start (m = 0.2 on the positional axis, the rank-1 positional point
being absent at L = 3, P = I), from which the iterates lose m before the semantic direction forms.  This script
solves the mixed branch from that start on a coarser rule (``--coarse``), then on the target rule (``--rule``)
warm from the coarse fixed point, and the rank-2 semantic point on the target rule, and prints for each the
residual, |m| of each student axis, the singular value of th0 and e_t.

    python studies/l3_mixed_point.py --alpha 2 --coarse sobol9:4 --rule sobol10:4     # ~2 min on 2 idle cores
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se import state_evolution as se
from attnphase.theory.params import ModelParams


def show(name: str, fp, cpu: float) -> None:
    print(f"{name:28s} {fp.branch:10s} converged={fp.status.converged!s:5s} residual={fp.status.residual:.2e} "
          f"|m_a|={np.linalg.norm(fp.overlaps.m, axis=0).round(4)} th0 sv={np.linalg.svd(fp.overlaps.th0, compute_uv=False).round(4)} "
          f"e_t={fp.observables.e_t:.7f} evaluations={fp.status.iterations} cpu={cpu:.0f}s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--coarse", default="sobol9:4")
    ap.add_argument("--rule", default="sobol10:4")
    a = ap.parse_args()
    params = ModelParams(L=3, r=2, r_star=1, omega=a.omega)
    coarse, fine = (SolverConfig(quadrature=q, error_bars=False) for q in (a.coarse, a.rule))
    t = time.process_time()
    c = se.solve(params, a.alpha, "mixed", config=coarse)
    show(f"mixed, {a.coarse}, start", c, time.process_time() - t)
    t = time.process_time()
    w = se.solve(params, a.alpha, "mixed", config=fine, init=c.overlaps)
    show(f"mixed, {a.rule}, warm", w, time.process_time() - t)
    t = time.process_time()
    s = se.solve(params, a.alpha, "semantic", config=fine)
    show(f"semantic, {a.rule}", s, time.process_time() - t)
    print(f"e_t(mixed) - e_t(semantic) on {a.rule}: {w.observables.e_t - s.observables.e_t:.3e}")


if __name__ == "__main__":
    main()
