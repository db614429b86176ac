"""A branch's absence told apart from solver failure, from the points of a sweep that found none of it.

A symmetry-breaking branch (positional: m != 0; semantic: theta != 0) can only leave the agnostic point where the SE
map's eigenvalue there in its direction reaches 1 (mu in m, lambda in theta: :mod:`attnphase.numerics.se.stability`,
docs/model.md section 6).  So at an alpha where the branch's start converged to the agnostic point and that point's
eigenvalue in the branch's direction is below 1 (the largest one, on the direction's range: an eigenvalue below -1 makes
the map's iteration oscillate away from the point but no branch leave it), the branch is *absent*; where the start did
not converge, or fell to an agnostic point of eigenvalue >= 1 in that direction, nothing is shown: *solver failure*.
Without a ridge (lam = 0) a start whose iterates ran away (q far above the teacher's:
:func:`~attnphase.numerics.se.results.runaway_q`) shows that no fixed point is reached there: *no fixed point*, told
apart from both.  :func:`absence_evidence` says which, alpha by alpha (:class:`Absence`), :func:`absence_note` as a
table's note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.branch_end import BRANCH_FLOORS, below_floor, on_branch, overlap_size, size_text
from attnphase.numerics.se.stability import m_stability_at, theta_stability_at
from attnphase.numerics.quadrature.rules import QuadratureRule, finer_rule
from attnphase.numerics.se.overlaps import on_branch_subspace
from attnphase.numerics.se.results import FixedPoint, runaway_q
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.stalls import AGNOSTIC_EIGENVALUE
from attnphase.numerics.se.state_evolution import solve

if TYPE_CHECKING:
    from attnphase.numerics.phase.continuation import BranchSweep

#: The eigenvalue of each branch's direction at the agnostic point, and its symbol.
EIGENVALUE = {"positional": (m_stability_at, "mu", "m"), "semantic": (theta_stability_at, "lambda", "theta")}


def agnostic_eigenvalue(fp: FixedPoint, branch: str, rule: QuadratureRule, config: SolverConfig) -> float:
    """The eigenvalue of the SE map in ``branch``'s direction at ``fp``, a converged agnostic point (NaN otherwise):
    the one the solve's judgement kept (:data:`~attnphase.numerics.se.stalls.AGNOSTIC_EIGENVALUE`) where it was
    computed on ``rule``, else computed here."""
    if not (fp.status.converged and fp.branch == "agnostic") or branch not in EIGENVALUE:
        return math.nan
    at, symbol = EIGENVALUE[branch][0], EIGENVALUE[branch][1]
    kept = fp.extra.get(AGNOSTIC_EIGENVALUE, {}).get(symbol)
    if kept is not None and kept[0] == rule.name:
        return kept[1]  # computed by the solve's judgement on this rule, at the same point
    # a point labelled agnostic has |m|, |th0| <= LABEL_TOL; the eigenvalue is the one at m = 0, th0 = 0
    return float(at(fp.params, fp.alpha, on_branch_subspace(fp.overlaps, "agnostic"), rule, config)[0])


def projected_agnostic_eigenvalue(fp: FixedPoint, branch: str, rule: QuadratureRule, config: SolverConfig) -> float:
    """The eigenvalue of the SE map in ``branch``'s direction (positional or semantic) at the agnostic point next to
    ``fp``, a converged point of ``branch``'s label: taken at ``fp`` with its order parameters set to 0; NaN for any
    other point."""
    if branch not in EIGENVALUE or not (fp.status.converged and fp.branch == branch):
        return math.nan
    at = EIGENVALUE[branch][0]
    return float(at(fp.params, fp.alpha, on_branch_subspace(fp.overlaps, "agnostic"), rule, config)[0])


#: The tolerance of the agnostic solve behind :func:`nearby_agnostic_eigenvalue` (an eigenvalue compared with 1).
NEARBY_AGNOSTIC_TOL = 1e-6


def nearby_agnostic_eigenvalue(fp: FixedPoint, branch: str, rule: QuadratureRule, config: SolverConfig) -> float:
    """The eigenvalue in ``branch``'s direction at the agnostic fixed point on ``rule`` reached from ``fp`` (a
    converged point of ``branch``'s label) with its order parameters set to 0; NaN where that solve does not converge
    or for any other point.  :func:`projected_agnostic_eigenvalue` takes the eigenvalue at the projection itself,
    whose q and V can lie far from the agnostic point's: ``--A 0.5,0.5;0.5,0.5 --alpha 2 --precision fast``, a
    positional point at q = 0.233, V = 78, its projection's mu 1.20, the agnostic point's (q = 0.275, V = 92) 0.54."""
    if branch not in EIGENVALUE or not (fp.status.converged and fp.branch == branch):
        return math.nan
    start = on_branch_subspace(fp.overlaps, "agnostic")
    ag = solve(fp.params, fp.alpha, "agnostic", init=start, rule=rule,
               config=config.replace(e_t_quadrature=None, tol=max(config.tol, NEARBY_AGNOSTIC_TOL)))
    return agnostic_eigenvalue(ag, branch, rule, config)


def beside_agnostic_eigenvalue(fp: FixedPoint, branch: str, rule: QuadratureRule, config: SolverConfig) -> float:
    """:func:`projected_agnostic_eigenvalue` for a converged point of ``branch``'s label whose order parameter lies
    below the branch's floor (the rule's noise next to the agnostic point, docs/method.md section 5); NaN for any
    other point."""
    return projected_agnostic_eigenvalue(fp, branch, rule, config) if below_floor(fp, branch) else math.nan


def landing_note(fp: FixedPoint, branch: str, rule: QuadratureRule, config: SolverConfig) -> tuple[bool, str]:
    """What one solve started on ``branch`` (positional or semantic) that converged to the agnostic point shows, as
    (absent, note): the branch absent where that point's eigenvalue in the branch's direction is below 1 (no branch
    leaves it), else solver failure (a branch leaves the agnostic point, the start did not reach it); (False, "")
    where nothing is shown (another outcome, or an eigenvalue that could not be computed)."""
    eig = agnostic_eigenvalue(fp, branch, rule, config)
    if not math.isfinite(eig):
        return False, ""
    symbol, name = EIGENVALUE[branch][1], EIGENVALUE[branch][2]
    if eig < 1.0:
        return True, (f"absent: the agnostic point's eigenvalue in {name} is below 1 here ({symbol} = {eig:.3g}), so "
                      f"no {branch} branch leaves it")
    return False, (f"solver failure, not absence: the agnostic point's eigenvalue in {name} is {symbol} = {eig:.3g} "
                   f">= 1 here, so a {branch} branch leaves it, which the {branch} start did not reach (a finer "
                   f"--quadrature, or attnphase sweep --branch {branch} from another alpha, may reach it: near the "
                   "branch's end its order parameter is small and a coarse rule's jumps hide it)")


def beside_note(fp: FixedPoint, branch: str, rule: QuadratureRule, config: SolverConfig) -> tuple[bool, str]:
    """What one solve started on ``branch`` (positional or semantic) that converged to a point of its label below the
    branch's floor shows, as (absent, note): the branch absent where the agnostic point next to it is stable in the
    branch's direction (:func:`beside_agnostic_eigenvalue` below 1: the point is the rule's noise there), else solver
    failure (a branch leaves the agnostic point, with an order parameter the start did not reach); (False, "") for
    any other point or an eigenvalue that could not be computed."""
    eig = beside_agnostic_eigenvalue(fp, branch, rule, config)
    if not math.isfinite(eig):
        return False, ""
    symbol, name = EIGENVALUE[branch][1], EIGENVALUE[branch][2]
    ((key, floor),) = BRANCH_FLOORS[branch]
    point = (f"the solve converged next to the agnostic point ({size_text(fp, key, label=name)}, below the "
             f"branch's floor {floor:g})")
    if eig < 1.0:
        return True, (f"absent: {point}, which is stable in {name} here ({symbol} = {eig:.4g} < 1): no {branch} branch "
                      "leaves it, the point is the rule's noise")
    return False, (f"solver failure, not absence: {point}, where the agnostic point is unstable in {name} ({symbol} = "
                   f"{eig:.4g} >= 1): a {branch} branch leaves it, with a larger {name} than the start reached (near "
                   f"the branch's end; attnphase sweep --branch {branch} from a larger alpha may reach it)")


def finer_rule_note(fp: FixedPoint, branch: str, rule: QuadratureRule, config: SolverConfig) -> tuple[bool, str]:
    """What a point on ``branch`` (positional or semantic, above its floor) next to an agnostic point stable in the
    branch's direction shows, as (absent, note).  There (:func:`projected_agnostic_eigenvalue` below 1 on ``rule``)
    no branch leaves the agnostic point: the point lies on a branch born at a fold, or the rule's jumps made it, a
    fixed point of that rule alone (docs/method.md section 5); where the projection's eigenvalue is not below 1,
    the agnostic fixed point's is asked (:func:`nearby_agnostic_eigenvalue`).  Solved again at its alpha, warm from
    it, on
    ``config.end_quadrature`` (a finer rule, :func:`~attnphase.numerics.quadrature.rules.finer_rule`): the branch
    absent where that solve reaches the agnostic point or a point of the label below the floor (the point was the
    rule's); (False, note) where it does not converge (nothing shown); (False, "") where it stays on the branch, for
    any other point, or without a finer rule.  ``solve --L 3 --P "1,-1,0;-1,1,0;0,0,0" --alpha 2 --branch positional
    --precision fast``: |m| = 0.096 (m_1 = 0.068 +- 0.018) on ``sobol8:4``, mu = 0.68 beside it, the agnostic point
    on ``sobol10:4``.
    """
    finer = finer_rule(fp.params.L, config.end_quadrature, config.quadrature)
    if finer is None or branch not in EIGENVALUE or not on_branch(fp, branch):
        return False, ""
    eig = projected_agnostic_eigenvalue(fp, branch, rule, config)
    if not eig < 1.0:
        eig = nearby_agnostic_eigenvalue(fp, branch, rule, config)
    if not eig < 1.0:
        return False, ""
    symbol, name = EIGENVALUE[branch][1], EIGENVALUE[branch][2]
    ((key, floor),) = BRANCH_FLOORS[branch]
    fine_cfg = config.replace(quadrature=finer, e_t_quadrature=None)
    again = solve(fp.params, fp.alpha, branch, init=fp.overlaps, config=fine_cfg)
    point = (f"the solve converged to {size_text(fp, key, label=name)} next to the agnostic point, which is "
             f"stable in {name} here ({symbol} = {eig:.3g} < 1: no {branch} branch leaves it), and on {finer}, a finer "
             "rule, the solve from that point")
    if not again.status.converged:
        # from the branch's own start on the finer rule, as a solve on that rule begins: the agnostic point stable there
        cold = solve(fp.params, fp.alpha, branch, config=fine_cfg)
        absent, note = landing_note(cold, branch, model_rule(fp.params, fine_cfg), fine_cfg)
        if absent:
            return True, (f"absent: {point} does not converge (residual {again.status.residual:.1e}) and from the "
                          f"branch's start reaches the agnostic point ({note.removeprefix('absent: ')}): the point "
                          "was the rule's jumps, not the model's")
        return False, (f"{point} does not converge (residual {again.status.residual:.1e}): whether the point is the "
                       f"rule's or the model's is not shown")
    if again.branch == "agnostic" or below_floor(again, branch):
        return True, (f"absent: {point} reaches the agnostic point ({size_text(again, key, label=name)}, "
                      f"below the branch's floor {floor:g}): the point was the rule's jumps, not the model's")
    if again.branch != branch:
        return False, f"{point} reaches the {again.branch} point: whether the point is the rule's is not shown"
    return False, ""


def finer_rule_rows(sw: BranchSweep, config: SolverConfig) -> BranchSweep:
    """``sw`` (a sweep at r = r* = 1 on ``config``) with its :attr:`~attnphase.numerics.phase.continuation.BranchSweep.
    rule_points`: its points on the branch judged as ``attnphase solve`` judges its point (:func:`finer_rule_note`),
    the note where the solve from one on the finer rule reaches the agnostic point (the point was the rule's), ""
    elsewhere.  Such points lie where the finer rule's branch has ended and the solve rule's goes on, at the ends of
    the stretch of points on the branch: the points are judged from each end of it inwards, up to the first that the
    check keeps (one eigenvalue each, and a solve on the finer rule where it is below 1; two eigenvalues where none
    is the rule's)."""
    on = [i for i, fp in enumerate(sw.points) if on_branch(fp, sw.branch)]
    notes: dict[int, str] = {}  # every point judged: its note, "" where the check keeps it
    for side in (on, on[::-1]):
        for i in side:
            if i not in notes:  # else judged from the other end
                absent, note = finer_rule_note(sw.points[i], sw.branch, model_rule(sw.points[i].params, config),
                                               config)
                notes[i] = note if absent else ""
            if not notes[i]:
                break
    rule = tuple(notes.get(i, "") for i in range(len(sw.points)))
    return replace(sw, rule_points=rule) if any(rule) else sw


@dataclass(frozen=True)
class Absence:
    """What a sweep of ``branch`` none of whose points is on it shows, alpha by alpha: ``absent`` -- (alpha, the
    agnostic point's eigenvalue in the branch's direction, < 1) where the start fell to that stable agnostic point;
    ``runaway`` -- (alpha, q where its iterates went farthest) where, without a ridge, they ran away; ``beside`` --
    (alpha, the eigenvalue, < 1) where the start converged to a point of the branch's label below its floor next to
    such a stable agnostic point (:func:`beside_agnostic_eigenvalue`): absent too; ``failed`` -- why nothing is
    shown at the other alphas (solver failure)."""

    branch: str
    absent: tuple[tuple[float, float], ...]
    failed: tuple[str, ...]
    runaway: tuple[tuple[float, float], ...] = ()
    beside: tuple[tuple[float, float], ...] = ()

    @property
    def everywhere(self) -> bool:
        """Absent or run away at every alpha of the sweep (and at least one): no solver failure among them."""
        return bool(self.absent or self.runaway or self.beside) and not self.failed


def absence_evidence(points: Sequence[FixedPoint], branch: str, rule: QuadratureRule,
                     config: SolverConfig) -> Absence:
    """The :class:`Absence` of ``branch`` shown by ``points`` (one per alpha, each started on the branch, none on it)."""
    name, symbol = EIGENVALUE[branch][2], EIGENVALUE[branch][1]
    absent: list[tuple[float, float]] = []
    runaway: list[tuple[float, float]] = []
    beside: list[tuple[float, float]] = []
    failed: list[str] = []
    for fp in points:
        eig = agnostic_eigenvalue(fp, branch, rule, config)
        if eig < 1.0:
            absent.append((fp.alpha, eig))
        elif (near := beside_agnostic_eigenvalue(fp, branch, rule, config)) < 1.0:
            beside.append((fp.alpha, near))
        elif math.isfinite(q := runaway_q(fp)):
            runaway.append((fp.alpha, q))
        elif not fp.status.converged:
            failed.append(f"{fp.alpha:.4g} (not converged, residual {fp.status.residual:.1e})")
        elif fp.branch == "agnostic":
            failed.append(f"{fp.alpha:.4g} (fell to the agnostic point, unstable in {name}: {symbol} = {eig:.3g})")
        else:  # another branch, or this one with an order parameter below its floor (not on the branch)
            low = [f"|{n}| = {overlap_size(fp, n):.3g} < {floor:g}" for n, floor in BRANCH_FLOORS.get(fp.branch, ())
                   if overlap_size(fp, n) < floor] if fp.branch == branch else []
            failed.append(f"{fp.alpha:.4g} (converged to the {fp.branch} point"
                          + (f", below the branch's floor: {', '.join(low)})" if low else ")"))
    return Absence(branch, tuple(absent), tuple(failed), tuple(runaway), tuple(beside))


def absence_note(points: Sequence[FixedPoint], branch: str, rule: QuadratureRule, config: SolverConfig) -> str:
    """The note of a sweep of ``branch`` none of whose ``points`` (one per alpha, started on the branch) is on it
    (their :func:`absence_evidence`):

    * ``"<branch> branch absent at every alpha of the grid solved ..."`` -- each start converged to the agnostic point
      and that point's eigenvalue in the branch's direction is below 1 (the largest one met is given);
    * otherwise ``"no <branch> fixed point at any alpha of the grid"`` where no alpha is solver failure, else
      ``"no converged <branch> point in range"``, then the alphas where it is absent (that evidence), those where
      its iterates ran away without a ridge (no fixed point reached: the farthest q met is given) and those of
      solver failure (not converged, or an agnostic point of eigenvalue >= 1 in the branch's direction, or another
      branch reached).
    """
    if not points:
        return f"no {branch} start was solved"
    symbol, name = EIGENVALUE[branch][1], EIGENVALUE[branch][2]
    ev = absence_evidence(points, branch, rule, config)
    top = max((e for _, e in ev.absent), default=math.nan)
    where = ", ".join(f"{a:.4g}" for a, _ in ev.absent)
    if ev.everywhere and not ev.runaway and not ev.beside:
        return (f"{branch} branch absent at every alpha of the grid solved ({where}): each {branch} start converged to "
                f"the agnostic point, its eigenvalue in {name} below 1 there ({symbol} <= {top:.3g})")
    parts = [f"no {branch} fixed point at any alpha of the grid" if ev.everywhere
             else f"no converged {branch} point in range"]
    return "; ".join(parts + evidence_clauses(ev))


def evidence_clauses(ev: Absence) -> list[str]:
    """The clauses of :func:`absence_note` that say what ``ev`` shows, alpha by alpha: absent (the start fell to the
    stable agnostic point, or converged next to it), no fixed point (ran away without a ridge), solver failure."""
    symbol, name = EIGENVALUE[ev.branch][1], EIGENVALUE[ev.branch][2]
    parts = []
    if ev.absent:
        parts.append("absent at alpha = " + ", ".join(f"{a:.4g}" for a, _ in ev.absent) + " (the start fell to the "
                     f"agnostic point, {symbol} <= {max(e for _, e in ev.absent):.3g} < 1)")
    if ev.beside:
        size = "|theta|" if name == "theta" else "|m|"
        parts.append("absent at alpha = " + ", ".join(f"{a:.4g}" for a, _ in ev.beside) + f" (the start converged "
                     f"next to the agnostic point, {size} below the branch's floor, and {symbol} <= "
                     f"{max(e for _, e in ev.beside):.3g} < 1 at the agnostic point there)")
    if ev.runaway:
        parts.append("no fixed point at alpha = " + ", ".join(f"{a:.4g}" for a, _ in ev.runaway)
                     + f" (lam = 0: the iterates' q ran away, up to {max(q for _, q in ev.runaway):.2g}; nothing "
                       "bounds the student's norm)")
    if ev.failed:
        parts.append("solver failure at alpha = " + ", ".join(ev.failed))
    return parts
