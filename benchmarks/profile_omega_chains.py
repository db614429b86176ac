"""Where the phase diagram continued in omega spends its time: per omega of each chain, and per stage.

    python benchmarks/profile_omega_chains.py                          # --omega 0:0.45:46, its chains
    python benchmarks/profile_omega_chains.py --only 3 --max 2         # the chain anchored at 0.3, 2 omegas each way

Runs the chains of ``attnphase phase-diagram --omega GRID`` (``--continuation auto``: the
chains :func:`attnphase.continuation_options.chains_from_args` makes, anchored as
:func:`attnphase.numerics.jobs.tasks.omega_chains` anchors them) in this process, one after the other, as
:func:`attnphase.numerics.phase.omega_continuation.boundaries_chain` runs them, with the stages of
``benchmarks/profile_phase_diagram.py --detail`` instrumented and those of the continuation besides (exclusive, as
there): ``c sem pts`` / ``c pos pts`` (the branches' grid points nearest their ends, continued in omega),
``c sem end`` / ``c pos end`` (the bifurcation secant from the predicted end), ``c reach sem`` / ``c reach pos``
(steps in alpha: the checks that a branch does not go on past its end), ``c cont sem`` / ``c cont pos`` (grid
points continued in omega), ``c pos ext`` (the positional branch above the grid, where it has no end),
``c alpha_c br`` / ``c alpha_l br`` (the brackets from the predictions), ``c alpha_c`` / ``c alpha_l`` (the
roots), ``curves`` (the curves' refinement; its whole-branch sweep is ``pos sweep``).

Printed per omega: its kind (``ancr``: the chain's anchor, by phase_boundaries; ``cont``: continued;
``fall``: continuation failed, computed independently), CPU seconds, SE evaluations (full proximal
searches), proximal nodes searched / polished, the boundaries and the stages; then the totals per stage.
The counts do not depend on the load; the seconds do (the load average is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import profile_phase_diagram as ppd  # noqa: E402
from profile_phase_diagram import PROFILE, staged  # noqa: E402

import attnphase.numerics.phase.omega_continuation as oc  # noqa: E402
from attnphase.continuation_options import chains_from_args  # noqa: E402
from attnphase.numerics.config import SolverConfig  # noqa: E402
from attnphase.numerics.jobs.report import curves_omega  # noqa: E402
from attnphase.numerics.jobs.tasks import omega_chains  # noqa: E402
from attnphase.numerics.se.state_evolution import solve  # noqa: E402
from attnphase.theory.params import ModelParams  # noqa: E402


def instrument_chains() -> None:
    """The continuation's stages (module doc), where ``continued_boundaries`` looks them up."""
    br = oc._Branches
    oc._end_point = staged(lambda b, branch, *a, **k: f"c {branch[:3]} pts", oc._end_point)
    oc._bifurcation_end = staged(lambda p, last, d, *a, **k: f"c {'sem' if d == 'theta' else 'pos'} end",
                                 oc._bifurcation_end)
    oc.safeguarded_newton = staged(lambda *a, **k: "c alpha_c", oc.safeguarded_newton)
    oc._bracket_decreasing = staged(lambda what, *a, **k: f"c {what} br", oc._bracket_decreasing)
    oc._alpha_l = staged(lambda *a, **k: "c alpha_l", oc._alpha_l)
    oc.refined_alpha_l = staged(lambda *a, **k: "alpha_l fine", oc.refined_alpha_l)
    oc.curves_branch = staged(lambda *a, **k: "curves", oc.curves_branch)
    br.reach = staged(lambda self, branch, *a, **k: f"c reach {branch[:3]}", br.reach)
    br.continue_point = staged(lambda self, branch, *a, **k: f"c cont {branch[:3]}", br.continue_point)
    br.extension_point = staged(lambda self, branch, *a, **k: f"c {branch[:3]} ext", br.extension_point)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--omega", default="0:0.45:46", help="start:stop:num (default 0:0.45:46)")
    ap.add_argument("--alpha", default="0.1:3:12", help="alpha grid start:stop:num (default 0.1:3:12)")
    ap.add_argument("--only", default="", help="comma-separated chain indices (default: every chain)")
    ap.add_argument("--max", type=int, default=None, help="at most this many continued omegas each way")
    ap.add_argument("--no-curves", action="store_true", help="leave out the curves' branch")
    args = ap.parse_args()
    a, b, n = args.omega.split(":")
    omegas = [float(x) for x in np.linspace(float(a), float(b), int(n))]
    a, b, n = args.alpha.split(":")
    alphas = [float(x) for x in np.linspace(float(a), float(b), int(n))]
    cfg = SolverConfig()
    at = curves_omega(omegas)
    chains = omega_chains(omegas, chains_from_args(SimpleNamespace(continuation="auto"), omegas),
                          anchor_at=at)
    picked = [int(i) for i in args.only.split(",")] if args.only else range(len(chains))
    ppd.instrument()
    ppd.instrument_detail()
    instrument_chains()
    solve(ModelParams(omega=0.3), 1.0, "semantic", config=cfg)  # the kernels, outside the measurement
    PROFILE.reset()
    load0 = os.getloadavg()[0]
    total: dict = defaultdict(lambda: defaultdict(float))
    cpu = 0.0

    def row(w: float, kind: str, secs: float, b) -> None:
        nonlocal cpu
        st = PROFILE.reset()
        cpu += secs
        sums = {k: sum(v.get(k, 0.0) for v in st.values()) for k in ("evals", "full", "search_nodes", "polish_nodes")}
        shown = [(k, v) for k, v in sorted(st.items(), key=lambda kv: -kv[1]["s"]) if v.get("evals") or v["s"] >= 0.05]
        stages = " ".join(f"{k}:{v['s']:.1f}s/{int(v.get('evals', 0))}e" for k, v in shown)
        print(f"{w:5.3f} {kind:4s} {secs:6.1f} s {int(sums['evals']):5d} evals ({int(sums['full'])} full) nodes "
              f"{sums['search_nodes'] / 1e3:5.0f}k / {sums['polish_nodes'] / 1e3:5.0f}k | " + " ".join(
                  f"{getattr(b, k):.5f}" for k in ("alpha_c", "alpha_l", "semantic_end", "positional_end"))
              + f" | {stages}", flush=True)
        for k, v in st.items():
            for kk, vv in v.items():
                total[k][kk] += vv

    for i in picked:
        anchor, up, down = chains[i]
        p0 = ModelParams(omega=anchor)
        t0 = time.process_time()
        start = oc.scalar_boundaries(p0, alphas, config=cfg)
        row(anchor, "ancr", time.process_time() - t0, start)
        for seq in (up, down):
            prev, seeds = [start], ()
            for w in list(seq)[:args.max]:
                t0 = time.process_time()
                b, seeds = oc.next_boundaries(ModelParams(omega=w), alphas, prev[-2:], seeds=seeds, config=cfg)
                failed = [n for n in b.notes if n.startswith("omega continuation failed")]
                row(w, "fall" if failed else "cont", time.process_time() - t0, b)
                if failed:
                    print("      " + failed[0], flush=True)
                prev.append(b)
        if at is not None and abs(anchor - at) < 1e-12 and not args.no_curves:
            t0 = time.process_time()
            oc.curves_branch(p0, alphas, start.positional, cfg)
            row(anchor, "crv", time.process_time() - t0, start)
    print(f"all: {cpu:.1f} CPU s; load average at start {load0:.2f}, at end {os.getloadavg()[0]:.2f}")
    for k, v in sorted(total.items(), key=lambda kv: -kv[1]["s"]):
        print(f"  {k:>14} {v['s']:6.1f} s {int(v.get('evals', 0)):5d} evals ({int(v.get('full', 0))} full) "
              f"{int(v.get('solves', 0))} solves, nodes searched {v.get('search_nodes', 0) / 1e3:.0f}k "
              f"polished {v.get('polish_nodes', 0) / 1e3:.0f}k")


if __name__ == "__main__":
    main()
