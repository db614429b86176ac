"""Checks 3-5 of the state evolution: the hat overlaps against d(alpha E[M]), the prior update against a
finite-d ridge solve, and the identities at a converged fixed point."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnphase.theory.params import ModelParams

from .adapter import _admissible, _channel_side, _loss_at_prox, _prior_side, _raw_rule, _se_solve, _solver_rule, _state, _state_vector
from .common import FAIL, PASS, U, Z, CheckResult, Context, _positions_factor, _t_quantile, _worst


def _generic_state(params: ModelParams) -> tuple[float, float, np.ndarray, float]:
    """A state with no symmetry (distinct m_l, th0 != 0): q0 = 0.5 rho0, V0 = 10, th0 = 0.5 sqrt(q0 rho0)."""
    L = params.L
    q0 = 0.5 * params.rho0
    m = 0.3 * math.sqrt(q0) * np.array([(-0.6) ** l for l in range(L)])
    return q0, 10.0, m, 0.5 * math.sqrt(q0 * params.rho0)


def check_hat_overlaps(ctx: Context) -> CheckResult:
    """Check 3: the hat overlaps are the derivatives of alpha E[M] in the overlaps (Phi stationary, section 4).

    With x = (q0, V0, m_1..m_L, th0) and q_l = sigma_l^2 q0 etc.:
    d(alpha E[M])/d q0 = sum_l sigma_l^2 Vhat_l / 2, d/d V0 = -sum_l sigma_l^2 qhat_l / 2,
    d/d m_l = -mhat_l, d/d th0 = -sum_l sigma_l^2 thhat_l. The V0 and m derivatives hold node by
    node (envelope theorem); the q0 and th0 ones through Gaussian integration by parts, i.e. in
    expectation: a rule carries a quadrature error, zero-mean over independent scramblings.
    """
    r = CheckResult(3, "hats", "hat overlaps vs d(alpha E[M])",
                    "hat overlaps vs central differences of alpha E[M] in q0, V0, m, th0 (same nodes)")
    p, alpha, L = ctx.params, ctx.alpha, ctx.params.L
    s2 = p.sigma2
    q0, V0, m, th0 = _generic_state(p)
    x0 = np.concatenate([[q0, V0], m, [th0]])
    names = ["q0", "V0"] + [f"m_{l + 1}" for l in range(L)] + ["th0"]
    step = 1e-3 * np.maximum(np.abs(x0), 0.1)
    for i in range(x0.size):  # both points of the 2h difference inside the domain (rho0 = 1e-12: q0 = 5e-13)
        e = np.eye(x0.size)[i]
        while not all(_admissible(x0 + s * 2 * step[i] * e, p.rho0) for s in (1, -1)) and step[i] > 1e-12 * abs(x0[i]):
            step[i] *= 0.5
    D = []  # per replicate: FD(h) - formula, FD(2h) - FD(h)
    formulas, failures = [], 0
    for rep in range(ctx.sizes.hat_replicates):
        rule = _raw_rule(L, f"sobol{ctx.sizes.hat_rule}:1:{1000 * ctx.seed + rep}")
        hats, _, fails = _channel_side(p, alpha, _state(x0), rule)
        failures += fails
        formula = np.concatenate([
            [0.5 * s2 @ hats["Vhat"], -0.5 * s2 @ hats["qhat"]], -hats["mhat"], [-(s2 @ hats["thhat"])]
        ])
        FD = {}
        for mult in ((1, 2) if rep == 0 else (1,)):
            grad = np.empty(x0.size)
            for i in range(x0.size):
                e = mult * step[i] * np.eye(x0.size)[i]
                fp_, fm_ = (alpha * _channel_side(p, alpha, _state(x0 + s * e), rule)[1] for s in (1, -1))
                grad[i] = (fp_ - fm_) / (2 * mult * step[i])
            FD[mult] = grad
        if rep == 0:  # truncation estimate on the first rule only (a property of the smooth E[M])
            rich = np.abs(FD[2] - FD[1])
        D.append(FD[1] - formula)
        formulas.append(formula)
    diff = np.array(D)  # (R, n)
    R = diff.shape[0]
    mean, se = diff.mean(axis=0), diff.std(axis=0, ddof=1) / math.sqrt(R)
    tq = _t_quantile(R - 1)
    tol = tq * se + rich
    value = np.mean(formulas, axis=0)
    comps = {f"d/d {n}": (abs(float(mean[i])), float(tol[i])) for i, n in enumerate(names)}
    r.tolerance_from = (f"t_{R - 1} quantile ({tq:.2f}) x standard error over {R} independent scramblings "
                        "+ Richardson |FD(h) - FD(2h)| (first scrambling)")
    r.details = {
        "state (q0, V0, m, th0)": {"q0": q0, "V0": V0, "m": m.tolist(), "th0": th0},
        "rule": f"sobol 2^{ctx.sizes.hat_rule} x {R} scramblings", "proximal failures": failures,
        **{f"d/d {n}": {"formula": float(value[i]), "mean FD - formula": float(mean[i]), "se": float(se[i]),
                        "FD truncation": float(rich[i])} for i, n in enumerate(names)},
    }
    if failures:
        r.reason = f"{failures} proximal solves did not converge"
    return _worst(r, comps, "absolute, mean over scramblings")


def check_prior(ctx: Context) -> CheckResult:
    """Check 4: the closed-form ridge update against the finite-d ridge problem solved directly (CG).

    The problem (docs/derivation.md, "The prior side as a finite-d ridge problem"):
    min_Q (lambda/2)|Q|^2 + sum_l [(Vhat_l/2) Q^T Sigma_l Q - Q^T(sqrt(qhat_l) Sigma_l^(1/2) z_l
    + mhat_l sqrt(d) p_l + thhat_l Sigma_l Q*)], Sigma_l = sigma_l^2 I_d; q0 = |Q|^2/d,
    m_k = p_k.Q/sqrt(d), th0 = Q.Q*/d, V0 = linear response u.(H^-1 u)/|u|^2. Finite-d
    fluctuations have known standard deviations (a = sum_l sigma_l^2 qhat_l, b = |deterministic part|^2/d):
    sd(q0) = sqrt((2 a^2 + 4 a b)/d) / Lam^2, sd(m_k) = sqrt(a P_kk/d) / Lam, sd(th0) = sqrt(a rho0/d) / Lam.
    """
    from scipy.sparse.linalg import LinearOperator, cg

    from attnphase.theory.priors import RidgePrior

    r = CheckResult(4, "prior", "prior update vs finite-d ridge",
                    "closed-form prior update vs a finite-d ridge solve (conjugate gradients)")
    p, L, d = ctx.params, ctx.params.L, ctx.sizes.ridge_d
    rng = ctx.rng(4)
    s2, sig, P = p.sigma2, np.sqrt(p.sigma2), p.P_array
    qhat, mhat = rng.uniform(0.1, 2.0, L), rng.normal(size=L)
    thhat, Vhat = 0.5 * rng.normal(size=L), rng.uniform(0.1, 1.5, L)
    basis, _ = np.linalg.qr(rng.normal(size=(d, L + 1)))
    pos = _positions_factor(P) @ basis[:, :L].T  # (L, d), pos pos^T = P
    Qstar = math.sqrt(p.rho0 * d) * basis[:, L]
    z = rng.normal(size=(L, d))
    lin = (np.sqrt(qhat) * sig)[:, None] * z + mhat[:, None] * math.sqrt(d) * pos + (thhat * s2)[:, None] * Qstar[None]
    curv = p.lam + float(np.sum(Vhat * s2))

    def hess(v: np.ndarray) -> np.ndarray:  # lambda Q + sum_l Vhat_l Sigma_l Q, as written
        out = p.lam * v
        for l in range(L):
            out = out + Vhat[l] * s2[l] * v
        return out

    Hop = LinearOperator((d, d), matvec=hess, dtype=float)
    rtol = 1e-12
    Q, info = cg(Hop, lin.sum(axis=0), rtol=rtol, atol=0.0)
    u = rng.normal(size=d)
    resp, info2 = cg(Hop, u, rtol=rtol, atol=0.0)
    if info or info2:
        r.status, r.reason = FAIL, f"conjugate gradients did not converge (info {info}, {info2})"
        return r
    q0_d, m_d, th0_d, V0_d = Q @ Q / d, pos @ Q / math.sqrt(d), Q @ Qstar / d, u @ resp / (u @ u)
    q0, V0, m, th0 = RidgePrior.of(p).update((qhat, mhat, thhat, Vhat))
    a = float(np.sum(s2 * qhat))
    b = float(mhat @ P @ mhat + p.rho0 * np.sum(s2 * thhat) ** 2)
    sd_q0 = math.sqrt((2 * a * a + 4 * a * b) / d) / curv**2
    sd_m = np.sqrt(a * np.diag(P) / d) / curv
    sd_th0 = math.sqrt(a * p.rho0 / d) / curv
    floor = lambda x: 1e3 * U * max(1.0, abs(x))  # noqa: E731 - round-off of the sums over d
    comps = {
        "q0": (abs(q0_d - q0), Z * sd_q0 + floor(q0)),
        "V0": (abs(V0_d - V0), 10 * rtol * V0 + floor(V0)),
        "th0": (abs(th0_d - th0), Z * sd_th0 + floor(th0)),
    }
    for k in range(L):
        comps[f"m_{k + 1}"] = (abs(float(m_d[k] - m[k])), Z * float(sd_m[k]) + floor(float(m[k])))
    r.tolerance_from = f"{Z:g} finite-d standard deviations (O(1/sqrt(d)), d = {d}) + CG tolerance {rtol:g} for V0"
    r.details = {
        "d": d, "hats": {"qhat": qhat, "mhat": mhat, "thhat": thhat, "Vhat": Vhat},
        "closed form": {"q0": float(q0), "V0": float(V0), "m": m, "th0": float(th0)},
        "finite d": {"q0": float(q0_d), "V0": float(V0_d), "m": m_d, "th0": float(th0_d)},
        "sd": {"q0": sd_q0, "m": sd_m, "th0": sd_th0},
        # power: a shared noise z for all tokens would move q0 by this many tolerances
        "shared-z q0 shift / tolerance": abs((np.sum(sig * np.sqrt(qhat)) ** 2 - a) / curv**2) / (Z * sd_q0),
    }
    return _worst(r, comps, "absolute")


def check_fixed_point(ctx: Context) -> CheckResult:
    """Check 5: at a converged fixed point, (a) one more SE map moves every overlap by < 1e-9
    (scaled by max(1, |x|); by less than the map's jump at a point accepted at the rule's jump scale),
    (b) e_t = -Phi = lambda q0/2 + alpha E[loss(h_hat)] (section 4),
    (c) d e_t / d alpha = E[M] along the branch (envelope theorem)."""
    from attnphase.theory.free_entropy import free_entropy

    r = CheckResult(5, "fixed-point", "identities at a fixed point",
                    "one more SE map; -Phi = lambda q0/2 + alpha E[loss]; d e_t/d alpha = E[M]")
    p, alpha, sizes = ctx.params, ctx.alpha, ctx.sizes
    fp, note = ctx.fixed_point()
    if fp is None:
        r.status, r.reason = FAIL, f"no converged fixed point at alpha = {alpha} ({note})"
        return r
    ov, branch = fp.overlaps, fp.branch
    x = _state_vector(ov)
    s2 = p.sigma2
    comps: dict[str, tuple[float, float]] = {}

    # (a) one more SE map on the solve's (full, symmetrised) rule
    rule = _solver_rule(p, sizes.se_rule)
    hats, E_M, fails = _channel_side(p, alpha, ov, rule)
    fx = _prior_side(p, hats)
    step = float(np.max(np.abs(fx - x) / np.maximum(1.0, np.abs(x))))
    # a point accepted at the rule's jump scale (docs/method.md section 4) is a fixed point to within the map's jump
    jump = float(fp.status.jump)
    comps["(a) one more SE map"] = (step, max(1e-9, jump) if math.isfinite(jump) else 1e-9)

    # (b) e_t = -Phi(x, xhat) vs lambda q0 / 2 + alpha E[loss(h_hat)], all on the same rule. The
    # identity is exact at x' = prior(xhat); at x it is off by the linear terms of Phi in x - x'.
    e_loss, fails_b = _loss_at_prox(p, ov, rule)
    phi = float(free_entropy(ov.q0, ov.V0, ov.m, ov.th0, hats["qhat"], hats["mhat"], hats["thhat"], hats["Vhat"],
                             s2, p.P_array, p.lam, p.rho0, alpha, E_M))
    rhs = p.lam * ov.q0 / 2 + alpha * e_loss
    dx = np.abs(fx - x)
    S_V, S_q, S_th = float(s2 @ hats["Vhat"]), float(s2 @ hats["qhat"]), float(s2 @ hats["thhat"])
    lin = dx[0] * abs(p.lam + S_V) / 2 + dx[1] * abs(S_q) + float(np.abs(hats["mhat"]) @ dx[2:-1]) + dx[-1] * abs(S_th)
    terms = abs(phi) + abs(rhs) + abs(alpha * E_M) + ov.V0 * abs(S_q) + ov.q0 * abs(S_V)
    comps["(b) -Phi = lambda q0/2 + alpha E[loss]"] = (abs(-phi - rhs), lin + 64 * U * terms)

    # (c) d e_t / d alpha = E[M]: central differences along the branch on R independent rules
    gaps, rich, slopes, EMs, h_used, skip_c = [], [], [], [], math.nan, ""
    for rep in range(sizes.slope_replicates):
        spec = _replicate_spec(sizes.se_rule, rep)
        base = fp if rep == 0 else _se_solve(p, alpha, branch, spec, start=fp)
        if not (base.status.converged and base.branch == branch):
            skip_c = f"replicate rule {spec}: no converged {branch} point at alpha = {alpha}"
            break
        # the truncation estimate |D(h) - D(2h)| on the first rule only (a property of the smooth e_t(alpha))
        res = _slope(p, base, branch, spec, sizes.slope_step * alpha if rep == 0 else h_used, richardson=rep == 0)
        if res is None:
            skip_c = f"the {branch} branch does not extend to alpha +- {2 * sizes.slope_step * alpha:.3g} on {spec}"
            break
        D1, D2, h_used = res
        E_Mr = float(base.observables.E_M)
        gaps.append(D1 - E_Mr)
        if rep == 0:
            rich.append(abs(D1 - D2))
        slopes.append(D1)
        EMs.append(E_Mr)
    if len(gaps) >= 2:
        R = len(gaps)
        tq = _t_quantile(R - 1)
        se = float(np.std(gaps, ddof=1) / math.sqrt(R))
        comps["(c) d e_t/d alpha = E[M]"] = (abs(float(np.mean(gaps))), tq * se + max(rich))
    r.tolerance_from = (
        "(a) 1e-9 (solver tolerance 1e-10), or the SE map's jump next to a point accepted at the rule's jump scale; "
        "(b) the linear terms of Phi times the one-step change x' - x, "
        "+ 64 u x terms; (c) t quantile x standard error over independent rules + Richardson |D(h) - D(2h)| (first rule)"
    )
    r.details = {
        "fixed point": {"branch": branch, "alpha": alpha, "q0": ov.q0, "V0": ov.V0, "m": np.asarray(ov.m), "th0": ov.th0,
                        "residual": float(fp.status.residual), "rule": sizes.se_rule,
                        **({"accepted at the rule's jump scale, the jump": jump} if math.isfinite(jump) else {})},
        "(a) max scaled change": step, "(b) -Phi": -phi, "(b) lambda q0/2 + alpha E[loss]": rhs,
        "(c) slopes": slopes, "(c) E[M]": EMs, "(c) step in alpha": h_used,
        "proximal failures": fails + fails_b,
    }
    if skip_c:
        r.details["(c) not measured"] = skip_c
    out = _worst(r, comps, "scaled change / absolute e_t units")
    if skip_c and out.status == PASS:
        out.reason = f"(c) not measured: {skip_c}"
    return out


def _replicate_spec(spec: str, k: int) -> str:
    """The k-th independent replicate of a rule spec (Sobol: seed + k; Gauss--Hermite: itself, k = 0 only)."""
    s = spec.strip().lower()
    if k == 0:
        return spec
    if s.startswith("sobol"):
        parts = s[5:].split(":")
        log2n, reps, seed = int(parts[0]), int(parts[1]) if len(parts) > 1 else 1, int(parts[2]) if len(parts) > 2 else 0
        return f"sobol{log2n}:{reps}:{seed + k}"
    raise ValueError(f"check 5 needs a scrambled Sobol rule for independent replicates, got {spec!r}")


def _slope(p: ModelParams, base: Any, branch: str, spec: str, h: float, richardson: bool = True) -> tuple[float, float, float] | None:
    """Central differences of e_t in alpha on one rule (warm starts): (D(h), D(2h) or NaN, h); None if the
    branch is left. The step is halved up to twice when a neighbouring solve leaves the branch."""
    for _ in range(3):
        e = {}
        for s in ((-2, -1, 1, 2) if richardson else (-1, 1)):
            a = base.alpha + s * h
            fp = _se_solve(p, a, branch, spec, start=base, same_rule=True) if a > 0 else None
            if fp is None or not (fp.status.converged and fp.branch == branch):
                break
            e[s] = float(fp.observables.e_t)
        else:
            D2 = (e[2] - e[-2]) / (4 * h) if richardson else math.nan
            return (e[1] - e[-1]) / (2 * h), D2, h
        h /= 2
    return None
