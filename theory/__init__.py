"""attnphase.theory: the model derived symbolically (sympy) and lambdified into numpy kernels.

Nothing here imports :mod:`attnphase.numerics` or :mod:`attnphase.validation`; importing this package imports
neither sympy nor torch (sympy is imported only when code has to be generated, or for LaTeX). The modules and
the equations each one holds: docs/architecture.md, "theory/", and docs/model.md, "Where each equation lives".
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it.  Loaded on first access (PEP 562), so importing a light
#: submodule (the ``derive`` command, while ``attnphase --help`` builds its parser) imports no numpy.
_EXPORTS = {
    "eps_lin_from_moments": "baseline",
    "channel_fields": "channel", "token_overlaps": "channel", "token_variances": "channel",
    "hat_overlaps": "hats",
    "Kernels": "kernels", "get_kernels": "kernels",
    "ModelParams": "params", "parse_matrix": "params",
    "RidgePrior": "priors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attnphase.theory' has no attribute {name!r}")
    return getattr(importlib.import_module(f"attnphase.theory.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
