"""The fixed points of one omega at rank r = r* = 1, completed grid alpha by grid alpha, for the first change of the
lowest-e_t point (:mod:`attnphase.numerics.phase.lowest_point_change`; docs/general.md, "How alpha_c is found where
the branches never cross").

The fixed points are the agnostic point A (always one), the positional point P and the semantic point S.  At each
grid alpha each branch is *on*, *absent* (:mod:`attnphase.numerics.phase.absence`, or past its located end) or
*unknown* (solver failure, retried from its default start and from the coarser rule's fixed point); the lowest point
is argmin e_t over A and the branches on there, none where a branch stays unknown (:meth:`GridPoints.lowest`).
"""

from __future__ import annotations

import math

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.absence import EIGENVALUE, absence_evidence
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.brackets import BranchLost
from attnphase.numerics.phase.branch_end import BRANCH_FLOORS, below_floor, on_branch, overlap_size
from attnphase.numerics.phase.continuation import BranchSweep, solve_from
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.matrix_solve import coarser_spec
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.state_evolution import positional_past_agnostic, solve
from attnphase.theory.params import ModelParams


#: The branches a sweep follows; the agnostic point is the third fixed point.
SWEPT = ("semantic", "positional")


def past_end(sw: BranchSweep, alpha: float) -> bool:
    """alpha lies past ``sw``'s located end (a bifurcation or fold, not a solver failure), where it does not exist."""
    end = sw.end
    if not math.isfinite(end.alpha) or end.kind == "solver failure" or sw.end_side not in ("below", "above"):
        return False
    return alpha < end.on_solve_rule if sw.end_side == "below" else alpha > end.on_solve_rule


