"""Compiled (numba) backend of :mod:`attnphase.numerics.prox.global_prox`: the same algorithm (starts, refinement,
step rules, tie-breaking) one node at a time, equal to the numpy path to rounding (docs/method.md section 3).

The algorithm is the template module :mod:`attnphase.numerics.prox.rows`, evaluating P only through the generated
one-point kernels.  :func:`instance` copies the template into the kernel cache directory under a name hashing the
template, the step rules and the kernels' module, and imports the copy with its :class:`Binding` as
``__spec__.loader_state``: numba keys its disk cache by file, so each (L, r, kernels, parallel) needs a copy of its
own.  The loop over nodes is a ``numba.prange`` on numba's default thread count (``NUMBA_NUM_THREADS`` lowers it;
``ATTNPHASE_NUMBA_PARALLEL=0`` compiles a serial loop).  Importing this module does not import numba.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np

from attnphase.numerics.prox import newton_steps as steps
from attnphase.theory.codegen import cache_dir, first_run_notice, import_path, write_atomic
from attnphase.theory.correlated_kernels import CorrelatedKernels
from attnphase.theory.kernels import Kernels, ScalarKernels

#: A start stops once within this distance (relative, per coordinate) of a minimum an earlier start of its node
#: converged to, where the Hessian of P is positive definite, and takes that minimum (docs/method.md section 3).
MERGE_RADIUS = 1e-2

#: The templates (:func:`instance`) and the modules they compile in, whose text enters an instance's name (numba
#: does not notice a change of a constant read from another module).
TEMPLATE = Path(__file__).with_name("rows.py")
STEPS = Path(__file__).with_name("newton_steps.py")
LINALG = Path(__file__).with_name("shifted_cholesky.py")
ALGEBRA = Path(__file__).with_name("row_algebra.py")
#: Their texts, read once at import (:func:`instance` runs at every proximal search; the package's files do not change
#: under a running process).
SOURCES = {path: path.read_text() for path in (TEMPLATE, STEPS, LINALG, ALGEBRA)}


def available() -> bool:
    """Whether numba can be imported (the compiled backend can be used)."""
    try:
        import numba  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


@dataclass(frozen=True, eq=False)
class Binding:
    """The parameters of one instance of the template :mod:`attnphase.numerics.prox.rows`: L, r, whether its loop
    over nodes is a ``numba.prange``, the generated one-point kernels and the instance of
    :mod:`attnphase.numerics.prox.row_algebra` at (L, r)."""

    L: int
    r: int
    parallel: bool
    scalar: ScalarKernels
    algebra: ModuleType


def instance(kernels: Kernels | CorrelatedKernels, parallel: bool | None = None, matrix: bool = False) -> ModuleType:
    """The template instantiated for ``kernels`` (their matrix-form one-point kernels with ``matrix``, always at
    r >= 2), imported once per process; ``parallel`` None: ``$ATTNPHASE_NUMBA_PARALLEL`` (default on)."""
    name, key, scalar, parallel, kind = _instance_name(kernels, parallel, matrix)
    what = f"the rank-{scalar.r} proximal solver for L = {scalar.L}" if kind == "prox_rows_rank" else \
        f"the proximal solver for L = {scalar.L}"
    algebra = import_template(ALGEBRA, *_algebra_name(scalar.L, scalar.r), SimpleNamespace(L=scalar.L, r=scalar.r),
                              None)
    return import_template(TEMPLATE, name, key, Binding(scalar.L, scalar.r, parallel, scalar, algebra), what)


def _algebra_name(L: int, r: int) -> tuple[str, str]:
    """(name, key) of the instance of the one-point algebra at (L, r): the step rules' text is the key."""
    return f"row_algebra_L{L}_r{r}", SOURCES[STEPS]


