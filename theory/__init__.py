"""attnphase.theory: the model derived symbolically (sympy) and lambdified into numpy kernels.

Nothing here imports :mod:`attnphase.numerics` or :mod:`attnphase.validation`.
"""

from attnphase.theory.params import ModelParams, parse_matrix

__all__ = ["ModelParams", "parse_matrix"]
