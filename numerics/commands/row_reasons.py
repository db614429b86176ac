"""Why each row of a sweep is, or is not, a point of its branch (docs/reference/outputs.md, sweep): the reason
column, and what the sweep says of the branch going on past the end it located or of its birth.  A row without a
point of the branch says which: the branch ends (absence), the solve failed where the branch exists (a solver
failure), or, at r >= 2 or r* >= 2, that another branch of the label may lie there.
"""

from __future__ import annotations

import math
from typing import Any

from attnphase.numerics.commands.point_record import zero_student

#: At r >= 2 or r* >= 2 a label can have several branches (docs/method.md section 11): a sweep follows one of them.
OTHER_BRANCHES = ("another {branch} fixed point may lie {where} (a cold `attnphase solve` there, or "
                  "`attnphase census`, looks for every one)")


def several_branches(res) -> bool:
    """Whether the sweep ``res`` is of the matrix form (r >= 2 or r* >= 2), where a label can have several
    branches and the sweep follows one of them."""
    return any(fp.is_matrix for fp in res.points)


#: A row past a located end counts as the branch going on where its order parameter is at least this fraction of
#: the one at the branch's point nearest the end: a continuous end has it shrink to 0 there.
BEYOND_END_FRACTION = 0.5


def _order_size(p: Any, key: str) -> float:
    """|the order parameter| ``key`` ("theta" or "m") of the rank-1 point ``p``, as its row gives it."""
    return abs(float(p.record[key]))


def _gone_on(res, branch: str) -> tuple[list, Any, str]:
    """At r = r* = 1: (the points on ``branch`` past the end located whose order parameter is at least
    :data:`BEYOND_END_FRACTION` of the one at the branch's point nearest the end, that point, the order parameter's
    record key); ([], None, "") where there are none."""
    from attnphase.numerics.phase.branch_end import on_branch

    key = {"semantic": "theta", "positional": "m"}.get(branch)
    on = [p for i, p in enumerate(res.points) if on_branch(p, branch) and not res.rule_point(i)]
    if key is None or not math.isfinite(res.end.alpha) or any(p.is_matrix for p in on):
        return [], None, ""
    inside = [p for p in on if not res.past_end(p.alpha)]
    if not inside or not any(res.past_end(p.alpha) for p in on):
        return [], None, ""
    nearest = min(inside, key=lambda p: abs(p.alpha - res.end.alpha))
    floor = BEYOND_END_FRACTION * _order_size(nearest, key)
    gone = [p for p in on if res.past_end(p.alpha) and _order_size(p, key) >= floor]
    return gone, nearest, key


def beyond_end_note(res) -> str:
    """At r = r* = 1, the rows on the branch past the end located, with an order parameter (|theta| semantic, |m|
    positional, as the rows give them) at least :data:`BEYOND_END_FRACTION` of the one at the branch's point nearest
    the end, said ("" where there are none): the branch goes on there, so the end is not where it ends (``sweep
    --branch positional --omega 0.23 --alpha 1.5:2.5:11``: m 0.213 and 0.212 at 2.1 and 2.2, past the eigenvalue's
    end 1.9435).  Where the end carries a note (its check found such points to be the solve rule's), that note."""
    gone_on, nearest, key = _gone_on(res, res.branch)
    if not gone_on:
        return ""
    rows = ", ".join(f"{p.alpha:g} ({key} {_order_size(p, key):.3g})" for p in gone_on)
    past = f"past the end located ({res.end.alpha:.4g}, by {res.end.method}) at alpha = {rows}"
    if res.end.note:  # the end's own check says what those points are
        return f"the solve rule's {res.branch} points go on {past}; {res.end.note}"
    return (f"the {res.branch} branch goes on {past}, near its {key} {_order_size(nearest, key):.3g} at {nearest.alpha:g}: where "
            f"the eigenvalue gives the end, the small-{key} fixed points leave the agnostic point there and the branch "
            "followed here ends further, at a fold not located (docs/method.md section 9)")


def birth_line(res) -> str:
    """What the sweep says of its branch's birth below its first point (:attr:`BranchSweep.birth`): its note, where
    the birth is and its error bar, or why it was not located."""
    if not math.isfinite(res.birth.alpha):
        return f"note: {res.birth_note}"
    return f"{res.birth_note}; the branch exists above it"


