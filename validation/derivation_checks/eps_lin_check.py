"""Check 6: eps_lin in double precision against a 30-digit mpmath reference."""

from __future__ import annotations

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
    val = _eps_lin_double(p)
    finer = _eps_lin_double(p, n + n // 2)
    with mpmath.workdps(ctx.sizes.mp_dps + 10):
        ref = _eps_lin_mp(p, ctx.sizes.mp_dps)
        err = float(abs(mpmath.mpf(val) / ref - 1))
    # round-off: the moments are sums over n^2 nodes (|s| <= 1), error <= n^2 u E[s]; eps_lin
    # subtracts E[s]^2 from E[s^2]: bound sum_k sigma_k^2 (1-omega)^2 / 2 sum_l n^2 u (E[s^2] + 2 E[s]^2) / eps_lin
    roundoff = n * n * U * (1 - p.omega) ** 2 * float(np.sum(p.sigma2)) * p.L * 3 / 2 / abs(val)
    trunc = abs(finer / val - 1)
    r.tolerance_from = f"summation round-off bound over {n}^2 nodes + order {n} vs {n + n // 2} difference"
    r.details = {"double": val, "double (finer order)": finer, "mpmath": mpmath.nstr(ref, ctx.sizes.mp_dps),
                 "order": n, "round-off bound (relative)": roundoff, "truncation estimate (relative)": trunc}
    return _worst(r, {"relative error": (err, roundoff + trunc)}, "relative")
