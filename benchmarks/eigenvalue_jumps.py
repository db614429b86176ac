"""Where the branch-end eigenvalues' quadrature error comes from: the nodes where the global proximal minimiser leaves
the basin reached from h = 0, against the rest.

    python benchmarks/eigenvalue_jumps.py                           # omega = 0.1: both ends, K = 10, 12, 14
    python benchmarks/eigenvalue_jumps.py --omega 0.2 --ks 12,14,16 --scramblings 8

At each end of the main job's diagram (``--positional-end``, ``--semantic-end``: the alpha of the default rules) the
agnostic fixed point is solved on ``sobol14:4``; there the end's eigenvalue (mu in m, lambda in theta:
docs/method.md section 5) is computed on ``--scramblings`` independent scramblings of ``sobolK`` (symmetrised, one
scrambling each) with the global map (``global``), with the local one from h = 0 (``local``, smooth in the fields),
and their difference (``jumps``: non-zero only at the nodes where the two maps pick different minima).  Printed per
eigenvalue and K: the mean and the spread (standard deviation over the scramblings) of each, the share of nodes where
the maps differ, and the fitted rate of each spread in the number of nodes.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import make_rule
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.stability import m_stability_at, node_solves, theta_stability_at
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams

#: The main job's ends at omega = 0.1 (docs/method.md section 8).
POSITIONAL_END, SEMANTIC_END = 1.2846, 0.5531


def spreads(params: ModelParams, alpha: float, eigenvalue, K: int, scramblings: int, cfg: SolverConfig) -> dict:
    """Mean and spread over the scramblings of the eigenvalue with the global map, the local one and their
    difference, and the share of nodes where the two maps differ."""
    fp = solve(params, alpha, "agnostic", config=cfg.replace(quadrature="sobol14:4"))
    if not (fp.status.converged and fp.branch == "agnostic"):
        raise SystemExit(f"no agnostic point at alpha = {alpha}: {fp.status.message}")
    local_cfg = cfg.replace(prox="local")
    values = {"global": [], "local": [], "jumps": []}
    share = []
    for s in range(scramblings):
        rule = model_rule(params, cfg, make_rule(params.L, f"sobol{K}:1:{1000 + s}"))
        sg = node_solves(params, fp.overlaps, rule, cfg)
        sl = node_solves(params, fp.overlaps, rule, local_cfg)
        eg = eigenvalue(params, alpha, fp.overlaps, rule, cfg, solves=sg)[0]
        el = eigenvalue(params, alpha, fp.overlaps, rule, local_cfg, solves=sl)[0]
        values["global"].append(eg)
        values["local"].append(el)
        values["jumps"].append(eg - el)
        share.append(float(np.mean(np.any(np.abs(sg.g - sl.g) > 1e-9, axis=1))))
    return {"nodes": model_rule(params, cfg, make_rule(params.L, f"sobol{K}:1")).nodes.shape[0],
            "share": float(np.mean(share)),
            **{k: (float(np.mean(v)), float(np.std(v, ddof=1))) for k, v in values.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--omega", type=float, default=0.1)
    ap.add_argument("--positional-end", type=float, default=POSITIONAL_END)
    ap.add_argument("--semantic-end", type=float, default=SEMANTIC_END)
    ap.add_argument("--ks", default="10,12,14", help="log2 of each scrambling's points, comma-separated")
    ap.add_argument("--scramblings", type=int, default=16)
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    params = ModelParams(omega=args.omega)
    cfg = SolverConfig(error_bars=False)
    t0 = time.perf_counter()
    print(f"omega = {args.omega}; mean +- spread over {args.scramblings} scramblings of sobolK (symmetrised)")
    print("| eigenvalue | K | nodes | global | local (from h = 0) | jumps (global - local) | nodes where they differ |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, alpha, eigenvalue in (("mu (positional end)", args.positional_end, m_stability_at),
                                    ("lambda (semantic end)", args.semantic_end, theta_stability_at)):
        rows = [spreads(params, alpha, eigenvalue, K, args.scramblings, cfg) for K in ks]
        for K, r in zip(ks, rows):
            cells = " | ".join(f"{r[k][0]:.4f} +- {r[k][1]:.1e}" for k in ("global", "local", "jumps"))
            print(f"| {name} at alpha = {alpha:g} | {K} | {r['nodes']} | {cells} | {r['share']:.2%} |")
        if len(ks) > 1:
            n = np.log([r["nodes"] for r in rows])
            rates = {k: np.polyfit(n, np.log([r[k][1] for r in rows]), 1)[0] for k in ("global", "local", "jumps")}
            print(f"| {name}: spread ~ N^rate | | | {rates['global']:+.2f} | {rates['local']:+.2f} | "
                  f"{rates['jumps']:+.2f} | |")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
