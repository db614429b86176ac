"""Derivation checks for one model: every identity that ties the derivation together, with numbers.

``attnphase check`` (:mod:`attnphase.validation.check_cli`) runs them for the model given on the
command line; the tests (``tests/test_derivation_checks.py``) run the same functions at smaller
sizes. Each check returns a :class:`CheckResult`: what it compares, the measured error, the
tolerance, where the tolerance comes from, pass / fail / skip, and its own numbers. Sections of
``docs/model.md``: 2 limit loss, 3 SE equations, 4 observables and Phi, 5 linear baseline.

1. ``prox`` -- the generated proximal objective, gradient and Hessian in h (section 3) against
   PyTorch autograd of an independently written objective and against central differences of the
   generated value / gradient, at random points and at extreme fields (|h| up to 1e3).
2. ``limit-loss`` -- the generated limit loss (section 2) against the finite-d loss on the same
   samples; the paired difference Delta(d) is fitted by a + b/d over a few d; a must vanish.
3. ``hats`` -- the hat overlaps (section 3) against central differences of alpha E[M] in the
   overlaps (q0, V0, m_l, th0) on fixed rules (common random numbers): the channel side is the
   stationarity of Phi (section 4) in the overlaps.
4. ``prior`` -- the closed-form prior update (section 3) against a direct finite-d ridge solve.
5. ``fixed-point`` -- at a converged fixed point: one more SE map moves nothing; e_t = -Phi equals
   lambda Tr(q0)/2 + alpha E[loss(h_hat)]; d e_t / d alpha = E[M] along the branch.
6. ``eps-lin`` -- eps_lin (section 5) in double against 30-digit mpmath (L = 2 only).
7. ``codegen`` -- the generated kernels with and without common-subexpression elimination agree,
   the batched kernels agree with per-point calls and with the one-point (scalar) variant.

Tolerances are derived from each method's error and stated with the result:

* round-off: an a-priori bound n_ops * u * (size of the terms), n_ops the arithmetic operations in
  the generated function, u = 2^-53;
* finite differences: the Richardson estimate |D(h) - D(2h)| (three times the estimated truncation
  error of D(h)) plus the round-off of the difference quotient;
* Monte Carlo / randomised quasi-Monte Carlo: ``Z`` (= 4) standard errors, or the Student-t quantile
  of the same two-sided level (6e-5) when the standard error comes from a few replicates;
* Gauss--Hermite truncation: the change when the order is raised by half.

Every call into :mod:`attnphase.numerics` goes through the adapter section below (a few small
functions), so that a change of the numerics API is absorbed there. torch is imported only by
check 1.
"""

from __future__ import annotations

import ast
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnphase.theory.params import ModelParams

#: Unit round-off of IEEE double precision.
U = 2.0**-53

#: Number of standard errors of a Monte-Carlo tolerance (two-sided false-alarm rate 6e-5).
Z = 4.0

#: Two-sided false-alarm rate of Z standard errors; used for Student-t quantiles with few replicates.
FALSE_ALARM = math.erfc(Z / math.sqrt(2.0))

PASS, FAIL, SKIP = "pass", "fail", "skip"


# =====================================================================================
# Adapter: the only calls into attnphase.numerics (adapt here when its API changes).
# =====================================================================================


def _numerics_config(quadrature: str = "sobol12") -> Any:
    """The numerics configuration used here: the defaults (global prox), with the given rule spec
    (only solves read it; the channel evaluations below get their rule explicitly)."""
    from attnphase.numerics.config import SolverConfig

    return SolverConfig(quadrature=quadrature)


def _se_solve(params: ModelParams, alpha: float, branch: str, quadrature: str, start: Any = None, same_rule: bool = False) -> Any:
    """A state-evolution fixed point (FixedPoint: .overlaps .hat .observables .status .alpha .branch).

    ``start``: a fixed point to warm-start from (its overlaps); with ``same_rule`` (it was solved on
    the same rule) its solver memory too, which only shortens the path.
    """
    from attnphase.numerics.state_evolution import solve

    if start is None:
        return solve(params, alpha, branch, config=_numerics_config(quadrature))
    memory = start.memory if same_rule else None
    return solve(params, alpha, branch, init=start.overlaps, memory=memory, config=_numerics_config(quadrature))


