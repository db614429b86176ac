"""The general model at finite d (docs/model.md section 7): any L, sigma_l, P, A, a rank-r student and a
rank-r* teacher in the simulation; the rotation invariants; the bookkeeping of ``validate --suite general``
(hand-made theory, no numerics)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attnphase.theory.params import ModelParams  # noqa: E402
from attnphase.validation.branch_segments import drawn_end, existing_segments  # noqa: E402
from attnphase.validation.data import make_teacher, sample, target_attention  # noqa: E402
from attnphase.validation.experiments import JSON_KEYS, RANK_JSON_KEYS, SimSpec, generator, run_simulation  # noqa: E402
from attnphase.validation.general_cases import GENERAL_CASES, SIMPLEX_P3, general_plan, is_rank_case, select_cases  # noqa: E402
from attnphase.validation.general_suite import case_rows  # noqa: E402
from attnphase.validation.suite_alphas import alphas_around, landmark  # noqa: E402
from attnphase.validation.measure import overlaps  # noqa: E402
from attnphase.validation.reference import BranchCurve, TheoryAtOmega  # noqa: E402
from attnphase.validation.training import TrainConfig, initial_Q  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_rank_teacher_gram_is_exact_and_targets_use_dot_products():
    p = ModelParams(L=3, r_star=2, rho0=1.5, sigma=(0.4, 0.5, 0.6))
    t = make_teacher(p, 30, generator(0, "teacher"))
    assert t.Qstar.shape == (30, 2) and t.r_star == 2
    np.testing.assert_allclose((t.Qstar.T @ t.Qstar / 30).numpy(), 1.5 * np.eye(2), atol=1e-12)
    data = sample(t, 7, generator(0, "train"))
    assert data.hstar.shape == (7, 3, 2)
    h = data.X @ t.Qstar / math.sqrt(30)
    A = torch.tensor(p.A, dtype=torch.float64)
    by_hand = (1 - p.omega) * torch.softmax(torch.einsum("nlr,nkr->nlk", h, h), dim=-1) + p.omega * A
    torch.testing.assert_close(data.T, by_hand)
    torch.testing.assert_close(target_attention(h, p.omega, A), by_hand)
    # per-token scales: x_l has variance sigma_l^2
    many = sample(t, 2000, generator(1, "train")).X
    np.testing.assert_allclose(many.var(dim=(0, 2)).numpy(), np.square(p.sigma), rtol=0.02)


def test_rank_one_teacher_is_the_rescaled_gaussian():
    t = make_teacher(ModelParams(rho0=2.0), 40, generator(5, "teacher"))
    g = torch.randn((40, 1), generator=generator(5, "teacher"), dtype=torch.float64)  # paper P draws nothing first
    torch.testing.assert_close(t.Qstar, math.sqrt(2.0) * g * math.sqrt(40) / torch.linalg.vector_norm(g))


def test_invariants_are_rotation_invariant_and_reduce_to_rank_one():
    p = ModelParams(L=3, P=SIMPLEX_P3, r=2, r_star=2)
    t = make_teacher(p, 50, generator(2, "teacher"))
    Q = torch.randn((50, 2), generator=generator(2, "init"), dtype=torch.float64)
    O, _ = torch.linalg.qr(torch.randn((2, 2), generator=generator(3, "init"), dtype=torch.float64))
    a, b = overlaps(Q, t), overlaps(Q @ O, t)
    for field in ("m_norms", "q0_eigenvalues", "theta_singular_values"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), atol=1e-12)
    assert a.q == pytest.approx(sum(a.q0_eigenvalues)) and a.q0_eigenvalues[0] >= a.q0_eigenvalues[1]
    assert a.theta == pytest.approx(math.sqrt(sum(s * s for s in a.theta_singular_values)))
    t1 = make_teacher(ModelParams(L=3, P=SIMPLEX_P3), 50, generator(2, "teacher"))
    q1 = Q[:, :1]
    o = overlaps(q1, t1)
    assert o.m == pytest.approx(float(t1.positions[0] @ q1[:, 0]) / math.sqrt(50))  # signed at r = r* = 1
    assert o.theta == pytest.approx(float(t1.Qstar[:, 0] @ q1[:, 0]) / 50)
    assert o.m_norms[0] == pytest.approx(abs(o.m)) and o.q0_eigenvalues[0] == pytest.approx(o.q)
    assert math.hypot(*o.m_norms) == pytest.approx(float(torch.linalg.vector_norm(t1.positions @ q1)) / math.sqrt(50))


def test_semantic_start_copies_the_teacher_columns():
    t = make_teacher(ModelParams(r=3, r_star=2), 40, generator(0, "teacher"))
    Q = initial_Q("semantic", t, 3, generator(0, "init"))
    torch.testing.assert_close(Q[:, :2], t.Qstar)
    assert overlaps(Q, t).theta_singular_values == pytest.approx((1.0, 1.0), abs=0.1)


def test_general_simulation_runs_and_reports_invariants():
    p = ModelParams(L=3, sigma=(0.4, 0.5, 0.6), P=SIMPLEX_P3, A=GENERAL_CASES[0].params.A, r=2, r_star=2)
    res = run_simulation(SimSpec(d=24, alpha=1.0, init="positional", params=p, n_test=200, device="cpu",
                                 train=TrainConfig(grad_tol=1e-5)))
    assert res.converged and (res.rank, res.teacher_rank) == (2, 2)
    js = res.to_json()
    assert tuple(js) == JSON_KEYS + RANK_JSON_KEYS
    assert len(js["m_norms"]) == 3 and len(js["q0_eigenvalues"]) == 2 and len(js["theta_singular_values"]) == 2
    r1 = run_simulation(SimSpec(d=24, alpha=1.0, init="semantic", n_test=200, device="cpu"))
    assert tuple(r1.to_json()) == JSON_KEYS  # today's keys at rank 1


# --- branch segments ---------------------------------------------------------------------------

def _rec(alpha, branch, theta=0.3, converged=True):
    return {"alpha": alpha, "branch": branch, "theta": theta, "m": 0.0, "m_norm": 0.0, "q": 0.4, "eps_g": 3e-3,
            "e_t": 4e-3 - 1e-4 * alpha * (branch == "semantic"), "eps_lin": 2e-3, "converged": converged}


def test_a_branch_is_drawn_only_where_it_exists():
    recs = [_rec(0.35, "semantic", theta=1e-4), _rec(0.5, "agnostic", 0.0), _rec(0.65, "agnostic", 0.0),
            _rec(0.8, "semantic"), _rec(1.0, "semantic", converged=False), _rec(1.25, "semantic"),
            _rec(1.5, "semantic")]
    segs = existing_segments(recs, "semantic", 0.72, "theta")
    assert [a for a, _ in segs] == [[0.8], [1.25, 1.5]]  # 0.35 is below the end; 1.0 did not converge
    assert drawn_end(recs, "semantic", 0.72) == 0.72 and drawn_end(recs, "semantic", math.nan) is None
    pos = [dict(_rec(a, "positional"), m_norm=0.3) for a in (0.5, 1.0, 2.0)]
    assert [a for a, _ in existing_segments(pos, "positional", 1.5, "theta")] == [[0.5, 1.0]]
    # a point labelled positional with |m| below the branch's floor is not the branch, with or without an end
    low = pos[:2] + [dict(pos[2], m_norm=0.0035)]
    assert [a for a, _ in existing_segments(low, "positional", math.nan, "m_norm")] == [[0.5, 1.0]]
    assert drawn_end(low[2:], "positional", 2.5) is None


# --- the suite's bookkeeping -------------------------------------------------------------------

def _theory(alpha_c, sem_end=0.6):
    grid = (0.5, 1.0, 1.5, 2.0)
    sem = tuple(_rec(a, "semantic" if a > sem_end else "agnostic", theta=0.4 * a) for a in grid)
    pos = tuple({**_rec(a, "positional", theta=0.0), "m": 0.25, "m_norm": 0.3} for a in grid)
    return TheoryAtOmega(omega=0.3, eps_lin=2e-3, alpha_c={"global": alpha_c}, alpha_l={"global": math.nan},
                         notes={"global": ()}, curves={("semantic", "global"): BranchCurve("semantic", "global", sem, sem_end),
                                                       ("positional", "global"): BranchCurve("positional", "global", pos)},
                         seconds=0.0)


def test_alphas_straddle_alpha_c_or_the_semantic_end():
    grid = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
    assert landmark(_theory(1.19)) == (1.19, "alpha_c")
    assert alphas_around(grid, 1.19, (9.0,)) == (1.0, 1.5)
    mark = landmark(_theory(math.nan, sem_end=0.43))
    assert mark[0] == 0.43 and "semantic branch end" in mark[1]
    assert alphas_around(grid, 0.43, (9.0,)) == (0.25, 0.75)
    assert alphas_around(grid, math.nan, (0.5, 2.0)) == (0.5, 2.0)


def test_case_rows_apply_the_agreement_rule():
    case = GENERAL_CASES[1]
    base = run_simulation(SimSpec(d=16, alpha=1.0, init="semantic", params=case.params, n_test=50, device="cpu"))
    runs = [replace(base, theta=v, eps_g=3e-3, seed=s) for s, v in enumerate((0.41, 0.39))]
    runs += [replace(base, init="positional", m_norms=(0.2, 0.2), eps_g=3e-3, seed=s) for s in range(2)]
    rows = {r["init"]: r for r in case_rows(case, runs, _theory(1.19), (1.19, "alpha_c"))}
    sem, pos = rows["semantic"], rows["positional"]
    assert sem["side"] == "below" and sem["theory"]["abs_theta"] == pytest.approx(0.4)
    assert sem["agrees"] == {"abs_theta": True, "eps_g": True} and sem["status"] == "agrees"
    assert pos["m_norm_mean"] == pytest.approx(math.sqrt(0.08))  # 0.283 vs 0.3: inside 10 %
    assert pos["agrees"]["m_norm"] is True
    far = [replace(r, theta=0.2) for r in runs[:2]]
    assert case_rows(case, far, _theory(1.19), (1.19, "alpha_c"))[0]["status"] == "disagrees"
    none = case_rows(GENERAL_CASES[3], runs[:2], None, (math.nan, ""))
    assert none[0]["status"] == "no theory" and none[0]["agrees"]["abs_theta"] is None


def test_the_plan_covers_the_five_general_cases():
    keys = [c.key for c in GENERAL_CASES]
    assert keys == ["a", "b", "c", "d", "e"]
    assert [is_rank_case(c.params) for c in GENERAL_CASES] == [False, False, False, True, True]
    a = GENERAL_CASES[0].params
    assert a.L == 3 and not np.allclose(a.A_array, a.A_array.T) and np.allclose(a.A_array.sum(1), 1)
    assert general_plan(quick=True).d == 200 and general_plan().d >= 1000
    assert all(c.alphas and c.alphas_note for c in GENERAL_CASES if is_rank_case(c.params))
    assert [c.key for c in select_cases("d, e")] == ["d", "e"] and select_cases(None) == GENERAL_CASES
    with pytest.raises(ValueError, match="--cases"):
        select_cases("d,z")


def test_a_noise_level_point_past_the_branch_end_is_no_theory_point():
    """The semantic solve below the branch's end can land on a point labelled semantic with theta ~ 1e-4:
    it is not the branch, so neither the agreement rule nor the theory's Delta e_t uses it."""
    from attnphase.validation.campaign import delta_et_rows, group_rows
    from attnphase.validation.agreement import agrees

    th = _theory(1.19, sem_end=0.72)
    sem = tuple(dict(r, branch="semantic", theta=1e-4) if r["alpha"] == 0.5 else r
                for r in th.curve("semantic", "global").records)
    th = replace(th, curves={**th.curves, ("semantic", "global"): BranchCurve("semantic", "global", sem, 0.72)})
    runs = [run_simulation(SimSpec(d=16, alpha=a, init=i, n_test=50, device="cpu"))
            for a in (0.5, 2.0) for i in ("semantic", "positional")]
    rows = {(r["alpha"], r["init"]): r for r in group_rows(runs, {0.3: th})}
    assert rows[(0.5, "semantic")]["theory"]["global"]["exists"] is False
    assert agrees(rows[(0.5, "semantic")], "abs_theta") is None
    assert agrees(rows[(2.0, "semantic")], "abs_theta") in (True, False)
    delta = {r["alpha"]: r["theory"]["global"] for r in delta_et_rows(runs, {0.3: th})}
    assert delta[0.5] is None and delta[2.0] is not None


