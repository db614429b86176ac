"""Aggregation, finite-size fits and report rendering (attnphase.validation.campaign / report).

The theory here is a hand-made stand-in (a TheoryAtOmega built from records), so these
tests need no numerics and check only the bookkeeping and the files written.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attnphase.theory.params import ModelParams  # noqa: E402
from attnphase.validation.campaign import (  # noqa: E402
    ValidationPlan,
    _fss_fits,
    alpha_c_point,
    delta_et_rows,
    group_rows,
)
from attnphase.validation.campaign_plan import validation_plan  # noqa: E402
from attnphase.validation.experiments import run_simulation  # noqa: E402
from attnphase.validation.finite_size import chosen_fit, extrapolate  # noqa: E402
from attnphase.validation.reference import BranchCurve, TheoryAtOmega, TheorySettings  # noqa: E402
from attnphase.validation.agreement import agrees  # noqa: E402
from attnphase.validation.plots import alpha_c_curve  # noqa: E402
from attnphase.validation.report import render_markdown, write_report  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_extrapolate_recovers_a_plus_b_over_sqrt_d():
    ds = [50, 100, 200, 400, 800]
    y = [0.6 - 0.8 / math.sqrt(d) for d in ds]
    fit = extrapolate(ds, y, [0.01] * 5, [4] * 5)
    assert fit["a"] == pytest.approx(0.6, abs=1e-9) and fit["b"] == pytest.approx(-0.8, abs=1e-8)
    assert fit["a_se"] > 0


@pytest.mark.parametrize("power,form", [(1.0, "a + b/d"), (0.5, "a + b/sqrt(d)")])
def test_the_finite_size_fit_takes_the_form_the_data_follow(power, form):
    """GD's and AMP's extrapolations share one chooser: on data a + b/d^p with noise below the bars, the chosen form is
    p's, its a is the true 0.6 within 2 a_se, and the other form fits worse."""
    rng = np.random.default_rng(3)
    ds = [50, 100, 200, 500, 1000, 2000]
    y = [0.6 - 2.0 / d**power + 1e-4 * rng.standard_normal() for d in ds]
    fit = chosen_fit(ds, y, [2e-4] * len(ds), [4] * len(ds))
    assert fit["form"] == form and fit["power"] == power
    assert abs(fit["a"] - 0.6) <= 2 * fit["a_se"]
    assert fit["chi2_other"] > fit["chi2"]


def test_plans_are_consistent():
    for quick in (True, False):
        plan = validation_plan(quick=quick)
        assert plan.d == (200 if quick else 1000)
        assert min(plan.alphas) == 0.1 and max(plan.alphas) == 2.0
        assert plan.fss_ds[0] == 50 and plan.fss_ds[-1] == 1000
        assert set(plan.alphas_small) <= {a for a, _ in plan.fss_cases}
        assert all(s.init in ("semantic", "positional") for s in plan.heat_specs())
        omegas = sorted(set(plan.heat_omegas) | set(plan.curve_omegas))  # the alpha_c curve spans the map
        assert omegas[0] <= min(plan.heat_omegas) and omegas[-1] > max(plan.heat_omegas)
        assert max(np.diff(omegas)) < min(np.diff(sorted(plan.heat_omegas)))
    assert len(validation_plan(quick=True, seeds=3).seeds) == 3


def _record(alpha, branch, **kw):
    base = {"alpha": alpha, "branch": branch, "q": 0.4, "m": 0.0, "V": 1.0, "theta": 0.0, "eps_g": 3e-3,
            "e_t": 4e-3, "eps_lin": 2e-3, "converged": True}
    return {**base, **kw}


def _fake_theory(alphas, omega=0.3):
    sem = tuple(_record(a, "semantic" if a > 0.7 else "agnostic", theta=0.3 * a if a > 0.7 else 0.0,
                        eps_g=2e-3, e_t=3e-3 + 1e-4 * a) for a in alphas)
    sem_local = tuple(dict(r, theta=r["theta"] * 0.9) for r in sem)
    pos = tuple(_record(a, "positional", m=0.25, e_t=3e-3 + 2e-4 * a) for a in alphas)
    curves = {("semantic", "global"): BranchCurve("semantic", "global", sem, 0.7),
              ("semantic", "local"): BranchCurve("semantic", "local", sem_local, 0.69),
              ("positional", "global"): BranchCurve("positional", "global", pos)}
    return TheoryAtOmega(omega, 2e-3, {"global": 1.25}, {"global": 1.5}, {"global": ()}, curves, 1.0, 1.0,
                         err_alpha_c={"global": 2.1e-4}, err_alpha_l={"global": math.nan})