def _solver_rule(params: ModelParams, spec: str) -> Any:
    """The (full, unreduced) rule a solve on ``spec`` iterates on: ``make_rule``, symmetrised over the model."""
    from attnphase.numerics.se_map import model_rule

    return model_rule(params, _numerics_config(spec))


def _raw_rule(L: int, spec: str) -> Any:
    """A quadrature rule as built, without symmetrisation (nodes (N, 2L), weights (N,))."""
    from attnphase.numerics.quadrature import make_rule

    return make_rule(L, spec)


def _state(q0: float, V0: float, m: Sequence[float], th0: float) -> Any:
    """The numerics' overlaps object of a state."""
    from attnphase.numerics.overlaps import Overlaps

    return Overlaps(q0=q0, V0=V0, m=np.asarray(m, dtype=float), th0=th0)


def _state_vector(ov: Any) -> np.ndarray:
    """(q0, V0, m_1..m_L, th0) of a state."""
    return np.concatenate([[ov.q0, ov.V0], np.asarray(ov.m, dtype=float), [ov.th0]])


def _channel_side(params: ModelParams, alpha: float, ov: Any, rule: Any) -> tuple[dict[str, np.ndarray], float, int]:
    """Channel side of one SE step on ``rule`` as given (global prox, one full search; hats projected on
    the state's symmetry group, which is trivial at a state without symmetry).

    Returns (hat overlaps by name, E[M] on the rule, proximal failures).
    """
    from attnphase.numerics.se_map import hat_step

    hat, mom = hat_step(params, alpha, ov, rule, _numerics_config())
    hats = {k: np.asarray(getattr(hat, k), dtype=float) for k in ("qhat", "mhat", "thhat", "Vhat")}
    return hats, float(mom.E_M), int(mom.prox_failures)


def _prior_side(params: ModelParams, hats: dict[str, np.ndarray]) -> np.ndarray:
    """Prior side of one SE step: the new state vector (q0, V0, m, th0) from the hat overlaps."""
    from attnphase.numerics.overlaps import HatOverlaps
    from attnphase.numerics.se_map import update

    return _state_vector(update(params, HatOverlaps(**hats)))


def _loss_at_prox(params: ModelParams, ov: Any, rule: Any) -> tuple[float, int]:
    """E[loss(h_hat, h*)] on ``rule`` at the global proximal minimisers, and the proximal failures."""
    from attnphase.numerics.channel import prox_at_nodes, teacher_target
    from attnphase.theory.kernels import get_kernels

    k = get_kernels(params.L)
    _, _, res = prox_at_nodes(k, params, ov, rule, _numerics_config())
    T = teacher_target(k, params, ov, rule)
    return float(rule.weights @ k.loss(res.h, T, params.sigma2)), int((~res.converged).sum())


def _eps_lin_double(params: ModelParams, order: int | None = None) -> float:
    """eps_lin by tensor Gauss--Hermite in double precision (``order`` per dimension; None: the default)."""
    from attnphase.numerics.observables import eps_lin

    return float(eps_lin(params, order))


def _eps_lin_default_order(L: int) -> int:
    """The Gauss--Hermite order per dimension eps_lin uses by default (80 for L = 2)."""
    from attnphase.numerics import observables

    return int(getattr(observables, "_EPS_LIN_ORDER", {}).get(L, 80))


def _eps_lin_mp(params: ModelParams, dps: int) -> Any:
    """eps_lin at ``dps`` digits (mpmath, L = 2)."""
    from attnphase.numerics.precision import eps_lin_mp

    return eps_lin_mp(params, dps=dps)


# =====================================================================================
# Results and sizes
# =====================================================================================


