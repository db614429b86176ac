"""The validation report's Bayes-optimal section: AMP's overlaps against the state evolution (per (alpha, d), the
finite-size trend, the verdict) and ERM's global minimum against the Bayes-optimal test error."""

from __future__ import annotations

import math

import pytest

from attnphase.numerics.se.bayes import BayesModel, bayes_eps_g, solve_bayes
from attnphase.theory.params import ModelParams
from attnphase.validation.amp_validation import (M_RESOLUTION, AmpPlan, amp_plan, amp_rows, amp_run_seconds, amp_trends,
                                                 erm_against_bayes, markdown_lines, run_amp_plan)
from attnphase.validation.campaign import extrapolate


def _runs(alpha, q0, means_by_d, spread=0.02, n=8):
    runs = []
    for d, mean in means_by_d.items():
        for s in range(n):
            m = mean + spread * (s - (n - 1) / 2) / ((n - 1) / 2)
            runs.append({"alpha": alpha, "d": d, "seed": s, "m": (-1) ** s * m, "q": m, "converged": True,
                         "se_q0": q0})
    return runs


def test_the_verdict_uses_the_largest_d_then_the_finite_size_trend():
    q0 = 0.5
    at_d = _runs(0.3, q0, {1000: 0.49, 2000: 0.499})
    trend = _runs(0.4, q0, {500: 0.5 - 1.0 / math.sqrt(500), 1000: 0.5 - 1.0 / math.sqrt(1000),
                            2000: 0.5 - 1.0 / math.sqrt(2000)})  # 2.2e-2 low at d = 2000, exactly 1/sqrt(d)
    off = _runs(0.45, q0, {500: 0.40, 1000: 0.40, 2000: 0.40})
    rows = amp_rows(at_d + trend + off)
    assert {(r["alpha"], r["d"]) for r in rows} == {(0.3, 1000), (0.3, 2000), (0.4, 500), (0.4, 1000), (0.4, 2000),
                                                    (0.45, 500), (0.45, 1000), (0.45, 2000)}
    r = next(r for r in rows if (r["alpha"], r["d"]) == (0.3, 2000))
    assert r["mean_abs_m"] == pytest.approx(0.499) and r["n"] == 8 and r["se"] > 0  # |m|: either sign of Q*
    verdicts = {t["alpha"]: t for t in amp_trends(rows, extrapolate)}
    assert verdicts[0.3]["verdict"] == "agrees at d = 2000"
    assert verdicts[0.4]["verdict"] == "agrees after the finite-size trend"
    assert verdicts[0.4]["fit_a"] == pytest.approx(q0, abs=1e-9)
    assert verdicts[0.45]["verdict"] == "disagrees"


def test_a_trend_away_from_the_state_evolution_is_no_agreement():
    """Means that fall as d grows (b > 0 in a + b / sqrt(d)) while below q0: a wide fit bar may reach q0, but the
    trend moves away from it, so the gap is not finite-size."""
    q0 = 0.5
    away = _runs(0.35, q0, {500: 0.47, 1000: 0.42, 2000: 0.34}, spread=0.3)
    t = amp_trends(amp_rows(away), extrapolate)[0]
    assert t["z_at_d_max"] < -2 and t["fit_b"] > 0 and abs(t["fit_a"] - q0) <= 2 * t["fit_a_se"]
    assert t["verdict"] == "disagrees"


def _theory(records_by_branch, omega=0.3):
    curves = {f"{br}/global": {"records": [dict(r, branch=br, converged=True) for r in recs]}
              for br, recs in records_by_branch.items()}
    return {"omega": omega, "eps_lin": 2e-3, "curves": curves}


def test_erm_against_bayes_takes_the_global_minimum_and_finds_the_closest_alpha():
    params = ModelParams(omega=0.3)
    model = BayesModel.of(params)
    bo = {a: bayes_eps_g(model, 0.3, solve_bayes(model, a, "informative").q0) for a in (0.3, 2.0)}
    theory = _theory({"positional": [{"alpha": 0.3, "eps_g": 3.4e-3, "e_t": 1.0}, {"alpha": 2.0, "eps_g": 3.5e-3, "e_t": 2.0}],
                      "semantic": [{"alpha": 2.0, "eps_g": 1.4e-3, "e_t": 1.5}]})
    out = erm_against_bayes(theory, params)
    rows = {r["alpha"]: r for r in out["rows"]}
    assert rows[2.0]["erm_branch"] == "semantic" and rows[2.0]["bo_eps_g"] == 0.0 and rows[2.0]["relative_excess"] is None
    assert rows[0.3]["bo_eps_g"] == pytest.approx(bo[0.3]) and 0 < rows[0.3]["bo_eps_g"] < 2e-3
    assert out["closest"]["alpha"] == 2.0 and out["closest"]["excess_over_eps_lin"] == pytest.approx(0.7)
    assert out["below_bo"] == []
    bad = erm_against_bayes(_theory({"positional": [{"alpha": 0.3, "eps_g": 1e-4, "e_t": 1.0}]}), params)
    assert bad["below_bo"] == [0.3]


