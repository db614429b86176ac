"""The shifted Cholesky direction, compiled (numba): the rule of
:func:`attnphase.numerics.prox.newton_steps.cholesky_shift_direction`, per row (:func:`direction_row`, the compiled
template's) and over a batch (:func:`directions`, the numpy descent's).  Imported only where numba imports.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def direction_row(H, g, delta, Lc, y, d):
    """d = -(H + mu I)^{-1} g by Cholesky (into d), mu = 0 if H is positive definite (pivots > delta),
    else the Gershgorin shift + delta, doubled until the factorisation succeeds; returns mu == 0.

    H (n, n) symmetric (its lower triangle is read), g (n,); Lc (n, n) and y (n,) are work arrays."""
    n = g.shape[0]
    mu = 0.0
    for attempt in range(60):
        ok = True
        for a in range(n):
            for b in range(a + 1):
                s = H[a, b] + (mu if a == b else 0.0)
                for c in range(b):
                    s -= Lc[a, c] * Lc[b, c]
                if a == b:
                    if s <= delta:
                        ok = False
                        break
                    Lc[a, a] = np.sqrt(s)
                else:
                    Lc[a, b] = s / Lc[b, b]
            if not ok:
                break
        if ok:
            break
        if attempt == 0:
            low = 0.0
            for a in range(n):
                off = 0.0
                for b in range(n):
                    if b != a:
                        off += abs(H[a, b])
                low = min(low, H[a, a] - off)
            mu = -low + delta
        else:
            mu = 2.0 * mu + delta
    for a in range(n):
        s = -g[a]
        for c in range(a):
            s -= Lc[a, c] * y[c]
        y[a] = s / Lc[a, a]
    for a in range(n - 1, -1, -1):
        s = y[a]
        for c in range(a + 1, n):
            s -= Lc[c, a] * d[c]
        d[a] = s / Lc[a, a]
    return mu == 0.0


@numba.njit(cache=True, error_model="numpy")
def directions(H, g, delta):
    """Per row i: d_i and pd_i of :func:`direction_row`; H (N, n, n), g (N, n) -> (d (N, n), pd (N,))."""
    N, n = g.shape
    d = np.empty((N, n))
    pd = np.zeros(N, dtype=np.bool_)
    Lc = np.empty((n, n))
    y = np.empty(n)
    for i in range(N):
        pd[i] = direction_row(H[i], g[i], delta, Lc, y, d[i])
    return d, pd