@dataclass
class CheckResult:
    """One check's outcome.

    Attributes:
        number, key, title: 1..7, short name (``--only``), title.
        compares: what is compared with what.
        status: ``pass``, ``fail`` or ``skip``.
        error, tolerance: the measured error and its tolerance for the worst component (largest
            error / tolerance); NaN when skipped.
        quantity: the worst component; units: the units of error and tolerance.
        tolerance_from: how the tolerance is derived.
        reason: why a check failed or was skipped (one line), or "".
        details: every component's numbers (name -> dict of floats / strings).
        seconds: wall time.
    """

    number: int
    key: str
    title: str
    compares: str
    status: str = SKIP
    error: float = math.nan
    tolerance: float = math.nan
    quantity: str = ""
    units: str = ""
    tolerance_from: str = ""
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        """One line for logs and failure messages."""
        if self.status == SKIP:
            return f"[{self.number}] {self.key}: skipped ({self.reason})"
        head = (f"[{self.number}] {self.key}: {self.status.upper()}: {self.quantity}: "
                f"error {self.error:.3g} vs tolerance {self.tolerance:.3g} ({self.units})")
        return head + (f" -- {self.reason}" if self.reason else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number, "key": self.key, "title": self.title, "compares": self.compares,
            "status": self.status, "error": _finite(self.error), "tolerance": _finite(self.tolerance),
            "quantity": self.quantity, "units": self.units, "tolerance_from": self.tolerance_from, "reason": self.reason,
            "seconds": round(self.seconds, 3), "details": _jsonable(self.details),
        }


def _finite(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        return _finite(float(x))
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


@dataclass(frozen=True)
class CheckSizes:
    """Sizes of every check (the command's defaults; :data:`QUICK` for tests).

    Attributes:
        prox_points: random points of checks 1 and 7 (plus a quarter as many at extreme fields).
        mc_dims, mc_samples: dimensions d and samples per d of the limit-loss fit (check 2).
        hat_rule, hat_replicates: scrambled Sobol size (2^k nodes) and independent scramblings
            of check 3.
        ridge_d: dimension of the finite-d ridge solve (check 4).
        se_rule: rule of the fixed point (check 5), a spec of ``make_rule`` (Sobol: replicates
            change its seed).
        slope_replicates: independent rules on which d e_t / d alpha is measured (check 5).
        slope_step: step of the central difference in alpha, relative to alpha.
        mp_dps: digits of the mpmath reference (check 6).
        loop_points: points evaluated one by one (check 7).
    """

    prox_points: int = 400
    mc_dims: tuple[int, ...] = (500, 1000, 2000, 4000)
    mc_samples: int = 2000
    hat_rule: int = 13
    hat_replicates: int = 8
    ridge_d: int = 200_000
    se_rule: str = "sobol12"
    slope_replicates: int = 6
    slope_step: float = 0.02
    mp_dps: int = 30
    loop_points: int = 40


FULL = CheckSizes()
QUICK = CheckSizes(
    prox_points=60, mc_dims=(250, 500, 1000), mc_samples=1000, hat_rule=10, hat_replicates=5, ridge_d=20_000,
    se_rule="sobol10", slope_replicates=3, slope_step=0.03, mp_dps=20, loop_points=8,
)


@dataclass
class Context:
    """What the checks share: the model, alpha, sizes, seed, and the fixed point (solved once)."""

    params: ModelParams
    alpha: float = 2.0
    sizes: CheckSizes = FULL
    seed: int = 0
    _fp: Any = None
    _fp_note: str = ""

    def rng(self, salt: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, salt])

    def fixed_point(self) -> tuple[Any, str]:
        """(a converged fixed point or None, note): the semantic branch, else positional, else agnostic."""
        if self._fp is None and not self._fp_note:
            notes = []
            for branch in ("semantic", "positional", "agnostic"):
                fp = _se_solve(self.params, self.alpha, branch, self.sizes.se_rule)
                if fp.status.converged:
                    self._fp = fp
                    break
                notes.append(f"{branch}: {fp.status.message}")
            self._fp_note = "; ".join(notes) if self._fp is None else f"{self._fp.branch} fixed point"
        return self._fp, self._fp_note


def _worst(result: CheckResult, components: dict[str, tuple[float, float]], units: str = "") -> CheckResult:
    """Set status, error and tolerance from components name -> (error, tolerance): the largest ratio."""
    ratios = {k: (e / t if t > 0 else (math.inf if e > 0 else 0.0)) for k, (e, t) in components.items()}
    name = max(ratios, key=lambda k: ratios[k] if math.isfinite(ratios[k]) or ratios[k] == math.inf else math.inf)
    err, tol = components[name]
    result.error, result.tolerance = float(err), float(tol)
    result.quantity, result.units = name, units
    bad = [k for k, r in ratios.items() if not (r <= 1.0)]
    result.status = FAIL if bad else PASS
    if bad:
        result.reason = "exceeds tolerance: " + ", ".join(
            f"{k} {components[k][0]:.3g} > {components[k][1]:.3g}" for k in bad[:4]
        ) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else "")
    for k, (e, t) in components.items():
        slot = result.details.get(k)
        if isinstance(slot, dict):
            slot.update(error=float(e), tolerance=float(t))
        else:
            result.details[k if slot is None else f"{k}: check"] = {"error": float(e), "tolerance": float(t)}
    return result


