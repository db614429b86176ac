"""Compiled (numba) backend of the rank-r Newton descent of :mod:`attnphase.numerics.prox.rank_prox`.

:func:`newton_rows` is :func:`~attnphase.numerics.prox.rank_prox.newton_minimize` -- same direction (the
shifted Cholesky of :mod:`attnphase.numerics.prox.rank_linalg_compiled`), step cap, Armijo constants,
convergence tests and iteration limit -- run one row at a time in a compiled loop (a ``numba.prange``
over blocks of rows) instead of as whole-batch numpy operations. The starts and the choice of the
global minimum stay in :func:`~attnphase.numerics.prox.rank_prox.global_prox`, shared by both backends, so
they select alike by construction. Results agree with the numpy path to rounding (numba's and numpy's
exponential may differ in the last bit, and the line search evaluates the generated loss where the
numpy path evaluates its numpy twin), not bit for bit.

As for r = 1 (:mod:`attnphase.numerics.prox.compiled`, whose :func:`~attnphase.numerics.prox.compiled.import_template`
does the work), the algorithm is a template module, :mod:`attnphase.numerics.prox.rank_rows`, instantiated
per (L, r, cse, parallel) on the one-point rendering of the generated rank-r kernels
(:attr:`attnphase.theory.rank_kernels.RankKernels.scalar`): a copy in the kernel cache directory named by
a hash of the template, of the kernels' module and of ``rank_linalg_compiled.py`` (which it calls), whose
machine code numba caches beside it. Only the first process pays the JIT; no in-memory cache here
(``sys.modules`` holds the instance). Importing this module does not import numba.

Threads: numba's default count, the cores this process may use (``NUMBA_NUM_THREADS`` lowers it);
``ATTNPHASE_NUMBA_PARALLEL=0`` compiles a serial loop (as for r = 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from attnphase.numerics.prox.compiled import _parallel_default, import_template
from attnphase.theory.kernels import ScalarKernels
from attnphase.theory.rank_kernels import RankKernels

#: The template module of the compiled rank-r solver (instantiated by :func:`instance`).
TEMPLATE = Path(__file__).with_name("rank_rows.py")
#: The compiled Cholesky the template calls (its text enters the instance's name: numba does not
#: notice a change of a callee in another module).
LINALG = Path(__file__).with_name("rank_linalg_compiled.py")


@dataclass(frozen=True, eq=False)
class RankBinding:
    """The parameters of one instance of :mod:`attnphase.numerics.prox.rank_rows`: L, r, whether the loop
    over rows is a ``prange``, and the generated one-point kernels."""

    L: int
    r: int
    parallel: bool
    scalar: ScalarKernels


def instance(kernels: RankKernels, parallel: bool | None = None) -> ModuleType:
    """The compiled rank-r descent for ``kernels`` (L, r, cse), imported once per process (module doc).

    ``parallel`` None: ``$ATTNPHASE_NUMBA_PARALLEL`` (default on)."""
    parallel = _parallel_default() if parallel is None else bool(parallel)
    scalar = kernels.scalar
    name = (f"rank_prox_rows_L{scalar.L}_r{scalar.r}_{'cse' if scalar.cse else 'nocse'}_"
            f"{'par' if parallel else 'ser'}")
    key = f"{scalar.module}\n{parallel}\n{LINALG.read_text()}"
    return import_template(TEMPLATE, name, key, RankBinding(scalar.L, scalar.r, parallel, scalar),
                           f"the rank-{scalar.r} proximal solver for L = {scalar.L}")


def newton_rows(kernels: RankKernels, h0: np.ndarray, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray,
                sigma2: np.ndarray, delta: float, max_step: float, *, xtol: float, max_iter: int,
                max_halvings: int, parallel: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(h, value, converged) of the compiled descent from every row of h0 (N, L, r); w (N, L, r),
    T (N, L, L), Vinv (L, r, r), sigma2 (L,); ``delta`` and ``max_step`` as in
    :func:`~attnphase.numerics.prox.rank_prox.step_constants`."""
    h, value, conv = search_rows(kernels, np.asarray(h0, dtype=float)[None], w, Vinv, T, sigma2, delta, max_step,
                                 np.zeros(1, dtype=np.int64), 0.0, xtol=xtol, max_iter=max_iter,
                                 max_halvings=max_halvings, parallel=parallel)
    return h[0], value[0], conv[0]


def search_rows(kernels: RankKernels, starts: np.ndarray, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray,
                sigma2: np.ndarray, delta: float, max_step: float, order: np.ndarray, merge: float, *, xtol: float,
                max_iter: int, max_halvings: int, parallel: bool | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(h (S, N, L, r), value (S, N), converged (S, N)): the descent from every start (``starts`` (S, N, L, r),
    start s of node i at [s, i]; w (N, L, r), T (N, L, L)), a node's starts in the order ``order``; with
    ``merge`` > 0 a start that comes within ``merge`` of a minimum an earlier start of its node converged to,
    where the Hessian is positive definite, stops and takes that minimum (its row a copy of it)."""
    h = np.array(starts, dtype=float, order="C", copy=True)
    S, N = h.shape[0], h.shape[1]
    value, conv = np.empty((S, N)), np.zeros((S, N), dtype=np.bool_)
    instance(kernels, parallel).rows(
        h, np.ascontiguousarray(w, dtype=float), np.ascontiguousarray(Vinv, dtype=float),
        np.ascontiguousarray(T, dtype=float), np.ascontiguousarray(sigma2, dtype=float), float(delta),
        float(max_step), float(xtol), int(max_iter), int(max_halvings), value, conv,
        np.ascontiguousarray(order, dtype=np.int64), float(merge))
    return h, value, conv
