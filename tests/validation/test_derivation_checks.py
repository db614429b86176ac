"""``attnphase check``: the derivation checks pass on the models of the literature, fail on a broken
derivation with a line naming the check, and the command prints one table / one JSON object.

The tests run the command's own functions (attnphase.validation.derivation_checks) at the QUICK sizes:
the tolerances are derived the same way, only wider (fewer samples, smaller rules).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attnphase.cli import main  # noqa: E402
from attnphase.theory.params import ModelParams  # noqa: E402
from attnphase.validation import derivation_checks as dc  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PAPER = ModelParams(omega=0.3)
SECOND_A = ModelParams(A=((0.3, 0.7), (0.8, 0.2)), omega=0.14)


def _by_key(results):
    return {r.key: r for r in results}


def test_every_check_passes_on_the_papers_model() -> None:
    res = dc.run_checks(PAPER, 2.0, dc.QUICK)
    assert [r.number for r in res] == [1, 2, 3, 4, 5, 6, 7]
    for r in res:
        assert r.status == dc.PASS, r.line()
        assert 0 <= r.error <= r.tolerance and r.tolerance > 0
        assert r.details and r.tolerance_from
    fp = _by_key(res)["fixed-point"].details["fixed point"]
    assert fp["branch"] == "semantic" and fp["residual"] <= 1e-10


def test_second_A_passes() -> None:
    for r in dc.run_checks(SECOND_A, 2.0, dc.QUICK, only="1,3,5,7"):
        assert r.status == dc.PASS, r.line()


def test_a_point_accepted_at_the_rules_jump_scale_is_checked_against_that_jump() -> None:
    # lambda = 1 holds the student at Q = 0, a point the solver accepts at the rule's jump scale (residual ~1e-5 <= the
    # map's jump next to it): one more SE map moves it by that much, which the 1e-9 of a converged point failed
    [r] = dc.run_checks(ModelParams(omega=0.3, lam=1.0), 2.0, dc.QUICK, only="5")
    fp = r.details["fixed point"]
    jump = fp["accepted at the rule's jump scale, the jump"]
    assert fp["residual"] <= jump and 1e-9 < r.details["(a) max scaled change"] <= jump
    assert r.status == dc.PASS, r.line()
    assert "jump" not in _by_key(dc.run_checks(PAPER, 2.0, dc.QUICK, only="5"))["fixed-point"].details["fixed point"]


def test_L3_passes_and_the_mpmath_check_is_skipped_with_its_reason() -> None:
    res = _by_key(dc.run_checks(ModelParams(L=3), 2.0, dc.QUICK, only="prox,hats,prior,eps-lin,codegen"))
    for key in ("prox", "hats", "prior", "codegen"):
        assert res[key].status == dc.PASS, res[key].line()
    skipped = res["eps-lin"]
    assert skipped.status == dc.SKIP and "L = 2 only" in skipped.reason
    assert "skipped" in skipped.line() and np.isnan(skipped.error)


def test_a_softmax_too_sharp_for_gauss_hermite_skips_the_eps_lin_check_with_its_reason() -> None:
    """At rho0 = 100 both the double and the mpmath Gauss-Hermite values erred by 0.8 % (0.03672 against a Monte
    Carlo's 0.036435): the check passed on a comparison of two wrong numbers; eps_lin is now a Sobol rule's there."""
    skipped = _by_key(dc.run_checks(ModelParams(rho0=100.0), 2.0, dc.QUICK, only="eps-lin"))["eps-lin"]
    assert skipped.status == dc.SKIP and "too sharp for Gauss-Hermite" in skipped.reason


def test_a_perturbed_kernel_output_fails_the_derivative_check(monkeypatch) -> None:
    """One generated output (the off-diagonal Hessian entry of the prox objective) off by 1e-7 relative."""
    from attnphase.theory.kernels import get_kernels

    k = get_kernels(2)
    fn = k.functions["prox_value_grad_hess"]

    def broken(*args):
        out = list(fn(*args))
        out[4] = out[4] * (1 + 1e-7)  # [value, g1, g2, H11, H12, H22]
        return tuple(out)

    monkeypatch.setitem(k.functions, "prox_value_grad_hess", broken)
    res = _by_key(dc.run_checks(PAPER, 2.0, dc.QUICK, only="prox,limit-loss,codegen"))
    prox = res["prox"]
    assert prox.status == dc.FAIL
    assert "Hessian vs autograd" in prox.reason and "Hessian vs central differences" in prox.reason
    assert prox.line().startswith("[1] prox: FAIL: Hessian vs")
    assert res["codegen"].status == dc.FAIL and "prox cse vs plain" in res["codegen"].reason  # only the cse kernel is broken
    assert res["limit-loss"].status == dc.PASS  # the loss kernel is untouched


def test_a_broken_hat_overlap_formula_fails_the_hat_check(monkeypatch) -> None:
    """Vhat without its thhat theta / q term (a plausible slip in the derivation), in the hats the SE map uses."""
    from attnphase.numerics.se import updates

    good = updates.hat_overlaps

    def broken(alpha, E_g2, E_g, E_geta, E_gxi, q0, th0, sigma2, rho0):
        qhat, mhat, thhat, Vhat = good(alpha, E_g2, E_g, E_geta, E_gxi, q0, th0, sigma2, rho0)
        return qhat, mhat, thhat, Vhat - thhat * th0 / q0

    monkeypatch.setattr(updates, "hat_overlaps", broken)
    res = dc.run_checks(PAPER, 2.0, dc.QUICK, only="hats")[0]
    assert res.status == dc.FAIL
    assert "d/d q0" in res.reason  # Vhat is the derivative in q0
    assert res.details["d/d V0"]["error"] <= res.details["d/d V0"]["tolerance"]  # qhat is intact


def test_a_broken_prior_expression_fails_the_prior_check(monkeypatch) -> None:
    """One noise shared by all tokens in q0: (sum sigma sqrt(qhat))^2 in place of sum sigma^2 qhat."""
    from attnphase.theory.priors import RidgePrior

    good = RidgePrior.terms

    def broken(self, hats):
        Lam, N, Th = good(self, hats)
        qh = self._matrices(hats)[0][0]
        s = np.sqrt(self.sigma2)[:, None, None]
        root = np.einsum("lab->ab", s * np.sqrt(np.abs(qh)))
        return Lam, N - np.einsum("l,lab->ab", self.sigma2, qh) + root @ root.T, Th

    monkeypatch.setattr(RidgePrior, "terms", broken)
    res = dc.run_checks(PAPER, 2.0, dc.QUICK, only="prior")[0]
    assert res.status == dc.FAIL and res.quantity == "q0"
    assert res.line().startswith("[4] prior: FAIL: q0")


def test_select_checks_by_number_and_name() -> None:
    assert [c[1] for c in dc.select_checks("7, prox,1")] == ["prox", "codegen"]
    with pytest.raises(ValueError, match="unknown check"):
        dc.select_checks("8")


def test_command_json_and_markdown(tmp_path, capsys) -> None:
    code = main(["check", "--quick", "--only", "prior,eps-lin", "--json", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    obj = json.loads(out)  # exactly one object
    assert obj["passed"] is True and obj["model"]["L"] == 2 and (obj["seed"], obj["quick"]) == (0, True)
    assert [c["key"] for c in obj["checks"]] == ["prior", "eps-lin"]
    for c in obj["checks"]:
        assert {"error", "tolerance", "status", "compares", "tolerance_from", "details"} <= set(c)
    md = (tmp_path / "check.md").read_text()
    assert "| # | Check | What it compares |" in md and "| 4 | prior update vs finite-d ridge |" in md


def test_command_table_skip_and_bad_input(capsys) -> None:
    # the one check asked for is skipped: nothing was verified, which is not a pass (nor in the JSON)
    assert main(["check", "--quick", "--L", "3", "--only", "eps-lin"]) == 1
    got = capsys.readouterr()
    assert main(["check", "--quick", "--L", "3", "--only", "eps-lin", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False
    assert "SKIP" in got.out and "skipped: the mpmath reference of eps_lin is implemented for L = 2 only" in got.out
    assert "no check ran: every check asked for was skipped" in got.err
    assert main(["check", "--omega", "2"]) == 2
    assert "omega must lie in [0, 1]" in capsys.readouterr().err
    assert main(["check", "--only", "nine"]) == 2
    assert main(["check", "--alpha", "-1"]) == 2
    for empty in ("", " , "):  # a list naming no check (it ran every one)
        assert main(["check", "--only", empty]) == 2
        assert "--only: no check named in" in capsys.readouterr().err


def test_markdown_cells_escape_the_pipes_of_their_text() -> None:
    """check.md: 'Richardson |D(d) - D(2d)|' in a cell split its row into more cells than the heading's."""
    from attnphase.validation.derivation_checks.tables import markdown_table

    r = dc.CheckResult(number=3, key="hats", title="hats", compares="a | b", quantity="q", error=1e-9,
                       tolerance=1e-6, status=dc.PASS, tolerance_from="Richardson |D(d) - D(2d)|")
    md = markdown_table(PAPER, 2.0, [r]).splitlines()
    head = next(line for line in md if line.startswith("| # |"))
    row = next(line for line in md if line.startswith("| 3 |"))
    cells = lambda line: len(line.replace("\\|", "").split("|"))  # noqa: E731
    assert cells(row) == cells(head) and "Richardson \\|D(d) - D(2d)\\|" in row


def test_command_exit_1_when_a_check_fails(monkeypatch, capsys) -> None:
    from attnphase.theory.kernels import get_kernels

    k = get_kernels(2)
    fn = k.functions["prox_value_grad_hess"]
    monkeypatch.setitem(k.functions, "prox_value_grad_hess", lambda *a: tuple(x * 1.001 if i == 1 else x for i, x in enumerate(fn(*a))))
    assert main(["check", "--quick", "--only", "prox"]) == 1
    err = capsys.readouterr().err
    assert "attnphase: check failed: [1] prox: FAIL: gradient vs" in err
