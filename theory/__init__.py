"""attnphase.theory: the model derived symbolically (sympy) and lambdified into numpy kernels.

Nothing here imports :mod:`attnphase.numerics` or :mod:`attnphase.validation`;
importing this package imports neither sympy nor torch (sympy is imported only
when code has to be generated, i.e. on a cold on-disk cache, or for LaTeX).

Numeric entry points (generated from the sympy derivations, or closed forms checked against them):

* :func:`attnphase.theory.kernels.get_kernels` -- the kernels of every (L, r): attention, loss with its
  gradient and Hessian in h in R^{L x r}, and at r = 1 the proximal objective (docs/model.md sections 2-3, 7);
  the attention maps themselves in :mod:`attnphase.theory.softmax`;
* :func:`attnphase.theory.matrix_channel.channel_fields`, :func:`~attnphase.theory.matrix_channel.free_entropy`
  -- the channel fields and Phi in matrix overlaps (section 7);
* :func:`attnphase.theory.channel.channel_fields`, :func:`attnphase.theory.hats.hat_overlaps` (every rank),
  :func:`~attnphase.theory.channel.token_variances` -- the channel side (section 3);
* :class:`attnphase.theory.priors.RidgePrior` -- the prior side, ``update(hats)`` for every rank (sections 3, 7);
* :func:`attnphase.theory.free_entropy.free_entropy` -- Phi, e_t = -Phi (section 4; not
  re-exported here, where the name would shadow the submodule);
* :func:`attnphase.theory.baseline.eps_lin_from_moments` -- the linear baseline (section 5).
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
