"""Where gradient descent from the positional start ends at the paper's second A, and whether it survives d -> inf.

    nice -n 10 python studies/second_a_state.py --ds 500,1000,2000 --seeds 8        # runs (resumable, per d)
    nice -n 10 python studies/second_a_state.py --ds 4000 --seeds 8                 # d = 4000 (heavier)
    python studies/second_a_state.py --analyse                                      # classes, fits, figure
    python studies/second_a_state.py --random-start docs/data/random_start_states   # omega = 0.3 random-start fits

The model: L = 2, A = [[0.3, 0.7], [0.8, 0.2]], omega = 0.14, alpha = 1 (defaults; ``--A --omega --alpha``). For
each (d, seed), on the teacher and data of ``attnphase simulate --seed`` (float64, one torch thread):

1. gradient descent (:func:`attnphase.validation.training.train`, Armijo) from the positional start to
   ``|grad R|_F / sqrt(d) <= --grad-tol`` (3e-7), steps and final gradient norm recorded, a warning on stderr when a
   run stops on its step budget;
2. the three lowest eigenvalues of the Hessian of ``R(Q)`` there (studies/risk_hessian.py, Lanczos);
3. the same run continued to ``--long-tol`` (1e-9): if the end were a slowly converging transient, its overlaps
   would move (``shift = |Q_long - Q| / |Q|``);
4. gradient descent from the semantic start on the same data (the paired e_t of the other minimum);
5. with ``--hessian-pass semantic`` (a separate pass), the Hessian check at those semantic ends: the control, a
   minimum that every map lists as the global one; ``--hessian-pass positional`` repeats it at the positional ends
   with the direction of the softest mode (towards the teacher, the position, the norm) and R's curvature along
   Q* and p_1 (orthogonal to Q): the stiffness that holds theta and m at the end.

``--analyse`` classifies every end by its overlaps (|m|, |theta|) against the fixed points that the census finds
with each proximal map (``census_<prox>.json`` in ``--out``, from ``attnphase census --alpha 1 --omega 0.14 --A
"0.3,0.7;0.8,0.2" --prox <prox> --json``): the nearest point in the (|m|, |theta|) plane names the class, and an end
with both |m| and |theta| above ``--mixed-floor`` (0.05) is also flagged *mixed-looking*.  It fits against 1/d
(weighted least squares ``a + b / d`` over the per-d means, weights 1 / se^2): the mixed-looking fraction, mean |m|,
mean theta^2 (a finite-d fluctuation of a theta = 0 point has theta^2 ~ c / d, intercept 0), mean e_t and the mean
lowest Hessian eigenvalue (also against d^(-2/3), the scaling of a spectrum's edge); writes ``summary.json`` and
``second_a_state.png``.

``--random-start DIR`` applies the same fit to the lowest Hessian eigenvalue of the random- and positional-start ends
of ``studies/random_start_states.py`` (its ``runs_d*.csv`` in DIR: omega = 0.3, alpha = 0.5) and writes
``random_start_fit.json`` to ``--out``.
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

FIELDS = ("d", "alpha", "omega", "seed", "start", "m", "theta", "q", "e_t", "steps", "status", "grad_norm",
          "train_seconds", "lam_min", "lam_2", "lam_3", "hvps", "hessian_seconds",
          "m_long", "theta_long", "e_t_long", "steps_long", "status_long", "grad_norm_long", "shift_long")
PROXES = ("global", "local", "aligned")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def fit_inverse_d(d: list[float], y: list[float], se: list[float], power: float = 1.0) -> dict:
    """Weighted least squares ``y = a + b / d^power`` (weights ``1 / se^2``): ``a``, ``b``, their standard errors and
    the chi^2 per degree of freedom; with fewer than three points ``a``'s se is that of the exact line."""
    x = np.asarray(d, dtype=float) ** -power
    Y = np.asarray(y, dtype=float)
    s = np.asarray(se, dtype=float)
    s = np.where(np.isfinite(s) & (s > 0), s, np.nanmax(np.where(np.isfinite(s), s, 0.0)) or 1.0)
    W = 1.0 / s**2
    X = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(X.T @ (W[:, None] * X))
    a, b = cov @ (X.T @ (W * Y))
    dof = len(x) - 2
    chi2 = float(np.sum(W * (Y - a - b * x) ** 2))
    return {"a": float(a), "a_se": float(math.sqrt(cov[0, 0])), "b": float(b), "b_se": float(math.sqrt(cov[1, 1])),
            "chi2_per_dof": chi2 / dof if dof > 0 else math.nan, "points": len(x), "power": power}


