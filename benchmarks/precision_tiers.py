"""Error against cost of each precision tier: cold-process `attnphase solve --precision T --json`.

    python benchmarks/precision_tiers.py                     # fast, default, precise at the two points
    python benchmarks/precision_tiers.py --tiers fast default --repeat 2

At omega = 0.3, alpha = 2, on the positional and the semantic branch (the points of the table in docs/method.md section 8, accuracy),
each tier's solve is timed as a user meets it (a fresh process, the compiled kernels loaded from the cache)
and its overlaps are printed with their error bars, as relative errors err / |value|, and against the
reference values of the positional point (sobol18, one scrambling, 442 s: q 0.20426, m 0.25824,
V 45.47) in units of the error bar.  The table goes to stdout as markdown.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

POINTS = (("positional", 2.0), ("semantic", 2.0))
KEYS = ("q", "m", "V", "theta")
#: The positional point on sobol18 (one scrambling of 2^18 points): the reference the bars are checked against.
REFERENCE = {"positional": {"q": 0.20426, "m": 0.25824, "V": 45.47}}


def run(tier: str, branch: str, alpha: float) -> tuple[dict, float]:
    argv = [sys.executable, "-m", "attnphase", "solve", "--alpha", str(alpha), "--omega", "0.3", "--branch", branch,
            "--precision", tier, "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1]), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiers", nargs="+", default=["fast", "default", "precise"])
    ap.add_argument("--repeat", type=int, default=1, help="time each solve this many times (the fastest is shown)")
    args = ap.parse_args()
    print("| tier | branch | " + " | ".join(f"{k} +- err (rel.)" for k in KEYS) + " | max rel. err | vs sobol18 | wall |")
    print("|" + "---|" * (len(KEYS) + 5))
    for tier in args.tiers:
        for branch, alpha in POINTS:
            runs = [run(tier, branch, alpha) for _ in range(args.repeat)]
            rec, wall = runs[0][0], min(w for _, w in runs)
            cells, rel = [], []
            for k in KEYS:
                v, e = rec[k], rec.get(f"err_{k}", float("nan"))
                r = e / abs(v) if v else float("nan")
                cells.append(f"{v:.5g} +- {e:.1e} ({r:.1e})" if v else "0")
                if v:
                    rel.append(r)
            ref = REFERENCE.get(branch)
            dev = (", ".join(f"{k} {abs(rec[k] - ref[k]) / rec[f'err_{k}']:.1f}" for k in ref) if ref else "")
            print(f"| {tier} | {branch} | " + " | ".join(cells) + f" | {max(rel):.1e} | {dev} | {wall:.1f} s |",
                  flush=True)


if __name__ == "__main__":
    main()
