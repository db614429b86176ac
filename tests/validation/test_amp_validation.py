"""The validation report's Bayes-optimal section: AMP's overlaps against the state evolution (per (alpha, d), the
finite-size trend, the verdict) and ERM's global minimum against the Bayes-optimal test error."""

from __future__ import annotations

import math

import pytest

from attnphase.numerics.se.bayes import BayesModel, bayes_eps_g, solve_bayes
from attnphase.theory.params import ModelParams
from attnphase.validation.amp_validation import (THETA_RESOLUTION, AmpPlan, amp_plan, amp_rows, amp_run_seconds,
                                                 amp_trends, erm_against_bayes, markdown_lines, run_amp_plan)


def _runs(alpha, q0, means_by_d, spread=0.02, n=8):
    runs = []
    for d, mean in means_by_d.items():
        for s in range(n):
            m = mean + spread * (s - (n - 1) / 2) / ((n - 1) / 2)
            runs.append({"alpha": alpha, "d": d, "seed": s, "theta": (-1) ** s * m, "q": m, "converged": True,
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
    assert r["mean_abs_theta"] == pytest.approx(0.499) and r["n"] == 8 and r["se"] > 0  # |theta|: either sign of Q*
    verdicts = {t["alpha"]: t for t in amp_trends(rows)}
    assert verdicts[0.3]["verdict"] == "agrees at d = 2000"
    assert verdicts[0.4]["verdict"] == "agrees after the finite-size trend"
    assert verdicts[0.4]["fit_a"] == pytest.approx(q0, abs=1e-9)
    assert verdicts[0.45]["verdict"] == "disagrees"


def test_an_agreement_of_unconverged_runs_says_so():
    """An agreement where not every run converged says how many did and how many ended near 0; where all converged it
    is unchanged."""
    runs = _runs(0.3, 0.221, {400: 0.15}, spread=0.14, n=4)
    for r in runs:
        r["converged"] = False
    t = amp_trends(amp_rows(runs))[0]
    assert t["verdict"] == "agrees at d = 400 (0 of 4 runs converged, 1 near 0)", t
    assert amp_trends(amp_rows(_runs(0.3, 0.221, {400: 0.22})))[0]["verdict"] == "agrees at d = 400"


def test_runs_mostly_near_0_are_no_agreement():
    """``validate --quick --seeds 1``: at alpha = 0.2833, d = 400 no run converged and 3 of 4 ended near 0 (mean
    0.1065 +- 0.0719 against q0 0.2210): the spread passed |z| <= 2 and the verdict read "agrees at d = 400"."""
    runs = [{"alpha": 0.2833, "d": 400, "seed": s, "theta": t, "q": abs(t), "converged": False, "se_q0": 0.221}
            for s, t in enumerate((0.01, -0.02, 0.03, 0.366))]
    row = amp_rows(runs)[0]
    assert row["near_zero"] == 3 and abs(row["z"]) <= 2
    t = amp_trends([row])[0]
    assert t["verdict"].startswith("inconclusive at d = 400: 3 of 4 runs ended near 0"), t


def test_a_trend_away_from_the_state_evolution_is_no_agreement():
    """Means that fall as d grows (b > 0 in a + b / sqrt(d)) while below q0: a wide fit bar may reach q0, but the
    trend moves away from it, so the gap is not finite-size."""
    q0 = 0.5
    away = _runs(0.35, q0, {500: 0.47, 1000: 0.42, 2000: 0.34}, spread=0.3)
    t = amp_trends(amp_rows(away))[0]
    assert t["z_at_d_max"] < -2 and t["fit_b"] > 0 and abs(t["fit_a"] - q0) <= 2 * t["fit_a_se"]
    assert t["verdict"] == "disagrees"


def test_two_dimensions_make_no_finite_size_fit():
    """Through two dimensions both two-parameter forms pass exactly (chi^2 ~ 1e-29 each): `validate --quick`'s AMP
    section (d = 200, 400) chose its form by round-off.  No fit from fewer than 3 dimensions; the verdict is the
    largest d's."""
    t = amp_trends(amp_rows(_runs(0.3, 0.5, {200: 0.40, 400: 0.45})))[0]
    assert t["fit_a"] is None and t["fit_form"] is None and t["verdict"] == "disagrees"


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
    amp = run_amp_plan(plan)
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
           "runs": runs, "rows": rows, "trends": amp_trends(rows), "seconds": 1.0, "cpu_seconds": 1.0}
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
    t = amp_trends(amp_rows(_runs(0.4, q0, means, spread=0.01)))[0]
    assert t["fit_form"] == form and t["fit_a"] == pytest.approx(q0, abs=1e-9)
    assert t["fit_chi2"] < 1e-12 < t["fit_chi2_other"]


def test_perfect_recovery_is_judged_to_the_stopping_accuracy_not_to_its_residue():
    """Every run at |m| = 1 - 2e-8 +- 1e-9 (converged at perfect recovery: the residue of the stopping rule) agrees
    with q0 = 1, though the mean is 20 of its standard errors below; a real gap of 1e-3 with the same tiny spread
    still disagrees, and a spread above the floor keeps the plain z."""
    exact = amp_rows(_runs(0.6, 1.0, {2000: 1 - 2e-8, 4000: 1 - 2e-8}, spread=1e-9))
    assert exact[-1]["se"] < 1e-9 and exact[-1]["z"] == pytest.approx(-2e-8 / THETA_RESOLUTION)
    assert amp_trends(exact)[0]["verdict"] == "agrees at d = 4000"
    gap = amp_rows(_runs(0.6, 1.0, {2000: 1 - 1e-3, 4000: 1 - 1e-3}, spread=1e-9))
    assert amp_trends(gap)[0]["verdict"] == "disagrees"
    wide = amp_rows(_runs(0.4, 0.5, {2000: 0.45}, spread=0.05))[0]
    assert wide["z"] == pytest.approx((wide["mean_abs_theta"] - 0.5) / wide["se"])


def _parse_table(text: str, header: str) -> list[list[str]]:
    """The cells of the markdown table whose header line is ``header`` (up to its first blank line)."""
    lines = text.split(header + "\n", 1)[1].splitlines()[1:]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[:next(
        (i for i, ln in enumerate(lines) if not ln.startswith("|")), len(lines))]]


