"""Observables of a fixed point (docs/model.md sections 4-5): eps_g, e_t = -Phi (with E[M], also d e_t / d alpha),
and eps_lin, the linear positional baseline (an L r*-dimensional Gaussian integral: tensor Gauss--Hermite at
r* = 1, else a Sobol rule).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
import numpy as np

from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.numerics.quadrature.rules import gauss_hermite_1d, matrix_rule, rule_blocks, split_nodes, tensor_grid
from attnphase.theory.baseline import eps_lin_cov, eps_lin_from_moments, softmax_centred
from attnphase.theory.free_entropy import free_entropy
from attnphase.theory import matrix_channel as rk
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: Gauss--Hermite order per dimension for eps_lin, by L (smooth integrand; see tests).
_EPS_LIN_ORDER = {2: 80, 3: 40, 4: 20}

#: Their one-dimensional nodes and weights by order (the defaults and 2/3 of them), computed once at import (a
#: constant table: ``hermegauss``'s LAPACK threads, woken at every fixed point, slowed the compiled prox solver).
_EPS_LIN_NODES = {k: gauss_hermite_1d(k) for n in _EPS_LIN_ORDER.values() for k in (n, (2 * n) // 3)}


@dataclass(frozen=True)
class Observables:
    """eps_g (test error), e_t = -Phi (training loss per dimension), eps_lin (linear baseline), and
    E_M = E[M] (also d e_t / d alpha along a branch)."""

    eps_g: float
    e_t: float
    eps_lin: float
    E_M: float = float("nan")


def _teacher_fields(params: ModelParams, order: int | None = None,
                    quadrature: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(weights, h* (n, L, r*)) of a quadrature of the teacher fields h*_l = sigma_l rho0^{1/2} eta_l in R^{r*}
    (whitened: h* = B v*): the tensor Gauss--Hermite grid of ``order`` nodes per dimension (r* = 1), or the eta
    columns of the Sobol rule ``quadrature``."""
    L, rs = params.L, params.r_star
    if quadrature is not None:
        rule = matrix_rule(L, 1, rs, quadrature)
        wt, z = rule.weights, split_nodes(rule, L, 1, rs)[1]
    elif rs != 1:
        raise ValueError(f"eps_lin at teacher rank r* = {rs} is taken on a Sobol rule over the L r* teacher "
                         f"dimensions: give its quadrature")
    else:
        n = order or _EPS_LIN_ORDER.get(L, 12)
        x, w = _EPS_LIN_NODES[n] if n in _EPS_LIN_NODES else gauss_hermite_1d(n)
        z, wt = tensor_grid(x, w, L)
        z = z[:, :, None]
    hstar = z * np.sqrt(params.sigma2 * params.rho0)[:, None]
    if params.mixing is not None:  # h*_l = sum_k B[l, k] v*_k, per teacher direction
        v = np.swapaxes(hstar, 1, 2).reshape(-1, L)
        hstar = np.swapaxes((v @ params.mixing_array.T).reshape(len(wt), rs, L), 1, 2)
    return wt, hstar


#: eps_lin's quadrature is refined (orders x 1.5) until two orders agree to this relative difference ...
EPS_LIN_RTOL = 1e-8
#: ... up to these orders per dimension (Gauss--Hermite nodes of numpy hold to ~300; the tensor grid's memory);
_EPS_LIN_MAX_ORDER = {2: 270, 3: 90, 4: 30}
#: where the last two still differ by more than EPS_LIN_RTOL but by less than this, the finer one is taken as it is
#: (L = 4: 3e-7, far below any digit printed); above it the Sobol rule EPS_LIN_SOBOL checks it.
EPS_LIN_ACCEPT = 1e-6


