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

from attnphase.theory.baseline import eps_lin_from_moments
from attnphase.theory.channel import channel_fields, token_overlaps, token_variances
from attnphase.theory.hats import hat_overlaps
from attnphase.theory.kernels import Kernels, get_kernels
from attnphase.theory.params import ModelParams, parse_matrix
from attnphase.theory.priors import RidgePrior

__all__ = [
    "Kernels",
    "ModelParams",
    "RidgePrior",
    "channel_fields",
    "eps_lin_from_moments",
    "get_kernels",
    "hat_overlaps",
    "parse_matrix",
    "token_overlaps",
    "token_variances",
]