def test_report_files_and_bookkeeping(tmp_path):
    params = ModelParams()
    plan = ValidationPlan(
        quick=True, params=params, d=24, alphas=(0.5, 2.0), seeds=(0, 1), heat_alphas=(0.5, 2.0),
        heat_omegas=(0.3,), heat_seeds=(0,), fss_ds=(12, 24, 48), fss_seeds=(0, 1), alphas_small=(0.5,),
        fss_cases=((2.0, "semantic"), (0.5, "semantic")), n_test=200, theory=TheorySettings(),
    )
    specs = []
    for s in plan.sweep_specs() + plan.fss_specs():
        if s not in specs:
            specs.append(s)
    runs = [run_simulation(s) for s in specs]
    theory = _fake_theory((0.5, 2.0))
    by_omega = {0.3: theory}
    sweep = group_rows([r for r in runs if r.d == 24 and r.seed in plan.seeds], by_omega)
    assert {(r["alpha"], r["init"]) for r in sweep} == {(a, i) for a in (0.5, 2.0) for i in ("semantic", "positional", "random")}
    row = next(r for r in sweep if r["alpha"] == 2.0 and r["init"] == "semantic")
    assert row["n_runs"] == 2 and row["theory"]["global"]["abs_theta"] == pytest.approx(0.6)
    assert row["abs_theta_mean"] == pytest.approx(np.mean([abs(r.theta) for r in runs if r.d == 24 and r.alpha == 2.0
                                                           and r.init == "semantic" and r.seed in (0, 1)]))
    assert agrees(row, "abs_theta") in (True, False)
    low = next(r for r in sweep if r["alpha"] == 0.5 and r["init"] == "semantic")
    assert agrees(low, "abs_theta") is None  # the theory landed on the agnostic point there
    delta = delta_et_rows([r for r in runs if r.d == 24 and r.seed in plan.seeds], by_omega)
    assert {r["alpha"] for r in delta} == {0.5, 2.0}
    d2 = next(r for r in delta if r["alpha"] == 2.0)
    assert d2["n_pairs"] == 2 and d2["theory"]["global"] == pytest.approx(-2e-4)
    fss_rows = group_rows([r for r in runs if r.alpha in (0.5, 2.0) and r.init == "semantic" and r.seed in (0, 1)], by_omega)
    summary = {
        "plan": plan.to_dict(), "wall_seconds": 1.0, "simulation_seconds": 1.0, "simulation_cpu_seconds": 1.0,
        "theory_seconds": 1.0, "theory_cpu_seconds": 1.0, "theory_jobs_cached": 0,
        "all_converged": all(r.converged for r in runs), "n_simulations": len(runs),
        "theory": theory.to_dict(), "heat_theory": [theory.to_dict()], "sweep": sweep, "delta_e_t": delta,
        "alpha_c_curve": [alpha_c_point(replace(theory, omega=w, alpha_c={"global": a}))
                          for w, a in ((0.2, 0.9), (0.3, 1.25), (0.35, math.nan), (0.4, 1.8))],
        "heat": delta_et_rows([r for r in runs if r.d == 24 and r.seed == 0], {}),
        "finite_size": fss_rows, "finite_size_fits": _fss_fits(plan, fss_rows), "runs": [r.to_dict() for r in runs],
    }
    full = write_report(summary, tmp_path)
    for name in ("report.md", "summary.json", "fig2_alpha_sweep.png", "fig3_heatmap.png", "finite_size.png"):
        assert (tmp_path / name).stat().st_size > 0
    loaded = json.loads((tmp_path / "summary.json").read_text())
    assert loaded["headline"]["global_vs_local"][0]["alpha"] == 0.5
    # the outputs' names: err_<name> for an error bar, sd_<obs> for the seeds' spread (stated in "variables")
    keys: set = set()
    stack = [loaded]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            keys |= set(o) if o is not loaded["variables"] else set()
            stack += list(o.values())
        elif isinstance(o, list):
            stack += o
    assert not [k for k in keys if k.endswith(("_se", "_std", "_err")) or k in ("se", "std")], keys
    assert {"sd_abs_theta", "err_a", "err_eps_g"} <= keys and "sd_<obs>" in loaded["variables"]
    assert loaded["sweep"][0]["sd_abs_theta"] == sweep[0]["abs_theta_std"]
    assert "verdict" in full["headline"]["global_vs_local"][0]
    text = (tmp_path / "report.md").read_text()
    assert "Global or local proximal theory" in text and "| 2.0 | semantic |" in text
    assert "* global prox: alpha_c = 1.25000 +- 0.00021, alpha_l = 1.5000," in text
    # every row of the sweep's table says which map GD follows (the fake theory has no aligned curve: never
    # "aligned") and why
    table = [ln for ln in text.split("## Alpha sweep")[1].split("## Finite-size")[0].splitlines() if ln.startswith("| 0.5 |") or ln.startswith("| 2.0 |")]
    assert len(table) == len(sweep) and "| map GD follows | why |" in text
    assert all(ln.split(" | ")[-2] in ("global", "global or aligned", "neither", "not converged") for ln in table)
    assert [f["map"] for f in full["headline"]["map_followed"]] == [ln.split(" | ")[-2] for ln in table]
    # the headline names the point the theory reached where it is not the start's branch's
    assert full["headline"]["semantic_at_alpha_max"]["theory_branch"] == "semantic"
    assert "| semantic init, eps_g | 2.0 |" in text and "(agnostic) |" not in text.split("## Headline")[1][:1500]
    assert "| | alpha | simulation (mean +- seeds' sd) | theory |" in text  # its +- said as the seeds' sd
    other = json.loads(json.dumps(full))
    other["headline"]["semantic_at_alpha_max"]["theory_branch"] = "agnostic"
    row = next(ln for ln in render_markdown(other).splitlines() if ln.startswith("| semantic init, eps_g | 2.0 |"))
    assert row.endswith(" (agnostic) |")
    curve = alpha_c_curve(full)  # every omega of the curve, in order, the one without alpha_c kept as a gap
    assert [c["omega"] for c in curve] == [0.2, 0.3, 0.35, 0.4] and curve[2]["alpha_c"] is None
    # the report names the command that made it (it said `attnphase validate --quick` whatever the options)
    assert "Generated by `attnphase validate --quick`." in text
    made = render_markdown(other | {"command": "attnphase validate --quick --omega 0.25 --seeds 2"})
    assert "Generated by `attnphase validate --quick --omega 0.25 --seeds 2`." in made
    # the finite-size series runs at least 4 seeds (quick): the header said "1 seeds per point" for all of it
    assert "2 seeds per point, " in made
    # the teacher norm as the run's model has it (the report said |Q*|^2 = d whatever --rho0)
    assert "rho0 = 1, " in made and "|Q*|^2 = rho0 d = 1 d." in made
    norm = json.loads(json.dumps(other))
    norm["plan"]["params"]["rho0"] = 2.0
    assert "|Q*|^2 = rho0 d = 2 d." in render_markdown(norm) and "rho0 = 2, " in render_markdown(norm)
    # the seconds are sums over tasks (the theory's "125 s wall" sat inside an 85 s campaign)
    assert "s CPU summed over their tasks, as each was first computed), theory" in made
    assert "s CPU summed over the tasks computed in this run; " in made
    more = json.loads(json.dumps(other))
    more["plan"]["fss_seeds"] = [0, 1, 2, 3]
    assert "2 seeds per point (the finite-size series 4, at d = 12, 24, 48), " in render_markdown(more)
    # a value some of whose runs did not converge says so where it is shown (validate --max-steps 5: the headline
    # and the semantic-end tables showed |theta| 0.837 and 0.87 unmarked)
    assert full["headline"]["semantic_at_alpha_max"]["n_converged"] == full["headline"]["semantic_at_alpha_max"]["n_runs"]
    assert " runs converged)" not in text
    more["headline"]["semantic_at_alpha_max"] |= {"n_runs": 2, "n_converged": 1}
    sem = next(r for r in more["sweep"] if r["init"] == "semantic")
    sem["n_converged"] = sem["n_runs"] - 1
    made = render_markdown(more)
    assert next(ln for ln in made.splitlines() if ln.startswith("| semantic init, eps_g | 2.0 |")).split(" | ")[2] \
        .endswith(" (1 of 2 runs converged)")
    assert f"({sem['n_runs'] - 1} of {sem['n_runs']} runs converged) |" in made.split("Semantic branch near its end")[1]


