"""Priors of the state evolution (docs/model.md sections 3 and 7): the regulariser's side of the map.

A prior is a small frozen object whose ``update(hats)`` returns the overlaps (q0, V0, m, th0) from the
hat overlaps, for any student rank r and teacher rank r*, and whose ``free_entropy_term(hats)`` is its
term of Phi.  The state-evolution map (numerics/se/se_map.py) calls it.

* :class:`~attnphase.theory.priors.ridge.RidgePrior` -- the ridge penalty (lambda / 2) |Q|_F^2.
* :class:`~attnphase.theory.priors.gaussian.GaussianPrior` -- the teacher's Gaussian prior, for the
  Bayes-optimal state evolution (numerics/se/bayes.py).
"""

from attnphase.theory.priors.gaussian import GaussianPrior
from attnphase.theory.priors.ridge import RidgePrior

__all__ = ["GaussianPrior", "RidgePrior"]
