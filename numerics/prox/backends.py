"""Which backend runs a proximal solve: ``"numpy"``, ``"numba"`` or ``"torch"`` (docs/method.md section 3)."""

from __future__ import annotations

from typing import Any

from attnphase.numerics.config import BACKENDS, backend_override
from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.theory.correlated_kernels import CorrelatedKernels
from attnphase.theory.kernels import Kernels


def resolve_backend(backend: str, kernels: Any = None) -> str:
    """``"numpy"``, ``"numba"`` or ``"torch"``: the backend a solver called with ``backend`` (and ``kernels``) runs.

    ``"auto"`` is :func:`~attnphase.numerics.config.backend_override` when set, else numba when it imports, else
    numpy.  The compiled path runs a :class:`~attnphase.theory.kernels.Kernels` (any r) or a
    :class:`~attnphase.theory.correlated_kernels.CorrelatedKernels`; the torch path a ``Kernels`` of r = 1 only
    (``"auto"`` never picks torch for other kernels).  ImportError where the backend's library is missing;
    TypeError where it cannot run ``kernels``; ValueError for a name not in
    :data:`~attnphase.numerics.config.BACKENDS`."""
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
    if backend == "torch":
        from attnphase.numerics.prox import torch_backend

        if not torch_backend.available():
            raise ImportError("backend='torch' needs torch, which cannot be imported; use backend='numpy', 'numba' "
                              "or 'auto'")
    if backend == "numba" and not compiled_ok:
        raise TypeError(f"backend='numba' needs a theory.kernels.Kernels or CorrelatedKernels (their generated "
                        f"functions), got {type(kernels).__name__}")
    if backend == "torch" and not torch_ok:
        raise TypeError(f"backend='torch' needs a theory.kernels.Kernels of r = 1 (its generated functions), got {type(kernels).__name__}")
    return backend
