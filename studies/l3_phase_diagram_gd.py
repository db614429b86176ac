"""Gradient descent on the L = 3 phase diagram across alpha_c, with the state-evolution points beside it.

    attnphase phase-diagram --L 3 --omega 0.1:0.4:4 --out docs/data/l3_phase_diagram
    OMP_NUM_THREADS=1 nice -n 10 python studies/l3_phase_diagram_gd.py --diagram docs/data/l3_phase_diagram \\
        --omega 0.2 --alphas 0.15,0.2,0.3,0.4,0.6,1 --out docs/data/l3_phase_diagram
    # the simplex P (p_l . p_k = -1/2):
    ... --P simplex --diagram docs/data/l3_simplex_phase_diagram --omega 0.3 ...

GD: for each alpha of ``--alphas``, each start (semantic, positional), each seed (``--seeds``) and each d of ``--d``
(default 500 and 1000: the second d gives the finite-d trend), one ``attnphase simulate --L 3`` run (its code,
:func:`~attnphase.validation.experiments.run_simulation`) to the default stopping rule, a gradient norm
|grad R|_F / sqrt(d) <= 3e-7; a run that stops on its step budget is reported (status ``budget``).  Its overlaps
|theta| = |Q.Q*|/d and |m| = (sum_l m_l^2)^{1/2}, m_l = p_l.Q/sqrt(d), name the point it reached (:func:`reached`).

Theory (``solve`` on the default rule, sobol10:4, each point with its standard error over the rule's scramblings),
at every alpha: the global-prox semantic and agnostic points (and the positional one with ``--global-positional``,
the default for the simplex P; with P = I the positional branch is absent at L = 3, mu < 1: docs/general.md), and
the aligned-prox point of each start (docs/model.md section 3: per sample the lowest minimiser on the side of the
student's mean field m + (th0/rho0) h*, the basin a start keeps; an aligned solve that misses its branch is retried
on the next scrambling, :func:`~attnphase.validation.rule_retry.solve_on_branch`).

Agreement (:func:`verdict`), per (alpha, start) and map (global: the start's branch where it exists, else the
agnostic point; aligned: the start's aligned point): at the largest d, with xbar the seeds' mean, se its standard
error and x_SE +- err the theory's point,

    |xbar(d2) - x_SE| <= 2 sqrt(se(d2)^2 + err^2) + |xbar(d2) - xbar(d1)|,

the last term the finite-d trend (under a + b/d what is left at d2 = 2 d1 equals the change from d1 to d2); the
observable is |theta| for a semantic target, |m| for a positional one, and eps_g for both; an agnostic target
agrees where the runs at d2 end agnostic (both overlaps under the threshold t) and eps_g passes the same test.

Writes, per omega, ``gd_runs_omega<w>.csv`` (one row per run, written as it finishes; a rerun skips the rows
there), ``gd_theory_omega<w>.csv`` (one row per alpha, map and requested branch), ``gd_agreement_omega<w>.csv``
and ``phase_diagram_gd_omega<w>.png``: (a) alpha_c(omega) with its bars from ``DIAGRAM/phase_diagram.csv`` and
the GD points of every omega in OUT at the last d (the verdicts'), coloured by the point reached; (b) the overlaps, (c) eps_g
and (d) e_t against alpha, the theory's points (lines) beside GD (markers, mean +- se over seeds; filled: first d,
open: second d).
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path
from statistics import mean, stdev

SIMPLEX = "1,-0.5,-0.5;-0.5,1,-0.5;-0.5,-0.5,1"
RUN_FIELDS = ("alpha", "init", "seed", "d", "theta", "m", "e_t", "eps_g", "steps", "status", "grad_norm",
              "cpu_seconds", "reached")
THEORY_FIELDS = ("alpha", "prox", "requested", "branch", "converged", "abs_theta", "m_norm", "e_t", "eps_g",
                 "err_abs_theta", "err_m_norm", "err_e_t", "err_eps_g", "residual", "quadrature", "message")
AGREE_FIELDS = ("alpha", "start", "map", "target", "observable", "gd_d1", "se_d1", "gd_d2", "se_d2", "se_value",
                "se_err", "allowed", "verdict")
COLOURS = {"semantic": "tab:blue", "positional": "tab:red", "agnostic": "tab:gray", "mixed": "tab:purple"}
STARTS = ("semantic", "positional")


def threshold(alpha: float, d: int, floor: float) -> float:
    """The overlap a run must exceed to count: ``floor`` or twice the finite-n noise of an overlap, 2/sqrt(n),
    n = alpha d, whichever is larger (at alpha = 0.15, d = 500 GD from the semantic start keeps |theta| = 0.11 where
    the theory's point is agnostic)."""
    return max(floor, 2.0 / math.sqrt(alpha * d))


def reached(theta: float, m: float, alpha: float, d: int, floor: float) -> str:
    """The point a run's overlaps name: semantic where |theta| > t >= |m|, positional where |m| > t >= |theta|, mixed
    where both exceed t = :func:`threshold`, agnostic where neither does."""
    t = threshold(alpha, d, floor)
    big_t, big_m = abs(theta) > t, abs(m) > t
    return "mixed" if big_t and big_m else "semantic" if big_t else "positional" if big_m else "agnostic"


def simulate(params, d: int, alpha: float, init: str, seed: int) -> dict:
    """One run of ``attnphase simulate`` at the default stopping rule."""
    from attnphase.validation.experiments import SimSpec, run_simulation
    r = run_simulation(SimSpec(d=d, alpha=alpha, init=init, seed=seed, params=params, device="cpu"))
    return dict(alpha=alpha, init=init, seed=seed, d=d, theta=abs(r.theta), m=r.m_norm, e_t=r.e_t, eps_g=r.eps_g,
                steps=r.steps, status=r.status, grad_norm=r.grad_norm, cpu_seconds=r.cpu_seconds)


def theory_point(params, alpha: float, prox: str, branch: str) -> dict:
    """The fixed point of ``branch`` at alpha with the ``prox`` map on the default rule, with its standard errors
    (aligned: retried on the next scrambling where the rule misses the branch)."""
    import numpy as np
    from attnphase.numerics import solve
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.errors.quadrature_error import fixed_point_error
    from attnphase.validation.rule_retry import solve_on_branch
    tries = 2 if prox == "aligned" else 1
    fp, cfg, _ = solve_on_branch(lambda c: solve(params, alpha, branch, config=c), SolverConfig(prox=prox), branch,
                                 tries=tries)
    ok, rec = bool(fp.status.converged), fp.record
    row = dict(alpha=alpha, prox=prox, requested=branch, branch=fp.branch, converged=ok,
               residual=fp.status.residual, quadrature=cfg.quadrature, message=fp.status.message)
    if not ok:
        return row
    m_norm = float(np.linalg.norm(np.asarray(fp.overlaps.m, dtype=float)))
    row.update(abs_theta=abs(float(rec["theta"])), m_norm=m_norm, e_t=float(rec["e_t"]), eps_g=float(rec["eps_g"]))
    err = fixed_point_error(fp, cfg)
    if err is not None:
        m1 = abs(float(rec["m"]))
        row.update(err_abs_theta=err.std["theta"], err_e_t=err.std["e_t"], err_eps_g=err.std["eps_g"],
                   err_m_norm=err.std["m"] * m_norm / m1 if m1 > 0 else 0.0)
    return row


def _f(x) -> float:
    return math.nan if x in (None, "", "nan") else float(x)


def _stats(xs: list[float]) -> tuple[float, float]:
    return (mean(xs), stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else math.nan) if xs else (math.nan, math.nan)


def target(theo: list[dict], alpha: float, prox: str, start: str) -> dict | None:
    """The theory point a start should land on under ``prox``: the start's branch where it converged there, else
    the point the start's solve reached (global: the agnostic point's own solve where the start's was not made)."""
    rows = {t["requested"]: t for t in theo if t["alpha"] == alpha and t["prox"] == prox}
    own = rows.get(start)
    if own and own["converged"] and own["branch"] == start:
        return own
    if prox == "global" or own is None or not own["converged"]:
        return rows.get("agnostic")
    return own


def verdict(runs: list[dict], theo: list[dict], alpha: float, start: str, ds: list[int], floor: float) -> list[dict]:
    """The agreement rows of one (alpha, start): each map, each observable (module doc)."""
    d1, d2 = ds[0], ds[-1]
    sel = {d: [r for r in runs if r["alpha"] == alpha and r["init"] == start and r["d"] == d] for d in ds}
    out = []
    for prox in ("global", "aligned"):
        tp = target(theo, alpha, prox, start)
        if tp is None or not tp["converged"]:
            out.append(dict(alpha=alpha, start=start, map=prox, target="none", observable="", verdict="no theory point"))
            continue
        kind = tp["branch"]
        obs = {"semantic": ["theta"], "positional": ["m"], "agnostic": []}.get(kind, []) + ["eps_g"]
        for o in obs:
            key = {"theta": "abs_theta", "m": "m_norm"}.get(o, o)
            (x1, s1), (x2, s2) = _stats([r[o] for r in sel[d1]]), _stats([r[o] for r in sel[d2]])
            val, err = tp[key], _f(tp.get(f"err_{key}"))
            allowed = 2 * math.hypot(s2 if math.isfinite(s2) else 0.0, err if math.isfinite(err) else 0.0) + abs(x2 - x1)
            ok = abs(x2 - val) <= allowed
            out.append(dict(alpha=alpha, start=start, map=prox, target=kind, observable=o, gd_d1=x1, se_d1=s1,
                            gd_d2=x2, se_d2=s2, se_value=val, se_err=err, allowed=allowed,
                            verdict="agrees" if ok else "disagrees"))
        if kind == "agnostic":
            labels = [reached(r["theta"], r["m"], alpha, d2, floor) for r in sel[d2]]
            n_ag = labels.count("agnostic")
            out.append(dict(alpha=alpha, start=start, map=prox, target=kind, observable="label",
                            verdict="agrees" if n_ag == len(labels) else f"disagrees ({n_ag}/{len(labels)} agnostic)"))
    return out


def figure(args, runs: list[dict], theo: list[dict], ds: list[int], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    ax, bx, cx, ex = axes.ravel()
    diagram = list(csv.DictReader(open(Path(args.diagram) / "phase_diagram.csv")))
    w = [float(r["omega"]) for r in diagram]
    for key, style, label in (("alpha_c", "ko-", "alpha_c"), ("semantic_end", "b--", "semantic end"),
                              ("positional_end", "r:", "positional end")):
        a = [_f(r.get(key)) for r in diagram]
        e = [_f(r.get(f"err_{key}")) for r in diagram]
        if any(math.isfinite(x) for x in a):
            ax.errorbar(a, w, xerr=[x if math.isfinite(x) else 0 for x in e], fmt=style, capsize=3, label=label, ms=4)
    for f in sorted(Path(args.out).glob("gd_runs_omega*.csv")):
        omega = float(f.stem.split("omega")[1])
        for r in csv.DictReader(open(f)):
            if int(r["d"]) != ds[-1]:  # the verdicts' d, whose threshold panel (b) draws
                continue
            a, th, m, mk = float(r["alpha"]), float(r["theta"]), float(r["m"]), "o" if r["init"] == "semantic" else "s"
            ax.scatter(a * (1 + 0.03 * (int(r["seed"]) - 1)), omega + (0.008 if mk == "o" else -0.008), marker=mk,
                       c=COLOURS[reached(th, m, a, ds[-1], args.threshold)], s=22, edgecolors="k", linewidths=0.3)
    for lab, c in COLOURS.items():
        ax.scatter([], [], c=c, marker="o", label=f"GD reached {lab}")
    ax.set_xscale("log")
    ax.set(xlabel="alpha", ylabel="omega")
    ax.set_title(f"(a) L = 3, P = {args.P}: alpha_c; GD at d = {ds[-1]} (o semantic, s positional start)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    on = [t for t in theo if t["converged"]]
    lines = (("global", "semantic", "abs_theta", "tab:blue", "-"), ("aligned", "semantic", "abs_theta", "tab:blue", "--"),
             ("global", "positional", "m_norm", "tab:red", "-"), ("aligned", "positional", "m_norm", "tab:red", "--"),
             ("global", "agnostic", None, "tab:gray", "-"))
    for prox, branch, key, c, ls in lines:
        pts = sorted((t["alpha"], t) for t in on if t["prox"] == prox and t["branch"] == branch == t["requested"])
        if not pts:
            continue
        a = [p[0] for p in pts]
        lab = f"{prox} SE {branch}"
        if key:
            bx.errorbar(a, [p[1][key] for p in pts], yerr=[_f(p[1].get(f"err_{key}")) for p in pts], fmt=ls, color=c,
                        marker="x", ms=4, lw=1.3, capsize=2, label=f"{lab} |{'theta' if key == 'abs_theta' else 'm'}|")
        for axx, k in ((cx, "eps_g"), (ex, "e_t")):
            axx.plot(a, [p[1][k] for p in pts], ls, color=c, marker="x", ms=4, lw=1.3, label=lab)
    for k, d in enumerate(ds):
        for start, o, c, mk in (("semantic", "theta", "tab:blue", "o"), ("positional", "m", "tab:red", "s")):
            for alpha in sorted({r["alpha"] for r in runs}):
                sel = [r for r in runs if r["alpha"] == alpha and r["init"] == start and r["d"] == d]
                if not sel:
                    continue
                x = alpha * (1 + 0.02 * (k - 0.5))
                face = c if k == 0 else "none"
                for axx, key in ((bx, o), (cx, "eps_g"), (ex, "e_t")):
                    y, s = _stats([r[key] for r in sel])
                    axx.errorbar([x], [y], yerr=[0 if not math.isfinite(s) else s], fmt=mk, mfc=face, mec=c,
                                 ecolor=c, ms=5, capsize=2)
        for axx in (bx, cx, ex):
            axx.errorbar([], [], fmt="o", mfc="k" if k == 0 else "none", mec="k", label=f"GD d = {d} (mean +- se)")
    alist = sorted({r["alpha"] for r in runs})
    bx.plot(alist, [threshold(a, ds[-1], args.threshold) for a in alist], "k:", lw=1, label=f"threshold t (d = {ds[-1]})")
    ac = [float(r["alpha_c"]) for r in diagram if abs(float(r["omega"]) - args.omega) < 1e-9]
    for axx, name, ylab in ((bx, "(b) |theta| (o: semantic start), |m| (s: positional start)", "overlap"),
                            (cx, "(c) test error eps_g", "eps_g"), (ex, "(d) training loss e_t", "e_t")):
        for a in ac:
            axx.axvline(a, color="k", lw=0.8, ls="-.")
        axx.set(xlabel="alpha", ylabel=ylab)
        axx.set_title(f"{name}; omega = {args.omega}, -.: alpha_c", fontsize=9)
        axx.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def markdown(runs: list[dict], theo: list[dict], agree: list[dict], alphas: list[float], ds: list[int],
             floor: float) -> str:
    """The docs' table: per (alpha, start) GD's overlap of the start's direction and eps_g (mean +- se at each d),
    the points the runs reached at the last d, the two maps' points and their verdicts."""
    d1, d2 = ds[0], ds[-1]
    head = (f"| alpha | start | GD overlap, d = {d1} / {d2} | GD eps_g, d = {d1} / {d2} | reached (d = {d2}) | "
            "global SE: point, overlap, eps_g | aligned SE: overlap, eps_g | global | aligned |")
    lines = [head, "|" + " --- |" * 9]
    for alpha in alphas:
        for start in STARTS:
            o = "theta" if start == "semantic" else "m"
            key = "abs_theta" if o == "theta" else "m_norm"
            cell = []
            for obs in (o, "eps_g"):
                parts = []
                for d in (d1, d2):
                    x, s = _stats([r[obs] for r in runs if r["alpha"] == alpha and r["init"] == start and r["d"] == d])
                    parts.append(f"{x:.4g} +- {s:.1g}" if obs != "eps_g" else f"{x:.3e}")
                cell.append(" / ".join(parts))
            labels = [reached(r["theta"], r["m"], alpha, d2, floor) for r in runs
                      if r["alpha"] == alpha and r["init"] == start and r["d"] == d2]
            lab = ", ".join(f"{labels.count(k)} {k}" for k in COLOURS if labels.count(k))
            g, a = target(theo, alpha, "global", start), target(theo, alpha, "aligned", start)
            gs = (f"{g['branch']}, {g[key] if g['branch'] != 'agnostic' else 0:.4g}, {g['eps_g']:.3e}"
                  if g and g["converged"] else "none")
            al = (f"{a['branch']} {a[key] if a['branch'] != 'agnostic' else 0:.4g}, {a['eps_g']:.3e}"
                  if a and a["converged"] else "none")
            verd = []
            for prox in ("global", "aligned"):
                vs = [v for v in agree if v["alpha"] == alpha and v["start"] == start and v["map"] == prox]
                bad = [v["observable"] or v["verdict"] for v in vs if v["verdict"] != "agrees"]
                verd.append("agrees" if vs and not bad else "no point" if not vs else "differs: " + ", ".join(bad))
            lines.append(f"| {alpha:g} | {start} | {cell[0]} | {cell[1]} | {lab} | {gs} | {al} | {verd[0]} | "
                         f"{verd[1]} |")
    return "\n".join(lines)


def _read_runs(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [dict(r, alpha=float(r["alpha"]), seed=int(r["seed"]), d=int(r["d"]), theta=float(r["theta"]),
                 m=float(r["m"]), e_t=float(r["e_t"]), eps_g=float(r["eps_g"])) for r in csv.DictReader(open(path))]


def _read_theory(path: Path) -> list[dict]:
    if not path.exists():
        return []
    nums = ("alpha", "abs_theta", "m_norm", "e_t", "eps_g", "residual")
    return [dict(t, converged=t["converged"] == "True", **{k: _f(t[k]) for k in nums}) for t in csv.DictReader(open(path))]


def _append(path: Path, fields: tuple[str, ...], row: dict) -> None:
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow(row)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--diagram", required=True, help="a phase-diagram output folder (its phase_diagram.csv)")
    ap.add_argument("--omega", type=float, default=0.2)
    ap.add_argument("--alphas", default="0.15,0.2,0.3,0.4,0.6,1")
    ap.add_argument("--P", default="identity", choices=("identity", "simplex"))
    ap.add_argument("--d", default="500,1000", help="dimensions, comma-separated (the last is the verdict's d)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--global-positional", choices=("auto", "yes", "no"), default="auto",
                    help="solve the global-prox positional point (auto: with the simplex P only)")
    ap.add_argument("--no-theory", action="store_true")
    ap.add_argument("--figure-only", action="store_true", help="redraw the figure and the verdicts from OUT's csv")
    ap.add_argument("--markdown", action="store_true", help="print the docs' table of the runs and the verdicts")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import numpy as np
    from attnphase.theory.params import ModelParams
    simplex = np.array([[float(x) for x in row.split(",")] for row in SIMPLEX.split(";")])
    params = ModelParams(L=3, omega=args.omega, **({"P": simplex} if args.P == "simplex" else {}))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = f"omega{args.omega:g}"
    runs_path, theo_path = out / f"gd_runs_{tag}.csv", out / f"gd_theory_{tag}.csv"
    alphas = [float(x) for x in args.alphas.split(",")]
    ds = [int(x) for x in args.d.split(",")]
    runs, theo = _read_runs(runs_path), _read_theory(theo_path)
    if not args.figure_only:
        done = {(r["alpha"], r["init"], r["seed"], r["d"]) for r in runs}
        for alpha in alphas:
            for d in ds:
                for init in STARTS:
                    for seed in range(args.seeds):
                        if (alpha, init, seed, d) in done:
                            continue
                        row = simulate(params, d, alpha, init, seed)
                        row["reached"] = reached(row["theta"], row["m"], alpha, d, args.threshold)
                        runs.append(row)
                        _append(runs_path, RUN_FIELDS, row)
                        print(f"GD alpha {alpha} d {d} {init} seed {seed}: |theta| {row['theta']:.3f} |m| "
                              f"{row['m']:.3f} e_t {row['e_t']:.5g} eps_g {row['eps_g']:.5g} {row['status']} "
                              f"(|grad| {row['grad_norm']:.2g}, {row['steps']} steps) -> {row['reached']}", flush=True)
        glob_pos = args.global_positional == "yes" or (args.global_positional == "auto" and args.P == "simplex")
        wanted = [("global", "semantic"), ("global", "agnostic")] + ([("global", "positional")] if glob_pos else []) \
            + [("aligned", "semantic"), ("aligned", "positional")]
        have = {(t["alpha"], t["prox"], t["requested"]) for t in theo}
        for alpha in alphas if not args.no_theory else []:
            for prox, branch in wanted:
                if (alpha, prox, branch) in have:
                    continue
                row = theory_point(params, alpha, prox, branch)
                theo.append(row)
                _append(theo_path, THEORY_FIELDS, row)
                print(f"SE alpha {alpha} {prox} {branch}: {row['branch']} converged {row['converged']} |theta| "
                      f"{row.get('abs_theta', math.nan):.4f} |m| {row.get('m_norm', math.nan):.4f} e_t "
                      f"{row.get('e_t', math.nan):.5g} eps_g {row.get('eps_g', math.nan):.5g}", flush=True)
    stopped = [r for r in runs if r["status"] != "converged"]
    for r in stopped:
        print(f"not at the gradient tolerance: alpha {r['alpha']} d {r['d']} {r['init']} seed {r['seed']}: "
              f"{r['status']}, |grad| {r['grad_norm']}")
    if theo:
        rows = [v for a in alphas for s in STARTS for v in verdict(runs, theo, a, s, ds, args.threshold)]
        with open(out / f"gd_agreement_{tag}.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=AGREE_FIELDS)
            w.writeheader()
            w.writerows(rows)
        for v in rows:
            print(f"alpha {v['alpha']} {v['start']} start, {v['map']} map -> {v['target']} {v['observable']}: "
                  f"{v['verdict']}" + (f" (GD {v['gd_d2']:.4g} +- {v['se_d2']:.2g} at d = {ds[-1]}, "
                                       f"{v['gd_d1']:.4g} at d = {ds[0]}; SE {v['se_value']:.4g})"
                                       if v.get("gd_d2") is not None else ""))
        if args.markdown:
            print(markdown(runs, theo, rows, alphas, ds, args.threshold))
    if Path(args.diagram, "phase_diagram.csv").exists():
        figure(args, runs, theo, ds, out / f"phase_diagram_gd_{tag}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
