"""The test error against alpha at omega = 0.3: ERM's semantic and positional branches and the linear baseline
against the Bayes-optimal estimator, with AMP at finite d (docs/bayes-optimal.md, "Against ERM").

ERM: ``attnphase sweep`` of each branch (its default rule and error bars); Bayes-optimal: its informative branch
with error bars and thresholds (numerics/se/bayes_curve.py); AMP: runs of ``simulate --algorithm amp`` at
``--d`` over ``--seeds`` seeds per alpha, each run's |theta| mapped through the Bayes-optimal test error's formula
(eps_g at q0 = |theta|: the error of the posterior-mean predictor built on an estimate of that overlap; the mean and
standard error over seeds).  Writes ``bayes_vs_erm_omega0.3.{png,csv}`` into ``--out``.

    python studies/bayes_vs_erm.py --out docs/data/bayes_vs_erm            # ~3 min on 2 cores
    python studies/bayes_vs_erm.py --out docs/data/bayes_vs_erm --replot   # the figure again from its table
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
from attnphase.numerics.se.bayes import BayesModel, bayes_eps_g
from attnphase.numerics.se.bayes_curve import bayes_curve
from attnphase.numerics.se.observables import eps_lin
from attnphase.theory.params import ModelParams
from attnphase.validation.amp_run import AmpSpec, run_amp
from estimators_figure import plot_estimators_eps_g  # studies/estimators_figure.py

OMEGA = 0.3
ERM_ALPHAS = "0.2:2.4:12"
BO_ALPHAS = np.linspace(0.02, 2.4, 120)
AMP_ALPHAS = (0.2, 0.3, 0.4, 0.45, 0.6, 1.0)


def erm_branch(branch: str) -> tuple[list[float], list[float], list[float]]:
    """(alpha, eps_g, err_eps_g) of ``attnphase sweep`` on ``branch`` (rows on the branch only)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-m", "attnphase", "sweep", "--branch", branch, "--alpha", ERM_ALPHAS,
                              "--omega", str(OMEGA), "--out", tmp, "--json", "--quiet"], capture_output=True, text=True)
        if out.returncode not in (0, 3):
            raise RuntimeError(out.stderr)
        rows = [r for r in json.loads(out.stdout)["rows"] if not r["reason"]]
    return [r["alpha"] for r in rows], [r["eps_g"] for r in rows], [r["err_eps_g"] for r in rows]


def amp_points(params: ModelParams, d: int, seeds: int) -> tuple[list[float], list[float], list[float], list[dict]]:
    model = BayesModel.of(params)
    a_out, mean, se, runs = [], [], [], []
    for a in AMP_ALPHAS:
        eps = []
        for s in range(seeds):
            r = run_amp(AmpSpec(d=d, alpha=a, seed=s, params=params, device="cpu"))
            x = min(abs(r.theta), params.rho0)
            eps.append(bayes_eps_g(model, params.omega, x))
            runs.append({"alpha": a, "seed": s, "theta": r.theta, "q": r.q, "status": r.status, "se_q0": r.se_q0})
        a_out.append(a)
        mean.append(float(np.mean(eps)))
        se.append(float(np.std(eps, ddof=1) / math.sqrt(len(eps))))
    return a_out, mean, se, runs


def read_table(path: Path) -> tuple[dict, tuple, tuple]:
    """(erm, bo, amp) of the figure from the table a previous run wrote."""
    erm: dict[str, tuple[list, list, list]] = {}
    bo: tuple[list, list, list] = ([], [], [])
    amp: tuple[list, list, list] = ([], [], [])
    with open(path) as fh:
        for r in csv.DictReader(fh):
            key = r["estimator"]
            dest = erm.setdefault(r["branch"], ([], [], [])) if key == "erm" else bo if key == "bayes-optimal" else amp
            for lst, col in zip(dest, ("alpha", "eps_g", "err_eps_g")):
                lst.append(float(r[col]))
    return erm, bo, amp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--replot", action="store_true", help="redraw the figure from the table in --out")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    params = ModelParams(omega=OMEGA)
    model = BayesModel.of(params)
    thresholds = bayes_thresholds(model).as_dict()
    lin = eps_lin(params)
    table = out / f"bayes_vs_erm_omega{OMEGA:g}.csv"
    if args.replot:
        erm, bo, amp = read_table(table)
    else:
        erm = {br: erm_branch(br) for br in ("semantic", "positional")}
        pts = bayes_curve(model, OMEGA, BO_ALPHAS, ("informative",))
        bo = ([p.alpha for p in pts], [p.eps_g for p in pts], [p.err_eps_g for p in pts])
        *amp, runs = amp_points(params, args.d, args.seeds)
        with open(table, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["estimator", "branch", "alpha", "eps_g", "err_eps_g"])
            for br, (a, y, e) in erm.items():
                w.writerows(["erm", br, *row] for row in zip(a, y, e))
            w.writerows(["bayes-optimal", "informative", *row] for row in zip(*bo))
            w.writerows([f"amp_d{args.d}", f"mean of {args.seeds} seeds", *row] for row in zip(*amp))
        (out / "amp_runs.json").write_text(json.dumps(runs, indent=1))
    plot_estimators_eps_g(erm, lin, bo, thresholds, out / f"bayes_vs_erm_omega{OMEGA:g}.png",
                          title=rf"$\omega$ = {OMEGA:g}, L = 2, default model: ERM against Bayes-optimal", amp=amp,
                          amp_label=rf"AMP, $d$ = {args.d}: $\epsilon_g$ at its $|\theta|$ (mean $\pm$ s.e., {args.seeds} seeds)")
    wrote = ".png (from its .csv)" if args.replot else ".png, .csv, amp_runs.json"
    print(f"wrote {out}/bayes_vs_erm_omega{OMEGA:g}{wrote}; eps_lin = {lin:.6g}")


if __name__ == "__main__":
    main()
