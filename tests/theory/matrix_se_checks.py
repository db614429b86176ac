"""Derivation checks of the state evolution in matrix overlaps (a rank-r student, a rank-r* teacher: docs/model.md
section 7), as numbers.

The helpers of tests/theory/test_matrix_channel.py (not a test module): each function returns plain numbers (what is
compared, the error, the tolerance it is judged by), which the tests assert on:

1. :func:`reduction_to_rank1` -- at r = r* = 1 the matrix formulas (theory/matrix_channel.py, the hats of
   theory/hats.py and the ridge prior of theory/priors/ridge.py on 1 x 1 matrices) against the rank-1 ones derived in sympy (theory/channel.py,
   the prior's sympy statement, free_entropy.py) at random inputs: round-off.
2. :func:`hats_vs_envelope_differences` -- the hats against central differences of alpha E[M] in the
   global overlaps on common random numbers (stationarity of Phi in the overlaps):
       d(alpha E[M]) / d q0 = 1/2 sum_l s_l^2 Vhat_l,   d / d V0 = -1/2 sum_l s_l^2 qhat_l,
       d / d m_l = -mhat_l,                             d / d th0 = -sum_l s_l^2 thhat_l;
   over independent Sobol rules, judged by the Student-t bound of the replicate spread.
3. :func:`prior_vs_ridge` -- the closed-form prior against the finite-d ridge solve Q = B Lam^{-1},
   B = sum_l s_l Z_l qhat_l^{1/2} + sqrt(d) sum_l p_l mhat_l^T + Q* Th^T (docs/derivation.md).
4. :func:`prior_stationarity` -- the gradient of Phi in the hats (torch autograd of an independent
   transcription of Phi) at the closed-form prior: zero to round-off.
5. Fixed point: e_t = -Phi against lambda Tr(q0) / 2 + alpha E[loss(h_hat)] (the record's ``e_t`` and
   ``e_t_direct``, see numerics/se/results.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnphase.theory.hats import hat_overlaps
from attnphase.theory.params import ModelParams
from attnphase.theory.priors import RidgePrior

from attnphase.validation.derivation_checks.common import _t_quantile


def reduction_to_rank1(params: ModelParams, seed: int = 0, n: int = 64) -> dict[str, float]:
    """Largest relative difference per formula between the rank-r code at r = r* = 1 and the rank-1 code."""
    from attnphase.theory import channel, free_entropy
    from attnphase.theory import matrix_channel as rk

    rng = np.random.default_rng(seed)
    L, s2, P = params.L, params.sigma2, params.P_array
    q0, V0, th0 = 0.7, 3.0, 0.4
    m = rng.normal(size=L) * 0.3
    xi, eta = rng.normal(size=(n, L)), rng.normal(size=(n, L))
    out: dict[str, float] = {}

    def rel(a: Any, b: Any) -> float:
        a, b = np.asarray(a, float), np.asarray(b, float)
        return float(np.max(np.abs(a - b) / np.maximum(1e-300, np.abs(b).max())))

    w1, hs1 = channel.channel_fields(xi, eta, q0, m, th0, s2, params.rho0)
    wr, hsr = rk.channel_fields(xi[..., None], eta[..., None], np.array([[q0]]), m[:, None], np.array([[th0]]),
                                s2, params.rho0)
    out["fields w"] = rel(wr[..., 0], w1)
    out["fields h*"] = rel(hsr[..., 0], hs1)
    E = {k: rng.normal(size=L) for k in ("g2", "g", "geta", "gxi")}
    E["g2"] = np.abs(E["g2"])
    h1 = _sympy_hats(1.3, E, q0, th0, s2, params.rho0)
    hr = hat_overlaps(1.3, E["g2"][:, None, None], E["g"][:, None], E["geta"][:, None, None],
                         E["gxi"][:, None, None], np.array([[q0]]), np.array([[th0]]), s2, params.rho0)
    for name, a, b in zip(("qhat", "mhat", "thhat", "Vhat"), hr, h1):
        out[f"hats {name}"] = rel(np.reshape(a, L), b)
    qh, mh, thh, Vh = (np.abs(h1[0]), h1[1], h1[2], np.abs(h1[3]) + 1.0)
    p1 = _sympy_ridge(params, qh, mh, thh, Vh)
    pr = RidgePrior.of(params).update((qh[:, None, None], mh[:, None], thh[:, None, None], Vh[:, None, None]))
    for name, a, b in zip(("q0", "V0", "m", "th0"), pr, p1):
        out[f"prior {name}"] = rel(np.reshape(a, np.shape(b)), b)
    phi1 = free_entropy.free_entropy(q0, V0, m, th0, qh, mh, thh, Vh, s2, P, params.lam, params.rho0, 1.3, 0.01)
    phir = rk.free_entropy(np.array([[q0]]), np.array([[V0]]), m[:, None], np.array([[th0]]), qh[:, None, None],
                           mh[:, None], thh[:, None, None], Vh[:, None, None], s2, P, params.lam, params.rho0, 1.3, 0.01)
    out["Phi"] = rel(phir, phi1)
    return out


def _sympy_hats(alpha: float, E: dict[str, np.ndarray], q0: float, th0: float, s2: np.ndarray, rho0: float
                ) -> tuple[np.ndarray, ...]:
    """(qhat, mhat, thhat, Vhat), each (L,), of the r = 1 hat formulas as stated in sympy
    (theory/channel.py: hat_overlap_exprs), evaluated token by token by substitution."""
    from attnphase.theory import channel

    s, ex = channel.symbols(), channel.hat_overlap_exprs()
    out = np.empty((4, s2.size))
    for l in range(s2.size):
        q, theta = s2[l] * q0, s2[l] * th0
        vals = {s["alpha"]: alpha, s["E_g2"]: E["g2"][l], s["E_g"]: E["g"][l], s["E_geta"]: E["geta"][l],
                s["E_gxi"]: E["gxi"][l], s["q"]: q, s["theta"]: theta, s["rho_tilde"]: s2[l] * rho0 - theta**2 / q}
        for i, k in enumerate(("qhat", "mhat", "thhat", "Vhat")):
            out[i, l] = float(ex[k].xreplace(vals))
    return tuple(out)


def _sympy_ridge(params: ModelParams, qh: np.ndarray, mh: np.ndarray, thh: np.ndarray, Vh: np.ndarray
                 ) -> tuple[float, float, np.ndarray, float]:
    """(q0, V0, m, th0) of the r = 1 ridge update as stated in sympy (theory/priors/ridge.py: ridge_exprs),
    evaluated by substitution."""
    from attnphase.theory.priors.ridge import ridge_exprs, symbols

    L = params.L
    s, ex = symbols(L), ridge_exprs(L)
    vals = {s["lam"]: params.lam, s["rho0"]: params.rho0}
    for l in range(L):
        vals.update({s["qhat"][l]: qh[l], s["mhat"][l]: mh[l], s["thhat"][l]: thh[l], s["Vhat"][l]: Vh[l],
                     s["sigma2"][l]: params.sigma2[l]})
        for k in range(L):
            vals[s["P"][k, l]] = params.P_array[k, l]
    num = lambda e: float(e.xreplace(vals))  # noqa: E731 - sympy floats at double precision
    return num(ex["q0"]), num(ex["V0"]), np.array([num(e) for e in ex["m"]]), num(ex["th0"])


def hats_vs_envelope_differences(params: ModelParams, alpha: float, ov: Any, specs: list[str],
                                 step: float = 1e-4) -> dict[str, tuple[float, float, float]]:
    """Per overlap entry: (mean over rules of [central difference of alpha E[M]] - [hat formula],
    Student-t tolerance from the replicate spread plus the difference quotient's round-off, mean hat
    formula).  ``ov``: an Overlaps in the matrix form; ``specs``: independent Sobol rules (common random numbers
    within each)."""
    from attnphase.numerics.se.overlaps import Overlaps
    from attnphase.numerics.quadrature.rules import matrix_rule
    from attnphase.numerics.se.channel import channel_moments
    from attnphase.numerics.se.starts import teacher_rank
    from attnphase.theory.kernels import get_kernels

    L, r, rs = params.L, params.r, teacher_rank(params)
    k = get_kernels(L, r, channel=params.channel)
    s2 = params.sigma2
    diffs: dict[str, list[float]] = {}
    preds: dict[str, list[float]] = {}
    for spec in specs:
        rule = matrix_rule(L, r, rs, spec)

        def envelope(q0: np.ndarray, V0: np.ndarray, m: np.ndarray, th0: np.ndarray) -> tuple[float, Any]:
            mom = channel_moments(k, params, Overlaps(q0, V0, m, th0), rule)
            return alpha * mom.E_M, mom

        _, mom = envelope(ov.q0, ov.V0, ov.m, ov.th0)
        qh, mh, thh, Vh = hat_overlaps(alpha, mom.E_ggT, mom.E_g, mom.E_geta, mom.E_gxi, ov.q0, ov.th0,
                                          s2, params.rho0)
        cases = []
        for a in range(r):
            for b in range(a, r):
                E = np.zeros((r, r))
                E[a, b] = E[b, a] = 1.0
                cases.append((f"q0[{a},{b}]", lambda t, E=E: envelope(ov.q0 + t * E, ov.V0, ov.m, ov.th0)[0],
                              0.5 * np.einsum("l,lab,ba->", s2, Vh, E)))
                cases.append((f"V0[{a},{b}]", lambda t, E=E: envelope(ov.q0, ov.V0 + t * E, ov.m, ov.th0)[0],
                              -0.5 * np.einsum("l,lab,ba->", s2, qh, E)))
        for l in range(L):
            for a in range(r):
                E = np.zeros((L, r))
                E[l, a] = 1.0
                cases.append((f"m[{l},{a}]", lambda t, E=E: envelope(ov.q0, ov.V0, ov.m + t * E, ov.th0)[0],
                              -mh[l, a]))
        for a in range(r):
            for b in range(rs):
                E = np.zeros((r, rs))
                E[a, b] = 1.0
                cases.append((f"th0[{a},{b}]", lambda t, E=E: envelope(ov.q0, ov.V0, ov.m, ov.th0 + t * E)[0],
                              -float(np.einsum("l,lab->ab", s2, thh)[a, b])))
        for name, f, pred in cases:
            fd = (f(step) - f(-step)) / (2 * step)
            diffs.setdefault(name, []).append(fd - float(pred))
            preds.setdefault(name, []).append(float(pred))
    n = len(specs)
    out = {}
    for name, d in diffs.items():
        d_arr = np.array(d)
        se = float(d_arr.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
        scale = max(abs(x) for x in preds[name]) + 1e-12
        tol = _t_quantile(n - 1) * se + 1e-7 * scale / step * 1e-4 + 1e-9
        out[name] = (float(d_arr.mean()), tol, float(np.mean(preds[name])))
    return out


def prior_vs_ridge(params: ModelParams, hats: tuple[np.ndarray, ...], d: int, seed: int = 0
                   ) -> dict[str, tuple[float, float]]:
    """Finite-d ridge solve against the closed form: per overlap (max |finite d - closed form|,
    tolerance: 5 standard errors of the Gaussian d-sums it is made of, propagated through Lam^{-1}, at
    the entry with the largest ratio)."""
    from attnphase.theory import matrix_channel as rk

    qh, mh, thh, Vh = hats
    L, r = mh.shape
    rs = thh.shape[2]
    rng = np.random.default_rng(seed)
    s2, P = params.sigma2, params.P_array
    prior = RidgePrior.of(params)
    Lam, N, Th = prior.terms(hats)
    Qstar = rng.standard_normal((d, rs)) * math.sqrt(params.rho0)
    U, _ = np.linalg.qr(rng.standard_normal((d, L)))
    lamP, UP = np.linalg.eigh(P)
    p = U @ (UP * np.sqrt(np.clip(lamP, 0, None))) @ UP.T  # columns p_l, p_l . p_k = P[l, k]
    B = sum(math.sqrt(s2[l]) * rng.standard_normal((d, r)) @ rk.sym_sqrt(qh[l] + 1e-300 * np.eye(r)) for l in range(L))
    B = B + math.sqrt(d) * p @ mh + Qstar @ Th.T
    Q = np.linalg.solve(Lam.T, B.T).T  # Q = B Lam^{-1} minimises 1/2 Tr(Q Lam Q^T) - Tr(Q^T B)
    q0, V0, m, th0 = prior.update(hats)
    fin = {"q0": Q.T @ Q / d, "m": (p.T @ Q) / math.sqrt(d), "th0": Q.T @ Qstar / d}
    ref = {"q0": q0, "m": m, "th0": th0}
    # standard errors of the d-sums B^T B / d, B^T Q* / d, B^T p / sqrt(d) (entry (c, e) of B^T B / d
    # has variance (N_cc N_ee + N_ce^2) / d), propagated entrywise through Lam^{-1}; 5 of them
    li2 = np.linalg.inv(Lam) ** 2
    nd = np.diag(N)
    var_d = (np.outer(nd, nd) + N * N) / d
    sd = {"q0": np.sqrt(np.einsum("ac,ce,eb->ab", li2, var_d, li2.T)),
          "th0": np.sqrt(li2 @ nd * params.rho0 / d)[:, None] * np.ones((1, rs)),
          "m": np.sqrt(np.outer(np.diag(P), li2 @ nd) / d)}
    out = {}
    for k in fin:
        ratio = np.abs(fin[k] - ref[k]) / (5.0 * sd[k])
        i = np.unravel_index(np.argmax(ratio), ratio.shape)
        out[k] = (float(np.abs(fin[k] - ref[k])[i]), float(5.0 * sd[k][i]))
    return out


def prior_stationarity(params: ModelParams, hats: tuple[np.ndarray, ...]) -> float:
    """max |d Phi / d hats| at the closed-form prior overlaps, relative to the hats' scale (torch
    autograd of Phi written out independently); zero up to round-off when the prior is Phi's stationary point."""
    import torch

    qh, mh, thh, Vh = hats
    q0, V0, m, th0 = RidgePrior.of(params).update(hats)
    t = lambda a: torch.tensor(np.asarray(a, dtype=float), dtype=torch.float64, requires_grad=True)  # noqa: E731
    Tqh, Tmh, Tth, TVh = t(qh), t(mh), t(thh), t(Vh)
    s2 = torch.tensor(params.sigma2, dtype=torch.float64)
    P = torch.tensor(params.P_array, dtype=torch.float64)
    r = mh.shape[1]
    Lam = params.lam * torch.eye(r, dtype=torch.float64) + (s2[:, None, None] * TVh).sum(0)
    Th = (s2[:, None, None] * Tth).sum(0)
    N = (s2[:, None, None] * Tqh).sum(0) + Tmh.T @ P @ Tmh + params.rho0 * Th @ Th.T
    q0t, V0t, mt, th0t = (torch.tensor(x, dtype=torch.float64) for x in (q0, V0, m, th0))
    phi = ((s2[:, None, None] * TVh).sum(0) @ q0t).trace() / 2 - ((s2[:, None, None] * Tqh).sum(0) @ V0t).trace() / 2
    phi = phi - (mt * Tmh).sum() - (th0t * Th).sum() + torch.linalg.solve(Lam, N).trace() / 2
    grads = torch.autograd.grad(phi, (Tqh, Tmh, Tth, TVh))
    scale = max(float(np.abs(np.asarray(x)).max()) for x in (q0, V0, m, th0)) + 1.0
    return max(float(g.abs().max()) for g in grads) / scale
