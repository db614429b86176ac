"""Re-measure the per-task CPU costs of ``attnphase/workload.py`` (the constants its estimates are made from).

    nice -n 10 .venv/bin/python benchmarks/workload_calibration.py            # simulations, histogram, one solve
    nice -n 10 .venv/bin/python benchmarks/workload_calibration.py --only sim --json

Every time is CPU seconds of this process (``time.process_time``: every thread of it, so a busy machine hardly
moves it), with one torch thread (``--threads``), as a ``validate``/``histogram`` task runs on one worker.  It prints each
measurement and the fitted constants:

* a gradient-descent simulation (``attnphase.validation.experiments.run_simulation``) at a few (d, alpha), three
  starts each: least squares of ``cpu = SIMULATION_FIXED_SECONDS + SIMULATION_SECONDS_D1000_ALPHA2 * (alpha / 2)
  * (d / 1000)^2`` (the same law as :func:`attnphase.workload.simulation_seconds`);
* a histogram experiment (``run_experiment``) at the quick configuration's model with fewer samples and epochs, at
  two epoch counts: the slope is ``HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH`` (per training sample and epoch), the
  intercept the experiment's fixed part (data, scores, attention maps);
* one state-evolution solve at L = 2 on the default rules (``SECONDS_PER_SOLVE``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _cpu(fn):
    c0 = time.process_time()
    out = fn()
    return time.process_time() - c0, out


def simulations(ds=(100, 200, 300), alphas=(0.5, 2.0), inits=("semantic", "positional", "random")) -> dict:
    from attnphase.validation.experiments import SimSpec, run_simulation

    run_simulation(SimSpec(d=40, alpha=0.5, init="semantic", device="cpu"))  # warm-up: imports, first kernels
    rows = []
    for d in ds:
        for a in alphas:
            for init in inits:
                cpu, r = _cpu(lambda: run_simulation(SimSpec(d=d, alpha=a, init=init, device="cpu")))
                rows.append({"d": d, "alpha": a, "init": init, "cpu": cpu, "steps": r.steps})
                print(f"simulation d={d} alpha={a} {init:10s}: {cpu:6.2f} CPU s, {r.steps} steps", flush=True)
    x = np.array([r["alpha"] / 2 * (r["d"] / 1000) ** 2 for r in rows])
    y = np.array([r["cpu"] for r in rows])
    (fixed, per), *_ = np.linalg.lstsq(np.stack([np.ones_like(x), x], 1), y, rcond=None)
    print(f"fit: SIMULATION_FIXED_SECONDS = {fixed:.3g}, SIMULATION_SECONDS_D1000_ALPHA2 = {per:.3g}", flush=True)
    return {"rows": rows, "SIMULATION_FIXED_SECONDS": fixed, "SIMULATION_SECONDS_D1000_ALPHA2": per}


def histogram(n_samples=2000, epochs=(2, 6)) -> dict:
    import dataclasses

    import torch

    from attnphase.validation.histogram.experiment import HistogramConfig, run_experiment

    rows = []
    for e in epochs:
        cfg = dataclasses.replace(HistogramConfig.quick(), n_samples=n_samples, epochs=e, reparam_epochs=1)
        cpu, _ = _cpu(lambda: run_experiment(cfg, 0, torch.device("cpu")))
        n_restricted = sum(v != "both" for v in cfg.variants)
        sample_epochs = n_samples * (e * len(cfg.variants) + cfg.reparam_epochs * n_restricted)
        rows.append({"n_samples": n_samples, "epochs": e, "sample_epochs": sample_epochs, "cpu": cpu})
        print(f"histogram {n_samples} samples x {e} epochs: {cpu:6.2f} CPU s ({sample_epochs} sample-epochs)", flush=True)
    (a, b) = rows[0], rows[-1]
    per = (b["cpu"] - a["cpu"]) / (b["sample_epochs"] - a["sample_epochs"])
    fixed = a["cpu"] - per * a["sample_epochs"]
    print(f"fit: HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH = {per:.3g}, fixed part {fixed:.3g} CPU s", flush=True)
    return {"rows": rows, "HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH": per, "HISTOGRAM_FIXED_SECONDS": fixed}


def solve_once(alphas=(1.0, 1.5, 2.0)) -> dict:
    from attnphase.numerics import solve
    from attnphase.theory import ModelParams

    solve(ModelParams(omega=0.3), alpha=2.0, branch="semantic")  # warm-up: kernels
    cpus = []
    for a in alphas:
        for branch in ("semantic", "positional"):
            cpu, _ = _cpu(lambda: solve(ModelParams(omega=0.3), alpha=a, branch=branch))
            cpus.append(cpu)
            print(f"solve alpha={a} {branch:10s}: {cpu:6.2f} CPU s", flush=True)
    print(f"fit: SECONDS_PER_SOLVE = {np.mean(cpus):.3g}", flush=True)
    return {"cpu": cpus, "SECONDS_PER_SOLVE": float(np.mean(cpus))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("sim", "histogram", "solve"), action="append")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as validate's and histogram's tasks)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    parts = {"sim": simulations, "histogram": histogram, "solve": solve_once}
    out = {k: f() for k, f in parts.items() if not args.only or k in args.only}
    if args.json:
        print(json.dumps(out, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