def test_token_covariance_across_positions():
    C = ((0.25, 0.075), (0.075, 0.25))  # two tokens with correlation 0.3
    p = ModelParams(C=C)
    assert p.sigma == (0.5, 0.5) and p.correlated_tokens
    t = make_teacher(p, 50, generator(0, "teacher"))
    X = sample(t, 4000, generator(0, "train")).X
    emp = torch.einsum("nkd,nld->kl", X, X) / (4000 * 50)
    np.testing.assert_allclose(emp.numpy(), np.array(C), atol=0.01)
    indep = ModelParams(C=((0.25, 0.0), (0.0, 0.25)))  # a diagonal C is the independent model, same draws
    assert not indep.correlated_tokens
    a = sample(make_teacher(indep, 20, generator(1, "teacher")), 5, generator(1, "train")).X
    b = sample(make_teacher(ModelParams(), 20, generator(1, "teacher")), 5, generator(1, "train")).X
    assert torch.equal(a, b)
    res = run_simulation(SimSpec(d=24, alpha=1.0, init="semantic", params=p, n_test=200, device="cpu"))
    assert res.converged


def test_finite_size_trend_reruns_a_disagreeing_point_at_smaller_d():
    from attnphase.validation.general_suite import finite_size_trend

    class Bar:
        total, n = 0, 0

        def update(self, k):
            self.n += k

    case = GENERAL_CASES[1]
    plan = replace(general_plan(quick=True, d=24, seeds=2), n_test=50, device="cpu")
    assert plan.trend_ds == (12,)
    runs = [run_simulation(plan.spec(case, 1.0, "semantic", s)) for s in plan.seeds]
    row = case_rows(case, runs, _theory(1.19), (1.19, "alpha_c"))[0]
    bar = Bar()
    trend = finite_size_trend(plan, case, row, runs, bar)
    assert [p["d"] for p in trend] == [12, 24] and bar.n == 2 and all(p["n"] == 2 for p in trend)
    assert trend[-1]["abs_theta_mean"] == pytest.approx(row["abs_theta_mean"])


