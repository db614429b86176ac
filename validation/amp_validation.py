"""AMP at finite d against the Bayes-optimal state evolution, and ERM against the Bayes-optimal test error: the
``validate`` report's Bayes-optimal section (docs/bayes-optimal.md, "In ``validate``").

AMP (``simulate --algorithm amp``) at every (alpha, d, seed) of an :class:`AmpPlan`; per (alpha, d) the mean of
|theta| over the seeds, its standard error se and ``z = (mean - q0) / se`` against the state evolution's q0 (the
uninformative branch); per alpha the finite-size fit ``a + b / d^p`` of the power the data choose
(:func:`attnphase.validation.finite_size.chosen_fit`) and the verdict (:func:`amp_trends`).  ERM's global minimum (the lower
e_t of the global-prox records) against the BO eps_g at every alpha of the validation's theory curves.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from attnphase.numerics.se.bayes import BayesModel, bayes_eps_g, solve_bayes
from attnphase.theory.params import ModelParams

from .agreement import mean_std
from .amp import AMP_TOL, AmpConfig
from .amp_run import AmpSpec, run_amp
from .data import n_samples
from .finite_size import chosen_fit

#: Standard errors within which AMP agrees with the state evolution.
AGREE_Z = 2.0

#: The accuracy of a run's |theta| (AMP stops at a step <= 1e-7): z's standard error is floored at this, so that
#: where every run recovers the teacher z does not measure the stopping residue.
THETA_RESOLUTION = 1e-6

#: (f, d): the full plan also runs dimension d at the alpha a fraction f of the way from alpha_WR to 1/L (:func:`amp_plan`).
LARGE_D_AT = ((0.7, 8000),)

#: The cost model of one AMP run (:func:`amp_run_seconds`): CPU seconds per iteration and per entry n L d of the
#: token matrix (one torch thread), the iterations a run's data and state evolution cost in the same unit, and the
#: mean iterations of a run between alpha_WR and 1/L and above 1/L (measured: docs/bayes-optimal.md, "In validate").
AMP_SECONDS_PER_ENTRY_ITERATION = 1.0e-9
AMP_SETUP_ITERATIONS = 20
#: Seeds per (alpha, d) of the AMP runs (quick: :data:`AMP_QUICK_SEEDS`).
AMP_SEEDS = 8
AMP_QUICK_SEEDS = 4
AMP_MEAN_ITERATIONS_INSIDE = 620
AMP_MEAN_ITERATIONS_ABOVE = 290


@dataclass(frozen=True)
class AmpPlan:
    """The AMP runs of ``validate``: every (alpha, d, seed) with one AMP configuration, on one model; ``extra``:
    (alpha, d) pairs run beyond ``ds`` at that alpha only (a larger d where the finite-size trend is slow)."""

    params: ModelParams
    alphas: tuple[float, ...]
    ds: tuple[int, ...]
    seeds: tuple[int, ...]
    amp: AmpConfig = field(default_factory=lambda: AmpConfig(max_iter=1000))
    device: str = "cpu"
    extra: tuple[tuple[float, int], ...] = ()
    dtype: str = "float64"

    def ds_at(self, alpha: float) -> tuple[int, ...]:
        """The dimensions run at ``alpha``: ``ds`` and the ``extra`` ones of that alpha, ascending."""
        return tuple(sorted(set(self.ds) | {d for a, d in self.extra if a == alpha}))

    def to_dict(self) -> dict[str, Any]:
        return {"alphas": list(self.alphas), "ds": list(self.ds), "seeds": list(self.seeds), "max_iter": self.amp.max_iter,
                "tol": self.amp.tol, "damping": self.amp.damping, "adaptive": self.amp.adaptive,
                "init_scale": self.amp.init_scale, "start": self.amp.start, "extra": [list(e) for e in self.extra]}


def amp_plan(params: ModelParams, quick: bool = False, seeds: int | None = None, device: str = "cpu",
             d: int | None = None) -> AmpPlan:
    """The default plan: five alphas between alpha_WR and 1/L (where AMP's overlap is neither 0 nor 1) and one above
    1/L, at d = 500, 1000, 2000, 4000 (and 8000 at :data:`LARGE_D_AT`: the finite-size trend is slow near alpha_WR,
    docs/bayes-optimal.md), 8 seeds (quick: d = 200, 400, 4 seeds, two alphas).  Omega is set to 0.3 where the
    model's is 1 (the fields are revealed for omega < 1; AMP does not depend on omega otherwise).  ``seeds``: that
    many instead; ``d``: a dimension that joins the series at every alpha."""
    p = params if params.omega < 1.0 else params.replace(omega=0.3)
    L = p.L
    wr = 1.0 / (L * (L + 1))
    inside = (0.35, 0.65) if quick else (0.25, 0.4, 0.55, 0.7, 0.85)
    alphas = tuple(round(wr + f * (1.0 / L - wr), 4) for f in inside) + (() if quick else (round(1.2 / L, 4),))
    ds = (200, 400) if quick else (500, 1000, 2000, 4000)
    ds = ds if d is None else tuple(sorted(set(ds) | {int(d)}))
    n = seeds if seeds is not None else (AMP_QUICK_SEEDS if quick else AMP_SEEDS)
    extra = () if quick else tuple((round(wr + f * (1.0 / L - wr), 4), d) for f, d in LARGE_D_AT)
    return AmpPlan(p, alphas, ds, tuple(range(n)), device=device, extra=extra)


def validation_amp_plan(plan: Any, device: str = "cpu") -> AmpPlan:
    """The AMP runs of ``validate``'s report for its plan (a
    :class:`~attnphase.validation.campaign_plan.ValidationPlan`): :func:`amp_plan` with ``--d`` joining the series
    and ``--seeds`` seeds where more than the default (as the finite-size series takes them: at least
    :data:`AMP_SEEDS`, quick :data:`AMP_QUICK_SEEDS`), in the plan's dtype."""
    least = AMP_QUICK_SEEDS if plan.quick else AMP_SEEDS
    amp = amp_plan(plan.params, quick=plan.quick, seeds=max(least, len(plan.seeds)), device=device, d=plan.d)
    # the campaign's --dtype, with that dtype's tolerance (as simulate --algorithm amp takes it)
    return replace(amp, dtype=plan.dtype, amp=replace(amp.amp, tol=AMP_TOL.get(plan.dtype, AMP_TOL["float32"])))


