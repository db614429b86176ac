"""Integrating the proximal map's jumps: error against CPU time of the channel moments at fixed overlaps.

    python studies/quadrature_jumps.py                 # the table and the figure from the stored references
    python studies/quadrature_jumps.py --references    # recompute the references first (~15 min more)

The channel integrand (hats, E[M], eps_g) is discontinuous across the surface where the global
proximal map jumps between minima (docs/method.md section 1).  At FIXED overlaps -- the default
solve's positional and semantic fixed points at alpha = 2 and 1, omega = 0.3 -- one SE step's output
(q0, V0, m_1 or th0), E[M] and eps_g are computed by

* ``sobol``: today's rule, sobolK:4 (4 scramblings of 2^K points, symmetrised), channel_moments;
* ``preint``: pre-integration (studies/preintegrated_channel.py) along an oblique line
  (an axis line misses the jump surfaces that contain the axis), 8 cells of equal Gaussian mass with
  4 Gauss-Legendre nodes each, the jumps located by a root-find; the outer integral over 2^K
  scrambled Sobol points;
* ``cv`` / ``cv16``: the local proximal map (Newton from h = 0) as a control variate
  (studies/control_variate_channel.py): mean over sobolK:4 of f_global - f_local plus
  the mean of f_local over a rule 4x / 16x finer.

Error of one estimate = max over those quantities of |value - reference| / |reference| (quantities
zero by symmetry left out); the study's error is the root mean square over ``--seeds`` independent
scramblings.  The references (tests/data/quadrature_jumps_reference.json, with the command that
made them) are sobol18:4 (4 x 2^18 points, symmetrised), one scrambling at a time, with their own
error bars (the scramblings' spread / 2), which floor the errors this study can resolve (~1e-4).
The runs take about 10 minutes on 2 cores.  Writes ``--out`` (docs/data/quadrature_jumps/):
quadrature_jumps.csv, quadrature_jumps_slopes.csv and quadrature_jumps.png, and prints the slopes of
log error against log N and log CPU seconds.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import QuadratureRule, make_rule, sobol_rule
from attnphase.numerics.quadrature.symmetry import symmetry_group
from attnphase.numerics.se.channel import ChannelMoments, channel_moments
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.se_map import model_rule, update, update_hat
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.correlated_kernels import model_kernels
from attnphase.theory.params import ModelParams
from control_variate_channel import control_variate_moments  # studies/control_variate_channel.py
from preintegrated_channel import LineRule, outer_sobol_rule, preintegrated_moments  # studies/preintegrated_channel.py

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent / "tests" / "data" / "quadrature_jumps_reference.json"
POINTS = (("positional", 2.0), ("semantic", 2.0), ("positional", 1.0), ("semantic", 1.0))
OMEGA = 0.3
QUANTITIES = ("q0", "V0", "m_1", "th0", "E_M", "eps_g")
#: The line of the pre-integration: oblique, so that it crosses every jump surface (none contains it).
DIRECTION = (0.9, 0.5, 0.7, 0.3)
LINE = LineRule(cells=8, n_gl=4, direction=DIRECTION)


def se_output(params: ModelParams, alpha: float, ov: Overlaps, mom: ChannelMoments) -> dict[str, float]:
    """One SE step's output at ``ov`` from the moments ``mom``, with E[M] and eps_g."""
    new = update(params, update_hat(params, alpha, ov, mom, symmetry_group(params, ov)))
    return {"q0": float(new.q0), "V0": float(new.V0), "m_1": float(new.m[0]), "th0": float(new.th0),
            "E_M": mom.E_M, "eps_g": mom.eps_g}


def sobol_moments(kernels, params, ov, log2_n: int, seed: int) -> ChannelMoments:
    rule = model_rule(params, SolverConfig(), make_rule(params.L, f"sobol{log2_n}:4:{seed}"))
    return channel_moments(kernels, params, ov, rule)


def preint_moments(kernels, params, ov, log2_n: int, seed: int, line: LineRule | None = None) -> ChannelMoments:
    lr = line or LINE
    return preintegrated_moments(kernels, params, ov, outer_sobol_rule(params.L, log2_n, seed=seed, axis=lr.axis,
                                                                        sign_images=lr.direction is None), lr)


