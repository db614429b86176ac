"""Priors of the state evolution (docs/model.md sections 3 and 7): the regulariser's side of the map.

A prior's ``update(hats)`` returns the overlaps (q0, V0, m, th0) from the hat overlaps, for any ranks r, r*,
and ``free_entropy_term(hats)`` its term of Phi.

* :class:`~attnphase.theory.priors.ridge.RidgePrior` -- the ridge penalty (lambda / 2) |Q|_F^2.
* :class:`~attnphase.theory.priors.gaussian.GaussianPrior` -- the teacher's Gaussian prior, for the
  Bayes-optimal state evolution (numerics/se/bayes.py).
"""

from attnphase.theory.priors.gaussian import GaussianPrior
from attnphase.theory.priors.ridge import RidgePrior

__all__ = ["GaussianPrior", "RidgePrior"]