def amp_run_seconds(plan: AmpPlan) -> list[float]:
    """Estimated CPU seconds of every run of ``plan`` (alpha-major, as :func:`run_amp_plan` runs them):
    AMP_SECONDS_PER_ENTRY_ITERATION x n L d x (iterations + AMP_SETUP_ITERATIONS), n = round(alpha d), with the
    measured mean iterations inside (alpha_WR, 1/L) or above 1/L, at most the plan's budget."""
    L = plan.params.L
    out = []
    for alpha in plan.alphas:
        its = AMP_MEAN_ITERATIONS_ABOVE if alpha > 1.0 / L else AMP_MEAN_ITERATIONS_INSIDE
        its = min(its, plan.amp.max_iter)
        for d in plan.ds_at(alpha):
            entries = n_samples(alpha, d) * L * d
            out += [AMP_SECONDS_PER_ENTRY_ITERATION * entries * (its + AMP_SETUP_ITERATIONS)] * len(plan.seeds)
    return out


def amp_rows(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (alpha, d): n, mean |theta|, std, se, the state evolution's q0, z = (mean - q0) / max(se,
    THETA_RESOLUTION), runs converged (module doc)."""
    rows = []
    for key in sorted({(r["alpha"], r["d"]) for r in runs}):
        group = [r for r in runs if (r["alpha"], r["d"]) == key]
        mean, std = mean_std([abs(r["theta"]) for r in group])
        se = std / math.sqrt(len(group))
        q0 = group[0]["se_q0"]
        z = (mean - q0) / max(se, THETA_RESOLUTION) if math.isfinite(se) else (0.0 if mean == q0 else math.inf)
        rows.append({"alpha": key[0], "d": key[1], "n": len(group), "mean_abs_theta": mean, "std": std, "se": se,
                     "se_q0": q0, "z": z, "converged": sum(bool(r["converged"]) for r in group),
                     "near_zero": sum(abs(r["theta"]) < 0.25 * q0 for r in group)})
    return rows


def amp_trends(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per alpha: the finite-size fit of the form the data choose (:func:`chosen_fit`; from 3 dimensions on: through two
    every two-parameter form passes exactly, and the choice is round-off) and the verdict: agrees when |z| <= AGREE_Z
    at the largest d, or when the fit moves the mean towards q0 as d grows and its d -> infinity value is within
    AGREE_Z of its standard errors of q0; an agreement where not every run at the largest d converged says how many
    did and how many ended near 0 (unconverged AMP runs sit still at their data set's point, docs/bayes-optimal.md,
    but a wide spread of them can pass the test); where half the runs or more ended near 0 it is "inconclusive"
    (they sit on AMP's noise fixed point: their spread, not the state evolution, passes the test)."""
    out = []
    for alpha in sorted({r["alpha"] for r in rows}):
        rs = sorted((r for r in rows if r["alpha"] == alpha), key=lambda r: r["d"])
        last = rs[-1]
        fit = None
        if len(rs) >= 3 and all(math.isfinite(r["std"]) for r in rs):
            fit = chosen_fit([r["d"] for r in rs], [r["mean_abs_theta"] for r in rs],
                             [r["std"] for r in rs], [r["n"] for r in rs])
        q0 = last["se_q0"]
        at_d = abs(last["z"]) <= AGREE_Z
        # the trend explains the gap only where it moves the mean towards q0 as d grows (mean(d) -> a)
        toward = fit is not None and (fit["a"] - last["mean_abs_theta"]) * (q0 - last["mean_abs_theta"]) > 0
        trend = toward and fit["a_se"] > 0 and abs(fit["a"] - q0) <= AGREE_Z * fit["a_se"]
        verdict = (f"agrees at d = {last['d']}" if at_d else
                   "agrees after the finite-size trend" if trend else "disagrees")
        if verdict.startswith("agrees") and 2 * last["near_zero"] >= last["n"]:  # an agreement by the spread alone
            verdict = (f"inconclusive at d = {last['d']}: {last['near_zero']} of {last['n']} runs ended near 0 (AMP's "
                       f"noise fixed point), {last['converged']} converged; their spread passes |z| <= {AGREE_Z:g}")
        elif verdict.startswith("agrees") and last["converged"] < last["n"]:  # said, not hidden in the table
            verdict += f" ({last['converged']} of {last['n']} runs converged, {last['near_zero']} near 0)"
        out.append({"alpha": alpha, "se_q0": q0, "d_max": last["d"], "z_at_d_max": last["z"],
                    **{f"fit_{k}": None if fit is None else fit[k] for k in ("a", "b", "a_se", "form", "chi2",
                                                                              "chi2_other")}, "verdict": verdict})
    return out


