"""Finite-d observables of a trained student (docs/model.md section 1, in the numerics' units; docs/validation.md,
"Choices worth knowing"): ``m = p_1 . Q / sqrt(d)``, ``theta = Q . Q* / d``, ``q = |Q|^2 / d`` (signed at
``r = r* = 1``; otherwise ``m = |Q^T p_1| / sqrt(d)``, ``theta = |Q^T Q*|_F / d``, ``q = Tr q0``), the rotation
invariants of docs/model.md section 7 (eigenvalues of ``q0 = Q^T Q / d``, singular values of ``th0 = Q^T Q* / d``,
norms of ``m_l = Q^T p_l / sqrt(d)``), ``e_t = R(Q) / d`` on the training set, and ``eps_g`` and ``eps_lin`` (the
least-squares linear baseline fitted on the training set) on the same fresh samples.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from .data import Teacher, sample
from .students import GramData, attention_losses, linear_losses, prepare, risk


@dataclass(frozen=True)
class Overlaps:
    """Order parameters of ``Q`` at finite d (module docstring): ``m``, ``theta``, ``q``, the norms ``|m_l|``, the
    eigenvalues of ``q0`` and the singular values of ``th0`` (both descending)."""

    m: float
    theta: float
    q: float
    m_norms: tuple[float, ...] = ()
    q0_eigenvalues: tuple[float, ...] = ()
    theta_singular_values: tuple[float, ...] = ()


@dataclass(frozen=True)
class TestErrors:
    """Monte-Carlo test errors on ``n_test`` fresh samples, with standard errors."""

    eps_g: float
    eps_g_se: float
    eps_lin: float
    eps_lin_se: float
    n_test: int


def _floats(t: torch.Tensor) -> tuple[float, ...]:
    return tuple(float(x) for x in t.detach().double().cpu())


def overlaps(Q: torch.Tensor, teacher: Teacher) -> Overlaps:
    """``m, theta, q`` and the invariants of ``Q`` (``(d, r)``) against ``teacher`` (module docstring)."""
    d = teacher.d
    Q = Q.detach()
    M = teacher.positions @ Q / math.sqrt(d)  # (L, r): row l is m_l
    th0 = Q.T @ teacher.Qstar / d  # (r, r*)
    q0 = Q.T @ Q / d  # (r, r)
    invariants = dict(m_norms=_floats(torch.linalg.vector_norm(M, dim=1)),
                      q0_eigenvalues=_floats(torch.linalg.eigvalsh(q0.double()).flip(0)),
                      theta_singular_values=_floats(torch.linalg.svdvals(th0.double())))
    q = float(torch.trace(q0))
    if Q.shape[1] == 1 and teacher.r_star == 1:
        return Overlaps(float(M[0, 0]), float(th0[0, 0]), q, **invariants)
    return Overlaps(float(torch.linalg.vector_norm(M[0])), float(torch.linalg.matrix_norm(th0)), q, **invariants)


def training_objective(Q: torch.Tensor, g: GramData, lam: float) -> float:
    """``e_t = R(Q) / d`` on the prepared training set."""
    with torch.no_grad():
        return float(risk(Q, g, lam)) / g.d


def test_errors(Q: torch.Tensor, B: torch.Tensor, teacher: Teacher, generator: torch.Generator, n_test: int = 10000,
                chunk: int = 2000) -> TestErrors:
    """Test errors of the attention student ``Q`` and the linear baseline ``B`` on ``n_test`` >= 2 fresh samples,
    drawn from ``generator`` in chunks of ``chunk`` (memory: ``chunk * L * d`` numbers; the draws follow the chunks,
    so the same generator with another ``chunk`` draws another test set: keep it fixed to reproduce a run)."""
    if isinstance(n_test, bool) or not isinstance(n_test, numbers.Integral) or n_test < 2:
        raise ValueError(f"n_test must be an integer >= 2 (a standard error needs two samples), got {n_test!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    att, lin = [], []
    with torch.no_grad():
        for start in range(0, int(n_test), chunk):
            g = prepare(teacher, sample(teacher, min(chunk, int(n_test) - start), generator))
            att.append(attention_losses(Q, g).double())
            lin.append(linear_losses(B, g).double())
    a, b = torch.cat(att), torch.cat(lin)
    n = a.numel()
    return TestErrors(float(a.mean()), float(a.std()) / math.sqrt(n), float(b.mean()), float(b.std()) / math.sqrt(n), n)
