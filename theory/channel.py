"""The channel side of the state evolution (docs/model.md sections 2-3), symbolic and numeric.

The per-token overlaps q_l = sigma_l^2 q0 (theta_l, V_l, rho_l alike), the fields w_l, h*_l and the hat overlaps
of docs/model.md section 3 (:func:`hat_overlap_exprs`). Every function requires q0 > 0; :func:`channel_fields`
clips a rho_tilde negative by round-off only to 0 (docs/derivation.md, "Degenerate limits of the channel"). The
numeric functions are generated from the sympy expressions and broadcast elementwise.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, load_module

ArrayLike = Any

#: Relative round-off below which a negative residual teacher variance is clipped to 0.
RHO_TILDE_RTOL = 1e-12


def symbols() -> dict[str, Any]:
    """The per-token sympy symbols of the channel (index l), by name."""
    import sympy as sp

    pos = {"positive": True}
    E = sp.Function("E")  # channel average over (xi, eta)
    g, xi, eta = sp.Symbol("g_l", real=True), sp.Symbol("xi_l", real=True), sp.Symbol("eta_l", real=True)
    return {
        "q0": sp.Symbol("q_0", **pos), "th0": sp.Symbol("theta_0", real=True), "V0": sp.Symbol("V_0", **pos),
        "rho0": sp.Symbol("rho_0", **pos), "sigma2": sp.Symbol("sigma_l^2", **pos),
        "q": sp.Symbol("q_l", **pos), "theta": sp.Symbol("theta_l", real=True), "V": sp.Symbol("V_l", **pos),
        "rho": sp.Symbol("rho_l", **pos), "rho_tilde": sp.Symbol("rhotilde_l", **pos),
        "m": sp.Symbol("m_l", real=True), "xi": xi, "eta": eta, "g": g,
        "alpha": sp.Symbol("alpha", **pos), "E_g2": E(g**2), "E_g": E(g), "E_geta": E(g * eta), "E_gxi": E(g * xi),
    }


def token_overlap_exprs() -> dict[str, Any]:
    """q_l, theta_l, V_l, rho_l as sigma_l^2 times the global scalars (docs/model.md section 2)."""
    s = symbols()
    return {k: s["sigma2"] * s[k0] for k, k0 in (("q", "q0"), ("theta", "th0"), ("V", "V0"), ("rho", "rho0"))}


def residual_variance_expr() -> Any:
    """rho_tilde_l = rho_l - theta_l^2 / q_l."""
    s = symbols()
    return s["rho"] - s["theta"] ** 2 / s["q"]


def field_exprs() -> dict[str, Any]:
    """w_l = m_l + sqrt(q_l) xi_l,  h*_l = theta_l / sqrt(q_l) xi_l + sqrt(rho_tilde_l) eta_l."""
    import sympy as sp

    s = symbols()
    return {
        "w": s["m"] + sp.sqrt(s["q"]) * s["xi"],
        "hstar": s["theta"] / sp.sqrt(s["q"]) * s["xi"] + sp.sqrt(s["rho_tilde"]) * s["eta"],
    }


def hat_overlap_exprs() -> dict[str, Any]:
    """qhat_l, mhat_l, thhat_l, Vhat_l from the channel averages (docs/model.md section 3)."""
    import sympy as sp

    s = symbols()
    thhat = s["alpha"] * s["E_geta"] / sp.sqrt(s["rho_tilde"])
    return {
        "qhat": s["alpha"] * s["E_g2"],
        "mhat": s["alpha"] * s["E_g"],
        "thhat": thhat,
        "Vhat": -s["alpha"] * s["E_gxi"] / sp.sqrt(s["q"]) + thhat * s["theta"] / s["q"],
    }


def _specs() -> list[FunctionSpec]:
    s = symbols()
    arg = lambda name, desc: Argument(name, s[name], desc)  # noqa: E731
    ov = token_overlap_exprs()
    fe = field_exprs()
    return [
        FunctionSpec(
            "token_overlaps",
            (arg("q0", "q0 = |Q|^2 / d"), arg("th0", "th0 = Q . Q* / d"), arg("V0", "V0"),
             arg("rho0", "rho0 = |Q*|^2 / d"), arg("sigma2", "sigma_l^2")),
            tuple((k, ov[k]) for k in ("q", "theta", "V", "rho")),
            "Per-token overlaps q_l, theta_l, V_l, rho_l = sigma_l^2 (q0, th0, V0, rho0).",
        ),
        FunctionSpec(
            "residual_variance", (arg("q", "q_l"), arg("theta", "theta_l"), arg("rho", "rho_l")),
            (("rho_tilde", residual_variance_expr()),), "rho_tilde_l = rho_l - theta_l^2 / q_l.",
        ),
        FunctionSpec(
            "fields",
            (arg("xi", "xi_l ~ N(0,1)"), arg("eta", "eta_l ~ N(0,1)"), arg("m", "m_l"), arg("q", "q_l"),
             arg("theta", "theta_l"), arg("rho_tilde", "rho_tilde_l")),
            (("w", fe["w"]), ("hstar", fe["hstar"])),
            "Channel fields w_l and h*_l.",
        ),
    ]


@lru_cache(maxsize=1)
def _functions() -> dict[str, Any]:
    return vars(load_module("channel", 0, 1, True, _specs))


def _full(shape: tuple[int, ...], value: Any) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=float), shape).copy()


def token_overlaps(
    q0: ArrayLike, th0: ArrayLike, V0: ArrayLike, rho0: ArrayLike, sigma2: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(q_l, theta_l, V_l, rho_l) = sigma_l^2 (q0, th0, V0, rho0), each of sigma2's (broadcast) shape."""
    args = [np.asarray(x, dtype=float) for x in (q0, th0, V0, rho0, sigma2)]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    return tuple(_full(shape, v) for v in _functions()["token_overlaps"](*args))  # type: ignore[return-value]


