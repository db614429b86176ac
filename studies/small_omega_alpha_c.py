"""alpha_c at omega = 0 from gradient descent: where do GD's positional and semantic minima cross in e_t?

    nice -n 10 python studies/small_omega_alpha_c.py --refine --out docs/data/small_omega_alpha_c   # defaults below
    nice -n 10 python studies/small_omega_alpha_c.py --plan 500:4,1000:8,2000:8 --refine --out ...  # the docs' data
    python studies/small_omega_alpha_c.py --plan 500:2 --alphas 0.55,0.61 --fixed-plan "" --no-theory --out /tmp/x

The state evolution puts alpha_c(omega = 0) -- where the lowest training objective e_t changes from the
positional to the semantic fixed point -- at 0.6147 +- 1.8e-4; the paper reads 0.548 (docs/method.md
section 8). This study asks finite-d gradient descent. For each (d, alpha, seed) it trains the same
training set (one seed = one teacher, one training and one test set; attnphase.validation.experiments) from
the positional and from the semantic start (full-batch Armijo GD, float64, one torch thread, to
``|grad_Q R|_F / sqrt(d) <= 3e-7``: mode ``tol``) and records the paired difference

    Delta e_t = e_t(semantic start) - e_t(positional start),   e_t = R(Q) / d   (docs/model.md section 1),

with the test errors eps_g and the overlaps theta = Q.Q*/d, m = p_1.Q/sqrt(d) of both endpoints. GD's
alpha_c at one d is the root of the least-squares line through every seed's Delta e_t(alpha); its standard
error comes from a bootstrap over seeds (a seed's rows at every alpha resampled together: the training
set at a smaller alpha is a prefix of the one at a larger alpha). The roots are extrapolated linearly in
1/d. Mode ``fixed5000`` repeats some runs as the paper's GD did: a fixed number of steps (5000) of constant
step size ``--fixed-step`` (no line-search growth, ``grow = 1``), whatever the gradient then is.

The theory beside it: ``attnphase solve --omega 0 --alpha A --branch positional|semantic --prox
global|aligned --json`` at every alpha of the grid (e_t +- err_e_t on the solve rule); with ``--refine`` each
map's alpha_c with the diagram's Newton correction on sobol16:4. Writes into ``--out``: ``runs.csv`` (one row per
run, appended as runs finish; a rerun skips the rows present), ``theory.csv`` (likewise), ``refined.json``,
``summary.json`` and ``small_omega_alpha_c.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

FIELDS = ("mode", "d", "alpha", "seed", "init", "m", "theta", "q", "e_t", "eps_g", "eps_g_se", "steps", "status",
          "grad_norm", "cpu_seconds")
THEORY_FIELDS = ("alpha", "prox", "requested_branch", "branch", "converged", "q", "m", "theta", "e_t", "err_e_t",
                 "eps_g", "err_eps_g", "exit_code")
INITS = ("positional", "semantic")
PAPER_ALPHA_C, SE_ALPHA_C, SE_SEMANTIC_END = 0.548, 0.61471, 0.5098
BOOTSTRAP = 2000
#: The crossing pooled over the runs to 3e-7 at every d from this one up (summary key ``crossing_pooled``).
POOL_MIN_D = 1000


def _plan(text: str) -> list[tuple[int, int]]:
    """``"1000:8,2000:8"`` -> [(d, seeds), ...]."""
    return [(int(a), int(b)) for a, b in (item.split(":") for item in text.split(",") if item.strip())]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def train_config(mode: str, fixed_step: float):
    """``tol``: the project's default GD (Armijo, to 3e-7); ``fixed5000``: 5000 steps of constant size."""
    from attnphase.validation.training import TrainConfig

    if mode == "tol":
        return TrainConfig()
    return TrainConfig(step0=fixed_step, grow=1.0, max_steps=5000, grad_tol=1e-14)