def _instance_name(kernels: Kernels | CorrelatedKernels, parallel: bool | None, matrix: bool
                   ) -> tuple[str, str, ScalarKernels, bool, str]:
    """(name, key, one-point kernels, parallel, kind) of the instance of :func:`instance` (its arguments)."""
    if parallel is None:
        parallel = os.environ.get("ATTNPHASE_NUMBA_PARALLEL", "1").strip().lower() in ("1", "true", "yes")
    parallel = bool(parallel)
    matrix = matrix or (isinstance(kernels, Kernels) and kernels.r != 1)
    scalar = kernels.matrix_scalar if matrix else kernels.scalar
    kind = "prox_rows_cov" if isinstance(kernels, CorrelatedKernels) else "prox_rows_rank" if matrix else "prox_rows"
    name = f"{kind}_L{scalar.L}_r{scalar.r}_{'cse' if scalar.cse else 'nocse'}_{'par' if parallel else 'ser'}"
    key = f"{scalar.module}\n{parallel}\n{SOURCES[STEPS]}\n{SOURCES[LINALG]}\n{SOURCES[ALGEBRA]}"
    return name, key, scalar, parallel, kind


def machine_code_cached(kernels: Kernels | CorrelatedKernels) -> bool:
    """Whether the cache directory holds numba's machine code of :func:`instance` (``kernels``, the default
    ``parallel``): a process that loads it compiles nothing.  Neither numba nor the instance is imported."""
    name, key, scalar, *_ = _instance_name(kernels, None, False)
    algebra, algebra_key = _algebra_name(scalar.L, scalar.r)
    return (_has_machine_code(cache_dir(), f"{name}_{_digest(key, SOURCES[TEMPLATE])}")
            and _has_machine_code(cache_dir(), f"{algebra}_{_digest(algebra_key, SOURCES[ALGEBRA])}"))


def _digest(key: str, text: str) -> str:
    return hashlib.sha256(f"{key}\n{text}".encode()).hexdigest()[:16]


def _has_machine_code(folder: Path, name: str) -> bool:
    """Whether numba's index of ``name``'s machine code is where numba keeps it: beside the source (or in its
    __pycache__), or, with ``$NUMBA_CACHE_DIR`` set, in that folder's subfolder for the source's folder."""
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    return (any(folder.glob(f"{name}.*.nbi")) or any(folder.glob(f"__pycache__/{name}.*.nbi"))
            or (bool(numba_dir) and any(Path(numba_dir).glob(f"*/{name}.*.nbi"))))


def import_template(template: Path, name: str, key: str, binding: Any, what: str | None) -> ModuleType:
    """``template`` (a key of :data:`SOURCES`) instantiated with ``binding``, imported once per process: its copy in
    the cache directory is named ``name`` + a hash of ``key`` (what else the compiled code depends on) and of its
    text; a first-run notice names ``what`` when numba has no machine code for it yet (none with ``what`` None)."""
    text = SOURCES[template]
    name = f"{name}_{_digest(key, text)}"
    modname = f"attnphase._generated.{name}"
    if (module := sys.modules.get(modname)) is not None:
        return module
    path = cache_dir() / f"{name}.py"
    try:
        current = path.read_text()
    except OSError:
        current = None
    unwritable = current != text and not write_atomic(path, text)
    if unwritable:  # the cache folder cannot be written: a private copy, compiled again by every run
        path = Path(tempfile.mkdtemp(prefix="attnphase-")) / f"{name}.py"
        path.write_text(text)
    if what is not None and not _has_machine_code(path.parent, name):
        where = os.environ.get("NUMBA_CACHE_DIR") or path.parent
        first_run_notice(f"compiling {what} with numba (~5-10 s); " + (
            f"{cache_dir()} cannot be written, so every run compiles it again" if unwritable
            else f"once: later runs load it from {where}"))
    # numba's cache reloads the instance by its module name, so it stays in sys.modules
    return import_path(modname, path, text, binding)


