"""The alphas ``validate --suite general`` runs a rank-1 case at: on both sides of its landmark.

The landmark is the model's ``alpha_c`` (global proximal map), else the end of its semantic branch; the
runs take the largest grid alpha at or below ``BELOW`` x landmark and the smallest at or above ``ABOVE`` x
landmark.
"""

from __future__ import annotations

import math

from .reference import TheoryAtOmega

#: The alphas of a case with theory: grid points at or below BELOW x alpha_c and at or above ABOVE x alpha_c.
BELOW, ABOVE = 0.85, 1.2


def landmark(theory: TheoryAtOmega) -> tuple[float, str]:
    """(the alpha the case's runs straddle, what it is): alpha_c, else the semantic branch's end."""
    ac = theory.alpha_c.get("global", math.nan)
    if math.isfinite(ac):
        return ac, "alpha_c"
    end = theory.curves[("semantic", "global")].end if ("semantic", "global") in theory.curves else math.nan
    if math.isfinite(end):
        return end, "semantic branch end (no alpha_c)"
    return math.nan, "none (no alpha_c, no semantic branch end on the grid)"


def alphas_around(grid: tuple[float, ...], alpha: float, fallback: tuple[float, ...]) -> tuple[float, ...]:
    """The largest grid alpha <= BELOW x alpha and the smallest >= ABOVE x alpha (``fallback`` if alpha is NaN)."""
    if not math.isfinite(alpha):
        return tuple(fallback)
    below = [a for a in grid if a <= BELOW * alpha]
    above = [a for a in grid if a >= ABOVE * alpha]
    return tuple(x for x in (max(below) if below else None, min(above) if above else None) if x is not None)
