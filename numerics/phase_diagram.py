"""Phase boundaries of MODEL.md section 6 at one omega, and the (alpha, omega) phase diagram.

* ``alpha_c`` -- root of Delta e_t(alpha) = e_t(semantic) - e_t(positional) where both
  branches exist (the global minimum switches from positional to semantic);
* ``alpha_l`` -- the smallest alpha >= alpha_c at which the semantic test error drops
  below eps_lin (equal to alpha_c when it is already below there);
* spinodals -- where the semantic branch (followed downward) or the positional branch
  (followed upward) ends inside the alpha range.

Roots are bracketed on the branch sweeps and refined with Brent's method to
``xtol`` in alpha; every function evaluation is a fixed point warm-started from the
nearest converged point of the same branch.  A boundary outside the range is NaN
and the reason is recorded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import brentq

from attnphase.numerics.continuation import BranchSweep, sweep
from attnphase.numerics.state_evolution import FixedPoint, SolverConfig, solve
from attnphase.numerics.quadrature import make_rule
from attnphase.theory.params import ModelParams

DEFAULT_ALPHA_RANGE = (0.1, 3.0)


@dataclass(frozen=True, eq=False)
class Boundaries:
    """Phase boundaries at one omega (NaN where outside the searched range; see ``notes``)."""

    omega: float
    alpha_c: float
    alpha_l: float
    spinodal_semantic: float
    spinodal_positional: float
    notes: tuple[str, ...] = ()
    positional_end_reason: str = ""
    semantic: BranchSweep | None = field(default=None, repr=False)
    positional: BranchSweep | None = field(default=None, repr=False)

    def row(self) -> dict[str, float | str]:
        return {
            "omega": self.omega,
            "alpha_c": self.alpha_c,
            "alpha_l": self.alpha_l,
            "spinodal_semantic": self.spinodal_semantic,
            "spinodal_positional": self.spinodal_positional,
            "positional_end_reason": self.positional_end_reason,
            "notes": "; ".join(self.notes),
        }


def _nearest(points: Sequence[FixedPoint], alpha: float) -> FixedPoint:
    return min(points, key=lambda p: abs(p.alpha - alpha))


def _root(
    f: Callable[[float], float], a: float, b: float, xtol: float
) -> float:
    return float(brentq(f, a, b, xtol=xtol, rtol=4 * np.finfo(float).eps))


def phase_boundaries(
    params: ModelParams,
    alphas: Sequence[float] | None = None,
    *,
    prox: str = "global",
    config: SolverConfig | None = None,
    xtol: float = 1e-4,
    spinodal_tol: float = 1e-3,
    progress: Callable[[FixedPoint], None] | None = None,
) -> Boundaries:
    """alpha_c, alpha_l and the spinodals at ``params.omega`` over the alpha grid ``alphas``."""
    if alphas is None:
        alphas = np.linspace(*DEFAULT_ALPHA_RANGE, 12)
    cfg = replace(config or SolverConfig(), prox=prox)
    rule = make_rule(params.L, cfg.quadrature)
    kw = dict(config=cfg, spinodal_tol=spinodal_tol, progress=progress, past_end=False)
    sem = sweep(params, alphas, "semantic", prox, **kw)
    pos = sweep(params, alphas, "positional", prox, **kw)
    notes: list[str] = []
    for sw in (sem, pos):
        if sw.end_reason == "no convergence":
            notes.append(f"{sw.branch} end at {sw.spinodal:.3f} found by solver failure (may be numerical)")
    s_on, p_on = sem.on_branch(), pos.on_branch()  # fresh lists: on_branch_solve adds its points to them

    def on_branch_solve(branch: str, pts: list[FixedPoint], alpha: float) -> FixedPoint:
        # from the nearest converged point; once more from the next nearest (on the other side,
        # where there is one) before giving up: a single stalled solve must not lose a boundary
        ranked = sorted(pts, key=lambda p: abs(p.alpha - alpha))
        tries = ranked[:1] + [p for p in ranked[1:] if (p.alpha - alpha) * (ranked[0].alpha - alpha) < 0][:1]
        tries += [p for p in ranked[1:2] if len(tries) < 2]
        for near in tries:
            fp = solve(params, alpha, branch, init=near.overlaps, memory=near.memory, config=cfg, rule=rule)
            if fp.status.converged and fp.branch == branch:
                break
        else:
            raise _BranchLost(f"{branch} branch lost at alpha = {alpha:.5f} ({fp.status.message}, label {fp.branch})")
        pts.append(fp)  # root-finding iterates close in: later evaluations start nearer
        return fp

    # alpha_c: sign change of Delta e_t on the common grid
    alpha_c = math.nan
    sd = {p.alpha: p for p in s_on}
    pd = {p.alpha: p for p in p_on}
    common = sorted(set(sd) & set(pd))
    if not s_on:
        notes.append("no converged semantic point in range")
    if not p_on:
        notes.append("no converged positional point in range")
    delta = [(a, sd[a].observables.e_t - pd[a].observables.e_t) for a in common]
    bracket = next(((a0, a1) for (a0, d0), (a1, d1) in zip(delta, delta[1:]) if d0 > 0 >= d1), None)
    if bracket is not None:
        def d_et(alpha: float) -> float:
            return (
                on_branch_solve("semantic", s_on, alpha).observables.e_t
                - on_branch_solve("positional", p_on, alpha).observables.e_t
            )

        try:
            alpha_c = _root(d_et, *bracket, xtol)
        except _BranchLost as exc:
            notes.append(f"alpha_c: {exc}")
    elif delta:
        sign = "semantic lower" if all(d <= 0 for _, d in delta) else "positional lower"
        notes.append(f"alpha_c outside the range where both branches exist ({sign} throughout)")
        if all(d <= 0 for _, d in delta) and not math.isnan(sem.spinodal):
            notes.append("the semantic branch is the global minimum wherever it exists")
    else:
        notes.append("alpha_c: the branches never coexist on the grid")

    # alpha_l: semantic eps_g meets eps_lin, at or above alpha_c
    alpha_l = math.nan
    if s_on:
        eps_lin = s_on[0].observables.eps_lin
        lo = alpha_c if not math.isnan(alpha_c) else None
        cand = sorted((p for p in s_on if lo is None or p.alpha >= lo), key=lambda p: p.alpha)
        diff = [(p.alpha, p.observables.eps_g - eps_lin) for p in cand]
        if lo is not None:
            at_c = on_branch_solve("semantic", s_on, lo).observables.eps_g - eps_lin
            diff = [(lo, at_c)] + diff
        if diff and diff[0][1] <= 0:
            alpha_l = diff[0][0] if lo is not None else math.nan
            if lo is None:
                notes.append("alpha_l: semantic eps_g already below eps_lin at the lower end of the range")
        else:
            br = next(((a0, a1) for (a0, d0), (a1, d1) in zip(diff, diff[1:]) if d0 > 0 >= d1), None)
            if br is None:
                notes.append("alpha_l: semantic eps_g stays above eps_lin in the range")
            else:
                try:
                    alpha_l = _root(
                        lambda a: on_branch_solve("semantic", s_on, a).observables.eps_g - eps_lin, *br, xtol
                    )
                except _BranchLost as exc:
                    notes.append(f"alpha_l: {exc}")
    return Boundaries(
        omega=params.omega,
        alpha_c=alpha_c,
        alpha_l=alpha_l,
        spinodal_semantic=sem.spinodal,
        spinodal_positional=pos.spinodal,
        notes=tuple(notes),
        positional_end_reason=pos.end_reason,
        semantic=sem,
        positional=pos,
    )


class _BranchLost(RuntimeError):
    """A root-finding evaluation left the branch it was following."""


def phase_diagram(
    params: ModelParams,
    omegas: Sequence[float],
    alphas: Sequence[float] | None = None,
    *,
    prox: str = "global",
    config: SolverConfig | None = None,
    progress: Callable[[Boundaries], None] | None = None,
) -> list[Boundaries]:
    """Boundaries at every omega of ``omegas`` (other parameters from ``params``)."""
    out = []
    for w in omegas:
        b = phase_boundaries(params.replace(omega=float(w)), alphas, prox=prox, config=config)
        out.append(b)
        if progress is not None:
            progress(b)
    return out