def test_a_theory_solve_that_did_not_converge_gives_no_theory_value():
    # omega = 0.1, alpha = 2: the positional solve past the branch's end stops at |m| = 0.034 unconverged, which the
    # report printed as the theory beside GD's 0.20
    from attnphase.validation.campaign import _theory_values

    th = _fake_theory((0.5, 2.0))
    pos = (_record(0.5, "positional", m=0.25), _record(2.0, "positional", m=0.034, converged=False))
    th = replace(th, curves=th.curves | {("positional", "global"): BranchCurve("positional", "global", pos, 1.28)})
    past = _theory_values(th, "positional", "global", 2.0)
    assert past["converged"] is False and past["exists"] is False
    assert all(past[k] is None for k in ("abs_m", "abs_theta", "q", "eps_g", "e_t"))
    on = _theory_values(th, "positional", "global", 0.5)
    assert on["converged"] and on["abs_m"] == pytest.approx(0.25) and on["eps_g"] == pytest.approx(3e-3)
    # the finite-size figure draws the aligned map's gap where the global map has no value (it crashed on None - None)
    from attnphase.validation.plots import _differs

    aligned = dict(on, abs_m=0.2)
    assert _differs({"theory": {"global": past, "aligned": aligned}}, "abs_m", "aligned")
    assert not _differs({"theory": {"global": past, "aligned": past}}, "abs_m", "aligned")
    assert not _differs({"theory": {"global": on, "aligned": on}}, "abs_m", "aligned")


def test_theory_round_trip():
    t = _fake_theory((0.5, 1.0, 2.0))
    back = TheoryAtOmega.from_dict(json.loads(json.dumps(t.to_dict())))
    assert back.alpha_c == t.alpha_c and back.curve("semantic", "local").records == t.curve("semantic", "local").records
    assert back.curve("semantic", "global").end == 0.7
    # alpha_c's standard error travels with it (validate printed alpha_c = 1.2512 without one); a record of a theory
    # made without it reads as no bar
    assert back.err_alpha_c == {"global": 2.1e-4} and math.isnan(back.err_alpha_l["global"])
    old = {k: v for k, v in t.to_dict().items() if not k.startswith("err_")}
    assert TheoryAtOmega.from_dict(old).err_alpha_c == {}


def _row(n_runs: int, n_converged: int) -> dict:
    theory = {"branch_reached": "semantic", "converged": True, "exists": True, "abs_theta": 0.6}
    return {"branch": "semantic", "n_runs": n_runs, "n_converged": n_converged, "abs_theta_mean": 0.6,
            "abs_theta_std": 0.01, "theory": {"global": theory, "local": None}}


def test_a_row_with_an_unconverged_run_is_never_counted_as_agreement():
    assert agrees(_row(4, 4), "abs_theta") is True  # the mean sits on the theory
    assert agrees(_row(4, 3), "abs_theta") is False  # the same numbers, one run stopped by its budget


