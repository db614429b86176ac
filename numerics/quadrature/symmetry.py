"""Exact symmetries of the channel, used to symmetrise the hat overlaps (docs/method.md section 2).

A group element (pi, s, t) acts on the Gaussian nodes as ``(xi, eta) -> (s * xi[pi], t * eta[pi])``.  It is a
symmetry of the state evolution at the current state when the model is invariant (sigma, A, P, and C or the
whitened mixing B, permuted: docs/model.md section 7) and the state is (m[pi] = s m; t = s unless theta = 0).
Then ``h_hat -> s h_hat[pi]``, ``g -> s g[pi]``, hence

    qhat = qhat[pi],  mhat = s mhat[pi],  thhat = s t thhat[pi],  Vhat = Vhat[pi].
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.theory.params import ModelParams


class SymmetryElement(NamedTuple):
    """(pi, s, t): token permutation, sign on the student fields, sign on the teacher fields (hashable; a
    group's key is ``tuple(group)``)."""

    perm: tuple[int, ...]
    s: int
    t: int


def symmetry_group(params: ModelParams, ov: Overlaps, rtol: float = 1e-12) -> list[SymmetryElement]:
    """The elements (pi, s, t) that leave both the model and the state ``ov`` invariant (m[pi] = s m to the
    absolute tolerance ``rtol * max(1, |m|)``; theta = 0 exactly)."""
    atol = rtol * max(1.0, float(np.abs(ov.m).max()))
    return [e for e in model_symmetry_group(params)  # (np.allclose is 10x slower)
            if float(np.max(np.abs(ov.m[list(e.perm)] - e.s * ov.m))) <= atol and (e.t == e.s or ov.th0 == 0.0)]


def model_symmetry_group(params: ModelParams) -> list[SymmetryElement]:
    """All (pi, s, t) under which the model is invariant (no condition on the state)."""
    return [SymmetryElement(perm, s, t) for perm in itertools.permutations(range(params.L))
            if params.invariant_under(list(perm)) for s in (1, -1) for t in (1, -1)]


def symmetrize(hat: HatOverlaps, group: list[SymmetryElement]) -> HatOverlaps:
    """Project the hat overlaps onto the subspace invariant under ``group`` (group average)."""
    if len(group) <= 1:
        return hat
    n = len(group)
    qhat = sum(hat.qhat[list(e.perm)] for e in group) / n
    mhat = sum(e.s * hat.mhat[list(e.perm)] for e in group) / n
    thhat = sum(e.s * e.t * hat.thhat[list(e.perm)] for e in group) / n
    Vhat = sum(hat.Vhat[list(e.perm)] for e in group) / n
    return HatOverlaps(qhat=qhat, mhat=mhat, thhat=thhat, Vhat=Vhat)
