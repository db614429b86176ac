"""Why warm rank-2 solves fail a short step along alpha (r = 2, r* = 1; docs/method.md section 11, "A soft direction"):
the matrix SE map has a soft direction at the mixed fixed point, and quasi-Newton's step runs along it out of the
region where the map is linear.

At the mixed point x* of alpha0 (solved from the embedded start), on the transversal basis B of the solver
(:meth:`~attnphase.numerics.se.se_map.SEMap.subspace`), G(y) = B^T D (F(x* + B y) - x* - B y) with D = 1 / max(1, |x*|)
as the solver has it.  Printed:

1. the singular values of the forward-difference Jacobian of G at x* (the solver's step FD_STEP_CONSISTENT), on the
   map of alpha0 and of alpha1, and the softest right singular vector in the overlaps' coordinates;
2. along that direction, the difference quotient of G at steps 1e-2 .. 1e-5 (where it still moves with the step,
   the map is not linear on that scale);
3. the Newton step from x* on the map of alpha1 with the Jacobian of each step of FD_STEPS: the Jacobian's smallest
   singular value, the step's size along the soft direction, and |G| after a full, a half and a quarter step;
4. the solves at alpha1 from x*: warm (``solve(init=x*)``, quasi-Newton first) and staged (the map projected on
   x*'s reflection pattern first, as a solve from a start is), with their evaluations and CPU seconds.

    .venv/bin/python studies/rank2_soft_mode.py                       # omega 0.1, alpha 1 -> 1.1 (about 15 s)
    .venv/bin/python studies/rank2_soft_mode.py --alpha0 1 --alpha1 1.264 --branch positional
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("ATTNPHASE_QUIET", "1")

import numpy as np  # noqa: E402

from attnphase.numerics.config import SolverConfig  # noqa: E402
from attnphase.numerics.quadrature.rules import rule_blocks  # noqa: E402
from attnphase.numerics.se.fixed_point import FD_STEP, FD_STEP_CONSISTENT  # noqa: E402
from attnphase.numerics.se.matrix_solve import matrix_config, solve_matrix  # noqa: E402
from attnphase.numerics.se.se_map import FixedAlpha, SEMap, model_rule  # noqa: E402
from attnphase.numerics.se.state_evolution import solve  # noqa: E402
from attnphase.theory.params import ModelParams  # noqa: E402

#: Relative steps of the forward-difference Jacobians compared: the scalar form's, the matrix form's, a tenth of it.
FD_STEPS = (FD_STEP, FD_STEP_CONSISTENT, FD_STEP_CONSISTENT / 10)

COORDS = ("q0_11", "q0_12", "q0_22", "V0_11", "V0_12", "V0_22", "m_11", "m_12", "m_21", "m_22", "th0_1", "th0_2")


def residual(smap: SEMap, x: np.ndarray, B: np.ndarray, D: np.ndarray) -> np.ndarray | None:
    ev = smap.evaluate(x, exact=True)
    return None if ev is None else B.T @ (D * (ev.fx - x))


def jacobian(smap: SEMap, x: np.ndarray, B: np.ndarray, D: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(G at x, the forward-difference Jacobian of G, backward where the forward step leaves the domain)."""
    G0 = residual(smap, x, B, D)
    J = np.empty((B.shape[1], B.shape[1]))
    for j in range(B.shape[1]):
        hj = h * max(1.0, abs(float(B[:, j] @ x)))
        hj = hj if smap.admissible(x + hj * B[:, j]) else -hj
        J[:, j] = (residual(smap, x + hj * B[:, j], B, D) - G0) / hj
    return G0, J


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omega", type=float, default=0.1)
    ap.add_argument("--alpha0", type=float, default=1.0)
    ap.add_argument("--alpha1", type=float, default=1.1)
    ap.add_argument("--branch", default="mixed")
    a = ap.parse_args()
    params, cfg = ModelParams(omega=a.omega, r=2, r_star=1), SolverConfig()
    fp = solve(params, a.alpha0, a.branch, config=cfg)
    print(f"{a.branch} point at alpha = {a.alpha0:g}: {fp.status.message}, residual {fp.status.residual:.1e}")
    mcfg = matrix_config(params, a.alpha1, a.branch, cfg, "embedded")
    rule = model_rule(params, mcfg)
    x = fp.overlaps.to_vector()
    D = 1.0 / np.maximum(1.0, np.abs(x))
    maps = {al: SEMap(params, FixedAlpha(al), rule, mcfg, branch=a.branch) for al in (a.alpha0, a.alpha1)}
    B = maps[a.alpha0].subspace(x)
    for al, smap in maps.items():  # alpha1's last: its G0 and softest direction v are used below
        G0, J = jacobian(smap, x, B, D, FD_STEP_CONSISTENT)
        _, s, Vt = np.linalg.svd(J)
        v = Vt[-1]
        print(f"map of alpha = {al:g}: |G(x*)| = {np.linalg.norm(G0):.2e}; singular values of dG/dy "
              + " ".join(f"{sv:.3g}" for sv in s))
        print("  softest direction: " + ", ".join(f"{c} {w:+.2f}" for c, w in zip(COORDS, B @ v) if abs(w) >= 0.05))
    smap = maps[a.alpha1]
    quotients = []
    for h in (1e-2, 1e-3, 1e-4, 1e-5):
        hs = h if smap.admissible(x + h * (B @ v) * np.maximum(1.0, np.abs(x))) else -h
        step = hs * (B @ v) * np.maximum(1.0, np.abs(x))  # a relative step along the soft direction
        Gh = residual(smap, x + step, B, D)
        quotients.append(f"h {h:g}: {np.linalg.norm(Gh - G0) / np.linalg.norm(step):.3g}")
    print("  |G(x* + h d) - G(x*)| / |h d| along it: " + "; ".join(quotients))
    for h in FD_STEPS:
        _, J = jacobian(smap, x, B, D, h)
        dy = np.linalg.solve(J, -G0)
        after = [residual(smap, x + t * (B @ dy), B, D) for t in (1.0, 0.5, 0.25)]
        print(f"Newton step on the map of alpha = {a.alpha1:g}, Jacobian at step {h:g}: smallest singular value "
              f"{np.linalg.svd(J, compute_uv=False)[-1]:.3g}, |dy| {np.linalg.norm(dy):.3g} (along the soft direction "
              f"{abs(float(dy @ v)):.3g}); |G| {np.linalg.norm(G0):.2e} -> at t = 1, 1/2, 1/4 of it: "
              + ", ".join("outside the domain" if g is None else f"{np.linalg.norm(g):.2e}" for g in after))
    for name, staged in (("warm (quasi-Newton first)", False), ("staged on the reflection pattern", True)):
        t = time.process_time()
        got = solve_matrix(params, a.alpha1, a.branch, mcfg, fp.overlaps, warm=True, staged=staged, coarse=False)
        print(f"solve at alpha = {a.alpha1:g} from x*, {name}: converged {got.status.converged}, "
              f"{got.status.iterations} evaluations, {time.process_time() - t:.1f} CPU s, {got.branch}; "
              f"{got.status.message}")
    print(f"(rule {cfg.quadrature}: blocks {len(rule_blocks(cfg.quadrature))}, {len(rule.weights)} nodes)")


if __name__ == "__main__":
    main()
