"""A worked example of a new channel (docs/howto/add-a-loss.md): the square loss scaled by a constant.

    loss(h, h*) = c * 1/2 sum_{l,k} sigma_k^2 (S(h) - T(h*))[l, k]^2,    c = :data:`SCALE`

Scaling the loss by c and the ridge penalty by c scales the whole empirical risk by c, so the minimiser Q is
the same: the state evolution's fixed point has the same q0, m and th0, V0 (the response to a tilt of the
risk) is divided by c, and e_t and eps_g are multiplied by c.  tests/test_howto_add_a_loss.py solves both
models and checks exactly that, at rank 1 and rank 2: a plug-in wired wrong anywhere (kernels, proximal map,
observables) breaks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from attnphase.theory.channels.base import Channel

#: The factor c of the loss (a power of 2: the scaled model's arithmetic is the plain one's, exactly scaled).
SCALE = 2


@dataclass(frozen=True)
class ScaledSquareLoss(Channel):
    """c/2 sum_{l,k} sigma_k^2 (S - T)[l, k]^2 with c = :data:`SCALE`."""

    name: ClassVar[str] = "scaled_square"

    def loss_of(self, S: Any, T: Any, sigma2: Sequence[Any]) -> Any:
        from attnphase.theory.loss import limit_loss

        return SCALE * limit_loss(S, T, sigma2)