# --- the rank-r theory of cases (d) and (e) ----------------------------------------------------

def _cheap_rank_config(**kw):
    from attnphase.validation.invariant_points import point_config

    return point_config("sobol8").replace(**kw)


def _rank_runs(case, alpha, d=12, seeds=2):
    return [run_simulation(SimSpec(d=d, alpha=alpha, init=i, seed=s, params=case.params, n_test=50, device="cpu"))
            for i in ("semantic", "positional") for s in range(seeds)]


def test_a_rank_case_row_takes_the_matrix_solves_fixed_point(tmp_path, monkeypatch, capsys):
    """Case (d) through the suite (its theory as a task in the store): the positional row's theory is the
    rank-2 fixed point that ``attnphase solve --rank 2 --branch positional`` computes at the same settings."""
    import json

    import attnphase.validation.general_suite as suite
    from attnphase.cli import main

    monkeypatch.setattr(suite, "POINT_BRANCHES", ("positional",))  # one cheap solve (~2 s)
    case = replace(GENERAL_CASES[3], alphas=(0.5,))
    plan = replace(general_plan(quick=True, d=12, seeds=2, cases=(case,)), n_test=50, device="cpu",
                   rank_quadrature="sobol8", trend_ds=(4, 8))
    summary = suite.run_general_suite(plan, tmp_path, progress=False)
    trended = [r for r in summary["cases"][0]["rows"] if r.get("trend")]
    from attnphase.validation.general_report import render_general_markdown
    assert trended and all([p["d"] for p in r["trend"]] == [4, 8, 12] for r in trended)
    assert all("a" in e for r in trended for e in r["extrapolations"])  # three dimensions: a d -> inf fit
    assert "| d = 4 | d = 8 | d = 12 | d -> inf | at d -> inf |" in render_general_markdown(summary)
    # the report names the command that made it (it dropped every option but --quick)
    made = render_general_markdown(summary | {"command": "attnphase validate --suite general --cases d --d 12"})
    assert "Generated by `attnphase validate --suite general --cases d --d 12`." in made
    row = next(r for r in summary["cases"][0]["rows"] if r["init"] == "positional")
    th = row["theory"]
    assert th["converged"] and th["branch_reached"] == "positional" and th["exists"]
    assert main(["solve", "--rank", "2", "--alpha", "0.5", "--omega", "0.3", "--branch", "positional",
                 "--quadrature", "sobol8", "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert th["m_norm"] == pytest.approx(math.sqrt(sum(x * x for x in direct["m_norms"])), rel=1e-12)
    assert th["eps_g"] == pytest.approx(direct["eps_g"], rel=1e-12) and th["abs_theta"] == 0.0
    assert th["q"] == pytest.approx(sum(direct["q0_eigenvalues"]), rel=1e-12)
    assert row["agrees"]["m_norm"] == within(row, "m_norm", th["m_norm"])
    assert summary["theory_jobs_cached"] == 0
    from attnphase.execution import ResultStore
    from attnphase.validation.jobs import simulation_task, simulation_version

    store = ResultStore(tmp_path / "tasks")  # the simulations are tasks too, kept beside the theory
    specs = [plan.spec(case, 0.5, i, s) for i in ("semantic", "positional") for s in plan.seeds]
    kept = [store.load(simulation_task(sp, simulation_version()).key) for sp in specs]
    assert all(k is not None and k.status == "done" for k in kept)
    # the finite-size trend's runs are counted too (quick --cases b --d 50 said 4 simulations of the 12 it ran)
    trend_runs = sum(p["n"] for r in trended for p in r["trend"] if p["d"] != plan.d)
    assert trend_runs > 0 and summary["n_simulations"] == len(specs) + trend_runs
    # beside it the aligned-prox rank-2 point on the start's branch (no mixed branch solved here)
    assert row["aligned"]["requested"] == "positional" and "aligned_mixed" not in row
    again = suite.run_general_suite(plan, tmp_path, progress=False)  # the store answers the rerun
    assert again["theory_jobs_cached"] == 2  # the global- and the aligned-prox point
    assert again["cases"][0]["theory"]["points"] == summary["cases"][0]["theory"]["points"]


def within(row, obs, theory):
    from attnphase.validation.agreement import within_rule

    return within_rule(row[f"{obs}_mean"], row[f"{obs}_std"], row["n_runs"], theory)


def test_a_rank_point_that_did_not_converge_is_reported_as_not_converged():
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.validation.general_report import mixed_table_lines, table_lines
    from attnphase.validation.invariant_points import InvariantPoints, invariant_point

    case = GENERAL_CASES[4]  # r = r* = 2
    cfg = _cheap_rank_config(max_iter=2)
    points = {(2.0, b): invariant_point(solve(case.params, 2.0, b, config=cfg), b)
              for b in ("semantic", "positional", "mixed")}
    assert not any(p["converged"] for p in points.values())
    theory = InvariantPoints(points, eps_lin=2e-3, quadrature="sobol8", seconds=0.0)
    rows = case_rows(case, _rank_runs(case, 2.0), theory, (math.nan, "none"))
    for row in rows:
        assert row["status"] == "no theory point" and set(row["agrees"].values()) == {None}
        assert set(row["mixed_agrees"].values()) == {None}
        assert row["theory"]["eps_g"] is None and row["theory"]["abs_theta"] is None
    summary = {"cases": [{"key": "e", "theory": theory.to_dict(), "rows": rows}]}
    for line in table_lines(summary)[2:]:
        cells = [c.strip() for c in line.split("|")]
        res = points[(2.0, cells[4])]["residual"]
        assert cells[7] == "--" and cells[9] == "--"  # theory overlap and eps_g: no number
        assert cells[10] == f"not converged (residual {res:.2g})" and cells[11] == "no theory point"
    for line in mixed_table_lines(summary)[2:]:
        cells = [c.strip() for c in line.split("|")]
        assert cells[7:10] == ["--", "--", "--"] and cells[10].startswith("not converged (residual ")
        assert cells[11] == "no mixed point"


def test_gd_rows_of_a_rank_case_are_checked_against_the_mixed_point():
    """A row agrees with the mixed point when its |theta|, |m| and eps_g all do; the verdict says so."""
    from attnphase.validation.general_report import table_lines
    from attnphase.validation.invariant_points import InvariantPoints

    case = GENERAL_CASES[3]
    runs = _rank_runs(case, 2.0)
    mean = {o: float(np.mean([getattr(r, "m_norm") if o == "m_norm" else abs(r.theta) if o == "abs_theta"
                              else r.eps_g for r in runs if r.init == "semantic"])) for o in ("abs_theta", "m_norm", "eps_g")}

    def pt(branch, label, **obs):
        return {"alpha": 2.0, "requested": branch, "converged": True, "residual": 1e-9, "branch_reached": label,
                "exists": label == branch, "q": 0.4, "e_t": 3e-3, **obs}

    mixed = pt("mixed", "mixed", **mean)
    sem = pt("semantic", "semantic", abs_theta=10 * mean["abs_theta"] + 1, m_norm=0.0, eps_g=mean["eps_g"])
    pos = pt("positional", "positional", abs_theta=0.0, m_norm=mean["m_norm"], eps_g=mean["eps_g"])
    theory = InvariantPoints({(2.0, "semantic"): sem, (2.0, "positional"): pos, (2.0, "mixed"): mixed}, 2e-3, "sobol8", 0.0)
    rows = {r["init"]: r for r in case_rows(case, runs, theory, (math.nan, "none"))}
    s = rows["semantic"]
    assert s["theory"] is sem and s["agrees"]["abs_theta"] is False and s["status"] == "disagrees"
    assert s["mixed_agrees"] == {"abs_theta": True, "m_norm": True, "eps_g": True}
    line = next(x for x in table_lines({"cases": [{"key": "d", "theory": theory.to_dict(), "rows": [s]}]})[2:])
    assert "disagrees (abs_theta); GD at the mixed point (agrees with it)" in line and "| semantic |" in line
    off = InvariantPoints({**theory.points, (2.0, "mixed"): dict(mixed, branch_reached="positional", exists=False)},
                     2e-3, "sobol8", 0.0)
    assert set(case_rows(case, runs, off, (math.nan, ""))[0]["mixed_agrees"].values()) == {None}
    # which rows get a finite-size trend: a disagreement with either point
    from attnphase.validation.general_suite import disagrees

    both = InvariantPoints({**theory.points, (2.0, "semantic"): dict(sem, abs_theta=mean["abs_theta"])}, 2e-3, "sobol8", 0.0)
    ok = {r["init"]: r for r in case_rows(case, runs, both, (math.nan, ""))}["semantic"]
    assert ok["status"] == "agrees" and all(ok["mixed_agrees"].values()) and not disagrees(ok)
    far = InvariantPoints({**both.points, (2.0, "mixed"): dict(mixed, abs_theta=10 * mean["abs_theta"] + 1)},
                     2e-3, "sobol8", 0.0)
    bad = {r["init"]: r for r in case_rows(case, runs, far, (math.nan, ""))}["semantic"]
    assert bad["status"] == "agrees" and bad["mixed_agrees"]["abs_theta"] is False and disagrees(bad)
    from attnphase.validation.general_suite import finite_size_trend

    class Bar:
        total, n = 0, 0

        def update(self, k):
            self.n += k

    plan = replace(general_plan(quick=True, d=12, seeds=2, cases=(case,)), n_test=50, device="cpu", trend_ds=(6,))
    trend = finite_size_trend(plan, case, bad, runs, Bar())
    assert [p["d"] for p in trend] == [6, 12]
    assert trend[-1]["m_norm_mean"] == pytest.approx(bad["m_norm_mean"])  # the mixed comparison's |m| too
    assert trend[-1]["abs_theta_mean"] == pytest.approx(bad["abs_theta_mean"])


def test_a_rank_row_off_both_global_points_is_said_to_sit_at_the_aligned_mixed_point():
    """A rank-r row that disagrees with the global-prox points of its start's branch and the mixed one but agrees
    with the aligned-prox mixed point on |theta|, |m| and eps_g: the verdict and the second aligned table say so;
    an aligned mixed solve that reached another label is no point."""
    from attnphase.validation.general_report import mixed_table_lines, table_lines
    from attnphase.validation.invariant_points import InvariantPoints

    case = GENERAL_CASES[3]
    runs = _rank_runs(case, 0.5)
    sem_runs = [r for r in runs if r.init == "semantic"]
    mean = {"abs_theta": float(np.mean([abs(r.theta) for r in sem_runs])),
            "m_norm": float(np.mean([r.m_norm for r in sem_runs])),
            "eps_g": float(np.mean([r.eps_g for r in sem_runs]))}

    def pt(branch, label, **obs):
        return {"alpha": 0.5, "requested": branch, "converged": True, "residual": 1e-9, "branch_reached": label,
                "exists": label == branch, "q": 0.4, "e_t": 3e-3, "quadrature": "sobol8", "tries": [], **obs}

    far = {"abs_theta": 10 * mean["abs_theta"] + 1, "m_norm": 10 * mean["m_norm"] + 1, "eps_g": mean["eps_g"]}
    theory = InvariantPoints({(0.5, b): pt(b, b, **far) for b in ("semantic", "positional", "mixed")}, 2e-3, "sobol8",
                             0.0)
    aligned = {(0.5, "semantic"): pt("semantic", "semantic", **far),
               (0.5, "positional"): pt("positional", "mixed", **far), (0.5, "mixed"): pt("mixed", "mixed", **mean)}
    rows = {r["init"]: r for r in case_rows(case, runs, theory, (math.nan, "none"), aligned)}
    s = rows["semantic"]
    assert s["status"] == "disagrees"
    assert s["aligned_mixed_agrees"] == {"abs_theta": True, "m_norm": True, "eps_g": True}
    summary = {"cases": [{"key": "d", "theory": theory.to_dict(), "rows": [s]}]}
    assert "; at the aligned-prox mixed point (agrees with it: the basin GD keeps)" in table_lines(summary)[2]
    line = mixed_table_lines(summary, "aligned_mixed", "aligned mixed")[2]
    assert line.endswith("| mixed | agrees |") and "| semantic |" in line
    off = {**aligned, (0.5, "mixed"): pt("mixed", "positional", **mean)}
    s2 = {r["init"]: r for r in case_rows(case, runs, theory, (math.nan, "none"), off)}["semantic"]
    assert set(s2["aligned_mixed_agrees"].values()) == {None}
    summary2 = {"cases": [{"key": "d", "theory": theory.to_dict(), "rows": [s2]}]}
    assert "aligned-prox mixed" not in table_lines(summary2)[2]


def test_a_rank_row_at_no_point_names_the_point_it_is_nearest():
    """A rank-r semantic row past its branch's end (the semantic point does not exist, the mixed solve reached the
    positional point) that sits on the positional point in |m| and eps_g but not in |theta|: the verdict names the
    positional point, what agrees and what does not; with |m| off too it names none; a rank-1 row never."""
    from attnphase.validation.general_report import nearest_point, table_lines
    from attnphase.validation.invariant_points import InvariantPoints

    case = GENERAL_CASES[3]
    runs = _rank_runs(case, 0.5)
    sem_runs = [r for r in runs if r.init == "semantic"]
    mean = {"m_norm": float(np.mean([r.m_norm for r in sem_runs])),
            "eps_g": float(np.mean([r.eps_g for r in sem_runs]))}
    theta = float(np.mean([abs(r.theta) for r in sem_runs]))

    def pt(branch, label, exists, **obs):
        return {"alpha": 0.5, "requested": branch, "converged": True, "residual": 1e-9, "branch_reached": label,
                "exists": exists, "q": 0.4, "e_t": 3e-3, "quadrature": "sobol8", "tries": [], **obs}

    far = {"abs_theta": 10 * theta + 1, "m_norm": 10 * mean["m_norm"] + 1, "eps_g": 10 * mean["eps_g"]}
    positional = pt("positional", "positional", True, abs_theta=0.0, **mean)
    theory = InvariantPoints({(0.5, "semantic"): pt("semantic", "semantic", False, **far),
                              (0.5, "positional"): positional, (0.5, "mixed"): pt("mixed", "positional", False, **far)},
                             2e-3, "sobol8", 0.0)
    rows = case_rows(case, runs, theory, (math.nan, "none"))
    s = next(r for r in rows if r["init"] == "semantic")
    assert s["status"] == "disagrees" and set(s["mixed_agrees"].values()) == {None}
    said = nearest_point(rows, s)
    assert said.startswith("; nearest the positional point: agrees in abs(m), eps_g; abs(theta) ")
    assert said.endswith(" against 0")
    summary = {"cases": [{"key": "d", "theory": theory.to_dict(), "rows": rows}]}
    assert said in next(x for x in table_lines(summary)[2:] if "| semantic |" in x)
    moved = InvariantPoints({**theory.points, (0.5, "positional"): dict(positional, m_norm=far["m_norm"])}, 2e-3,
                            "sobol8", 0.0)
    rows2 = case_rows(case, runs, moved, (math.nan, "none"))
    assert nearest_point(rows2, next(r for r in rows2 if r["init"] == "semantic")) == ""
    rank_one = {k: v for k, v in s.items() if k not in ("mixed", "mixed_agrees")}
    assert nearest_point(rows, rank_one) == ""


def test_a_rank_one_row_is_also_compared_with_the_aligned_prox_fixed_point(capsys):
    """Case (c): the aligned-prox point of the suite is the one ``solve --prox aligned`` prints, a row is
    checked against it by the same rule, and the report says where it agrees and the global point does not."""
    import json

    from attnphase.cli import main
    from attnphase.validation.basin_theory import aligned_config, aligned_job, has_aligned_theory
    from attnphase.validation.rule_retry import SolveJob
    from attnphase.validation.general_report import aligned_table_lines, table_lines

    case = GENERAL_CASES[2]
    assert has_aligned_theory(case.params) and has_aligned_theory(GENERAL_CASES[0].params)
    assert has_aligned_theory(GENERAL_CASES[3].params)  # rank r too; not with tokens correlated across positions
    assert not has_aligned_theory(replace(case.params, sigma=(1.0, 1.0), C=((1.0, 0.3), (0.3, 1.0))))
    pt = aligned_job(SolveJob(case.params, 0.75, "positional", aligned_config().replace(quadrature="sobol9")))
    assert main(["solve", "--A", "0.3,0.7;0.8,0.2", "--omega", "0.14", "--alpha", "0.75", "--branch", "positional",
                 "--prox", "aligned", "--quadrature", "sobol9", "--error-estimate", "0", "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert pt["exists"] and pt["m_norm"] == pytest.approx(math.sqrt(2) * abs(direct["m"]), rel=1e-12)
    assert pt["eps_g"] == pytest.approx(direct["eps_g"], rel=1e-12) and pt["abs_theta"] == 0.0
    base = run_simulation(SimSpec(d=16, alpha=0.75, init="positional", params=case.params, n_test=50, device="cpu"))
    near = [replace(base, m_norms=(pt["m_norm"] / math.sqrt(2) * (1 + e),) * 2, eps_g=pt["eps_g"], seed=s)
            for s, e in enumerate((0.02, -0.02))]
    far = [replace(r, m_norms=(0.01, 0.01)) for r in near]
    mark = (0.43, "semantic branch end (no alpha_c)")
    row = case_rows(case, near, _theory(math.nan, 0.43), mark, {(0.75, "positional"): pt})[0]
    assert row["aligned_agrees"] == {"m_norm": True, "eps_g": True} and row["status"] == "no theory point"
    assert case_rows(case, far, _theory(math.nan, 0.43), mark, {(0.75, "positional"): pt})[0]["aligned_agrees"][
        "m_norm"] is False
    summary = {"cases": [{"key": "c", "rows": [row]}]}
    assert "agrees with the aligned-prox SE" in table_lines(summary)[2]
    assert aligned_table_lines(summary)[2].endswith("| no theory point | agrees |")


def test_a_rank_point_below_the_floor_is_not_its_branch_and_a_failed_solve_is_tried_on_the_next_rule(monkeypatch):
    """invariant_point: a semantic point with noise-level theta does not count as the semantic branch (the rank-1
    sweeps' floor); point_job: a solve that misses the branch is tried on the next scrambling, and says so."""
    import attnphase.numerics.se.state_evolution as se
    from attnphase.numerics.se.observables import Observables
    from attnphase.numerics.se.results import SolverStatus
    from attnphase.validation.invariant_points import point_config, invariant_point, point_job
    from attnphase.validation.rule_retry import SolveJob

    class FP:
        alpha, observables = 0.5, Observables(3e-3, 1e-3, 2e-3)

        def __init__(self, sv, converged=True, quadrature="sobol9"):
            self.sv, self.quadrature = sv, quadrature
            self.status = SolverStatus(converged, 3, 1e-12, "converged")
            self.branch = "semantic"

        @property
        def record(self):
            return {"branch": "semantic", "th0_singular_values": [self.sv], "m_norms": [0.0, 0.0],
                    "q0_eigenvalues": [0.1, 0.05], "directions": ["semantic", "noise"]}

    assert not invariant_point(FP(0.004), "semantic")["exists"] and invariant_point(FP(0.3), "semantic")["exists"]
    calls = []

    def fake(params, alpha, branch, config):
        calls.append(config.quadrature)
        return FP(0.3, converged=len(calls) > 1, quadrature=config.quadrature)

    monkeypatch.setattr(se, "solve", fake)
    out = point_job(SolveJob(GENERAL_CASES[3].params, 0.5, "semantic", point_config("sobol9")))
    assert len(calls) == 2 and calls[0] != calls[1] and out["exists"] and out["quadrature"] == calls[1]
    assert out["tries"] == [f"{calls[0]}: not converged (residual 1.0e-12)"]


def test_a_rank_point_carries_the_error_bars_of_its_invariants_over_the_rules_blocks():
    """point_job on a rule of 4 scrambling blocks: each invariant's err_ is the standard error of that invariant over
    the point re-solved on each block (a theta of a semantic point, not the record's raw keys)."""
    from attnphase.numerics.errors.replicates import replicate_points, standard_error
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.validation.invariant_points import INVARIANTS, invariant_point, point_config, point_job
    from attnphase.validation.rule_retry import SolveJob

    params, cfg = ModelParams(omega=0.3, r=2), point_config("sobol8:4")
    out = point_job(SolveJob(params, 2.0, "semantic", cfg))
    assert out["exists"] and all(out[f"err_{k}"] >= 0 for k in INVARIANTS)
    assert 0 < out["err_abs_theta"] < 0.05 * out["abs_theta"] and out["err_e_t"] > 0
    fp = solve(params, 2.0, "semantic", config=cfg)
    reps, _ = replicate_points(fp, cfg, 0)
    thetas = [invariant_point(p, "semantic")["abs_theta"] for p in reps if p is not None]
    assert len(thetas) == 4 and out["err_abs_theta"] == pytest.approx(standard_error(thetas), rel=1e-6)


def test_a_rank_one_theory_point_hands_its_error_bars_to_the_rows():
    from attnphase.validation.general_suite import theory_point
    from attnphase.validation.reference import BranchCurve, TheoryAtOmega

    rec = {"alpha": 2.0, "branch": "positional", "q": 0.2, "m": 0.18, "m_norm": 0.255, "V": 45.0, "theta": 0.0,
           "eps_g": 3.5e-3, "e_t": 4.4e-3, "eps_lin": 2e-2, "converged": True, "err_m": 1.3e-3,
           "err_m_norm": 1.9e-3, "err_theta": 0.0, "err_eps_g": 2e-5}
    curve = BranchCurve("positional", "global", (rec, dict(rec, alpha=1.5, **{k: None for k in rec
                                                                                 if k.startswith("err_")})))
    th = TheoryAtOmega(0.3, 2e-2, {}, {}, {}, {("positional", "global"): curve}, 0.0)
    point = theory_point(th, "positional", 2.0)
    assert point["err_m_norm"] == 1.9e-3 and point["err_abs_theta"] == 0.0 and point["err_eps_g"] == 2e-5


def test_a_disagreeing_rows_trend_is_extrapolated_to_infinite_d_and_judged_there():
    """The d -> inf fit of a trend that follows a + b/sqrt(d) returns a, agrees with a theory at a and not with one
    many standard errors away; dimensions with an unconverged run are left out, and fewer than three give no fit."""
    from attnphase.validation.finite_size import MIN_FIT_DS, trend_extrapolations as extrapolations

    ds, a, b = (250, 500, 1000, 2000), 0.2, 1.5
    trend = [{"d": d, "n": 4, "converged": True, "abs_theta_mean": a + b / math.sqrt(d), "abs_theta_std": 0.004,
              "eps_g_mean": 3e-3, "eps_g_std": 1e-5} for d in ds]
    row = {"status": "disagrees", "agrees": {"abs_theta": False, "eps_g": True},
           "theory": {"abs_theta": a, "eps_g": 3e-3}, "trend": trend}
    out = {e["observable"]: e for e in extrapolations(row)}
    assert set(out) == {"abs_theta", "eps_g"} and all(e["against"] == "branch" for e in out.values())
    assert out["abs_theta"]["a"] == pytest.approx(a, abs=1e-9) and out["abs_theta"]["form"] == "a + b/sqrt(d)"
    assert out["abs_theta"]["agrees"] is True and out["eps_g"]["agrees"] is True
    far = extrapolations(dict(row, theory={"abs_theta": a + 20 * out["abs_theta"]["a_se"], "eps_g": 3e-3}))
    assert far[0]["agrees"] is False
    # the theory's own error bar counts: 20 a_se away is within 2 hypot(a_se, 12 a_se)
    barred = extrapolations(dict(row, theory={"abs_theta": a + 20 * out["abs_theta"]["a_se"], "eps_g": 3e-3,
                                              "err_abs_theta": 12 * out["abs_theta"]["a_se"]}))
    assert barred[0]["theory_se"] == 12 * out["abs_theta"]["a_se"] and barred[0]["agrees"] is True
    # a rank-r row that agrees with its branch's point but not with the mixed one: only the mixed observables
    mixed = dict(row, status="agrees", mixed={"abs_theta": 0.05, "m_norm": 0.3, "eps_g": 3e-3},
                 mixed_agrees={"abs_theta": False, "m_norm": True, "eps_g": True})
    assert [(e["observable"], e["against"], e["agrees"]) for e in extrapolations(mixed)] == [
        ("abs_theta", "mixed point", False)]
    short = dict(row, trend=[dict(p, converged=p["d"] != 500) for p in trend[1:]])
    assert len(trend[1:]) == MIN_FIT_DS and all("a" not in e and e["agrees"] is None for e in extrapolations(short))
