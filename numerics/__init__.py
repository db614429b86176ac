"""attnphase.numerics: quadrature, global proximal map, state evolution, continuation, phase diagram.

Imports :mod:`attnphase.theory`, never :mod:`attnphase.validation` and never torch.
"""