def eps_lin(params: ModelParams, order: int | None = None, quadrature: str | None = None) -> float:
    """Test error of the linear positional baseline, docs/model.md section 5 (alpha-independent), at every
    teacher rank r*: eps_lin = 1/2 sum_{l,k} sigma_k^2 (1 - omega)^2 Var(softmax(h* h*^T)[l,k]), h*_l in R^{r*};
    for correlated tokens (whitened or not) eps_lin_C (:func:`attnphase.theory.baseline.eps_lin_cov`).  The
    variance is taken from the centred softmax (:func:`attnphase.theory.baseline.softmax_centred`): no
    cancellation however weak the teacher.

    ``quadrature``: a Sobol spec for the teacher fields (needed at r* >= 2).  Otherwise (r* = 1) tensor
    Gauss--Hermite of ``order`` nodes per dimension; None: the default order, taken as converged when 2/3 of
    it agrees to EPS_LIN_RTOL, else refined (x 1.5) until two orders agree; where the largest two orders still differ
    by more than EPS_LIN_ACCEPT, checked on the Sobol rule :data:`EPS_LIN_SOBOL` (:func:`eps_lin_sobol`) and that
    rule's value taken, with a RuntimeWarning giving its standard error, unless the Gauss-Hermite value lies within
    3 of them.  A grid of more than :data:`EPS_LIN_MAX_NODES` nodes (the default order's at L >= 7) is a
    ValueError."""
    if order is not None and (isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order < 2):
        raise ValueError(f"order must be an integer >= 2 (Gauss-Hermite nodes per dimension), got {order!r}")
    if order is not None and quadrature is not None:
        raise ValueError(f"order ({order}) is the Gauss-Hermite rule's and quadrature ({quadrature!r}) a Sobol rule: "
                         "give one of them")
    if quadrature is not None and not str(quadrature).startswith("sobol"):
        raise ValueError(f"quadrature must be a Sobol rule (sobolK[:REPS:SEED]) for eps_lin, got {quadrature!r}; "
                         "its Gauss-Hermite rule is order=N (r* = 1)")
    n = _EPS_LIN_ORDER.get(params.L, 12)
    if quadrature is None and (order or n) ** params.L > EPS_LIN_MAX_NODES:
        raise ValueError(f"eps_lin at L = {params.L}: the Gauss-Hermite grid of order {order or n} has "
                         f"{float(order or n) ** params.L:.3g} nodes, more than {EPS_LIN_MAX_NODES:.3g} (memory); "
                         f"give a smaller order=N (N^L nodes)")
    if quadrature is not None or order is not None:
        return _eps_lin_at(params, order, quadrature)
    top = _EPS_LIN_MAX_ORDER.get(params.L, n)
    val = _eps_lin_at(params, n)
    coarse = (2 * n) // 3
    if coarse >= 2 and _relative_change(val, _eps_lin_at(params, coarse)) <= EPS_LIN_RTOL:
        return val  # converged at the default order (the paper's models): its value, bit for bit
    prev = change = None
    while (m := min(top, (3 * n) // 2)) > n:
        finer = _eps_lin_at(params, m)
        change = _relative_change(finer, val)
        if change <= EPS_LIN_RTOL:
            return val
        prev, n, val = n, m, finer
    if prev is None or change <= EPS_LIN_ACCEPT:  # no larger order is taken at this L, or close enough
        return val
    sobol, err = eps_lin_sobol(params)
    if abs(val - sobol) <= 3.0 * err:  # Gauss-Hermite agrees with the Sobol rule to its resolution: its value
        return val
    off = f"{abs(val - sobol) / err:.0f} standard errors off" if err > 0 else "off"
    warnings.warn(f"eps_lin: its Gauss-Hermite quadrature did not converge (relative change {change:.1e} from order "
                  f"{prev} to {n} per dimension, the largest taken; it gave {val:.6g}, {off}): eps_lin = "
                  f"{sobol:.6g} +- {err:.1g} from the {EPS_LIN_SOBOL} rule's scramblings (mean and standard error)",
                  RuntimeWarning, stacklevel=2)
    return sobol


#: The most nodes of eps_lin's tensor Gauss-Hermite grid (order^L): L = 8 at the default order 12 asked for 3.2 GiB.
EPS_LIN_MAX_NODES = 2 ** 24

#: Where Gauss-Hermite does not converge (a sharp softmax: rho0 sigma^2 >~ 10), eps_lin is checked on this Sobol
#: rule, whose convergence does not need a smooth integrand (rho0 = 100: Gauss-Hermite at order 270 errs by 0.8 %).
EPS_LIN_SOBOL = "sobol18:4"


def eps_lin_sobol(params: ModelParams, spec: str = EPS_LIN_SOBOL) -> tuple[float, float]:
    """eps_lin on each scrambling (block) of the Sobol rule ``spec``: (their mean, its standard error)."""
    vals = np.array([_eps_lin_at(params, None, block) for block in rule_blocks(spec)])
    return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(len(vals)))


def _relative_change(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), 1e-300)


def _eps_lin_at(params: ModelParams, order: int | None, quadrature: str | None = None) -> float:
    """eps_lin on the rule of :func:`_teacher_fields` (``order`` Gauss--Hermite nodes per dimension, or the Sobol
    rule ``quadrature``), from the moments of s - E[s]: its covariance without cancellation (theory.baseline)."""
    params = se_params(params)
    wt, hstar = _teacher_fields(params, order, quadrature)
    c = softmax_centred(wt, hstar)
    mean = np.einsum("n,nij->ij", wt, c)
    if params.mixing is not None:
        B = params.mixing_array
        return eps_lin_cov(mean, np.einsum("n,nlk,nlj->lkj", wt, c, c), B @ B.T, params.omega)
    return float(eps_lin_from_moments(mean, np.einsum("n,nij->ij", wt, c * c), params.sigma2, params.omega))


def observables(params: ModelParams, alpha: float, ov: Overlaps, hat: HatOverlaps, mom) -> Observables:
    """eps_g, e_t = -Phi and eps_lin at a state with its hat overlaps and channel moments; in the matrix form Phi
    of theory/matrix_channel.py and no eps_lin (NaN: a solve at r* >= 2 does not compute it; the boundaries do)."""
    fe = rk.free_entropy if ov.is_matrix else free_entropy
    phi = fe(ov.q0, ov.V0, ov.m, ov.th0, hat.qhat, hat.mhat, hat.thhat, hat.Vhat, params.sigma2, params.P_array,
             params.lam, params.rho0, alpha, mom.E_M)
    return Observables(eps_g=float(mom.eps_g), e_t=float(-phi), eps_lin=math.nan if ov.is_matrix else eps_lin(params),
                       E_M=float(mom.E_M))