def run_gd(out: Path, jobs: list[tuple[str, int, float, int, str]], fixed_step: float, max_seconds: float) -> None:
    """Run every job ``(mode, d, alpha, seed, init)`` not yet in ``runs.csv`` and append its row."""
    import torch

    from attnphase.theory.params import ModelParams
    from attnphase.validation.experiments import SimSpec, run_simulation

    torch.set_num_threads(1)
    path = out / "runs.csv"
    done = set()
    if path.exists():
        with open(path, newline="") as fh:
            done = {(r["mode"], int(r["d"]), float(r["alpha"]), int(r["seed"]), r["init"]) for r in csv.DictReader(fh)}
    new = not path.exists()
    params = ModelParams(omega=0.0)
    t0 = time.perf_counter()
    with open(path, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        for job in jobs:
            if job in done:
                continue
            if time.perf_counter() - t0 > max_seconds:
                print(f"stopping: --max-seconds {max_seconds:g} reached", file=sys.stderr)
                break
            mode, d, alpha, seed, init = job
            res = run_simulation(SimSpec(d=d, alpha=alpha, init=init, seed=seed, params=params,
                                         train=train_config(mode, fixed_step), device="cpu"))
            row = {"mode": mode, "d": d, "alpha": alpha, "seed": seed, "init": init, "m": res.m, "theta": res.theta,
                   "q": res.q, "e_t": res.e_t, "eps_g": res.eps_g, "eps_g_se": res.eps_g_se, "steps": res.steps,
                   "status": res.status, "grad_norm": res.grad_norm, "cpu_seconds": round(res.cpu_seconds, 2)}
            writer.writerow(row)
            fh.flush()
            print(json.dumps(row), flush=True)


def run_theory(out: Path, alphas: list[float]) -> None:
    """``attnphase solve --omega 0`` for both branches and both maps at every alpha; rows appended to
    ``theory.csv`` (the (alpha, map, branch) rows present are kept)."""
    exe = [sys.executable, "-m", "attnphase"]
    path = out / "theory.csv"
    done = {(float(r["alpha"]), r["prox"], r["requested_branch"]) for r in _read(path)} if path.exists() else set()
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=THEORY_FIELDS)
        if new:
            writer.writeheader()
        for alpha in alphas:
            for prox in ("global", "aligned"):
                for branch in INITS:
                    if (alpha, prox, branch) in done:
                        continue
                    cmd = exe + ["solve", "--omega", "0", "--alpha", repr(alpha), "--branch", branch, "--prox",
                                 prox, "--json", "--quiet"]
                    proc = subprocess.run(cmd, capture_output=True, text=True)
                    rec = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
                    row = {k: rec.get(k) for k in THEORY_FIELDS}
                    row.update(alpha=alpha, prox=prox, requested_branch=branch, exit_code=proc.returncode)
                    writer.writerow(row)
                    fh.flush()
                    print(json.dumps(row), flush=True)


def refined_crossings(out: Path, starts: dict[str, float]) -> None:
    """alpha_c of each map with e_t's E[M] on the diagram's finer rule (``alpha_c_quadrature``, sobol16:4, block by
    block for its error): Newton steps on Delta e_t from ``starts[prox]``, both branches solved cold at every step
    (``attnphase.numerics.phase.boundary_refinement.refine_alpha_c``; docs/method.md section 6). Into
    ``refined.json``."""
    from attnphase.numerics import SolverConfig, solve
    from attnphase.numerics.phase.boundary_refinement import refine_alpha_c
    from attnphase.numerics.phase.brackets import BranchLost
    from attnphase.theory.params import ModelParams

    params, result = ModelParams(omega=0.0), {}
    for prox, alpha_0 in starts.items():
        cfg = SolverConfig(prox=prox)

        def pair_at(alpha: float, cfg=cfg):
            pair = tuple(solve(params, alpha, b, config=cfg) for b in ("semantic", "positional"))
            for fp, b in zip(pair, ("semantic", "positional")):
                if fp.branch != b or not fp.status.converged:
                    raise BranchLost(f"{prox} {b} solve at alpha = {alpha:.4f} reached {fp.branch}")
            return pair

        t0 = time.process_time()
        try:
            alpha_c, note, err = refine_alpha_c(pair_at, alpha_0, cfg.alpha_c_quadrature, cfg)
        except BranchLost as exc:
            alpha_c, note, err = math.nan, str(exc), math.nan
        result[prox] = {"alpha_c": alpha_c, "alpha_c_se": err, "note": note, "start": alpha_0,
                        "rule": cfg.alpha_c_quadrature, "cpu_seconds": round(time.process_time() - t0, 1)}
        print(json.dumps({prox: result[prox]}), flush=True)
    (out / "refined.json").write_text(json.dumps(result, indent=1) + "\n")


