"""Probes of every command: option parsing that must answer the same way on every command (a value option given
twice, an option of another command, a rule made too large), and what a user reads.  Each asserts the answer a user
must get: a one-line error naming the option (exit 2) before any work, or a value printed with its bar."""

from __future__ import annotations

import pytest

from attnphase.cli import main


def _parse_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("argv, option, first, second", [
    (["solve", "--alpha", "2", "--alpha", "3"], "--alpha", "2", "3"),
    (["solve", "--alpha=2", "--omega", "0.1", "--omega=0.2"], "--omega", "0.1", "0.2"),
    (["sweep", "--alpha", "1:2:3", "--lam", "0.1", "--lam", "0.2"], "--lam", "0.1", "0.2"),
    (["phase-diagram", "--quadrature", "sobol8", "--quadrature", "gh6"], "--quadrature", "sobol8", "gh6"),
    (["census", "--alpha", "1", "--rank", "2", "--rank", "1"], "--rank", "2", "1"),
    (["simulate", "--d", "10", "--d", "20"], "--d", "10", "20"),
    (["derive", "-o", "a.md", "--output", "b.md"], "--output", "a.md", "b.md"),
])
def test_a_value_option_given_twice_is_refused_not_the_last_kept(argv, option, first, second, capsys):
    """argparse keeps the last value silently: ``solve --alpha 2 --alpha 3`` solved at alpha = 3 without a word."""
    line = _parse_error(argv, capsys)
    assert line.startswith(f"attnphase: error: {option} is given twice ('{first}' and '{second}')"), line
    assert f"(see attnphase {argv[0]} --help)" in line


def test_a_flag_given_twice_means_the_same_as_once(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["solve", "--json", "--json", "--help"])
    assert exc.value.code == 0


@pytest.mark.parametrize("argv", [["solve", "--alpha", "2", "--out", "x"], ["census", "--alpha", "2", "--workers", "2"],
                                  ["show", "x", "--omega", "0.3"]])
def test_an_option_of_another_command_points_at_this_commands_help(argv, capsys):
    """It said ``(see attnphase --help)``, whose page lists no option of any command."""
    line = _parse_error(argv, capsys)
    assert line.startswith("attnphase: error: unrecognized arguments: ") and line.endswith(f"(see attnphase {argv[0]} --help)")


@pytest.mark.parametrize("command", [["solve", "--alpha", "2"], ["sweep", "--alpha", "1:2:3"], ["census", "--alpha", "1"],
                                     ["phase-diagram"]])
def test_error_estimate_that_makes_a_rule_too_large_names_error_estimate(command, capsys, tmp_path, monkeypatch):
    """``--error-estimate 1000`` was refused naming --alpha-c-quadrature, an option the user never gave."""
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--error-estimate", "1000", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error: --error-estimate 1000 "), err
    assert not any(tmp_path.iterdir())


def test_a_rule_given_too_large_still_names_its_own_option(capsys):
    assert main(["solve", "--alpha", "2", "--quadrature", "sobol23", "--error-estimate", "8"]) == 2
    assert capsys.readouterr().err.startswith("attnphase: error: --quadrature: ")


@pytest.mark.parametrize("command, rule", [("solve", "sobol2"), ("census", "gh3"), ("scan", "sobol8:2")])
def test_an_e_t_rule_coarser_than_the_solve_rule_is_refused(command, rule, capsys, tmp_path):
    """``solve --precision fast --e-t-quadrature sobol2`` printed e_t = 0.00113 +- 0.00003 (the solve rule's 0.00233),
    and the census and the scan ranked and located on it; a finer or equal rule runs."""
    argv = [command, "--precision", "fast", "--e-t-quadrature", rule]
    argv += ["--out", str(tmp_path)] if command != "solve" else []
    argv += ["--lam", "0.1,0.01", "--omega", "0.3"] if command == "scan" else ["--alpha", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"attnphase: error: --e-t-quadrature: {rule} has "), err
    assert "fewer than the solve rule sobol8:4's 1024" in err[0]
    assert not any(tmp_path.iterdir())


def test_the_library_solve_refuses_an_e_t_rule_coarser_than_its_solve_rule():
    """SolverConfig and solve took e_t_quadrature="sobol2" beside the solve rule sobol8:4 (the command line alone
    refused it)."""
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.se.state_evolution import solve
    from attnphase.theory import ModelParams

    with pytest.raises(ValueError, match="^e-t-quadrature: sobol2 has 4 nodes at L = 2, fewer than the solve rule"):
        solve(ModelParams(), 1.0, config=SolverConfig(quadrature="sobol8:4", e_t_quadrature="sobol2"))