def test_one_seed_has_no_spread_and_is_judged_and_extrapolated_without_one():
    """``validate --quick --seeds 1``: report.md showed 0.65106 +- 0 and summary.json sd_abs_theta 0.0, a spread over
    one run.  It is NaN (no bar printed); the agreement rule then keeps its relative allowance alone, and the d -> inf
    fit weighs the points equally, its error from the residuals (NaN with two points)."""
    from attnphase.validation.agreement import mean_std
    from attnphase.validation.report import _pm

    mean, std = mean_std([0.65106])
    assert mean == 0.65106 and math.isnan(std)
    assert _pm({"abs_theta_mean": mean, "abs_theta_std": std}, "abs_theta") == "0.65106"
    one = _row(1, 1) | {"abs_theta_std": math.nan}
    assert agrees(one, "abs_theta") is True
    assert agrees(one | {"abs_theta_mean": 0.6 * 1.09}, "abs_theta") is True
    assert agrees(one | {"abs_theta_mean": 0.6 * 1.11}, "abs_theta") is False
    ds = [200, 500, 1000, 2000]
    y = [0.6 - 0.8 / math.sqrt(d) + e for d, e in zip(ds, (1e-3, -1e-3, 5e-4, -5e-4))]
    fit = extrapolate(ds, y, [math.nan] * 4, [1] * 4)
    assert abs(fit["a"] - 0.6) < 5e-3 and 0 < fit["a_se"] < 5e-3
    assert math.isnan(extrapolate(ds[:2], y[:2], [math.nan] * 2, [1] * 2)["a_se"])


def test_the_report_lists_every_run_that_did_not_converge():
    from attnphase.validation.report import _convergence_lines

    run = {"d": 200, "alpha": 1.0, "omega": 0.3, "init": "positional", "seed": 1, "converged": True,
           "status": "converged", "grad_norm": 2e-7, "grad_tol": 3e-7, "steps": 120}
    bad = {**run, "seed": 2, "converged": False, "status": "budget", "grad_norm": 4.2e-5, "steps": 20000}
    text = "\n".join(_convergence_lines({"runs": [run, bad]}))
    assert "1 of 2 runs reached |grad R|/sqrt(d) <= 3e-07" in text
    assert "| 200 | 1.0 | 0.3 | positional | 2 | budget | 4.20e-05 | 20000 |" in text
    assert "| 1 |" not in text  # the converged run is not listed


def test_the_headline_verdict_at_infinite_d_uses_the_extrapolation_over_converged_dimensions():
    from attnphase.validation.agreement import extrapolated_verdicts

    theory = {"branch_reached": "semantic", "converged": True, "exists": True, "abs_theta": 0.6, "eps_g": 1e-3}
    ds, a, b = (50, 100, 200, 400), 0.6, 0.5
    rows = [{"d": d, "alpha": 2.0, "init": "semantic", "branch": "semantic", "n_runs": 4, "n_converged": 4,
             "abs_theta_mean": a + b / math.sqrt(d), "abs_theta_std": 0.004, "abs_m_mean": 0.0, "abs_m_std": 0.0,
             "eps_g_mean": 1e-3, "eps_g_std": 1e-5, "e_t_mean": 0.0, "e_t_std": 0.0,
             "theory": {"global": theory, "local": None}} for d in ds]
    rows.append({**rows[-1], "d": 800, "n_converged": 3, "abs_theta_mean": 0.9})  # one run stopped by its budget
    plan = replace(validation_plan(quick=True), fss_cases=((2.0, "semantic"),))
    summary = {"finite_size": rows, "finite_size_fits": _fss_fits(plan, rows)}
    [theta] = [v for v in extrapolated_verdicts(summary) if v["observable"] == "abs_theta"]
    assert theta["extrapolated"] == pytest.approx(0.6, abs=1e-9) and theta["agrees"] is True
    assert theta["ds"] == list(ds) and theta["dropped_d"] == [800]
    # the same data against a theory 0.05 away: each finite d's 10 % allowance would pass at d = 400, the
    # extrapolation does not
    far = {**theory, "abs_theta": 0.65}
    moved = [{**r, "theory": {"global": far, "local": None}} for r in rows]
    [theta] = [v for v in extrapolated_verdicts({"finite_size": moved, "finite_size_fits": _fss_fits(plan, moved)})
               if v["observable"] == "abs_theta"]
    assert theta["agrees"] is False


def test_the_verdict_at_infinite_d_counts_the_theorys_own_error_bar():
    from attnphase.validation.agreement import extrapolated_verdicts

    ds = (250, 500, 1000, 2000)
    rows = [{"d": d, "alpha": 2.0, "init": "positional", "branch": "positional", "n_runs": 4, "n_converged": 4,
             "abs_m_mean": 0.262 + 1.0 / d, "abs_m_std": 0.0014, "abs_theta_mean": 0.0, "abs_theta_std": 0.0,
             "eps_g_mean": 3.5e-3, "eps_g_std": 3e-5, "e_t_mean": 0.0, "e_t_std": 0.0} for d in ds]
    plan = replace(validation_plan(quick=True), fss_cases=((2.0, "positional"),))

    def verdict(theory_se):
        point = {"branch_reached": "positional", "converged": True, "exists": True, "abs_m": 0.2585,
                 "eps_g": 3.5e-3} | ({} if theory_se is None else {"err_abs_m": theory_se})
        moved = [{**r, "theory": {"global": point, "local": None}} for r in rows]
        [m] = [v for v in extrapolated_verdicts({"finite_size": moved, "finite_size_fits": _fss_fits(plan, moved)})
               if v["observable"] == "abs_m"]
        return m

    exact, barred = verdict(None), verdict(0.002)
    assert exact["extrapolated"] == pytest.approx(0.262, abs=1e-6)
    assert math.isnan(exact["theory_se"]) and exact["agrees"] is False  # 3.5e-3 away, a_se alone below 1.75e-3
    assert exact["distance_se"] == pytest.approx(3.5e-3 / exact["extrapolated_se"])
    bar = math.hypot(barred["extrapolated_se"], 0.002)
    assert barred["theory_se"] == 0.002 and barred["distance_se"] == pytest.approx(3.5e-3 / bar)
    assert barred["agrees"] is True  # within 2 of the combined bar
    fit = next(f for f in _fss_fits(plan, [{**r, "theory": {"global": {"converged": True, "abs_m": 0.2585,
                                                                       "err_abs_m": 0.002}}} for r in rows])
               if f["observable"] == "abs_m")
    assert fit["theory_se"]["global"] == 0.002


