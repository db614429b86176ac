"""A toy map x -> A x + b for the generic fixed-point solver (tests/numerics/test_numerics_design.py,
tests/numerics/phase/test_phase_edge_cases.py): it knows nothing of the model."""

from __future__ import annotations

import numpy as np

from attnphase.numerics.se.fixed_point import Evaluation, scaled_residual


class AffineMap:
    """x -> A x + b.  Every ``exact_every``-th evaluation is marked exact; approximate ones add
    ``bias`` to b (a map with a fixed point of its own, as the SE map whose polished proximal
    candidates miss basins).  ``distrust_approximation`` makes every later evaluation exact."""

    def __init__(self, A: np.ndarray, b: np.ndarray, exact_every: int = 1, bias: np.ndarray | float = 0.0):
        self.A, self.b, self.bias, self.exact_every = A, b, bias, exact_every
        self.calls = self.exact_calls = 0
        self.full_only = False

    def evaluate(self, x: np.ndarray, exact: bool = False) -> Evaluation:
        self.calls += 1
        exact = exact or self.full_only or self.calls % self.exact_every == 0
        self.exact_calls += exact
        fx = self.A @ x + self.b + (0.0 if exact else self.bias)
        return Evaluation(x.copy(), fx, scaled_residual(x, fx), exact)

    def admissible(self, x: np.ndarray) -> bool:
        return bool(np.all(np.isfinite(x)))

    def subspace(self, x: np.ndarray) -> np.ndarray:
        return np.eye(x.size)

    def jacobian_seed(self, n: int) -> None:
        return None

    def keep_jacobian(self, J: np.ndarray) -> None:
        pass

    def distrust_approximation(self) -> None:
        self.full_only = True
