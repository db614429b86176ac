"""Finite-d observables of a trained student (docs/model.md section 1), in the numerics' units.

* ``m = p_1 . Q / sqrt(d)`` (positional overlap),
* ``theta = Q . Q* / d`` (semantic overlap, model units: the per-token
  ``theta_l`` of docs/model.md section 2 is ``sigma_l^2 theta``),
* ``q = |Q|^2 / d``,
* ``eps_g = E (1 / 2d) |y - f(X)|^2`` estimated on fresh samples,
* ``e_t = R(Q) / d`` on the training set,
* ``eps_lin``: the same test error for the least-squares linear baseline
  fitted on the training set, on the same fresh samples.

For rank ``r = 1`` the overlaps are signed scalars. For ``r > 1`` they are
reported as norms: ``m = |Q^T p_1| / sqrt(d)``, ``theta = |Q^T Q*| / d`` and
``q = |Q|_F^2 / d``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .data import Teacher, sample
from .students import GramData, attention_losses, linear_losses, prepare, risk


@dataclass(frozen=True)
class Overlaps:
    """Order parameters of ``Q`` at finite d (module docstring)."""

    m: float
    theta: float
    q: float


@dataclass(frozen=True)
class TestErrors:
    """Monte-Carlo test errors on ``n_test`` fresh samples, with standard errors.

    ``delta`` is ``eps_g - eps_lin`` per sample (paired), its standard error
    ``delta_se`` is much smaller than either one's.
    """

    eps_g: float
    eps_g_se: float
    eps_lin: float
    eps_lin_se: float
    delta_se: float
    n_test: int


def overlaps(Q: torch.Tensor, teacher: Teacher) -> Overlaps:
    """``m, theta, q`` of ``Q`` (``(d, r)``) against ``teacher``."""
    d = teacher.d
    mv = teacher.positions[0] @ Q / math.sqrt(d)
    tv = teacher.Qstar @ Q / d
    q = float((Q * Q).sum()) / d
    if Q.shape[1] == 1:
        return Overlaps(float(mv[0]), float(tv[0]), q)
    return Overlaps(float(torch.linalg.vector_norm(mv)), float(torch.linalg.vector_norm(tv)), q)


def training_objective(Q: torch.Tensor, g: GramData, lam: float) -> float:
    """``e_t = R(Q) / d`` on the prepared training set."""
    with torch.no_grad():
        return float(risk(Q, g, lam)) / g.d


def test_errors(
    Q: torch.Tensor,
    B: torch.Tensor,
    teacher: Teacher,
    generator: torch.Generator,
    n_test: int = 10000,
    chunk: int = 2000,
) -> TestErrors:
    """Test errors of the attention student ``Q`` and the linear baseline ``B`` on fresh samples.

    Samples are drawn in chunks of ``chunk`` from ``generator`` so memory stays
    at ``chunk * L * d`` numbers.
    """
    if n_test < 2:
        raise ValueError(f"n_test must be >= 2, got {n_test}")
    att, lin = [], []
    left = int(n_test)
    with torch.no_grad():
        while left > 0:
            k = min(chunk, left)
            g = prepare(teacher, sample(teacher, k, generator))
            att.append(attention_losses(Q, g).double())
            lin.append(linear_losses(B, g).double())
            left -= k
    a, b = torch.cat(att), torch.cat(lin)
    n = a.numel()

    def se(v: torch.Tensor) -> float:
        return float(v.std()) / math.sqrt(n)

    return TestErrors(float(a.mean()), se(a), float(b.mean()), se(b), se(a - b), n)
