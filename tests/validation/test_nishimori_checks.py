"""`attnphase check --estimator bayes-optimal`: the Nishimori identities at the Bayes-optimal fixed point pass to
their Monte Carlo error bars, and fail where the fixed point is wrong."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from attnphase.cli import main
from attnphase.theory.params import ModelParams
from attnphase.validation.derivation_checks import QUICK
from attnphase.validation.derivation_checks import nishimori_check as nc


@pytest.mark.parametrize("params", [ModelParams(omega=0.3), ModelParams(omega=0.1, sigma=(0.4, 0.7), rho0=2.0)])
def test_nishimori_identities_hold_at_the_fixed_point(params):
    res = nc.run_bayes_checks(params, nc.bayes_check_alpha(params.L), QUICK, seed=3)
    assert [r.status for r in res] == ["pass", "pass"]
    assert 0 < res[1].details["q0 (solver)"] < params.rho0


def test_a_wrong_fixed_point_fails_the_overlap_check(monkeypatch):
    """q0 off the fixed point by 30 %: the prior's update from the hats there does not give q0 back.  (The map's
    slope is ~0.9 at this fixed point, so a shift moves q0' - q0 by a tenth of itself: at the quick size's 2^16
    samples the check resolves q0 to ~0.1 here, at the full size's 2^20 to ~0.03.)"""
    true = nc.solve_bayes
    monkeypatch.setattr(nc, "solve_bayes", lambda model, alpha, branch: replace(true(model, alpha, branch),
                                                                                q0=1.3 * true(model, alpha, branch).q0))
    res = nc.check_nishimori_overlaps(ModelParams(omega=0.3), 1 / 3, QUICK, 0)
    assert res.status == "fail" and res.quantity == "q0' - q0 (fixed point)"


def test_outside_the_informative_range_the_checks_skip():
    res = nc.run_bayes_checks(ModelParams(omega=0.3), 2.0, QUICK)
    assert [r.status for r in res] == ["skip", "skip"] and "perfect recovery" in res[0].reason


def test_check_command_runs_the_nishimori_checks(capsys):
    assert main(["check", "--estimator", "bayes-optimal", "--quick", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["alpha"] == pytest.approx((1 / 6 + 1 / 2) / 2)
    assert [c["key"] for c in obj["checks"]] == ["nishimori-hats", "nishimori-overlaps"]
    assert all(c["status"] == "pass" for c in obj["checks"])
    assert "lam" not in obj["model"] and "loss" not in obj["model"]  # the posterior mean has neither


@pytest.mark.parametrize("argv, message", [(["--only", "1"], "--only"), (["--omega", "1"], "--omega 1"),
                                           (["--rank", "2"], "--rank")])
def test_bad_bayes_check_input_is_one_line_exit_2(capsys, argv, message):
    assert main(["check", "--estimator", "bayes-optimal", "--quick", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnphase: error:") and message in err[0]
