"""``attnphase solve``: one fixed point of the state evolution at one (alpha, omega), every rank and estimator,
printed as :mod:`attnphase.numerics.commands.point_record` says (docs/reference/outputs.md).  Exit code 1 if the
fixed point did not converge, 3 if the solve reached another branch than ``--branch``.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from attnphase import options as opt
from attnphase import outputs, solver_options, work
from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.commands.common import error_note, point_setup
from attnphase.numerics.commands.point_record import (RESULT_KEYS, exact_zero_note, matrix_bars_note, negative_e_t_note,
                                                      matrix_unresolved_order_warning, max_relative_error, not_found,
                                                      precision_note, print_record, solve_record,
                                                      unresolved_order_warning)

NAME = "solve"
HELP = "solve the state evolution at one (alpha, omega)"
DESCRIPTION = ("Solve the state evolution (docs/model.md section 3) at one alpha and omega and print the "
               "observables (section 4), each with its error bar. Exit code 1 if the fixed point did not converge, 3 if "
               "the solve reached another branch than --branch (README: exit codes).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--alpha``, ``--branch``, ``--estimator``, the model group, the solver group, ``--error-estimate``, ``--json``."""
    p.add_argument("--alpha", required=True, metavar="ALPHA", help="sample complexity alpha = n/d > 0 (one number)")
    solver_options.add_branch_option(p, mixed=True, bayes=True)
    opt.add_estimator_option(p, "its fixed point, with the thresholds alpha_weak_recovery, alpha_it, alpha_amp")
    opt.add_model_options(p)
    solver_options.add_solver_options(p, "solve")
    solver_options.add_error_estimate_option(p, "every observable (err_<key>)")
    outputs.add_json_option(p)


def run(args: argparse.Namespace) -> int:
    """One fixed point; exit code 1 if it did not converge, 3 if the solve reached another branch."""
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True, hint="sweep follows a branch over a range of alpha")
    from attnphase.numerics.commands.bayes_optimal import by_estimator, solve_bayes_optimal

    if (code := by_estimator(args, lambda: solve_bayes_optimal(args, alpha))) is not None:
        return code
    params, cfg, n_rules = point_setup(args, NAME, args.branch)
    opt.check_branch_possible(params, args.branch)
    scalar = is_scalar_form(params.r, params.r_star)
    if scalar and params.L >= 3:
        more = "" if params.L == 3 else f"; at L = {params.L} the rules have {2 * params.L} Gaussian dimensions, not 6"
        print(f"attnphase: note: at L = {params.L} one solve takes from seconds to a minute or more "
              f"(up to ~50 s measured at L = 3 on 2 cores{more})", file=sys.stderr, flush=True)

    from attnphase.numerics.se.state_evolution import mixed_from_mixtures, solve

    work.begin("solving the state evolution")
    fp = solve(params, alpha, args.branch, config=cfg)
    if args.branch == "mixed" and not (fp.status.converged and fp.branch == "mixed"):
        from attnphase.numerics.se.starts import FIXED_MIXTURES

        print(f"attnphase: note: the embedded mixed start did not converge on the mixed branch "
              f"({fp.status.message}); trying the census's {len(FIXED_MIXTURES)} fixed mixture starts",
              file=sys.stderr, flush=True)
        fp = mixed_from_mixtures(fp, cfg)
        if fp.status.converged:
            print(f"attnphase: note: {fp.status.message}", file=sys.stderr, flush=True)
    if not scalar:
        from attnphase.numerics.errors.replicates import judged_matrix_point

        from attnphase.numerics.phase.lowest_branch import teacher_eps_lin

        fp, err = judged_matrix_point(fp, cfg, n_rules)
        rec, reason = solve_record(fp, args.branch, teacher_eps_lin(params, cfg))
        if fp.status.converged:
            rec = _matrix_error_bars(rec, err, cfg, n_rules, getattr(args, "precision", None) or "default")
            if math.isfinite(fp.status.jump):  # accepted at the rule's jump scale, its replicates reproduce it
                print(f"attnphase: note: {fp.status.message}", file=sys.stderr)
            if not reason and (low := floor_reason(fp, args.branch)):  # as the sweep counts such a row
                reason = rec["reason"] = low
        else:  # the same keys as a converged record's, said why they are null
            rec |= {"max_relative_error": None, "error_note": NOT_CONVERGED_NOTE}
        rec["reason"] = rec.pop("reason")
        return print_record(_with_run(rec, cfg, args.json), reason, fp.status.converged, args.json,
                            show=outputs.json_value, census=True)
    err = _point_error(fp, cfg, n_rules)
    if args.branch == "semantic":
        fp, err = _semantic_reproduced(fp, err, cfg, n_rules)
    rec, reason = solve_record(fp, args.branch)
    if fp.status.converged:
        rec, fp = _error_bars(rec, fp, err, cfg, n_rules, args)
        if not fp.status.converged:  # not confirmed by the rule's blocks
            rec, reason = solve_record(fp, args.branch)
    if not fp.status.converged:  # the same keys as a converged record's, said why they are null
        rec.update({f"err_{k}": None for k in RESULT_KEYS}, max_relative_error=None, error_note=NOT_CONVERGED_NOTE)
    failed = False
    if (fp.status.converged and fp.branch == "agnostic" and args.branch in ("positional", "semantic")
            and not fp.status.message.startswith("absent:")):
        reason, failed = _landing_reason(reason, fp, args.branch, cfg)
        rec["reason"] = reason
    elif fp.status.converged and fp.branch == args.branch and (err is None or err.converged < 2):
        # a point of the label that the rule's blocks do not reproduce, below the branch's floor: not on the branch
        reason, failed = _beside_reason(fp, args.branch, cfg)
        rec["reason"] = reason
    elif fp.status.converged and fp.branch == args.branch and not reason:
        # below the floor: not a point of the branch, however well the blocks reproduce it (as the sweep counts it)
        reason = rec["reason"] = floor_reason(fp, args.branch) or _finer_rule_reason(fp, args.branch, cfg)
    return print_record(_with_run(rec, cfg, args.json), reason, fp.status.converged, args.json, census=True,
                        failed=failed)


