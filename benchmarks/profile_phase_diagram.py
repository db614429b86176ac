"""Where the phase diagram's time goes: per omega and per stage.

    python benchmarks/profile_phase_diagram.py                       # the default job: 10 omegas 0:0.45, alpha 0.1:3:12
    python benchmarks/profile_phase_diagram.py --omega 0,0.3         # a few omegas

Runs :func:`attnphase.numerics.phase.boundaries.phase_boundaries` at each omega with the stages
instrumented (a stack of stage names; each stage's time and SE evaluations are *exclusive*: a
branch end located inside a sweep is charged to the end, not to the sweep):

* ``sem sweep`` / ``pos sweep`` -- continuation of each branch over the alpha grid
  (beyond the grid too, where a boundary lies outside it);
* ``sem end`` / ``pos end`` -- :func:`attnphase.numerics.phase.branch_end.locate_branch_end`
  (bifurcations on the agnostic branch, or the trace / bisection) and the eigenvalue's crossing sought from
  inside the sweep (:func:`attnphase.numerics.phase.branch_end.bifurcation_end`);
* ``alpha_c`` -- the safeguarded Newton root of Delta e_t on the solve rule;
* ``alpha_c fine`` -- the Newton correction with E[M] on ``config.alpha_c_quadrature``;
* ``alpha_l`` -- Brent's root of eps_g - eps_lin;
* ``alpha_l fine`` -- its refinement on ``config.alpha_l_quadrature`` with the blocks' error bar;
* ``other`` -- the rest of ``phase_boundaries``.

Per stage: seconds, SE evaluations (full proximal searches / all), solves (failed); per omega the
nodes of every proximal search and polish (thousands: the work of the searches, whatever the load).  The
load average is printed with the table: on a shared machine compare evaluations and nodes, not seconds.

``--detail`` also splits the ends and alpha_l's refinement into what they spend (``end solves``: the agnostic
fixed points of the eigenvalue's secant, its multilevel step and its error bar; ``eig prox``: the proximal
searches and polishes of the eigenvalue rule; ``alpha_l blocks``: alpha_l's error bar) and prints, per omega, each
stage's seconds, SE evaluations, solves and proximal nodes searched / polished.

``--compare`` runs each omega twice, interleaved (so that both sides see the same load): first with the
saving of the boundary search switched off -- the positional sweep's eigenvalue search ahead where |m|
still grows (:func:`attnphase.numerics.phase.continuation.order_growing`) -- then as it is, and prints the
ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import time
from collections import defaultdict

import numpy as np

import attnphase.numerics.phase.boundaries as boundaries
import attnphase.numerics.phase.boundary_refinement as refinement
import attnphase.numerics.phase.brackets as brackets
import attnphase.numerics.phase.continuation as continuation
import attnphase.numerics.phase.scalar_boundaries as scalar
import attnphase.numerics.se.channel as channel
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.fixed_point import FixedPointSolver
from attnphase.numerics.se.state_evolution import solve
from attnphase.numerics.se.se_map import SEMap
from attnphase.theory.params import ModelParams

STAGES = ("sem sweep", "pos sweep", "sem end", "pos end", "alpha_c", "alpha_c fine", "alpha_l", "alpha_l fine",
          "other")


class Profile:
    """Exclusive time, SE evaluations and solves per stage (a stack of stage names)."""

    def __init__(self) -> None:
        self.stack: list[str] = ["other"]
        self.t_mark = time.process_time()
        self.stats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def _switch(self) -> None:
        now = time.process_time()
        self.stats[self.stack[-1]]["s"] += now - self.t_mark
        self.t_mark = now

    def enter(self, name: str) -> None:
        self._switch()
        self.stack.append(name)

    def leave(self) -> None:
        self._switch()
        self.stack.pop()

    def count(self, key: str, n: float = 1.0) -> None:
        self.stats[self.stack[-1]][key] += n

    def reset(self) -> dict[str, dict[str, float]]:
        self._switch()
        out, self.stats = self.stats, defaultdict(lambda: defaultdict(float))
        return out


PROFILE = Profile()


def staged(name_of, fn):
    """``fn`` run as the stage ``name_of(*args, **kw)``."""

    @functools.wraps(fn)
    def wrapper(*args, **kw):
        PROFILE.enter(name_of(*args, **kw))
        try:
            return fn(*args, **kw)
        finally:
            PROFILE.leave()

    return wrapper


def instrument() -> None:
    """Wrap the stage functions where phase_boundaries / sweep look them up, and count evaluations."""
    scalar.sweep = staged(lambda p, a, branch, **kw: f"{branch[:3]} sweep", scalar.sweep)
    brackets.sweep = staged(lambda p, a, branch, **kw: f"{branch[:3]} sweep", brackets.sweep)
    continuation.locate_branch_end = staged(lambda p, branch, *a, **kw: f"{branch[:3]} end", continuation.locate_branch_end)
    # the eigenvalue's crossing sought from inside the sweep (the positional end ahead, the semantic end before a
    # halved step) is the end's too
    continuation.bifurcation_end = staged(lambda p, branch, *a, **kw: f"{branch[:3]} end", continuation.bifurcation_end)
    scalar.safeguarded_newton = staged(lambda *a, **kw: "alpha_c", scalar.safeguarded_newton)
    refinement.refine_alpha_c = staged(lambda *a, **kw: "alpha_c fine", refinement.refine_alpha_c)
    scalar.grow_alpha_c_down = staged(lambda *a, **kw: "alpha_c", scalar.grow_alpha_c_down)
    scalar.grow_alpha_c_up = staged(lambda *a, **kw: "alpha_c", scalar.grow_alpha_c_up)
    scalar.brent_root = staged(lambda *a, **kw: "alpha_l", scalar.brent_root)
    scalar.refined_alpha_l = staged(lambda *a, **kw: "alpha_l fine", scalar.refined_alpha_l)

    evaluate = SEMap.evaluate

    def counted_evaluate(self, x, exact=False):
        ev = evaluate(self, x, exact)
        PROFILE.count("evals")
        if self.since_full == 0:  # set to 0 by a full proximal search
            PROFILE.count("full")
        return ev

    SEMap.evaluate = counted_evaluate
    global_prox = channel.global_prox

    def counted_global_prox(kernels, w, *args, candidates=None, full_search=True, **kw):
        searched = full_search or candidates is None
        PROFILE.count("search_nodes" if searched else "polish_nodes", w.shape[0])
        return global_prox(kernels, w, *args, candidates=candidates, full_search=full_search, **kw)

    channel.global_prox = counted_global_prox
    solve = FixedPointSolver.solve

    def counted_solve(self, x, warm=False):
        res = solve(self, x, warm)
        PROFILE.count("solves")
        if not res.converged:
            PROFILE.count("failed")
        return res

    FixedPointSolver.solve = counted_solve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--omega", default="0:0.45:10", help="start:stop:num or a comma list (default 0:0.45:10)")
    ap.add_argument("--alpha", default="0.1:3:12", help="alpha grid start:stop:num (default 0.1:3:12)")
    ap.add_argument("--quadrature", default=None, help="the solve rule (default: SolverConfig's, with error bars)")
    ap.add_argument("--detail", action="store_true", help="the ends and alpha_l's bar split further, nodes per stage")
    ap.add_argument("--compare", action="store_true",
                    help="each omega also without the saving (module doc), interleaved, and the ratios")
    args = ap.parse_args()

    def parse(spec: str) -> list[float]:
        if ":" in spec:
            a, b, n = spec.split(":")
            return [float(x) for x in np.linspace(float(a), float(b), int(n))]
        return [float(x) for x in spec.split(",")]

    omegas, alphas = parse(args.omega), parse(args.alpha)
    cfg = SolverConfig() if args.quadrature is None else SolverConfig(quadrature=args.quadrature)
    instrument()
    if args.detail:
        instrument_detail()
    # compile / load the kernels outside the measurement
    solve(ModelParams(omega=0.3), 1.0, "semantic", config=cfg)
    PROFILE.reset()
    load0 = os.getloadavg()[0]
    sides = ("before", "now") if args.compare else ("now",)
    rows, total = {s: [] for s in sides}, {s: defaultdict(lambda: defaultdict(float)) for s in sides}
    cpu = dict.fromkeys(sides, 0.0)
    for w in omegas:
        for side in sides:
            with savings(side == "now"):
                t0 = time.process_time()
                b = boundaries.phase_boundaries(ModelParams(omega=w), alphas, config=cfg)
                secs = time.process_time() - t0
            st = PROFILE.reset()
            rows[side].append((w, secs, st, b))
            cpu[side] += secs
            for k, v in st.items():
                for kk, vv in v.items():
                    total[side][k][kk] += vv
    for side in sides:
        report(side if args.compare else "", rows[side], total[side], cpu[side], load0)
        if args.detail:
            detail(rows[side])
    if args.compare:
        keys = ("evals", "full", "solves", "search_nodes", "polish_nodes")
        sums = {side: {k: sum(v.get(k, 0.0) for v in total[side].values()) for k in keys} for side in sides}
        print("now / before: CPU " + f"{cpu['now'] / cpu['before']:.3f}; "
              + "; ".join(f"{k} {sums['now'][k] / sums['before'][k]:.3f}" for k in keys if sums["before"][k]))
        for (w, _, _, b0), (_, _, _, b1) in zip(rows["before"], rows["now"]):
            moved = ", ".join(f"{k} {getattr(b1, k) - getattr(b0, k):+.1e} (err {getattr(b0, k + '_err'):.1e})"
                              for k in ("alpha_c", "alpha_l", "semantic_end", "positional_end"))
            print(f"omega {w:.3f} now - before: {moved}")


def instrument_detail() -> None:
    """The stages of ``--detail``, inside the ends and alpha_l's refinement (exclusive, as the others)."""
    import attnphase.numerics.phase.bifurcation as bifurcation

    bifurcation.solve = staged(lambda *a, **kw: "end solves", bifurcation.solve)
    bifurcation.node_solves = staged(lambda *a, **kw: "eig prox", bifurcation.node_solves)
    refinement.block_root_error = staged(lambda *a, **kw: "alpha_l blocks", refinement.block_root_error)


