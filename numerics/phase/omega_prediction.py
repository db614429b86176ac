"""The boundaries at the next omega predicted from the last one or two (secant extrapolation in omega),
with how far each may lie from its prediction before the omega continuation gives up on it
(:mod:`attnphase.numerics.phase.omega_continuation`, its adaptive step).

    b*(omega_k) = b_{k-1} + (b_{k-1} - b_{k-2}) (omega_k - omega_{k-1}) / (omega_{k-1} - omega_{k-2}),
    tolerance max(JUMP_MIN, JUMP_FACTOR |b* - b_{k-1}|)   (FIRST_JUMP_RATE |omega_k - omega_{k-1}| with one)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from attnphase.numerics.phase.boundary_results import BOUNDARY_KEYS, Boundaries

#: A boundary may lie this far (in alpha) from its prediction at least ...
JUMP_MIN = 0.05
#: ... or this many times the prediction's own move from the neighbour's value, whichever is larger.
JUMP_FACTOR = 3.0
#: With one neighbour (the prediction is its value): this many times the step in omega.
FIRST_JUMP_RATE = 15.0

#: The bifurcation secant's scale (``step`` of :func:`~attnphase.numerics.phase.bifurcation.branch_bifurcation`):
#: half the predicted move of the end, between these.
BIFURCATION_STEP = (0.004, 0.05)


class ContinuationFailed(RuntimeError):
    """The local computation at one omega did not find a boundary where it was predicted."""


@dataclass(frozen=True)
class Prediction:
    """Predicted boundaries (NaN: none expected) and how far each may lie from its prediction."""

    values: dict[str, float]
    tolerances: dict[str, float]
    moves: dict[str, float]

    def secant_step(self, key: str) -> float:
        """The bifurcation secant's scale for the end ``key`` (:data:`BIFURCATION_STEP`)."""
        (lo, hi), move = BIFURCATION_STEP, self.moves[key]
        return hi if not math.isfinite(move) else min(hi, max(lo, 0.5 * move))

    def check(self, key: str, value: float) -> None:
        """ContinuationFailed when ``value`` lies further from the prediction than the tolerance."""
        if not abs(value - self.values[key]) <= self.tolerances[key]:
            raise ContinuationFailed(f"{key} = {value:.4f} jumped from its prediction {self.values[key]:.4f} "
                                     f"(tolerance {self.tolerances[key]:.3f})")


def predict(previous: Sequence[Boundaries], omega: float) -> Prediction:
    """Each boundary at ``omega`` by secant extrapolation from the last two of ``previous`` (the last
    one's value with one), tolerance max(JUMP_MIN, JUMP_FACTOR |move|) (FIRST_JUMP_RATE |step| with one)."""
    b1, b0 = previous[-1], (previous[-2] if len(previous) >= 2 else None)
    values, tols, moves = {}, {}, {}
    for k in BOUNDARY_KEYS:
        v1 = getattr(b1, k)
        v0 = getattr(b0, k) if b0 is not None else math.nan
        if math.isfinite(v0) and math.isfinite(v1) and b1.omega != b0.omega:
            values[k] = v1 + (v1 - v0) * (omega - b1.omega) / (b1.omega - b0.omega)
            moves[k] = abs(values[k] - v1)
            tols[k] = max(JUMP_MIN, JUMP_FACTOR * moves[k])
        else:
            values[k], tols[k], moves[k] = v1, max(JUMP_MIN, FIRST_JUMP_RATE * abs(omega - b1.omega)), math.nan
    return Prediction(values, tols, moves)