#: The error note of a solve that did not converge (its numbers and bars null).
NOT_CONVERGED_NOTE = "no error bars: the solve did not converge (its numbers are null; `reason` says why)"


def _with_run(rec: dict, cfg: Any, as_json: bool) -> dict:
    """``rec`` and, in JSON, what made it -- ``solver`` (every setting, the rules with their seeds) and
    ``code_version`` -- as the jobs' records carry them (a saved record says how to rerun it)."""
    if not as_json:
        return rec
    from attnphase.numerics.jobs.tasks import numerics_version

    return rec | {"solver": cfg.as_dict(), "code_version": numerics_version()}


def floor_reason(fp: Any, branch: str) -> str:
    """Why a converged point of ``branch``'s label whose order parameter lies below the branch's floor
    (:func:`~attnphase.numerics.phase.branch_end.below_floor`) is not a point of the branch ("" for any other): the
    rule's noise next to a fixed point of fewer broken symmetries, as ``sweep`` says of such a row."""
    from attnphase.numerics.phase.branch_end import BRANCH_FLOORS, below_floor, size_text

    if not below_floor(fp, branch):
        return ""
    sizes = ", ".join(f"{size_text(fp, name)}, floor {floor:g}"
                      for name, floor in BRANCH_FLOORS[branch])
    return (f"{not_found(fp, branch)}: the solve reached "
            f"a point whose {branch} order parameter is below the branch's floor ({sizes}): the rule's noise next to "
            "a fixed point of fewer broken symmetries, not a point of the branch (a finer --quadrature may reach "
            "the branch; `attnphase census` at this alpha lists the fixed points that converge here)")


def _landing_reason(reason: str, fp: Any, branch: str, cfg: Any) -> tuple[str, bool]:
    """(``reason`` (a solve on ``branch`` that converged to the agnostic point) with what that shows, whether it
    shows solver failure rather than absence: :func:`~attnphase.numerics.phase.absence.landing_note`)."""
    from attnphase.numerics.phase.absence import landing_note
    from attnphase.numerics.se.se_map import model_rule

    absent, note = landing_note(fp, branch, model_rule(fp.params, cfg), cfg)
    return (f"{reason} ({note})", not absent) if note else (reason, False)


