"""Why AMP fails on some data sets between alpha_WR and 1/L (docs/bayes-optimal.md, "The failures, and why").

On one data set (default: seed 6, d = 1000, alpha = 0.35, where AMP from its default start ends at m ~ 0):
AMP from the default start, from a 100 times larger one and from informed starts m_0 = 0.05, 0.3, 0.99
(validation/amp.py ``gamp(..., start=...)``); then a variant iteration written out here for the diagnosis only --
the Onsager term with each sample's full L x L block V = (x_l . x_k / d) v instead of its diagonal, and damping of
the estimate Q (x <- (1 - b) F(x) + b x) and/or of g and Ahat -- printing m, q, the step |Q_t - Q_(t-1)| / sqrt(d)
and the cosine between consecutive steps (-1: a mode alternating in sign).  Then the two diagnoses of
docs/bayes-optimal.md: AMP with a small fixed step (theta = 0.1, ``AmpConfig(damping=0.9, adaptive=False)``) from
m_0 = 0.99 for 3000 iterations -- where, if anywhere, the data set's own AMP fixed point lies -- and the spectrum of
AMP linearised at Qhat = 0 (v = rho0; the state (Qhat, g) of d + n L numbers, the Onsager memory included): its
largest eigenvalues, the most positive and most negative real parts, against alpha / alpha_WR (the state
evolution's growth of m) and its square root (the growth of the noise's norm).

    python studies/amp_failures.py                       # ~3 min on a free core
    python studies/amp_failures.py --seed 1              # a seed where AMP converges, for contrast
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch

from attnphase.theory.params import ModelParams
from attnphase.validation.amp import AmpConfig, g_out, gamp, revealed_fields
from attnphase.validation.data import make_teacher, n_samples, sample
from attnphase.validation.experiments import generator


def informed_start(Qs: torch.Tensor, m0: float, d: int) -> torch.Tensor:
    """m0 Q* plus an orthogonal part of norm sqrt((m0 - m0^2) d): overlap m0, q = m0 (the Nishimori line)."""
    z = torch.randn(d, generator=torch.Generator().manual_seed(99), dtype=torch.float64)
    z = z - (z @ Qs) / (Qs @ Qs) * Qs
    return m0 * Qs + math.sqrt(max(m0 - m0 * m0, 1e-4)) * z / z.norm() * math.sqrt(d)


def variant(X, Y, Qs, start, iters=400, damp_g=0.0, damp_Q=0.0, block=False) -> list[str]:
    """The diagnostic iteration (module doc); returns one line per reported iteration."""
    n, L, d = X.shape
    F = X.reshape(n * L, d) / math.sqrt(d)
    C = torch.einsum("nld,nkd->nlk", X, X) / d
    c = torch.diagonal(C, dim1=-2, dim2=-1)
    Q, v, g, Ahat, hist = start.clone(), 1.0, torch.zeros((n, L), dtype=X.dtype), None, []
    for it in range(iters):
        if block:
            V = C * v
            Vi = torch.linalg.inv(V)
            w = (F @ Q).reshape(n, L) - torch.einsum("nlk,nk->nl", V, g)
            t = torch.tanh(torch.einsum("nl,nlk,nk->n", Y, Vi, w))[:, None]
            u = torch.einsum("nlk,nk->nl", Vi, Y)
            gn = torch.einsum("nlk,nk->nl", Vi, t * Y - w)
            An = -(C * ((1 - t[:, :, None] ** 2) * u[:, :, None] * u[:, None, :] - Vi)).sum() / d
        else:
            V = c * v
            gn, dg = g_out(Y, (F @ Q).reshape(n, L) - V * g, V)
            An = -(c * dg).sum() / d
        g, Ahat = (gn, An) if it == 0 or not damp_g else ((1 - damp_g) * gn + damp_g * g, (1 - damp_g) * An + damp_g * Ahat)
        prec = 1.0 + Ahat
        Qn = (F.T @ g.reshape(-1) + Ahat * Q) / prec
        Q = Qn if it == 0 or not damp_Q else (1 - damp_Q) * Qn + damp_Q * Q
        v = float(1 / prec)
        hist.append(Q.clone())
    H = torch.stack(hist)
    dl = H[1:] - H[:-1]
    out = []
    for t in (2, 5, 10, 20, 40, 80, 200, iters - 1):
        cos = float(dl[t - 1] @ dl[t - 2] / (dl[t - 1].norm() * dl[t - 2].norm()))
        out.append(f"t = {t:3d}: m = {float(H[t] @ Qs) / d:+.4f}, q = {float(H[t] @ H[t]) / d:.4f}, "
                   f"step {float(dl[t - 1].norm()) / math.sqrt(d):.2e}, cos of consecutive steps {cos:+.3f}")
    return out


def linearised_spectrum(X: torch.Tensor, Y: torch.Tensor, rho0: float) -> np.ndarray:
    """Eigenvalues of AMP linearised at Qhat = 0, v = rho0 (module doc): with D^mu = u u^T - diag(1 / V^mu),
    u = Y^mu / V^mu, V^mu_l = c_l^mu rho0, g_t = D (F Qhat_t - V g_(t-1)) and Qhat_(t+1) = rho0 F^T g_t."""
    n, L, d = X.shape
    F = (X.reshape(n * L, d) / math.sqrt(d)).numpy()
    V = ((X * X).sum(-1) / d).numpy() * rho0
    u = Y.numpy() / V
    D = np.zeros((n * L, n * L))
    for mu in range(n):
        D[mu * L:(mu + 1) * L, mu * L:(mu + 1) * L] = np.outer(u[mu], u[mu]) - np.diag(1.0 / V[mu])
    DV = D * V.reshape(1, -1)
    M = np.block([[rho0 * F.T @ D @ F, -rho0 * F.T @ DV], [D @ F, -DV]])
    return np.linalg.eigvals(M)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.35)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args()
    torch.set_num_threads(1)
    p, d = ModelParams(), args.d
    teacher = make_teacher(p, d, generator(args.seed, "teacher"))
    data = sample(teacher, n_samples(args.alpha, d), generator(args.seed, "train"))
    Y = revealed_fields(data.hstar, generator(args.seed, "amp"))
    Qs = teacher.Qstar.reshape(-1)
    print(f"seed {args.seed}, d = {d}, alpha = {args.alpha}")
    for label, cfg, start in (("default start", AmpConfig(max_iter=1000), None),
                              ("start 100x larger", AmpConfig(max_iter=1000, init_scale=1e-2), None),
                              *((f"informed start m0 = {m0}", AmpConfig(max_iter=1000), informed_start(Qs, m0, d))
                                for m0 in (0.05, 0.3, 0.99))):
        r = gamp(data.X, Y, p.rho0, teacher.Qstar, generator(args.seed, "amp"), cfg, start=start)
        print(f"  AMP, {label}: {r.status} after {r.iterations} iterations, theta = {r.theta:+.4f}, q = {r.q:.4f}")
    for label, kw, m0 in (("diagonal Onsager block, from m0 = 0.99", {}, 0.99),
                          ("full L x L Onsager block, from m0 = 0.99", {"block": True}, 0.99),
                          ("g and Ahat damped 0.5, from m0 = 0.99", {"damp_g": 0.5}, 0.99),
                          ("Q damped 0.3, from m0 = 0.99", {"damp_Q": 0.3}, 0.99),
                          ("Q damped 0.5, from m0 = 0.01", {"damp_Q": 0.5}, 0.01),
                          ("Q, g, Ahat damped 0.7, from m0 = 0.99", {"damp_Q": 0.7, "damp_g": 0.7}, 0.99)):
        print(f"  {label}:")
        for line in variant(data.X, Y, Qs, informed_start(Qs, m0, d), **kw):
            print(f"    {line}")
    r = gamp(data.X, Y, p.rho0, teacher.Qstar, generator(args.seed, "amp"),
             AmpConfig(max_iter=3000, damping=0.9, adaptive=False), start=informed_start(Qs, 0.99, d))
    path = ", ".join(f"t = {t}: {r.theta_path[t]:+.3f}" for t in (10, 100, 200, 400, 800, 1500, 3000) if t < len(r.theta_path))
    print(f"  fixed step theta = 0.1 from m0 = 0.99 ({r.status} after {r.iterations}): m at {path}")
    ev = linearised_spectrum(data.X, Y, p.rho0)
    top = ev[np.argsort(-np.abs(ev))[:4]]
    ratio = args.alpha * (p.L * (p.L + 1))  # alpha / alpha_WR
    print(f"  AMP linearised at Qhat = 0: largest |eigenvalue| {np.abs(top[0]):.3f} ({np.round(top, 3).tolist()}); "
          f"real parts from {ev.real.min():.3f} to {ev.real.max():.3f}; alpha / alpha_WR = {ratio:.3f}, "
          f"its square root {math.sqrt(ratio):.3f}")


if __name__ == "__main__":
    main()
