"""Benchmark of continuation in omega (docs/method.md section 13, continuation in omega): independent omegas against chains.

    python benchmarks/bench_omega_continuation.py [--quick] [--grids 0.1:0.4:7,0:0.45:46] [--workers 2] [--out PATH]

For each omega grid, ``attnphase phase-diagram --omega GRID --workers N --fresh`` twice, each in a
fresh process and a fresh ``--out``: ``--continuation off`` (one task per omega, every omega by
phase_boundaries) and ``--continuation on`` (chains of contiguous omegas, each omega computed from
its neighbour's).  Reported: both wall times and their ratio, and the CPU seconds of each command
with its worker processes (less sensitive than wall time to other jobs on shared cores); per boundary (alpha_c, alpha_l, the
branch ends, alpha_c_coarse) the largest |continued - independent| over the omegas where both found
it, and the omegas where only one did; the omegas where the continuation fell back to the
independent computation (their notes say why).  The load average is recorded before and after each
run (the times are only as good as the idleness of the cores).

``--quick``: cheap rules (sobol10 solves and bifurcations, no alpha_c correction, 5 alphas) and the
grid 0.1:0.4:7 only; without it, the paper's default settings.  ``--out`` writes the numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUICK = ["--alpha", "0.6:2.2:5", "--quadrature", "sobol10", "--alpha-c-quadrature", "none",
         "--bifurcation-quadrature", "sobol10"]
KEYS = ("alpha_c", "alpha_l", "semantic_end", "positional_end", "alpha_c_coarse")
FALLBACK = "omega continuation failed"


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(argv: list[str]) -> tuple[float, float, dict, tuple[float, float]]:
    """(wall s, CPU s of the command and its worker processes, its JSON, load average before/after)."""
    load0, cpu0 = os.getloadavg()[0], _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "attnphase", *argv, "--json", "--quiet"], capture_output=True,
                          text=True, env=os.environ | {"ATTNPHASE_QUIET": "1"})
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):  # 1: a task failed (recorded; the timing still holds)
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall, _children_cpu() - cpu0, json.loads(proc.stdout), (load0, os.getloadavg()[0])


def _value(row: dict, key: str) -> float:
    v = row.get(key)
    return math.nan if v is None else float(v)


def compare(independent: list[dict], continued: list[dict]) -> dict:
    """Per boundary the largest |difference| where both found it (and at which omega), the omegas
    where only one found it; the omegas where the continuation fell back, with the reason."""
    out: dict = {}
    for key in KEYS:
        worst, at, only = 0.0, None, []
        for a, b in zip(independent, continued):
            x, y = _value(a, key), _value(b, key)
            if math.isfinite(x) and math.isfinite(y):
                if abs(x - y) > worst:
                    worst, at = abs(x - y), a["omega"]
            elif math.isfinite(x) != math.isfinite(y):
                only.append(a["omega"])
        out[key] = {"max_abs_diff": worst, "at_omega": at, "found_by_one_only": only}
    out["fallbacks"] = {str(r["omega"]): next(n for n in r["notes"].split("; ") if n.startswith(FALLBACK))
                        for r in continued if FALLBACK in r["notes"]}
    return out


def bench(grid: str, workers: int, extra: list[str], root: Path) -> dict:
    res: dict = {"grid": grid, "workers": workers}
    rows = {}
    for mode in ("off", "on"):
        argv = ["phase-diagram", "--omega", grid, "--workers", str(workers), "--continuation", mode, "--fresh",
                "--out", str(root / f"{grid.replace(':', '_')}_{mode}"), *extra]
        wall, cpu, meta, load = _run(argv)
        rows[mode] = meta["rows"]
        res[mode] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load_before_after": [round(x, 2) for x in load],
                     "chains": meta.get("continuation_chains", 0), "tasks": meta["tasks"]}
        print(f"{grid} --continuation {mode}: {wall:.1f} s wall, {cpu:.1f} s CPU (load {load[0]:.2f} -> {load[1]:.2f})",
              flush=True)
    res["speedup"] = round(res["off"]["wall_s"] / res["on"]["wall_s"], 2)
    res["cpu_ratio"] = round(res["off"]["cpu_s"] / res["on"]["cpu_s"], 2)
    res["differences"] = compare(rows["off"], rows["on"])
    for key in KEYS:
        d = res["differences"][key]
        print(f"  {key:>15}: max |diff| {d['max_abs_diff']:.2e} (omega {d['at_omega']})"
              + (f", found by one only at {d['found_by_one_only']}" if d["found_by_one_only"] else ""))
    fb = res["differences"]["fallbacks"]
    print(f"  fallbacks: {len(fb)} of {len(rows['on'])}" + "".join(f"\n    omega {w}: {n}" for w, n in fb.items()))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--grids", default=None, help="comma-separated omega grids START:STOP:NUM")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    grids = (args.grids or ("0.1:0.4:7" if args.quick else "0.1:0.4:7,0:0.45:46")).split(",")
    extra = QUICK if args.quick else []
    with tempfile.TemporaryDirectory() as tmp:
        results = [bench(g, args.workers, extra, Path(tmp)) for g in grids]
    if args.out:
        Path(args.out).write_text(json.dumps({"quick": args.quick, "results": results}, indent=2))


if __name__ == "__main__":
    main()