def test_the_verdict_at_infinite_d_shows_where_it_hangs_on_the_fits_form():
    # sigma = 1, alpha = 2, semantic: eps_g falls faster than 1/sqrt(d); a + b/sqrt(d) (the smaller chi^2) ends below
    # the theory (z 8.2), a + b/d on it (z 1.8): the report says the verdict hangs on the form
    from attnphase.validation.agreement import extrapolated_verdicts
    from attnphase.validation.report import _other_form

    ds, eps = (50, 100, 200, 400, 1000), (0.009835, 0.0069475, 0.0063934, 0.0052479, 0.0047457)
    sds = (0.0011262, 0.0015231, 0.00039525, 0.00032371, 7.5363e-05)
    point = {"branch_reached": "semantic", "converged": True, "exists": True, "abs_theta": 0.76634, "eps_g": 0.004593,
             "err_eps_g": 2.2e-05}
    rows = [{"d": d, "alpha": 2.0, "init": "semantic", "branch": "semantic", "n_runs": 4, "n_converged": 4,
             "abs_m_mean": 0.0, "abs_m_std": 0.0, "abs_theta_mean": 0.77, "abs_theta_std": 0.003, "eps_g_mean": e,
             "eps_g_std": sd, "e_t_mean": 0.0, "e_t_std": 0.0, "theory": {"global": point, "local": None}}
            for d, e, sd in zip(ds, eps, sds)]
    plan = replace(validation_plan(quick=True), fss_cases=((2.0, "semantic"),))
    [v] = [v for v in extrapolated_verdicts({"finite_size": rows, "finite_size_fits": _fss_fits(plan, rows)})
           if v["observable"] == "eps_g"]
    assert v["form"] == "a + b/sqrt(d)" and v["agrees"] is False and v["distance_se"] > 5
    assert v["other_form"] == "a + b/d" and v["other_distance_se"] < 2
    assert _other_form(v).endswith("(a + b/d): the verdict hangs on the form")
    assert not _other_form(v | {"other_distance_se": 3.0}).endswith("hangs on the form")


@pytest.mark.heavy
def test_theory_points_at_the_error_alphas_carry_the_rules_error_bars():
    from attnphase.validation.campaign import _theory_values
    from attnphase.validation.reference import theory_at_omega

    params = ModelParams(omega=0.3)
    th = theory_at_omega(params, (1.5, 2.0), extra_curves=(),
                         settings=TheorySettings(error_alphas=(2.0,)))
    rec = {r["alpha"]: r for r in th.curve("positional", "global").records}
    assert "err_m" not in rec[1.5]
    assert 1e-5 < rec[2.0]["err_m"] < 0.02 * abs(rec[2.0]["m"]) and rec[2.0]["err_eps_g"] > 0
    values = _theory_values(th, "positional", "global", 2.0)
    assert values["err_abs_m"] == rec[2.0]["err_m"] and values["err_eps_g"] == rec[2.0]["err_eps_g"]
    assert "err_abs_m" not in _theory_values(th, "positional", "global", 1.5)
    # the campaign's main theory job asks for them at the finite-size alphas, the heat-map jobs not
    from attnphase.validation.campaign_plan import _theory_jobs

    plan = validation_plan(quick=True)
    jobs, _ = _theory_jobs(plan)
    assert jobs[0][-1].error_alphas == tuple(sorted({a for a, _ in plan.fss_cases}))
    assert all(j[-1].error_alphas == () for j in jobs[1:])


def _follow_row(alpha, gd_theta, global_point, aligned_point, n_converged=3):
    """A semantic-start row: GD's |theta| and eps_g beside the global- and aligned-prox points (None: none)."""
    def point(p):
        if p is None:
            return None
        theta, branch = p
        return {"branch_reached": branch, "converged": True, "exists": branch == "semantic", "abs_theta": theta,
                "eps_g": 3e-3}
    return {"alpha": alpha, "init": "semantic", "branch": "semantic", "n_runs": 3, "n_converged": n_converged,
            "abs_theta_mean": gd_theta, "abs_theta_std": 0.005, "eps_g_mean": 3e-3, "eps_g_std": 1e-5,
            "theory": {"global": point(global_point), "local": None, "aligned": point(aligned_point)}}


