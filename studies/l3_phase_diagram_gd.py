"""Gradient descent on the L = 3 phase diagram: which fixed point GD reaches around alpha_c, beside the theory.

    attnphase phase-diagram --L 3 --omega 0.1:0.4:4 --out docs/data/l3_phase_diagram
    python studies/l3_phase_diagram_gd.py --diagram docs/data/l3_phase_diagram --omega 0.2 \\
        --alphas 0.15,0.2,0.3,0.4,0.6,1 --out docs/data/l3_phase_diagram
    # the simplex P (p_l . p_k = -1/2):
    python studies/l3_phase_diagram_gd.py --P simplex --diagram docs/data/l3_simplex_phase_diagram ...

For each alpha of ``--alphas``, each start (semantic, positional) and each seed, one ``attnphase simulate --L 3``
run at d = ``--d`` to its gradient tolerance (the default, 3e-7); its overlaps theta = Q.Q*/d and |m| (the norm of
m_l = p_l.Q/sqrt(d)) name the point it reached: semantic where |theta| > t and |m| <= t, positional where |m| > t
and |theta| <= t, mixed where both exceed t, agnostic where neither does, with t = max(``--threshold``,
2/sqrt(alpha d)) (:func:`threshold`: the overlaps of a student fitted to n = alpha d samples carry O(n^-1/2)).  Beside each alpha the theory's fixed points (``solve`` on the default
rule: the semantic, positional and agnostic points where the solve lands on them) with e_t, |theta|, |m|.

Writes ``gd_runs.csv`` (one row per run), ``gd_theory.csv`` (one row per alpha and branch reached) and
``phase_diagram_gd.png``: (a) the tool's alpha_c(omega) with its error bars (and the branch ends) from
``DIAGRAM/phase_diagram.csv``, the GD points at (alpha, ``--omega``) coloured by the point reached; (b) e_t against
alpha at ``--omega``: the theory's points and every GD run.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

SIMPLEX = "1,-0.5,-0.5;-0.5,1,-0.5;-0.5,-0.5,1"
RUN_FIELDS = ("alpha", "init", "seed", "d", "theta", "m", "e_t", "eps_g", "steps", "status", "grad_norm", "reached")
THEORY_FIELDS = ("alpha", "requested", "branch", "converged", "theta", "m", "e_t", "eps_g", "residual")
COLOURS = {"semantic": "tab:blue", "positional": "tab:red", "agnostic": "tab:gray", "mixed": "tab:purple"}


def threshold(alpha: float, d: int, floor: float) -> float:
    """The overlap a run must exceed to count: ``floor`` or twice the finite-n noise of an overlap, 2/sqrt(n),
    n = alpha d, whichever is larger (at alpha = 0.15, d = 500 GD from the semantic start keeps |theta| = 0.11 where
    the theory's point is agnostic)."""
    return max(floor, 2.0 / math.sqrt(alpha * d))


def reached(theta: float, m: float, alpha: float, d: int, floor: float) -> str:
    """The fixed point a run's overlaps name (module doc)."""
    t = threshold(alpha, d, floor)
    big_t, big_m = abs(theta) > t, abs(m) > t
    return "mixed" if big_t and big_m else "semantic" if big_t else "positional" if big_m else "agnostic"


def simulate(params, args, alpha: float, init: str, seed: int) -> dict:
    """One run of ``attnphase simulate`` (its code, :func:`~attnphase.validation.experiments.run_simulation`) at the
    default stopping rule; |m| = (sum_l |m_l|^2)^{1/2}, |theta| = |Q.Q*|/d."""
    from attnphase.validation.experiments import SimSpec, run_simulation
    r = run_simulation(SimSpec(d=args.d, alpha=alpha, init=init, seed=seed, params=params, device="cpu"))
    return dict(alpha=alpha, init=init, seed=seed, d=args.d, theta=abs(r.theta), m=r.m_norm, e_t=r.e_t,
                eps_g=r.eps_g, steps=r.steps, status=r.status, grad_norm=r.grad_norm)


def theory(params, alpha: float) -> list[dict]:
    from attnphase.numerics import solve
    import numpy as np
    rows = []
    for branch in ("semantic", "positional", "agnostic"):
        fp = solve(params, alpha, branch)
        ov, ok = fp.overlaps, fp.status.converged
        rows.append(dict(alpha=alpha, requested=branch, branch=fp.branch, converged=ok,
                         theta=float(ov.th0) if ok else math.nan, m=float(np.linalg.norm(ov.m)) if ok else math.nan,
                         e_t=fp.observables.e_t if ok else math.nan, eps_g=fp.observables.eps_g if ok else math.nan,
                         residual=fp.status.residual))
    return rows


def figure(args, runs: list[dict], theo: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    diagram = list(csv.DictReader(open(Path(args.diagram) / "phase_diagram.csv")))
    fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(15, 4.3))
    w = [float(r["omega"]) for r in diagram]
    for key, style, label in (("alpha_c", "ko-", "alpha_c"), ("semantic_end", "b--", "semantic end"),
                              ("positional_end", "r:", "positional end")):
        a = [float(r[key]) if r.get(key) not in (None, "") else math.nan for r in diagram]
        e = [float(r.get(f"{key}_err") or "nan") for r in diagram]
        if any(math.isfinite(x) for x in a):
            ax.errorbar(a, w, xerr=[x if math.isfinite(x) else 0 for x in e], fmt=style, capsize=3, label=label, ms=4)
    for r in runs:
        mk = "o" if r["init"] == "semantic" else "s"
        ax.scatter(float(r["alpha"]) * (1 + 0.03 * (r["seed"] - 0.5)), args.omega + (0.008 if mk == "o" else -0.008),
                   marker=mk, c=COLOURS[r["reached"]], s=22, edgecolors="k", linewidths=0.3)
    for lab, c in COLOURS.items():
        ax.scatter([], [], c=c, marker="o", label=f"GD reached {lab}")
    ax.set_xscale("log")
    ax.set_xlabel("alpha")
    ax.set_ylabel("omega")
    ax.set_title(f"(a) L = 3, P = {args.P}: alpha_c; GD at d = {args.d} (o semantic, s positional start)", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    theory_on = [t for t in theo if t["converged"] and t["branch"] == t["requested"]]
    for branch, c in (("semantic", "tab:blue"), ("positional", "tab:red"), ("agnostic", "tab:gray")):
        pts = sorted((t["alpha"], t["e_t"], abs(float(t["theta"])), float(t["m"])) for t in theory_on
                     if t["branch"] == branch)
        if pts:
            a, e, th, m = zip(*pts)
            cx.plot(a, e, "-", color=c, lw=1.5, label=f"theory {branch}")
            if branch == "semantic":
                bx.plot(a, th, "-", color=c, lw=1.5, label="theory |theta| (semantic)")
            if branch == "positional":
                bx.plot(a, m, "-", color=c, lw=1.5, label="theory |m| (positional)")
    for r in runs:
        a, mk = float(r["alpha"]), "o" if r["init"] == "semantic" else "s"
        bx.scatter(a, float(r["theta"]), marker=mk, c="tab:blue", s=18, edgecolors="k", linewidths=0.3)
        bx.scatter(a, float(r["m"]), marker=mk, c="tab:red", s=18, edgecolors="k", linewidths=0.3)
        cx.scatter(a, float(r["e_t"]), marker=mk, c=COLOURS[r["reached"]], s=18, edgecolors="k", linewidths=0.3)
    alist = sorted({float(r["alpha"]) for r in runs})
    bx.plot(alist, [threshold(a, args.d, args.threshold) for a in alist], "k:", lw=1, label="label threshold t")
    bx.set_xlabel("alpha")
    bx.set_ylabel("overlap")
    bx.set_title(f"(b) omega = {args.omega}: GD |theta| (blue), |m| (red) against the theory", fontsize=9)
    bx.legend(fontsize=7)
    cx.set_xlabel("alpha")
    cx.set_ylabel("e_t")
    cx.set_title(f"(c) omega = {args.omega}: training loss, theory (lines) and GD (markers)", fontsize=9)
    cx.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--diagram", required=True, help="a phase-diagram output folder (its phase_diagram.csv)")
    ap.add_argument("--omega", type=float, default=0.2)
    ap.add_argument("--alphas", default="0.15,0.2,0.3,0.4,0.6,1")
    ap.add_argument("--P", default="identity", choices=("identity", "simplex"))
    ap.add_argument("--d", type=int, default=500)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--threshold", type=float, default=0.1)
    ap.add_argument("--no-theory", action="store_true")
    ap.add_argument("--figure-only", action="store_true", help="redraw the figure from OUT's gd_runs.csv, gd_theory.csv")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    import numpy as np
    from attnphase.theory.params import ModelParams
    simplex = np.array([[float(x) for x in row.split(",")] for row in SIMPLEX.split(";")])
    params = ModelParams(L=3, omega=args.omega, **({"P": simplex} if args.P == "simplex" else {}))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    alphas = [float(x) for x in args.alphas.split(",")]
    if args.figure_only:
        runs = [r | {"seed": int(r["seed"]), "reached": reached(float(r["theta"]), float(r["m"]), float(r["alpha"]),
                                                                  int(r["d"]), args.threshold)}
                for r in csv.DictReader(open(out / "gd_runs.csv"))]
        theo = [t | {"alpha": float(t["alpha"]), "e_t": float(t["e_t"]), "converged": t["converged"] == "True"}
                for t in csv.DictReader(open(out / "gd_theory.csv"))] if (out / "gd_theory.csv").exists() else []
        figure(args, runs, theo, out / "phase_diagram_gd.png")
        return 0
    runs = []
    with open(out / "gd_runs.csv", "w", newline="") as fh:  # a row per run as it finishes: a stopped job keeps them
        writer = csv.DictWriter(fh, fieldnames=RUN_FIELDS)
        writer.writeheader()
        for alpha in alphas:
            for init in ("semantic", "positional"):
                for seed in range(args.seeds):
                    row = simulate(params, args, alpha, init, seed)
                    row["reached"] = reached(row["theta"], row["m"], alpha, args.d, args.threshold)
                    runs.append(row)
                    writer.writerow(row)
                    fh.flush()
                    print(f"alpha {alpha} {init} seed {seed}: |theta| {row['theta']:.3f} |m| {row['m']:.3f} e_t "
                          f"{row['e_t']:.5g} {row['status']} -> {row['reached']}", flush=True)
    theo: list[dict] = []
    if not args.no_theory:
        for alpha in alphas:
            theo += theory(params, alpha)
        with open(out / "gd_theory.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=THEORY_FIELDS)
            w.writeheader()
            w.writerows(theo)
    if Path(args.diagram, "phase_diagram.csv").exists():
        figure(args, runs, theo, out / "phase_diagram_gd.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
