"""Probes of a fifth break-it round (issue 30): option parsing that must answer the same way on every command.
Each asserts the answer a user must get: a one-line error naming the option (exit 2) before any work."""

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
