"""Probes of every command: extreme model values, odd numbers for numeric options, reruns and output modes.  Each asserts the answer a user must get: a one-line error naming
the option (exit 2), a one-line failure that says what happened (exit 1), never a traceback or a raw errno."""

from __future__ import annotations

import contextlib
import io

import pytest

from attnphase.cli import main


def test_an_overflow_in_a_computation_says_overflow_not_an_errno_pair():
    from attnphase import work

    line = work.failure_message("solving the state evolution", OverflowError(34, "Numerical result out of range"))
    assert line.startswith("attnphase: failed: while solving the state evolution: floating-point overflow "
                           "(Numerical result out of range)") and "(34," not in line


@pytest.mark.parametrize("rho0", ["1e-300", "1e300"])
def test_a_teacher_norm_double_precision_cannot_square_is_refused(rho0, capsys):
    """At rho0 = 1e-300 th0^2 underflows against q0 rho0 inside the solve; at rho0 = 1e300 the solve overflows."""
    code = main(["solve", "--alpha", "2", "--rho0", rho0, "--quadrature", "gh6", "--error-estimate", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("attnphase: error: --rho0: rho0 (teacher norm) must lie in")


@pytest.mark.parametrize("argv", [
    ["sweep", "--omega", "0.3", "--alpha", "1:1:3"],
    ["sweep", "--omega", "0.3", "--alpha", "1,2,1"],
    ["phase-diagram", "--omega", "0.3,0.3"],
    ["scan", "--lam", "0.01,0.01,0.02", "--omega", "0.3"],
    # within 1e-12: the sweep's continuation took them for one point and wrote the second alpha on both rows
    ["sweep", "--omega", "0.3", "--alpha", "1.5,2,2.0000000000001,2.5"],
    ["phase-diagram", "--omega", "0.3,0.30000000000000004"],
])
def test_a_grid_point_given_twice_is_refused(argv, capsys, tmp_path):
    """A repeated grid value would be computed twice and make the dataset's coordinate non-monotonic (not CF)."""
    code = main([*argv, "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "values must be distinct" in err[0], err
    assert err[0].startswith(f"attnphase: error: {argv[3] if argv[0] == 'sweep' else argv[1]}")
    assert not (tmp_path / "o").exists()


def test_per_token_values_may_repeat(capsys):
    code = main(["solve", "--alpha", "2", "--sigma", "0.5,0.5", "--quadrature", "gh6", "--error-estimate", "0", "--json"])
    assert code == 0, capsys.readouterr().err


def test_a_rerun_of_another_model_over_the_same_file_names_says_it_replaced_them(tmp_path, capsys):
    out = str(tmp_path / "s")
    common = ["sweep", "--omega", "0.3", "--alpha", "1.5,2", "--quadrature", "gh6", "--quiet", "--out", out]
    assert main(common) == 0
    capsys.readouterr()
    assert main([*common, "--lam", "0.02"]) == 0
    err = capsys.readouterr().err
    assert "held an earlier sweep_semantic job (lam=0.01 -> 0.02); this run's files replace its files" in err, err


@pytest.mark.parametrize("tol", ["1e-300", "1e-15"])
def test_a_tol_below_the_residuals_round_off_is_refused(tol, capsys):
    """At --tol 1e-300 every re-solve of the error estimate missed the tolerance: "no fixed point", exit 1, though
    the point exists (its residual stops at a few 1e-16)."""
    code = main(["solve", "--alpha", "2", "--tol", tol])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"attnphase: error: --tol {tol}") and "[1e-14, 1e-06]" in err[0]


def test_the_tightest_tol_taken_converges_with_error_bars(capsys):
    import json

    assert main(["solve", "--alpha", "2", "--tol", "1e-14", "--quadrature", "sobol8:4", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["converged"] and rec["residual"] <= 1e-14 and rec["err_q"] > 0


def test_a_sweep_says_why_a_bar_is_zero(tmp_path, capsys):
    """``sweep --branch semantic`` wrote err_m = 0 on every row with no word (``solve`` says why in its error_note):
    the JSON's error_note and a note on stderr name the symmetry that holds m at 0 exactly."""
    import json

    argv = ["sweep", "--omega", "0.3", "--alpha", "2,2.4", "--branch", "semantic", "--quadrature", "sobol8:4",
            "--workers", "1", "--quiet", "--json", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    cap = capsys.readouterr()
    obj = json.loads(cap.out)
    assert all(r["err_m"] == 0.0 and r["m"] == 0.0 and r["err_theta"] > 0 for r in obj["rows"])
    assert "err_m = 0: m = 0 exactly on the semantic branch" in obj["error_note"]
    assert "attnphase: note: err_m = 0: m = 0 exactly" in cap.err
    from attnphase.execution.dataset import open_dataset

    with open_dataset(tmp_path / "o" / "sweep_semantic.nc") as ds:  # the dataset says it too
        assert ds.attrs["error_note"] == obj["error_note"]


def test_the_census_says_why_its_fixed_points_bars_are_zero():
    """``census --json`` listed err_theta = 0 on the positional point, err_m = 0 on the semantic one and both on the
    agnostic one with no error_note: the note of each distinct case, once (the census itself runs for minutes: its
    rows are given here)."""
    from attnphase.numerics.commands.point_record import exact_zero_rows_note

    row = {"q": 0.3, "V": 50.0, "eps_g": 3e-3, "e_t": 3e-3, "reason": "", "err_q": 1e-3, "err_V": 0.2,
           "err_eps_g": 1e-5, "err_e_t": 1e-5}
    rows = [row | {"branch": "positional", "m": 0.25, "err_m": 1e-3, "theta": 0.0, "err_theta": 0.0},
            row | {"branch": "semantic", "m": 0.0, "err_m": 0.0, "theta": 0.5, "err_theta": 2e-3},
            row | {"branch": "semantic", "m": 0.0, "err_m": 0.0, "theta": 0.6, "err_theta": 2e-3},
            row | {"branch": "agnostic", "m": 0.0, "err_m": 0.0, "theta": 0.0, "err_theta": 0.0},
            row | {"branch": "semantic", "m": 0.0, "err_m": 0.0, "theta": 0.0, "err_theta": 0.0,
                   "reason": "not converged"}]
    note = exact_zero_rows_note(rows)
    assert note.split("; ") == [
        "err_theta = 0: theta = 0 exactly on the positional branch (its symmetry holds it there on every rule)",
        "err_m = 0: m = 0 exactly on the semantic branch (its symmetry holds it there on every rule)",
        "err_m = err_theta = 0: m = theta = 0 exactly on the agnostic branch (its symmetry holds it there on every rule)"]
    assert exact_zero_rows_note([rows[0] | {"err_theta": 1e-4, "theta": 1e-3}]) == ""


def test_a_bayes_optimal_phase_diagram_takes_one_alpha(tmp_path, capsys):
    """``phase-diagram --estimator bayes-optimal --alpha 0.5`` was refused: "the boundaries are located between the
    points of an alpha grid" -- true of the ERM diagram, not of the Bayes-optimal thresholds, computed directly (the
    grid only carries the estimator's eps_g).  The thresholds do not depend on the grid."""
    import json

    base = ["phase-diagram", "--estimator", "bayes-optimal", "--omega", "0.3", "--workers", "1", "--quiet", "--json"]
    assert main([*base, "--alpha", "0.5", "--out", str(tmp_path / "one")]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["alphas"] == [0.5] and len(one["curves"]["0.3"]) == 1
    assert (tmp_path / "one" / "phase_diagram_bayes-optimal.png").stat().st_size > 0
    assert main([*base, "--alpha", "0.2,0.5", "--out", str(tmp_path / "two")]) == 0
    two = json.loads(capsys.readouterr().out)
    keys = ("alpha_weak_recovery", "alpha_it", "alpha_amp")
    assert [one["rows"][0][k] for k in keys] == [two["rows"][0][k] for k in keys]


def test_a_matrix_solve_says_why_a_bar_is_zero_or_absent(capsys):
    """``solve --teacher-rank 2`` gave m_norms [0, 0] with err_m_norms [0, 0], and e_t_direct and gauge_angle with no
    bar, without a word: its error_note (and a note on stderr) says why, as the scalar form's does."""
    import json

    assert main(["solve", "--alpha", "2", "--teacher-rank", "2", "--quadrature", "sobol8:4", "--json"]) == 0
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["m_norms"] == [0.0, 0.0] and rec["err_m_norms"] == [0.0, 0.0] and rec["err_th0_singular_values"][0] > 0
    assert rec["error_note"].startswith(f"err_m_norms = 0: m_norms = 0 exactly on the {rec['branch']} branch")
    assert "e_t_direct and gauge_angle have no err_" in rec["error_note"] and "attnphase: note: err_m_norms" in cap.err
    from attnphase.numerics.commands.point_record import matrix_bars_note

    assert matrix_bars_note(rec | {"m_norms": [0.1, 0.0], "err_e_t_direct": 1e-5, "err_gauge_angle": 0.01}) == ""


def test_a_census_says_each_reason_for_a_missing_or_zero_bar_once():
    """``census --rank 2`` repeated "e_t_direct and gauge_angle have no err_ ..." once per fixed point, and said
    "exactly on this branch" of rows of several branches: each clause once, naming its branch."""
    from attnphase.numerics.commands.point_record import exact_zero_rows_note

    def row(branch, th0, m):
        return {"branch": branch, "th0_singular_values": [th0], "err_th0_singular_values": [0.0 if th0 == 0 else 1e-3],
                "m_norms": [m, m], "err_m_norms": [0.0 if m == 0 else 1e-3] * 2, "e_t_direct": 1e-3, "gauge_angle": 0.0}

    note = exact_zero_rows_note([row("mixed", 0.2, 0.1), row("positional", 0.0, 0.1), row("agnostic", 0.0, 0.0),
                                 row("mixed", 0.3, 0.2)])
    clauses = note.split("; e_t again")[0].split("; ")
    assert note.count("have no err_") == 1 and len(clauses) == len(set(clauses))
    assert "th0_singular_values = 0 exactly on the positional branch" in note
    assert "th0_singular_values = m_norms = 0 exactly on the agnostic branch" in note


def test_a_phase_diagram_keeps_its_whole_legend_in_the_png(tmp_path, recwarn):
    """``phase-diagram --omega 0,1 --quadrature sobol8:4 ...``: error bands, a positional end found by solver failure
    and the Bayes-optimal lines made a legend below the axes taller than tight_layout could fit: the PNG lost the
    legend's lower rows and the user got matplotlib's "Tight layout not applied" as a note.  The image now spans the
    legend's whole box (measured in inches: the figure's top to the legend's bottom edge), without the warning."""
    import math

    import matplotlib.image as mpimg

    from attnphase.numerics.jobs.plots import plot_phase_diagram
    from attnphase.numerics.phase.boundary_results import Boundaries

    rows = [Boundaries(omega=0.0, alpha_c=0.658, alpha_l=0.749, semantic_end=math.nan, positional_end=1.13,
                       positional_end_kind="solver failure"),
            Boundaries(omega=1.0, alpha_c=math.nan, alpha_l=math.nan, semantic_end=math.nan, positional_end=math.nan)]
    errors = [{"err_alpha_c": 0.021, "err_alpha_l": 0.0012, "err_semantic_end": math.nan,
               "err_positional_end": math.nan}, {}]
    bayes = {"alpha_weak_recovery": 1 / 6, "alpha_it": 0.5, "alpha_amp": 0.5}
    path = tmp_path / "pd.png"
    fig = plot_phase_diagram(rows, path, alpha_max=2.2, errors=errors, bayes=bayes)
    assert not [w for w in recwarn if "Tight layout" in str(w.message)]
    legend = fig.axes[0].get_legend()
    assert legend is not None and len(legend.get_texts()) >= 6
    bottom_in = legend.get_window_extent().y0 / fig.dpi  # below 0: under the figure's edge
    height_in = mpimg.imread(path).shape[0] / 130  # the PNG, saved at 130 dpi
    assert bottom_in < 0.2  # the case: the legend reaches the figure's bottom edge, or past it
    assert height_in >= fig.get_figheight() - bottom_in - 0.05, (height_in, fig.get_figheight(), bottom_in)


def test_the_bayes_optimal_point_at_the_weak_recovery_threshold_itself(capsys):
    """At alpha = alpha_WR exactly (1/6 at L = 2; 0.05, the first point of ``--alpha 0.05:1:5``, at L = 4) the fixed
    point q0 = 0 was counted unstable and the rule's curve alpha*(q0) had no root below: no stable point, q0 = NaN,
    and eps_g = 0 +- 0 printed with exit 0 (a perfect test error at the threshold of weak recovery).  q0 = 0 is
    marginally stable there: the point is q0 = 0, its test error the uninformed one."""
    import json

    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", repr(1 / 6), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["q"] == 0.0 and rec["err_q"] == 0.0 and rec["theta"] == 0.0
    assert rec["eps_g"] > 1e-3 and rec["err_eps_g"] < 1e-6  # the test error without recovery (L = 2: ~eps_lin)
    assert abs(rec["eps_g"] - rec["eps_lin"]) < 1e-6


def test_a_bayes_optimal_solve_without_a_point_is_not_converged(capsys, monkeypatch):
    """Where the Bayes-optimal state evolution has no stable point on its rule (q0 NaN: the case above before its
    fix), ``solve`` said converged, exit 0: now converged false, a reason, exit 1."""
    import json
    import math

    import attnphase.numerics.se.bayes_curve as bc

    real = bc.bayes_point
    monkeypatch.setattr(bc, "bayes_point", lambda *a, **k: real(*a, **k).__class__(
        **{**real(*a, **k).__dict__, "q0": math.nan, "err_q0": math.nan}))
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3", "--json"]) == 1
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["converged"] is False and rec["q"] is None and "no stable informative fixed point" in rec["reason"]
    assert "attnphase: warning: no stable informative fixed point" in cap.err


def test_a_bayes_optimal_sweep_says_why_its_bars_are_zero_or_nan(tmp_path, capsys):
    """``sweep --estimator bayes-optimal`` wrote err_m = 0 on every row, err_q = 0 below alpha_WR and at perfect
    recovery, free_entropy NaN there, with no word (``solve --estimator bayes-optimal`` says why): the JSON's
    error_note and a note on stderr."""
    import json

    argv = ["sweep", "--estimator", "bayes-optimal", "--alpha", "0.1,0.3,0.6", "--branch", "informative",
            "--workers", "1", "--quiet", "--json", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    cap = capsys.readouterr()
    obj = json.loads(cap.out)
    q = [r["q"] for r in obj["rows"]]
    assert q[0] == 0.0 and 0 < q[1] < 1 and q[2] == 1.0 and obj["rows"][2]["free_entropy"] is None
    note = obj["error_note"]
    assert note.startswith("err_m = 0: m = 0 exactly") and "free_entropy and err_free_entropy NaN" in note
    assert "no recovery, q0 = 0 and of perfect recovery, q0 = rho0" in note and f"attnphase: note: {note}" in cap.err


@pytest.mark.heavy
def test_a_matrix_solve_that_stalls_on_a_jump_of_the_map_is_accepted_where_the_blocks_reproduce_it(capsys):
    # rank 2, omega = 0.2, alpha = 1.5, positional: the solve from the embedded start stalls at residual 4.8e-5 beside a
    # jump of the default rule's map of 1.2e-3 (a chain of warm solves down from alpha = 2 reaches a fixed point
    # of residual 3e-11 within the bars: q0 eigenvalues 0.2053, 0.1223, e_t 0.0029330)
    import json

    assert main(["solve", "--rank", "2", "--alpha", "1.5", "--omega", "0.2", "--branch", "positional", "--json"]) == 0
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["converged"] is True and rec["branch"] == "positional" and 1e-6 < rec["residual"] < 1e-3
    assert "note: converged to the rule's jump scale: residual" in cap.err
    assert rec["replicates"] >= 2
    (hi, lo), (err_hi, err_lo) = rec["q0_eigenvalues"], rec["err_q0_eigenvalues"]
    assert abs(hi - 0.2053) < 3 * err_hi and abs(lo - 0.1223) < 3 * err_lo


@pytest.mark.heavy  # 6-12 s: kept out of the default run's 10-minute budget
def test_a_matrix_sweep_judges_a_point_that_stalls_on_a_jump_as_solve_does(tmp_path, capsys):
    # the point of the test above, as a sweep's row: it was "not converged" (exit 1) where `solve` accepts it
    import json

    argv = ["sweep", "--rank", "2", "--alpha", "1.5", "--omega", "0.2", "--branch", "positional", "--json",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    cap = capsys.readouterr()
    row = json.loads(cap.out)["rows"][0]
    assert row["branch"] == "positional" and row["converged"] and 1e-6 < row["residual"] < 1e-3 and not row["reason"]
    assert "note: converged to the rule's jump scale" in cap.err and "alpha = 1.5" in cap.err
    assert abs(row["q0_eig_1"] - 0.2053) < 3 * row["err_q0_eig_1"]
    assert abs(row["q0_eig_2"] - 0.1223) < 3 * row["err_q0_eig_2"]


def test_a_matrix_point_at_the_jump_scale_that_the_blocks_do_not_reproduce_is_not_converged(monkeypatch):
    from dataclasses import replace

    from attnphase.numerics.errors import replicates as qe
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se import state_evolution as se
    from attnphase.theory.params import ModelParams

    cfg = SolverConfig(quadrature="sobol8:4")
    fp = se.solve(ModelParams(omega=0.3, r=2), 2.0, "positional", config=cfg)
    assert fp.status.converged
    accepted = replace(fp, status=replace(fp.status, residual=2e-5, jump=1e-3, message="converged to the rule's jump"))
    monkeypatch.setattr(qe, "replicate_points", lambda p, c, n: ([p, None, None, None], True))
    out, err = qe.judged_matrix_point(accepted, cfg)
    assert not out.status.converged and out.status.message.startswith("not converged: residual 2.00e-05 above tol")
    assert err == {}
    monkeypatch.setattr(qe, "replicate_points", lambda p, c, n: ([p, p, p, None], True))
    out, err = qe.judged_matrix_point(accepted, cfg)
    assert out is accepted and (err["replicates"], err["replicates_tried"]) == (3, 4)


@pytest.mark.parametrize("ranks, noted", [(("3", "1"), True), (("2", "3"), True), (("2", "2"), False)])
def test_a_command_at_rank_3_says_its_solves_are_not_expected_to_converge(ranks, noted, capsys):
    from attnphase.cli import build_parser
    from attnphase.numerics.commands.common import model_and_config

    args = build_parser().parse_args(["solve", "--alpha", "2", "--rank", ranks[0], "--teacher-rank", ranks[1]])
    params, _ = model_and_config(args, [0.3])
    assert (params.r, params.r_star) == (int(ranks[0]), int(ranks[1]))
    err = capsys.readouterr().err
    assert ("at r or r* >= 3 the state evolution's solves have not been seen to converge" in err) == noted


@pytest.mark.heavy
def test_a_matrix_point_whose_order_parameter_is_within_its_bar_is_warned_about(capsys):
    # r = 2, sigma = (0.5, 1), alpha = 2: the positional solve converges at |m| = 0.0049 +- 0.0070 (2 of 4 blocks on
    # the branch), where at r = 1 the positional branch is absent (the agnostic point's mu < 1); below the branch's
    # floor, it is no positional point (exit 3), as the sweep counts it
    assert main(["solve", "--rank", "2", "--alpha", "2", "--sigma", "0.5,1", "--branch", "positional", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "warning: the positional order parameter m_norms[0] = " in err and "is not resolved from 0" in err
    assert "below the branch's floor" in err


def test_the_matrix_order_parameters_checked_are_the_branchs():
    from attnphase.numerics.commands.point_record import matrix_unresolved_order_warning

    def run(rec) -> str:
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            matrix_unresolved_order_warning(rec | {"replicates": 4, "replicates_tried": 4})
        return buf.getvalue()

    mixed = {"branch": "mixed", "m_norms": [0.2, 0.2], "err_m_norms": [0.01, 0.01],
             "th0_singular_values": [0.03], "err_th0_singular_values": [0.02]}
    assert "order parameter th0_singular_values[0] = 3.00e-02" in run(mixed) and "m_norms" not in run(mixed)
    assert run(mixed | {"err_th0_singular_values": [0.01]}) == ""
    assert run(mixed | {"branch": "positional"}) == ""  # theta is no order parameter of the positional branch
    assert "err_m_norms[1] = nan" in run({"branch": "positional", "m_norms": [0.0, 0.3], "err_m_norms": [0.0, None]})
    assert run({"branch": "agnostic", "m_norms": [0.0, 0.0], "err_m_norms": [0.0, 0.0]}) == ""


@pytest.mark.parametrize("argv, said", [(["--rank", "2", "--branch", "mixed", "--quiet"], True),
                                        (["--rank", "2", "--branch", "positional"], False)])
def test_a_mixed_sweep_says_it_follows_one_of_several_branches(argv, said, monkeypatch, tmp_path, capsys):
    from attnphase.numerics.commands import sweep

    monkeypatch.setattr(sweep, "_sweeps", lambda *a: 0)
    assert main(["sweep", "--alpha", "0.5,1", "--omega", "0.1", "--out", str(tmp_path), *argv]) == 0
    assert ("the mixed label can have several branches close together" in capsys.readouterr().err) is said


def test_a_sweep_says_when_its_branch_goes_on_past_the_end_it_located():
    # sweep --branch positional --omega 0.23 --alpha 1.5:2.5:11 said the branch ends at 1.9435 (the eigenvalue's
    # end) and "exists below that" while its rows at 2.1 and 2.2 are on the branch with m 0.213 and 0.212
    import math
    from types import SimpleNamespace

    from attnphase.numerics.commands.row_reasons import beyond_end_note
    from attnphase.numerics.phase.branch_end import BranchEnd
    from attnphase.numerics.phase.continuation import BranchSweep

    def point(alpha, m):
        return SimpleNamespace(alpha=alpha, branch="positional", status=SimpleNamespace(converged=True),
                               is_matrix=False,
                               overlaps=SimpleNamespace(m=[m, -m], th0=0.0), record={"m": m, "theta": 0.0})

    end = BranchEnd(1.9435, "bifurcation", "eigenvalue", err=0.0073)
    rows = [point(1.8, 0.2226), point(1.9, 0.2214), point(2.1, 0.2131), point(2.2, 0.2119)]
    note = beyond_end_note(BranchSweep("positional", rows, end, "above"))
    assert note.startswith("the positional branch goes on past the end located (1.944, by eigenvalue) at alpha = "
                           "2.1 (m 0.213), 2.2 (m 0.212), near its m 0.221 at 1.9")
    small = [point(1.8, 0.2226), point(1.9, 0.05), point(2.1, 0.01)]  # shrinking to the end: a continuous end
    assert beyond_end_note(BranchSweep("positional", small, end, "above")) == ""
    assert beyond_end_note(BranchSweep("positional", rows[:2], end, "above")) == ""
    assert beyond_end_note(BranchSweep("positional", rows, BranchEnd(math.nan, "", ""), "")) == ""
    # an end whose own check found the rows past it to be the solve rule's says so instead of a fold beyond it
    checked = BranchEnd(1.9435, "bifurcation", "eigenvalue", note="below it the points are the solve rule's")
    note = beyond_end_note(BranchSweep("positional", rows, checked, "above"))
    assert note == ("the solve rule's positional points go on past the end located (1.944, by eigenvalue) at alpha = "
                    "2.1 (m 0.213), 2.2 (m 0.212); below it the points are the solve rule's")


def test_a_rank_2_solve_below_the_branch_floor_is_no_point_of_the_branch(capsys, monkeypatch):
    """``solve --rank 2 --sigma 0.4,0.6 --alpha 2 --branch mixed --precision fast`` reached a mixed-labelled point
    with |m_l| = 0.0036, below the 0.02 floor, and printed it as the mixed point, exit 0, where ``sweep`` at the same
    alpha says no mixed point, exit 3: ``solve`` now says so too.  Whether the fast tier's path reaches such a point
    depends on the machine's floating point (on another CPU it reaches the mixed point |th0| 0.1, |m_l| 0.22 from a
    mixture start), so the solve here returns one: the semantic point with |m_l| = 1.4e-3 added."""
    import json
    from dataclasses import replace

    import numpy as np

    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.errors import replicates
    from attnphase.numerics.se import state_evolution as se
    from attnphase.theory.params import ModelParams

    params = ModelParams(r=2, sigma=(0.4, 0.6))
    sem = se.solve(params, 2.0, "semantic", config=SolverConfig.for_precision("fast"))
    low = replace(sem, overlaps=replace(sem.overlaps, m=np.full_like(sem.overlaps.m, 1e-3)), branch="mixed",
                  requested="mixed")
    monkeypatch.setattr(se, "solve", lambda *args, **kwargs: low)
    monkeypatch.setattr(replicates, "judged_matrix_point", lambda fp, cfg, n_rules: (fp, {}))
    code = main(["solve", "--rank", "2", "--sigma", "0.4,0.6", "--alpha", "2", "--branch", "mixed", "--precision",
                 "fast", "--quiet", "--json"])
    rec = json.loads(capsys.readouterr().out)
    assert code == 3 and rec["converged"] is True and max(rec["m_norms"]) < 0.02
    assert rec["reason"].startswith("no mixed fixed point found") and "below the branch's floor" in rec["reason"]
    monkeypatch.setattr(se, "solve", lambda *args, **kwargs: sem)  # the semantic point itself: on its branch
    assert main(["solve", "--rank", "2", "--sigma", "0.4,0.6", "--alpha", "2", "--branch", "semantic", "--precision",
                 "fast", "--quiet", "--json"]) == 0


def test_a_bar_zero_to_round_off_is_said_too():
    """``solve --rank 2 --teacher-rank 2 --alpha 2 --precision fast``: the semantic point's m_norms [2.8e-19, 0] with
    bars [5.8e-16, 0] went unexplained (the note took exact zeros only)."""
    from attnphase.numerics.commands.point_record import matrix_bars_clauses

    rec = {"branch": "semantic", "m_norms": [2.8e-19, 0.0], "err_m_norms": [5.8e-16, 0.0],
           "th0_singular_values": [0.54, 0.51], "err_th0_singular_values": [0.02, 0.04]}
    said = matrix_bars_clauses(rec)
    assert said == ["err_m_norms = 0: m_norms = 0 to round-off (<= 1e-12) on the semantic branch (its symmetry holds "
                    "it there on every block)"]
    rec |= {"m_norms": [0.0, 0.0], "err_m_norms": [0.0, 0.0]}
    assert "= 0 exactly on the semantic branch" in matrix_bars_clauses(rec)[0]
    rec |= {"m_norms": [0.003, 0.0], "err_m_norms": [0.001, 0.0]}  # a small value with a bar is a value
    assert matrix_bars_clauses(rec) == []
