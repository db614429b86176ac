"""Exact symmetries of the channel, used to symmetrise the hat overlaps.

A group element (pi, s, t) acts on the Gaussian nodes as
``(xi, eta) -> (s * xi[pi], t * eta[pi])``.  It is a symmetry of the state
evolution at the current state when

* the model is invariant: sigma[pi] = sigma, A[pi][:, pi] = A, P[pi][:, pi] = P (and the token
  Gram C, the whitened model's mixing B: docs/model.md section 7);
* the state is invariant: m[pi] = s * m, and t = s unless theta = 0.

Then (the loss is even in h and in h*, and permutation-equivariant)
``h_hat -> s h_hat[pi]``, ``g -> s g[pi]``, hence

    qhat = qhat[pi],  mhat = s mhat[pi],  thhat = s t thhat[pi],  Vhat = Vhat[pi].

Averaging the estimated hat overlaps over this group (a projection) is exact for
the true integrals and removes the arbitrary choice between mirror-image minima
of equal value at symmetric nodes (docs/model.md section 3: such ties otherwise feed a
spurious (mhat_1 - mhat_2)^2 into q0 and stall the iteration).  In particular
m = 0 forces mhat = 0, and theta = 0 forces thhat = 0, exactly.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.theory.params import ModelParams


class SymmetryElement(NamedTuple):
    """(pi, s, t): token permutation, sign on the student fields, sign on the teacher fields.

    The one representation of a group element everywhere (hashable; a group's key is
    ``tuple(group)``; :mod:`attnphase.numerics.quadrature.rules` unpacks it as ``perm, s, t``).
    """

    perm: tuple[int, ...]
    s: int
    t: int


def symmetry_group(params: ModelParams, ov: Overlaps, rtol: float = 1e-12) -> list[SymmetryElement]:
    """The elements (pi, s, t) that leave both the model and the state ``ov`` invariant.

    The state test m[pi] = s m uses an absolute tolerance ``rtol * max(1, |m|)``; the
    test theta = 0 is exact (the symmetrised iteration keeps theta exactly 0 on the
    positional and agnostic branches). Every proximal map of the SE has these symmetries (the
    ``aligned`` one too: its basin follows the student's mean field m + (th0 / rho0) h*, which does
    not see the teacher's sign where th0 = 0).
    """
    L = params.L
    atol = rtol * max(1.0, float(np.abs(ov.m).max()))
    group = []
    for perm in itertools.permutations(range(L)):
        p = list(perm)
        if not params.invariant_under(p):
            continue
        for s in (1, -1):
            if float(np.max(np.abs(ov.m[p] - s * ov.m))) > atol:  # (np.allclose is 10x slower)
                continue
            for t in (1, -1):
                if t != s and ov.th0 != 0.0:
                    continue
                group.append(SymmetryElement(tuple(perm), s, t))
    return group


def model_symmetry_group(params: ModelParams) -> list[SymmetryElement]:
    """All (pi, s, t) under which the model is invariant (no condition on the state)."""
    group = []
    for perm in itertools.permutations(range(params.L)):
        p = list(perm)
        if params.invariant_under(p):
            group += [SymmetryElement(tuple(perm), s, t) for s in (1, -1) for t in (1, -1)]
    return group


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
