"""The Bayes-optimal free entropy's error bar (numerics/se/bayes_curve.py): err_Phi = |Phi_n(q0_n) -
Phi_(n-16)(q0_(n-16))| is positive at an interior fixed point, shrinks as the rule grows, bounds the rule's own error
against a rule of twice the order, is 0 where q0 = 0 is exact, and reaches ``solve --estimator bayes-optimal``."""

import json

import pytest

from attnphase.numerics.se.bayes import BayesModel, free_entropy, sign_rule, solve_bayes
from attnphase.numerics.se.bayes_curve import bayes_point, bayes_rules, sweep_row
from attnphase.theory.params import ModelParams

MODEL = BayesModel.of(ModelParams())


def _reference_phi(alpha: float, order: int = 96) -> float:
    rule = sign_rule(MODEL.L, order)
    return free_entropy(MODEL, rule, alpha, solve_bayes(MODEL, alpha, "informative", rule).q0)


@pytest.mark.parametrize("alpha", [0.25, 0.3, 0.4, 0.45])
def test_free_entropy_bar_is_positive_shrinks_and_covers_the_rule_error(alpha):
    """At an interior q0 (alpha_WR < alpha < 1/L) the bar is > 0; from the rule pairs (32, 16), (48, 32), (64, 48) it
    decreases; on each pair the finer rule's distance to the order-96 reference is within the bar."""
    ref = _reference_phi(alpha)
    bars = []
    for order in (32, 48, 64):
        p = bayes_point(MODEL, 0.3, alpha, "informative", bayes_rules(MODEL, order))
        assert 0.0 < p.q0 < MODEL.rho0 and p.free_entropy is not None
        assert p.err_free_entropy is not None and p.err_free_entropy > 0.0
        assert abs(p.free_entropy - ref) <= p.err_free_entropy
        bars.append(p.err_free_entropy)
    assert bars[0] > bars[1] > bars[2]


def test_free_entropy_bar_is_zero_below_weak_recovery_and_null_at_perfect_recovery():
    """q0 = 0 (alpha < 1/6): Phi is its closed form on every rule, the bar 0; q0 = rho0 (alpha > 1/2): Phi and its bar
    null (NaN in the sweep's row)."""
    rules = bayes_rules(MODEL)
    low = bayes_point(MODEL, 0.3, 0.1, "informative", rules)
    assert low.q0 == 0.0 and low.err_free_entropy == 0.0
    high = bayes_point(MODEL, 0.3, 2.0, "informative", rules)
    assert high.perfect and high.free_entropy is None and high.err_free_entropy is None
    row = sweep_row(high, MODEL.rho0, 0.01)
    assert row["err_free_entropy"] != row["err_free_entropy"]  # NaN


def test_solve_prints_the_free_entropy_with_its_bar(capsys):
    """``solve --estimator bayes-optimal --json`` carries err_free_entropy (> 0 at alpha = 0.3) and the human form
    prints ``free_entropy X +- E``."""
    from attnphase.cli import main

    assert main(["solve", "--alpha", "0.3", "--estimator", "bayes-optimal", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["err_free_entropy"] > 0.0 and "free_entropy has no error bar" not in rec["error_note"]
    assert main(["solve", "--alpha", "0.3", "--estimator", "bayes-optimal"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.strip().startswith("free_entropy"))
    assert "+-" in line
