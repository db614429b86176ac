"""Check 7: the generated code variants (cse vs plain, batched vs per point vs the one-point variant)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .common import U, CheckResult, Context, _worst
from .roundoff import _sample_points, _term_scales, generated_op_count


def check_codegen(ctx: Context) -> CheckResult:
    """Check 7: the generated kernels with and without cse agree; batched agrees with one point at a time."""
    from attnphase.theory.kernels import get_kernels, get_scalar_kernels

    r = CheckResult(7, "codegen", "generated code variants",
                    "kernels with vs without cse; batched vs per-point vs one-point variant")
    p = ctx.params
    L, s2, A, omega = p.L, p.sigma2, p.A_array, p.omega
    kc, kp = get_kernels(L, cse=True), get_kernels(L, cse=False)
    pts = _sample_points(p, ctx.sizes.prox_points, ctx.rng(7))
    h, w, hs, V = pts["h"], pts["w"], pts["hstar"], pts["V"]
    T = kc.target(hs, omega, A)
    n_c, n_p = generated_op_count(L, True), generated_op_count(L, False)
    vscale, dscale = _term_scales(h, w, V, s2)
    comps: dict[str, tuple[float, float]] = {}

    def compare(name: str, a: tuple, b: tuple, n_ops: int, idx: Any = slice(None)) -> None:
        errs = [np.max(np.abs(x - y) / sc[idx].reshape(sc[idx].shape + (1,) * (x.ndim - 1)))
                for x, y, sc in zip(a, b, (vscale, dscale, dscale))]
        comps[name] = (float(max(errs)), n_ops * U)

    comps["target cse vs plain"] = (float(np.max(np.abs(T - kp.target(hs, omega, A)))), 2 * 16 * L * U)
    compare("prox cse vs plain", kc.prox_value_grad_hess(h, w, V, T, s2), kp.prox_value_grad_hess(h, w, V, T, s2), n_c + n_p)
    compare("loss cse vs plain", kc.loss_grad_hess(h, T, s2), kp.loss_grad_hess(h, T, s2), n_c + n_p)
    batch = kc.prox_value_grad_hess(h, w, V, T, s2)
    idx = ctx.rng(70).choice(h.shape[0], size=min(ctx.sizes.loop_points, h.shape[0]), replace=False)
    idx = np.union1d(idx, np.arange(h.shape[0] - min(4, pts["n_ext"]), h.shape[0]))  # a few extreme points too
    one = [kc.prox_value_grad_hess(h[i], w[i], V[i], T[i], s2) for i in idx]
    per_point = tuple(np.stack([o[j] for o in one]) for j in range(3))
    compare("batched vs per-point calls", tuple(b[idx] for b in batch), per_point, 2 * n_c, idx)
    sk = get_scalar_kernels(L, cse=True).functions["prox_value_grad_hess"]
    # per point: value, gradient, then the Hessian's upper triangle row by row
    out = np.array([sk(h[i], w[i], V[i], kc.attention(h[i]), T[i], s2) for i in idx], dtype=float)
    iu = np.triu_indices(L)
    sc_H = np.empty((idx.size, L, L))
    sc_H[:, iu[0], iu[1]] = sc_H[:, iu[1], iu[0]] = out[:, 1 + L:]
    compare("batched vs one-point variant", tuple(b[idx] for b in batch), (out[:, 0], out[:, 1:1 + L], sc_H),
            2 * n_c, idx)
    r.tolerance_from = f"round-off: n_ops u relative to the terms' size (n_ops = {n_c} with cse, {n_p} without)"
    r.details = {"points": int(h.shape[0]), "per-point and one-point calls": int(idx.size),
                 "operations with cse": n_c, "operations without cse": n_p}
    return _worst(r, comps, "relative to the terms' size")
