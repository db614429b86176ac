"""The Bayes-optimal estimator in the commands: ``solve --estimator bayes-optimal`` (its fixed point at one alpha,
docs/bayes-optimal.md) and the thresholds ``phase-diagram --json`` reports.

The record has the ERM record's keys (numerics/commands/point_record.py) in the same units: ``q`` = ``theta`` =
Q . Q* / d of the posterior mean (Nishimori), ``m`` = 0 (the posterior mean does not see the positions), ``V`` =
rho0 - q0 (the posterior variance per coordinate), ``eps_g`` the Bayes-optimal test error, ``e_t`` null (no
training loss: ``free_entropy`` instead), each with ``err_<key>`` (the change from the rule of order n -
ORDER_STEP), plus the thresholds ``alpha_weak_recovery``, ``alpha_it``, ``alpha_amp`` with their bars and notes.
"""

from __future__ import annotations

import argparse
import sys

from attnphase import options as opt
from attnphase import work
from attnphase.numerics.commands.point_record import max_relative_error, model_echo, print_record

#: The estimators of ``--estimator``.
ESTIMATORS = ("erm", "bayes-optimal")
#: The branches of the Bayes-optimal state evolution.
BAYES_BRANCHES = ("informative", "uninformative")


def check_estimator_branch(estimator: str, branch: str | None) -> str:
    """The branch to solve for (the estimator's default where ``branch`` is None); ValueError naming --branch
    where the branch belongs to the other estimator."""
    if estimator == "bayes-optimal":
        if branch is None:
            return "informative"
        if branch not in BAYES_BRANCHES:
            raise ValueError(f"--branch {branch} is an ERM branch; --estimator bayes-optimal has "
                             f"{' and '.join(BAYES_BRANCHES)}")
        return branch
    if branch in BAYES_BRANCHES:
        raise ValueError(f"--branch {branch} needs --estimator bayes-optimal")
    return branch or "semantic"


def solve_bayes_optimal(args: argparse.Namespace, alpha: float) -> int:
    """The Bayes-optimal fixed point of ``--branch`` (informative by default) at alpha; exit 3 where the
    branch is not a distinct fixed point there (the other branch's point is reported)."""
    branch = check_estimator_branch("bayes-optimal", args.branch)
    if (getattr(args, "rank", None) or 1) != 1 or (getattr(args, "teacher_rank", None) or 1) != 1:
        raise ValueError("--rank and --teacher-rank: --estimator bayes-optimal is solved at rank 1")
    params = opt.params_from_args(args, omega=opt.single_omega(args, "solve"))
    if not params.omega < 1.0:
        raise ValueError(f"--omega {params.omega:g}: --estimator bayes-optimal needs omega < 1 (at omega = 1 the "
                         "target T = A does not depend on Q*: nothing to estimate)")
    if params.C is not None:
        raise ValueError("--token-cov: --estimator bayes-optimal is solved for independent tokens")
    opt.announce_defaults(args, params)

    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import (DEFAULT_ORDER, EPS_G_ORDER, ORDER_STEP, BayesModel, bayes_eps_g,
                                             free_entropy, se_step, sign_rule, solve_bayes)

    work.begin("solving the Bayes-optimal state evolution")
    model = BayesModel.of(params)
    rules = {n: sign_rule(params.L, n) for n in (DEFAULT_ORDER, DEFAULT_ORDER - ORDER_STEP)}
    fps = {n: solve_bayes(model, alpha, branch, rule) for n, rule in rules.items()}
    fp = fps[DEFAULT_ORDER]
    other = solve_bayes(model, alpha, "uninformative" if branch == "informative" else "informative", rules[DEFAULT_ORDER])
    n_eps = EPS_G_ORDER.get(params.L, 6)
    eps = bayes_eps_g(model, params.omega, fp.q0)
    err_eps = abs(eps - bayes_eps_g(model, params.omega, fps[DEFAULT_ORDER - ORDER_STEP].q0, order=n_eps - 4))
    err_q = abs(fp.q0 - fps[DEFAULT_ORDER - ORDER_STEP].q0)
    residual = 0.0 if fp.perfect else abs(se_step(model, rules[DEFAULT_ORDER], alpha, fp.q0) - fp.q0)
    phi = None if fp.perfect else free_entropy(model, rules[DEFAULT_ORDER], alpha, fp.q0)
    from attnphase.numerics.se.observables import eps_lin

    rec: dict = {"alpha": alpha, "omega": params.omega, "sigma": params.sigma_value, "lam": params.lam}
    rec.update({k: v for k, v in model_echo(params).items() if k != "sigma_l"})
    rec.update({
        "estimator": "bayes-optimal", "branch": branch, "requested_branch": branch,
        "q": fp.q0, "m": 0.0, "V": model.rho0 - fp.q0, "theta": fp.q0, "eps_g": eps, "e_t": None,
        "eps_lin": eps_lin(params), "free_entropy": phi, "perfect_recovery": fp.perfect,
        "converged": True, "iterations": 0, "residual": residual,
    })
    rec["reason"] = ""
    if other.q0 == fp.q0:
        note = f"the informative and uninformative branches coincide at alpha = {alpha:g} (q = {fp.q0:.6g})"
        rec["note"] = note
        print(f"attnphase: note: {note}", file=sys.stderr)
    rec.update({"err_q": err_q, "err_m": 0.0, "err_V": err_q, "err_theta": err_q, "err_eps_g": err_eps, "err_e_t": None})
    rec["max_relative_error"] = max_relative_error(rec)
    rec.update(bayes_thresholds(model).as_dict())
    return print_record(rec, "", True, args.json)


def threshold_keys(params) -> dict:
    """The Bayes-optimal thresholds of a model as ``phase-diagram --json`` reports them beside the ERM boundaries:
    ``alpha_weak_recovery``, ``alpha_it``, ``alpha_amp`` with ``err_<key>`` and ``<key>_note`` (null with the
    reason where they are not computed: a rank above 1, correlated tokens).  They do not depend on omega (< 1),
    A, P or lambda (docs/bayes-optimal.md), so one set serves every omega of the diagram."""
    from attnphase.numerics.phase.bayes_thresholds import THRESHOLD_KEYS

    why = ""
    if getattr(params, "r", 1) != 1 or getattr(params, "r_star", 1) != 1:
        why = "the Bayes-optimal state evolution is solved at rank 1"
    elif params.C is not None:
        why = "the Bayes-optimal state evolution is solved for independent tokens"
    if why:
        out: dict = {}
        for k in THRESHOLD_KEYS:
            out.update({k: None, f"err_{k}": None, f"{k}_note": why})
        return out
    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel

    out = bayes_thresholds(BayesModel.of(params)).as_dict()
    return out | {f"{k}_note": f"{out[f'{k}_note']}; the same at every omega < 1" for k in THRESHOLD_KEYS}
