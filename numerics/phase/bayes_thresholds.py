"""The thresholds of the Bayes-optimal state evolution with their error bars (docs/bayes-optimal.md), on the curve
alpha*(q0) of numerics/se/bayes.py (the alpha at which q0 is a fixed point):

* ``alpha_weak_recovery``: where q0 = 0 loses stability, lim_{q0 -> 0} alpha*(q0) (:func:`weak_recovery_on`);
* ``alpha_amp``: the end of the uninformative branch, the first interior local maximum of alpha*(q0)
  (:func:`amp_on`); noiseless without one, 1 / L; with noise without one, null;
* ``alpha_it``: where the informative branch's free entropy overtakes the uninformative one's (:func:`it_on`):
  noiseless exactly 1 / L, with noise the crossing by Brent's method; null where the branches do not coexist.

Each bar is the change of the value from the rule of order n - ORDER_STEP to that of order n (the rules are
exponentially convergent products of Gauss rules), at least the root finders' tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scipy.optimize import brentq, minimize_scalar

from attnphase.numerics.se.bayes import (DEFAULT_ORDER, ORDER_STEP, AlphaCurve, BayesModel, SignRule, alpha_curve,
                                         alpha_of_overlap, fixed_points, free_entropy, sign_rule)

#: The keys of the thresholds, in the order they are reported.
THRESHOLD_KEYS = ("alpha_weak_recovery", "alpha_it", "alpha_amp")

#: Relative size of alpha*(x)'s rounding noise (~1e-8 at x = q0 / rho0 ~ 1e-9): a local maximum that alpha* falls
#: from by less than this is that noise, not the end of a branch.
CURVE_RESOLUTION = 1e-7

#: The part of the coexistence range [informative end, alpha_amp] left out at each end in the crossing search.
EDGE = 1e-3

#: x = q0 / rho0 at which the weak-recovery limit is extrapolated from (x and 2 x).
WR_X = 1e-5


@dataclass(frozen=True)
class Threshold:
    """A threshold, its standard error, and how it was found or why it does not exist (value None)."""

    value: float | None
    err: float | None
    note: str


@dataclass(frozen=True)
class BayesThresholds:
    """The three thresholds of one model on one rule (module doc)."""

    alpha_weak_recovery: Threshold
    alpha_it: Threshold
    alpha_amp: Threshold
    rule: str

    def as_dict(self) -> dict:
        """``{key: value, err_key: bar, key_note: how or why null}`` for the three keys."""
        out: dict = {}
        for k in THRESHOLD_KEYS:
            t: Threshold = getattr(self, k)
            out.update({k: t.value, f"err_{k}": t.err, f"{k}_note": t.note})
        return out


def weak_recovery_on(model: BayesModel, rule: SignRule, x: float = WR_X) -> float:
    """lim alpha*(q0) at q0 -> 0: 2 alpha*(x) - alpha*(2 x) (alpha* is smooth in x there; the O(x^2) left is
    in the bar: 4 times it is the change from x = 2 WR_X to x = WR_X)."""
    return 2.0 * alpha_of_overlap(model, rule, model.rho0 * x) - alpha_of_overlap(model, rule, model.rho0 * (2 * x))


def _prominent(a: np.ndarray, i: int) -> bool:
    """Whether alpha*(x) falls from a[i] by more than CURVE_RESOLUTION * a[i] before it next rises above a[i]."""
    later = a[i + 1:]
    above = np.flatnonzero(later > a[i])
    dip = later[:above[0]] if above.size else later
    return a[i] - dip.min() > CURVE_RESOLUTION * a[i]


def amp_on(model: BayesModel, rule: SignRule, curve: AlphaCurve) -> tuple[float, float] | None:
    """(alpha_amp, x there): the first interior local maximum of alpha*(x) that alpha* falls from by more than
    the curve's resolution (:data:`CURVE_RESOLUTION`), refined by a bounded search between the grid's
    neighbours; None if there is none."""
    a = curve.alpha
    for i in range(1, a.size - 1):
        if a[i] >= a[i - 1] and a[i] > a[i + 1] and _prominent(a, i):
            lo, hi = curve.x[i - 1], curve.x[i + 1]
            res = minimize_scalar(lambda x: -alpha_of_overlap(model, rule, model.rho0 * x), bounds=(lo, hi),
                                  method="bounded", options={"xatol": 1e-12 * max(1.0, hi)})
            return float(-res.fun), float(res.x)
    return None


def it_on(model: BayesModel, rule: SignRule, curve: AlphaCurve, amp: tuple[float, float] | None) -> float | None:
    """The free-entropy crossing (module doc): 1 / L noiseless; with noise, the root of
    Phi(informative) - Phi(uninformative) in alpha; None where the branches do not coexist."""
    if model.noise == 0.0:
        return 1.0 / model.L
    if amp is None:
        return None
    a_amp, x_amp = amp
    a_low = float(curve.alpha[curve.x > x_amp].min())  # the informative branch's lowest alpha
    if not a_low < a_amp:
        return None

    def gap(alpha: float) -> float:
        pts = [x for x, stable in fixed_points(model, rule, alpha, curve) if stable]
        lo, hi = pts[0], pts[-1]
        return (free_entropy(model, rule, alpha, model.rho0 * hi) - free_entropy(model, rule, alpha, model.rho0 * lo))

    eps = EDGE * (a_amp - a_low)  # inside the coexistence range: near its ends two roots share a grid cell
    g0, g1 = gap(a_low + eps), gap(a_amp - eps)
    if not g0 * g1 < 0:
        return None
    return float(brentq(gap, a_low + eps, a_amp - eps, xtol=1e-12, rtol=1e-12))


def _on_rule(model: BayesModel, rule: SignRule) -> dict[str, float | None]:
    curve = alpha_curve(model, rule)
    amp = amp_on(model, rule, curve)
    return {"alpha_weak_recovery": weak_recovery_on(model, rule),
            "alpha_it": it_on(model, rule, curve, amp),
            "alpha_amp": None if amp is None else amp[0]}


_NOTES = {
    "alpha_weak_recovery": "q0 = 0 loses stability: lim alpha*(q0), q0 -> 0",
    "alpha_it": "free-entropy crossing of the informative and uninformative branches",
    "alpha_amp": "end of the uninformative branch: first local maximum of alpha*(q0)",
}


#: The least error bar of a threshold: the root finders' relative tolerance.
ROOT_TOL = 1e-9


def bayes_thresholds(model: BayesModel, order: int = DEFAULT_ORDER) -> BayesThresholds:
    """The three thresholds on the rule of ``order`` nodes per variable, each with its error bar (the change
    from order - ORDER_STEP; module doc)."""
    rule = sign_rule(model.L, order)
    fine = _on_rule(model, rule)
    coarse = _on_rule(model, sign_rule(model.L, order - ORDER_STEP))
    out = {}
    for k in THRESHOLD_KEYS:
        v = fine[k]
        if v is None and k == "alpha_amp" and model.noise == 0.0:
            out[k] = Threshold(1.0 / model.L, 0.0, "continuous: alpha*(q0) rises monotonically to alpha*(rho0-) = 1 / L, "
                               "where the uninformative branch reaches perfect recovery: no algorithmic gap (exact)")
        elif v is None:
            out[k] = Threshold(None, None, "alpha*(q0) has no interior maximum: the uninformative branch rises "
                               "continuously, no jump" if k == "alpha_amp" else
                               "the informative and uninformative branches do not coexist")
        elif k == "alpha_it" and model.noise == 0.0:
            out[k] = Threshold(v, 0.0, "exact: noiseless, Phi at q0 -> rho0 diverges as (alpha L - 1)/2 log 1/(rho0 - q0)")
        else:
            err = abs(v - coarse[k]) if coarse[k] is not None else math.nan
            if k == "alpha_weak_recovery":  # and the extrapolation's change from x = 2 WR_X to WR_X (v at WR_X)
                err = max(err, abs(v - weak_recovery_on(model, rule, 2 * WR_X)))
            out[k] = Threshold(float(v), None if math.isnan(err) else max(err, ROOT_TOL * abs(v)), _NOTES[k])
    return BayesThresholds(rule=f"sign{order}", **out)


__all__ = ["BayesThresholds", "THRESHOLD_KEYS", "Threshold", "bayes_thresholds", "weak_recovery_on", "amp_on", "it_on"]
