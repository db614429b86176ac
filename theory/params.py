"""Model parameters (docs/model.md section 1), validated on construction.

The defaults are the paper's (L = 2, sigma_l = 0.5, lambda = 0.01, rho0 = 1, r = r* = 1, :data:`PAPER_P`,
:data:`PAPER_A`); for L != 2, P = I and A with 0.6 on the diagonal and 0.4 spread evenly over each row.
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

import numpy as np

Matrix = tuple[tuple[float, ...], ...]

PAPER_A: Matrix = ((0.6, 0.4), (0.4, 0.6))
"""The paper's default positional teacher matrix A (L = 2)."""

PAPER_P: Matrix = ((1.0, -1.0), (-1.0, 1.0))
"""Gram matrix of the paper's positional encodings p_1 = -p_2 = 1_d / sqrt(d)."""


def default_A(L: int) -> Matrix:
    """The default row-stochastic A: 0.6 on the diagonal, 0.4 spread evenly over each row (:data:`PAPER_A` at L = 2)."""
    off = 0.4 / (L - 1)
    return tuple(tuple(0.6 if i == j else off for j in range(L)) for i in range(L))


def default_P(L: int) -> Matrix:
    """The default positional Gram matrix: the paper's for L = 2, else the identity."""
    return PAPER_P if L == 2 else tuple(tuple(1.0 if i == j else 0.0 for j in range(L)) for i in range(L))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _number(value: Any, name: str) -> float:
    """``value`` as a finite float; ValueError naming ``name`` for anything else (str, None, bool, nan)."""
    if not _is_number(value) or not np.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _as_matrix(value: Any, name: str, L: int) -> Matrix:
    rows = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, (list, tuple)) and all(map(_is_number, r))
                                                      for r in rows):
        raise ValueError(f"{name} must be an L x L matrix of numbers (L = {L}), got {value!r}")
    if len({len(r) for r in rows}) > 1:
        raise ValueError(f"{name} must be an L x L matrix (L = {L}); its rows have unequal lengths {[len(r) for r in rows]}")
    arr = np.asarray(rows, dtype=float)
    if arr.shape != (L, L):
        raise ValueError(f"{name} must be an L x L matrix with L = {L}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must have finite entries")
    return tuple(tuple(float(x) for x in row) for row in arr)


def parse_matrix(text: str) -> Matrix:
    """Parse ``"0.6,0.4;0.4,0.6"`` (rows separated by ';') into a matrix tuple of finite numbers; TypeError for
    what is no text, ValueError for text that is no such matrix."""
    if not isinstance(text, str):
        raise TypeError(f"a matrix is text such as '0.6,0.4;0.4,0.6', got {type(text).__name__} {text!r}")
    try:
        rows = [[float(x) for x in row.split(",")] for row in text.strip().split(";")]
    except ValueError as exc:
        raise ValueError(f"cannot parse matrix {text!r}: {exc}") from None
    if not all(math.isfinite(x) for r in rows for x in r):
        raise ValueError(f"matrix {text!r} has an entry that is not a finite number")
    if len({len(r) for r in rows}) != 1:
        raise ValueError(f"matrix {text!r} has rows of unequal length")
    return tuple(tuple(r) for r in rows)


#: The teacher norms whose square (the scale of th0^2 and q0 rho0) is a normal double with room to spare.
RHO0_RANGE = (1e-150, 1e150)

