"""`attnphase solve --estimator bayes-optimal`: the ERM record's keys plus the thresholds, one-line errors."""

from __future__ import annotations

import json

import pytest

from attnphase.cli import main
from attnphase.numerics.commands.point_record import RECORD_KEYS
from attnphase.numerics.phase.bayes_thresholds import THRESHOLD_KEYS


def _record(capsys, *argv) -> dict:
    assert main(["solve", "--estimator", "bayes-optimal", "--json", *argv]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_bayes_optimal_record_has_the_erm_keys_and_the_thresholds(capsys):
    rec = _record(capsys, "--alpha", "0.3", "--omega", "0.3")
    assert set(RECORD_KEYS) - {"lam"} <= set(rec) and not {"lam", "loss"} & set(rec)  # the posterior mean uses neither
    for k in THRESHOLD_KEYS:
        assert k in rec and f"err_{k}" in rec and f"{k}_note" in rec
    assert rec["estimator"] == "bayes-optimal" and rec["branch"] == "informative"
    assert 0 < rec["q"] < 1 and rec["theta"] == rec["q"] and rec["m"] == 0.0
    assert rec["V"] == pytest.approx(1 - rec["q"], rel=1e-12)
    assert 0 < rec["eps_g"] < rec["eps_lin"] and rec["e_t"] is None
    assert rec["alpha_weak_recovery"] == pytest.approx(1 / 6, rel=1e-7)
    assert rec["alpha_it"] == 0.5 and rec["alpha_amp"] == 0.5
    assert 0 < rec["err_q"] < 1e-5


def test_bayes_optimal_below_weak_recovery_and_above_perfect_recovery(capsys):
    """Below alpha_WR = 1/6 the estimate is uninformative (q = 0, eps_g = eps_lin); above 1/L = 1/2 it is perfect."""
    low = _record(capsys, "--alpha", "0.1", "--branch", "uninformative")
    assert low["q"] == 0.0 and low["eps_g"] == pytest.approx(low["eps_lin"], rel=1e-6)
    high = _record(capsys, "--alpha", "0.7", "--L", "3")
    assert high["q"] == 1.0 and high["eps_g"] == 0.0 and high["perfect_recovery"] is True
    assert high["alpha_it"] == pytest.approx(1 / 3) and high["alpha_weak_recovery"] == pytest.approx(1 / 12, rel=1e-7)


def test_bayes_optimal_takes_L_5_where_erm_stops_at_4(capsys, monkeypatch):
    """Its state evolution is in L dimensions (ERM's rules in 2L): L = 5 runs (noiseless, alpha >= 1/L: perfect)."""
    monkeypatch.delenv("ATTNPHASE_MAX_L", raising=False)
    rec = _record(capsys, "--alpha", "0.5", "--L", "5")
    assert rec["L"] == 5 and rec["q"] == 1.0 and rec["alpha_it"] == pytest.approx(0.2)
    assert main(["solve", "--alpha", "0.5", "--L", "5"]) == 2  # ERM's limit
    assert "L <= 4" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--estimator", "bayes-optimal", "--branch", "semantic"], "--branch semantic"),
    (["--branch", "informative"], "--branch informative needs --estimator bayes-optimal"),
    (["--estimator", "bayes-optimal", "--rank", "2"], "--rank"),
    (["--estimator", "bayes-optimal", "--omega", "1"], "--omega 1"),
])
def test_bad_estimator_input_is_one_line_exit_2(capsys, argv, message):
    assert main(["solve", "--alpha", "1", "--json", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error:") and message in err[0]


def test_unknown_estimator_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["solve", "--alpha", "1", "--estimator", "bayes"])
    assert exc.value.code == 2 and "--estimator" in capsys.readouterr().err


def test_phase_diagram_json_threshold_keys():
    """What `phase-diagram --json` adds beside the ERM boundaries: the three thresholds, null with a reason at rank 2."""
    from attnphase.numerics.commands.bayes_phase_diagram import threshold_keys
    from attnphase.theory.params import ModelParams

    keys = threshold_keys(ModelParams(omega=0.3))
    assert keys["alpha_weak_recovery"] == pytest.approx(1 / 6, rel=1e-7) and keys["alpha_it"] == 0.5
    assert all(f"err_{k}" in keys and "every omega < 1" in keys[f"{k}_note"] for k in THRESHOLD_KEYS)
    ranked = threshold_keys(ModelParams(omega=0.3, r=2))
    assert all(ranked[k] is None and "rank 1" in ranked[f"{k}_note"] for k in THRESHOLD_KEYS)


def test_a_diagonal_token_covariance_is_independent_tokens(capsys):
    """A diagonal --token-cov is the independent-token model (the ERM commands give --sigma's numbers bit for bit); the
    Bayes-optimal estimator refused it as correlated tokens.  Off-diagonal entries are still refused."""
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3", "--token-cov", "0.16,0;0,0.36",
                 "--json"]) == 0
    diag = json.loads(capsys.readouterr().out)
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3", "--sigma", "0.4,0.6", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert (diag["q"], diag["eps_g"]) == (plain["q"], plain["eps_g"])
    assert main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3", "--token-cov", "0.16,0.05;0.05,0.36"]) == 2


def test_solve_at_the_largest_l_says_it_takes_long_before_it_starts(monkeypatch, capsys):
    """At L = 5 a Bayes-optimal solve takes half a minute or more: said before the work starts (the work stopped
    here at its first step: the note is printed before it)."""
    from attnphase.numerics.se import bayes_curve

    def stop(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(bayes_curve, "bayes_rules", stop)
    assert main(["solve", "--estimator", "bayes-optimal", "--L", "5", "--alpha", "0.15"]) != 0
    err = capsys.readouterr().err
    assert "at L = 5 one Bayes-optimal solve takes half a minute or more" in err
    assert err.index("half a minute") < err.index("interrupted")
    monkeypatch.undo()
    main(["solve", "--estimator", "bayes-optimal", "--alpha", "0.3"])
    assert "half a minute" not in capsys.readouterr().err