def test_scan_over_an_L_beyond_the_limit_names_L(capsys, tmp_path):
    """scan was missing from the commands that solve the state evolution: ``--L 2,5`` was refused as
    ``--quadrature: L = 5``."""
    assert main(["scan", "--L", "2,5", "--omega", "0.3", "--out", str(tmp_path / "s"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error: --L 5: the state evolution supports L <= 4"), err


def test_bars_of_a_finite_d_mean_print_beside_it():
    from attnphase.display import record_lines

    lines = record_lines({"eps_g": 0.031974173671602574, "err_eps_g": 6.734251516118165e-05, "q": 0.4581204796467577})
    assert lines == ["eps_g  0.031974 +- 0.000067", "    q  0.45812"], lines


def test_a_matrix_invariant_prints_each_entry_with_its_bar():
    """The rank-r record's invariants (q0's eigenvalues, ...) carry a list of bars: the text shows each entry with
    its own (it printed the values alone, the bars only in the JSON)."""
    from attnphase.display import record_lines

    lines = record_lines({"q0_eigenvalues": [0.3156531, 0.0701211], "err_q0_eigenvalues": [0.00224, 0.00031],
                          "m_norms": [0.0, 0.0], "err_m_norms": [0.0, 0.0], "gauge_angle": [0.1, 0.2]})
    assert lines == ["q0_eigenvalues  [0.3157 +- 0.0022, 0.07012 +- 0.00031]", "       m_norms  [0 +- 0, 0 +- 0]",
                     "   gauge_angle  [0.1, 0.2]"], lines


def test_simulate_text_has_the_json_keys_each_mean_with_its_bar(capsys, monkeypatch):
    """``simulate`` printed every field with 16 digits and eps_g apart from its standard error, and text and JSON
    had different keys; at L = 3 the defaults of --A and --P went unannounced."""
    import json

    from attnphase.validation import experiments

    fake = experiments.SimResult(
        d=8, alpha=2.0, omega=0.3, init="semantic", optimizer="gd", seed=0, m=0.0379235123456789,
        theta=0.5663171234567891, q=0.5037011234567891, eps_g=0.07108012345678901, e_t=0.1360341234567891,
        eps_lin=0.004051234567891234, steps=225, converged=True, seconds=1.2345678912345678,
        eps_g_se=0.0007812345678912345, eps_lin_se=0.00046123456789123456, status="converged",
        grad_norm=2.2404123456789e-07, train_seconds=1.0123456789123456, n=16, n_test=200, device="cpu",
        dtype="float64")
    monkeypatch.setattr(experiments, "run_simulation", lambda spec: fake)
    argv = ["simulate", "--d", "8", "--L", "3", "--alpha", "2", "--n-test", "200"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "eps_g  0.07108 +- 0.00078" in out and "eps_lin  0.00405 +- 0.00046" in out, out
    assert "err_" not in out and "0.0710801234" not in out and "device  cpu" in out and "lam  0.01" in out, out
    assert "attnphase: note: --L 3: defaults" in err
    assert main([*argv, "--json"]) == 0
    keys = list(json.loads(capsys.readouterr().out))
    shown = [line.split()[0] for line in out.strip().splitlines()]
    assert shown == [k for k in keys if not k.startswith("err_")]
    assert {"err_eps_g", "err_eps_lin"} <= set(keys) and not [k for k in keys if k.endswith("_se")], keys


def test_out_whose_files_would_pass_the_systems_path_limit_is_refused_first(tmp_path):
    """A 4032-character --out (each name under 255 bytes) passed the check, the sweep ran, and writing its
    first file failed (exit 1), leaving the 20 nested folders behind."""
    import os

    from attnphase import outputs

    limit = os.pathconf(tmp_path, "PC_PATH_MAX")
    out = tmp_path
    while len(os.fsencode(str(out))) < limit - 70:  # the folder fits, a file name of 64+ bytes in it does not
        out = out / ("e" * min(200, max(1, limit - 70 - len(os.fsencode(str(out))) - 1)))
    with pytest.raises(ValueError, match="the path of a file there would be too long"):
        outputs.check_out_dir(out)
    assert list(tmp_path.iterdir()) == []
    ok = tmp_path / "short"
    assert outputs.check_out_dir(ok) == ok and list(tmp_path.iterdir()) == []


def test_empty_out_is_refused_not_the_current_folder(capsys, tmp_path, monkeypatch):
    """``--out "$DIR"`` with DIR unset wrote the job into the current folder."""
    monkeypatch.chdir(tmp_path)
    for argv in (["sweep", "--alpha", "1,2"], ["check", "--quick", "--only", "1"]):  # check took "" as no --out
        assert main([*argv, "--out", "", "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["attnphase: error: --out: an empty folder name (--out is always a folder, created if missing); "
                       "give --out . for the current folder"]
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("alpha, exact", [("0.1", "q0 = 0 is exact"), ("0.3", None), ("2", "q0 = 1 is exact")])
def test_bayes_optimal_point_says_why_numbers_lack_a_bar(alpha, exact, capsys):
    """``solve --estimator bayes-optimal`` exited 0 with e_t null, free_entropy without a bar and q = 1 +- 0, and no
    word on any of them."""
    import json

    assert main(["solve", "--alpha", alpha, "--estimator", "bayes-optimal", "--json"]) == 0
    out, err = capsys.readouterr()
    rec = json.loads(out)
    assert rec["e_t"] is None and "e_t null" in rec["error_note"] and rec["error_note"] in err
    assert ("free_entropy null" in rec["error_note"]) == (rec["free_entropy"] is None)
    assert (exact is not None) == (rec["err_q"] == 0.0)
    if exact:
        assert exact in rec["error_note"]


def test_rank_r_census_table_prints_eps_g_and_the_invariants_with_their_bars(capsys):
    """The rank-r census table printed eps_g as ``0.002339`` and the invariants to 4 digits, their bars left out."""
    from attnphase.numerics.commands.census import _print_table

    point = {"branch": "mixed", "e_t": 0.0027233861297594306, "err_e_t": 9.1e-06, "delta_e_t": 0.0, "err_delta_e_t": 0.0,
             "separation_paired": 0.0, "eps_g": 0.0023385392277070543, "err_eps_g": 1.5228428130069478e-05,
             "stable": True, "leading_eigenvalue": 0.42, "starts": 3,
             "q0_eigenvalues": [0.70425123, 0.20209123], "err_q0_eigenvalues": [0.0012, 0.00031],
             "V0_eigenvalues": [69.8603, 50.9647], "err_V0_eigenvalues": [0.25, 0.19],
             "th0_singular_values": [0.468454], "err_th0_singular_values": [0.0021],
             "m_norms": [0.25, 0.0], "err_m_norms": None}
    _print_table([point], scalar=False)
    row = capsys.readouterr().out.splitlines()[1]
    assert "0.002339 +- 0.000015" in row and "0.7043 +- 0.0012 0.20209 +- 0.00031" in row, row
    assert "69.86 +- 0.25" in row and "0.4685 +- 0.0021" in row and "0.25 0" in row, row


@pytest.mark.parametrize("alpha, needle", [("0", "--alpha values must be > 0, got '0'"),
                                           ("1,2", "--alpha takes one number here, got '1,2'")])
def test_check_reads_alpha_as_every_command_does(alpha, needle, capsys):
    """``check --alpha 1,2`` was argparse's "invalid float value"; ``--alpha 0`` another wording than solve's."""
    assert main(["check", "--alpha", alpha, "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == f"attnphase: error: {needle}"


@pytest.mark.parametrize("command", [["solve", "--alpha", "0.3"], ["sweep", "--alpha", "0.1,0.3"],
                                     ["phase-diagram", "--alpha", "0.1,0.3"]])
@pytest.mark.parametrize("option", [["--quadrature", "sobol8"], ["--tol", "1e-8"], ["--precision", "precise"],
                                    ["--prox", "local"], ["--error-estimate", "0"]])
def test_erm_solver_options_are_refused_with_the_bayes_optimal_estimator(command, option, capsys, tmp_path,
                                                                         monkeypatch):
    """They were ignored without a word: ``solve --estimator bayes-optimal --error-estimate 0`` still gave bars."""
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--estimator", "bayes-optimal", *option, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"attnphase: error: {option[0]}"), err
    assert list(tmp_path.iterdir()) == []
