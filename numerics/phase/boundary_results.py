"""What a boundary search returns at one omega, at every rank: :class:`Boundaries`, its ends and its columns.

A boundary is a change of the lowest-e_t branch (``alpha_c``, from branch ``alpha_c_from`` to ``alpha_c_to``), the
first drop of the lowest branch's eps_g below eps_lin (``alpha_l``, on ``alpha_l_branch``), or the end of a branch
(``<branch>_end``: its kind and the method that located it).  Every boundary carries an error (``err_<boundary>``,
the field ``<boundary>_err``; ``alpha_c_method`` and ``<branch>_end_method`` say what it is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from attnphase.numerics.phase.continuation import BranchSweep


def model_branches(r: int) -> tuple[str, ...]:
    """The branches of the phase diagram at student rank r: semantic, positional, and mixed at r >= 2."""
    return ("semantic", "positional") + (("mixed",) if r >= 2 else ())


@dataclass(frozen=True)
class LocatedEnd:
    """Where ``branch`` stops existing: at ``alpha`` (+- ``err``); it exists on the ``exists`` side
    ("above" / "below"); ``kind`` what lies beyond (bifurcation, fold, another label, solver failure);
    ``method`` how it was located."""

    branch: str
    alpha: float
    err: float
    exists: str
    kind: str
    method: str = ""


#: A branch curve's point: (alpha, on the branch, e_t, eps_g).
CurvePoint = tuple[float, bool, float, float]


@dataclass(frozen=True, eq=False)
class Boundaries:
    """Phase boundaries at one omega (NaN where not found; ``notes`` say why).

    ``semantic`` and ``positional``: the branch sweeps of the r = r* = 1 search (with their fixed points,
    for the curves' figure); ``curves[branch]``: the branches on the alpha grid as :data:`CurvePoint` of the
    search at r >= 2 or r* >= 2; ``ends``: every end located (the first of each branch is in its columns)."""

    omega: float
    alpha_c: float
    alpha_l: float
    semantic_end: float
    positional_end: float
    notes: tuple[str, ...] = ()
    alpha_c_coarse: float = math.nan
    semantic_end_kind: str = ""
    positional_end_kind: str = ""
    semantic_end_method: str = ""
    positional_end_method: str = ""
    semantic_end_exists: str = ""
    positional_end_exists: str = ""
    semantic: BranchSweep | None = field(default=None, repr=False)
    positional: BranchSweep | None = field(default=None, repr=False)
    alpha_c_err: float = math.nan
    alpha_l_err: float = math.nan
    semantic_end_err: float = math.nan
    positional_end_err: float = math.nan
    r: int = 1
    r_star: int = 1
    alpha_c_from: str = ""
    alpha_c_to: str = ""
    alpha_c_method: str = ""
    alpha_l_branch: str = ""
    eps_lin: float = math.nan
    mixed_end: float = math.nan
    mixed_end_err: float = math.nan
    mixed_end_kind: str = ""
    mixed_end_method: str = ""
    mixed_end_exists: str = ""
    ends: tuple[LocatedEnd, ...] = ()
    curves: dict[str, tuple[CurvePoint, ...]] = field(default_factory=dict, repr=False)

    @property
    def branches(self) -> tuple[str, ...]:
        return model_branches(self.r)

    def end(self, branch: str) -> LocatedEnd | None:
        """The first located end of ``branch`` (None where it has none)."""
        return next((e for e in self.ends if e.branch == branch), None)

    def errors(self) -> dict[str, float]:
        """``err_<boundary>`` (the field ``<boundary>_err``) of every boundary of :func:`boundary_keys` (NaN where it has none) and
        ``<boundary>_found``: 1 where the boundary was found (0 for an end whose kind is a solver failure: the alpha
        below which the branch was not reached, not where it ends or is born)."""
        out: dict[str, float] = {}
        for key in boundary_keys(self.r):
            failed = "solver failure" in getattr(self, f"{key}_kind", "")
            out[f"err_{key}"] = getattr(self, f"{key}_err")
            out[f"{key}_found"] = int(math.isfinite(getattr(self, key)) and not failed)
        return out

    def row(self) -> dict[str, Any]:
        """The CSV row: the columns of :func:`boundary_columns`, the notes and :meth:`errors`."""
        return ({k: getattr(self, k) for k in boundary_columns(self.r)} | {"notes": "; ".join(self.notes)}
                | self.errors())


def end_columns(branch: str, end: Any) -> dict[str, Any]:
    """The fields ``<branch>_end``, ``_end_err``, ``_end_kind``, ``_end_method`` and ``_end_exists`` of
    :class:`Boundaries` from ``end`` (a :class:`~attnphase.numerics.phase.branch_end.BranchEnd`, which has no side:
    "", set by the scalar form's labels from its sweep, or a :class:`LocatedEnd`): ``_end_exists`` the side of the
    end the branch exists on ("above": the end is the branch's birth; "below"), "" where there is no end."""
    side = getattr(end, "exists", "") if math.isfinite(end.alpha) else ""
    return {f"{branch}_end": end.alpha, f"{branch}_end_err": end.err, f"{branch}_end_kind": end.kind,
            f"{branch}_end_method": end.method, f"{branch}_end_exists": side}


def exists_side(end_side: str) -> str:
    """The side of its end a swept branch exists on (``LocatedEnd.exists``) from the sweep's ``end_side`` (the side
    of the branch the end lies on: "below" for a branch that exists above its end)."""
    return {"below": "above", "above": "below"}.get(end_side, "")


def boundary_keys(r: int = 1) -> tuple[str, ...]:
    """The boundaries that carry errors: alpha_c, alpha_l and every branch's end."""
    return ("alpha_c", "alpha_l") + tuple(f"{b}_end" for b in model_branches(r))


def boundary_columns(r: int = 1) -> tuple[str, ...]:
    """The columns of :meth:`Boundaries.row` before ``notes``: the boundaries, the correction's coarse alpha_c,
    each branch end's kind, method and the side the branch exists on, the branches alpha_c lies between and how it was located, the branch
    alpha_l lies on, eps_lin."""
    branches = model_branches(r)
    return (("omega",) + boundary_keys(r) + ("alpha_c_coarse",) + tuple(f"{b}_end_kind" for b in branches)
            + tuple(f"{b}_end_method" for b in branches) + tuple(f"{b}_end_exists" for b in branches)
            + ("alpha_c_from", "alpha_c_to", "alpha_c_method", "alpha_l_branch", "eps_lin"))


def error_columns(r: int = 1) -> tuple[str, ...]:
    """The columns of :meth:`Boundaries.errors`."""
    return tuple(c for k in boundary_keys(r) for c in (f"err_{k}", f"{k}_found"))


#: The boundaries of rank 1 (:func:`boundary_keys` at r = 1).
BOUNDARY_KEYS = boundary_keys(1)


def failed_boundaries(omega: float, reason: str, r: int = 1, r_star: int = 1) -> Boundaries:
    """NaN boundaries whose note is a failed task's error."""
    nan = math.nan
    return Boundaries(omega=omega, alpha_c=nan, alpha_l=nan, semantic_end=nan, positional_end=nan,
                      notes=(f"task failed: {reason}",), r=r, r_star=r_star)