def _rows(x: np.ndarray, N: int, tail: tuple[int, ...]) -> np.ndarray:
    """``x`` broadcast to (N,) + tail, float64 and contiguous (one row per node for the compiled loops)."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=float), (N,) + tail))


def global_rows(
    kernels: Kernels | CorrelatedKernels, starts: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray,
    sigma2: np.ndarray, *, refine: bool = True, xtol: float = 1e-10, max_iter: int = 60, max_halvings: int = 30,
    count: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The full search argmin_h P(h) of every node at r = 1: Newton from ``starts`` (N, n0, L) -- at node i the first
    ``count[i]`` of them (all without ``count``; the others recorded unconverged, value inf) --, then (``refine``)
    from the refinement starts of the best minimum; (h, value, converged, iterations) of every start, shapes
    (N, n, L) and (N, n) with n = n0 + L!, and the winning start per node (N,)."""
    starts = np.ascontiguousarray(starts, dtype=float)
    N, n0, L = starts.shape
    # the one-point kernels' last argument: sigma^2, or the whitened model's (C, B) (its sigma^2 are 1)
    par = np.asarray(kernels.loss_arguments(sigma2) if isinstance(kernels, CorrelatedKernels) else sigma2, dtype=float)
    Vr = _rows(V, N, (L,))
    return _run(kernels, starts, _rows(w, N, (L,)), Vr, _rows(T, N, (L, L)), _rows(par, N, par.shape[-1:]),
                1.0 / Vr.min(axis=1), np.arange(n0, dtype=np.int64), refine, steps.max_step(V), xtol, max_iter,
                max_halvings, MERGE_RADIUS, None, count=count)


def search_rows(kernels: Kernels, starts: np.ndarray, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray,
                sigma2: np.ndarray, delta: float, max_step: float, order: np.ndarray, merge: float, *, xtol: float,
                max_iter: int, max_halvings: int, parallel: bool | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The descent on matrix fields from every start: (h (S, N, L, r), value, converged, iterations (S, N)); ``starts``
    (S, N, L, r), w (N, L, r), T (N, L, L), Vinv (L, r, r), sigma2 (L,), ``delta`` and ``max_step`` of
    :func:`~attnphase.numerics.prox.objective.step_constants`.  A node's starts run in the order ``order``; with
    ``merge`` > 0 a start that comes within ``merge`` of a minimum an earlier one converged to takes that minimum."""
    starts = np.asarray(starts, dtype=float)
    S, N, L, r = starts.shape
    n = L * r
    h, value, conv, iters, _ = _run(
        kernels, np.ascontiguousarray(starts.reshape(S, N, n).transpose(1, 0, 2)), _rows(w, N, (L, r)).reshape(N, n),
        _rows(Vinv, N, (L, r, r)), _rows(T, N, (L, L)), _rows(sigma2, N, (L,)), np.full(N, float(delta)),
        np.asarray(order, dtype=np.int64), False, max_step, xtol, max_iter, max_halvings, merge, parallel, matrix=True)
    return h.transpose(1, 0, 2).reshape(S, N, L, r), value.T, conv.T, iters.T


def _run(
    kernels: Any, starts: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray, s2: np.ndarray, shift: np.ndarray,
    order: np.ndarray, refine: bool, max_step: float, xtol: float, max_iter: int, max_halvings: int, merge: float,
    parallel: bool | None, matrix: bool = False, count: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The template's ``rows`` (the matrix-form instance with ``matrix``) on per-node arrays: starts (N, n0, n),
    w (N, n), V, T, s2 and shift a row per node, ``count`` the starts run per node (all where None).  Returns
    h (N, n_all, n), value, conv, iters (N, n_all), best (N,)."""
    N, n0, n = starts.shape
    count = np.full(N, n0, dtype=np.int64) if count is None else np.ascontiguousarray(count, dtype=np.int64)
    L = T.shape[-1]
    perms = np.array(list(itertools.permutations(range(L)))[1:], dtype=np.int64).reshape(-1, L)  # identity left out
    n_all = n0 + 1 + perms.shape[0] if refine else n0
    h = np.empty((N, n_all, n))
    value, conv = np.empty((N, n_all)), np.zeros((N, n_all), dtype=np.bool_)
    iters, best = np.zeros((N, n_all), dtype=np.int64), np.zeros(N, dtype=np.int64)
    instance(kernels, parallel, matrix).rows(
        starts, w, V, T, s2, np.ascontiguousarray(shift, dtype=float), order, count, perms, bool(refine),
        float(max_step), float(xtol), int(max_iter), int(max_halvings), h, value, conv, iters, best, float(merge),
    )
    return h, value, conv, iters, best