def past_end_note(res, branch: str) -> str:
    """At r >= 2 or r* >= 2: what cold solves found off the followed branch (:attr:`BranchSweep.others`)."""
    found = [fp.alpha for fp, cold in zip(res.points, res.others) if cold is not None]
    if found:
        return (f"a cold solve reaches a {branch} point off it at alpha = {', '.join(f'{a:g}' for a in found)} (the "
                "reason column)")
    if res.others:
        return f"a cold solve of the {branch} label reaches none of its points off it"
    return OTHER_BRANCHES.format(branch=branch, where="past it")


#: How a row's reason begins where the solve converged off the branch on the side of its located end where it
#: exists (:func:`row_reasons`): a failed point, not an absence.
SOLVER_FAILURE = "solver failure, not absence"


def row_reasons(res, branch: str) -> list[str]:
    """For every point of a sweep: "" when it is on ``branch``, else why not (the branch ends, or the
    solve failed).  A point past the branch's located end is "no <branch> fixed point here" (past an end located by
    solver failure, a solve there that does not converge is a failure, "not converged") -- at r >= 2 or r* >= 2,
    where a label can have several branches, "no point of the followed <branch> branch here", and that another may
    lie there (:data:`OTHER_BRANCHES`); a converged point off the branch says where the branch ends, or, below the
    positional branch's located birth, where it is born; one on the side of the located end where the branch exists
    is a solver failure."""
    from attnphase.numerics.phase.branch_end import on_branch

    end = res.end.alpha
    ends = math.isfinite(end)
    several = several_branches(res)
    where = f"the branch ends at alpha = {end:.4g} ({res.end.kind}) and exists {'above' if res.end_side == 'below' else 'below'} it" if ends else ""
    born = res.birth.alpha  # NaN where no birth was located: a row below it says the birth instead of the end
    birth = f"the branch is born at alpha = {born:.4g} ({res.birth.kind} from the agnostic point) and exists above it"
    none = f"no point of the followed {branch} branch here" if several else f"no {branch} fixed point here"
    gone_on = [] if res.end.note else _gone_on(res, branch)[0]  # an end whose check found them the rule's: as located
    outlasted = ", ".join(f"{p.alpha:.4g}" for p in gone_on)

    def elsewhere(i: int) -> str:
        """What a cold solve of the label found at point i (at r >= 2 or r* >= 2)."""
        if not several:
            return ""
        if not res.others:
            return f"; {OTHER_BRANCHES.format(branch=branch, where='here')}"
        cold = res.others[i]
        if cold is None:
            return f"; a cold solve of the {branch} label reaches no point of it here either"
        return (f"; a cold solve reaches a {branch} point here, e_t = {cold.observables.e_t:.5g} (`attnphase solve` at "
                "this alpha gives it)")

    def reason(i: int, fp) -> str:
        if res.rule_point(i):  # on the branch by its label and floor, but the solve rule's point (a finer rule's)
            return f"{none}: {res.rule_point(i)}"
        if on_branch(fp, branch):
            return ""
        where_here = birth if fp.alpha < born else where  # NaN compares False
        if fp.status.converged:
            got = f"the solve converged to the {fp.branch} one{zero_student(fp)}" if fp.branch != branch else \
                f"the solve reached a point whose {branch} order parameter is below the branch's floor"
            if ends and not res.past_end(fp.alpha) and not fp.alpha < born:  # on the side where the branch exists
                return f"{SOLVER_FAILURE}: {got}; {where}, here too" + elsewhere(i)
            return f"{none}: {got}" + (f"; {where_here}" if where_here else "") + elsewhere(i)
        if res.past_end(fp.alpha) and outlasted:  # the branch was found on past its end: no absence shown here
            return (f"not converged: the branch goes on past the end located at alpha = {end:.4g} (on the branch at "
                    f"{outlasted}), so it ends further, at a fold not located; residual {fp.status.residual:.2e}: "
                    f"no overlaps{elsewhere(i)}")
        if res.past_end(fp.alpha) and res.end.kind != "solver failure":
            return f"{none} ({where}); the solve did not converge, no overlaps{elsewhere(i)}"
        if res.past_end(fp.alpha):  # past an end where the solves began to fail: a failure, not an absence
            return (f"not converged: past alpha = {end:.4g}, where this branch's solves begin to fail (an end located "
                    f"by solver failure, not shown absent); residual {fp.status.residual:.2e}: no overlaps"
                    f"{elsewhere(i)}")
        msg = fp.status.message if fp.status.message.startswith("not converged") else \
            f"not converged: {fp.status.message}"
        return f"{msg}; residual {fp.status.residual:.2e}: no overlaps{elsewhere(i)}"

    return [reason(i, fp) for i, fp in enumerate(res.points)]