def cv_moments(kernels, params, ov, log2_n: int, seed: int, finer: int = 2) -> ChannelMoments:
    """The local map as control variate: sobolK:4 for the difference, sobol(K+finer):4 for the local map's mean."""
    rule = model_rule(params, SolverConfig(), make_rule(params.L, f"sobol{log2_n}:4:{seed}"))
    fine = model_rule(params, SolverConfig(), make_rule(params.L, f"sobol{log2_n + finer}:4:{seed + 1000}"))
    return control_variate_moments(kernels, params, ov, rule, fine)


def cv16_moments(kernels, params, ov, log2_n: int, seed: int) -> ChannelMoments:
    """:func:`cv_moments` with the local map's mean on a rule 16x finer."""
    return cv_moments(kernels, params, ov, log2_n, seed, finer=4)


METHODS = {"sobol": sobol_moments, "preint": preint_moments, "cv": cv_moments, "cv16": cv16_moments}


def fixed_points(params: ModelParams) -> list[dict]:
    out = []
    for branch, alpha in POINTS:
        fp = solve(params, alpha, branch)
        ov = fp.overlaps
        out.append({"branch": branch, "alpha": alpha, "reached": fp.branch,
                    "overlaps": {"q0": float(ov.q0), "V0": float(ov.V0), "m": [float(x) for x in ov.m],
                                 "th0": float(ov.th0)}})
    return out


def overlaps_of(point: dict) -> Overlaps:
    o = point["overlaps"]
    return Overlaps(q0=o["q0"], V0=o["V0"], m=np.array(o["m"]), th0=o["th0"])


def chunked_sobol_moments(kernels, params, ov, log2_n: int, seed: int, block: int, chunk: int = 2 ** 18) -> ChannelMoments:
    """The channel moments on one scrambling (``block``) of sobol<log2_n>:<...>:<seed>, symmetrised, in chunks of
    nodes (the moments are sums over the nodes)."""
    full = model_rule(params, SolverConfig(), sobol_rule(params.L, log2_n, seed=seed, randomizations=block + 1, block=block))
    parts = []
    for lo in range(0, full.nodes.shape[0], chunk):
        sub = QuadratureRule(full.nodes[lo:lo + chunk], full.weights[lo:lo + chunk], full.name)
        parts.append(channel_moments(kernels, params, ov, sub))
    total = lambda key: sum(getattr(m, key) for m in parts)  # noqa: E731
    return ChannelMoments(total("E_g"), total("E_ggT"), total("E_gxi"), total("E_geta"), total("E_M"), total("eps_g"),
                          total("prox_failures"), None)


def make_references(ref_log2: int, ref_blocks: int) -> dict:
    """sobol<ref_log2>:<ref_blocks>, one scrambling at a time; the reference is their mean, its error their spread
    / sqrt(blocks)."""
    params = ModelParams(omega=OMEGA)
    kernels = model_kernels(params)
    points = fixed_points(params)
    for p in points:
        ov = overlaps_of(p)
        vals = [se_output(params, p["alpha"], ov, chunked_sobol_moments(kernels, params, ov, ref_log2, 7, b))
                for b in range(ref_blocks)]
        p["reference"] = {k: float(np.mean([v[k] for v in vals])) for k in QUANTITIES}
        p["reference_error"] = {k: float(np.std([v[k] for v in vals], ddof=1) / np.sqrt(ref_blocks)) for k in QUANTITIES}
        print(p["branch"], p["alpha"], {k: (p["reference"][k], p["reference_error"][k]) for k in QUANTITIES}, flush=True)
    return {"command": f"python studies/quadrature_jumps.py --references --ref-log2 {ref_log2} --ref-blocks {ref_blocks}",
            "omega": OMEGA, "reference_rule": f"sobol{ref_log2}:{ref_blocks}:7 (symmetrised), one scrambling at a time",
            "points": points}


def relative_error(value: dict, ref: dict) -> float:
    errs = [abs(value[k] - ref[k]) / abs(ref[k]) for k in QUANTITIES if abs(ref[k]) > 1e-10]
    return float(max(errs))


