"""The census's fixed points continued along alpha: which branches of fixed points exist at each point of an alpha
grid, for every L, r, r* (docs/method.md section 11, "The rank-r phase diagram": branches, births and ends).

1. **census** -- :func:`~attnphase.numerics.phase.census.search` at the first and the last grid point;
2. **follow** -- every distinct point found starts a :class:`~attnphase.numerics.phase.branches.Branch`, followed
   over the grid both ways by warm starts (:meth:`Continuation.solve_on`); one followed onto another's orbit is it;
3. **re-census** -- where the lowest branch, or the set of branches on, differs between neighbouring grid points, a
   census at those not yet censused (at most :data:`MAX_CENSUS`), then step 2; a new branch on at one grid point only
   that is one point with another's there within the rule's error bars is dropped (:meth:`Continuation.split`);
4. **ends** -- bisection on a branch's existence between neighbouring grid points (:func:`locate_end`); located
   again where later solves reach a branch past them (:meth:`Continuation.refreshed_ends`).

A census where no start converged is recorded (``failed``): solver failure, not absence.  Each solve is run once
(:meth:`Continuation.solve`), and counted per phase.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np

from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.boundary_results import LocatedEnd
from attnphase.numerics.phase.brackets import BranchLost
from attnphase.numerics.phase.branches import Branch, BranchCensus, describe, on_at
from attnphase.numerics.phase.census import search
from attnphase.numerics.phase.census_starts import census_rank_one
from attnphase.numerics.errors.replicates import replicate_count
from attnphase.numerics.phase.census_separation import replicas
from attnphase.numerics.phase.gauge_orbits import Replicas, orbit_distance, orbit_key, same_point, within_errors
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.state_evolution import embedded_branches, rank_one_overlaps, solve
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: Bisection tolerance of a branch's end or birth in alpha (the reported error is the final bracket's width).
END_TOL = 0.05
#: Censuses a search may run over the grid (the first and the last grid point included).
MAX_CENSUS = 4
#: Two points of one label at one alpha are one branch when their orbit keys lie within this
#: (:func:`~attnphase.numerics.phase.gauge_orbits.orbit_distance`): without error bars one rule's jumps split one fixed
#: point into several (docs/method.md section 12); distinct mixed points lie ~2e-2 apart.
SAME_BRANCH_RTOL = 1e-2
#: Times a root search's solve that loses its branch is retried after one half-way from the branch's nearest point
#: (:meth:`Continuation.point`).
HALVINGS = 2
#: Grid points where a branch is not found that its following passes over before it stops.
FOLLOW_PAST = 1
END_METHOD = "bisection on the existence of a converged fixed point on the branch (warm starts); err = final bracket width"
#: What the search does, as it goes (INFO records: a command's task bar shows them where the task runs in its process).
LOG = logging.getLogger(__name__)
#: How :data:`LOG` names each phase of the solves.
STAGES = {"follow": "following the branches", "ends": "locating births and ends",
          "changes": "locating the global minimum's changes", "alpha_l": "locating alpha_l"}


class Continuation:
    """Steps 1-4 of the module doc on one model and config: the branches, and solves along them."""

    def __init__(self, params: ModelParams, grid: Sequence[float], config: SolverConfig):
        self.model, self.cfg = se_params(params), config
        self.grid = tuple(sorted(float(a) for a in grid))
        self.branches: list[Branch] = []
        self.censused: list[float] = []
        self.failed: list[float] = []
        self.notes: list[str] = []
        self.solves: dict[tuple, tuple[FixedPoint | None, FixedPoint]] = {}
        self.blocks: dict[int, tuple[FixedPoint, Replicas]] = {}
        self.rank_one: dict[float, dict[str, Overlaps | None]] = {}
        self.count: dict[str, int] = {"censuses": 0}
        self.seconds: dict[str, float] = {}
        self._phase = "follow"

    @property
    def phase(self) -> str:
        """What the solves run now are counted as (``count``, ``seconds``): follow, ends, changes or alpha_l; a change
        is said (:data:`LOG`)."""
        return self._phase

    @phase.setter
    def phase(self, value: str) -> None:
        if value != self._phase:
            self.say(STAGES.get(value, value))
        self._phase = value

    def say(self, what: str) -> None:
        """``what`` the search does now, with omega and the solves run so far, as an INFO record of :data:`LOG`."""
        solves = sum(n for k, n in self.count.items() if k not in ("censuses", "reused", "blocks"))
        LOG.info("omega %g: %s (%d solves so far)", self.model.omega, what, solves)

    def solve(self, alpha: float, label: str, near: FixedPoint | None) -> FixedPoint:
        """The solve of ``label`` at alpha warm from ``near`` (from the label's embedded start where None, its rank-1
        points solved once per alpha: :meth:`rank_one_at`), done once: a repeated one is the stored result
        (``count``: solves run and reused)."""
        key = (float(alpha), label, id(near))
        hit = self.solves.get(key)
        if hit is not None and hit[0] is near:
            self.count["reused"] = self.count.get("reused", 0) + 1
            return hit[1]
        self.count[self.phase] = self.count.get(self.phase, 0) + 1
        if near is None:
            fp = self._timed(self.phase, lambda: solve(self.model, alpha, label, config=self.cfg,
                                                       rank_one=self.rank_one_at(alpha, label)))
        else:
            fp = self._timed(self.phase, lambda: solve(self.model, alpha, label, config=self.cfg, init=near.overlaps))
        self.solves[key] = (near, fp)
        return fp

    def rank_one_at(self, alpha: float, label: str | None = None) -> dict[str, Overlaps | None] | None:
        """The rank-1 points the embedded start of ``label`` at alpha is built from (None: every census start's,
        :func:`~attnphase.numerics.phase.census_starts.census_rank_one`), solved once per alpha for every solve and
        census there; None at r = r* = 1."""
        if is_scalar_form(self.model.r, self.model.r_star):
            return None
        known = self.rank_one.get(alpha)
        self.rank_one[alpha] = (census_rank_one(self.model, alpha, self.cfg, known) if label is None else
                                rank_one_overlaps(self.model, alpha, embedded_branches(self.model, label), self.cfg,
                                                  known))
        return self.rank_one[alpha]

    def _timed(self, phase: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, its CPU seconds added to ``phase``'s (``seconds``: the census searches, each phase's solves,
        the block re-solves)."""
        t0 = time.process_time()
        out = compute()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + time.process_time() - t0
        return out

    def replicas(self, fp: FixedPoint) -> Replicas:
        """``fp`` re-solved warm on each block of the rule, with its error bars
        (:func:`~attnphase.numerics.phase.census_separation.replicas`), done once per point (``count['blocks']``)."""
        hit = self.blocks.get(id(fp))
        if hit is not None and hit[0] is fp:
            return hit[1]
        self.count["blocks"] = self.count.get("blocks", 0) + replicate_count(self.cfg)
        out = self._timed("blocks", lambda: replicas(fp, self.cfg))
        self.blocks[id(fp)] = (fp, out)
        return out

    # -- solves on a branch ------------------------------------------------------------------------------------
    def solve_on(self, br: Branch, alpha: float, embedded: bool = True
                 ) -> tuple[FixedPoint | None, FixedPoint | None, Branch | None]:
        """(the point of ``br`` at alpha or None, the solve warm from its nearest point, the branch ``br`` is found to
        be): warm from its nearest point, then from its nearest point on the other side of alpha, then (with
        ``embedded``) from the embedded start of its label; a point found is added to the branch.  The third entry is
        a branch of the same label whose point at alpha the solve reached and which coincides with ``br`` wherever
        both are on (the same branch, found twice)."""
        alpha = float(alpha)
        if br.on(alpha):
            return br.points[alpha], br.points[alpha], None
        below = [a for a in br.points if a < alpha]
        above = [a for a in br.points if a > alpha]
        starts = sorted(([max(below)] if below else []) + ([min(above)] if above else []), key=lambda a: abs(a - alpha))
        # (the alpha nearer_other compares with, the start): the points, then the label's embedded start (as nearest)
        tries = [(a0, br.points[a0]) for a0 in starts] + ([(starts[0], None)] if embedded else [])
        warm = None
        for a0, near in tries:
            fp = self.solve(alpha, br.label, near)
            warm = fp if warm is None else warm  # the solve from the nearest point
            if not fp.status.converged or fp.branch != br.label or not math.isfinite(fp.observables.e_t):
                continue
            key = orbit_key(self.model, fp)
            twin = self.on_orbit(fp, key, br)
            if twin is not None:
                if all(same_point(br.keys[a], twin.keys[a], SAME_BRANCH_RTOL) for a in br.points if twin.on(a)):
                    return None, fp, twin
                continue  # fell onto another branch of its label
            if self.nearer_other(br, key, alpha, a0):
                continue
            br.add(fp, key)
            return fp, fp, None
        return None, warm, None

    def point(self, br: Branch, alpha: float, halvings: int = HALVINGS, embedded: bool = True) -> FixedPoint:
        """``br``'s point at alpha (:meth:`solve_on`), where that loses the branch solved again after its point
        half-way from its nearest one (found the same way, ``halvings`` - 1 times at most: continuation with the step
        halved); BranchLost where the branch is lost there (the solves of every root search along a branch)."""
        fp, _, _ = self.solve_on(br, alpha, embedded)
        if fp is None and halvings > 0 and br.points:
            try:
                self.point(br, 0.5 * (br.nearest(alpha) + alpha), halvings - 1, embedded=False)
                fp, _, _ = self.solve_on(br, alpha, embedded=False)
            except BranchLost:
                fp = None
        if fp is None:
            raise BranchLost(f"the {br.name} branch was lost at alpha = {alpha:.4g}")
        return fp

    def on_orbit(self, fp: FixedPoint, key: np.ndarray, br: Branch) -> Branch | None:
        """Another branch of ``br``'s label, on at fp's alpha, on whose orbit ``fp`` lies."""
        a = float(fp.alpha)
        return next((o for o in self.branches if o is not br and o.label == br.label and o.on(a)
                     and same_point(o.keys[a], key, SAME_BRANCH_RTOL)), None)

    def nearer_other(self, br: Branch, key: np.ndarray, alpha: float, a0: float) -> bool:
        """Whether another branch of ``br``'s label, with a point at least as near alpha as ``a0``, is predicted at
        alpha (:meth:`Branch.predict`) nearer to ``key`` than ``br`` is: the warm start fell towards that branch."""
        own = orbit_distance(br.predict(alpha), key)
        return any(other is not br and other.label == br.label and abs(other.nearest(alpha) - alpha) <= abs(a0 - alpha)
                   and orbit_distance(other.predict(alpha), key) < own for other in self.branches)

    def beyond(self, br: Branch, fp: FixedPoint | None) -> str:
        """What the solve ``fp`` beyond ``br``'s end reached: ``meets <branch>`` (the orbit of another branch's point
        there, solved warm from that branch: the branch of its label predicted nearest to it, :meth:`Branch.predict`),
        ``converges to the <label> label``, or solver failure."""
        if fp is None or not fp.status.converged or not math.isfinite(fp.observables.e_t):
            return "no converged solve (solver failure)"
        key = orbit_key(self.model, fp)
        others = sorted((o for o in self.branches if o is not br and o.label == fp.branch),
                        key=lambda o: orbit_distance(o.predict(float(fp.alpha)), key))
        for other in others[:1]:
            p, _, _ = self.solve_on(other, fp.alpha, embedded=False)
            if p is not None and same_point(other.keys[float(fp.alpha)], key, SAME_BRANCH_RTOL):
                return f"meets {other.name}"
        return f"converges to the {fp.branch} label"

    # -- steps 1-3 ---------------------------------------------------------------------------------------------
    def census_at(self, alpha: float) -> bool:
        """Step 1 at alpha, then step 2 for every point it finds; a new branch found on this grid point alone that is
        one point with another branch's there at the rule (:meth:`split`) is dropped.  Whether a new branch was
        kept."""
        self.censused.append(alpha)
        self.count["censuses"] += 1
        self.say(f"census at alpha = {alpha:g}, {self.count['censuses']} of at most {MAX_CENSUS}")
        found = self._timed("censuses", lambda: search(self.model, alpha, self.cfg, rank_one=self.rank_one_at(alpha)))
        points = [fp for fp, _ in found.points]
        if not points:
            self.failed.append(alpha)
            self.notes.append(f"census at alpha = {alpha:g}: none of its {len(found.starts)} starts converged "
                              "(solver failure: nothing is known there)")
        new = []
        for fp in points:
            key = orbit_key(self.model, fp)
            if any(b.on(alpha) and same_point(b.keys[alpha], key, SAME_BRANCH_RTOL) for b in self.branches):
                continue
            br = Branch(f"{fp.branch} (found at alpha = {alpha:g})", fp.branch, fp, key)
            self.branches.append(br)
            self.follow(br, self.grid.index(alpha))
            new.append(br)
        return any([br in self.branches and not self.split(br) for br in new])  # every new branch tested

    def split(self, br: Branch) -> bool:
        """Whether ``br``, on at one grid point only, is there one fixed point with the nearest point of another
        branch within the rule's error bars (:func:`~attnphase.numerics.phase.gauge_orbits.within_errors`): the rule's
        split (docs/method.md section 12), dropped with a note."""
        on = [a for a in self.grid if br.on(a)]
        if len(on) != 1:
            return False
        a = on[0]
        near = min((o for o in self.branches if o is not br and o.on(a)),
                   key=lambda o: orbit_distance(o.keys[a], br.keys[a]), default=None)
        if near is None or not within_errors(self.replicas(near.points[a]), self.replicas(br.points[a])):
            return False
        self.branches.remove(br)
        self.notes.append(f"{br.label} point at alpha = {a:g} (found there only: {describe(br, a).split(': ', 1)[1]}) "
                          f"is one point with {near.name}'s within the rule's error bars: the rule's split, dropped")
        return True

    def follow(self, br: Branch, i: int) -> None:
        """Step 2: ``br`` from grid point i up, then down, while it stays on (past FOLLOW_PAST grid points where it is
        not); joined to the branch it turns out to be."""
        for steps in (range(i + 1, len(self.grid)), range(i - 1, -1, -1)):
            missed = 0
            for k in steps:
                if br.on(self.grid[k]):
                    missed = 0
                    continue
                fp, _, twin = self.solve_on(br, self.grid[k])
                if twin is not None:
                    self.join(br, twin)
                    return
                missed = 0 if fp is not None else missed + 1
                if missed > FOLLOW_PAST:
                    break

    def join(self, br: Branch, into: Branch) -> None:
        """``br`` is ``into``: its points go to ``into`` where that has none."""
        for a, fp in br.points.items():
            if not into.on(a):
                into.add(fp, br.keys[a])
        self.branches.remove(br)

    def signature(self, i: int) -> tuple[tuple[str, ...], str]:
        """(the branches on at grid point i in e_t order, the lowest)."""
        order = tuple(b.name for b in on_at(self.branches, self.grid[i]))
        return order, order[0] if order else ""

    def to_census(self, lowest_only: bool = False) -> list[int]:
        """Grid points of step 3 not yet censused: beside a change of the lowest branch, then (unless
        ``lowest_only``) of the set of branches on.  (A change of the order of the branches above the lowest one
        alone changes no boundary.)"""
        todo: tuple[list[int], list[int]] = ([], [])
        for i in range(len(self.grid) - 1):
            (o1, l1), (o2, l2) = self.signature(i), self.signature(i + 1)
            if l1 != l2 or set(o1) != set(o2) and not lowest_only:
                todo[0 if l1 != l2 else 1].extend(k for k in (i, i + 1) if self.grid[k] not in self.censused)
        return list(dict.fromkeys(todo[0] + todo[1]))

    def run(self) -> BranchCensus:
        """Steps 1-4; once a re-census finds no new branch, only changes of the lowest branch are censused again."""
        for a in dict.fromkeys((self.grid[0], self.grid[-1])):
            self.census_at(a)
        lowest_only = False
        while todo := self.to_census(lowest_only):
            if len(self.censused) >= MAX_CENSUS:
                self.notes.append(f"census budget ({MAX_CENSUS}) spent: alpha = "
                                  + ", ".join(f"{self.grid[k]:g}" for k in todo) + " not censused")
                break
            lowest_only = not self.census_at(self.grid[todo[0]]) or lowest_only
        self.name_branches()
        self.phase = "ends"
        ends = [e for br in self.branches for e in self.ends(br)]
        self.notes += ["branches: " + "; ".join(describe(b) for b in self.branches)] if self.branches else []
        return BranchCensus(self.grid, tuple(self.branches), tuple(sorted(self.censused)), tuple(self.failed),
                            tuple(sorted(ends, key=lambda e: e.alpha)), tuple(self.notes))

    def name_branches(self) -> None:
        """Each branch named by its label, numbered (``mixed#1``, ``mixed#2``) where several share one: in the order of
        the lowest alpha where they are on, then of e_t there."""
        for label in dict.fromkeys(b.label for b in self.branches):
            same = sorted((b for b in self.branches if b.label == label),
                          key=lambda b: (min(b.points), b.e_t(min(b.points))))
            for k, b in enumerate(same):
                b.name = label if len(same) == 1 else f"{label}#{k + 1}"

    # -- step 4 ------------------------------------------------------------------------------------------------
    def ends(self, br: Branch) -> list[LocatedEnd]:
        """Every end or birth of ``br`` (:func:`transitions`), located by :func:`locate_end`."""
        return [locate_end(self, br, good, bad) for good, bad in transitions(self.grid, br)]

    def refreshed_ends(self, bc: BranchCensus) -> tuple[tuple[LocatedEnd, ...], list[str]]:
        """``bc.ends`` with the ends of each branch that later solves gave points past them (a root search's point
        beyond an end's bracket, or at a grid point where the branch was not on) located again (:meth:`ends`), until
        none is (a bisection's solves can reach its own or another branch past an end), once per grid point at most;
        and a note for each branch whose ends were."""
        ends, first = bc.ends, {}
        for _ in self.grid:
            stale = self.stale(replace(bc, ends=ends))
            if not stale:
                break
            for name in stale:
                first.setdefault(name, [e for e in ends if e.branch == name])
            ends = tuple(sorted((e for br in bc.branches
                                 for e in (self.ends(br) if br.name in stale else
                                           [e for e in ends if e.branch == br.name])), key=lambda e: e.alpha))

        def said(es: Sequence[LocatedEnd]) -> str:
            return ", ".join(f"{e.alpha:.4g} +- {e.err:.2g}" for e in es) or "none"
        return ends, [f"{name}: its ends were located again after later solves reached it past them ({said(old)} -> "
                      f"{said([e for e in ends if e.branch == name])})" for name, old in first.items()]

    def stale(self, bc: BranchCensus) -> list[str]:
        """The branches whose ends in ``bc`` no longer bracket where they are on and not (:func:`transitions`,
        :func:`bracketed`): later solves gave them points past an end."""
        return [br.name for br in bc.branches
                if not bracketed([e for e in bc.ends if e.branch == br.name], transitions(self.grid, br))]


