"""Teacher data at finite d (docs/model.md section 1; docs/validation.md, "Choices worth knowing").

A :class:`Teacher` holds what is fixed across samples: the positional encodings ``p_l`` (Gram ``P``) and the
teacher weights ``Q* in R^{d x r*}``.  A :class:`Dataset` holds ``n`` samples: tokens ``x_l^mu ~ N(0, sigma_l^2 I_d)``
(or, with a token covariance ``C`` across positions, ``x = F z`` with ``F F^T = C``), the teacher fields
``h*_l = Q*^T x_l / sqrt(d)`` and the target attention ``T(h*) = (1 - omega) softmax_row(h*_l . h*_k) + omega A``,
so that the targets are ``y_l = sum_k T[l, k] x_k`` (the teacher does not see positions).

Every draw takes an explicit ``torch.Generator``; numbers are drawn in float64 on the generator's device and then
cast, so a seed gives the same data (up to rounding) in both dtypes and, with a CPU generator, on every device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from attnphase.theory.params import PAPER_P, ModelParams
from attnphase.validation.samples import sample_count


@dataclass(frozen=True)
class Teacher:
    """The fixed part of the finite-d teacher: the model, ``d``, the encodings ``positions`` ``(L, d)`` (row l is
    ``p_l``, Gram ``P``) and the weights ``Qstar`` ``(d, r*)`` (a ``(d,)`` vector is taken as ``(d, 1)``)."""

    params: ModelParams
    d: int
    positions: torch.Tensor
    Qstar: torch.Tensor

    def __post_init__(self) -> None:
        if self.Qstar.ndim == 1:
            object.__setattr__(self, "Qstar", self.Qstar.reshape(-1, 1))
        r_star = self.params.r_star
        if self.Qstar.ndim != 2 or tuple(self.Qstar.shape) != (self.d, r_star):
            raise ValueError(f"Qstar must have shape (d, r*) = ({self.d}, {r_star}), got {tuple(self.Qstar.shape)}")
        if tuple(self.positions.shape) != (self.params.L, self.d):
            raise ValueError(f"positions must have shape (L, d) = ({self.params.L}, {self.d}), got "
                             f"{tuple(self.positions.shape)}")
        if not (self.Qstar.is_floating_point() and self.positions.dtype == self.Qstar.dtype):
            raise ValueError(f"Qstar and positions must share one floating dtype, got {self.Qstar.dtype} and "
                             f"{self.positions.dtype}")

    @property
    def r_star(self) -> int:
        """The teacher's rank ``r*`` (columns of ``Q*``)."""
        return int(self.Qstar.shape[1])

    @property
    def device(self) -> torch.device:
        return self.Qstar.device

    @property
    def dtype(self) -> torch.dtype:
        return self.Qstar.dtype


@dataclass(frozen=True)
class Dataset:
    """``n`` samples of the teacher: tokens ``X`` ``(n, L, d)``, fields ``hstar`` ``(n, L, r*)``, target attention
    ``T`` ``(n, L, L)``."""

    X: torch.Tensor
    hstar: torch.Tensor
    T: torch.Tensor

    @property
    def Y(self) -> torch.Tensor:
        """``(n, L, d)`` targets ``y_l = sum_k T[l, k] x_k``."""
        return self.T @ self.X


def check_dimension(d: int) -> int:
    """Validate the embedding dimension ``d`` (an integer >= 2)."""
    if isinstance(d, bool) or int(d) != d or d < 2:
        raise ValueError(f"d (embedding dimension) must be an integer >= 2, got {d!r}")
    return int(d)