def _pm(cell: str) -> tuple[float, float]:
    a, b = cell.split("+-")
    return float(a), float(b)


@pytest.mark.usefixtures("one_torch_thread")
def test_validate_writes_the_bayes_optimal_section_into_report_and_summary(tmp_path, monkeypatch):
    """``run_validation`` end to end with the campaign's simulations and theory stood in (a hand-made theory, a few
    d = 12 GD runs; the figures and validation.nc left out: tested elsewhere) and a real AMP plan cut to two seeds: report.md and summary.json both hold the section, every
    per-(alpha, d) row (mean |m| +- se, q0, z, converged), every verdict and the ERM-within-X % sentence, with the
    same numbers in both; the numbers are the runs' (mean |m| recomputed from summary.json's runs, q0 the state
    evolution's at n / d, ERM's eps_g the theory's global minimum, BO's eps_g the informative branch's)."""
    import json
    from dataclasses import replace

    import attnphase.validation.amp_validation as amp_validation
    import attnphase.execution.dataset as dataset
    import attnphase.validation.campaign as campaign
    import attnphase.validation.jobs as jobs
    import attnphase.validation.report as report
    from attnphase.validation.campaign import ValidationPlan, alpha_c_point, delta_et_rows, group_rows
    from attnphase.validation.data import n_samples
    from attnphase.validation.experiments import run_simulation
    from attnphase.validation.reference import BranchCurve, TheoryAtOmega, TheorySettings

    params = ModelParams(omega=0.3)
    plan = ValidationPlan(quick=True, params=params, d=12, alphas=(0.5, 2.0), seeds=(0,), heat_alphas=(0.5,),
                          heat_omegas=(0.3,), heat_seeds=(0,), fss_ds=(12,), fss_seeds=(0,), alphas_small=(),
                          fss_cases=(), n_test=100, theory=TheorySettings())

    def rec(alpha, branch, eps_g, e_t, **kw):
        return {"alpha": alpha, "branch": branch, "q": 0.4, "m": 0.0, "V": 1.0, "theta": 0.0, "eps_g": eps_g,
                "e_t": e_t, "eps_lin": 2e-3, "converged": True, **kw}

    # the global minimum: positional at 0.5 (lower e_t), semantic at 2.0
    sem = tuple(rec(a, "semantic", g, e, theta=0.6) for a, g, e in ((0.5, 2.9e-3, 5e-3), (2.0, 1.4e-3, 3e-3)))
    pos = tuple(rec(a, "positional", g, e, m=0.25) for a, g, e in ((0.5, 3.2e-3, 4e-3), (2.0, 3.5e-3, 4e-3)))
    theory = TheoryAtOmega(0.3, 2e-3, {"global": 1.25}, {"global": 1.5}, {"global": ()},
                           {("semantic", "global"): BranchCurve("semantic", "global", sem),
                            ("positional", "global"): BranchCurve("positional", "global", pos)}, 1.0, 1.0)
    runs = [run_simulation(s) for s in plan.sweep_specs() if s.init != "random"]

    def fake_campaign(plan, out, progress=True, **kw):
        rows = group_rows(runs, {0.3: theory})
        return {"plan": plan.to_dict(), "wall_seconds": 1.0, "simulation_seconds": 1.0, "simulation_cpu_seconds": 1.0,
                "theory_seconds": 1.0, "theory_cpu_seconds": 1.0, "theory_jobs_cached": 0, "tasks": {},
                "code_version": "test", "all_converged": True, "n_simulations": len(runs), "theory": theory.to_dict(),
                "heat_theory": [theory.to_dict()], "alpha_c_curve": [alpha_c_point(theory)], "sweep": rows,
                "delta_e_t": delta_et_rows(runs, {0.3: theory}), "heat": delta_et_rows(runs, {}),
                "finite_size": [], "finite_size_fits": [], "runs": [r.to_dict() for r in runs]}

    asked = []
    real_plan = amp_validation.amp_plan

    def two_seeds(p, quick=False, seeds=None, device="cpu", d=None):
        asked.append((p, quick, d))
        return replace(real_plan(p, quick=quick, device=device, d=d), seeds=(0, 1))

    monkeypatch.setattr(campaign, "run_campaign", fake_campaign)
    monkeypatch.setattr(amp_validation, "amp_plan", two_seeds)
    for name in ("plot_alpha_sweep", "plot_heatmap", "plot_finite_size"):  # the figures: tests/validation/test_validation_report.py
        monkeypatch.setattr(report, name, lambda summary, path: None)
    monkeypatch.setattr(dataset, "write_netcdf", lambda ds, path: None)
    monkeypatch.setattr(jobs, "validation_dataset", lambda results, theories, attrs: None)
    campaign.run_validation(plan, tmp_path, progress=False)
    assert asked == [(params, True, 12)]  # the validation's model, plan size and d reach the AMP plan

    text = (tmp_path / "report.md").read_text()
    bo = json.loads((tmp_path / "summary.json").read_text())["bayes_optimal"]
    assert "## The Bayes-optimal estimator: AMP and ERM against it" in text
    amp, erm = bo["amp"], bo["erm"]
    quick = real_plan(params, quick=True, d=12)
    assert quick.ds == (12, 200, 400) and len(amp["runs"]) == 2 * len(quick.alphas) * len(quick.ds)
    assert [(r["alpha"], r["d"]) for r in amp["rows"]] == [(a, d) for a in quick.alphas for d in quick.ds]

    # summary.json's rows are the runs' statistics and the state evolution's q0
    model = BayesModel.of(quick.params)
    for r in amp["rows"]:
        ms = [abs(x["theta"]) for x in amp["runs"] if (x["alpha"], x["d"]) == (r["alpha"], r["d"])]
        assert r["n"] == len(ms) == 2 and r["mean_abs_theta"] == pytest.approx(sum(ms) / 2, abs=1e-15)
        n = n_samples(r["alpha"], r["d"])
        assert r["se_q0"] == pytest.approx(solve_bayes(model, n / r["d"], "uninformative").q0, abs=1e-12)
        z = (r["mean_abs_theta"] - r["se_q0"]) / max(r["err_mean_abs_theta"], THETA_RESOLUTION)
        assert r["z"] == pytest.approx(z)

    # ... and the report's table says the same, row for row
    table = _parse_table(text, "| alpha | d | mean abs(theta) | SE q0 | z | converged | near 0 |")
    assert len(table) == len(amp["rows"])
    for cells, r in zip(table, amp["rows"]):
        mean, se = _pm(cells[2])
        assert float(cells[0]) == pytest.approx(r["alpha"], rel=1e-4) and int(cells[1]) == r["d"]
        assert mean == pytest.approx(r["mean_abs_theta"], abs=5.1e-5)
        assert se == pytest.approx(r["err_mean_abs_theta"], abs=5.1e-5)
        assert float(cells[3]) == pytest.approx(r["se_q0"], abs=5.1e-5)
        assert float(cells[4]) == pytest.approx(r["z"], abs=5.1e-3)
        assert cells[5] == f"{r['converged']} of {r['n']}" and int(cells[6]) == r["near_zero"]
    trends = _parse_table(text, "| alpha | SE q0 | fit d -> inf | form (chi^2; the other's) | verdict |")
    assert [float(c[0]) for c in trends] == pytest.approx([t["alpha"] for t in amp["trends"]], rel=1e-4)
    for cells, t in zip(trends, amp["trends"]):
        assert cells[4] == t["verdict"] and cells[4].startswith(("agrees", "disagrees"))
        # with the plan's d = 12 the series has three dimensions: a finite-size fit, its value in the table
        assert t["fit_a"] is not None and _pm(cells[2])[0] == pytest.approx(t["fit_a"], abs=5.1e-5)

    # ERM against BO: the theory's global minimum, the informative branch's eps_g, the closest alpha in the sentence
    bmodel = BayesModel.of(params)
    assert [(r["alpha"], r["erm_branch"], r["erm_eps_g"]) for r in erm["rows"]] == [(0.5, "positional", 3.2e-3),
                                                                                   (2.0, "semantic", 1.4e-3)]
    for r in erm["rows"]:
        assert r["bo_eps_g"] == pytest.approx(bayes_eps_g(bmodel, 0.3, solve_bayes(bmodel, r["alpha"], "informative").q0))
    rows = _parse_table(text, "| alpha | ERM branch | eps_g ERM | eps_g BO | excess / eps_lin | excess / eps_g BO |")
    assert [(float(c[0]), c[1], float(c[2]), float(c[3])) for c in rows] == [
        (r["alpha"], r["erm_branch"], pytest.approx(r["erm_eps_g"], rel=1e-4), pytest.approx(r["bo_eps_g"], rel=1e-4))
        for r in erm["rows"]]
    c = erm["closest"]
    assert c["alpha"] == 2.0 and c["excess_over_eps_lin"] == pytest.approx((1.4e-3 - erm["rows"][1]["bo_eps_g"]) / 2e-3)
    x = text.split("within X % of the Bayes-optimal error (X in units of eps_lin): on this grid (0.5 <= alpha <= 2) "
                   "nowhere for X below ", 1)[1].split(".")
    assert float(x[0] + "." + x[1]) == pytest.approx(100 * c["excess_over_eps_lin"], abs=0.051)
    assert f"comes closest to the Bayes-optimal error at alpha = {c['alpha']:.4g}:" in text