def run_amp_plan(plan: AmpPlan, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every run of ``plan`` (in this process) and its rows and trends;
    ``seconds`` wall, ``cpu_seconds``."""
    t0, c0 = time.perf_counter(), time.process_time()
    runs = []
    for alpha in plan.alphas:
        for d in plan.ds_at(alpha):
            for s in plan.seeds:
                r = run_amp(AmpSpec(d=d, alpha=alpha, seed=s, params=plan.params, amp=plan.amp, device=plan.device,
                                   dtype=plan.dtype))
                runs.append({"alpha": alpha, "d": d, "seed": s, "theta": r.theta, "q": r.q, "iterations": r.iterations,
                             "converged": r.converged, "status": r.status, "se_q0": r.se_q0, "seconds": r.seconds})
            if progress is not None:
                progress(f"AMP: alpha = {alpha:g}, d = {d}: {len(plan.seeds)} runs")
    rows = amp_rows(runs)
    return {"plan": plan.to_dict(), "runs": runs, "rows": rows, "trends": amp_trends(rows),
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0}


def erm_against_bayes(theory: dict[str, Any], params: ModelParams) -> dict[str, Any]:
    """ERM's global minimum (the validation theory's global-prox curves, lower e_t) against the BO eps_g at every
    alpha of the curves: the excess eps_g(ERM) - eps_g(BO) in units of eps_lin and relative to eps_g(BO);
    ``closest``: the row of the smallest excess in units of eps_lin."""
    model = BayesModel.of(params)
    omega, lin = float(theory["omega"]), float(theory["eps_lin"])
    recs: dict[float, list[dict]] = {}
    for key, curve in theory["curves"].items():
        branch, prox = key.split("/")
        if prox != "global":
            continue
        for r in curve["records"]:
            if r.get("converged") and r.get("branch") == branch:
                recs.setdefault(float(r["alpha"]), []).append(r)
    rows = []
    for alpha in sorted(recs):
        best = min(recs[alpha], key=lambda r: r["e_t"])
        bo = bayes_eps_g(model, omega, solve_bayes(model, alpha, "informative").q0)
        excess = best["eps_g"] - bo
        rows.append({"alpha": alpha, "erm_branch": best["branch"], "erm_eps_g": best["eps_g"], "bo_eps_g": bo,
                     "excess_over_eps_lin": excess / lin, "relative_excess": excess / bo if bo > 0 else None})
    closest = min(rows, key=lambda r: r["excess_over_eps_lin"]) if rows else None
    return {"omega": omega, "eps_lin": lin, "rows": rows, "closest": closest,
            "below_bo": [r["alpha"] for r in rows if r["excess_over_eps_lin"] < 0]}


def markdown_lines(section: dict[str, Any]) -> list[str]:
    """The report's section: AMP against the BO state evolution, then ERM against BO (or why it was not run)."""
    if "skipped" in section:
        return ["", "## The Bayes-optimal estimator: AMP and ERM against it", "",
                f"Not run for this model: {section['skipped']}."]
    amp, erm = section["amp"], section["erm"]
    plan = amp["plan"]
    lines = ["", "## The Bayes-optimal estimator: AMP and ERM against it", "",
             f"AMP (`simulate --algorithm amp`: GAMP on the same data generator, damping {plan['damping']}, at most "
             f"{plan['max_iter']} iterations, tolerance {plan['tol']:g}) at d = {', '.join(map(str, plan['ds']))}"
             + "".join(f" (and {d} at alpha = {a:.4g})" for a, d in plan.get("extra", [])) + ", "
             f"{len(plan['seeds'])} seeds per point ({len(amp['runs'])} runs, {amp['seconds']:.0f} s wall, "
             f"{amp['cpu_seconds']:.0f} s CPU), against the Bayes-optimal state evolution's q0 at the same alpha. "
             f"mean |theta| +- its standard error; z = (mean - q0) / se, se floored at {THETA_RESOLUTION:g} (the "
             f"accuracy of a run's |theta| at the stopping rule's tolerance); a point agrees when |z| <= {AGREE_Z:g} at "
             "the largest d or when the finite-size fit -- a + b/d or a + b/sqrt(d), whichever has the smaller weighted "
             "chi^2, from 3 dimensions on ('-': fewer) -- puts its d -> infinity value within 2 of its standard "
             "errors of q0. 'near 0': runs that ended "
             "at |theta| < q0 / 4.", "",
             "| alpha | d | mean abs(theta) | SE q0 | z | converged | near 0 |", "|---|---|---|---|---|---|---|"]
    for r in amp["rows"]:
        lines.append(f"| {r['alpha']:.4g} | {r['d']} | {r['mean_abs_theta']:.4f} +- {r['se']:.4f} | {r['se_q0']:.4f} | "
                     f"{r['z']:+.2f} | {r['converged']} of {r['n']} | {r['near_zero']} |")
    lines += ["", "| alpha | SE q0 | fit d -> inf | form (chi^2; the other's) | verdict |", "|---|---|---|---|---|"]
    for t in amp["trends"]:
        fit = "-" if t["fit_a"] is None else f"{t['fit_a']:.4f} +- {t['fit_a_se']:.4f}"
        form = "-" if t.get("fit_form") is None else f"{t['fit_form']} ({t['fit_chi2']:.2g}; {t['fit_chi2_other']:.2g})"
        lines.append(f"| {t['alpha']:.4g} | {t['se_q0']:.4f} | {fit} | {form} | {t['verdict']} |")
    bad = [t for t in amp["trends"] if t["verdict"] == "disagrees"]
    if bad:
        last = {(r["alpha"], r["d"]): r for r in amp["rows"]}
        at = "; ".join(f"alpha = {a:.4g}: {r['near_zero']} of {r['n']} runs near 0, {r['converged']} converged"
                       for a, r in ((t["alpha"], last[(t["alpha"], t["d_max"])]) for t in bad))
        lines += ["", f"AMP does not track the state evolution within these d at {len(bad)} alpha(s) ({at}, at "
                  f"d = {bad[0]['d_max']}). The causes measured (docs/bayes-optimal.md, 'AMP at finite d'): from its "
                  "random start AMP's state evolution passes a noise fixed point (theta = 0, q > 0) that runs at these "
                  "d do not leave, and the data sets' own fixed points scatter widely where the state evolution's "
                  "slope is near 1; both fade as d grows."]
    c = erm["closest"]
    lines += ["", f"ERM's global minimum against the Bayes-optimal test error at omega = {erm['omega']:g} (the "
              f"validation's theory curves; excess eps_g(ERM) - eps_g(BO) in units of eps_lin = {erm['eps_lin']:.5g}):", "",
              "| alpha | ERM branch | eps_g ERM | eps_g BO | excess / eps_lin | excess / eps_g BO |", "|---|---|---|---|---|---|"]
    for r in erm["rows"]:
        rel = "-" if r["relative_excess"] is None else f"{100 * r['relative_excess']:.0f} %"
        lines.append(f"| {r['alpha']:.4g} | {r['erm_branch']} | {r['erm_eps_g']:.5g} | {r['bo_eps_g']:.5g} | "
                     f"{100 * r['excess_over_eps_lin']:.1f} % | {rel} |")
    if c is not None:
        span = f"{erm['rows'][0]['alpha']:.4g} <= alpha <= {erm['rows'][-1]['alpha']:.4g}"
        lines += ["", f"Where ERM's global minimum is within X % of the Bayes-optimal error (X in units of eps_lin): "
                  f"on this grid ({span}) nowhere for X below {100 * c['excess_over_eps_lin']:.1f}. "
                  f"ERM's global minimum comes closest to the Bayes-optimal error at alpha = {c['alpha']:.4g}: "
                  f"{100 * c['excess_over_eps_lin']:.1f} % of eps_lin above it"
                  + (f" ({100 * c['relative_excess']:.0f} % of the BO error)." if c["relative_excess"] is not None else
                     " (the BO error is 0 there: perfect recovery).")
                  + ("" if not erm["below_bo"] else f" Below the BO error at alpha = {erm['below_bo']}: impossible for a correct bound, the numerics need checking.")]
    return lines