def detail(rows: list) -> None:
    """Per omega, every stage: seconds, SE evaluations (full searches), solves, proximal nodes searched / polished."""
    for w, secs, st, _ in rows:
        print(f"omega {w:.3f}: {secs:.1f} CPU s")
        for name, v in sorted(st.items(), key=lambda kv: -kv[1]["s"]):
            print(f"  {name:>14} {v['s']:5.1f} s {int(v.get('evals', 0)):4d} evals ({int(v.get('full', 0))} full) "
                  f"{int(v.get('solves', 0)):3d} solves  nodes searched {v.get('search_nodes', 0) / 1e3:6.0f}k "
                  f"polished {v.get('polish_nodes', 0) / 1e3:6.0f}k")


@contextlib.contextmanager
def savings(on: bool):
    """The boundary search as it is (``on``), or with the saving of the module doc switched off."""
    if on:
        yield
        return
    saved = continuation.order_growing
    continuation.order_growing = lambda path: False
    try:
        yield
    finally:
        continuation.order_growing = saved


def report(label: str, rows: list, total: dict, wall: float, load0: float) -> None:

    def cell(st: dict[str, float]) -> str:
        if not st:
            return "-"
        fail = f"/{int(st['failed'])}f" if st.get("failed") else ""
        return f"{st['s']:5.1f}s {int(st['evals']):4d}e {int(st['solves'])}s{fail}"

    print(f"{label + ': ' if label else ''}load average at start {load0:.2f}, at end {os.getloadavg()[0]:.2f}; "
          "cell: seconds, SE evaluations, solves / failed")
    print(f"{'omega':>6} {'total':>6} " + " ".join(f"{s:>21}" for s in STAGES) + "  alpha_c alpha_l sem_end pos_end")
    for w, secs, st, b in rows:
        vals = " ".join(f"{x:7.4f}" for x in (b.alpha_c, b.alpha_l, b.semantic_end, b.positional_end))
        print(f"{w:6.3f} {secs:6.1f} " + " ".join(f"{cell(st.get(s, {})):>21}" for s in STAGES) + "  " + vals)
    print(f"{'all':>6} {wall:6.1f} " + " ".join(f"{cell(total.get(s, {})):>21}" for s in STAGES))
    evals = sum(v["evals"] for v in total.values())
    full = sum(v["full"] for v in total.values())
    nodes = {k: sum(v.get(k, 0.0) for v in total.values()) / 1e3 for k in ("search_nodes", "polish_nodes")}
    solves = int(sum(v["solves"] for v in total.values()))
    failed = int(sum(v["failed"] for v in total.values()))
    print(f"SE evaluations {int(evals)} ({int(full)} full searches); solves {solves} ({failed} failed); "
          f"proximal nodes searched {nodes['search_nodes']:.0f}k, polished {nodes['polish_nodes']:.0f}k")
    for w, _, _, b in rows:
        if b.notes:
            print(f"omega {w:.3f}: " + "; ".join(b.notes))


if __name__ == "__main__":
    main()
