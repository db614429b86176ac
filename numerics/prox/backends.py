"""Which backend runs a proximal solve: ``"numpy"``, ``"numba"`` (compiled) or ``"torch"``.

The backends (argument ``backend`` of every solver, one of :data:`attnphase.numerics.config.BACKENDS`,
normally ``SolverConfig.backend``) run one algorithm, the safeguarded Newton descent on

    P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T)      (docs/model.md section 3)

(:mod:`attnphase.numerics.prox.global_prox`, :mod:`attnphase.numerics.prox.compiled`,
:mod:`attnphase.numerics.prox.torch_backend`); :func:`resolve_backend` says which one a call runs,
from the libraries that can be imported and the kernels it is given.  The configuration holds the
names (:mod:`attnphase.numerics.config`); this module, below every solver, resolves them.
"""

from __future__ import annotations

from typing import Any

from attnphase.numerics.config import BACKENDS, backend_override
from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.theory.correlated_kernels import CorrelatedKernels
from attnphase.theory.kernels import Kernels


def resolve_backend(backend: str, kernels: Any = None) -> str:
    """``"numpy"``, ``"numba"`` or ``"torch"``: the backend a solver called with ``backend`` (and ``kernels``) runs.

    ``backend`` is one of :data:`~attnphase.numerics.config.BACKENDS`. ``"auto"`` is replaced by
    :func:`~attnphase.numerics.config.backend_override` (``$ATTNPHASE_PROX_BACKEND``) when that
    is set, else it is numba when numba can be imported. The compiled path runs on the one-point twin of a
    :class:`~attnphase.theory.kernels.Kernels` (any r) or of a
    :class:`~attnphase.theory.correlated_kernels.CorrelatedKernels`; the torch path on a ``Kernels`` of r = 1 only
    (for correlated-token and rank-r kernels ``"auto"`` never picks it: an override ``torch`` gives numba, or numpy
    without numba). ``"numba"`` without numba, or ``"torch"`` without torch, raises ImportError; either
    with a kernels object it cannot run, TypeError.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    compiled_ok = kernels is None or isinstance(kernels, (Kernels, CorrelatedKernels))
    torch_ok = kernels is None or (isinstance(kernels, Kernels) and kernels.r == 1)
    if backend == "auto":
        override = backend_override()
        if override == "torch" and not torch_ok:
            override = None  # correlated tokens, rank r: the torch backend does not run their kernels
        backend = override or ("numba" if compiled_ok and prox_compiled.available() else "numpy")
    if backend == "numba" and not prox_compiled.available():
        raise ImportError("backend='numba' needs numba, which cannot be imported; use backend='numpy' or 'auto'")
    if backend == "torch" and not _torch_available():
        raise ImportError("backend='torch' needs torch, which cannot be imported; use backend='numpy', 'numba' or 'auto'")
    if backend == "numba" and not compiled_ok:
        raise TypeError(f"backend='numba' needs a theory.kernels.Kernels or CorrelatedKernels (their generated "
                        f"functions), got {type(kernels).__name__}")
    if backend == "torch" and not torch_ok:
        raise TypeError(f"backend='torch' needs a theory.kernels.Kernels of r = 1 (its generated functions), got {type(kernels).__name__}")
    return backend


def _torch_available() -> bool:
    try:
        from attnphase.numerics.prox import torch_backend as prox_torch
    except ImportError:
        return False
    return prox_torch.available()
