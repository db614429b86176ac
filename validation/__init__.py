"""attnphase.validation: PyTorch at finite d — teacher data, students, gradient descent, reports.

Imports :mod:`attnphase.theory` and :mod:`attnphase.numerics`; nothing imports it.
"""
