"""Check 2: the limit loss against a finite-d Monte-Carlo estimate (paired, fit in 1/d)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from attnphase.theory.params import ModelParams

from .common import Z, CheckResult, Context, _positions_factor, _worst


def _weighted_intercept(ds: Sequence[int], means: Sequence[float], ses: Sequence[float]) -> tuple[float, float, float]:
    """Weighted least squares Delta(d) = a + b / d: (a, standard error of a, b)."""
    X = np.column_stack([np.ones(len(ds)), 1.0 / np.asarray(ds, dtype=float)])
    W = np.diag(1.0 / np.square(ses))
    cov = np.linalg.inv(X.T @ W @ X)
    a, b = cov @ X.T @ W @ np.asarray(means)
    return float(a), float(math.sqrt(cov[0, 0])), float(b)


def limit_loss_differences(params: ModelParams, d: int, n: int, rng: np.random.Generator, chunk: int = 250) -> tuple[np.ndarray, float]:
    """Per-sample finite-d loss (1/2d)|y - f(X)|^2 minus the generated limit loss, at dimension d, and E[loss].

    Student Q = 0.8 Q* + 0.9 n + sqrt(d) B c (th0 = 0.8 rho0, q0 = 0.64 rho0 + 0.81 + 0.25,
    m = F c with c = 0.5 e_1), positions p = F B^T with P = F F^T, Q* and n orthogonal to them;
    y = T(h*) X, f = S(h) (X + p), h = (X + p) Q / sqrt(d), h* = X Q* / sqrt(d) (docs/model.md section 1).
    """
    from attnphase.theory.kernels import get_kernels

    L, s2, sig = params.L, params.sigma2, np.sqrt(params.sigma2)
    k = get_kernels(L)
    basis, _ = np.linalg.qr(rng.normal(size=(d, L + 2)))
    B, Qstar, noise = basis[:, :L], math.sqrt(params.rho0 * d) * basis[:, L], math.sqrt(d) * basis[:, L + 1]
    p = _positions_factor(params.P_array) @ B.T  # (L, d)
    c = 0.5 * np.eye(L)[0]
    Q = 0.8 * Qstar + 0.9 * noise + math.sqrt(d) * B @ c
    diffs, losses = [], []
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        X = rng.normal(size=(m, L, d)) * sig[None, :, None]
        h = (X + p[None]) @ Q / math.sqrt(d)
        hstar = X @ Qstar / math.sqrt(d)
        T = k.target(hstar, params.omega, params.A_array)
        S = k.attention(h)
        y = np.einsum("nlk,nkd->nld", T, X)
        f = np.einsum("nlk,nkd->nld", S, X + p[None])
        finite = ((y - f) ** 2).sum(axis=(1, 2)) / (2 * d)
        limit = k.loss(h, T, s2)
        diffs.append(finite - limit)
        losses.append(limit)
    return np.concatenate(diffs), float(np.mean(np.concatenate(losses)))


def check_limit_loss(ctx: Context) -> CheckResult:
    """Check 2: the generated limit loss is the d -> infinity limit of the finite-d loss (paired, fit a + b/d)."""
    r = CheckResult(2, "limit-loss", "limit loss vs finite d",
                    "limit loss vs finite-d Monte Carlo (paired): Delta(d) = a + b/d, a = 0")
    rng = ctx.rng(2)
    ds, n = list(ctx.sizes.mc_dims), ctx.sizes.mc_samples
    means, ses, loss = [], [], []
    for d in ds:
        diff, mean_loss = limit_loss_differences(ctx.params, d, n, rng)
        means.append(float(diff.mean()))
        ses.append(float(diff.std(ddof=1) / math.sqrt(n)))
        loss.append(mean_loss)
    a, se, b = _weighted_intercept(ds, means, ses)
    pred = a + b / np.asarray(ds, dtype=float)
    chi2 = float(np.sum(((np.asarray(means) - pred) / np.asarray(ses)) ** 2))
    r.tolerance_from = f"{Z:g} standard errors of the intercept (weighted least squares over d)"
    r.details = {"d": ds, "samples per d": n, "Delta(d)": means, "standard error": ses, "intercept a": a, "se(a)": se,
                 "slope b": b, "chi2 of the fit": chi2, "dof": len(ds) - 2, "E[limit loss]": float(np.mean(loss)),
                 "se(a) / E[loss]": se / max(float(np.mean(loss)), 1e-300)}
    return _worst(r, {"intercept a": (abs(a), Z * se)}, "absolute, loss units")