def _mean_se(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=float)
    return float(a.mean()), (float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else math.nan)


# ----------------------------------------------------------------------------------------------- runs
def run(args: argparse.Namespace) -> int:
    import torch

    from attnphase.theory.params import ModelParams, parse_matrix
    from attnphase.validation.data import make_teacher, n_samples, sample
    from attnphase.validation.experiments import generator
    from risk_hessian import lowest_hessian_eigs
    from attnphase.validation.measure import overlaps, training_objective
    from attnphase.validation.students import prepare
    from attnphase.validation.training import TrainConfig, initial_Q, train

    torch.set_num_threads(1)
    params = ModelParams(omega=args.omega, A=parse_matrix(args.A))
    cfg = TrainConfig(grad_tol=args.grad_tol, max_steps=args.max_steps)
    cfg_long = TrainConfig(grad_tol=args.long_tol, max_steps=args.long_max_steps)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def warn_budget(d, seed, start, res, tol):
        if res.status != "converged":
            print(f"warning: d = {d}, seed {seed}, {start} start: stopped on its {res.status} after {res.steps} steps "
                  f"(|grad R|/sqrt(d) = {res.grad_norm:.2e} > {tol:.0e})", file=sys.stderr, flush=True)

    for d in _ints(args.ds):
        path = out / f"runs_d{d}.csv"
        done = set()
        if path.exists():
            with open(path) as fh:
                done = {(int(r["seed"]), r["start"]) for r in csv.DictReader(fh)}
        new = not path.exists()
        with open(path, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            if new:
                writer.writeheader()
            for seed in range(args.seeds):
                if {(seed, "positional"), (seed, "semantic")} <= done:
                    continue
                t0 = time.perf_counter()
                teacher = make_teacher(params, d, generator(seed, "teacher"), device=torch.device("cpu"),
                                       dtype=torch.float64, exact_norm=True)
                g = prepare(teacher, sample(teacher, n_samples(args.alpha, d), generator(seed, "train")))
                for start in ("positional", "semantic"):
                    if (seed, start) in done:
                        continue
                    res = train(initial_Q(start, teacher, 1, generator(seed, "init"), cfg.random_scale), g,
                                params.lam, cfg)
                    warn_budget(d, seed, start, res, args.grad_tol)
                    ov = overlaps(res.Q, teacher)
                    row = {"d": d, "alpha": args.alpha, "omega": args.omega, "seed": seed, "start": start,
                           "m": ov.m, "theta": ov.theta, "q": ov.q, "e_t": training_objective(res.Q, g, params.lam),
                           "steps": res.steps, "status": res.status, "grad_norm": res.grad_norm,
                           "train_seconds": round(res.seconds, 2)}
                    if start == "positional":
                        e = lowest_hessian_eigs(res.Q, g, params.lam, k=3)
                        row.update(lam_min=float(e.values[0]), lam_2=float(e.values[1]), lam_3=float(e.values[2]),
                                   hvps=e.products, hessian_seconds=round(e.seconds, 2))
                        res2 = train(res.Q, g, params.lam, cfg_long)
                        warn_budget(d, seed, "continued " + start, res2, args.long_tol)
                        ov2 = overlaps(res2.Q, teacher)
                        shift = float(torch.linalg.vector_norm(res2.Q - res.Q) / torch.linalg.vector_norm(res.Q))
                        row.update(m_long=ov2.m, theta_long=ov2.theta,
                                   e_t_long=training_objective(res2.Q, g, params.lam), steps_long=res2.steps,
                                   status_long=res2.status, grad_norm_long=res2.grad_norm, shift_long=shift)
                    writer.writerow(row)
                    fh.flush()
                    print(json.dumps(row), flush=True)
                print(f"d = {d}, seed {seed}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return 0


HESSIAN_FIELDS = ("d", "seed", "start", "m", "theta", "e_t", "steps", "status", "grad_norm", "lam_min", "lam_2",
                  "lam_3", "hvps", "v_teacher", "v_position", "v_radial", "curv_teacher", "curv_position")


def hessian_pass(args: argparse.Namespace) -> int:
    """The Hessian check again at the ends of ``--hessian-pass START`` (same data and start as the runs), with the
    direction of the softest mode ``v`` (unit eigenvector of the lowest eigenvalue): ``|v . Q*| / |Q*|`` (towards
    the teacher: theta), ``|v . p_1| / |p_1|`` (m) and ``|v . Q| / |Q|`` (the norm), and the curvature ``w^T H w``
    of R along the teacher's and the position's directions orthogonal to Q (``w`` unit: the stiffness that holds
    theta, resp. m, at the end), written to
    ``hessian_<start>_d<d>.csv``.  At the semantic ends it is the control: a minimum every map lists as the global
    one."""
    import torch

    from attnphase.theory.params import ModelParams, parse_matrix
    from attnphase.validation.data import make_teacher, n_samples, sample
    from attnphase.validation.experiments import generator
    from risk_hessian import lowest_hessian_eigs
    from attnphase.validation.measure import overlaps, training_objective
    from attnphase.validation.students import prepare, risk
    from attnphase.validation.training import TrainConfig, initial_Q, train

    torch.set_num_threads(1)
    params = ModelParams(omega=args.omega, A=parse_matrix(args.A))
    cfg = TrainConfig(grad_tol=args.grad_tol, max_steps=args.max_steps)
    out = Path(args.out)
    start = args.hessian_pass

    def cos(v: torch.Tensor, u: torch.Tensor) -> float:
        return abs(float((v * u).sum())) / float(torch.linalg.vector_norm(u))

    def curvature(Q: torch.Tensor, g, u: torch.Tensor) -> float:
        """``w^T H w`` for the unit ``w`` along ``u``'s part orthogonal to ``Q`` (the stiffness of R there)."""
        w = u - (u * Q).sum() / (Q * Q).sum() * Q
        w = (w / torch.linalg.vector_norm(w)).detach()
        Qv = Q.detach().clone().requires_grad_(True)
        (G,) = torch.autograd.grad(risk(Qv, g, params.lam), Qv, create_graph=True)
        (Hw,) = torch.autograd.grad(G, Qv, grad_outputs=w)
        return float((Hw * w).sum())

    for d in _ints(args.ds):
        path = out / f"hessian_{start}_d{d}.csv"
        done = set()
        if path.exists():
            with open(path) as fh:
                done = {int(r["seed"]) for r in csv.DictReader(fh)}
        new = not path.exists()
        with open(path, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=HESSIAN_FIELDS)
            if new:
                writer.writeheader()
            for seed in range(args.seeds):
                if seed in done:
                    continue
                teacher = make_teacher(params, d, generator(seed, "teacher"), device=torch.device("cpu"),
                                       dtype=torch.float64, exact_norm=True)
                g = prepare(teacher, sample(teacher, n_samples(args.alpha, d), generator(seed, "train")))
                res = train(initial_Q(start, teacher, 1, generator(seed, "init"), cfg.random_scale), g,
                            params.lam, cfg)
                e = lowest_hessian_eigs(res.Q, g, params.lam, k=3)
                v = torch.as_tensor(e.vectors[:, 0]).reshape(res.Q.shape)
                ov = overlaps(res.Q, teacher)
                row = {"d": d, "seed": seed, "start": start, "m": ov.m, "theta": ov.theta,
                       "e_t": training_objective(res.Q, g, params.lam), "steps": res.steps, "status": res.status,
                       "grad_norm": res.grad_norm, "lam_min": float(e.values[0]), "lam_2": float(e.values[1]),
                       "lam_3": float(e.values[2]), "hvps": e.products, "v_teacher": cos(v, teacher.Qstar),
                       "v_position": cos(v, teacher.positions[0].reshape(-1, 1)), "v_radial": cos(v, res.Q),
                       "curv_teacher": curvature(res.Q, g, teacher.Qstar),
                       "curv_position": curvature(res.Q, g, teacher.positions[0].reshape(-1, 1))}
                writer.writerow(row)
                fh.flush()
                print(json.dumps(row), flush=True)
    return 0


# ------------------------------------------------------------------------------------------- analysis
def census_points(out: Path) -> list[dict]:
    """Every fixed point of ``census_<prox>.json`` in ``out``: prox, label, |m|, |theta|, e_t (+- err), stable."""
    points = []
    for prox in PROXES:
        path = out / f"census_{prox}.json"
        if not path.exists():
            continue
        for p in json.loads(path.read_text())["fixed_points"]:
            points.append({"prox": prox, "label": p["branch"], "m": abs(float(p["m"])), "theta": abs(float(p["theta"])),
                           "e_t": float(p["e_t"]), "err_e_t": float(p.get("err_e_t", math.nan)),
                           "stable": p.get("stable")})
    return points


def classify(m: float, theta: float, points: list[dict], floor: float) -> tuple[str, float, bool]:
    """The label of the census point nearest to (|m|, |theta|) (its map in brackets), the distance to it, and
    whether the end is mixed-looking (|m| and |theta| both above ``floor``)."""
    best = min(points, key=lambda p: math.hypot(abs(m) - p["m"], abs(theta) - p["theta"]))
    dist = math.hypot(abs(m) - best["m"], abs(theta) - best["theta"])
    same = sorted({p["prox"] for p in points if math.hypot(p["m"] - best["m"], p["theta"] - best["theta"]) < 1e-3
                   and p["label"] == best["label"]})
    return f"{best['label']} ({', '.join(same)})", dist, abs(m) > floor and abs(theta) > floor


def read_runs(out: Path, pattern: str = "runs_d*.csv") -> list[dict]:
    rows = []
    for path in sorted(out.glob(pattern)):
        with open(path) as fh:
            rows += list(csv.DictReader(fh))
    return rows


def analyse(args: argparse.Namespace) -> int:
    out = Path(args.out)
    rows = read_runs(out)
    points = census_points(out)
    if not points:
        print(f"no census_<prox>.json in {out}: run the census first (module docstring)", file=sys.stderr)
        return 2
    pos = [r for r in rows if r["start"] == "positional"]
    sem = {(r["d"], r["seed"]): r for r in rows if r["start"] == "semantic"}
    per_d, ends = [], []
    for d in sorted({int(r["d"]) for r in pos}):
        at = [r for r in pos if int(r["d"]) == d]
        classes: dict[str, int] = {}
        mixed = []
        for r in at:
            cls, dist, mix = classify(float(r["m"]), float(r["theta"]), points, args.mixed_floor)
            cls_long, _, mix_long = classify(float(r["m_long"]), float(r["theta_long"]), points, args.mixed_floor)
            classes[cls] = classes.get(cls, 0) + 1
            mixed.append(mix)
            s = sem.get((r["d"], r["seed"]))
            ends.append({"d": d, "seed": int(r["seed"]), "m": abs(float(r["m"])), "theta": abs(float(r["theta"])),
                         "e_t": float(r["e_t"]), "status": r["status"], "steps": int(r["steps"]),
                         "grad_norm": float(r["grad_norm"]), "lam_min": float(r["lam_min"]), "class": cls,
                         "distance": dist, "mixed_looking": mix, "class_long": cls_long, "mixed_looking_long": mix_long,
                         "shift_long": float(r["shift_long"]), "status_long": r["status_long"],
                         "e_t_minus_semantic_end": float(r["e_t"]) - float(s["e_t"]) if s else math.nan,
                         "semantic_end_theta": abs(float(s["theta"])) if s else math.nan})
        e = [x for x in ends if x["d"] == d]
        frac = sum(mixed) / len(mixed)
        entry = {"d": d, "runs": len(at), "converged": sum(x["status"] == "converged" for x in e),
                 "minima": sum(x["lam_min"] > 0 for x in e), "classes": classes, "mixed_looking": sum(mixed),
                 "mixed_fraction": frac, "mixed_fraction_se": math.sqrt(max(frac * (1 - frac), 0.25 / len(at)) / len(at)),
                 "mixed_looking_after_long_run": sum(x["mixed_looking_long"] for x in e),
                 "max_shift_long": max(x["shift_long"] for x in e), "max_steps": max(x["steps"] for x in e)}
        for key, f in (("m", lambda x: x["m"]), ("theta", lambda x: x["theta"]), ("theta2", lambda x: x["theta"] ** 2),
                       ("e_t", lambda x: x["e_t"]), ("lam_min", lambda x: x["lam_min"]),
                       ("e_t_minus_semantic_end", lambda x: x["e_t_minus_semantic_end"]),
                       ("semantic_end_theta", lambda x: x["semantic_end_theta"])):
            vals = [f(x) for x in e if not math.isnan(f(x))]
            entry[key], entry[key + "_se"] = _mean_se(vals) if vals else (math.nan, math.nan)
        entry["theta_rms_sqrt_d"] = math.sqrt(entry["theta2"] * d)
        mix_ends = [x for x in e if x["mixed_looking"]]
        for key in ("m", "theta", "e_t"):  # the mixed-looking ends alone
            entry["mixed_" + key] = float(np.mean([x[key] for x in mix_ends])) if mix_ends else math.nan
        control = read_runs(out, f"hessian_semantic_d{d}.csv")
        if control:
            entry["semantic_lam_min"], entry["semantic_lam_min_se"] = _mean_se([float(r["lam_min"]) for r in control])
            entry["semantic_ends"] = len(control)
            entry["semantic_v_teacher"] = float(np.mean([float(r["v_teacher"]) for r in control]))
        soft = read_runs(out, f"hessian_positional_d{d}.csv")
        if soft:  # the softest mode's direction at the positional ends
            for key in ("v_teacher", "v_position", "v_radial", "curv_teacher", "curv_position"):
                vals = [float(r[key]) for r in soft if r.get(key) not in (None, "")]
                if vals:
                    entry[key], entry[key + "_se"] = _mean_se(vals)
            entry["soft_mode_ends"] = len(soft)
        per_d.append(entry)
    ds = [e["d"] for e in per_d]
    fits = {key: fit_inverse_d(ds, [e[key] for e in per_d], [e[key + "_se"] for e in per_d])
            for key in ("mixed_fraction", "m", "theta2", "e_t", "lam_min", "e_t_minus_semantic_end")}
    sem_d = [e for e in per_d if "semantic_lam_min" in e]
    if len(sem_d) >= 2:
        for power, name in ((1.0, "semantic_lam_min"), (2 / 3, "semantic_lam_min_vs_d^-2/3")):
            fits[name] = fit_inverse_d([e["d"] for e in sem_d], [e["semantic_lam_min"] for e in sem_d],
                                       [e["semantic_lam_min_se"] for e in sem_d], power=power)
    # a spectrum's lowest eigenvalue nears its bulk edge as d^(-2/3): the same fit in that variable
    fits["lam_min_vs_d^-2/3"] = fit_inverse_d(ds, [e["lam_min"] for e in per_d], [e["lam_min_se"] for e in per_d],
                                              power=2 / 3)
    summary = {"model": {"omega": args.omega, "alpha": args.alpha, "A": args.A, "start": "positional"},
               "train": f"Armijo GD, float64, |grad R|/sqrt(d) <= {args.grad_tol:g}, continued to {args.long_tol:g}",
               "mixed_floor": args.mixed_floor, "census_points": points, "per_d": per_d, "fits_vs_1_over_d": fits,
               "ends": ends}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    for p in points:
        print(f"census {p['prox']:8s} {p['label']:10s} |m| {p['m']:.4f} |theta| {p['theta']:.4f} e_t {p['e_t']:.7f}"
              f" +- {p['err_e_t']:.1e} stable {p['stable']}")
    for e in per_d:
        print(f"d = {e['d']:5d}: {e['runs']} runs ({e['converged']} converged, {e['minima']} minima, <= {e['max_steps']}"
              f" steps) {e['classes']} mixed-looking {e['mixed_looking']} (after the long run "
              f"{e['mixed_looking_after_long_run']}, max shift {e['max_shift_long']:.1e}) |m| {e['m']:.4f}+-{e['m_se']:.4f}"
              f" |theta| {e['theta']:.4f} rms*sqrt(d) {e['theta_rms_sqrt_d']:.2f} e_t {e['e_t']:.6f}+-{e['e_t_se']:.6f}"
              f" lam_min {e['lam_min']:.5f}+-{e['lam_min_se']:.5f} e_t - semantic end "
              f"{e['e_t_minus_semantic_end']:+.6f}+-{e['e_t_minus_semantic_end_se']:.6f}"
              + (f" soft mode . Q* {e['v_teacher']:.2f} . p_1 {e['v_position']:.2f} . Q {e['v_radial']:.2f}"
                 if "v_teacher" in e else "")
              + (f" curvature along Q* {e['curv_teacher']:.5f}+-{e['curv_teacher_se']:.5f} along p_1 "
                 f"{e['curv_position']:.5f}+-{e['curv_position_se']:.5f}" if "curv_teacher" in e else "")
              + (f" semantic ends' lam_min {e['semantic_lam_min']:.5f}+-{e['semantic_lam_min_se']:.5f}"
                 f" ({e['semantic_ends']})" if "semantic_lam_min" in e else ""))
    for key, f in fits.items():
        print(f"fit {key:24s} a = {f['a']:+.6g} +- {f['a_se']:.2g}  b = {f['b']:+.4g} +- {f['b_se']:.2g}"
              f"  chi2/dof {f['chi2_per_dof']:.2f}")
    figure(out / "second_a_state.png", summary)
    return 0


def figure(path: Path, summary: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_d, ends, fits, points = summary["per_d"], summary["ends"], summary["fits_vs_1_over_d"], summary["census_points"]
    fig, ax = plt.subplots(2, 2, figsize=(10, 8))
    a = ax[0, 0]
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(per_d)))
    for c, e in zip(colors, per_d):
        sel = [x for x in ends if x["d"] == e["d"]]
        a.scatter([x["m"] for x in sel], [x["theta"] for x in sel], color=c, s=18, label=f"GD ends, d = {e['d']}")
    markers = {"global": "s", "local": "^", "aligned": "D"}
    named: dict = {}
    for p in points:
        a.scatter([p["m"]], [p["theta"]], marker=markers[p["prox"]], facecolors="none", edgecolors="k", s=70)
        named.setdefault((p["label"], round(p["m"], 3), round(p["theta"], 3)), []).append(p["prox"])
    for (label, m, th), proxes in named.items():
        a.annotate(f"{label} ({', '.join(proxes)})", (m, th), fontsize=7, xytext=(4, 4), textcoords="offset points")
    floor = summary["mixed_floor"]
    a.axhline(floor, color="0.6", lw=0.8, ls=":")
    a.axvline(floor, color="0.6", lw=0.8, ls=":")
    a.set_xlabel("|m|")
    a.set_ylabel("|theta|")
    a.set_title("positional-start ends and the census' fixed points\n(square global, triangle local, diamond aligned)",
                fontsize=9)
    a.legend(fontsize=7)

    def panel(a, key, label, scale=1.0, refs=(), fit_key=None, name=""):
        sel = [e for e in per_d if key in e]
        x = np.array([1.0 / e["d"] for e in sel])
        line = a.errorbar(x, [e[key] * scale for e in sel], yerr=[e[key + "_se"] * scale for e in sel], fmt="o",
                          ms=4, label=name or None)
        f = fits[fit_key or key]
        xx = np.linspace(0, x.max() * 1.05, 50)
        a.plot(xx, (f["a"] + f["b"] * xx) * scale, "-", lw=1, color=line[0].get_color(),
               label=f"{name + ': ' if name else ''}a + b/d, a = {f['a'] * scale:.4g} +- {f['a_se'] * scale:.2g}")
        for value, name in refs:
            a.axhline(value * scale, ls="--", lw=0.8, color="0.4")
            a.annotate(name, (0, value * scale), fontsize=7, xytext=(2, 2), textcoords="offset points")
        a.set_xlabel("1 / d")
        a.set_ylabel(label)
        a.legend(fontsize=7)

    def e_t(label, prox):
        return [p["e_t"] for p in points if p["label"] == label and p["prox"] == prox][:1]

    panel(ax[0, 1], "theta2", "mean theta^2 (x 1e3)", 1e3)
    ax[0, 1].set_title("theta^2 ~ c/d: a fluctuation of a theta = 0 point", fontsize=9)
    sem = e_t("semantic", "global")
    refs = [(e_t(lab, prox)[0] - sem[0], f"SE: {lab} ({prox}) - semantic") for lab, prox in
            (("positional", "aligned"), ("agnostic", "global")) if e_t(lab, prox) and sem]
    panel(ax[1, 0], "e_t_minus_semantic_end", "e_t(positional end) - e_t(semantic end) (x 1e3)", 1e3,
          refs=refs)
    panel(ax[1, 1], "lam_min", "lowest Hessian eigenvalue (x 1e3)", 1e3, name="positional ends")
    if "semantic_lam_min" in fits:
        panel(ax[1, 1], "semantic_lam_min", "lowest Hessian eigenvalue (x 1e3)", 1e3,
              name="semantic ends (control)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------ random-start ends
def random_start(args: argparse.Namespace) -> int:
    rows = [r for r in read_runs(Path(args.random_start)) if float(r["alpha"]) == 0.5]
    result = {"source": args.random_start, "model": "omega = 0.3, alpha = 0.5, default A", "starts": {}}
    for start in ("positional", "random"):
        g = [r for r in rows if r["start"] == start and r["status"] == "converged"]
        ds = sorted({int(r["d"]) for r in g})
        per = []
        for d in ds:
            lam = [float(r["lam_min"]) for r in g if int(r["d"]) == d]
            mean, se = _mean_se(lam)
            per.append({"d": d, "runs": len(lam), "lam_min": mean, "lam_min_se": se, "min": min(lam)})
        fit = fit_inverse_d(ds, [p["lam_min"] for p in per], [p["lam_min_se"] for p in per])
        fit23 = fit_inverse_d(ds, [p["lam_min"] for p in per], [p["lam_min_se"] for p in per], power=2 / 3)
        result["starts"][start] = {"per_d": per, "fit_lam_min_vs_1_over_d": fit, "fit_lam_min_vs_d^-2/3": fit23}
        for p in per:
            print(f"{start:10s} d = {p['d']:5d} ({p['runs']} ends) lam_min {p['lam_min']:.5f} +- {p['lam_min_se']:.5f}"
                  f" (lowest {p['min']:.5f})")
        for name, f in (("a + b/d", fit), ("a + b/d^(2/3)", fit23)):
            print(f"{start:10s} fit {name}: a = {f['a']:+.5f} +- {f['a_se']:.5f}, b = {f['b']:+.3f} +- "
                  f"{f['b_se']:.3f}, chi2/dof {f['chi2_per_dof']:.2f}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "random_start_fit.json").write_text(json.dumps(result, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--omega", type=float, default=0.14)
    ap.add_argument("--A", default="0.3,0.7;0.8,0.2", help='the teacher\'s A, rows separated by ";"')
    ap.add_argument("--ds", default="500,1000,2000")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--grad-tol", type=float, default=3e-7)
    ap.add_argument("--max-steps", type=int, default=20000)
    ap.add_argument("--long-tol", type=float, default=1e-9, help="tolerance of the continued run")
    ap.add_argument("--long-max-steps", type=int, default=50000)
    ap.add_argument("--mixed-floor", type=float, default=0.05, help="|m| and |theta| above it: mixed-looking")
    ap.add_argument("--out", default="docs/data/second_a_state")
    ap.add_argument("--analyse", action="store_true", help="classify and fit the runs in --out (no training)")
    ap.add_argument("--hessian-pass", choices=("positional", "semantic"), default=None,
                    help="the Hessian check again at that start's ends, with the softest mode's direction (semantic: "
                         "the control, the global minimum)")
    ap.add_argument("--random-start", metavar="DIR", default=None,
                    help="fit the lowest Hessian eigenvalue of random_start_states.py's ends in DIR against 1/d")
    args = ap.parse_args(argv)
    if args.random_start:
        return random_start(args)
    if args.analyse:
        return analyse(args)
    if args.hessian_pass:
        return hessian_pass(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
