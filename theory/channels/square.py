"""The square loss of the attention output (docs/model.md section 2): the model's default channel.

    loss(h, h*) = 1/2 sum_{l,k} sigma_k^2 (S(h) - T(h*))[l, k]^2

the d -> infinity limit of (1 / 2d) |y - f(X)|^2 (:mod:`attnphase.theory.loss` derives it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from attnphase.theory.channels.base import Channel


@dataclass(frozen=True)
class SquareLoss(Channel):
    """1/2 sum_{l,k} sigma_k^2 (S - T)[l, k]^2."""

    name: ClassVar[str] = "square"

    def loss_of(self, S: Any, T: Any, sigma2: Sequence[Any]) -> Any:
        from attnphase.theory.loss import limit_loss

        return limit_loss(S, T, sigma2)

    def loss_values(self, S: np.ndarray, T: np.ndarray, sigma2: np.ndarray) -> np.ndarray:
        """1/2 sum_{l,k} sigma_k^2 (S - T)[..., l, k]^2 in numpy (the fast path of the batched loss)."""
        D = S - T
        D *= D
        D *= np.asarray(sigma2, dtype=float)
        return 0.5 * D.reshape(D.shape[:-2] + (-1,)).sum(axis=-1)
