"""The agreement rule of a validation campaign, and the headline numbers it gives, from the summary dict of
:func:`attnphase.validation.campaign.run_campaign`.

A simulated mean agrees with the theory when ``|mean - theory| <= 2 std / sqrt(n_runs) + 0.1 |theory|``
(statistical error plus a 10 % allowance for finite-size corrections) and every run of it reached the gradient
tolerance (:func:`agrees`).  :func:`headline` applies it along the alpha sweep, :func:`extrapolated_verdicts` at
d -> inf, :func:`global_vs_local_at` to the small-alpha semantic runs, :func:`map_followed` row by row
(docs/validation.md, "Which map GD follows, row by row").
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnphase.numerics.se.overlaps import ZERO_OVERLAP

from .branch_segments import EXISTS_ABOVE_END, past_end
from .reference import _nan

REL_TOL = 0.10
"""Relative allowance for finite-size corrections in the agreement rule."""

_COMPARED = {"semantic": ("abs_theta", "eps_g"), "positional": ("abs_m", "eps_g")}


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard deviation (ddof 1) of ``values``, the ``std`` of the rule; NaN where there is one value
    (one run has no spread)."""
    v = np.asarray(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan


def within_rule(mean: float, std: float, n: int, theory: float) -> bool:
    """The agreement rule: ``|mean - theory| <= 2 std / sqrt(n) + REL_TOL |theory|`` (n runs, std over them; with one
    run, no spread: the relative allowance alone)."""
    spread = 2 * std / math.sqrt(n) if math.isfinite(std) else 0.0
    return abs(mean - theory) <= spread + REL_TOL * abs(theory)


def all_runs_converged(row: dict[str, Any]) -> bool:
    """Whether every run of an aggregated row reached the gradient tolerance (``n_converged == n_runs``)."""
    return row["n_converged"] == row["n_runs"]


def agrees(row: dict[str, Any], obs: str, prox: str = "global") -> bool | None:
    """The agreement rule for one observable of one aggregated row (``None``: no theory point on the branch;
    ``False`` also where a run of the row did not reach the gradient tolerance)."""
    th = row["theory"].get(prox)
    if not th or not th["converged"] or th["branch_reached"] != row["branch"] or not th.get("exists", True):
        return None  # no theory point on the branch (a noise-level point past the branch's end included)
    return all_runs_converged(row) and within_rule(row[f"{obs}_mean"], row[f"{obs}_std"], row["n_runs"], th[obs])


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """Simulation vs theory at the largest alpha, the smallest alpha down to which every point agrees, and the verdict."""
    rows = summary["sweep"]
    out: dict[str, Any] = {"rel_tol": REL_TOL}
    for init, observables in _COMPARED.items():
        sel = sorted((r for r in rows if r["init"] == init), key=lambda r: -r["alpha"])
        if not sel:
            continue
        top = sel[0]
        out[f"{init}_at_alpha_max"] = {"alpha": top["alpha"], **{f"{o}_sim": top[f"{o}_mean"] for o in observables},
                                       **{f"{o}_std": top[f"{o}_std"] for o in observables},
                                       **{f"{o}_theory": (top["theory"]["global"] or {}).get(o) for o in observables},
                                       "theory_branch": (top["theory"]["global"] or {}).get("branch_reached"),
                                       "n_runs": top.get("n_runs"), "n_converged": top.get("n_converged")}
        agreeing = list(itertools.takewhile(lambda r: all(agrees(r, o) for o in observables), sel))
        out[f"{init}_smallest_agreeing_alpha"] = agreeing[-1]["alpha"] if agreeing else None
        if agreeing:
            row = agreeing[-1]
            out[f"{init}_at_smallest_agreeing_alpha"] = {**{f"{o}_sim": row[f"{o}_mean"] for o in observables},
                                                          **{f"{o}_theory": row["theory"]["global"][o]
                                                             for o in observables}}
    ordered = sorted(rows, key=lambda r: (r["init"], r["alpha"]))
    out["map_followed"] = [{"alpha": r["alpha"], "init": r["init"], "d": summary["plan"]["d"], **m}
                           for r, m in zip(ordered, maps_followed(ordered, summary["theory"]))]
    out["global_vs_local"] = global_vs_local(summary)
    out["extrapolated"] = extrapolated_verdicts(summary)
    return out


#: A d -> inf extrapolation agrees with the theory when within this many of its standard errors.
EXTRAPOLATED_SE = 2.0


def extrapolated_verdicts(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict at d -> inf for each finite-size case (alpha, init) on its compared observables: the fit ``a +-
    a_se`` (``finite_size_fits``) agrees with the global-prox theory of the start's branch, ``theory +- theory_se``
    (the rule's standard error; 0 where the theory has none), when ``z = |a - theory| / hypot(a_se, theory_se) <=
    EXTRAPOLATED_SE`` (no finite-size allowance); ``agrees`` None where the theory has no point on the branch."""
    out = []
    for fit in summary["finite_size_fits"]:
        init, obs = fit["init"], fit["observable"]
        if obs not in _COMPARED.get(init, ()):
            continue
        rows = sorted((r for r in summary["finite_size"] if r["alpha"] == fit["alpha"] and r["init"] == init),
                      key=lambda r: r["d"])
        on_branch = bool(rows) and agrees(rows[-1], obs) is not None  # the rule's test of a point on the branch
        theory = rows[-1]["theory"]["global"][obs] if on_branch else None
        theory_se = _nan(rows[-1]["theory"]["global"].get(f"err_{obs}")) if on_branch else math.nan
        se = theory_se if math.isfinite(theory_se) else 0.0
        bar = math.hypot(fit["a_se"], se)
        distance = abs(fit["a"] - theory) / bar if theory is not None and bar > 0 else math.nan
        agrees_ = None if theory is None else abs(fit["a"] - theory) <= EXTRAPOLATED_SE * bar
        # the other form's distance: where it is on the other side of EXTRAPOLATED_SE the verdict hangs on the form
        bar_other = math.hypot(_nan(fit.get("other_a_se")), se)
        other = (abs(fit["other_a"] - theory) / bar_other if theory is not None and fit.get("other_a") is not None
                 and bar_other > 0 else math.nan)
        out.append({"alpha": fit["alpha"], "init": init, "observable": obs, "extrapolated": fit["a"],
                    "extrapolated_se": fit["a_se"], "form": fit["form"], "theory": theory, "theory_se": theory_se,
                    "distance_se": distance, "agrees": agrees_, "other_form": fit.get("other_form"),
                    "other_distance_se": other,
                    "ds": [r["d"] for r in rows if r["d"] not in (fit.get("dropped_d") or ())],
                    "dropped_d": list(fit.get("dropped_d") or ())})
    return out


def global_vs_local(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`global_vs_local_at` for each of the plan's small alphas."""
    return [global_vs_local_at(summary, a) for a in summary["plan"]["alphas_small"]]


def _no_semantic_point(prox: str, alpha: float, end: float | None) -> str:
    """Why the ``prox`` theory has no semantic |theta| at ``alpha``: past the branch's end (absent), else its solve
    did not converge."""
    if past_end(alpha, "semantic", end):
        return f"{prox}: none (the semantic branch ends at alpha = {end:.3g})"
    return f"{prox}: no converged point"


def global_vs_local_at(summary: dict[str, Any], alpha: float) -> dict[str, Any]:
    """Which proximal mode the semantic-init simulations follow at a small ``alpha``: the d -> inf fit ``a +- a_se``
    of |theta| against the global, local and (where solved) aligned theories, "consistent" within ``2 a_se + 0.02``.
    """
    fit = next((f for f in summary["finite_size_fits"]
                if f["alpha"] == alpha and f["init"] == "semantic" and f["observable"] == "abs_theta"), None)
    if fit is None:
        case = [r for r in summary.get("finite_size", []) if r["alpha"] == alpha and r["init"] == "semantic"]
        full = [r for r in case if all_runs_converged(r)]
        if case and len(full) < 3:  # _fss_fits fits over the dimensions whose every run converged, three at least
            return {"alpha": alpha, "verdict": f"no d -> inf fit at this alpha: {len(full)} of its {len(case)} "
                                               "dimensions had every run converged (a fit needs 3)"}
        return {"alpha": alpha, "verdict": "no finite-size data at this alpha"}
    th = {p: _nan(v) for p, v in fit["theory"].items()}
    th.setdefault("local", math.nan)
    margin = 2 * fit["a_se"] + 0.02
    consistent = {p: (not math.isnan(v)) and abs(fit["a"] - v) <= margin for p, v in th.items()}
    rows = sorted((r for r in summary["finite_size"] if r["alpha"] == alpha and r["init"] == "semantic"),
                  key=lambda r: r["d"])
    trend = [(r["d"], r["abs_theta_mean"], r["abs_theta_std"]) for r in rows]
    ends = branch_ends(summary["theory"], "semantic") if "theory" in summary else {}
    dist = ", ".join(f"{p} {v:.4f} ({abs(fit['a'] - v) / fit['a_se']:.1f} se away)" if not math.isnan(v)
                     else _no_semantic_point(p, alpha, ends.get(p)) for p, v in th.items())
    form = fit["form"]
    at = f"|theta| extrapolates to {fit['a']:.4f} +- {fit['a_se']:.4f}"
    which = [p for p in th if consistent[p]]
    if not which:
        verdict = (f"gradient descent follows none of the theories (none within 2 se + 0.02): {at} (fit {form} "
                   f"over d = {', '.join(str(d) for d, _, _ in trend)}); theory: {dist}")
    elif len(which) == 1:
        basin = " (the basin of its start)" if which[0] == "aligned" else ""
        verdict = f"gradient descent follows the {which[0]} proximal theory{basin} (within 2 se + 0.02): {at}; theory: {dist}"
    else:
        vals = [th[p] for p in which]
        gap = max(vals) - min(vals)
        verdict = (f"{at}, consistent with the {' and the '.join(which)} theories: "
                   + (f"the data cannot separate modes {gap:.3f} apart at a resolution of +-{margin:.3f}"
                      if gap > 1e-3 else "the modes coincide here") + f"; theory: {dist}")
    return {"alpha": alpha, "extrapolated": fit["a"], "extrapolated_se": fit["a_se"], "slope_b": fit["b"],
            "form": form, "power": fit["power"],
            "theory": th, "consistent": consistent, "trend": trend, "verdict": verdict}


#: Two maps' points closer than this (relative) are the same point (they coincide above alpha ~ 1.25 at omega = 0.3).
COINCIDE = 1e-3

#: GD's student has vanished (Q = 0, where a strong ridge holds the global-prox SE) when its q is below this:
#: |Q|_F / sqrt(d) <= 1e-5, about 30 times the default gradient tolerance (3e-7), which bounds |Q|_F / sqrt(d) by
#: tolerance / lambda where the ridge makes the risk lambda-convex around Q = 0.
GD_ZERO_Q = 1e-10

#: The state evolutions a row is compared with, in the order :func:`map_followed` tries them.
FOLLOWED_MAPS = ("global", "aligned")


def _rule_outcome(row: dict[str, Any], prox: str) -> bool | None:
    """The rule on every compared observable of the row's start against ``prox``'s point on the row's branch:
    True (all agree), False (one does not), None (no point of that map on the branch)."""
    outs = [agrees(row, o, prox) for o in _COMPARED.get(row["branch"], _COMPARED["semantic"])]
    return None if any(v is None for v in outs) else all(outs)


def _no_point(row: dict[str, Any], prox: str, end: float | None) -> str:
    """Why the ``prox`` state evolution has no point on the row's branch at the row's alpha: past the branch's
    end (the side where it does not exist, :data:`~attnphase.validation.branch_segments.EXISTS_ABOVE_END`),
    another fixed point reached, a noise-level overlap, or a solve that did not converge."""
    th = row["theory"].get(prox)
    if not th:
        return f"no {prox}-prox solve here"
    above = EXISTS_ABOVE_END.get(row["branch"])
    if past_end(row["alpha"], row["branch"], end):
        how = ("its solve there did not converge" if not th["converged"] else
               f"it reaches the {th['branch_reached']} point" if th["branch_reached"] != row["branch"] else
               "a noise-level overlap there")
        return (f"the {prox}-prox SE has no {row['branch']} point {'below' if above else 'above'} the branch's end at "
                f"alpha = {end:.3g} ({how})")
    if not th["converged"]:
        return f"the {prox}-prox solve did not converge"
    if th["branch_reached"] != row["branch"]:
        return f"the {prox}-prox SE has no {row['branch']} point: it reaches the {th['branch_reached']} point"
    return f"the {prox}-prox {row['branch']} point is at noise level"


def _both_vanish(row: dict[str, Any], prox: str) -> str:
    """Where the ``prox`` SE's solve lands on Q = 0 (q <= ZERO_OVERLAP, the strong-ridge agnostic point), GD's
    student has vanished too (q <= :data:`GD_ZERO_Q`) and the rule accepts its eps_g: the reason to say so; else
    ""."""
    th = row["theory"].get(prox)
    if (not th or not th["converged"] or th.get("q") is None or th["q"] > ZERO_OVERLAP
            or row.get("q_mean", math.inf) > GD_ZERO_Q
            or not within_rule(row["eps_g_mean"], row["eps_g_std"], row["n_runs"], th["eps_g"])):
        return ""
    return (f"GD and the {prox}-prox SE both end at Q = 0, the agnostic point a strong ridge holds "
            f"(q {row['q_mean']:.2g} vs {th['q']:.2g}; eps_g {row['eps_g_mean']:.4g} vs {th['eps_g']:.4g}, agrees), "
            f"not on the {row['branch']} branch")


def branch_ends(theory: dict[str, Any], branch: str) -> dict[str, float | None]:
    """``{prox: alpha where the branch ends}`` of a theory dict (``TheoryAtOmega.to_dict``), for the reasons of
    :func:`map_followed`."""
    return {key.split("/")[1]: c.get("end") for key, c in theory["curves"].items() if key.split("/")[0] == branch}


def map_followed(row: dict[str, Any], ends: dict[str, float | None] | None = None) -> dict[str, str]:
    """Which state evolution gradient descent follows on one aggregated row, and why: ``{"map", "reason"}``.

    ``map``: ``"global"`` (also where GD and the global-prox SE both end at Q = 0, :func:`_both_vanish`),
    ``"global or aligned"`` (the rule holds against both points and they differ by more than :data:`COINCIDE`),
    ``"aligned"``, ``"neither"`` or ``"not converged"`` (docs/validation.md, "Which map GD follows, row by row");
    ``reason``: the evidence.  ``ends``: ``{prox: alpha where the row's branch ends}``."""
    ends = ends or {}
    obs = _COMPARED.get(row["branch"], _COMPARED["semantic"])[0]
    gd = row[f"{obs}_mean"]
    if not all_runs_converged(row):
        return {"map": "not converged", "reason": f"{row['n_runs'] - row['n_converged']} of {row['n_runs']} runs "
                "stopped before the gradient tolerance: at no minimum of the risk, compared with no map"}
    outcome = {p: _rule_outcome(row, p) for p in FOLLOWED_MAPS}
    g_th, a_th = row["theory"].get("global"), row["theory"].get("aligned")
    if outcome["global"]:
        agree = f"the global-prox {row['branch']} point agrees ({obs} {gd:.3g} vs {g_th[obs]:.3g})"
        if not outcome["aligned"]:
            return {"map": "global", "reason": agree}
        if abs(a_th[obs] - g_th[obs]) <= COINCIDE * max(abs(g_th[obs]), 1e-3):
            return {"map": "global", "reason": f"{agree}; the aligned map's point is the same here"}
        return {"map": "global or aligned", "reason": f"{agree}, and so does the aligned-prox point ({a_th[obs]:.3g}): "
                "the rule does not separate the two at this d and seed count"}
    vanished = _both_vanish(row, "global") if outcome["global"] is None else ""
    if vanished:
        return {"map": "global", "reason": vanished}
    why_not_global = (_no_point(row, "global", ends.get("global")) if outcome["global"] is None
                      else f"the global-prox {row['branch']} point differs ({obs} {gd:.3g} vs {g_th[obs]:.3g})")
    if outcome["aligned"]:
        rule = f" on {a_th['rule']}, the default rule's solve not converging" if a_th.get("rule") else ""
        return {"map": "aligned", "reason": f"{why_not_global}; GD stays in the basin its {row['init']} start set, "
                f"which the aligned-prox SE follows ({obs} {a_th[obs]:.3g}{rule}, agrees)"}
    why_not_aligned = (_no_point(row, "aligned", ends.get("aligned")) if outcome["aligned"] is None
                       else f"the aligned-prox point differs too ({obs} {a_th[obs]:.3g})")
    return {"map": "neither", "reason": f"{why_not_global}; {why_not_aligned}"}


def maps_followed(rows: Sequence[dict[str, Any]], theory: dict[str, Any]) -> list[dict[str, str]]:
    """:func:`map_followed` of each of a sweep's ``rows`` (in their order, ``theory`` the summary's), where a row of
    no map (``"neither"``) whose branch has no global-prox point there and whose GD ends at the minima GD reaches
    from another start at that alpha (:func:`same_minima`) says so, and takes that row's map where it has one (from
    the positional start of a model without a positional point GD leaves the agnostic point, where that is unstable,
    for the semantic point the semantic start reaches); a row with a map is preferred, then a start other than the
    random one."""
    own = [map_followed(r, branch_ends(theory, r["branch"])) for r in rows]
    out = []
    for r, m in zip(rows, own):
        if m["map"] == "neither" and agrees(r, _COMPARED.get(r["branch"], _COMPARED["semantic"])[0]) is None:
            peers = sorted(((p, pm) for p, pm in zip(rows, own) if p["init"] != r["init"] and p["alpha"] == r["alpha"]
                            and same_minima(r, p)),
                           key=lambda ppm: (ppm[1]["map"] in NO_MAP, ppm[0]["init"] == "random"))
            if peers:
                p, pm = peers[0]
                said = (f"{m['reason']}; GD from the {r['init']} start ends at the minima the {p['init']} start "
                        f"reaches ({same_minima(r, p)})")
                m = ({"map": m["map"], "reason": said} if pm["map"] in NO_MAP else
                     {"map": pm["map"], "reason": f"{said}, which follow the {pm['map']}-prox SE's {p['branch']} "
                                                  f"point: {pm['reason']}"})
        out.append(m)
    return out


#: The verdicts of :func:`map_followed` that name no map.
NO_MAP = ("neither", "not converged")


#: Two rows' means and spreads over the seeds of one observable are one set of minima's when each differs by at most
#: this times the larger mean (plus :data:`SAME_MINIMA_ATOL`): the same seeds' runs ending at the same minima agree to
#: their gradient tolerance, far below this.
SAME_MINIMA_RTOL = 1e-3
SAME_MINIMA_ATOL = 1e-12


def same_minima(row: dict[str, Any], other: dict[str, Any]) -> str:
    """Where every run of both aggregated rows converged and their means and spreads over the seeds of abs_m,
    abs_theta, eps_g and e_t agree within SAME_MINIMA_RTOL of the mean (the runs of both starts, seed for seed on the
    same data, ending at the same minima): the comparison of the means in words; else ""."""
    if not (all_runs_converged(row) and all_runs_converged(other)):
        return ""
    for obs in ("abs_m", "abs_theta", "eps_g", "e_t"):
        scale = SAME_MINIMA_RTOL * max(abs(row[f"{obs}_mean"]), abs(other[f"{obs}_mean"])) + SAME_MINIMA_ATOL
        if not all(abs(row[key] - other[key]) <= scale or not (math.isfinite(row[key]) or math.isfinite(other[key]))
                   for key in (f"{obs}_mean", f"{obs}_std")):  # two single runs: no spreads to compare
            return ""
    return ", ".join(f"{obs} {row[f'{obs}_mean']:.4g} vs {other[f'{obs}_mean']:.4g}" for obs in ("abs_m", "abs_theta",
                                                                                                   "eps_g"))