def token_variances(V0: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
    """V_l = sigma_l^2 V0 (the proximal variances of the channel), shape of sigma2."""
    return token_overlaps(1.0, 0.0, V0, 1.0, sigma2)[2]


def teacher_residual_variance(q0: ArrayLike, th0: ArrayLike, rho0: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
    """rho_tilde_l = rho_l - theta_l^2 / q_l (no clipping; q0 > 0 required)."""
    q0 = np.asarray(q0, dtype=float)
    if not np.all(q0 > 0):
        raise ValueError(f"q0 (student norm |Q|^2 / d) must be > 0 in the channel, got {q0}")
    q, theta, _, rho = token_overlaps(q0, th0, 1.0, rho0, sigma2)
    return _full(q.shape, _functions()["residual_variance"](q, theta, rho)[0])


def channel_fields(
    xi: ArrayLike, eta: ArrayLike, q0: ArrayLike, m: ArrayLike, th0: ArrayLike, sigma2: ArrayLike, rho0: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """(w, h*) of docs/model.md section 3: w_l = m_l + sqrt(q_l) xi_l, h*_l = theta_l/sqrt(q_l) xi_l + sqrt(rho_tilde_l) eta_l.

    xi, eta: (..., L) standard normals, m, sigma2 broadcastable, q0 > 0, th0^2 <= q0 rho0 (module doc).
    """
    xi, eta, m = (np.asarray(x, dtype=float) for x in (xi, eta, m))
    rp = teacher_residual_variance(q0, th0, rho0, sigma2)
    q, theta, _, rho = token_overlaps(np.asarray(q0, dtype=float), th0, 1.0, rho0, sigma2)
    if np.any(rp < -RHO_TILDE_RTOL * rho):  # rho_tilde below 0 by more than round-off
        raise ValueError(f"th0^2 > q0 rho0 (theta_l^2 > q_l rho_l): no Gaussian teacher field exists; got q0 = {q0}, "
                         f"th0 = {th0}, rho0 = {rho0}")
    shape = np.broadcast_shapes(xi.shape, eta.shape, m.shape, q.shape)
    w, hstar = _functions()["fields"](xi, eta, m, q, theta, np.maximum(rp, 0.0))
    return _full(shape, w), _full(shape, hstar)


def student_mean_field(hstar: ArrayLike, m: ArrayLike, th0: ArrayLike, rho0: ArrayLike) -> np.ndarray:
    """E[w_l | h*] = m_l + th0 h*_l / rho0: the part of the student's field that is not noise (from
    Cov(w_l, h*_l) = sigma_l^2 th0, Cov(h*_l) = sigma_l^2 rho0 I); hstar (..., L), m (L,), th0 and rho0 scalars
    (r = r* = 1), or hstar (..., L, r*), m (L, r), th0 (r, r*) (the matrix form)."""
    th0 = np.asarray(th0, dtype=float)
    hstar = np.asarray(hstar, dtype=float)
    pulled = th0 * hstar if th0.ndim == 0 else np.einsum("ab,...lb->...la", th0, hstar)
    return np.asarray(m, dtype=float) + pulled / float(rho0)
