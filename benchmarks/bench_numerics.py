"""Benchmark of the state-evolution numerics: SE-map cost, fixed-point cost and accuracy per rule, CLI wall times.

    python benchmarks/bench_numerics.py [--quick] [--phase-diagram] [--out [PATH]]

Measures (paper parameters, omega = 0.3, sigma = 0.5, lambda = 0.01, global prox):

1. time per SE-map evaluation (one ``update(update_hat(...))`` with a full multi-start
   proximal search) at the alpha = 1.5 semantic and positional fixed points, for each rule,
   on the rule as the solver uses it (symmetrised under the model's group, then reduced to
   orbit representatives under the state's group) and on the raw rule;
2. time of one converged fixed point at alpha = 1.5 per rule (semantic from its cold
   start, positional from a start near the branch), and its quadrature error against
   much finer references (gh16 and sobol16, symmetrised);
3. wall time of ``attnphase sweep`` over 16 alpha values in a fresh process (start-up included);
4. with ``--phase-diagram``: wall time of ``attnphase phase-diagram --omega 0.1:0.4:7`` (slow).

``--quick`` uses fewer rules, gh12 as the only reference and skips 3-4.
``--out`` writes the numbers as JSON (default path benchmarks/results_numerics.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from attnphase.numerics.config import SolverConfig

ALPHA = 1.5
OMEGA = 0.3
DEFAULT_OUT = Path(__file__).resolve().parent / "results_numerics.json"


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _solver_rule(params, spec: str, ov):
    """The rule as the solver evaluates it at state ``ov``: symmetrised, then orbit-reduced."""
    from attnphase.numerics.quadrature.rules import make_rule, reduce_rule
    from attnphase.numerics.quadrature.symmetry import symmetry_group

    rule = make_rule(params.L, spec)
    try:  # symmetrisation of non-invariant rules (present in newer versions of the solver)
        from attnphase.numerics.quadrature.rules import symmetrize_rule
        from attnphase.numerics.quadrature.symmetry import model_symmetry_group

        rule = symmetrize_rule(rule, params.L, model_symmetry_group(params))
    except ImportError:
        pass
    group = symmetry_group(params, ov)
    reduced, _ = reduce_rule(rule, params.L, group)
    return rule, reduced, group


def bench_se_map(params, specs, states, repeat: int) -> list[dict]:
    from attnphase.numerics.se.se_map import hat_step
    from attnphase.numerics.se.updates import update
    rows = []
    for spec in specs:
        for branch, ov in states.items():
            rule, reduced, group = _solver_rule(params, spec, ov)

            def step(r=reduced) -> None:
                update(params, hat_step(params, ALPHA, ov, r, group=group)[0])

            def step_raw(r=rule) -> None:
                update(params, hat_step(params, ALPHA, ov, r, group=group)[0])

            t_red = _best(step, repeat)
            t_raw = _best(step_raw, max(1, repeat // 2))
            rows.append({
                "rule": spec, "branch": branch, "nodes": int(rule.size), "nodes_reduced": int(reduced.size),
                "s_per_step_reduced": t_red, "s_per_step_full": t_raw,
            })
            print(f"  SE map {spec:>8} {branch:>10}: {rule.size:7d} nodes ({reduced.size:6d} reduced) "
                  f"{1e3 * t_red:9.1f} ms reduced, {1e3 * t_raw:9.1f} ms full", flush=True)
    return rows


def _solve_all(params, spec: str, alpha: float = ALPHA) -> dict:
    from attnphase.numerics import solve
    from attnphase.numerics.se.overlaps import Overlaps

    out = {}
    for branch, init in (("semantic", None), ("positional", Overlaps(0.2, 55.0, [0.26, -0.26], 0.0))):
        t = time.perf_counter()
        fp = solve(params, alpha, branch, init=init, config=SolverConfig(quadrature=spec))
        out[branch] = (fp, time.perf_counter() - t)
    return out


def _summary(fp) -> dict:
    ov, obs = fp.overlaps, fp.observables
    return {"q0": ov.q0, "V0": ov.V0, "m": float(abs(ov.m[0])), "th0": ov.th0, "eps_g": obs.eps_g, "e_t": obs.e_t}


def bench_fixed_points(params, specs, refs) -> dict:
    results = {}
    for spec in list(specs) + list(refs):
        res = _solve_all(params, spec)
        results[spec] = {
            b: {**_summary(fp), "seconds": sec, "converged": fp.status.converged, "branch": fp.branch,
                "iterations": fp.status.iterations, "residual": fp.status.residual}
            for b, (fp, sec) in res.items()
        }
        for b, (fp, sec) in res.items():
            print(f"  fixed point {spec:>8} {b:>10}: {sec:7.2f} s, {fp.status.iterations:3d} SE evals, "
                  f"converged={fp.status.converged}, label={fp.branch}", flush=True)
    # quadrature error against each reference (relative, per observable)
    for spec in specs:
        for b in ("semantic", "positional"):
            row = results[spec][b]
            row["error"] = {}
            for ref in refs:
                r = results[ref][b]
                row["error"][ref] = {
                    key: (abs(row[key] - r[key]) / abs(r[key]) if r[key] != 0 else abs(row[key]))
                    for key in ("q0", "V0", "m", "th0", "eps_g", "e_t")
                }
    return results


def bench_warm_fixed_points(params, specs, step: float = 0.05) -> dict:
    """A fixed point warm-started from a converged neighbour ``step`` lower in alpha, as a sweep
    does: with the neighbour's solver memory (Jacobian, prox candidates, reduced rules), and without."""
    from attnphase.numerics import solve

    out = {}
    for spec in specs:
        out[spec] = {}
        for branch, nb in _solve_all(params, spec, alpha=ALPHA - step).items():
            nb = nb[0]
            row = {}
            for label, memory in (("memory", nb.memory), ("no_memory", None)):
                t = time.perf_counter()
                fp = solve(params, ALPHA, branch, init=nb.overlaps, memory=memory, config=SolverConfig(quadrature=spec))
                row[label] = {"seconds": time.perf_counter() - t, "iterations": fp.status.iterations,
                              "converged": fp.status.converged, "branch": fp.branch}
            out[spec][branch] = row
            print(f"  warm fixed point {spec:>8} {branch:>10}: with memory {row['memory']['seconds']:.3f} s "
                  f"({row['memory']['iterations']} SE evals), without {row['no_memory']['seconds']:.3f} s "
                  f"({row['no_memory']['iterations']})", flush=True)
    return out


