"""Quadrature rules over the 2L Gaussians and the symmetry group of a state that reduces them."""