@dataclass(frozen=True)
class ModelParams:
    """Parameters of the attention model and its teacher.

    The symbols of docs/model.md sections 1 and 7 (``lam`` is lambda, ``r_star`` r*); sigma may be one number
    for every token; C None means C = diag(sigma_l^2), else it fixes sigma_l = sqrt(C[l, l]); ``mixing`` is B of
    the whitened form (set only by :func:`attnphase.theory.whitening.whiten`); ``loss`` a channel's registry name.
    """

    L: int = 2
    sigma: tuple[float, ...] | float | None = None
    P: Matrix | None = None
    A: Matrix | None = None
    omega: float = 0.3
    lam: float = 0.01
    rho0: float = 1.0
    r: int = 1
    r_star: int = 1
    C: Matrix | None = None
    mixing: Matrix | None = None
    loss: str = "square"

    def __post_init__(self) -> None:
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - frozen dataclass
        for name, least, what in (("L", 2, "L"), ("r", 1, "r (student rank)"),
                                  ("r_star", 1, "r_star (teacher rank r*)")):
            value = getattr(self, name)
            if not _is_number(value) or int(value) != value or value < least:
                raise ValueError(f"{what} must be an integer >= {least}, got {value!r}")
            set_(name, int(value))
        L = self.L

        if self.C is not None:
            C = _as_matrix(self.C, "C", L)
            Ca = np.array(C)
            if not np.allclose(Ca, Ca.T, rtol=0, atol=1e-12 * max(1.0, np.abs(Ca).max())):
                raise ValueError("C (token covariance) must be symmetric")
            if np.any(np.diag(Ca) <= 0) or np.linalg.eigvalsh(Ca).min() < -1e-10 * max(1.0, np.abs(Ca).max()):
                raise ValueError("C (token covariance) must be positive semi-definite with a positive diagonal")
            implied = tuple(float(np.sqrt(c)) for c in np.diag(Ca))
            given = self.sigma
            if given is not None and not np.allclose(np.broadcast_to(np.asarray(given, dtype=float), (L,)), implied,
                                                     rtol=1e-9, atol=1e-12):
                raise ValueError(f"C (token covariance) fixes sigma_l = sqrt(C[l, l]) = {implied}; got sigma {given!r}")
            set_("C", C)
            set_("sigma", implied)
        if self.mixing is not None:
            B = _as_matrix(self.mixing, "mixing", L)
            if self.C is not None:
                raise ValueError("mixing (the whitened form of C) and C cannot both be given")
            sv = np.linalg.svd(np.array(B), compute_uv=False)
            if not sv.min() > 1e-8 * sv.max():
                raise ValueError("mixing (B with C = B B^T) must be invertible")
            if self.sigma is not None and not np.allclose(np.asarray(self.sigma, dtype=float), 1.0, rtol=0, atol=0):
                raise ValueError(f"mixing is the whitened model, whose tokens have sigma = 1; got sigma {self.sigma!r}")
            set_("mixing", B)
            set_("sigma", 1.0)
        sigma = 0.5 if self.sigma is None else self.sigma
        if isinstance(sigma, np.ndarray) and sigma.ndim == 0:  # numpy's 0-d array: the number it holds
            sigma = sigma.item()
        items = list(sigma) if isinstance(sigma, (list, tuple, np.ndarray)) else [sigma]
        if not all(_is_number(x) for x in items):
            raise ValueError(f"sigma must be a number or one number per token (L = {L}), got {sigma!r}")
        sig = np.broadcast_to(np.asarray(sigma, dtype=float), (L,)) if np.ndim(sigma) == 0 else np.asarray(sigma, dtype=float)
        if sig.shape != (L,):
            raise ValueError(f"sigma must be a scalar or have L = {L} entries, got shape {sig.shape}")
        if not np.all(np.isfinite(sig)) or np.any(sig <= 0):
            raise ValueError(f"sigma must be finite and positive (0 < sigma_l < inf for every token), "
                             f"got {tuple(float(x) for x in sig)}")
        set_("sigma", tuple(float(s) for s in sig))

        P = _as_matrix(default_P(L) if self.P is None else self.P, "P", L)
        Pa = np.array(P)
        if not np.allclose(Pa, Pa.T, rtol=0, atol=1e-12 * max(1.0, np.abs(Pa).max())):
            raise ValueError("P (positional Gram matrix) must be symmetric")
        if np.linalg.eigvalsh(Pa).min() < -1e-10 * max(1.0, np.abs(Pa).max()):
            raise ValueError("P (positional Gram matrix) must be positive semi-definite")
        set_("P", P)

        A = _as_matrix(default_A(L) if self.A is None else self.A, "A", L)
        Aa = np.array(A)
        if np.any(Aa < 0) or not np.allclose(Aa.sum(axis=1), 1.0, rtol=0, atol=1e-9):  # numpy's rtol would allow 1e-5
            sums = ", ".join(f"{x:.12g}" for x in Aa.sum(axis=1))
            raise ValueError(f"A must be row-stochastic (non-negative rows summing to 1 within 1e-9), got {A}: "
                             f"row sums {sums}" + ("; negative entries" if np.any(Aa < 0) else "")
                             + ("; write the entries to 16 digits (1/3: 0.3333333333333333)"
                                if np.allclose(Aa.sum(axis=1), 1.0, rtol=0, atol=1e-5) else ""))
        set_("A", A)

        from attnphase.theory.channels import DEFAULT, channel_names

        if not isinstance(self.loss, str) or self.loss not in channel_names():
            raise ValueError(f"loss must be one of {', '.join(channel_names())}, got {self.loss!r}")
        if self.loss != DEFAULT and (self.mixing is not None or self.correlated_tokens):
            raise ValueError(f"correlated tokens take the square loss only, got loss {self.loss!r}")

        for name in ("omega", "lam", "rho0"):
            set_(name, _number(getattr(self, name), name))
        if not 0.0 <= self.omega <= 1.0:
            raise ValueError(f"omega must lie in [0, 1], got {self.omega}")
        if self.lam < 0:
            raise ValueError(f"lam (ridge penalty lambda) must be >= 0, got {self.lam}")
        if self.rho0 <= 0:
            raise ValueError(f"rho0 (teacher norm) must be > 0, got {self.rho0}")
        if not RHO0_RANGE[0] <= self.rho0 <= RHO0_RANGE[1]:
            raise ValueError(f"rho0 (teacher norm) must lie in [{RHO0_RANGE[0]:g}, {RHO0_RANGE[1]:g}], got {self.rho0:g}: "
                             "the state evolution compares th0^2 with q0 rho0 ~ rho0^2, which double precision "
                             "cannot hold beyond")

    @property
    def channel(self) -> Any:
        """The channel of :attr:`loss` (:class:`~attnphase.theory.channels.base.Channel`): the loss and its kernels."""
        from attnphase.theory.channels import get_channel

        return get_channel(self.loss)

    @property
    def token_cov(self) -> np.ndarray:
        """The token covariance across positions, (L, L): C, or diag(sigma_l^2) for independent tokens."""
        return np.array(self.C, dtype=float) if self.C is not None else np.diag(self.sigma2)

    @property
    def correlated_tokens(self) -> bool:
        """Whether C has a non-zero off-diagonal entry (tokens correlated across positions)."""
        C = self.token_cov
        return bool(np.any(C - np.diag(np.diag(C)) != 0))

    @property
    def mixing_array(self) -> np.ndarray | None:
        """The whitened model's mixing B as an (L, L) array (the loss is loss_C(B v, B v*)); None for the plain model."""
        return None if self.mixing is None else np.array(self.mixing, dtype=float)

    def invariant_under(self, perm: Sequence[int]) -> bool:
        """Whether the token permutation ``perm`` leaves the model invariant (exact comparisons): sigma[pi] =
        sigma and M[pi][:, pi] = M for M = A, P, the token Gram C and a whitened model's mixing B."""
        p = list(perm)
        sig = np.array(self.sigma)
        mats = [self.A_array, self.P_array, self.token_cov] + ([self.mixing_array] if self.mixing is not None else [])
        return bool(np.array_equal(sig[p], sig) and all(np.array_equal(M[np.ix_(p, p)], M) for M in mats))

    @property
    def sigma_value(self) -> float | list[float]:
        """sigma as records and titles show it: one number when every token has the same, else the list."""
        return self.sigma[0] if len(set(self.sigma)) == 1 else list(self.sigma)

    @property
    def sigma2(self) -> np.ndarray:
        """Per-token variances sigma_l^2, shape (L,)."""
        return np.square(np.array(self.sigma))

    @property
    def P_array(self) -> np.ndarray:
        """Positional Gram matrix as an (L, L) array."""
        return np.array(self.P, dtype=float)

    @property
    def A_array(self) -> np.ndarray:
        """Teacher's positional attention matrix as an (L, L) array."""
        return np.array(self.A, dtype=float)

    def replace(self, **changes: Any) -> "ModelParams":
        """A copy with some fields changed (validated again).  A new C (or mixing B) fixes sigma unless sigma is given
        too.  Where L changes, sigma, P and A not given take the new L's defaults if they were the old L's (sigma: one
        value for every token), and a token covariance C or mixing B must be given again; any other such field is
        refused with what to give."""
        L = changes.get("L", self.L)
        if "sigma" not in changes and any(changes.get(k) is not None for k in ("C", "mixing")):
            changes["sigma"] = None  # a new C (or B) fixes sigma
        if L != self.L:
            old_defaults = {"P": default_P(self.L), "A": default_A(self.L)}
            for name in ("C", "mixing", "sigma", "P", "A"):
                value = getattr(self, name)
                if name in changes or value is None:
                    continue
                if name == "sigma" and len(set(value)) == 1:
                    changes[name] = value[0]
                elif old_defaults.get(name) == value:
                    changes[name] = None
                else:
                    raise ValueError(f"replace(L={L!r}): {name} was set for L = {self.L} ({value!r}); give {name} "
                                     f"for L = {L} too")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation (lists, floats); ``loss`` only when it is not the default square loss (the
        default's task keys stay those of a model without the field)."""
        return {
            "L": self.L, "sigma": list(self.sigma), "P": [list(r) for r in self.P], "A": [list(r) for r in self.A],
            "omega": self.omega, "lam": self.lam, "rho0": self.rho0, "r": self.r, "r_star": self.r_star,
            **({"C": [list(r) for r in self.C]} if self.C is not None else {}),
            **({"mixing": [list(r) for r in self.mixing]} if self.mixing is not None else {}),
            **({"loss": self.loss} if self.loss != "square" else {}),
        }
