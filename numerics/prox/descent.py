"""The safeguarded Newton descent on the proximal objective P (:mod:`attnphase.numerics.prox.objective`), written once
over an array namespace ``xp`` (numpy, or torch on its device); the compiled template
:mod:`attnphase.numerics.prox.rows` runs it one row at a time.

One iteration on the rows not yet done: d = -(H + mu I)^{-1} grad P by the objective's rule (mu = 0 where H is
positive definite), capped at length ``cap``; a row has converged when H is positive definite and d is
:func:`~attnphase.numerics.prox.newton_steps.near` zero (the step then taken as it is); otherwise Armijo
backtracking (at most ``max_halvings`` trials); a row where no trial decreases P has converged if it
:func:`~attnphase.numerics.prox.newton_steps.stalled`, else it stops unconverged.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from attnphase.numerics.prox import newton_steps as steps


class Objective(Protocol):
    """The proximal objective of a batch of N rows, evaluated on the rows ``rows`` (indices; None: all)."""

    def value_grad_hess(self, h: Any, rows: Any) -> tuple[Any, Any, Any]:
        """(P (m,), grad P (m, n), Hessian (m, n, n)) at h (m, n), row i of h being batch row rows[i]."""

    def value(self, h: Any, rows: Any) -> Any:
        """P (m,) at h (m, n)."""

    def direction(self, H: Any, g: Any, rows: Any) -> tuple[Any, Any]:
        """(d, pd): d = -(H + mu I)^{-1} g by the objective's rule, pd where mu = 0 (H positive definite)."""

    def stall_scale(self, h: Any, rows: Any) -> Any:
        """max over entries of |V_l^{-1} (h_l - w_l)| (m,): the scale of the gradient at rounding level."""


def rowmax(a: Any, xp: Any) -> Any:
    """max over the short last axis, as elementwise maxima (faster than a reduction for n <= 4)."""
    out = a[..., 0]
    for k in range(1, a.shape[-1]):
        out = xp.maximum(out, a[..., k])
    return out


def rowsum(a: Any) -> Any:
    """sum over the short last axis in the order k = 1..n."""
    out = a[..., 0]
    for k in range(1, a.shape[-1]):
        out = out + a[..., k]
    return out


def descend(
    xp: Any, objective: Objective, h0: Any, *, cap: float, xtol: float, max_iter: int, max_halvings: int,
) -> tuple[Any, Any, Any, int]:
    """Safeguarded Newton descent on P from every row of ``h0`` (N, n) (module doc): (h, value, converged, iterations),
    ``iterations`` the most any row needed."""
    h = np.array(h0, copy=True) if xp is np else h0.clone()
    N = h.shape[0]
    on = {} if xp is np else {"device": h.device}  # new arrays where h is
    converged = xp.zeros(N, dtype=xp.bool, **on)
    active = xp.arange(N, **on)
    f, g, H = objective.value_grad_hess(h, None)
    value = f.copy() if xp is np else f.clone()
    it = 0
    while active.shape[0] and it < max_iter:
        it += 1
        ha, fa = h[active], value[active]
        d, pd = objective.direction(H, g, active)
        dn = rowmax(abs(d), xp)
        d = d * steps.step_scale(xp.sqrt(rowsum(d * d)), cap, xp)[:, None]
        slope = rowsum(g * d)
        # converged: a tiny pure Newton step in a convex region, or one whose decrease is below P's rounding
        tiny = pd & steps.near(dn, rowmax(abs(ha), xp), slope, fa, xtol)
        # Armijo backtracking (the tiny Newton steps of converged rows are taken as they are)
        t = xp.ones(active.shape[0], dtype=h.dtype, **on)
        new_h = ha + d
        accepted = tiny.copy() if xp is np else tiny.clone()
        pending = xp.where(~tiny)[0]
        for _ in range(max_halvings):
            if not pending.shape[0]:
                break
            trial = ha[pending] + t[pending, None] * d[pending]
            ft = objective.value(trial, active[pending])
            ok = steps.armijo(ft, fa[pending], t[pending], slope[pending])
            new_h[pending[ok]] = trial[ok]
            accepted[pending[ok]] = True
            pending = pending[~ok]
            t[pending] *= 0.5
        new_h[~accepted] = ha[~accepted]
        h[active] = new_h
        f, g, H = objective.value_grad_hess(new_h, active)
        value[active] = f
        # no decrease possible: stationary to rounding if the gradient is at rounding level
        stalled = steps.stalled(accepted, rowmax(abs(g), xp), objective.stall_scale(new_h, active))
        done = tiny | stalled
        converged[active[done]] = True
        keep = ~(done | ~accepted)
        active, g, H = active[keep], g[keep], H[keep]
    return h, value, converged, it

