"""What a stall test would save on the rank-2 search, from a traced profile (benchmarks/rank2_profile.py --json FILE
--trace): a solver run stops, not converged, at the first evaluation k where its best exact residual is not below
``factor`` times the best ``window`` evaluations earlier.  For each window and factor: the runs that converged which
the test would have cut (a result lost: the test is too eager), the failing runs it cuts and the evaluations saved.

The replay takes each run's path as it was; a run cut earlier would hand its caller (the retry, the next stage) a
different best point, so the saving is the first-order one.

    python benchmarks/rank2_stall_windows.py RUN.json [--windows 30,50,70,90] [--factors 0.5,0.9]
"""

from __future__ import annotations

import argparse
import json


def stop_at(best: list[float], window: int, factor: float) -> int | None:
    """The evaluations a run with best-residual trace ``best`` would have spent under the stall test, or None."""
    for k in range(window, len(best)):
        if best[k] > factor * best[k - window]:
            return k + 1
    return None


def replay(runs: list[dict], window: int, factor: float) -> dict:
    """The stall test replayed on ``runs`` (each a traced solver run)."""
    cut_converged, cut_failing, saved = 0, 0, 0
    for run in runs:
        k = stop_at(run["best"], window, factor)
        if k is None or k >= len(run["best"]):
            continue
        if run["converged"]:
            cut_converged += 1
        else:
            cut_failing += 1
            saved += len(run["best"]) - k
    return {"window": window, "factor": factor, "converged_cut": cut_converged, "failing_cut": cut_failing,
            "saved": saved}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--windows", default="30,50,70,90")
    ap.add_argument("--factors", default="0.5,0.9")
    a = ap.parse_args()
    d = json.load(open(a.run))
    runs = [run for row in d["solves"] for run in row.get("runs", [])]
    if not runs:
        raise SystemExit(f"{a.run} holds no solver runs: profile with --trace")
    total = sum(len(run["best"]) for run in runs)
    print(f"{len(runs)} solver runs ({sum(r['converged'] for r in runs)} converged), {total} evaluations")
    for w in (int(x) for x in a.windows.split(",")):
        for f in (float(x) for x in a.factors.split(",")):
            r = replay(runs, w, f)
            print(f"window {w:3d}, factor {f:g}: converged runs cut {r['converged_cut']:3d}, failing runs cut "
                  f"{r['failing_cut']:3d}, evaluations saved {r['saved']:5d} ({100 * r['saved'] / total:.1f} %)")


if __name__ == "__main__":
    main()