def bench_cli(argv: list[str], label: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [a.replace("{tmp}", tmp) for a in argv]
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "attnphase", *argv], capture_output=True, text=True)
        wall = time.perf_counter() - t
    print(f"  {label}: {wall:.1f} s (exit {proc.returncode})", flush=True)
    if proc.returncode not in (0, 1):
        print(proc.stderr[-2000:], file=sys.stderr)
    return {"argv": argv, "seconds": wall, "returncode": proc.returncode, "stderr_tail": proc.stderr[-400:]}


def _table(fp_results: dict, specs, refs) -> None:
    keys = ("m", "th0", "q0", "V0", "eps_g", "e_t")
    print("\nQuadrature error of the alpha = 1.5 fixed points (relative, against each reference)")
    head = f"{'rule':>8} {'branch':>10} {'ref':>8} {'time/s':>7} " + " ".join(f"{k:>9}" for k in keys)
    print(head)
    print("-" * len(head))
    for spec in specs:
        for b in ("semantic", "positional"):
            row = fp_results[spec][b]
            for ref in refs:
                err = row["error"][ref]
                cells = " ".join("      n/a" if (k == "m" and b == "semantic") or (k == "th0" and b == "positional")
                                 else f"{err[k]:9.1e}" for k in keys)
                print(f"{spec:>8} {b:>10} {ref:>8} {row['seconds']:7.2f} {cells}")
    print("\nReference values")
    for ref in refs:
        for b in ("semantic", "positional"):
            r = fp_results[ref][b]
            print(f"{ref:>8} {b:>10}: " + ", ".join(f"{k} = {r[k]:.6g}" for k in keys)
                  + f"  ({r['seconds']:.1f} s, converged={r['converged']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rules, gh12 reference only, no CLI timings")
    parser.add_argument("--phase-diagram", action="store_true", help="also time attnphase phase-diagram (slow)")
    parser.add_argument("--repeat", type=int, default=3, help="best-of repeats for the SE-map timing")
    parser.add_argument("--out", nargs="?", const=str(DEFAULT_OUT), default=None, help="write JSON here")
    args = parser.parse_args()

    from attnphase.numerics import solve
    from attnphase.numerics.se.overlaps import Overlaps
    from attnphase.theory.params import ModelParams

    params = ModelParams(omega=OMEGA)
    specs = ["gh6", "gh8", "sobol12"] if args.quick else ["gh6", "gh8", "gh10", "sobol12", "sobol14"]
    refs = ["gh12"] if args.quick else ["gh16", "sobol16"]
    report: dict = {
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
                    "numpy": np.__version__},
        "params": params.to_dict(), "alpha": ALPHA, "quick": args.quick,
    }

    t0 = time.perf_counter()
    print(f"SE-map evaluation at alpha = {ALPHA} (best of {args.repeat})", flush=True)
    states = {
        "semantic": solve(params, ALPHA, "semantic", config=SolverConfig(quadrature="gh8")).overlaps,
        "positional": solve(params, ALPHA, "positional",
                            init=Overlaps(0.2, 55.0, [0.26, -0.26], 0.0), config=SolverConfig(quadrature="gh8")).overlaps,
    }
    report["se_map"] = bench_se_map(params, specs, states, args.repeat)

    print(f"\nConverged fixed points at alpha = {ALPHA}", flush=True)
    report["fixed_points"] = bench_fixed_points(params, specs, refs)
    _table(report["fixed_points"], specs, refs)

    print(f"\nWarm-started fixed points at alpha = {ALPHA} (from alpha = {ALPHA - 0.05})", flush=True)
    report["warm_fixed_points"] = bench_warm_fixed_points(params, specs)

    if not args.quick:
        print("\nCLI wall times (fresh process, start-up included)", flush=True)
        report["cli"] = {
            f"sweep16_{q}": bench_cli(
                ["sweep", "--omega", "0.3", "--alpha", "0.5:3:16", "--branch", "semantic", "--quadrature", q,
                 "--out", "{tmp}", "--quiet"], f"attnphase sweep (16 alphas, semantic, {q})")
            for q in ("gh8", "sobol12")
        }
    if args.phase_diagram:
        report.setdefault("cli", {})["phase_diagram"] = bench_cli(
            ["phase-diagram", "--omega", "0.1:0.4:7", "--out", "{tmp}/pd", "--quiet"],
            "attnphase phase-diagram --omega 0.1:0.4:7 (default rule)")
    report["total_seconds"] = time.perf_counter() - t0
    print(f"\ntotal {report['total_seconds']:.1f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2, default=float))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