def measure(data: dict, ranges: dict[str, list[int]], seeds: int) -> list[dict]:
    params = ModelParams(omega=OMEGA)
    kernels = model_kernels(params)
    rows = []
    for p in data["points"]:
        ov = overlaps_of(p)
        for method, ks in ranges.items():
            for k in ks:
                errs, cpu = [], []
                for seed in range(seeds):
                    t = time.process_time()
                    mom = METHODS[method](kernels, params, ov, k, 100 + seed)
                    cpu.append(time.process_time() - t)
                    errs.append(relative_error(se_output(params, p["alpha"], ov, mom), p["reference"]))
                row = {"branch": p["branch"], "alpha": p["alpha"], "method": method, "log2_n": k,
                       "rms_error": float(np.sqrt(np.mean(np.square(errs)))), "cpu_s": float(np.median(cpu))}
                rows.append(row)
                print(f"{p['branch']:>10} alpha={p['alpha']} {method:>6} 2^{k}: error {row['rms_error']:.2e}, "
                      f"{row['cpu_s']:.2f} CPU s", flush=True)
    return rows


def slopes(rows: list[dict]) -> list[dict]:
    out = []
    for key in sorted({(r["branch"], r["alpha"], r["method"]) for r in rows}):
        sel = [r for r in rows if (r["branch"], r["alpha"], r["method"]) == key]
        n = np.log([2.0 ** r["log2_n"] for r in sel])
        e = np.log([r["rms_error"] for r in sel])
        c = np.log([r["cpu_s"] for r in sel])
        out.append({"branch": key[0], "alpha": key[1], "method": key[2], "slope_N": float(np.polyfit(n, e, 1)[0]),
                    "slope_cpu": float(np.polyfit(c, e, 1)[0]),
                    "error_at_1s": float(np.exp(np.polyval(np.polyfit(c, e, 1), 0.0)))})
    return out


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(POINTS), figsize=(4 * len(POINTS), 3.6), sharey=True)
    for ax, (branch, alpha) in zip(axes, POINTS):
        for method in METHODS:
            sel = [r for r in rows if r["branch"] == branch and r["alpha"] == alpha and r["method"] == method]
            if sel:
                ax.loglog([r["cpu_s"] for r in sel], [r["rms_error"] for r in sel], "o-", label=method)
        ax.set_title(f"{branch}, alpha = {alpha}")
        ax.set_xlabel("CPU seconds")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("max relative error (rms over seeds)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--references", action="store_true", help="recompute the stored references first")
    ap.add_argument("--ref-log2", type=int, default=18)
    ap.add_argument("--ref-blocks", type=int, default=4)
    ap.add_argument("--references-only", action="store_true")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--sobol", default="8:14:2", help="START:STOP:STEP of log2 N for sobolK:4")
    ap.add_argument("--preint", default="6:12:2", help="START:STOP:STEP of log2 N outer points")
    ap.add_argument("--cv", default="8:12:2")
    ap.add_argument("--cv16", default="8:12:2")
    ap.add_argument("--out", default="docs/data/quadrature_jumps")
    args = ap.parse_args()
    if args.references:
        t = time.perf_counter()
        REFERENCE.parent.mkdir(parents=True, exist_ok=True)
        REFERENCE.write_text(json.dumps(make_references(args.ref_log2, args.ref_blocks), indent=1))
        print(f"wrote {REFERENCE} ({time.perf_counter() - t:.0f} s)")
        if args.references_only:
            return
    data = json.loads(REFERENCE.read_text())
    rng = lambda s: list(range(int(s.split(":")[0]), int(s.split(":")[1]) + 1, int(s.split(":")[2])))  # noqa: E731
    ranges = {m: rng(getattr(args, m)) for m in METHODS if getattr(args, m)}
    rows = measure(data, ranges, args.seeds)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "quadrature_jumps.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    fits = slopes(rows)
    with open(out / "quadrature_jumps_slopes.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(fits[0]))
        wr.writeheader()
        wr.writerows(fits)
    plot(rows, out / "quadrature_jumps.png")
    print("| point | method | slope vs log N | slope vs log CPU | error at 1 CPU s |")
    print("| --- | --- | --- | --- | --- |")
    for f in fits:
        print(f"| {f['branch']}, alpha = {f['alpha']:g} | {f['method']} | {f['slope_N']:.2f} | {f['slope_cpu']:.2f} "
              f"| {f['error_at_1s']:.1e} |")
    print(f"wrote {out}/quadrature_jumps.csv, quadrature_jumps_slopes.csv, quadrature_jumps.png")


if __name__ == "__main__":
    main()
