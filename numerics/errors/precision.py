"""High-precision (mpmath) reference values for the double-precision numerics, L = 2.

An independent check, not a solver: everything is written out here in mpmath (nothing from the lambdified
kernels), the averages tensor Gauss--Hermite sums on nodes refined to the working precision.

* :func:`eps_lin_mp` -- the linear baseline of docs/model.md section 5,

      eps_lin = 1/2 sum_{l,k} sigma_k^2 (1 - omega)^2 Var(softmax(h* h*^T)[l, k]),
      h*_l ~ N(0, sigma_l^2 rho0) independent;

* :func:`eps_g_theta0_mp` -- the test error of docs/model.md section 4 at a state with
  theta = 0 (positional or agnostic), where the student field w and the teacher
  field h* are independent and the 2L-dimensional average factorises:

      eps_g = 1/2 sum_{l,k} sigma_k^2 ( E[S_lk^2] - 2 E[S_lk] E[T_lk] + E[T_lk^2] ),
      S = softmax_row(w w^T), w_l ~ N(m_l, sigma_l^2 q0);
      T = (1 - omega) softmax_row(h* h*^T) + omega A, h*_l ~ N(0, sigma_l^2 rho0).

Both integrands are analytic, so Gauss--Hermite converges geometrically (in sqrt(order)); the default order
(:func:`default_order`, 272 at dps = 30) was checked against order 280 for the paper's parameters (pass
``order`` to repeat the check elsewhere: larger sigma needs a higher order).  Tensor nodes of weight below
10^-(dps + 8) are skipped, and for the zero-mean integrals the mirror pairs are summed once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mpmath
from numpy.polynomial.hermite_e import hermegauss

from attnphase.theory.params import ModelParams

#: Extra decimal digits carried internally beyond the requested ``dps``.
GUARD_DIGITS = 10

#: Tensor nodes whose weight is below 10^-(dps + PRUNE_DIGITS) are skipped.
PRUNE_DIGITS = 8


def default_order(dps: int) -> int:
    """Gauss--Hermite order per dimension that resolves ``dps`` digits (272 at dps = 30, see module doc)."""
    return max(40, 8 * ((9 * dps + 7) // 8))


def gauss_hermite_mp(order: int, dps: int) -> tuple[tuple[mpmath.mpf, ...], tuple[mpmath.mpf, ...]]:
    """Probabilists' Gauss--Hermite nodes and weights (weights sum to 1) at ``dps`` digits: numpy's nodes refined
    by Newton's method on He_n (three-term recurrence), w_i = n! / (n^2 He_{n-1}(x_i)^2) (their sum checked).
    """
    n = int(order)
    if n < 1:
        raise ValueError(f"Gauss-Hermite order must be >= 1, got {order}")
    with mpmath.workdps(dps + GUARD_DIGITS):
        mp = mpmath.mp
        x0, _ = hermegauss(n)
        half = [mp.mpf(float(v)) for v in x0[n // 2:]]  # non-negative nodes; mirror the rest exactly
        tol = mp.mpf(10) ** (-(dps + GUARD_DIGITS - 2))
        nodes, weights = [], []
        for x in half:
            for _ in range(50):
                p_prev, p = mp.mpf(1), x  # He_0, He_1
                for k in range(1, n):
                    p_prev, p = p, x * p - k * p_prev  # He_{k+1} = x He_k - k He_{k-1}
                step = p / (n * p_prev)  # He_n' = n He_{n-1}
                x -= step
                if abs(step) <= tol * max(1, abs(x)):
                    break
            else:
                raise RuntimeError(f"Newton refinement of Gauss-Hermite node {x} did not converge")
            p_prev, p = mp.mpf(1), x
            for k in range(1, n):
                p_prev, p = p, x * p - k * p_prev
            nodes.append(x)
            weights.append(mp.factorial(n) / (n * n * p_prev**2))
        odd = n % 2
        if odd:  # the middle node is 0 exactly, its own mirror image
            nodes[0] = mp.mpf(0)
        full_x = [-v for v in nodes[odd:][::-1]] + nodes
        full_w = weights[odd:][::-1] + weights
        total = mp.fsum(full_w)
        if abs(total - 1) > mp.mpf(10) ** (-dps):
            raise RuntimeError(f"Gauss-Hermite weights of order {n} sum to {total}, not 1")
        return tuple(full_x), tuple(w / total for w in full_w)


def softmax_rows_mp(h: Sequence[mpmath.mpf]) -> list[list[mpmath.mpf]]:
    """S[l][k] = exp(h_l h_k) / sum_j exp(h_l h_j), max-shifted, in mpmath."""
    L = len(h)
    out = []
    for l in range(L):
        a = [h[l] * h[k] for k in range(L)]
        top = max(a)
        e = [mpmath.exp(v - top) for v in a]
        z = mpmath.fsum(e)
        out.append([v / z for v in e])
    return out


def _moments_2d(
    fn: Callable[[list[mpmath.mpf]], list[list[mpmath.mpf]]],
    mean: Sequence[mpmath.mpf],
    std: Sequence[mpmath.mpf],
    rule: tuple[Sequence[mpmath.mpf], Sequence[mpmath.mpf]],
    dps: int,
    even: bool = False,
) -> tuple[list[list[mpmath.mpf]], list[list[mpmath.mpf]]]:
    """E[F_lk] and E[F_lk^2] for F = fn(x), x_l = mean_l + std_l Z_l, Z ~ N(0, I_2); tensor Gauss--Hermite on
    ``rule`` = (nodes, weights) of :func:`gauss_hermite_mp`.  ``even``: fn(x) = fn(-x) and mean = 0, so the node
    pairs (a, b) and (-a, -b) are summed once with twice the weight."""
    X, W = rule
    L = 2
    m1 = [[mpmath.mpf(0)] * L for _ in range(L)]
    m2 = [[mpmath.mpf(0)] * L for _ in range(L)]
    x0 = [mean[0] + std[0] * z for z in X]
    x1 = [mean[1] + std[1] * z for z in X]
    W0 = list(W)
    if even:
        if any(mu != 0 for mu in mean):
            raise ValueError("even=True needs a zero mean")
        half = len(X) // 2  # nodes are sorted; X[half:] >= 0, and X[half] = 0 for odd orders
        x0 = x0[half:]
        W0 = [2 * w for w in W[half:]]
        if len(X) % 2 == 1:
            W0[0] = W[half]  # the zero node is its own mirror image
    # |F| <= 1 for the softmax and the target, so dropping the node pairs of weight below
    # PRUNE_DIGITS changes each moment by less than their total weight (< N^2 10^-PRUNE).
    cut = mpmath.mpf(10) ** (-(dps + PRUNE_DIGITS))
    for a, wa in zip(x0, W0):
        for b, wb in zip(x1, W):
            w = wa * wb
            if w < cut:
                continue
            F = fn([a, b])
            for l in range(L):
                for k in range(L):
                    v = F[l][k]
                    m1[l][k] += w * v
                    m2[l][k] += w * v * v
    return m1, m2


def _check_L2(params: ModelParams) -> None:
    if params.L != 2:
        raise NotImplementedError(f"the mpmath reference values are implemented for L = 2 only, got L = {params.L}")


def eps_lin_mp(params: ModelParams, dps: int = 30, order: int | None = None) -> mpmath.mpf:
    """eps_lin (docs/model.md section 5) at ``dps`` digits, L = 2; ``order`` defaults to :func:`default_order`."""
    _check_L2(params)
    order = order or default_order(dps)
    with mpmath.workdps(dps + GUARD_DIGITS):
        mp = mpmath.mp
        sig2 = [mp.mpf(s) ** 2 for s in params.sigma]
        rho0 = mp.mpf(params.rho0)
        std = [mp.sqrt(s2 * rho0) for s2 in sig2]
        Es, Es2 = _moments_2d(softmax_rows_mp, [mp.mpf(0)] * 2, std, gauss_hermite_mp(order, dps), dps, even=True)
        one_m_omega = 1 - mp.mpf(params.omega)
        total = mp.fsum(
            sig2[k] * one_m_omega**2 * (Es2[l][k] - Es[l][k] ** 2) for l in range(2) for k in range(2)
        ) / 2
    with mpmath.workdps(dps):
        return +total


def eps_g_theta0_mp(
    params: ModelParams, q0: float, m: Sequence[float], dps: int = 30, order: int | None = None
) -> mpmath.mpf:
    """Test error eps_g (docs/model.md section 4) at a theta = 0 state (q0, m), at ``dps`` digits, L = 2 (V0 does
    not enter; the inputs are taken as the exact binary values of the floats)."""
    _check_L2(params)
    if not q0 > 0:
        raise ValueError(f"q0 must be > 0, got {q0}")
    if len(m) != 2:
        raise ValueError(f"m must have L = 2 entries, got {len(m)}")
    order = order or default_order(dps)
    with mpmath.workdps(dps + GUARD_DIGITS):
        mp = mpmath.mp
        sig2 = [mp.mpf(s) ** 2 for s in params.sigma]
        q0_, rho0 = mp.mpf(q0), mp.mpf(params.rho0)
        omega = mp.mpf(params.omega)
        A = [[mp.mpf(v) for v in row] for row in params.A]

        def target(h: list[mpmath.mpf]) -> list[list[mpmath.mpf]]:
            s = softmax_rows_mp(h)
            return [[(1 - omega) * s[l][k] + omega * A[l][k] for k in range(2)] for l in range(2)]

        rule = gauss_hermite_mp(order, dps)
        ES, ES2 = _moments_2d(softmax_rows_mp, [mp.mpf(v) for v in m], [mp.sqrt(s2 * q0_) for s2 in sig2], rule, dps)
        ET, ET2 = _moments_2d(target, [mp.mpf(0)] * 2, [mp.sqrt(s2 * rho0) for s2 in sig2], rule, dps, even=True)
        total = mp.fsum(
            sig2[k] * (ES2[l][k] - 2 * ES[l][k] * ET[l][k] + ET2[l][k]) for l in range(2) for k in range(2)
        ) / 2
    with mpmath.workdps(dps):
        return +total


__all__ = ["default_order", "eps_g_theta0_mp", "eps_lin_mp", "gauss_hermite_mp", "softmax_rows_mp"]
