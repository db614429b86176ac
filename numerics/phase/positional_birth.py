"""The positional branch's birth from the agnostic point, at rank r = r* = 1 (docs/general.md, "How alpha_c is found
where the branches never cross").

The boundary search follows the positional branch up from the first grid alpha above the semantic end
(:func:`~attnphase.numerics.phase.brackets.positional_grid`), so where the branch is born from the agnostic point
below that alpha -- a strong ridge (``--lam 0.05``), small sigma, or omega = 0 on the default model -- its sweep
does not see it.  :func:`positional_birth_below` looks once, at the grid's lowest alpha: where the agnostic point there
is stable in m (its eigenvalue mu < 1: no positional branch leaves it), the branch is born in between, where mu rises
through 1 (:func:`~attnphase.numerics.phase.branch_end.positional_birth`).  :func:`sweep_birth` does the same for
``attnphase sweep --branch positional``, between the sweep's last point below the branch and its first on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.absence import absence_evidence, agnostic_eigenvalue, evidence_clauses
from attnphase.numerics.phase.boundary_results import Boundaries, LocatedEnd, end_columns
from attnphase.numerics.phase.branch_end import BranchEnd, positional_birth
from attnphase.numerics.phase.continuation import NO_END, BranchSweep
from attnphase.numerics.phase.scalar_boundaries import DEFAULT_ALPHAS
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params


def with_birth(b: Boundaries, birth: BranchEnd) -> Boundaries:
    """``b`` with the positional branch's ``birth`` among its ends (the branch exists above it) and, where ``b`` has
    no positional end, as that end's columns."""
    end = LocatedEnd("positional", birth.alpha, birth.err, "above", birth.kind, birth.method)
    columns = {} if math.isfinite(b.positional_end) else end_columns("positional", end)
    return replace(b, ends=b.ends + (end,), **columns)


def birth_above(params: ModelParams, fallen: FixedPoint, good: FixedPoint, config: SolverConfig,
                rule: QuadratureRule | None = None) -> tuple[BranchEnd | None, str] | None:
    """The positional branch's birth between ``fallen``, a point whose positional start fell to the agnostic point,
    and ``good``, on the branch above it (:func:`~attnphase.numerics.phase.branch_end.positional_birth`: the birth, or
    None, and its note), where the agnostic point at ``fallen`` is stable in m (mu < 1); None where it is not, or
    ``fallen`` is no converged agnostic point (``params``: the state evolution's model; ``rule``: its rule, None:
    made here)."""
    if not agnostic_eigenvalue(fallen, "positional", rule or model_rule(params, config), config) < 1.0:  # NaN too
        return None
    return positional_birth(params, good, fallen.alpha, config)


def positional_birth_below(params: ModelParams, b: Boundaries, config: SolverConfig,
                           alphas: Sequence[float] | None = None) -> Boundaries:
    """``b`` (the scalar form's boundaries on the grid ``alphas``, None: its default) with the positional branch's
    birth below its sweep's first point (module doc) among its ends, as its columns where it has no positional end,
    and in a note (the note alone where the birth is not located), which also names the sweep's points between the
    grid's lowest alpha and the branch's first point, each absent, run away or solver failure
    (:func:`~attnphase.numerics.phase.absence.evidence_clauses`); ``b`` itself where the sweep has no point on the
    branch or starts at the grid's lowest alpha, a birth is already located, or the agnostic point at the lowest alpha
    (the semantic sweep's, or solved) is not stable in m there."""
    pos, sem = b.positional, b.semantic
    on = pos.on_branch() if pos is not None else []
    lowest = min(float(a) for a in (DEFAULT_ALPHAS if alphas is None else alphas))
    if not on or on[0].alpha <= lowest or any(e.branch == "positional" and e.exists == "above" for e in b.ends):
        return b
    params = se_params(params)
    rule = model_rule(params, config)
    known = [fp for sw in (sem, pos) if sw is not None for fp in sw.points
             if fp.alpha == lowest and fp.status.converged and fp.branch == "agnostic"]
    agnostic = known[0] if known else solve(params, lowest, "agnostic", config=config, rule=rule)
    if (found := birth_above(params, agnostic, on[0], config, rule)) is None:
        return b
    birth, words = found
    between = absence_evidence([fp for fp in pos.points if lowest < fp.alpha < on[0].alpha], "positional", rule,
                               config)
    words = "; ".join([words, *evidence_clauses(between)])
    b = b if birth is None else with_birth(b, birth)
    return replace(b, notes=b.notes + (words,))


def sweep_birth(params: ModelParams, sw: BranchSweep, config: SolverConfig) -> BranchSweep:
    """``sw``, a positional sweep at r = r* = 1, with the branch's birth below its first point on the branch (its
    ``birth`` and ``birth_note``): where the sweep's point just below that one converged to the agnostic point and
    the agnostic point there is stable in m (mu < 1), the birth between the two
    (:func:`~attnphase.numerics.phase.branch_end.positional_birth`; NaN alpha and the reason in the note where it is
    not located); ``sw`` itself elsewhere (another branch, no point on the branch or none below it, a point below
    it that did not converge or whose agnostic point is unstable in m)."""
    on = sw.on_branch()
    if sw.branch != "positional" or not on or on[0].is_matrix:
        return sw
    below = [fp for fp in sw.points if fp.alpha < on[0].alpha]
    if not below:
        return sw
    if (found := birth_above(se_params(params), below[-1], on[0], config)) is None:
        return sw
    birth, words = found
    return replace(sw, birth=birth or NO_END, birth_note=words)