def _t_quantile(dof: int) -> float:
    """Two-sided Student-t quantile at the false-alarm rate of Z standard errors."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(1.0 - FALSE_ALARM / 2.0, dof))


# =====================================================================================
# Round-off bounds of the generated code
# =====================================================================================


def generated_op_count(L: int, cse: bool = True, name: str = "prox_value_grad_hess") -> int:
    """Arithmetic operations (binary and unary operators, calls) in a generated one-point function."""
    from attnphase.theory.kernels import scalar_kernel_source

    tree = ast.parse(scalar_kernel_source(L, 1, cse))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return sum(isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Call)) for n in ast.walk(node))
    raise KeyError(name)


def _term_scales(h: np.ndarray, w: np.ndarray, V: np.ndarray, sigma2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per point, bounds on the size of the terms summed in the proximal value and in its derivatives.

    Value: sum_l (|h_l| + |w_l|)^2 / (2 V_l) + 2 L sum_k sigma_k^2 (|S - T| <= 1). Derivatives: each
    derivative of a score a_lk = h_l h_k is at most 2 max(1, |h|), each softmax derivative at most 1,
    so gradient and Hessian terms are below (|h| + |w|) / V + 1 / V + L^2 sum_k sigma_k^2 (2 max(1, |h|))^2.
    """
    L = h.shape[-1]
    hmax = np.maximum(1.0, np.abs(h).max(axis=-1))
    s2 = float(np.sum(sigma2))
    value = np.sum((np.abs(h) + np.abs(w)) ** 2 / (2 * V), axis=-1) + 2 * L * s2
    deriv = np.max((np.abs(h) + np.abs(w) + 1.0) / V, axis=-1) + L**2 * s2 * (2 * hmax) ** 2
    return value, deriv