def transitions(grid: Sequence[float], br: Branch) -> list[tuple[float, float]]:
    """(good, bad) for each two neighbours, in alpha, of the grid points and ``br``'s points where ``br`` is on at one
    (good) and not at the other (bad): the brackets of its ends and births."""
    xs = sorted(set(grid) | set(br.points))
    on = [br.on(a) for a in xs]
    return [(xs[i], xs[i + 1]) if on[i] else (xs[i + 1], xs[i]) for i in range(len(xs) - 1) if on[i] != on[i + 1]]


def bracketed(ends: Sequence[LocatedEnd], pairs: Sequence[tuple[float, float]]) -> bool:
    """Whether each bracket (good, bad) of ``pairs`` holds exactly one end's [alpha - err/2, alpha + err/2] and no
    end lies outside them."""
    def inside(e: LocatedEnd, good: float, bad: float) -> bool:
        return min(good, bad) - 1e-12 <= e.alpha - e.err / 2 and e.alpha + e.err / 2 <= max(good, bad) + 1e-12
    return len(ends) == len(pairs) and all(sum(inside(e, g, b) for e in ends) == 1 for g, b in pairs)


def locate_end(cont: Continuation, br: Branch, good: float, bad: float) -> LocatedEnd:
    """Bisection between ``good`` (``br`` on) and ``bad`` (not) to a bracket of width <= END_TOL; the kind says what
    the last solve beyond the end gave (:meth:`Continuation.beyond`)."""
    lo, hi, far = good, bad, None
    while abs(hi - lo) > END_TOL:
        mid = 0.5 * (lo + hi)
        fp, last, _ = cont.solve_on(br, mid, embedded=False)
        if fp is not None:
            lo = mid
        else:
            hi, far = mid, last
    if far is None:
        _, far, _ = cont.solve_on(br, bad)
    return LocatedEnd(br.name, 0.5 * (lo + hi), abs(hi - lo), "above" if hi < lo else "below", cont.beyond(br, far),
                      END_METHOD)
