"""Gradient descent from the semantic start near the end of the semantic branch, at large d.

    python studies/gd_semantic_end.py --out results/gd_semantic_end            # defaults below
    python studies/gd_semantic_end.py --ds 200 --alphas 0.5,0.8 --seeds 1      # a quick look on a CPU

The theory (global prox) ends the semantic branch at alpha ~= 0.714 for omega = 0.3 (where the
agnostic branch turns unstable in theta, docs/method.md); below it the state evolution has no
fixed point with theta != 0. This script runs full-batch GD (Armijo, float64, `attnphase.validation`) from the semantic start
over a grid of (alpha, d, seed), and writes one CSV row per run (``runs.csv``, appended as
runs finish, so a run stopped early keeps what it did) and, at the end, ``summary.json`` with
the per-(alpha, d) means and standard errors of theta = Q.Q*/d, m and eps_g next to the
theory's semantic fixed point at the same alpha. Sized for a GPU (``--device auto`` picks cuda).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

FIELDS = ("alpha", "d", "seed", "theta", "m", "q", "eps_g", "e_t", "steps", "converged", "seconds")


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alphas", default="0.4,0.5,0.6,0.7,0.8,0.9")
    ap.add_argument("--ds", default="1000,2000,4000,8000")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--max-seconds", type=float, default=math.inf, help="stop starting new runs after this")
    ap.add_argument("--no-theory", action="store_true", help="skip the state-evolution comparison")
    ap.add_argument("--out", default="results/gd_semantic_end")
    args = ap.parse_args(argv)

    from attnphase.theory.params import ModelParams
    from attnphase.validation.experiments import SimSpec, run_simulation

    params = ModelParams(omega=args.omega)
    alphas, ds = _floats(args.alphas), [int(x) for x in _floats(args.ds)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    rows = []
    with open(out / "runs.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for d in ds:
            for alpha in alphas:
                for seed in range(args.seeds):
                    if time.perf_counter() - t_start > args.max_seconds:
                        break
                    res = run_simulation(SimSpec(d=d, alpha=alpha, init="semantic", seed=seed, params=params,
                                                 device=args.device))
                    row = {"alpha": alpha, "d": d, "seed": seed, "theta": abs(res.theta), "m": abs(res.m), "q": res.q,
                           "eps_g": res.eps_g, "e_t": res.e_t, "steps": res.steps, "converged": res.converged,
                           "seconds": round(res.seconds, 3)}
                    writer.writerow(row)
                    fh.flush()
                    rows.append(row)
                    print(json.dumps(row), flush=True)

    summary: dict = {"omega": args.omega, "device": args.device, "groups": []}
    theory = {}
    if not args.no_theory:
        from attnphase.numerics import solve

        for alpha in alphas:
            fp = solve(params, alpha, "semantic")
            theory[alpha] = {"branch": fp.branch, "converged": fp.status.converged, "theta": abs(fp.overlaps.th0),
                             "eps_g": fp.observables.eps_g}
    for alpha in alphas:
        for d in ds:
            g = [r for r in rows if r["alpha"] == alpha and r["d"] == d]
            if not g:
                continue
            n = len(g)

            def mean_se(key: str) -> tuple[float, float]:
                v = [float(r[key]) for r in g]
                mu = sum(v) / n
                se = math.sqrt(sum((x - mu) ** 2 for x in v) / (n - 1) / n) if n > 1 else math.nan
                return mu, se

            entry = {"alpha": alpha, "d": d, "runs": n, "converged": sum(bool(r["converged"]) for r in g)}
            for key in ("theta", "m", "eps_g"):
                entry[key], entry[key + "_se"] = mean_se(key)
            entry["theory"] = theory.get(alpha)
            summary["groups"].append(entry)
    summary["seconds"] = time.perf_counter() - t_start
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"{'alpha':>6} {'d':>6} {'theta':>16} {'m':>16} {'eps_g':>10}  theory (semantic solve)")
    for e in summary["groups"]:
        th = e["theory"]
        tt = f"{th['branch']}, theta = {th['theta']:.4f}" if th else ""
        print(f"{e['alpha']:6.2f} {e['d']:6d} {e['theta']:8.4f}+-{e['theta_se']:.4f} {e['m']:8.4f}+-{e['m_se']:.4f} "
              f"{e['eps_g']:10.3e}  {tt}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