def _beside_reason(fp: Any, branch: str, cfg: Any) -> tuple[str, bool]:
    """(the reason of a converged ``fp`` of ``branch``'s label below the branch's floor, whether it shows solver
    failure rather than absence: :func:`~attnphase.numerics.phase.absence.beside_note`); ("", False) for a point on
    the branch."""
    from attnphase.numerics.phase.absence import beside_note
    from attnphase.numerics.se.se_map import model_rule

    absent, note = beside_note(fp, branch, model_rule(fp.params, cfg), cfg)
    return (f"{not_found(fp, branch)}: {note}", not absent) \
        if note else ("", False)


def _finer_rule_reason(fp: Any, branch: str, cfg: Any) -> str:
    """The reason of a point on ``branch`` next to an agnostic point stable in the branch's direction that a finer
    rule does not reproduce, the rule's own (:func:`~attnphase.numerics.phase.absence.finer_rule_note`; "" where it
    does, or for any other point); where that rule's solve does not converge, a note on stderr."""
    from attnphase.numerics.phase.absence import finer_rule_note
    from attnphase.numerics.se.se_map import model_rule

    absent, note = finer_rule_note(fp, branch, model_rule(fp.params, cfg), cfg)
    if absent:
        return f"{not_found(fp, branch)}: {note}"
    if note:
        print(f"attnphase: note: {note}", file=sys.stderr)
    return ""


def _point_error(fp: Any, cfg: Any, n_rules: int) -> Any:
    """The scalar form's error bars of a converged ``fp``
    (:func:`~attnphase.numerics.errors.quadrature_error.fixed_point_error`; None where none are made or ``fp`` did
    not converge)."""
    from attnphase.numerics.errors.quadrature_error import fixed_point_error

    return fixed_point_error(fp, cfg, n_rules) if fp.status.converged else None


#: A cold semantic point whose theta the error estimate's rules spread by more than this fraction of it (the default
#: tier aims at 1e-3) is compared with the branch followed down from above (:func:`_semantic_reproduced`).
THETA_SPREAD = 0.1


def _semantic_reproduced(fp: Any, err: Any, cfg: Any, n_rules: int) -> tuple[Any, Any]:
    """A semantic point (and its bars ``err``) that fewer than two of the error estimate's rules reproduce, or whose
    theta they spread by more than :data:`THETA_SPREAD` of it, tried again by following the branch down from above
    (:func:`~attnphase.numerics.se.state_evolution.semantic_followed_down`): the point reached so, where the rules
    reproduce it and it is another point than ``fp`` (:func:`~attnphase.numerics.phase.branch_jump.is_jump`; always
    where fewer than two reproduce ``fp``), with a note; else ``fp`` and ``err``.  ``solve --omega 0 --alpha 0.56``:
    theta = 0.0215 from the cold start, one rule of four; the branch followed down from 0.7, as ``sweep`` follows
    it, is at 0.19.  ``solve --sigma 0.8 --omega 0.2 --alpha 0.6273``: theta = 0.050 +- 0.012 from the cold start,
    next to the agnostic point (docs/general.md, "A root that is a jump"); followed down, 0.46."""
    if not (fp.status.converged and fp.branch == "semantic" and err is not None):
        return fp, err
    few = err.converged < 2
    theta = abs(float(fp.record["theta"]))
    if not (few or float(err.std["theta"]) > THETA_SPREAD * theta):
        return fp, err
    from attnphase.numerics.phase.branch_jump import is_jump
    from attnphase.numerics.se.state_evolution import semantic_followed_down

    spread = f"theta = {theta:.3g} +- {float(err.std['theta']):.2g} over the rules, beyond {THETA_SPREAD:g} of it"
    down = semantic_followed_down(fp.with_status(converged=False, message=fp.status.message if few else spread), cfg)
    if not (down.status.converged and down.branch == "semantic") or not (few or is_jump(fp, down, "semantic")):
        return fp, err
    down_err = _point_error(down, cfg, n_rules)
    if down_err is None or down_err.converged < 2:
        return fp, err
    why = (f"is reproduced by {err.converged} of the {len(err.rules)} rules of the error estimate only, a point of "
           "the rule's jumps" if few else f"has a bar of {float(err.std['theta']):.2g}, more than {THETA_SPREAD:g} of "
           f"theta, and e_t = {fp.record['e_t']:.5g}: another point than the branch's")
    print(f"attnphase: note: the cold start's semantic point (theta = {fp.record['theta']:.3g}) {why}; the branch "
          f"followed down from above (theta = {down.record['theta']:.3g}, e_t = {down.record['e_t']:.5g}), as `sweep` "
          "follows it, is reproduced and is the one reported", file=sys.stderr)
    return down, down_err


