"""Finite-size extrapolation to d -> infinity: the one fit that ``validate`` applies to gradient descent's and AMP's
means over d (docs/validation.md).

A mean y(d) over seeds is fitted by weighted least squares as ``y(d) = a + b / d^p`` for each power p of
:data:`FIT_POWERS`; the data choose the form (:func:`chosen_fit`: the smaller weighted chi^2), and ``a`` is the
d -> infinity value with its standard error ``a_se``; :func:`trend_extrapolations` applies it to the finite-size
trend of a row of ``validate --suite general``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .agreement import EXTRAPOLATED_SE

#: The finite-size forms a + b / d^p tried, with their names; the data choose (:func:`chosen_fit`).
FIT_POWERS = {1.0: "a + b/d", 0.5: "a + b/sqrt(d)"}


def extrapolate(ds: Sequence[int], means: Sequence[float], stds: Sequence[float], ns: Sequence[int],
                power: float = 0.5) -> dict[str, float]:
    """Weighted least-squares fit ``y(d) = a + b / d^power``, weights ``n / std^2`` (``std`` floored at 1e-6);
    returns ``a`` (the d -> inf value), ``b``, ``a``'s standard error (inflated by chi^2 / (points - 2) where the fit
    is worse than the error bars) and ``chi2``, the weighted sum of squared residuals.  Where a point has no spread
    (one run: NaN), equal weights and ``a``'s error from the residuals alone (NaN with two points)."""
    x = np.asarray(ds, dtype=float) ** -power
    y = np.asarray(means, dtype=float)
    stds = np.asarray(stds, dtype=float)
    spread = bool(np.all(np.isfinite(stds)))
    se = np.maximum(stds, 1e-6) / np.sqrt(np.asarray(ns, dtype=float)) if spread else np.ones_like(y)
    W = 1.0 / se**2
    X = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(X.T @ (X * W[:, None]))
    a, b = cov @ (X.T @ (W * y))
    chi2 = float((W * (y - (a + b * x)) ** 2).sum())
    dof = len(y) - 2
    scale = max(1.0, chi2 / max(dof, 1)) if spread else (chi2 / dof if dof > 0 else math.nan)
    return {"a": float(a), "b": float(b), "a_se": float(math.sqrt(cov[0, 0] * scale)), "chi2": chi2}


def chosen_fit(ds: Sequence[int], means: Sequence[float], stds: Sequence[float],
               ns: Sequence[int]) -> dict[str, Any]:
    """The fit of :data:`FIT_POWERS` with the smallest chi^2 (the first on a tie): :func:`extrapolate`'s keys with
    ``power``, ``form`` (its name) and the other form's ``chi2_other``, ``other_a``, ``other_a_se``, ``other_form``
    (where the data do not tell the forms apart, a verdict may hang on the choice: the report shows both)."""
    fits = {p: extrapolate(ds, means, stds, ns, power=p) for p in FIT_POWERS}
    best = min(fits, key=lambda p: fits[p]["chi2"])
    others = sorted((p for p in fits if p != best), key=lambda p: fits[p]["chi2"])
    other = {"chi2_other": fits[others[0]]["chi2"], "other_a": fits[others[0]]["a"],
             "other_a_se": fits[others[0]]["a_se"], "other_form": FIT_POWERS[others[0]]} if others else \
        {"chi2_other": None}
    return dict(fits[best], power=best, form=FIT_POWERS[best], **other)


#: Dimensions a finite-size trend needs (every run converged) for its d -> inf fit.
MIN_FIT_DS = 3


def trend_extrapolations(row: dict[str, Any]) -> list[dict[str, Any]]:
    """For a row of ``validate --suite general`` with a finite-size trend
    (:func:`~attnphase.validation.general_suite.finite_size_trend`), each observable compared where it disagrees:
    with the point of its start's branch (every compared one) and, at rank r, with the mixed point (those it
    disagrees on).  Per observable its ``theory`` value, ``against`` (``branch`` / ``mixed point``), the d -> inf
    fit a +- a_se of the trend over its dimensions whose every run converged
    (:func:`chosen_fit`: ``a``, ``a_se``, ``form``; absent below
    :data:`MIN_FIT_DS` of them) and ``agrees``: |a - theory| <= EXTRAPOLATED_SE hypot(a_se, theory_se), theory_se
    the theory point's own error bar where it has one (``err_<obs>``; else 0), None without fit or theory."""
    against = [(obs, "branch", row["theory"] or {}) for obs in row["agrees"] if row["status"] == "disagrees"]
    against += [(obs, "mixed point", row["mixed"]) for obs, ok in (row.get("mixed_agrees") or {}).items()
                if ok is False]
    usable = [p for p in row.get("trend") or () if p["converged"]]
    out = []
    for obs, what, point in against:
        theory, theory_se = point.get(obs), point.get(f"err_{obs}")
        entry: dict[str, Any] = {"observable": obs, "against": what, "theory": theory, "theory_se": theory_se,
                                 "agrees": None}
        if len(usable) >= MIN_FIT_DS:
            fit = chosen_fit([p["d"] for p in usable], [p[f"{obs}_mean"] for p in usable],
                             [p[f"{obs}_std"] for p in usable], [p["n"] for p in usable])
            entry |= {"a": fit["a"], "a_se": fit["a_se"], "form": fit["form"]}
            if theory is not None and math.isfinite(theory):
                bar = math.hypot(fit["a_se"], theory_se if theory_se is not None and math.isfinite(theory_se) else 0)
                entry["agrees"] = abs(fit["a"] - theory) <= EXTRAPOLATED_SE * bar
        out.append(entry)
    return out
