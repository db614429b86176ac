"""Two runs of benchmarks/rank2_profile.py (``--json``) side by side: the work (CPU seconds, SE-map evaluations and
solves by phase), the boundaries (alpha_c, alpha_l, every birth and end), and every branch with the grid points
where it is on -- what a change of the search's cost must leave as it is.

Evaluations do not depend on the machine's load; CPU seconds do (compare runs made side by side).

    python benchmarks/rank2_compare.py BEFORE.json AFTER.json
"""

from __future__ import annotations

import argparse
import json
import math


def grid_on(run: dict) -> dict[str, list[float]]:
    """Each branch's grid points (the profile's grid, ``alphas`` start:stop:num) where it is on."""
    start, stop, num = (float(x) for x in run["alphas"].split(":"))
    n = int(num)
    grid = [start + k * (stop - start) / (n - 1) for k in range(n)]
    return {name: [g for g in grid if any(math.isclose(g, p, rel_tol=1e-12) for p in pts)]
            for name, pts in run["branches"].items()}


def boundary_lines(run: dict) -> list[str]:
    """alpha_c, alpha_l and every birth and end, one line each."""
    out = [f"alpha_c {run['alpha_c']:.4g} +- {run['alpha_c_err']:.2g} ({run['alpha_c_from']} -> {run['alpha_c_to']})",
           f"alpha_l {run['alpha_l']:.4g} +- {run.get('alpha_l_err', math.nan):.2g} ({run.get('alpha_l_branch', '?')})"]
    out += [f"{e['branch']} {'born' if e['exists'] == 'above' else 'ends'} at {e['alpha']:.4g} +- {e['err']:.2g} "
            f"({e['kind']})" for e in run.get("ends", [])]
    return out


def work_lines(run: dict) -> list[str]:
    """CPU and evaluations in all and by phase."""
    phases = run["by_phase"]
    ev = sum(v["evaluations"] for v in phases.values())
    out = [f"{run['cpu']:.0f} CPU s, {ev} SE evaluations in {sum(v['solves'] for v in phases.values())} solves "
           f"({sum(v['not_converged'] for v in phases.values())} not converged), censuses at "
           + ", ".join(f"{a:.4g}" for a in run["census_alphas"])]
    out += [f"  {k:15s} {v['solves']:5d} solves {v['evaluations']:7d} evaluations {v['not_converged']:4d} not conv. "
            f"{v['cpu']:7.1f} CPU s" for k, v in phases.items()]
    return out


def _span(points: list[float] | None) -> str:
    """A branch's grid points in words: how many, from where to where (absent: no such branch in that run)."""
    if points is None:
        return "absent"
    return f"{len(points)} points {points[0]:.4g}..{points[-1]:.4g}" if points else "none"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    a = ap.parse_args()
    runs = [json.load(open(p)) for p in (a.before, a.after)]
    for title, run in zip(("before", "after"), runs):
        print(f"== {title}: omega {run['omega']} on {run['quadrature']}")
        print("\n".join(work_lines(run) + boundary_lines(run)))
    on = [grid_on(r) for r in runs]
    print("== branches: grid points on (before | after)")
    for name in dict.fromkeys(list(on[0]) + list(on[1])):
        b, c = on[0].get(name), on[1].get(name)
        print(f"  {name:12s} {_span(b):28s} | {_span(c):28s}{'' if b == c else '  DIFFERS'}")
    same = on[0] == on[1] and boundary_lines(runs[0]) == boundary_lines(runs[1])
    print("same branches and boundaries" if same else "branches or boundaries differ (above)")


if __name__ == "__main__":
    main()