def _error_bars(rec: dict, fp: Any, err: Any, cfg: Any, n_rules: int,
                args: argparse.Namespace) -> tuple[dict, Any]:
    """The scalar form's ``err_<key>`` from ``err`` (:func:`_point_error`), ``max_relative_error`` and notes, and the
    fixed point as the rule's blocks confirm it (docs/method.md section 4)."""
    from attnphase.numerics.errors.quadrature_error import e_t_rule_note, error_bars_note
    from attnphase.numerics.se.stalls import confirm_jump_acceptance

    if err is not None:
        confirmed = confirm_jump_acceptance(fp, err.converged, len(err.rules))
        if not confirmed.status.converged:
            return rec, confirmed
    if fp.status.message != "converged" and not fp.status.message.startswith("absent:"):  # that one is in `reason`
        # accepted at the rule's jump scale, or finished on the symmetric subspace (docs/method.md section 4, the fixed-point solver)
        print(f"attnphase: note: {fp.status.message}", file=sys.stderr)
    if err is not None:
        rec.update({f"err_{k}": v for k, v in err.std.items()})
        rec["max_relative_error"] = max_relative_error(rec)
        if err.converged < 2 or not all(math.isfinite(v) for v in err.std.values()):  # no spread: say why
            rec |= error_note(f"no error bars: only {err.converged} of the {len(err.rules)} rules of the error "
                              f"estimate reproduced this fixed point's branch (a spread needs two); the point may "
                              f"be an artefact of the rule")
        else:
            precision_note(rec["max_relative_error"], getattr(args, "precision", None) or "default")
        exact = "; ".join(n for n in (exact_zero_note(rec), e_t_rule_note(cfg), negative_e_t_note(rec)) if n)
        if exact:  # a bar of 0 is never silent, nor one that leaves a part out: the record says why
            rec["error_note"] = "; ".join(n for n in (rec.get("error_note"), exact) if n)
        unresolved_order_warning(fp, err)
    else:
        rec.update({f"err_{k}": None for k in RESULT_KEYS}, max_relative_error=None)
        rec |= error_note(error_bars_note(cfg, n_rules))  # not "": err is None only where no bar is made
    return rec, fp


def _matrix_error_bars(rec: dict, err: dict, cfg: Any, n_rules: int, tier: str) -> dict:
    """The matrix form's ``rec`` with its error bars ``err``
    (:func:`~attnphase.numerics.errors.replicates.judged_matrix_point`: ``err_<key>``, ``replicates`` on the point's
    branch (no bars below two), ``replicates_tried``), ``max_relative_error`` and the note where it misses the
    precision ``tier``'s target; the note why there are none where ``err`` is empty."""
    from attnphase.numerics.errors.quadrature_error import error_bars_note

    if not err:
        return rec | {"max_relative_error": None} | error_note(error_bars_note(cfg, n_rules))
    rec.update(err)
    if rec["replicates"] < rec["replicates_tried"]:
        print(f"attnphase: note: error bars from {rec['replicates']} of {rec['replicates_tried']} replicates "
              "(the others did not converge on this branch)" + ("; none shown" if rec["replicates"] < 2 else ""),
              file=sys.stderr)
    if rec["replicates"] < 2:
        rec["max_relative_error"] = None  # as at r = r* = 1 where no bar is made: the key is always there
        rec["error_note"] = (f"no error bars: only {rec['replicates']} of {rec['replicates_tried']} replicates "
                             "converged on this branch (a spread needs two)")
    else:
        rec["max_relative_error"] = max_relative_error(rec)
        precision_note(rec["max_relative_error"], tier)
        rec |= error_note(matrix_bars_note(rec))
        matrix_unresolved_order_warning(rec)
    return rec
