"""What gradient descent's random-start end points at omega = 0.3, alpha < 1 are.

    python studies/random_start_states.py                                # d = 250, 500, 1000, 4 seeds (~3 min)
    python studies/random_start_states.py --ds 250 --seeds 1 --no-se     # a quick look
    python studies/random_start_states.py --ds 2000 --no-se              # d = 2000 (~4 min)
    python studies/random_start_states.py --ds 500,1000 --omega 0.14 --alpha 1 --A "0.3,0.7;0.8,0.2" \
        --probe-init positional                                          # the second A, positional start
    python studies/random_start_states.py --aggregate                    # pool the runs: aggregate.json

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
   local proximal maps, and records the point each lands on;
5. runs the positional start on the same teacher and data (the paired reference) and gives the probed
   end's ``|cos|`` to that end and the e_t barrier on the straight path between them;
6. as a control that the Hessian check can find a saddle, takes it at ``Q = 0`` (seed 0 of each d), a
   critical point of R (every field vanishes) with negative curvature (``summary``'s ``saddle_controls``).

Times: one core shared with other jobs, float64, one torch thread. Writes ``runs_d<ds>.csv`` (one row
per run and restart) and ``summary_d<ds>.json`` (the SE landings) to ``--out``; ``--aggregate`` pools
the default model's runs per (d, start) into ``aggregate.json``.
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
          "lam_min", "lam_2", "lam_3", "hvps", "hessian_seconds", "train_seconds", "lam_min_full",
          "cos_to_positional_end", "barrier_to_positional_end")

#: Below this d the lowest eigenvalue is also taken from the full Hessian (d products), a check on Lanczos.
FULL_HESSIAN_MAX_D = 300


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def lowest_hessian_eigs(Q: torch.Tensor, g, lam: float, k: int = 3) -> tuple[np.ndarray, np.ndarray, int, float]:
    """The ``k`` lowest eigenvalues of ``d^2 R / dQ^2``, their eigenvectors, the number of Hessian-vector
    products Lanczos used and its wall time (:func:`risk_hessian.lowest_hessian_eigs`, studies/risk_hessian.py)."""
    from risk_hessian import lowest_hessian_eigs as lanczos

    e = lanczos(Q, g, lam, k=k)
    return e.values, e.vectors, e.products, e.seconds


def straight_path_barrier(Q: torch.Tensor, Q_pos: torch.Tensor, g, lam: float, points: int = 41) -> tuple[float, float]:
    """``|cos|`` between ``Q`` and ``Q_pos`` (the positional start's end on the same data), and the barrier of
    ``e_t = R / d`` on the straight path from ``s Q`` (``s`` the sign that aligns them: ``Q -> -Q`` symmetry) to
    ``Q_pos``: ``max_t e_t((1 - t) s Q + t Q_pos) - max(e_t(s Q), e_t(Q_pos))`` (> 0: the two ends are
    separated on that path)."""
    from attnphase.validation.students import risk

    dot = float((Q * Q_pos).sum())
    cos = abs(dot) / float(torch.linalg.vector_norm(Q) * torch.linalg.vector_norm(Q_pos))
    sQ = Q if dot >= 0 else -Q
    with torch.no_grad():
        path = [float(risk((1 - t) * sQ + t * Q_pos, g, lam)) / g.d for t in np.linspace(0.0, 1.0, points)]
    return cos, max(path) - max(path[0], path[-1])


def aggregate(rows: list[dict]) -> list[dict]:
    """Per (d, start): means and standard errors of |m|, |theta|, q, e_t and the lowest Hessian eigenvalue,
    how many ends are minima (lowest eigenvalue > 0), and the paired e_t(random) - e_t(positional)."""
    def mean_se(v: list[float]) -> tuple[float, float]:
        a = np.asarray(v, dtype=float)
        return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else math.nan

    groups = []
    for d in sorted({int(r["d"]) for r in rows}):
        at_d = [r for r in rows if int(r["d"]) == d]
        for start in ("positional", "random", "escape+", "escape-"):
            g = [r for r in at_d if r["start"] == start]
            if not g:
                continue
            e: dict = {"d": d, "start": start, "runs": len(g),
                       "converged": sum(r["status"] == "converged" for r in g),
                       "minima": sum(float(r["lam_min"]) > 0 for r in g)}
            for key, f in (("m", lambda r: abs(float(r["m"]))), ("theta", lambda r: abs(float(r["theta"]))),
                           ("q", lambda r: float(r["q"])), ("e_t", lambda r: float(r["e_t"])),
                           ("lam_min", lambda r: float(r["lam_min"])), ("steps", lambda r: float(r["steps"])),
                           ("hvps", lambda r: float(r["hvps"]))):
                e[key], e[key + "_se"] = mean_se([f(r) for r in g])
            if start == "random":
                pos = {int(r["seed"]): float(r["e_t"]) for r in at_d if r["start"] == "positional"}
                diff = [float(r["e_t"]) - pos[int(r["seed"])] for r in g if int(r["seed"]) in pos]
                if diff:
                    e["e_t_minus_positional"], e["e_t_minus_positional_se"] = mean_se(diff)
                    e["e_t_above_positional"] = sum(x > 0 for x in diff)
                bar = [float(r.get("barrier_to_positional_end", "nan") or "nan") for r in g]
                if bar and not any(math.isnan(b) for b in bar):
                    e["barrier"], e["barrier_se"] = mean_se(bar)
                    e["barrier_min"] = min(bar)
                    e["cos"], e["cos_se"] = mean_se([float(r["cos_to_positional_end"]) for r in g])
            groups.append(e)
    return groups


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--omega", type=float, default=0.3)
    ap.add_argument("--A", default=None, help='the teacher\'s A, rows separated by ";" (default: the paper\'s first)')
    ap.add_argument("--probe-init", default="random", choices=("random", "positional", "semantic"),
                    help="the start whose ends are probed (escaped from, SE-solved from); the positional start's "
                         "end is always run too as the paired reference")
    ap.add_argument("--ds", default="250,500,1000")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--eps", type=float, default=0.05, help="perturbation along the negative eigenvector, x |Q|")
    ap.add_argument("--no-se", action="store_true", help="skip the state-evolution solves")
    ap.add_argument("--quadrature", default=None, help="SE rule (default: the solver's default)")
    ap.add_argument("--out", default="docs/data/random_start_states")
    ap.add_argument("--aggregate", action="store_true",
                    help="only pool the default model's runs_d*.csv in --out into aggregate.json (per d and start)")
    args = ap.parse_args(argv)
    if args.aggregate:
        rows = []
        for path in sorted(Path(args.out).glob("runs_d*.csv")):
            with open(path) as fh:
                rows += list(csv.DictReader(fh))
        groups = aggregate(rows)
        (Path(args.out) / "aggregate.json").write_text(json.dumps(groups, indent=1))
        for e in groups:
            extra = (f"  e_t - positional {e['e_t_minus_positional']:+.6f} +- {e['e_t_minus_positional_se']:.6f}"
                     f" ({e['e_t_above_positional']}/{e['runs']} above)") if "e_t_minus_positional" in e else ""
            print(f"d={e['d']:5d} {e['start']:10s} minima {e['minima']}/{e['runs']}  |m| {e['m']:.3f}+-{e['m_se']:.3f}"
                  f"  |theta| {e['theta']:.3f}+-{e['theta_se']:.3f}  q {e['q']:.3f}"
                  f"  e_t {e['e_t']:.6f}+-{e['e_t_se']:.6f}"
                  f"  lam_min {e['lam_min']:.5f}+-{e['lam_min_se']:.5f}  hvps {e['hvps']:.0f}  steps {e['steps']:.0f}"
                  + extra + (f"  cos {e['cos']:.3f}  barrier {e['barrier']:.2e} (min {e['barrier_min']:.2e})"
                             if "barrier" in e else ""))
        return 0
    torch.set_num_threads(1)

    from attnphase.theory.params import ModelParams
    from attnphase.validation.data import make_teacher, n_samples, sample
    from attnphase.validation.experiments import generator
    from attnphase.validation.measure import overlaps, training_objective
    from attnphase.validation.students import prepare
    from attnphase.validation.training import TrainConfig, initial_Q, train
    from risk_hessian import full_hessian_min  # studies/risk_hessian.py

    from attnphase.theory.params import parse_matrix

    params = ModelParams(omega=args.omega, A=None if args.A is None else parse_matrix(args.A))
    cfg = TrainConfig()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    controls: list[dict] = []
    t_start = time.perf_counter()
    tag = "d" + "_".join(str(int(x)) for x in _floats(args.ds))
    if args.A is not None or args.omega != 0.3 or args.alpha != 0.5 or args.probe_init != "random":
        tag = f"omega{args.omega:g}_alpha{args.alpha:g}_{args.probe_init}" + ("_A2" if args.A else "") + "_" + tag
    with open(out / f"runs_{tag}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()

        def record(d, seed, start, Q, res, teacher, g, eig, Q_pos=None):
            ov = overlaps(Q, teacher)
            vals, _, hvps, hsec = eig
            row = {"d": d, "alpha": args.alpha, "seed": seed, "start": start, "m": ov.m, "theta": ov.theta,
                   "q": ov.q, "e_t": training_objective(Q, g, params.lam), "steps": res.steps, "status": res.status,
                   "grad_norm": res.grad_norm, "lam_min": vals[0], "lam_2": vals[1], "lam_3": vals[2],
                   "hvps": hvps, "hessian_seconds": round(hsec, 3), "train_seconds": round(res.seconds, 3),
                   "lam_min_full": full_hessian_min(Q, g, params.lam) if d <= FULL_HESSIAN_MAX_D else math.nan}
            row["cos_to_positional_end"], row["barrier_to_positional_end"] = (
                (math.nan, math.nan) if Q_pos is None else straight_path_barrier(Q, Q_pos, g, params.lam))
            writer.writerow(row)
            fh.flush()
            rows.append(row)
            print(json.dumps(row), flush=True)

        for d in (int(x) for x in _floats(args.ds)):
            for seed in range(args.seeds):
                teacher = make_teacher(params, d, generator(seed, "teacher"), device=torch.device("cpu"),
                                       dtype=torch.float64, exact_norm=True)
                g = prepare(teacher, sample(teacher, n_samples(args.alpha, d), generator(seed, "train")))
                if seed == 0:  # control: Q = 0 is a critical point (the fields vanish) and a saddle of R
                    Z = torch.zeros(d, params.r, dtype=torch.float64)
                    vals, _, hvps, _ = lowest_hessian_eigs(Z, g, params.lam)
                    controls.append({"d": d, "seed": seed, "point": "Q = 0", "lam_min": float(vals[0]), "hvps": hvps})
                    print(json.dumps(controls[-1]), flush=True)
                inits = ("positional",) + ((args.probe_init,) if args.probe_init != "positional" else ())
                Q_pos = None
                for init in inits:  # the positional start's end: the paired e_t reference
                    Q0 = initial_Q(init, teacher, params.r, generator(seed, "init"), cfg.random_scale)
                    res = train(Q0, g, params.lam, cfg)
                    eig = lowest_hessian_eigs(res.Q, g, params.lam)
                    record(d, seed, init, res.Q, res, teacher, g, eig, Q_pos)
                    Q_pos = res.Q if init == "positional" else Q_pos
                if eig[0][0] < 0:  # the probed start's end (the last of inits)
                    v = torch.as_tensor(eig[1][:, 0].reshape(res.Q.shape), dtype=res.Q.dtype)
                    scale = args.eps * float(torch.linalg.vector_norm(res.Q))
                    for sign, name in ((1.0, "escape+"), (-1.0, "escape-")):
                        res2 = train(res.Q + sign * scale * v, g, params.lam, cfg)
                        record(d, seed, name, res2.Q, res2, teacher, g, lowest_hessian_eigs(res2.Q, g, params.lam),
                               Q_pos)

    summary: dict = {"alpha": args.alpha, "omega": args.omega, "A": args.A, "probe_init": args.probe_init,
                     "eps": args.eps, "train": "Armijo GD, float64, |grad R|/sqrt(d) <= 3e-7",
                     "runs_seconds": round(time.perf_counter() - t_start, 1), "saddle_controls": controls, "se": []}
    if not args.no_se:
        from attnphase.numerics import SolverConfig, solve
        from attnphase.numerics.se.overlaps import Overlaps

        base = {} if args.quadrature is None else {"quadrature": args.quadrature}
        ref = solve(params, args.alpha, "positional", config=SolverConfig(**base))
        V0 = ref.overlaps.V0
        ends = [r for r in rows if r["start"] == args.probe_init]
        low = min(ends, key=lambda r: abs(r["m"]))  # the end farthest from the positional point
        # the gauge Q -> -Q: m > 0, theta keeps its sign relative to m
        mean = (float(np.mean([abs(r["m"]) for r in ends])),
                float(np.mean([math.copysign(r["theta"], r["theta"] * r["m"]) for r in ends])),
                float(np.mean([r["q"] for r in ends])))
        starts = {"gd_random_end_mean": mean + (V0,),
                  "gd_random_end_lowest_m": (abs(low["m"]), math.copysign(abs(low["theta"]), low["theta"] * low["m"]),
                                             low["q"], V0),
                  "gd_random_end_mean_V0/10": mean + (V0 / 10,)}
        for name, (m, th, q, V0) in starts.items():
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
    (out / f"summary_{tag}.json").write_text(json.dumps(summary, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