def test_each_row_says_which_map_gd_follows_and_why():
    from attnphase.validation.agreement import map_followed

    ends = {"global": 0.716, "aligned": None}
    # above alpha ~ 1.25 both maps coincide with GD: the global minimum's point, the coincidence said
    both = map_followed(_follow_row(2.0, 0.63, (0.6327, "semantic"), (0.6327, "semantic")), ends)
    assert both["map"] == "global" and "the aligned map's point is the same here" in both["reason"]
    # both agree within the rule but are different points: not separated, and said so
    loose = map_followed(_follow_row(0.8, 0.315, (0.30, "semantic"), (0.33, "semantic")), ends)
    assert loose["map"] == "global or aligned" and "does not separate" in loose["reason"]
    # below the semantic end: no global-prox semantic point, the aligned one agrees
    below = map_followed(_follow_row(0.5, 0.20, (0.0, "agnostic"), (0.2117, "semantic")), ends)
    assert below["map"] == "aligned"
    assert "no semantic point below the branch's end at alpha = 0.716 (it reaches the agnostic point)" in below["reason"]
    assert "basin" in below["reason"]
    # a global-prox semantic point that exists but is 36 % below GD (alpha = 0.8), the aligned one agrees
    differs = map_followed(_follow_row(0.8, 0.315, (0.2325, "semantic"), (0.3227, "semantic")), ends)
    assert differs["map"] == "aligned" and "global-prox semantic point differs (abs_theta 0.315 vs 0.233)" in differs["reason"]
    # neither agrees: both named
    neither = map_followed(_follow_row(0.8, 0.5, (0.2325, "semantic"), (0.3227, "semantic")), ends)
    assert neither["map"] == "neither" and "aligned-prox point differs too" in neither["reason"]
    # a row with a run stopped by its budget is compared with no map, whatever its numbers
    assert map_followed(_follow_row(2.0, 0.63, (0.6327, "semantic"), (0.6327, "semantic"), n_converged=2),
                        ends)["map"] == "not converged"
    # no aligned solve at all (correlated tokens): said, not taken for agreement
    lone = map_followed(_follow_row(0.5, 0.20, (0.0, "agnostic"), None), ends)
    assert lone["map"] == "neither" and "no aligned-prox solve here" in lone["reason"]


def test_a_start_without_its_branch_whose_gd_ends_where_another_start_does_takes_that_starts_map():
    """L = 3 (no positional point): GD from the positional start leaves the agnostic point, unstable in theta above
    the semantic birth, for the semantic point, seed for seed the minima of the semantic start; its row says so and
    takes the semantic row's map.  Means 1 % apart, or spreads apart by more than a thousandth of the mean, are other
    minima; a row whose branch has its point keeps its own verdict."""
    from attnphase.validation.agreement import maps_followed

    gd = {"abs_m_mean": 0.0162, "abs_m_std": 0.014, "abs_theta_mean": 0.6708, "abs_theta_std": 0.0063,
          "eps_g_mean": 0.0063, "eps_g_std": 9.5e-5, "e_t_mean": 0.0074, "e_t_std": 3e-7}
    sem = _follow_row(1.0, 0.6708, (0.66, "semantic"), (0.66, "semantic"))
    sem.update(gd, n_converged=3)
    for prox in ("global", "aligned"):
        sem["theory"][prox]["eps_g"] = 0.0062
    agnostic = {"branch_reached": "agnostic", "converged": True, "exists": False, "abs_m": 0.0, "abs_theta": 0.0,
                "eps_g": 0.008}
    pos = {**gd, "alpha": 1.0, "init": "positional", "branch": "positional", "n_runs": 3, "n_converged": 3,
           "theory": {"global": agnostic, "local": None, "aligned": {**agnostic, "branch_reached": "positional",
                                                                      "exists": True, "abs_m": 0.12}}}
    theory = {"curves": {}}
    p_map, s_map = maps_followed([pos, sem], theory)
    assert s_map["map"] == "global" and "minima" not in s_map["reason"]
    assert p_map["map"] == "global", p_map
    assert p_map["reason"].startswith("the global-prox SE has no positional point: it reaches the agnostic point")
    assert ("GD from the positional start ends at the minima the semantic start reaches (abs_m 0.0162 vs 0.0162, "
            "abs_theta 0.6708 vs 0.6708, eps_g 0.0063 vs 0.0063), which follow the global-prox SE's semantic point: "
            "the global-prox semantic point agrees") in p_map["reason"]
    for key, factor in (("abs_theta_mean", 1.01), ("abs_theta_std", 1.5)):  # other minima: no word on them
        other = maps_followed([{**pos, key: pos[key] * factor}, sem], theory)[0]
        assert other["map"] == "neither" and "minima" not in other["reason"]
    # the semantic row without a map of its own: the positional row says where GD ends, with no map
    lost = {**sem, "theory": {"global": {**sem["theory"]["global"], "abs_theta": 0.5}, "local": None,
                              "aligned": {**sem["theory"]["aligned"], "abs_theta": 0.5}}}
    p_map, s_map = maps_followed([pos, lost], theory)
    assert s_map["map"] == "neither" and "minima" not in s_map["reason"]
    assert p_map["map"] == "neither" and p_map["reason"].endswith(
        "GD from the positional start ends at the minima the semantic start reaches (abs_m 0.0162 vs 0.0162, "
        "abs_theta 0.6708 vs 0.6708, eps_g 0.0063 vs 0.0063)")


def test_a_row_where_gd_and_the_theory_both_vanish_follows_the_global_map():
    """A strong ridge (lambda = 1) holds the SE at Q = 0 at every alpha and GD's student vanishes too: the row is the
    global map's agnostic point, not "neither"; a student that has not vanished, or an eps_g the rule rejects, is
    not."""
    from attnphase.validation.agreement import map_followed

    zero = {"branch_reached": "agnostic", "converged": True, "exists": False, "abs_m": 2.5e-10, "abs_theta": 0.0,
            "q": 2.9e-19, "eps_g": 0.004415}
    row = {"alpha": 0.5, "init": "semantic", "branch": "semantic", "n_runs": 2, "n_converged": 2,
           "abs_theta_mean": 9.5e-8, "abs_theta_std": 6e-9, "q_mean": 6.8e-14, "eps_g_mean": 0.004481,
           "eps_g_std": 8.4e-5, "theory": {"global": zero, "local": None, "aligned": dict(zero)}}
    both = map_followed(row)
    assert both["map"] == "global" and "both end at Q = 0" in both["reason"]
    assert map_followed({**row, "q_mean": 1e-6})["map"] == "neither"  # GD's student has not vanished
    assert map_followed({**row, "eps_g_mean": 0.006})["map"] == "neither"  # eps_g 36 % off
    weak = {**zero, "q": 0.3}  # an agnostic point with q > 0 (a weak ridge): not this case
    assert map_followed({**row, "theory": {"global": weak, "local": None, "aligned": weak}})["map"] == "neither"