def check_seed(seed: int) -> int:
    """Validate a random seed (an integer >= 0: numpy's and torch's streams take no other)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def _randn(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=generator, device=generator.device, dtype=torch.float64)


def make_positions(params: ModelParams, d: int, generator: torch.Generator) -> torch.Tensor:
    """Positional encodings ``p_l`` (``(L, d)``, float64, generator's device) with Gram ``P``.

    The paper's ``P`` gives ``p_1 = -p_2 = 1_d / sqrt(d)`` and draws nothing; any other PSD ``P`` gives
    ``p_l = sum_j F[l, j] u_j``, ``P = F F^T`` (eigen-factor, round-off negative eigenvalues clipped), ``u_j``
    orthonormal directions drawn from ``generator`` (QR of a Gaussian matrix; only ``P`` matters in law).
    """
    L = params.L
    dev = generator.device
    if L == 2 and np.allclose(params.P_array, np.array(PAPER_P), atol=1e-12):
        p1 = torch.full((d,), 1.0 / math.sqrt(d), dtype=torch.float64, device=dev)
        return torch.stack([p1, -p1])
    if d < L:
        raise ValueError(f"d (embedding dimension) must be >= L = {L} for a general positional Gram P, got {d}")
    evals, evecs = np.linalg.eigh(params.P_array)
    F = evecs * np.sqrt(np.clip(evals, 0.0, None))  # P = F F^T
    U, _ = torch.linalg.qr(_randn((d, L), generator))  # (d, L) orthonormal columns
    return torch.as_tensor(F, dtype=torch.float64, device=dev) @ U.T


def make_teacher(params: ModelParams, d: int, generator: torch.Generator, *, device: torch.device | str | None = None,
                 dtype: torch.dtype = torch.float64, exact_norm: bool = True) -> Teacher:
    """Draw the teacher: positions ``p_l`` (:func:`make_positions`) and ``Q*`` (``(d, r*)``).

    ``Q* = sqrt(rho0) G`` with ``G`` a ``d x r*`` standard Gaussian matrix; with ``exact_norm`` (default) ``G`` is
    replaced by ``G (G^T G / d)^{-1/2}``, i.e. ``Q*^T Q* = rho0 d I_{r*}`` exactly (no ``sqrt(2 / d)``
    fluctuation of the theory's ``rho0``).  ValueError for a model with another loss than the square loss (the
    only one the finite-d experiments train).
    """
    if params.loss != "square":
        raise ValueError(f"the finite-d simulation trains the square loss only, got loss {params.loss!r}")
    if dtype not in (torch.float64, torch.float32):  # as SimSpec's names them
        raise ValueError(f"dtype must be torch.float64 or torch.float32, got {dtype!r}")
    d = check_dimension(d)
    r_star = params.r_star
    if r_star > d:
        raise ValueError(f"r* (teacher rank) must be <= d = {d}, got {r_star}")
    device = torch.device(device) if device is not None else generator.device
    positions = make_positions(params, d, generator)
    G = _randn((d, r_star), generator)
    if exact_norm and r_star == 1:
        G = G * math.sqrt(d) / torch.linalg.vector_norm(G)
    elif exact_norm:
        evals, evecs = torch.linalg.eigh(G.T @ G / d)
        G = G @ (evecs * evals.rsqrt()) @ evecs.T
    Qstar = math.sqrt(params.rho0) * G
    return Teacher(params, d, positions.to(device=device, dtype=dtype), Qstar.to(device=device, dtype=dtype))


def target_attention(hstar: torch.Tensor, omega: float, A: torch.Tensor) -> torch.Tensor:
    """``T(h*)[l, k] = (1 - omega) softmax_k(h*_l . h*_k) + omega A[l, k]``; ``hstar`` is ``(..., L, r*)``,
    omega in [0, 1]."""
    if isinstance(omega, bool) or not 0.0 <= float(omega) <= 1.0:
        raise ValueError(f"omega (the positional weight of the target) must lie in [0, 1], got {omega!r}")
    scores = hstar @ hstar.transpose(-1, -2)
    return (1.0 - omega) * torch.softmax(scores, dim=-1) + omega * A


def sample(teacher: Teacher, n: int, generator: torch.Generator) -> Dataset:
    """Draw ``n`` samples ``(X, h*, T)`` from ``teacher`` (on the teacher's device and dtype)."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n (number of samples) must be an integer >= 1, got {n!r}")
    p = teacher.params
    Z = _randn((int(n), p.L, teacher.d), generator)
    if p.correlated_tokens:  # x = F z across positions, F F^T = C (symmetric eigen-factor)
        evals, evecs = np.linalg.eigh(p.token_cov)
        F = torch.as_tensor(evecs * np.sqrt(np.clip(evals, 0.0, None)), dtype=torch.float64, device=generator.device)
        X = F @ Z
    else:
        X = Z * torch.tensor(p.sigma, dtype=torch.float64, device=generator.device)[:, None]
    X = X.to(device=teacher.device, dtype=teacher.dtype)
    hstar = X @ teacher.Qstar / math.sqrt(teacher.d)
    A = torch.tensor(p.A, dtype=teacher.dtype, device=teacher.device)
    return Dataset(X, hstar, target_attention(hstar, p.omega, A))


def n_samples(alpha: float, d: int) -> int:
    """Number of training samples ``n = round(alpha d)``, halves rounded up (``floor(alpha d + 1/2)``: 12.5 gives 13,
    as 13.5 gives 14); validates ``alpha > 0`` and ``n >= 1`` (an ``alpha d`` below 1/2 has no sample: a ValueError,
    never a silent n = 1)."""
    if isinstance(alpha, bool) or not math.isfinite(float(alpha)) or alpha <= 0:
        raise ValueError(f"alpha (sample complexity n/d) must be a finite number > 0, got {alpha!r}")
    n = sample_count(alpha, check_dimension(d))
    if n < 1:
        raise ValueError(f"alpha d = {float(alpha) * d:.3g} (alpha = {alpha}, d = {d}): n = round(alpha d) = 0 "
                         f"training samples; raise alpha or d")
    return n
