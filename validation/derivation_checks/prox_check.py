"""Check 1: the generated proximal objective, gradient and Hessian against torch autograd and central differences."""

from __future__ import annotations

from typing import Any

import numpy as np

from .common import U, CheckResult, Context, _worst
from .roundoff import _sample_points, _term_scales, generated_op_count


def _torch_prox(torch: Any, h, w, V, hs, s2, A, omega) -> tuple[np.ndarray, ...]:
    """sum_l (h_l - w_l)^2 / (2 V_l) + 1/2 sum_{l,k} sigma_k^2 (softmax(h h^T) - T(h*))[l,k]^2, written here
    in torch; returns its value, gradient, Hessian (autograd) and the target T, per point."""
    L = h.shape[1]
    with torch.enable_grad():
        ht = torch.tensor(h, dtype=torch.float64, requires_grad=True)
        hst = torch.tensor(hs, dtype=torch.float64)
        Tt = (1 - omega) * torch.softmax(hst[:, :, None] * hst[:, None, :], dim=-1) + omega * torch.tensor(A)
        S = torch.softmax(ht[:, :, None] * ht[:, None, :], dim=-1)
        wt, Vt, s2t = (torch.tensor(x, dtype=torch.float64) for x in (w, V, s2))
        f = ((ht - wt) ** 2 / (2 * Vt)).sum(-1) + 0.5 * (s2t[None, None, :] * (S - Tt) ** 2).sum((-1, -2))
        (gt,) = torch.autograd.grad(f.sum(), ht, create_graph=True)
        Ht = np.stack([torch.autograd.grad(gt[:, j].sum(), ht, retain_graph=True)[0].detach().numpy() for j in range(L)], axis=1)
    return f.detach().numpy(), gt.detach().numpy(), Ht, Tt.numpy()


def check_prox_derivatives(ctx: Context) -> CheckResult:
    """Check 1: the generated proximal objective, gradient and Hessian against torch autograd and FD."""
    import torch

    from attnphase.theory.kernels import get_kernels

    r = CheckResult(1, "prox", "proximal objective derivatives",
                    "generated value, gradient, Hessian vs torch autograd and central differences")
    p = ctx.params
    L, s2, A, omega = p.L, p.sigma2, p.A_array, p.omega
    k = get_kernels(L)
    pts = _sample_points(p, ctx.sizes.prox_points, ctx.rng(1))
    h, w, hs, V = pts["h"], pts["w"], pts["hstar"], pts["V"]
    N = h.shape[0]
    T = k.target(hs, omega, A)
    v, g, H = k.prox_value_grad_hess(h, w, V, T, s2)

    # autograd of the objective written independently in torch (double precision); tiny tensors: one thread
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ft, gt, Ht, Tt = _torch_prox(torch, h, w, V, hs, s2, A, omega)
    finally:
        torch.set_num_threads(threads)

    n_ops = generated_op_count(L, cse=True)
    vscale, dscale = _term_scales(h, w, V, s2)
    tol_rel = 2 * n_ops * U  # two independent evaluations, each within n_ops * u * (terms)
    comps: dict[str, tuple[float, float]] = {}
    comps["target vs torch"] = (float(np.max(np.abs(T - Tt))), 2 * 16 * L * U)  # softmax + mix, terms <= 1
    comps["value vs autograd"] = (float(np.max(np.abs(v - ft) / vscale)), tol_rel)
    comps["gradient vs autograd"] = (float(np.max(np.abs(g - gt) / dscale[:, None])), tol_rel)
    comps["Hessian vs autograd"] = (float(np.max(np.abs(H - Ht) / dscale[:, None, None])), tol_rel)

    # central differences of the generated value (-> gradient) and gradient (-> Hessian), steps d and 2d
    # the softmax varies on the scale 1 / |h| (scores a_lk = h_l h_k), so the step is 2^-13 / max(1, |h|)
    step = np.broadcast_to((2.0**-13 / np.maximum(1.0, np.abs(h).max(axis=1)))[:, None], h.shape)
    E = np.eye(L)
    shifts = np.concatenate([E, -E, 2 * E, -2 * E])  # (4L, L)
    hp = h[:, None, :] + shifts[None] * step[:, None, :]
    rep = lambda x: np.broadcast_to(x[:, None], (N, 4 * L) + x.shape[1:])  # noqa: E731
    vv, gg, _ = k.prox_value_grad_hess(hp, rep(w), rep(V), rep(T), s2)
    dh = (hp - h[:, None, :])  # the steps actually taken
    den1 = dh[:, np.arange(L), np.arange(L)] - dh[:, L + np.arange(L), np.arange(L)]  # (N, L)
    den2 = dh[:, 2 * L + np.arange(L), np.arange(L)] - dh[:, 3 * L + np.arange(L), np.arange(L)]
    g1 = (vv[:, :L] - vv[:, L:2 * L]) / den1
    g2 = (vv[:, 2 * L:3 * L] - vv[:, 3 * L:]) / den2
    H1 = (gg[:, :L] - gg[:, L:2 * L]) / den1[:, :, None]  # row j: d grad / d h_j
    H2 = (gg[:, 2 * L:3 * L] - gg[:, 3 * L:]) / den2[:, :, None]
    # tolerance per entry: Richardson |D(d) - D(2d)| + round-off of the quotient (2 n_ops u terms / (2 d))
    tol_g = np.abs(g1 - g2) + 2 * n_ops * U * vscale[:, None] / den1
    tol_H = np.abs(H1 - H2) + 2 * n_ops * U * dscale[:, None, None] / den1[:, :, None]
    for what, err, tol in (("gradient", np.abs(g - g1), tol_g), ("Hessian", np.abs(H - H1), tol_H)):
        i = np.unravel_index(np.argmax(err / tol), err.shape)  # the entry with the largest error / tolerance
        comps[f"{what} vs central differences"] = (float(err[i] / dscale[i[0]]), float(tol[i] / dscale[i[0]]))
    r.tolerance_from = (f"round-off: 2 n_ops u = 2 x {n_ops} x 2^-53 relative to the size of the summed terms; "
                        "FD: Richardson |D(d) - D(2d)| + quotient round-off, per entry")
    r.details = {
        "points": {"random": N - pts["n_ext"], "extreme fields": pts["n_ext"], "max |h|": float(np.abs(h).max())},
        "generated operations": n_ops,
        "max |Hessian - FD| / terms": float(np.max(np.abs(H - H1) / dscale[:, None, None])),
        "max |Hessian - autograd| (absolute)": float(np.max(np.abs(H - Ht))),
    }
    return _worst(r, comps, "relative to the terms' size; FD: the entry with the largest error / tolerance")
