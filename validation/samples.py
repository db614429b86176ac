"""The training-set size of a simulation: n = round(alpha d), halves rounded up -- the one rule for the sets
:mod:`attnphase.validation.data` draws and for what the commands say of them (without torch)."""

from __future__ import annotations

import math


def sample_count(alpha: float, d: int) -> int:
    """n = floor(alpha d + 1/2): alpha d rounded to the nearest integer, halves up (12.5 gives 13, as 13.5 gives 14;
    Python's round() would give 12); 0 for an alpha d below 1/2.  No validation: the training sets'
    :func:`~attnphase.validation.data.n_samples` validates."""
    return math.floor(float(alpha) * d + 0.5)


def smallest_dimension(alpha: float) -> int:
    """The smallest d with at least one training sample at ``alpha`` > 0 (:func:`sample_count` >= 1)."""
    d = max(1, math.ceil(0.5 / alpha))
    while sample_count(alpha, d) < 1:  # alpha d a hair below 1/2 by round-off
        d += 1
    while d > 1 and sample_count(alpha, d - 1) >= 1:
        d -= 1
    return d
