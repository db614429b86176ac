"""The AMP section of ``validate`` at its full plan, kept as a dataset (docs/bayes-optimal.md, "In validate";
docs/data/amp_validation/).

AMP (``simulate --algorithm amp``) at every (alpha, d, seed) of :func:`attnphase.validation.amp_validation.amp_plan`
on the default model (200 runs), against the Bayes-optimal state evolution's q0 on the branch AMP follows from its
small start (the uninformative one).  Per (alpha, d): the mean of |theta| = |Qhat . Q*| / d over the seeds, its standard
error err_mean_abs_theta = std / sqrt(n), q0 at alpha = n / d, z = (mean - q0) / max(err, THETA_RESOLUTION); per alpha the
finite-size fit a + b / d^p of the form the data choose and the verdict -- :func:`amp_rows` and :func:`amp_trends`,
recomputed here from the runs, so the tables follow the code's current rule.  Writes into ``--out``:

* ``amp_runs.csv``: every run (alpha, d, seed, theta, q, iterations, converged, status, se_q0, seconds);
* ``amp_validation.csv``: per (alpha, d) the means, ``err_mean_abs_theta``, q0, z, runs converged and near 0;
* ``amp_validation_fits.csv``: per alpha the finite-size fit (``fit_a`` with ``err_fit_a``, ``fit_b``, form, both
  chi^2) and the verdict;
* ``amp_validation.json``: the model, the plan, the rule's constants, the cost (wall and CPU seconds), where the runs
  come from and the command;
* ``amp_validation.png``: mean |theta| +- err against alpha, one marker per d, over the state evolution's q0(alpha).

    python studies/amp_validation_data.py --out docs/data/amp_validation        # the plan itself, ~560 CPU-s
    python studies/amp_validation_data.py --out docs/data/amp_validation --from RESULT.json
    python studies/amp_validation_data.py --out docs/data/amp_validation --replot    # from its amp_runs.csv

``--from``: the dict :func:`run_amp_plan` returns, saved as JSON (its ``plan`` must be the default plan's; its
``rows`` and ``trends`` are recomputed from its ``runs``); ``--replot``: the runs of ``--out``'s own
``amp_runs.csv`` (the cost from its ``amp_validation.json``).  One torch thread.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnphase.execution.dataset import csv_text
from attnphase.numerics.se.bayes import BayesModel
from attnphase.numerics.se.bayes_curve import bayes_curve
from attnphase.theory.params import ModelParams
from attnphase.validation.amp_validation import AGREE_Z, THETA_RESOLUTION, amp_plan, amp_rows, amp_trends, run_amp_plan
from attnphase.validation.finite_size import FIT_POWERS

RUN_COLUMNS = ("alpha", "d", "seed", "theta", "q", "iterations", "converged", "status", "se_q0", "seconds")
ROW_COLUMNS = ("alpha", "d", "n_runs", "mean_abs_theta", "err_mean_abs_theta", "std_abs_theta", "se_q0", "z", "converged",
               "near_zero")
FIT_COLUMNS = ("alpha", "se_q0", "d_max", "z_at_d_max", "fit_form", "fit_a", "err_fit_a", "fit_b", "fit_chi2",
               "fit_chi2_other", "verdict")
COMMAND = "python studies/amp_validation_data.py --out docs/data/amp_validation"


def saved_runs(out: Path) -> tuple[dict[str, Any], str]:
    """The plan's result as a previous call wrote it into ``out``: the runs of ``amp_runs.csv``, the cost and origin
    of ``amp_validation.json``."""
    types = {"alpha": float, "d": int, "seed": int, "theta": float, "q": float, "iterations": int,
             "converged": lambda v: bool(int(v)), "status": str, "se_q0": float, "seconds": float}
    with open(out / "amp_runs.csv") as fh:
        runs = [{k: types[k](v) for k, v in r.items()} for r in csv.DictReader(fh)]
    meta = json.loads((out / "amp_validation.json").read_text())
    return {"plan": meta["plan"], "runs": runs, "seconds": meta["seconds"], "cpu_seconds": meta["cpu_seconds"]}, \
        meta["runs_from"]


def plan_result(source: Path | None) -> tuple[dict[str, Any], str]:
    """The plan's result (:func:`run_amp_plan`'s dict) and where it comes from: read from ``source`` (checked to be
    the default plan's) or computed now."""
    plan = amp_plan(ModelParams())
    if source is None:
        say = (lambda line: print(line, file=sys.stderr, flush=True))
        return run_amp_plan(plan, say), "run_amp_plan(amp_plan(ModelParams())), run here"
    result = json.loads(source.read_text())
    if result["plan"] != json.loads(json.dumps(plan.to_dict())):
        raise SystemExit(f"{source}: its plan {result['plan']} is not the default plan {plan.to_dict()}")
    want = {(a, d, s) for a in plan.alphas for d in plan.ds_at(a) for s in plan.seeds}
    have = [(r["alpha"], r["d"], r["seed"]) for r in result["runs"]]
    if sorted(have) != sorted(want):
        raise SystemExit(f"{source}: {len(have)} runs, not the plan's {len(want)} (alpha, d, seed)")
    return result, "run_amp_plan(amp_plan(ModelParams())) saved as JSON (its runs; rows recomputed)"


def plot(rows: list[dict[str, Any]], params: ModelParams, path: Path) -> None:
    """Mean |theta| +- its standard error against alpha, one marker per d (offset a little in alpha to be seen), over the
    Bayes-optimal state evolution's q0(alpha) on the uninformative branch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    alphas = sorted({r["alpha"] for r in rows})
    grid = np.linspace(0.1, max(alphas) + 0.05, 121)
    curve = bayes_curve(BayesModel.of(params), params.omega, grid, branches=("uninformative",))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot([p.alpha for p in curve], [p.q0 for p in curve], "k-", lw=1.2,
            label="state evolution q0 (uninformative branch, d -> inf)")
    ds = sorted({r["d"] for r in rows})
    markers = "os^Dv*"
    for i, d in enumerate(ds):
        rs = [r for r in rows if r["d"] == d]
        shift = (i - (len(ds) - 1) / 2) * 0.004
        ax.errorbar([r["alpha"] + shift for r in rs], [r["mean_abs_theta"] for r in rs], yerr=[r["se"] for r in rs],
                    fmt=markers[i % len(markers)], ms=5, capsize=2, label=f"AMP, d = {d}")
    ax.set_xlabel("alpha = n / d")
    ax.set_ylabel("|theta| = |Qhat . Q*| / d")
    n = rows[0]["n"]
    ax.set_title(f"AMP at finite d against the Bayes-optimal state evolution (L = {params.L}, {n} seeds, mean +- se)",
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="a saved run_amp_plan result (JSON) instead of running the plan")
    ap.add_argument("--replot", action="store_true", help="the runs of --out's amp_runs.csv instead of running the plan")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    result, origin = saved_runs(args.out) if args.replot else plan_result(args.source)
    plan = amp_plan(ModelParams())
    rows = amp_rows(result["runs"])
    trends = amp_trends(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "amp_runs.csv").write_text(csv_text(result["runs"], RUN_COLUMNS))
    (args.out / "amp_validation.csv").write_text(csv_text(
        [dict(r, n_runs=r["n"], err_mean_abs_theta=r["se"], std_abs_theta=r["std"]) for r in rows], ROW_COLUMNS))
    (args.out / "amp_validation_fits.csv").write_text(csv_text([dict(t, err_fit_a=t["fit_a_se"]) for t in trends],
                                                               FIT_COLUMNS))
    meta = {"title": "AMP at finite d against the Bayes-optimal state evolution (validate's AMP section, full plan)",
            "command": COMMAND,
            "runs_from": origin, "model": plan.params.to_dict(), "plan": plan.to_dict(), "n_runs": len(result["runs"]),
            "seconds": result["seconds"], "cpu_seconds": result["cpu_seconds"], "agree_z": AGREE_Z,
            "theta_resolution": THETA_RESOLUTION, "fit_forms": list(FIT_POWERS.values()),
            "files": {"amp_runs.csv": "every run", "amp_validation.csv": "per (alpha, d): mean |theta| over the seeds, "
                      "err_mean_abs_theta its standard error, se_q0 the state evolution's q0 at n / d, "
                      "z = (mean - q0) / max(err, theta_resolution)", "amp_validation_fits.csv": "per alpha: the "
                      "finite-size fit a + b / d^p of the smaller chi^2 (err_fit_a: a's standard error) and the verdict",
                      "amp_validation.png": "mean |theta| +- err against alpha, one marker per d, over q0(alpha)"},
            "verdicts": {f"{t['alpha']:g}": t["verdict"] for t in trends}}
    (args.out / "amp_validation.json").write_text(json.dumps(meta, indent=1) + "\n")
    plot(rows, plan.params, args.out / "amp_validation.png")
    for t in trends:
        print(f"alpha = {t['alpha']:g}: q0 = {t['se_q0']:.4f}, z = {t['z_at_d_max']:+.2f} at d = {t['d_max']}, "
              f"{t['verdict']}")


if __name__ == "__main__":
    main()