def test_the_committed_amp_record_is_what_the_code_makes_of_its_runs():
    """docs/data/amp_validation/ (studies/amp_validation_data.py): the default plan's every (alpha, d, seed) once, and
    its per-(alpha, d) table and verdicts are amp_rows / amp_trends of its own runs under the current rule."""
    import csv
    import json
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "docs" / "data" / "amp_validation"
    with open(folder / "amp_runs.csv") as fh:
        runs = [{"alpha": float(r["alpha"]), "d": int(r["d"]), "seed": int(r["seed"]), "theta": float(r["theta"]),
                 "converged": r["converged"] == "1", "se_q0": float(r["se_q0"])} for r in csv.DictReader(fh)]
    plan = amp_plan(ModelParams())
    assert sorted((r["alpha"], r["d"], r["seed"]) for r in runs) == sorted(
        (a, d, s) for a in plan.alphas for d in plan.ds_at(a) for s in plan.seeds)
    meta = json.loads((folder / "amp_validation.json").read_text())
    assert meta["plan"] == json.loads(json.dumps(plan.to_dict())) and meta["model"] == plan.params.to_dict()
    rows = amp_rows(runs)
    with open(folder / "amp_validation.csv") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == len(rows)
    for t, r in zip(table, rows):
        assert (float(t["alpha"]), int(t["d"]), int(t["n_runs"]), int(t["converged"]), int(t["near_zero"])) == (
            r["alpha"], r["d"], r["n"], r["converged"], r["near_zero"])
        for col, key in (("mean_abs_theta", "mean_abs_theta"), ("err_mean_abs_theta", "se"), ("se_q0", "se_q0"),
                         ("z", "z")):
            assert float(t[col]) == pytest.approx(r[key], rel=1e-12, abs=1e-15)
    verdicts = {f"{t['alpha']:g}": t["verdict"] for t in amp_trends(rows)}
    assert meta["verdicts"] == verdicts


