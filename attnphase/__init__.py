"""attnphase: the solvable model of dot-product attention, theory <- numerics <- validation.

The three layers live in the subpackages :mod:`attnphase.theory` (sympy
derivations and lambdified kernels), :mod:`attnphase.numerics` (state-evolution
solvers, phase diagram) and :mod:`attnphase.validation` (PyTorch at finite d).
Importing this package imports none of them.
"""

__version__ = "0.1.0"
