"""The ranks of a model and the cold start of each branch, at every rank (docs/model.md sections 3 and 7); the
settling of a matrix start's noise axes (docs/method.md section 11).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from attnphase.numerics.capabilities import check
from attnphase.numerics.config import BRANCHES, SolverConfig
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.theory.params import ModelParams


def positional_direction(params: ModelParams) -> np.ndarray | None:
    """The direction of m a positional start takes: P's first non-zero column scaled to max |.| = 1 (m lives
    in the range of P); None for P = 0, where no positional direction (and no positional branch) exists."""
    cols = [c for c in params.P_array.T if np.any(c)]
    return cols[0] / np.abs(cols[0]).max() if cols else None


def initial_overlaps(params: ModelParams, branch: str) -> Overlaps:
    """Deterministic starting state of each branch (m only along the range of P: its first non-zero column;
    P = 0 has no positional direction, and no positional branch: ValueError); the matrix form's
    (:func:`_matrix_start`, branches :data:`MATRIX_BRANCHES`) at r >= 2 or r* >= 2."""
    if params.r != 1 or teacher_rank(params) != 1:
        return _matrix_start(params, branch)
    check_branch(branch, BRANCHES)
    L, rho0 = params.L, params.rho0
    m = np.zeros(L)
    if branch == "semantic":
        return Overlaps(q0=rho0, V0=1.0, m=m, th0=0.8 * rho0)
    if branch == "positional":
        direction = positional_direction(params)
        if direction is None:
            raise ValueError("P = 0: no positional embeddings, so m = 0 for every student and no positional fixed "
                             "point exists")
        return Overlaps(q0=0.1, V0=50.0, m=0.2 * direction, th0=0.0)
    return Overlaps(q0=0.1, V0=1.0, m=m, th0=0.0)


#: The branches of the matrix form (docs/model.md section 7): those of the scalar form (config.BRANCHES) and mixed.
MATRIX_BRANCHES = ("semantic", "positional", "agnostic", "mixed")

#: How a matrix solve starts without ``init``: from the rank-1 fixed points (embedded) or the branch's cold start.
MATRIX_STARTS = ("embedded", "cold")


def check_branch(branch: str, branches: tuple[str, ...] = MATRIX_BRANCHES) -> None:
    """ValueError unless ``branch`` is one of ``branches``."""
    if branch not in branches:
        mixed = " (the mixed branch needs rank r >= 2 or r* >= 2)" if branch == "mixed" else ""
        raise ValueError(f"branch must be one of {branches}, got {branch!r}{mixed}")


#: Fixed mixtures of the embedded mixed state: (weight of th0, weight of m, tilt angle of m onto the semantic axes).
FIXED_MIXTURES = ((0.25, 1.0, 0.0), (0.5, 1.0, 0.0), (1.0, 0.5, 0.0), (1.0, 1.0, math.pi / 6), (1.0, 1.0, math.pi / 3))


def mixture(base: Overlaps, w_th: float, w_m: float, tilt: float) -> Overlaps:
    """``base`` (the embedded mixed state: semantic axes with th0, the last axis positional) with th0 scaled by
    w_th, m by w_m, and the positional column m_{:, r-1} turned by ``tilt`` onto axis 0:
    m_{:, 0} += sin(tilt) m_{:, r-1}, m_{:, r-1} <- cos(tilt) m_{:, r-1} (a direction carrying both overlaps)."""
    m = w_m * np.array(base.m)
    col = m[:, -1].copy()
    if base.r >= 2:
        m[:, 0] += math.sin(tilt) * col
        m[:, -1] = math.cos(tilt) * col
    return Overlaps(base.q0, base.V0, m, w_th * np.array(base.th0))


def teacher_rank(params: ModelParams) -> int:
    """r* of the model."""
    return params.r_star


def with_ranks(params: ModelParams, r: int, r_star: int) -> ModelParams:
    """``params`` with student rank r and teacher rank r* (r* >= 1 integer, checked by ModelParams)."""
    return params.replace(r=r, r_star=r_star)


def _matrix_start(params: ModelParams, branch: str) -> Overlaps:
    """The matrix form's start of each branch: semantic directions first (th0 = 0.8 rho0 on the first
    min(r, r*) axes), a positional direction on the next free axis (m = 0.2 P[:, 0] / max|P[:, 0]|),
    the remaining axes small (q0 = 0.1)."""
    check_branch(branch)
    L, r, rs, rho0 = params.L, params.r, teacher_rank(params), params.rho0
    q, V = np.full(r, 0.1), np.ones(r)
    m, th = np.zeros((L, r)), np.zeros((r, rs))
    n_sem = signal_axes(params, branch)[0]
    for a in range(n_sem):
        q[a], th[a, a] = rho0, 0.8 * rho0
    if branch in ("positional", "mixed"):
        col = params.P_array[:, 0]
        m[:, n_sem] = 0.2 * col / np.abs(col).max()
        V[n_sem] = 50.0
    return Overlaps(np.diag(q), np.diag(V), m, th)


def further_positional_directions(P: np.ndarray, m: np.ndarray, k: int) -> list[np.ndarray]:
    """Up to k columns for the positional branch's other axes: an orthonormal basis of range(P) minus
    span(m), each scaled to |m|; none where P has rank 1 (docs/method.md section 11, *Starts*)."""
    w, U = np.linalg.eigh(0.5 * (P + P.T))
    basis = U[:, w > 1e-10 * max(1.0, float(np.abs(w).max()))]
    norm = float(np.linalg.norm(m))
    if norm == 0.0 or basis.shape[1] < 2 or k < 1:
        return []
    rest = basis - np.outer(m / norm, (m / norm) @ basis)
    Ur, sv, _ = np.linalg.svd(rest, full_matrices=False)
    Ur = Ur[:, sv > 1e-8]
    return [norm * Ur[:, j] for j in range(min(k, Ur.shape[1]))]


def noise_axes(params: ModelParams, branch: str) -> list[int]:
    """The student axes of :func:`~attnphase.numerics.se.state_evolution.embedded_start` that carry neither a semantic nor a positional
    rank-1 state (no overlap with the teacher or the positions): the last r - min(r, r*) axes of
    ``semantic``, the first r - 1 of ``positional``, the axes between of ``mixed``; none of ``agnostic``."""
    if branch == "agnostic":
        return []
    n_sem, pos_axis = signal_axes(params, branch)
    return [a for a in range(params.r) if a >= n_sem and a != pos_axis]


def signal_axes(params: ModelParams, branch: str) -> tuple[int, int | None]:
    """(n, a) of :func:`~attnphase.numerics.se.state_evolution.embedded_start`: the first n student axes carry the
    semantic rank-1 state (min(r, r*), min(r - 1, r*) on ``mixed``), axis a = r - 1 the positional one
    (``positional`` and ``mixed``; else None)."""
    r, rs = params.r, teacher_rank(params)
    n_sem = min(r, rs) if branch == "semantic" else min(r - 1, rs) if branch == "mixed" else 0
    return n_sem, (r - 1 if branch in ("positional", "mixed") else None)


#: Steps of :func:`settle_noise_axes` and the weight of the map's image in each (a geometric mean).
SETTLE_STEPS = 4
SETTLE_WEIGHT = 0.5
#: Most lifts of the noise axes' q0 towards the signal axes' where the map is not defined at the start.
LIFT_STEPS = 3


def settle_noise_axes(ov: Overlaps, axes: list[int],
                      image: Callable[[Overlaps], tuple[Overlaps, float] | None]) -> tuple[Overlaps, int]:
    """(start, evaluations): the noise axes' diagonal entries (q0_aa, V0_aa) of ``ov`` iterated under the
    SE map restricted to them, everything else held:

        x_a <- x_a^(1 - w) F(x)_a^w,   x_a in {q0_aa, V0_aa},  w = SETTLE_WEIGHT,

    SETTLE_STEPS steps (a step where ``image`` is None halved once); the iterate of least residual wins.
    ``image(ov)``: (F(ov) aligned to ov's gauge, the scaled residual), or None.  Where the map is not defined at
    ``ov``, the noise axes' q0 is first lifted, q0_aa <- (q0_aa max_b q0_bb)^(1/2), at most LIFT_STEPS times.
    """
    if not axes:
        return ov, 0
    cur, n = image(ov), 1
    signal = [b for b in range(ov.q0.shape[0]) if b not in axes]
    ceiling = max((ov.q0[b, b] for b in signal), default=0.0)
    for _ in range(LIFT_STEPS):
        if cur is not None or not all(0 < ov.q0[a, a] < ceiling for a in axes):
            break
        q = np.array(ov.q0)
        q[axes, axes] = np.sqrt(q[axes, axes] * ceiling)
        ov = Overlaps(q, ov.V0, ov.m, ov.th0)
        cur = image(ov)
        n += 1
    if cur is None:
        return ov, n
    best = (cur[1], ov)
    x = ov
    for _ in range(SETTLE_STEPS - 1):
        fx = cur[0]
        for w in (SETTLE_WEIGHT, 0.5 * SETTLE_WEIGHT):
            q, V = np.array(x.q0), np.array(x.V0)
            for a in axes:
                if fx.q0[a, a] <= 0 or fx.V0[a, a] <= 0:
                    return best[1], n
                q[a, a] = q[a, a] ** (1 - w) * fx.q0[a, a] ** w
                V[a, a] = V[a, a] ** (1 - w) * fx.V0[a, a] ** w
            trial = Overlaps(q, V, x.m, x.th0)
            nxt = image(trial)
            n += 1
            if nxt is not None:
                break
        else:
            return best[1], n
        x, cur = trial, nxt
        if cur[1] < best[0]:
            best = (cur[1], x)
    return best[1], n


def check_solve_arguments(params: object, config: object, start: object) -> None:
    """What :func:`~attnphase.numerics.se.state_evolution.solve` is given, checked before any work: TypeError unless
    ``params`` is ModelParams and ``config`` SolverConfig or None; ValueError for a ``start`` other than None,
    ``"embedded"`` or ``"cold"``, for ``"embedded"`` at r = r* = 1, and for correlated tokens at r >= 2 or r* >= 2."""
    if not isinstance(params, ModelParams):
        raise TypeError(f"params must be ModelParams, got {type(params).__name__}")
    if config is not None and not isinstance(config, SolverConfig):
        raise TypeError(f"config must be a SolverConfig or None, got {type(config).__name__} (a precision tier: "
                        "SolverConfig.for_precision('fast'))")
    if start is not None and start not in MATRIX_STARTS:
        raise ValueError(f"start must be 'embedded' or 'cold' (or None), got {start!r}")
    r, r_star = params.r, teacher_rank(params)
    if start == "embedded" and (r, r_star) == (1, 1):
        raise ValueError("start 'embedded' needs rank r >= 2 or r* >= 2; at r = r* = 1 a solve starts cold or from init")
    if params.correlated_tokens:
        check("correlated_tokens", r, r_star)


def check_init(params: ModelParams, init: object) -> None:
    """ValueError naming ``init`` unless it is None or :class:`Overlaps` of ``params``' sizes: m (L,) and scalars at
    r = r* = 1, else q0 and V0 (r, r), m (L, r), th0 (r, r*)."""
    if init is None:
        return
    if not isinstance(init, Overlaps):
        raise ValueError(f"init must be Overlaps (a FixedPoint's .overlaps) or None, got {type(init).__name__}")
    r, r_star = params.r, teacher_rank(params)
    want = ({"q0": (), "V0": (), "m": (params.L,), "th0": ()} if (r, r_star) == (1, 1)
            else {"q0": (r, r), "V0": (r, r), "m": (params.L, r), "th0": (r, r_star)})
    got = {k: np.shape(getattr(init, k)) for k in want}
    if got != want:
        raise ValueError(f"init does not fit the model (L = {params.L}, r = {r}, r* = {r_star}): its shapes {got}, "
                         f"the model's {want}")