def test_a_small_plan_runs_and_renders():
    plan = AmpPlan(ModelParams(omega=0.3), alphas=(0.4,), ds=(200,), seeds=(0, 1, 2), extra=((0.4, 300), (0.5, 400)))
    amp = run_amp_plan(plan, extrapolate)
    assert len(amp["runs"]) == 6 and [r["d"] for r in amp["rows"]] == [200, 300]  # 400 belongs to another alpha
    assert all(0 < r["se_q0"] < 1 for r in amp["rows"])
    erm = erm_against_bayes(_theory({"positional": [{"alpha": 0.4, "eps_g": 3.3e-3, "e_t": 1.0}]}), plan.params)
    text = "\n".join(markdown_lines({"amp": amp, "erm": erm}))
    assert "## The Bayes-optimal estimator" in text and "| 0.4 | 300 |" in text and "comes closest" in text
    x = 100 * erm["closest"]["excess_over_eps_lin"]
    assert f"within X % of the Bayes-optimal error (X in units of eps_lin): on this grid (0.4 <= alpha <= 0.4) nowhere for X below {x:.1f}." in text
    assert "at d = 200 (and 300 at alpha = 0.4) (and 400 at alpha = 0.5)," in text
    assert "se floored at 1e-06" in text and "when |z| <= 2 at the largest d" in text


def test_the_amp_cost_model_counts_every_run_and_grows_with_n_L_d():
    plan = amp_plan(ModelParams())
    est = amp_run_seconds(plan)
    assert len(est) == sum(len(plan.ds_at(a)) for a in plan.alphas) * len(plan.seeds) and all(t > 0 for t in est)
    assert plan.extra == ((0.4, 8000),) and plan.ds_at(0.4) == (500, 1000, 2000, 4000, 8000)
    assert plan.ds_at(0.35) == plan.ds == (500, 1000, 2000, 4000)
    without = AmpPlan(plan.params, plan.alphas, plan.ds, plan.seeds)
    big = AmpPlan(plan.params, alphas=(0.4,), ds=(8000,), seeds=plan.seeds)
    assert sum(est) == pytest.approx(sum(amp_run_seconds(without)) + sum(amp_run_seconds(big)))
    small = amp_run_seconds(AmpPlan(plan.params, alphas=(0.3,), ds=(1000,), seeds=(0,)))[0]
    large = amp_run_seconds(AmpPlan(plan.params, alphas=(0.3,), ds=(2000,), seeds=(0,)))[0]
    assert large == pytest.approx(4 * small)  # n L d entries: n = alpha d
    quick = sum(amp_run_seconds(amp_plan(ModelParams(), quick=True)))
    assert quick < sum(est) / 20


def test_the_report_says_where_amp_disagrees():
    runs = _runs(0.25, 0.14, {1000: 0.03, 2000: 0.02}, spread=0.01)
    rows = amp_rows(runs)
    amp = {"plan": {"damping": 0.0, "max_iter": 1000, "tol": 1e-7, "ds": [1000, 2000], "seeds": list(range(8))},
           "runs": runs, "rows": rows, "trends": amp_trends(rows, extrapolate), "seconds": 1.0, "cpu_seconds": 1.0}
    erm = erm_against_bayes(_theory({"positional": [{"alpha": 0.4, "eps_g": 3.3e-3, "e_t": 1.0}]}), ModelParams())
    text = "\n".join(markdown_lines({"amp": amp, "erm": erm}))
    assert amp["trends"][0]["verdict"] == "disagrees"
    assert "does not track the state evolution" in text and "alpha = 0.25: 8 of 8 runs near 0, 8 converged" in text


@pytest.mark.parametrize("power, form", [(1.0, "a + b/d"), (0.5, "a + b/sqrt(d)")])
def test_the_data_choose_the_finite_size_form(power, form):
    """Means exactly a + b / d^power over d = 500 ... 4000: the fit of that form has chi^2 ~ 0 and is chosen, with
    a recovered; the other form's chi^2 is larger."""
    q0 = 0.6
    means = {d: q0 - 3.0 / d ** power for d in (500, 1000, 2000, 4000)}
    t = amp_trends(amp_rows(_runs(0.4, q0, means, spread=0.01)), extrapolate)[0]
    assert t["fit_form"] == form and t["fit_a"] == pytest.approx(q0, abs=1e-9)
    assert t["fit_chi2"] < 1e-12 < t["fit_chi2_other"]


def test_perfect_recovery_is_judged_to_the_stopping_accuracy_not_to_its_residue():
    """Every run at |m| = 1 - 2e-8 +- 1e-9 (converged at perfect recovery: the residue of the stopping rule) agrees
    with q0 = 1, though the mean is 20 of its standard errors below; a real gap of 1e-3 with the same tiny spread
    still disagrees, and a spread above the floor keeps the plain z."""
    exact = amp_rows(_runs(0.6, 1.0, {2000: 1 - 2e-8, 4000: 1 - 2e-8}, spread=1e-9))
    assert exact[-1]["se"] < 1e-9 and exact[-1]["z"] == pytest.approx(-2e-8 / M_RESOLUTION)
    assert amp_trends(exact, extrapolate)[0]["verdict"] == "agrees at d = 4000"
    gap = amp_rows(_runs(0.6, 1.0, {2000: 1 - 1e-3, 4000: 1 - 1e-3}, spread=1e-9))
    assert amp_trends(gap, extrapolate)[0]["verdict"] == "disagrees"
    wide = amp_rows(_runs(0.4, 0.5, {2000: 0.45}, spread=0.05))[0]
    assert wide["z"] == pytest.approx((wide["mean_abs_m"] - 0.5) / wide["se"])