class GridPoints:
    """The fixed points of one omega, completed alpha by alpha (module doc): ``on``, ``absent`` and ``failed`` per
    branch and alpha, from ``b``'s sweeps and the solves made here."""

    def __init__(self, params: ModelParams, b: Boundaries, cfg: SolverConfig, rule: QuadratureRule):
        self.params, self.cfg, self.rule = params, cfg, rule
        self.sweeps = {"semantic": b.semantic, "positional": b.positional}
        # what is known at each alpha: on[branch][alpha] a point on the branch (agnostic included),
        # absent[branch][alpha] the evidence of its absence, failed[branch][alpha] why it is unknown
        self.on: dict[str, dict[float, FixedPoint]] = {b: {} for b in (*SWEPT, "agnostic")}
        self.absent: dict[str, dict[float, str]] = {b: {} for b in SWEPT}
        self.failed: dict[str, dict[float, str]] = {b: {} for b in SWEPT}
        self.retried: list[str] = []
        for sw in self.sweeps.values():
            for fp in sw.points:
                self._classify(sw.branch, fp)

    def _classify(self, branch: str, fp: FixedPoint) -> bool:
        """Record ``fp`` (a solve started on ``branch``) at its alpha; True when it decided the branch there."""
        a = fp.alpha
        if on_branch(fp, branch):
            self.on[branch][a] = fp
            return True
        if on_branch(fp, "agnostic"):
            self.on["agnostic"].setdefault(a, fp)
        beside = self._beside_agnostic(branch, fp)
        if beside:
            self.absent[branch][a] = beside
            self.failed[branch].pop(a, None)
            return True
        ev = absence_evidence([fp], branch, self.rule, self.cfg)
        if ev.absent or ev.beside:
            symbol = EIGENVALUE[branch][1]
            how, eig = ("fell to", ev.absent[0][1]) if ev.absent else ("converged next to", ev.beside[0][1])
            self.absent[branch][a] = f"{how} the agnostic point, {symbol} = {eig:.3g} < 1"
            self.failed[branch].pop(a, None)
            return True
        if ev.runaway:
            self.absent[branch][a] = f"no fixed point: lam = 0 and the iterates' q ran away, to {ev.runaway[0][1]:.2g}"
            self.failed[branch].pop(a, None)
            return True
        self.failed[branch][a] = ev.failed[0].split(" ", 1)[1].strip("()")
        return False

    def _beside_agnostic(self, branch: str, fp: FixedPoint) -> str:
        """Why ``fp`` counts as the agnostic point: converged with ``branch``'s label but its order parameter below
        the branch's floor, on the side of the branch's located bifurcation where the branch exists (near its birth
        or end), where the rule cannot tell the two points apart; "" where it does not."""
        sw = self.sweeps[branch]
        end = sw.end
        if (not below_floor(fp, branch) or end.kind != "bifurcation" or not math.isfinite(end.alpha)
                or past_end(sw, fp.alpha)):
            return ""
        ((name, floor),) = BRANCH_FLOORS[branch]
        size = {"th0": "|th0|", "m": "|m|"}[name]
        return (f"converged next to the agnostic point ({size} = {overlap_size(fp, name):.3g}, below the branch's "
                f"floor {floor:g}, {abs(fp.alpha - end.on_solve_rule):.3g} from its bifurcation at {end.alpha:.4g}): "
                "the same point at the rule's resolution")

    def _retry(self, branch: str, alpha: float, default_tried: bool) -> None:
        """``branch`` at alpha from its default start (unless ``default_tried``), then from the fixed point of the
        coarser rule, then (positional) from the agnostic point there with the default start's m put on it (as a
        sweep starts where its last start fell to the agnostic point)."""
        why = self.failed[branch].get(alpha, "")
        if not default_tried and self._classify(branch, solve(self.params, alpha, branch, config=self.cfg,
                                                              rule=self.rule)):
            self.retried.append(f"{branch} at alpha = {alpha:.4g} ({why}) decided by its default start")
            return
        spec = coarser_spec(self.cfg.quadrature)
        if spec is not None:
            coarse = solve(self.params, alpha, branch, config=self.cfg.replace(quadrature=spec))
            if coarse.status.converged:
                fine = solve(self.params, alpha, branch, init=coarse.overlaps, config=self.cfg, rule=self.rule)
                if self._classify(branch, fine):
                    self.retried.append(f"{branch} at alpha = {alpha:.4g} ({why}) decided from the {spec} fixed point")
                    return
        if branch == "positional":
            try:
                agn = self.point("agnostic", alpha)
            except BranchLost:  # no agnostic point to start from: the point stays unknown
                return
            fp = positional_past_agnostic(self.params, alpha, agn, self.cfg, self.rule) if on_branch(
                agn, "agnostic") else None
            if fp is not None and self._classify(branch, fp):
                self.retried.append(f"{branch} at alpha = {alpha:.4g} ({why}) decided from the agnostic point")

    def status(self, branch: str, alpha: float) -> str:
        """"on", "absent" or "failed" at a grid alpha, solving (and retrying) where not yet decided."""
        if alpha in self.on[branch]:
            return "on"
        if alpha in self.absent[branch]:
            return "absent"
        if past_end(self.sweeps[branch], alpha):
            self.absent[branch][alpha] = "past its end"
            return "absent"
        fresh = alpha not in self.failed[branch]  # not reached by the sweep: solved here from the default start
        if fresh:
            self._classify(branch, solve(self.params, alpha, branch, config=self.cfg, rule=self.rule))
        if alpha in self.failed[branch]:
            self._retry(branch, alpha, default_tried=fresh)
        return "on" if alpha in self.on[branch] else "absent" if alpha in self.absent[branch] else "failed"

    def point(self, branch: str, alpha: float) -> FixedPoint:
        """``branch``'s point at alpha, or the agnostic point where the branch's solve falls to it (Z~, module
        doc), or a point of its label below its floor (next to the agnostic one); solved warm from the nearest known
        point of the branch (of the agnostic point) where not known."""
        pts = self.on[branch]
        if alpha in pts:
            return pts[alpha]
        agn = self.on["agnostic"]
        if branch != "agnostic" and (alpha in self.absent[branch] or past_end(self.sweeps[branch], alpha)):
            return self.point("agnostic", alpha)
        src = pts or agn
        near = src[min(src, key=lambda x: abs(x - alpha))] if src else None
        fp = solve_from(self.params, alpha, branch, near, self.cfg, self.rule)
        if near is not None and not fp.status.converged:
            # the warm start failed (from Q = 0, which a strong ridge holds at every alpha, it cannot leave): cold
            fp = solve_from(self.params, alpha, branch, None, self.cfg, self.rule)
        if on_branch(fp, branch):  # the agnostic point has no order parameter: on it once converged there
            pts[alpha] = fp
            return fp
        if on_branch(fp, "agnostic"):
            agn.setdefault(alpha, fp)
            return fp
        if fp.status.converged and fp.branch == branch:
            # below the branch's floor: a fixed point of the label next to the agnostic one (a branch near its birth
            # or end), whose e_t is what Delta e_t compares; not recorded as on the branch
            return fp
        raise BranchLost(f"the {branch} point was lost at alpha = {alpha:.5g} ({fp.status.message}, label {fp.branch})")

    def lowest(self, alpha: float) -> tuple[str, str]:
        """(the lowest-e_t point's label, "") at a grid alpha, or ("", why unknown)."""
        states = {br: self.status(br, alpha) for br in SWEPT}
        bad = [f"{br} ({self.failed[br][alpha]})" for br, s in states.items() if s == "failed"]
        if bad:
            return "", "; ".join(bad)
        cands = {"agnostic": self.point("agnostic", alpha)} | {br: self.on[br][alpha] for br, s in
                                                               states.items() if s == "on"}
        return min(cands, key=lambda br: cands[br].observables.e_t), ""
