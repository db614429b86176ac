"""The global proximal map over h in R^{L x r} (docs/model.md section 7), all nodes at once.

    h_hat(w, T) = argmin_h  P(h) = sum_l 1/2 (h_l - w_l)^T V_l^{-1} (h_l - w_l) + loss(h, T),
    V_l = sigma_l^2 V0 (r x r, positive definite).

The loss depends on h only through the Gram matrix h h^T (it is invariant under h -> h O, O in
O(r)), is bounded and not convex, so P can have several local minima.  The global minimiser is
searched by the one safeguarded Newton descent (:func:`newton_minimize`:
:func:`attnphase.numerics.prox.descent.descend` on the :class:`RankObjective`, whose direction rule is the
Cholesky shift of :func:`attnphase.numerics.prox.newton_steps.cholesky_shift_direction`; Armijo backtracking,
steps capped at the scale of the quadratic term) from several starts
per node (:func:`starting_points`): w, 0, -w, w / 2, the teacher's fields rotated onto w
(orthogonal Procrustes: the loss is exactly zero at omega = 0 on that Gram matrix), and the mean of
w and the latter; the lowest converged value wins.  tests/numerics/se/test_rank_se.py checks that it
never loses to Newton runs from random probes (L = 3, r = 2).

Gradient and Hessian of the loss come from the generated kernels of
:mod:`attnphase.theory.kernels`; nothing here spells the loss out.

Backends (``backend``, as on the rank-1 path: one of :data:`attnphase.numerics.config.BACKENDS`,
normally ``SolverConfig.backend``, resolved by :func:`attnphase.numerics.prox.backends.resolve_backend`):
``"numpy"`` runs the descent as whole-batch numpy operations (the reference); ``"numba"`` runs
the same descent one row at a time, compiled (the template :mod:`attnphase.numerics.prox.rows` instantiated
on the rank-r kernels, :func:`attnphase.numerics.prox.compiled.search_rows`; equal to rounding); ``"auto"`` is numba when it imports, else numpy. There is no torch rank-r descent: ``"torch"``
raises, and ``$ATTNPHASE_PROX_BACKEND=torch`` leaves ``"auto"`` to pick numba or numpy.  The starts and
the choice of the winner (:func:`global_prox`) are shared.  In the compiled search a node's starts run in
one loop, the minima handed in (polish points, extra starts) first, and a start stops once it is within
:data:`~attnphase.numerics.prox.compiled.MERGE_RADIUS` of a minimum an earlier start of the node converged
to, where the Hessian is positive definite, taking that minimum (as at r = 1: most starts only confirm the
node's one minimum; this cut a full search's CPU time by a third, L = 2, r = 2, 16384 nodes, and moved
the winners by < 1e-14 on the benchmark's nodes).  The numpy path runs every start to the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnphase.numerics.prox import newton_steps as steps
from attnphase.numerics.prox.backends import resolve_backend
from attnphase.numerics.prox.descent import descend
from attnphase.theory.kernels import Kernels


#: The descent's step tolerance (relative), iteration limit and Armijo trial steps (defaults of
#: :func:`newton_minimize`, and what :func:`global_prox` runs on either backend).
XTOL, MAX_ITER, MAX_HALVINGS = 1e-10, 80, 30


@dataclass(frozen=True, eq=False)
class RankProxResult:
    """Minimisers of a batch: h (N, L, r), value (N,) = the Moreau envelope M, converged (N,)."""

    h: np.ndarray
    value: np.ndarray
    converged: np.ndarray


def apply_blocks(Vinv: np.ndarray, d: np.ndarray) -> np.ndarray:
    """(Vinv_l d_l) for every row: Vinv (L, r, r), d (N, L, r) -> (N, L, r) (explicit loops over the
    small axes: several times faster than einsum at r <= 3)."""
    L, r = Vinv.shape[0], Vinv.shape[1]
    out = np.empty_like(d)
    for l in range(L):
        for a in range(r):
            acc = Vinv[l, a, 0] * d[:, l, 0]
            for b in range(1, r):
                acc += Vinv[l, a, b] * d[:, l, b]
            out[:, l, a] = acc
    return out


def prox_value(k: Kernels, h: np.ndarray, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray,
               sigma2: np.ndarray) -> np.ndarray:
    """P(h) = sum_l 1/2 (h_l - w_l)^T Vinv_l (h_l - w_l) + loss(h, T) (the kernels' channel); h, w (N, L, r),
    Vinv (L, r, r)."""
    d = h - w
    q = (d * apply_blocks(Vinv, d)).reshape(d.shape[0], -1).sum(axis=1)
    return 0.5 * q + k.loss(h, T, sigma2)


def _value_grad_hess(k: Kernels, h: np.ndarray, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray,
                     sigma2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    N, L, r = h.shape
    f, g, H = k.loss_grad_hess(h, T, sigma2)
    d = h - w
    Vd = apply_blocks(Vinv, d)
    f = f + 0.5 * (d * Vd).reshape(N, L * r).sum(axis=1)
    g = g + Vd.reshape(N, L * r)
    for l in range(L):
        H[:, l * r:(l + 1) * r, l * r:(l + 1) * r] += Vinv[l]
    return f, g, H


class RankObjective:
    """P of the rank-r model for :func:`attnphase.numerics.prox.descent.descend`, on rows h (m, L r) flattened
    from (m, L, r): w (N, L, r), Vinv (L, r, r), T (N, L, L), sigma2 (L,); the Cholesky-shift direction rule
    (shift ``delta``); stall scale max |Vinv_l (h_l - w_l)|."""

    def __init__(self, k: Kernels, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
                 delta: float) -> None:
        self.k, self.w, self.Vinv, self.T, self.sigma2, self.delta = k, w, Vinv, T, sigma2, delta
        self.shape = w.shape[1:]

    def _rows(self, h: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        hr = h.reshape((-1,) + self.shape)
        return (hr, self.w, self.T) if rows is None else (hr, self.w[rows], self.T[rows])

    def value_grad_hess(self, h: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        hr, w, T = self._rows(h, rows)
        return _value_grad_hess(self.k, hr, w, self.Vinv, T, self.sigma2)

    def value(self, h: np.ndarray, rows: np.ndarray) -> np.ndarray:
        hr, w, T = self._rows(h, rows)
        return prox_value(self.k, hr, w, self.Vinv, T, self.sigma2)

    def direction(self, H: np.ndarray, g: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return steps.cholesky_shift_direction(H, g, self.delta)

    def stall_scale(self, h: np.ndarray, rows: np.ndarray) -> np.ndarray:
        hr, w, _ = self._rows(h, rows)
        return np.abs(apply_blocks(self.Vinv, hr - w)).reshape(h.shape[0], -1).max(axis=1)


def step_constants(Vinv: np.ndarray) -> tuple[float, float]:
    """(delta, max_step) of the descent: delta = SHIFT_REL lambda_min(V^{-1}) (the least pivot of the shifted
    Cholesky), max_step = 4 / sqrt(lambda_min(V^{-1})) + 1 = 4 sqrt(|V|) + 1; Vinv (L, r, r)."""
    Vmin_inv = min(float(np.linalg.eigvalsh(Vinv[l]).min()) for l in range(Vinv.shape[0]))
    return steps.SHIFT_REL * Vmin_inv, steps.max_step_precision(Vmin_inv)


def newton_minimize(k: Kernels, h0: np.ndarray, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray,
                    sigma2: np.ndarray, *, xtol: float = XTOL, max_iter: int = MAX_ITER,
                    max_halvings: int = MAX_HALVINGS, backend: str = "auto") -> RankProxResult:
    """Safeguarded Newton descent on P from every row of h0 (N, L, r); only unconverged rows iterate.

    Direction d = -(H + mu I)^{-1} grad with mu = 0 where the Hessian is positive definite, else a
    shift making it so (:func:`attnphase.numerics.prox.newton_steps.cholesky_shift_direction`, delta =
    SHIFT_REL lambda_min(V^{-1})), capped at 4 sqrt(|V|) + 1, Armijo backtracking (at most ``max_halvings``
    trial steps 1, 1/2, ...).  A row has converged when H is positive definite and the Newton step
    is below xtol (1 + |h|) or its predicted decrease is below the rounding of P, or when no step
    decreases P and the gradient is at rounding level.  ``backend``: see the module doc.
    """
    delta, max_step = step_constants(Vinv)
    if resolve_backend(backend, k) == "numba":
        from attnphase.numerics.prox.compiled import search_rows

        h, value, conv = search_rows(k, np.asarray(h0, dtype=float)[None], w, Vinv, T, sigma2, delta, max_step,
                                     np.zeros(1, dtype=np.int64), 0.0, xtol=xtol, max_iter=max_iter,
                                     max_halvings=max_halvings)
        return RankProxResult(h[0], value[0], conv[0])
    h0 = np.asarray(h0, dtype=float)
    N, L, r = h0.shape
    h, value, converged, _ = descend(np, RankObjective(k, w, Vinv, T, sigma2, delta), h0.reshape(N, L * r), cap=max_step,
                                     xtol=xtol, max_iter=max_iter, max_halvings=max_halvings)
    return RankProxResult(h.reshape(N, L, r), value, converged)


def procrustes_teacher(w: np.ndarray, hstar: np.ndarray) -> np.ndarray:
    """The teacher's fields as a student field with the same Gram matrix, rotated onto w.

    h0 = hstar padded (r* < r) or truncated to its top r singular directions (r* > r), then
    h0 O with O = argmin_{O in O(r)} |h0 O - w|_F (the polar factor of h0^T w).
    """
    N, L, r = w.shape
    rs = hstar.shape[2]
    if rs <= r:
        h0 = np.concatenate([hstar, np.zeros((N, L, r - rs))], axis=2)
    else:
        U, s, _ = np.linalg.svd(hstar, full_matrices=False)
        h0 = U[:, :, :r] * s[:, None, :r]
    M = np.einsum("nla,nlb->nab", h0, w)
    Um, _, Vt = np.linalg.svd(M)
    return np.einsum("nla,nab->nlb", h0, Um @ Vt)


def starting_points(w: np.ndarray, hstar: np.ndarray) -> list[np.ndarray]:
    """Starts of the global search: w, 0, -w, w / 2, the Procrustes teacher fields, and (w + those) / 2."""
    t = procrustes_teacher(w, hstar)
    return [w, np.zeros_like(w), -w, 0.5 * w, t, 0.5 * (w + t)]


def global_prox(k: Kernels, w: np.ndarray, V0: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
                hstar: np.ndarray, extra_starts: list[np.ndarray] | None = None,
                polish: np.ndarray | None = None, backend: str = "auto") -> RankProxResult:
    """The global minimiser of P per node (module doc): the lowest converged Newton minimum over the starts.

    w (N, L, r), V0 (r, r), T (N, L, L), sigma2 (L,), hstar (N, L, r*); ``extra_starts``: more
    (N, L, r) starts (tests; the minima of a previous search).  ``polish``: instead of the search,
    only Newton from these (N, L, r) points and from w -- the cheap approximate step the SE solver
    takes between full searches (never the accepted result).  ``backend``: see the module doc.
    """
    N, L, r = w.shape
    Vinv = np.linalg.inv(V0)[None] / np.asarray(sigma2, dtype=float)[:, None, None]
    if polish is not None:
        starts, known = [polish, w], 1
    else:
        base = starting_points(w, hstar)
        starts, known = base + list(extra_starts or []), len(base)
    S = len(starts)
    if resolve_backend(backend, k) == "numba":
        from attnphase.numerics.prox.compiled import MERGE_RADIUS, search_rows

        # the minima handed in (polish points, extra starts) run first: the other starts merge into them
        order = np.r_[np.arange(known, S), np.arange(known)] if polish is None else np.arange(S)
        delta, max_step = step_constants(Vinv)
        h, value, conv = search_rows(k, np.stack(starts), w, Vinv, T, sigma2, delta, max_step, order, MERGE_RADIUS,
                                     xtol=XTOL, max_iter=MAX_ITER, max_halvings=MAX_HALVINGS)
        res = RankProxResult(h.reshape(S * N, L, r), value.reshape(-1), conv.reshape(-1))
    else:
        res = newton_minimize(k, np.concatenate(starts, axis=0), np.tile(w, (S, 1, 1)), Vinv, np.tile(T, (S, 1, 1)),
                              sigma2, backend=backend)
    vals = np.where(res.converged, res.value, np.inf).reshape(S, N)
    best = np.argmin(vals, axis=0)
    none = ~np.isfinite(vals[best, np.arange(N)])
    best[none] = np.argmin(res.value.reshape(S, N)[:, none], axis=0)
    idx = best * N + np.arange(N)
    return RankProxResult(res.h[idx], res.value[idx], res.converged[idx])
