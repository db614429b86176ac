"""What gradient descent's random-start end points at omega = 0.3, alpha < 1 are (issue 31, item 4).

    python studies/random_start_states.py                                # defaults below (~10 CPU-minutes)
    python studies/random_start_states.py --ds 250 --seeds 1 --no-se     # a quick look

``validate --quick --d 2000`` found, from the random start at omega = 0.3 and alpha = 0.35-0.8, GD
end points (|grad R|_F / sqrt(d) <= 3e-7) with |m| ~ 0.11-0.16, |theta| ~ 0.02-0.04 and e_t above
both branches' theory ("neither" rows of its alpha sweep). For each (d, seed) this script:

1. trains with the project's own code (:func:`attnphase.validation.experiments.run_simulation`'s
   streams and :func:`attnphase.validation.training.train`, Armijo GD, float64) from the random start;
2. computes the lowest eigenvalues of the Hessian of the training risk
   ``R(Q) = sum_mu (1 / 2d) |y^mu - f(X^mu)|^2 + (lambda / 2) |Q|_F^2`` (docs/model.md section 1) at
   the end point, by Lanczos (``scipy.sparse.linalg.eigsh``, ``which = "SA"``) on autograd
   Hessian-vector products, and counts the products (the cost of such a check);
3. where the lowest eigenvalue is negative (a saddle), restarts GD from ``Q + eps |Q| v``
   (``v`` its unit eigenvector, both signs) and records where it ends;
4. solves the state evolution (r = 1) from the GD overlaps (``init``) with the global, aligned and
   local proximal maps, and records the point each lands on.

Writes ``runs.csv`` (one row per run and restart) and ``summary.json`` (the SE landings) to ``--out``.
Seeds are those of ``attnphase simulate --seed`` (same teacher, data and random start).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

FIELDS = ("d", "alpha", "seed", "start", "m", "theta", "q", "e_t", "steps", "status", "grad_norm",
          "lam_min", "lam_2", "lam_3", "hvps", "hessian_seconds", "train_seconds")


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def lowest_hessian_eigs(Q: torch.Tensor, g, lam: float, k: int = 3) -> tuple[np.ndarray, np.ndarray, int, float]:
    """The ``k`` lowest eigenvalues of ``d^2 R / dQ^2`` (``Q`` is ``(d, 1)``), their eigenvectors, the
    number of Hessian-vector products Lanczos used and its wall time."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    from attnphase.validation.students import risk

    t0 = time.perf_counter()
    Qv = Q.detach().clone().requires_grad_(True)
    (G,) = torch.autograd.grad(risk(Qv, g, lam), Qv, create_graph=True)
    count = [0]

    def hvp(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        vt = torch.as_tensor(np.ascontiguousarray(v).reshape(Q.shape), dtype=Q.dtype)
        (Hv,) = torch.autograd.grad(G, Qv, grad_outputs=vt, retain_graph=True)
        return Hv.detach().reshape(-1).numpy()

    n = Q.numel()
    op = LinearOperator((n, n), matvec=hvp, dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(n)
    vals, vecs = eigsh(op, k=k, which="SA", tol=1e-10, v0=v0)
    order = np.argsort(vals)
    return vals[order], vecs[:, order], count[0], time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--ds", default="250,500,1000")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--eps", type=float, default=0.05, help="perturbation along the negative eigenvector, x |Q|")
    ap.add_argument("--no-se", action="store_true", help="skip the state-evolution solves")
    ap.add_argument("--quadrature", default=None, help="SE rule (default: the solver's default)")
    ap.add_argument("--out", default="docs/data/random_start_states")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    from attnphase.theory.params import ModelParams
    from attnphase.validation.data import make_teacher, n_samples, sample
    from attnphase.validation.experiments import generator
    from attnphase.validation.measure import overlaps, training_objective
    from attnphase.validation.students import prepare
    from attnphase.validation.training import TrainConfig, initial_Q, train

    params = ModelParams(omega=args.omega)
    cfg = TrainConfig()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    t_start = time.perf_counter()
    with open(out / "runs.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()

        def record(d, seed, start, Q, res, teacher, g, eig):
            ov = overlaps(Q, teacher)
            vals, _, hvps, hsec = eig
            row = {"d": d, "alpha": args.alpha, "seed": seed, "start": start, "m": ov.m, "theta": ov.theta,
                   "q": ov.q, "e_t": training_objective(Q, g, params.lam), "steps": res.steps, "status": res.status,
                   "grad_norm": res.grad_norm, "lam_min": vals[0], "lam_2": vals[1], "lam_3": vals[2],
                   "hvps": hvps, "hessian_seconds": round(hsec, 3), "train_seconds": round(res.seconds, 3)}
            writer.writerow(row)
            fh.flush()
            rows.append(row)
            print(json.dumps(row), flush=True)

        for d in (int(x) for x in _floats(args.ds)):
            for seed in range(args.seeds):
                teacher = make_teacher(params, d, generator(seed, "teacher"), device=torch.device("cpu"),
                                       dtype=torch.float64, exact_norm=True)
                g = prepare(teacher, sample(teacher, n_samples(args.alpha, d), generator(seed, "train")))
                Q0 = initial_Q("random", teacher, params.r, generator(seed, "init"), cfg.random_scale)
                res = train(Q0, g, params.lam, cfg)
                eig = lowest_hessian_eigs(res.Q, g, params.lam)
                record(d, seed, "random", res.Q, res, teacher, g, eig)
                if eig[0][0] < 0:
                    v = torch.as_tensor(eig[1][:, 0].reshape(res.Q.shape), dtype=res.Q.dtype)
                    scale = args.eps * float(torch.linalg.vector_norm(res.Q))
                    for sign, name in ((1.0, "escape+"), (-1.0, "escape-")):
                        res2 = train(res.Q + sign * scale * v, g, params.lam, cfg)
                        record(d, seed, name, res2.Q, res2, teacher, g, lowest_hessian_eigs(res2.Q, g, params.lam))

    summary: dict = {"alpha": args.alpha, "omega": args.omega, "eps": args.eps, "train": "Armijo GD, float64, "
                     "|grad R|/sqrt(d) <= 3e-7", "runs_seconds": round(time.perf_counter() - t_start, 1), "se": []}
    if not args.no_se:
        from attnphase.numerics import SolverConfig, solve
        from attnphase.numerics.se.overlaps import Overlaps

        base = {} if args.quadrature is None else {"quadrature": args.quadrature}
        ref = solve(params, args.alpha, "positional", config=SolverConfig(**base))
        V0 = ref.overlaps.V0
        ends = [r for r in rows if r["start"] == "random"]
        starts = {"gd_random_end_mean": (np.mean([abs(r["m"]) for r in ends]), np.mean([abs(r["theta"]) for r in ends]),
                                         np.mean([r["q"] for r in ends]))}
        for name, (m, th, q) in starts.items():
            init = Overlaps(q0=q, V0=V0, m=np.array([m, -m]), th0=th)
            for prox in ("global", "aligned", "local"):
                fp = solve(params, args.alpha, "positional", config=SolverConfig(prox=prox, **base), init=init)
                o = fp.overlaps
                summary["se"].append({"start": name, "start_m": m, "start_theta": th, "start_q": q, "start_V0": V0,
                                      "prox": prox, "converged": bool(fp.status.converged), "branch": fp.branch,
                                      "m": float(o.m[0]), "theta": float(o.th0), "q0": float(o.q0),
                                      "eps_g": float(fp.observables.eps_g), "e_t": float(fp.observables.e_t),
                                      "message": str(fp.status.message)})
                print(json.dumps(summary["se"][-1]), flush=True)
    summary["seconds"] = round(time.perf_counter() - t_start, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
