"""Check 6: eps_lin in double precision against a 30-digit mpmath reference."""

from __future__ import annotations

import warnings

import numpy as np

from .adapter import _eps_lin_default_order, _eps_lin_double, _eps_lin_mp
from .common import U, CheckResult, Context, _worst


def check_eps_lin(ctx: Context) -> CheckResult:
    """Check 6: eps_lin (section 5) by double-precision Gauss--Hermite against an mpmath reference."""
    import mpmath

    r = CheckResult(6, "eps-lin", "eps_lin double vs mpmath",
                    f"eps_lin (tensor Gauss-Hermite, double) vs {ctx.sizes.mp_dps}-digit mpmath")
    p = ctx.params
    if p.L != 2:
        r.reason = f"the mpmath reference of eps_lin is implemented for L = 2 only (L = {p.L})"
        return r
    n = _eps_lin_default_order(p.L)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        val = _eps_lin_double(p)
    if any("Gauss-Hermite quadrature did not converge" in str(w.message) for w in caught):
        sharpness = p.rho0 * float(max(p.sigma2))
        r.reason = (f"the softmax is too sharp for Gauss-Hermite (rho0 sigma^2 up to {sharpness:.3g}): "
                    "eps_lin is taken on a Sobol rule, which a Gauss-Hermite reference at any precision cannot check")
        return r
    finer = _eps_lin_double(p, n + n // 2)
    if not (np.isfinite(val) and val > 0):
        r.reason = f"eps_lin in double is {val!r}, not a positive number"
        return r
    # scale of the moments eps_lin is a difference of: 1/2 (1-omega)^2 sum_k sigma_k^2 sum_l (E[s^2] + E[s]^2) <= this
    scale = (1 - p.omega) ** 2 * float(np.sum(p.sigma2)) * p.L
    lost = max(0, int(np.ceil(np.log10(scale / val))))  # digits the reference's E[s^2] - E[s]^2 cancels
    with mpmath.workdps(ctx.sizes.mp_dps + lost + 10):
        ref = _eps_lin_mp(p, ctx.sizes.mp_dps + lost, ctx.sizes.mp_dps)
        err = float(abs(mpmath.mpf(val) / ref - 1))
    # round-off of the double: eps_lin sums weighted squares of the centred s - E[s] over n^2 nodes (relative
    # n^2 u); each deviation s - 1/L is exact to 8 L u relative where it is taken from expm1 (every logit
    # difference |h_l (h_j - h_k)| <= 2 max|h|^2 <= 1), to 4 u absolute elsewhere (then scale-sized terms enter)
    x_max = float(np.polynomial.hermite_e.hermegauss(n)[0].max())
    expm1_everywhere = 2 * x_max**2 * float(np.max(p.sigma2)) * p.rho0 <= 1
    roundoff = (n * n + 16 * p.L) * U + (0.0 if expm1_everywhere else 8 * n * n * U * scale / val)
    trunc = abs(finer / val - 1)
    r.tolerance_from = (f"summation round-off bound over {n}^2 nodes of the centred moments + the difference to "
                        f"order {n + n // 2} (eps_lin refines its order from {n} until two agree to 1e-8); "
                        f"reference at {ctx.sizes.mp_dps} + {lost} digits (its cancellation)")
    r.details = {"double": val, "double (finer order)": finer, "mpmath": mpmath.nstr(ref, ctx.sizes.mp_dps),
                 "order": n, "round-off bound (relative)": roundoff, "truncation estimate (relative)": trunc}
    return _worst(r, {"relative error": (err, roundoff + trunc)}, "relative")