def test_the_small_alpha_verdict_weighs_the_aligned_theory_and_names_every_consistent_one():
    from attnphase.validation.agreement import global_vs_local_at

    def summary(theory):
        fit = {"alpha": 0.8, "init": "semantic", "observable": "abs_theta", "a": 0.308, "a_se": 0.032, "b": 0.06,
               "form": "a + b/sqrt(d)", "power": 0.5,
               "theory": theory}
        rows = [{"alpha": 0.8, "init": "semantic", "d": d, "abs_theta_mean": 0.3, "abs_theta_std": 0.02} for d in (50, 200)]
        return {"finite_size_fits": [fit], "finite_size": rows}

    # the quick run at alpha = 0.8: the extrapolation is 1.9 se from the global point and 0.5 se from the aligned one
    both = global_vs_local_at(summary({"global": 0.2481, "local": 0.1736, "aligned": 0.3232}), 0.8)["verdict"]
    assert "consistent with the global and the aligned theories: the data cannot separate modes 0.075 apart" in both
    # alpha = 0.5: no converged global-prox semantic point, the aligned one alone consistent
    alone = global_vs_local_at(summary({"global": None, "local": 0.0018, "aligned": 0.3}), 0.8)["verdict"]
    assert alone.startswith("gradient descent follows the aligned proximal theory (the basin of its start)")
    assert "global: no converged point" in alone
    # where the global-prox semantic branch ends above alpha the point is absent, not a solver failure
    ended = summary({"global": None, "local": 0.0018, "aligned": 0.3}) | {
        "theory": {"curves": {"semantic/global": {"end": 0.9, "records": []}}}}
    past = global_vs_local_at(ended, 0.8)["verdict"]
    assert "global: none (the semantic branch ends at alpha = 0.9)" in past and "no converged point" not in past
    none = global_vs_local_at(summary({"global": 0.1, "local": 0.0, "aligned": 0.5}), 0.8)["verdict"]
    assert none.startswith("gradient descent follows none of the theories")
    # runs made but not converged (validate --max-steps 30) are not "no finite-size data"
    rows = [{"alpha": 0.8, "init": "semantic", "d": d, "n_runs": 4, "n_converged": 4 if d == 50 else 1}
            for d in (50, 100, 200)]
    unfit = global_vs_local_at({"finite_size_fits": [], "finite_size": rows}, 0.8)["verdict"]
    assert unfit == "no d -> inf fit at this alpha: 1 of its 3 dimensions had every run converged (a fit needs 3)"
    assert global_vs_local_at({"finite_size_fits": [], "finite_size": []}, 0.8)["verdict"] == \
        "no finite-size data at this alpha"