def _read(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def paired(rows: list[dict], mode: str, d: int) -> dict[int, dict[float, dict[str, dict]]]:
    """seed -> alpha -> init -> row, for the seeds and alphas that have both starts."""
    table: dict[int, dict[float, dict[str, dict]]] = {}
    for r in rows:
        if r["mode"] == mode and int(r["d"]) == d:
            table.setdefault(int(r["seed"]), {}).setdefault(float(r["alpha"]), {})[r["init"]] = r
    return {s: {a: v for a, v in by_a.items() if len(v) == 2} for s, by_a in table.items()}


def line_root(points: list[tuple[float, float]]) -> float:
    """Root of the least-squares line through ``(alpha, Delta)`` points (nan when flat or too few)."""
    if len({a for a, _ in points}) < 2:
        return math.nan
    a, y = np.array(points).T
    slope, icpt = np.polyfit(a, y, 1)
    return float(-icpt / slope) if slope != 0 else math.nan


def crossing(table: dict, rng: np.random.Generator) -> tuple[float, float]:
    """GD's alpha_c (seed -> alpha -> init -> row) and its bootstrap standard error over seeds (module docstring)."""
    seeds = sorted(table)

    def pts(chosen):
        return [(a, float(v["semantic"]["e_t"]) - float(v["positional"]["e_t"])) for i in chosen
                for a, v in table[seeds[i]].items()]

    root = line_root(pts(range(len(seeds))))
    boots = [line_root(pts(rng.integers(0, len(seeds), len(seeds)))) for _ in range(BOOTSTRAP)] if len(seeds) > 1 else []
    boots = [b for b in boots if math.isfinite(b)]
    return root, (float(np.std(boots, ddof=1)) if len(boots) > 1 else math.nan)


def _mean_se(xs: list[float]) -> tuple[float, float]:
    arr = np.asarray(xs, dtype=float)
    return float(arr.mean()), (float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else math.nan)


def summarise(out: Path) -> dict:
    """Per (mode, d, alpha): means and standard errors over seeds; crossings; theory crossings."""
    rows = _read(out / "runs.csv")
    rng = np.random.default_rng(20261202)
    summary: dict = {"omega": 0.0, "paper_alpha_c": PAPER_ALPHA_C, "se_alpha_c": SE_ALPHA_C,
                     "se_semantic_end": SE_SEMANTIC_END, "groups": [], "crossings": [], "theory": []}
    for mode, d in sorted({(r["mode"], int(r["d"])) for r in rows}):
        table = paired(rows, mode, d)
        for alpha in sorted({a for by_a in table.values() for a in by_a}):
            pairs = [by_a[alpha] for by_a in table.values() if alpha in by_a]
            g = {"mode": mode, "d": d, "alpha": alpha, "n_seeds": len(pairs),
                 "all_converged": all(p[i]["status"] == "converged" for p in pairs for i in INITS)}
            g["delta_e_t"], g["delta_e_t_se"] = _mean_se([float(p["semantic"]["e_t"]) - float(p["positional"]["e_t"])
                                                          for p in pairs])
            g["delta_eps_g"], g["delta_eps_g_se"] = _mean_se([float(p["semantic"]["eps_g"])
                                                              - float(p["positional"]["eps_g"]) for p in pairs])
            for init in INITS:
                for key in ("e_t", "eps_g"):
                    g[f"{init}_{key}"], g[f"{init}_{key}_se"] = _mean_se([float(p[init][key]) for p in pairs])
                g[f"{init}_abs_theta"], g[f"{init}_abs_theta_se"] = _mean_se([abs(float(p[init]["theta"])) for p in pairs])
                g[f"{init}_abs_m"], g[f"{init}_abs_m_se"] = _mean_se([abs(float(p[init]["m"])) for p in pairs])
                g[f"{init}_max_grad_norm"] = max(float(p[init]["grad_norm"]) for p in pairs)
            summary["groups"].append(g)
        root, se = crossing(table, rng)
        summary["crossings"].append({"mode": mode, "d": d, "n_seeds": len(table), "alpha_c": root, "alpha_c_se": se})
    pool = [d for mode, d in {(r["mode"], int(r["d"])) for r in rows} if mode == "tol" and d >= POOL_MIN_D]
    if len(pool) > 1:
        table = {(d, s): by_a for d in pool for s, by_a in paired(rows, "tol", d).items()}
        root, se = crossing(table, rng)
        summary["crossing_pooled"] = {"ds": sorted(pool), "n_seeds": len(table), "alpha_c": root, "alpha_c_se": se,
                                      "note": "one line through every seed's Delta e_t(alpha) at these d"}
    tol_rows = {(int(r["d"]), float(r["alpha"]), int(r["seed"]), r["init"]): r for r in rows if r["mode"] == "tol"}
    for g in summary["groups"]:
        if g["mode"] == "tol":
            continue
        shifts = []
        for s, by_a in paired(rows, g["mode"], g["d"]).items():
            ref = [tol_rows.get((g["d"], g["alpha"], s, i)) for i in INITS]
            if g["alpha"] in by_a and all(ref):
                fixed = by_a[g["alpha"]]
                shifts.append((float(fixed["semantic"]["e_t"]) - float(fixed["positional"]["e_t"]))
                              - (float(ref[1]["e_t"]) - float(ref[0]["e_t"])))
        if shifts:
            g["delta_e_t_shift_vs_tol"], g["delta_e_t_shift_vs_tol_se"] = _mean_se(shifts)
    tol = [c for c in summary["crossings"] if c["mode"] == "tol" and math.isfinite(c["alpha_c_se"])]
    if len(tol) >= 2:
        fit = fit_in_inverse_d([c["d"] for c in tol], [c["alpha_c"] for c in tol], [c["alpha_c_se"] for c in tol])
        summary["extrapolation"] = {"model": "alpha_c(d) = a + b / d (weighted least squares)", **fit}
    summary["extrapolation_per_alpha"] = []
    for alpha in sorted({g["alpha"] for g in summary["groups"] if g["mode"] == "tol"}):
        gs = [g for g in summary["groups"] if g["mode"] == "tol" and g["alpha"] == alpha and g["n_seeds"] > 1]
        if len(gs) < 2:
            continue
        entry = {"alpha": alpha, "model": "x(d) = a + b / d over the d of this alpha (weighted least squares)"}
        for key in ("delta_e_t", "positional_e_t", "semantic_e_t", "positional_abs_m", "semantic_abs_theta",
                    "positional_eps_g", "semantic_eps_g"):
            entry[key] = fit_in_inverse_d([g["d"] for g in gs], [g[key] for g in gs], [g[f"{key}_se"] for g in gs])
        summary["extrapolation_per_alpha"].append(entry)
    if (out / "theory.csv").exists():
        theory = _read(out / "theory.csv")
        for prox in ("global", "aligned"):
            pts = {}
            for r in theory:
                if r["prox"] == prox and r["e_t"] not in ("", "None") and r["branch"] == r["requested_branch"]:
                    pts.setdefault(float(r["alpha"]), {})[r["branch"]] = (float(r["e_t"]), _num(r["err_e_t"]))
            deltas = [(a, v["semantic"][0] - v["positional"][0], math.hypot(v["semantic"][1], v["positional"][1]))
                      for a, v in sorted(pts.items()) if len(v) == 2]
            root, root_se = _interp_root(deltas)
            summary["theory"].append({"prox": prox, "delta_e_t": deltas, "alpha_c": root, "alpha_c_se": root_se,
                                      "note": "Delta e_t on the solve rule, linear between the grid points around "
                                              "its sign change; se from the two points' err_e_t"})
    if (out / "refined.json").exists():
        summary["refined"] = json.loads((out / "refined.json").read_text())
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    return summary


def fit_in_inverse_d(ds: list[int], ys: list[float], ses: list[float]) -> dict:
    """Weighted least-squares ``y(d) = a + b / d`` (weights ``1 / se^2``): ``a``, ``b`` and their standard errors."""
    x = 1.0 / np.asarray(ds, dtype=float)
    X = np.vstack([np.ones_like(x), x]).T
    w = 1.0 / np.square(np.asarray(ses, dtype=float))
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    coef = cov @ (X.T @ (w * np.asarray(ys, dtype=float)))
    return {"a": float(coef[0]), "a_se": float(math.sqrt(cov[0, 0])), "b": float(coef[1]),
            "b_se": float(math.sqrt(cov[1, 1])), "ds": [int(d) for d in ds]}


def _num(text: str) -> float:
    return float(text) if text not in ("", "None", None) else math.nan


def _interp_root(deltas: list[tuple[float, float, float]]) -> tuple[float, float]:
    """Where the theory's Delta e_t changes sign, linearly interpolated between the two grid points around it,
    and its error from theirs, ``(a1 - a0) hypot((1 - t) e0, t e1) / |y0 - y1|`` (nan, nan if it never does)."""
    for (a0, y0, e0), (a1, y1, e1) in zip(deltas, deltas[1:]):
        if y0 > 0 >= y1 or y0 < 0 <= y1:
            t = y0 / (y0 - y1)
            return a0 + (a1 - a0) * t, (a1 - a0) * math.hypot((1 - t) * e0, t * e1) / abs(y0 - y1)
    return math.nan, math.nan


def figure(out: Path, summary: dict) -> None:
    """Delta e_t(alpha) of GD per d and of the theory's two maps; the crossings against 1/d."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mode, style in (("tol", "-o"), ("fixed5000", "--s")):
        for d in sorted({g["d"] for g in summary["groups"] if g["mode"] == mode}):
            gs = [g for g in summary["groups"] if g["mode"] == mode and g["d"] == d]
            ax.errorbar([g["alpha"] for g in gs], [1e6 * g["delta_e_t"] for g in gs],
                        [1e6 * g["delta_e_t_se"] for g in gs], fmt=style, ms=4, capsize=2,
                        label=f"GD d = {d}" + (" (5000 fixed steps)" if mode != "tol" else ""))
    for th, colour in zip(summary["theory"], ("k", "grey")):
        if th["delta_e_t"]:
            a, y, e = np.array(th["delta_e_t"]).T
            ax.errorbar(a, 1e6 * y, 1e6 * np.nan_to_num(e), fmt=":", color=colour, capsize=2,
                        label=f"state evolution, {th['prox']} prox")
    ax.axhline(0, color="k", lw=0.5)
    ax.axvline(PAPER_ALPHA_C, color="r", lw=0.8, ls="--", label="paper 0.548")
    ax.axvline(SE_ALPHA_C, color="b", lw=0.8, ls="--", label="SE alpha_c 0.6147")
    ax.set_xlabel("alpha")
    ax.set_ylabel("e_t(semantic) - e_t(positional)  [1e-6]")
    ax.set_title("omega = 0: paired training-loss difference")
    ax.legend(fontsize=7)
    cs = [c for c in summary["crossings"] if math.isfinite(c["alpha_c"])]
    for mode, style in (("tol", "o"), ("fixed5000", "s")):
        sel = [c for c in cs if c["mode"] == mode]
        if sel:
            bx.errorbar([1000.0 / c["d"] for c in sel], [c["alpha_c"] for c in sel],
                        [np.nan_to_num(c["alpha_c_se"]) for c in sel], fmt=style, capsize=3,
                        label="GD to 3e-7" if mode == "tol" else "GD, 5000 fixed steps")
    ext = summary.get("extrapolation")
    if ext:
        xs = np.linspace(0, max(1.0 / c["d"] for c in cs), 20)
        bx.plot(1000 * xs, ext["a"] + ext["b"] * xs, "k:", label=f"a + b/d: a = {ext['a']:.3f} +- {ext['a_se']:.3f}")
    bx.axhline(PAPER_ALPHA_C, color="r", lw=0.8, ls="--", label="paper")
    bx.axhline(SE_ALPHA_C, color="b", lw=0.8, ls="--", label="SE (global prox)")
    refined = summary.get("refined", {}).get("aligned")
    for th in summary["theory"]:
        if th["prox"] == "aligned" and math.isfinite(th["alpha_c"]) and not refined:
            bx.axhspan(th["alpha_c"] - th["alpha_c_se"], th["alpha_c"] + th["alpha_c_se"], color="grey", alpha=0.3,
                       label="SE, aligned prox (solve rule)")
    if refined and math.isfinite(refined["alpha_c"]):
        bx.axhline(refined["alpha_c"], color="grey", lw=1.5, label=f"SE, aligned prox ({refined['alpha_c']:.4f})")

    bx.set_xlabel("1000 / d")
    bx.set_ylabel("GD alpha_c (root of Delta e_t)")
    bx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "small_omega_alpha_c.png", dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", default="500:4,1000:8,2000:8,4000:4", help="d:seeds,... for GD to 3e-7")
    ap.add_argument("--alphas", default="0.5,0.54,0.58,0.62,0.66")
    ap.add_argument("--theory-alphas", default="0.52,0.56",
                    help="alphas solved besides --alphas (where the aligned map's branches cross)")
    ap.add_argument("--fixed-plan", default="500:4", help="d:seeds,... for the 5000-fixed-step GD")
    ap.add_argument("--fixed-alphas", default="0.54,0.58,0.62")
    ap.add_argument("--fixed-step", type=float, default=0.2, help="the constant GD step of the fixed-step runs")
    ap.add_argument("--max-seconds", type=float, default=math.inf, help="start no new GD run after this")
    ap.add_argument("--no-theory", action="store_true", help="skip the attnphase solve runs")
    ap.add_argument("--refine", action="store_true",
                    help="also alpha_c of both maps with e_t on the finer rule (refined.json; a few CPU minutes)")
    ap.add_argument("--summarise-only", action="store_true", help="only re-read runs.csv/theory.csv")
    ap.add_argument("--out", default="docs/data/small_omega_alpha_c")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.summarise_only:
        alphas, fixed_alphas = _floats(args.alphas), _floats(args.fixed_alphas)
        jobs = [("tol", d, a, s, i) for d, n in _plan(args.plan) for s in range(n) for a in alphas for i in INITS]
        jobs += [("fixed5000", d, a, s, i) for d, n in _plan(args.fixed_plan) for s in range(n)
                 for a in fixed_alphas for i in INITS]
        jobs.sort(key=lambda job: job[1])  # by d (stable: at one d the runs to 3e-7 first), cheapest first
        run_gd(out, jobs, args.fixed_step, args.max_seconds)
        if not args.no_theory:
            run_theory(out, sorted(set(alphas) | set(_floats(args.theory_alphas))))
    if args.refine:
        refined_crossings(out, {"global": 0.60, "aligned": 0.54})
    summary = summarise(out)
    figure(out, summary)
    print(json.dumps({"crossings": summary["crossings"], "extrapolation": summary.get("extrapolation"),
                      "crossing_pooled": summary.get("crossing_pooled"),
                      "theory": [{k: t[k] for k in ("prox", "alpha_c", "alpha_c_se")} for t in summary["theory"]]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