def _sample_points(params: ModelParams, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n random points (h, w, V, h*) plus n // 4 at extreme fields (components up to 1e3 in size)."""
    L = params.L
    h, w, hs = rng.normal(scale=1.5, size=(3, n, L))
    V = np.exp(rng.uniform(math.log(0.05), math.log(50.0), size=(n, L)))
    n_ext = max(2, n // 4)
    levels = np.array([-1e3, -30.0, -3.0, 0.0, 1e-3, 3.0, 30.0, 1e3])
    ext = rng.choice(levels, size=(3, n_ext, L)) * rng.uniform(0.5, 1.0, size=(3, n_ext, L))
    V_ext = np.exp(rng.uniform(math.log(0.05), math.log(50.0), size=(n_ext, L)))
    cat = lambda a, b: np.concatenate([a, b], axis=0)  # noqa: E731
    return dict(h=cat(h, ext[0]), w=cat(w, ext[1]), hstar=cat(hs, ext[2]), V=cat(V, V_ext), n_ext=n_ext)


# =====================================================================================
# 1. proximal objective: gradient and Hessian against autograd and central differences
# =====================================================================================


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
    rg, rH = np.abs(g - g1) / tol_g, np.abs(H - H1) / tol_H
    ig, iH = np.unravel_index(np.argmax(rg), rg.shape), np.unravel_index(np.argmax(rH), rH.shape)
    comps["gradient vs central differences"] = (float(np.abs(g - g1)[ig] / dscale[ig[0]]), float(tol_g[ig] / dscale[ig[0]]))
    comps["Hessian vs central differences"] = (float(np.abs(H - H1)[iH] / dscale[iH[0]]), float(tol_H[iH] / dscale[iH[0]]))
    r.tolerance_from = (f"round-off: 2 n_ops u = 2 x {n_ops} x 2^-53 relative to the size of the summed terms; "
                        "FD: Richardson |D(d) - D(2d)| + quotient round-off, per entry")
    r.details = {
        "points": {"random": N - pts["n_ext"], "extreme fields": pts["n_ext"], "max |h|": float(np.abs(h).max())},
        "generated operations": n_ops,
        "max |Hessian - FD| / terms": float(np.max(np.abs(H - H1) / dscale[:, None, None])),
        "max |Hessian - autograd| (absolute)": float(np.max(np.abs(H - Ht))),
    }
    units = "relative to the terms' size; FD: the entry with the largest error / tolerance"
    return _worst(r, comps, units)


# =====================================================================================
# 2. limit loss against a finite-d Monte-Carlo estimate (fit in 1/d)
# =====================================================================================


def _positions_factor(P: np.ndarray) -> np.ndarray:
    """F with F F^T = P (symmetric eigen-factor, negative round-off eigenvalues clipped)."""
    lam, vec = np.linalg.eigh(P)
    return vec * np.sqrt(np.clip(lam, 0.0, None))


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
    c = np.zeros(L)
    c[0] = 0.5
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
    r.details = {
        "d": ds, "samples per d": n, "Delta(d)": means, "standard error": ses,
        "intercept a": a, "se(a)": se, "slope b": b, "chi2 of the fit": chi2, "dof": len(ds) - 2,
        "E[limit loss]": float(np.mean(loss)), "se(a) / E[loss]": se / max(float(np.mean(loss)), 1e-300),
    }
    return _worst(r, {"intercept a": (abs(a), Z * se)}, "absolute, loss units")


# =====================================================================================
# 3. hat overlaps against finite differences of alpha E[M] in the overlaps
# =====================================================================================


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
    D = []  # per replicate: FD(h) - formula, FD(2h) - FD(h)
    formulas, failures = [], 0
    for rep in range(ctx.sizes.hat_replicates):
        rule = _raw_rule(L, f"sobol{ctx.sizes.hat_rule}:1:{1000 * ctx.seed + rep}")
        hats, _, fails = _channel_side(p, alpha, _state(*_split(x0)), rule)
        failures += fails
        formula = np.concatenate([
            [0.5 * s2 @ hats["Vhat"], -0.5 * s2 @ hats["qhat"]], -hats["mhat"], [-(s2 @ hats["thhat"])]
        ])
        FD = {}
        for mult in ((1, 2) if rep == 0 else (1,)):
            grad = np.empty(x0.size)
            for i in range(x0.size):
                e = np.zeros(x0.size)
                e[i] = mult * step[i]
                fp_, fm_ = (alpha * _channel_side(p, alpha, _state(*_split(x0 + s * e)), rule)[1] for s in (1, -1))
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
    fd_tol = rich
    tol = tq * se + fd_tol
    value = np.mean(formulas, axis=0)
    comps = {f"d/d {n}": (abs(float(mean[i])), float(tol[i])) for i, n in enumerate(names)}
    r.tolerance_from = (f"t_{R - 1} quantile ({tq:.2f}) x standard error over {R} independent scramblings "
                        "+ Richardson |FD(h) - FD(2h)| (first scrambling)")
    r.details = {
        "state (q0, V0, m, th0)": {"q0": q0, "V0": V0, "m": m.tolist(), "th0": th0},
        "rule": f"sobol 2^{ctx.sizes.hat_rule} x {R} scramblings", "proximal failures": failures,
        **{f"d/d {n}": {"formula": float(value[i]), "mean FD - formula": float(mean[i]), "se": float(se[i]),
                        "FD truncation": float(fd_tol[i])} for i, n in enumerate(names)},
    }
    if failures:
        r.reason = f"{failures} proximal solves did not converge"
    return _worst(r, comps, "absolute, mean over scramblings")


def _split(x: np.ndarray) -> tuple[float, float, np.ndarray, float]:
    return float(x[0]), float(x[1]), np.asarray(x[2:-1]), float(x[-1])


# =====================================================================================
# 4. prior update against a direct finite-d ridge solve
# =====================================================================================


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

    from attnphase.theory.prior import ridge_update

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
    q0, V0, m, th0 = ridge_update(qhat, mhat, thhat, Vhat, s2, P, p.lam, p.rho0)
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


# =====================================================================================
# 5. identities at a converged fixed point
# =====================================================================================


def check_fixed_point(ctx: Context) -> CheckResult:
    """Check 5: at a converged fixed point, (a) one more SE map moves every overlap by < 1e-9
    (scaled by max(1, |x|)), (b) e_t = -Phi = lambda q0/2 + alpha E[loss(h_hat)] (section 4),
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
    comps["(a) one more SE map"] = (step, 1e-9)

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
        "(a) 1e-9 (solver tolerance 1e-10); (b) the linear terms of Phi times the one-step change x' - x, "
        "+ 64 u x terms; (c) t quantile x standard error over independent rules + Richardson |D(h) - D(2h)| (first rule)"
    )
    r.details = {
        "fixed point": {"branch": branch, "alpha": alpha, "q0": ov.q0, "V0": ov.V0, "m": np.asarray(ov.m), "th0": ov.th0,
                        "residual": float(fp.status.residual), "rule": sizes.se_rule},
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


# =====================================================================================
# 6. eps_lin in double against 30-digit mpmath
# =====================================================================================


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


# =====================================================================================
# 7. generated code: cse vs plain, batched vs per point, batched vs one-point variant
# =====================================================================================


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
    lc, lp = kc.loss_grad_hess(h, T, s2), kp.loss_grad_hess(h, T, s2)
    compare("loss cse vs plain", lc, lp, n_c + n_p)
    batch = kc.prox_value_grad_hess(h, w, V, T, s2)
    idx = ctx.rng(70).choice(h.shape[0], size=min(ctx.sizes.loop_points, h.shape[0]), replace=False)
    idx = np.union1d(idx, np.arange(h.shape[0] - min(4, pts["n_ext"]), h.shape[0]))  # a few extreme points too
    one = [kc.prox_value_grad_hess(h[i], w[i], V[i], T[i], s2) for i in idx]
    per_point = tuple(np.stack([o[j] for o in one]) for j in range(3))
    compare("batched vs per-point calls", tuple(b[idx] for b in batch), per_point, 2 * n_c, idx)
    sk = get_scalar_kernels(L, cse=True).functions["prox_value_grad_hess"]
    iu = [(i, j) for i in range(L) for j in range(i, L)]
    sc_v, sc_g, sc_H = [], [], []
    for i in idx:
        out = sk(h[i], w[i], V[i], kc.attention(h[i]), T[i], s2)
        Hs = np.empty((L, L))
        for n_, (a, b) in enumerate(iu):
            Hs[a, b] = Hs[b, a] = out[1 + L + n_]
        sc_v.append(out[0])
        sc_g.append(out[1:1 + L])
        sc_H.append(Hs)
    compare("batched vs one-point variant", tuple(b[idx] for b in batch),
            (np.array(sc_v), np.array(sc_g), np.array(sc_H)), 2 * n_c, idx)
    r.tolerance_from = f"round-off: n_ops u relative to the terms' size (n_ops = {n_c} with cse, {n_p} without)"
    r.details = {"points": int(h.shape[0]), "per-point and one-point calls": int(idx.size),
                 "operations with cse": n_c, "operations without cse": n_p}
    return _worst(r, comps, "relative to the terms' size")


# =====================================================================================
# Running and reporting
# =====================================================================================

#: The checks in order: (number, key, function).
CHECKS: tuple[tuple[int, str, Callable[[Context], CheckResult]], ...] = (
    (1, "prox", check_prox_derivatives),
    (2, "limit-loss", check_limit_loss),
    (3, "hats", check_hat_overlaps),
    (4, "prior", check_prior),
    (5, "fixed-point", check_fixed_point),
    (6, "eps-lin", check_eps_lin),
    (7, "codegen", check_codegen),
)


def select_checks(only: str | None) -> list[tuple[int, str, Callable[[Context], CheckResult]]]:
    """The checks named in ``only`` (comma list of numbers or keys; None: all). ValueError for unknown names."""
    if only is None or not only.strip():
        return list(CHECKS)
    wanted = [s.strip().lower() for s in only.split(",") if s.strip()]
    out = []
    for wtd in wanted:
        match = [c for c in CHECKS if wtd in (str(c[0]), c[1])]
        if not match:
            raise ValueError(f"unknown check {wtd!r}: use numbers 1-7 or {', '.join(c[1] for c in CHECKS)}")
        if match[0] not in out:
            out.append(match[0])
    return sorted(out)


def run_checks(
    params: ModelParams,
    alpha: float = 2.0,
    sizes: CheckSizes = FULL,
    only: str | None = None,
    seed: int = 0,
    progress: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Run the selected checks for ``params`` (fixed-point checks at ``alpha``); one result per check."""
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha}")
    if params.r != 1:
        raise ValueError(f"the derivation checks need rank r = 1 (the generated kernels are r = 1), got r = {params.r}")
    ctx = Context(params, float(alpha), sizes, seed)
    results = []
    for _, _, fn in select_checks(only):
        t0 = time.perf_counter()
        res = fn(ctx)
        res.seconds = time.perf_counter() - t0
        results.append(res)
        if progress is not None:
            progress(res)
    return results


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.2e}"


