"""The limit loss of docs/model.md section 2 against the finite-d model of section 1.

For a fixed Q, samples X of the finite-d model give the finite-d loss (1/2d)|y - f(X)|^2
and, at the same samples' fields (h, h*), the limit loss. Their paired difference
Delta(d) is O(1/d) (positions and token-overlap fluctuations, docs/derivation.md), so
we measure Delta at d = 500 ... 4000 and fit Delta(d) = a + b/d: the intercept a (the
d -> inf difference) must vanish within its standard error. A wrong limit loss (here:
sigma_l^2 in place of sigma_k^2) leaves an O(1) intercept and is rejected.
"""

from __future__ import annotations

import numpy as np

from attnphase.theory.kernels import get_kernels

SIGMA = np.array([0.4, 1.0])  # unequal, so sigma_k vs sigma_l matters
OMEGA = 0.3
A = np.array([[0.6, 0.4], [0.4, 0.6]])


def _paired_differences(d: int, n: int, rng: np.random.Generator, chunk: int = 250) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample finite-d loss minus limit loss, and the wrong-limit variant, at dimension d."""
    L = 2
    k = get_kernels(L)
    p1 = np.ones(d) / np.sqrt(d)
    p = np.stack([p1, -p1])  # the paper's positions, P = [[1, -1], [-1, 1]]
    # Q* and a noise direction n orthonormalised against p1 (|Q*|^2 = |n|^2 = d), so that the
    # overlaps th0 = 0.8, q0 = 0.8^2 + 0.9^2 + 0.5^2, m = (0.5, -0.5) are exactly the same at every d
    basis, _ = np.linalg.qr(np.column_stack([p1, rng.normal(size=(d, 2))]))
    Qstar, noise = np.sqrt(d) * basis[:, 1], np.sqrt(d) * basis[:, 2]
    Q = 0.8 * Qstar + 0.9 * noise + 0.5 * np.sqrt(d) * p1
    right, wrong = [], []
    for _ in range(n // chunk):
        X = rng.normal(size=(chunk, L, d)) * SIGMA[None, :, None]
        h = (X + p[None]) @ Q / np.sqrt(d)
        hstar = X @ Qstar / np.sqrt(d)
        T = k.target(hstar, OMEGA, A)
        S = k.attention(h)
        y = np.einsum("nlk,nkd->nld", T, X)
        f = np.einsum("nlk,nkd->nld", S, X + p[None])
        finite = ((y - f) ** 2).sum(axis=(1, 2)) / (2 * d)
        right.append(finite - k.loss(h, T, SIGMA**2))
        wrong_limit = 0.5 * np.einsum("nlk,l->n", (S - T) ** 2, SIGMA**2)  # sigma_l instead of sigma_k
        wrong.append(finite - wrong_limit)
    return np.concatenate(right), np.concatenate(wrong)


def _intercept(ds: list[int], means: list[float], ses: list[float]) -> tuple[float, float]:
    """Weighted least squares Delta(d) = a + b/d: (a, standard error of a)."""
    X = np.column_stack([np.ones(len(ds)), 1.0 / np.array(ds)])
    W = np.diag(1.0 / np.square(ses))
    cov = np.linalg.inv(X.T @ W @ X)
    a, _ = cov @ X.T @ W @ np.array(means)
    return float(a), float(np.sqrt(cov[0, 0]))


def test_limit_loss_is_the_large_d_limit_of_the_finite_d_loss() -> None:
    rng = np.random.default_rng(2024)
    ds = [500, 1000, 2000, 4000]
    n = 2000
    stats = {"right": ([], []), "wrong": ([], [])}
    for d in ds:
        for key, diff in zip(("right", "wrong"), _paired_differences(d, n, rng)):
            stats[key][0].append(diff.mean())
            stats[key][1].append(diff.std(ddof=1) / np.sqrt(n))
    a, se = _intercept(ds, *stats["right"])
    assert abs(a) < 4 * se, f"intercept {a:.3g} +- {se:.2g}: the limit loss misses an O(1) term"
    # the test has power: the standard error is tiny compared with the loss itself (~0.04)
    assert se < 5e-4
    # and the O(1/d) remainder is visible and shrinks: |Delta(4000)| well below |Delta(500)|
    assert abs(stats["right"][0][-1]) < 0.5 * abs(stats["right"][0][0]) + 4 * stats["right"][1][-1]
    a_wrong, se_wrong = _intercept(ds, *stats["wrong"])
    assert abs(a_wrong) > 8 * se_wrong, "a wrong limit loss must be rejected by this test"