def test_a_simulation_runs_no_numerics_code_so_its_key_leaves_the_numerics_out():
    """validate's simulation tasks are keyed by the simulation code (validation.jobs.SIMULATION_CODE), so an edit of
    the numerics keeps a campaign's stored runs; that holds only while a run imports nothing of the numerics, which a
    fresh process checks here (tiny d, every start)."""
    import subprocess
    import sys

    from attnphase.validation.jobs import SIMULATION_CODE, simulation_version, validation_version

    code = ("import sys\n"
            "from attnphase.validation.experiments import SimSpec, run_simulation\n"
            "from attnphase.theory.params import ModelParams\n"
            "for init in ('semantic', 'positional', 'random'):\n"
            "    run_simulation(SimSpec(d=8, alpha=2.0, init=init, params=ModelParams(), n_test=16, device='cpu'))\n"
            "print(sorted(m for m in sys.modules if m.startswith('attnphase.')))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = eval(out)
    assert loaded and not [m for m in loaded if m.startswith("attnphase.numerics")], loaded
    assert "attnphase.numerics" not in SIMULATION_CODE and simulation_version() != validation_version()
    # of validation, the key hashes the modules the run imports: every one the run loaded, none that plans or reports
    from attnphase.execution.tasks import import_closure

    closure = import_closure("attnphase.validation.experiments", "attnphase.validation")
    assert closure is not None  # no dynamic import among them (else the whole package would be hashed)
    hashed = {"attnphase.validation" + ("" if f.stem == "__init__" else f".{f.stem}") for f in closure}
    assert {m for m in loaded if m.startswith("attnphase.validation")} <= hashed
    assert not hashed & {"attnphase.validation.general_suite", "attnphase.validation.campaign",
                         "attnphase.validation.general_cases"}


def test_a_theory_task_key_hashes_the_validation_modules_it_runs_and_not_the_suites(tmp_path, monkeypatch):
    """validate's and the general suite's theory tasks are keyed by the theory, the numerics and, of validation, the
    modules their functions import: each task's function is among them (with what it imports), the suites and reports
    are not, and an edit of a module outside them keeps the key while an edit inside changes it."""
    import shutil

    from attnphase.execution import tasks as task_mod
    from attnphase.numerics.config import SolverConfig
    from attnphase.validation import jobs
    from attnphase.validation.basin_theory import aligned_task
    from attnphase.validation.invariant_points import point_task
    from attnphase.validation.rule_retry import SolveJob

    job = SolveJob(ModelParams(r=2), 1.0, "mixed", SolverConfig())
    fns = [jobs.theory_task((ModelParams(), [1.0], ("global",), (), TheorySettings()), "v").fn,
           point_task(job, "v").fn, aligned_task(job, "v").fn]
    closure = task_mod.import_closure(jobs.THEORY_TASK_MODULES, "attnphase.validation")
    assert closure is not None
    hashed = {"attnphase.validation" + ("" if f.stem == "__init__" else f".{f.stem}") for f in closure}
    assert {fn.__module__ for fn in fns} <= hashed
    assert {f"attnphase.validation.{m}" for m in ("reference", "rule_retry", "invariant_points")} <= hashed
    assert not hashed & {f"attnphase.validation.{m}" for m in ("general_suite", "campaign", "general_cases",
                                                              "general_report", "report", "agreement", "plots")}
    # on a copy of the package: an edit of the suite keeps the version, an edit of reference.py changes it
    root = tmp_path / "pkg"
    shutil.copytree(task_mod._package_root("attnphase.validation"), root / "attnphase" / "validation")
    real_root = task_mod._package_root

    def package_root(name: str):
        return root / "attnphase" / "validation" if name == "attnphase.validation" else real_root(name)

    monkeypatch.setattr(task_mod, "_package_root", package_root)
    before = jobs.validation_version()
    with open(root / "attnphase" / "validation" / "general_suite.py", "a") as f:
        f.write("\n# an edit\n")
    assert jobs.validation_version() == before
    with open(root / "attnphase" / "validation" / "reference.py", "a") as f:
        f.write("\n# an edit\n")
    assert jobs.validation_version() != before


def test_an_aligned_point_the_rule_misses_is_solved_again_on_the_finer_rule(monkeypatch):
    """validate's aligned curves: a point whose solve did not converge on the curve's rule is solved again on
    reference.ALIGNED_RESCUE_QUADRATURE, warm from the nearest converged point, and its record names that rule (at
    omega = 0.3, alpha = 0.6 and 0.7 the default rule misses the semantic point; docs/validation.md).  Here a
    converged point is marked as missed on a small rule, so the test stays cheap."""
    import dataclasses

    from attnphase.numerics import SolverConfig, sweep
    from attnphase.validation import reference

    params, cfg = ModelParams(omega=0.3), SolverConfig(prox="aligned", quadrature="sobol8:4")
    points = list(sweep(params, [0.9, 1.0], "semantic", config=cfg).points)
    assert all(p.status.converged and p.branch == "semantic" for p in points)
    missed = dataclasses.replace(points[0], status=dataclasses.replace(points[0].status, converged=False))
    records = tuple(reference._record(p) for p in (missed, points[1]))
    monkeypatch.setattr(reference, "ALIGNED_RESCUE_QUADRATURE", "sobol9:4")
    out = reference._rescued(params, "semantic", [missed, points[1]], records, cfg)
    assert out[1] == records[1] and "rule" not in out[1]  # a converged point is kept as it is
    assert out[0]["converged"] and out[0]["branch"] == "semantic" and out[0]["rule"] == "sobol9:4"
    assert out[0]["alpha"] == 0.9 and abs(out[0]["theta"] - records[0]["theta"]) < 0.02


def test_the_plan_records_the_gradient_tolerance_its_runs_use() -> None:
    """summary.json's plan.train.grad_tol was null where the runs used the dtype's default 3e-7 (each run recorded
    it)."""
    from attnphase.validation.training import GRAD_TOL, TrainConfig

    assert validation_plan(quick=True).to_dict()["train"]["grad_tol"] == GRAD_TOL[torch.float64]
    assert validation_plan(quick=True, dtype="float32").to_dict()["train"]["grad_tol"] == GRAD_TOL[torch.float32]
    assert validation_plan(quick=True, train=TrainConfig(grad_tol=1e-6)).to_dict()["train"]["grad_tol"] == 1e-6
    from attnphase.validation.general_cases import GeneralPlan

    assert GeneralPlan(quick=True, d=20, seeds=(0,)).to_dict()["train"]["grad_tol"] == GRAD_TOL[torch.float64]


def test_the_sweep_table_shows_no_theory_value_where_its_solve_did_not_converge():
    """The alpha sweep's table printed the theory columns of semantic rows whose solve did not converge (|theta|
    0.003-0.07 at alpha 0.1-0.65, an older summary's), where its note says such a cell has no value: both tables
    show a theory cell one way (:func:`theory_cell`)."""
    from attnphase.validation.report import theory_cell

    off = {"converged": False, "abs_theta": 0.07162, "branch_reached": "semantic"}
    assert theory_cell(off, "abs_theta", 0.5, "semantic", 0.61) == "-- (past its end, 0.61)"
    assert theory_cell(off, "abs_theta", 0.8, "semantic", 0.61) == "-- (not converged)"
    assert theory_cell(off, "abs_theta", 0.5, "semantic", None) == "-- (not converged)"
    on = {"converged": True, "abs_theta": 0.6, "branch_reached": "agnostic"}
    assert theory_cell(on, "abs_theta", 2.0, "semantic", 0.61) == "0.6 (agnostic)"
    assert theory_cell({}, "abs_theta", 2.0, "semantic", 0.61) == "--"