def text_table(results: Sequence[CheckResult]) -> str:
    """The console table: one row per check, then each check's key numbers."""
    rows = [("#", "check", "what it compares", "worst component", "error", "tolerance", "result", "time")]
    for r in results:
        rows.append((str(r.number), r.key, r.compares, r.quantity or "-", _fmt(r.error), _fmt(r.tolerance),
                     r.status.upper() if r.status != PASS else "pass", f"{r.seconds:.1f}s"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(wd) for c, wd in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * wd for wd in widths))
    lines.append("")
    for r in results:
        lines.append(f"[{r.number}] {r.title}: {r.compares}")
        if r.status == SKIP:
            lines.append(f"    skipped: {r.reason}")
            continue
        for name, vals in r.details.items():
            lines.append(f"    {name}: {_short(vals)}")
        lines.append(f"    error and tolerance: {r.units}; tolerance from {r.tolerance_from}")
        if r.status == FAIL:
            lines.append(f"    FAILED: {r.reason}")
        elif r.reason:
            lines.append(f"    note: {r.reason}")
    return "\n".join(lines)


def _short(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {_short(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_short(x) for x in np.asarray(v, dtype=object).ravel().tolist()) + "]"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return str(v)


def markdown_table(params: ModelParams, alpha: float, results: Sequence[CheckResult]) -> str:
    """``check.md``: the model, then a markdown table of the checks (for a paper's appendix)."""
    p = params
    lines = [
        "# Derivation checks",
        "",
        f"Model: L = {p.L}, sigma = {list(p.sigma)}, A = {[list(r) for r in p.A]}, P = {[list(r) for r in p.P]}, "
        f"omega = {p.omega}, lambda = {p.lam}, rho0 = {p.rho0}, r = {p.r}; fixed-point checks at alpha = {alpha}.",
        "Equations: docs/model.md sections 2 (limit loss), 3 (state evolution), 4 (Phi), 5 (linear baseline).",
        "",
        "| # | Check | What it compares | Worst component | Measured error | Tolerance | Tolerance from | Result |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        why = r.reason if r.status == SKIP else r.tolerance_from
        lines.append(
            f"| {r.number} | {r.title} | {r.compares} | {r.quantity or '-'} | {_fmt(r.error)} | {_fmt(r.tolerance)} | "
            f"{why} | {r.status} |"
        )
    fails = [r for r in results if r.status == FAIL]
    lines += ["", f"{sum(r.status == PASS for r in results)} passed, {len(fails)} failed, "
              f"{sum(r.status == SKIP for r in results)} skipped."]
    for r in fails:
        lines.append(f"* {r.line()}")
    return "\n".join(lines) + "\n"


def to_json(params: ModelParams, alpha: float, results: Sequence[CheckResult]) -> dict[str, Any]:
    """One JSON object: the model, alpha, a list of checks, and the overall result."""
    return {
        "model": params.to_dict(), "alpha": alpha,
        "passed": all(r.status != FAIL for r in results),
        "checks": [r.as_dict() for r in results],
    }


__all__ = [
    "CHECKS", "FULL", "QUICK", "CheckResult", "CheckSizes", "Context", "check_codegen", "check_eps_lin",
    "check_fixed_point", "check_hat_overlaps", "check_limit_loss", "check_prior", "check_prox_derivatives",
    "markdown_table", "run_checks", "select_checks", "text_table", "to_json",
]
