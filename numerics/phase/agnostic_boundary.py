"""alpha_c at rank r = r* = 1 where the positional branch is absent: the change of the global minimum from the
agnostic point to the semantic one (docs/model.md section 6).

Where every positional start of the phase diagram's sweep fell to an agnostic point that is stable in m
(:func:`~attnphase.numerics.phase.absence.absence_evidence`: L = 3 with P = I), the fixed points along alpha are the
agnostic point A (m = 0, th0 = 0) and, from its birth on, the semantic point B.  alpha_c is then defined as at
every other rank (:mod:`attnphase.numerics.phase.lowest_branch`): the first change of the lowest-e_t fixed point
from a positional or agnostic point to a semantic one, with ``alpha_c_from`` = agnostic, ``alpha_c_to`` =
semantic:

* B is born from A inside the grid (its end located as the bifurcation of the agnostic point, lambda = 1) and lies
  below A at its first grid point, e_t(B) <= e_t(A): alpha_c is that birth, with its standard error from the
  rules' blocks (:func:`~attnphase.numerics.phase.bifurcation.branch_bifurcation`);
* otherwise alpha_c is the first root of Delta e_t(alpha) = e_t(B) - e_t(A) from > 0 to <= 0 between grid points
  where both are on, by Brent's method on solves warm from the nearest point of each branch, with the standard
  error of Delta e_t's blocks at the nearest common grid point divided by its slope Delta E[M]
  (:func:`~attnphase.numerics.phase.boundary_refinement.coarse_alpha_c_error`).

Measured (L = 3, P = I, omega = 0.2, default rules): the semantic branch is born from the agnostic point by a
bifurcation and lies below it wherever both are on, so alpha_c is the semantic branch's birth.
"""

from __future__ import annotations

import math
from dataclasses import replace

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.absence import absence_evidence
from attnphase.numerics.phase.boundary_refinement import coarse_alpha_c_error
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.branch_end import on_branch
from attnphase.numerics.roots import brent_root
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: Tolerance in alpha of the root of Delta e_t (as the scalar form's alpha_c, ``xtol``).
ROOT_XTOL = 1e-4

#: The scalar form's notes on alpha_c that speak of the positional branch, replaced where alpha_c is found here.
POSITIONAL_NOTES = ("alpha_c: the branches never coexist on the grid", "alpha_c outside the range where both branches")


class _Lost(RuntimeError):
    """A solve of the root search did not converge onto its branch."""


def _on(params: ModelParams, pts: list[FixedPoint], branch: str, alpha: float, cfg: SolverConfig, rule) -> FixedPoint:
    """``branch``'s point at alpha: one of ``pts`` there, else solved warm from the nearest of them (added to them)."""
    here = next((p for p in pts if p.alpha == alpha), None)
    if here is not None:
        return here
    near = min(pts, key=lambda p: abs(p.alpha - alpha))
    fp = solve(params, alpha, branch, init=near.overlaps, memory=near.memory, config=cfg, rule=rule)
    if not on_branch(fp, branch):
        raise _Lost(f"the {branch} point was lost at alpha = {alpha:.5g} ({fp.status.message}, label {fp.branch})")
    pts.append(fp)
    return fp


def agnostic_alpha_c(params: ModelParams, b: Boundaries, config: SolverConfig) -> Boundaries:
    """``b`` (the scalar form's boundaries) with alpha_c from the agnostic point to the semantic one (module doc)
    where ``b`` has no alpha_c and its positional sweep shows the positional branch absent at every alpha; ``b``
    unchanged otherwise."""
    sem, pos = b.semantic, b.positional
    if math.isfinite(b.alpha_c) or sem is None or pos is None or pos.on_branch() or not pos.points:
        return b
    params = se_params(params)
    rule = model_rule(params, config)
    if not absence_evidence(pos.points, "positional", rule, config).everywhere:
        return b
    agn = [p for p in pos.points if p.status.converged and p.branch == "agnostic"]
    s_on = sem.on_branch()
    notes = [n for n in b.notes if not n.startswith(POSITIONAL_NOTES)]
    if not s_on:
        return replace(b, notes=tuple(notes + ["alpha_c: the global minimum is the agnostic point wherever known "
                                               "(no semantic point on the grid): no change in range"]))
    try:
        first = s_on[0]
        d_first = first.observables.e_t - _on(params, agn, "agnostic", first.alpha, config, rule).observables.e_t
        born = math.isfinite(sem.end.alpha) and sem.end_side == "below" and sem.end.kind == "bifurcation"
        if born and d_first <= 0:
            method = (f"birth of the semantic branch from the agnostic point (bifurcation, lambda = 1, by "
                      f"{sem.end.method}); e_t(semantic) - e_t(agnostic) = {d_first:.3g} <= 0 at its first grid point "
                      f"{first.alpha:.4g}; err = the birth's standard error over the rules' blocks")
            alpha_c, err = sem.end.alpha, sem.end.err
        else:
            common = sorted({p.alpha for p in s_on} & {p.alpha for p in agn})
            delta = [(a, _on(params, s_on, "semantic", a, config, rule).observables.e_t
                      - _on(params, agn, "agnostic", a, config, rule).observables.e_t) for a in common]
            pair = next(((x, y) for x, y in zip(delta, delta[1:]) if x[1] > 0 >= y[1]), None)
            if pair is None:
                lower = "semantic" if delta and all(d <= 0 for _, d in delta) else "agnostic"
                return replace(b, notes=tuple(notes + [
                    f"alpha_c: no change of the global minimum between the agnostic and the semantic point on the grid "
                    f"({lower} lower wherever both are on)"]))

            def gap(a: float) -> float:
                return (_on(params, s_on, "semantic", a, config, rule).observables.e_t
                        - _on(params, agn, "agnostic", a, config, rule).observables.e_t)

            alpha_c = brent_root(gap, pair[0][0], pair[1][0], ROOT_XTOL)
            err = coarse_alpha_c_error(s_on, agn, alpha_c, config)
            method = ("Brent's root of Delta e_t = e_t(semantic) - e_t(agnostic) on solves; err = standard error of "
                      "Delta e_t's blocks over its slope Delta E[M] at the nearest common grid point")
    except _Lost as exc:
        return replace(b, notes=tuple(notes + [f"alpha_c (agnostic -> semantic): not located: {exc}"]))
    note = (f"alpha_c = {alpha_c:.4g} +- {err:.2g}: the global minimum changes from the agnostic point (the positional "
            f"branch absent) to the semantic point ({method})")
    out = replace(b, alpha_c=alpha_c, alpha_c_err=err, alpha_c_coarse=alpha_c, alpha_c_from="agnostic",
                  alpha_c_to="semantic", alpha_c_method=method, notes=tuple(notes + [note]))
    if math.isfinite(b.alpha_l) and b.alpha_l < alpha_c:
        out = replace(out, notes=out.notes + (f"alpha_l = {b.alpha_l:.4g} lies below alpha_c on the semantic branch, "
                                              "which is not the global minimum there",))
    return out