def test_the_bayes_optimal_section_is_left_out_for_correlated_tokens(capsys):
    """``validate --token-cov ...`` ran its GD campaign and then failed in the AMP section (AMP runs with independent
    tokens), writing nothing: the section is left out with its reason, said before the work and in the report."""
    import argparse

    from attnphase.execution.executor import ExecutorSpec
    from attnphase.theory.params import ModelParams
    from attnphase.validation.amp_validation import markdown_lines
    from attnphase.validation.campaign import bayes_optimal_section
    from attnphase.validation.campaign_plan import validation_plan
    from attnphase.validation.commands.validate import announce_campaign

    plan = validation_plan(quick=True, params=ModelParams(C=((0.25, 0.075), (0.075, 0.25))))
    section = bayes_optimal_section(plan, {}, progress=False)
    assert section == {"skipped": "AMP for the Bayes-optimal channel runs with independent tokens"}
    assert "Not run for this model: AMP for the Bayes-optimal channel runs with independent tokens." in \
        markdown_lines(section)
    announce_campaign(plan, ExecutorSpec(workers=1), argparse.Namespace(quiet=True, large=False))
    assert "Bayes-optimal section (AMP against its state evolution) is left out" in capsys.readouterr().err


def test_validate_s_d_and_seeds_reach_its_amp_runs():
    """``validate --d 8000 --seeds 12`` runs AMP at d = 8000 too and with 12 seeds; the default plan's d and seeds
    leave the AMP series as it is (its d among them, fewer seeds than its least)."""
    from attnphase.validation.amp_validation import validation_amp_plan
    from attnphase.validation.campaign_plan import validation_plan

    default = validation_amp_plan(validation_plan())
    assert default.ds == amp_plan(ModelParams()).ds and len(default.seeds) == 8
    assert validation_amp_plan(validation_plan(quick=True)).ds == amp_plan(ModelParams(), quick=True).ds
    more = validation_amp_plan(validation_plan(d=8000, seeds=12))
    assert more.ds == (500, 1000, 2000, 4000, 8000) and more.seeds == tuple(range(12))
    assert len(validation_amp_plan(validation_plan(quick=True, seeds=1)).seeds) == 4


def test_validates_amp_runs_in_the_campaigns_dtype_with_its_tolerance():
    """``validate --dtype float32`` ran its Bayes-optimal section's AMP in float64 (its report headed float32)."""
    from attnphase.validation.amp import AMP_TOL
    from attnphase.validation.amp_validation import validation_amp_plan
    from attnphase.validation.campaign_plan import validation_plan

    for dtype in ("float64", "float32"):
        amp = validation_amp_plan(validation_plan(quick=True, seeds=2, params=ModelParams(), dtype=dtype))
        assert amp.dtype == dtype and amp.amp.tol == AMP_TOL[dtype]
