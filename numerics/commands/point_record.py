"""What ``solve`` prints for one fixed point, at every rank: its record (the scalar form's RECORD_KEYS at
r = r* = 1, the matrix form's MATRIX_KEYS otherwise: docs/reference/outputs.md), the warnings and notes its error
bars call for, and the exit code (README "Exit codes").
"""

from __future__ import annotations

import json
import math
import sys

from attnphase import outputs
from attnphase.display import record_lines
from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.config import PRECISION_TARGETS
from attnphase.numerics.se.results import runaway_q
from attnphase.theory.whitening import original

#: The scalar form's record entries, in order (:func:`solve_record` adds the model, requested branch and reason).
RECORD_KEYS = ("alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta", "eps_g", "e_t", "eps_lin",
               "converged", "iterations", "residual")

#: The exit code of a solve or sweep whose requested branch was found nowhere (README "Exit codes").
EXIT_NO_BRANCH = 3
#: Record entries that are results of a fixed point (null where the solve did not converge).
RESULT_KEYS = ("q", "m", "V", "theta", "eps_g", "e_t")


def model_echo(params) -> dict:
    """The model a result belongs to, beside it: L, sigma, A, P, rho0, the rank, the loss and, for correlated tokens,
    C (in the tokens' own variables: a whitened model is shown as the model it stands for)."""
    params = original(params)
    echo = {"L": params.L, "sigma_l": list(params.sigma), "A": [list(r) for r in params.A],
            "P": [list(r) for r in params.P], "rho0": params.rho0, "rank": params.r, "loss": params.loss}
    return echo | ({"C": [list(r) for r in params.C]} if params.C is not None else {})


def record_model(params) -> dict:
    """:func:`model_echo` as a record carries it beside its own ``sigma`` (one number or the per-token list): without
    ``sigma_l``."""
    return {k: v for k, v in model_echo(params).items() if k != "sigma_l"}


#: The matrix form's record entries that are results (null where the solve did not converge).
MATRIX_KEYS = ("q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms", "directions", "eps_g", "e_t",
               "e_t_direct", "gauge_angle")


def zero_student(fp, before: str = ", ") -> str:
    """``before`` + "the student Q = 0 (q = ...)" where ``fp`` (its best point where it did not converge) is Q = 0 at
    round-off (:attr:`Overlaps.zero_student <attnphase.numerics.se.overlaps.Overlaps.zero_student>`; a reason's
    clause), else ""."""
    return f"{before}the student Q = 0 (q = {fp.overlaps.q:.1e})" if fp.overlaps.zero_student else ""


def runaway_student(fp) -> str:
    """Where ``fp``'s solve ran away without a ridge (:func:`~attnphase.numerics.se.results.runaway_q`): a reason's
    clause saying so, with q where its iterates went farthest and the teacher's q; else ""."""
    q = runaway_q(fp)
    if math.isnan(q):
        return ""
    return (f" (with lam = 0 nothing bounds the student's norm: q = {q:.3g} along the iterates, the teacher's q "
            f"being {fp.params.rho0 * fp.params.r_star:g}; a small lam > 0 gives the limit lam -> 0+)")


def not_found(fp, branch: str) -> str:
    """The head of every reason that ``fp`` is no point of ``branch``: "no <branch> fixed point found at alpha = ...,
    omega = ..." (the solve converged elsewhere, or below the branch's floor)."""
    return f"no {branch} fixed point found at alpha = {fp.alpha:g}, omega = {fp.params.omega:g}"


def _reason(fp, requested: str) -> str:
    """Why ``fp`` is not a result on the requested branch ("" when it is)."""
    if not fp.status.converged:
        msg = fp.status.message if fp.status.message.startswith("not converged") else f"not converged: {fp.status.message}"
        return (f"{msg}; residual {fp.status.residual:.2e}{zero_student(fp, ' at ')}: no fixed point, so no overlaps "
                f"are reported{runaway_student(fp)}")
    if fp.branch != requested:
        # the evidence of an absent branch (numerics.se.stalls.judge_agnostic_image)
        evidence = f" ({fp.status.message})" if fp.status.message.startswith("absent:") else ""
        return (f"{not_found(fp, requested)}: "
                f"the solve from the {requested} start converged to the {fp.branch} one"
                f"{zero_student(fp)}{evidence}")
    return ""


def solve_record(fp, requested: str, eps_lin: float = math.nan) -> tuple[dict, str]:
    """(the printed record, the reason it is not a result on the requested branch -- "" when it is), at every
    rank: the scalar form's keys at r = r* = 1, the matrix form's otherwise (module doc; ``eps_lin`` the rank-r*
    teacher's, which the matrix form's point does not carry)."""
    reason = _reason(fp, requested)
    if not is_scalar_form(fp.params.r, fp.params.r_star):
        return matrix_record(fp, requested, eps_lin) | {"reason": reason}, reason
    rec = {k: fp.record[k] for k in RECORD_KEYS}
    if not fp.status.converged:
        rec.update({k: None for k in RESULT_KEYS}, branch=None)
    i = RECORD_KEYS.index("branch")  # the model after lam, the requested branch after the one reached
    echo = record_model(fp.params)
    return ({k: rec[k] for k in RECORD_KEYS[:i]} | echo | {"branch": rec["branch"], "requested_branch": requested}
            | {k: rec[k] for k in RECORD_KEYS[i + 1:]} | {"reason": reason}), reason


def matrix_record(fp, requested: str, eps_lin: float = math.nan) -> dict:
    """The matrix form's keys of one solve (module doc) and ``eps_lin`` (the rank-r* teacher's, a property of the
    model: :func:`~attnphase.numerics.phase.lowest_branch.teacher_eps_lin`); the overlaps, invariants and
    observables None where it did not converge."""
    params, rec, ok = fp.params, fp.record, fp.status.converged
    out = {"alpha": fp.alpha, "omega": params.omega, "sigma": params.sigma_value, "lam": params.lam,
           "L": params.L, "A": [list(x) for x in params.A], "P": [list(x) for x in params.P], "rho0": params.rho0,
           "loss": params.loss, "rank": params.r, "teacher_rank": rec["r_star"], "branch": rec["branch"] if ok else None,
           "requested_branch": requested}
    return (out | {key: rec[key] if ok else None for key in MATRIX_KEYS} | {"eps_lin": eps_lin}
            | {k: rec[k] for k in ("converged", "iterations", "residual", "prox_failures", "quadrature")}
            | {"overlaps": rec["canonical_overlaps"] if ok else None})


#: A symmetry-breaking point's order parameter counts as resolved from 0 when it exceeds this many
#: of its error bars (from the rule's blocks).
ORDER_RESOLVED = 2.0


def unresolved_order_warning(fp, err) -> None:
    """Warn when a positional / semantic point's order parameter (|m_1|, |theta|) is not resolved from 0 by the rule's
    blocks: its error bar is NaN, or more than 1 / ORDER_RESOLVED of it."""
    key = {"positional": "m", "semantic": "theta"}.get(fp.branch)
    if key is None:
        return
    _order_resolved(fp.branch, key, abs(float(fp.record[key])), float(err.std[key]), err.converged, len(err.rules))


#: The order parameters of the matrix form's branches: the invariant whose largest entry must be resolved from 0.
MATRIX_ORDER = {"positional": ("m_norms",), "semantic": ("th0_singular_values",),
                "mixed": ("m_norms", "th0_singular_values")}


def matrix_unresolved_order_warning(rec: dict) -> None:
    """:func:`unresolved_order_warning` for a matrix record with its bars (:func:`matrix_record` and
    ``err_<key>``): the largest entry of each order parameter of its branch (:data:`MATRIX_ORDER`) against its bar."""
    for key in MATRIX_ORDER.get(rec.get("branch") or "", ()):
        values, errs = rec.get(key), rec.get(f"err_{key}")
        if not values:
            continue
        i = max(range(len(values)), key=lambda j: abs(values[j]))
        e = float(errs[i]) if isinstance(errs, list) and errs[i] is not None else math.nan
        _order_resolved(rec["branch"], f"{key}[{i}]", abs(float(values[i])), e, rec.get("replicates", 0),
                        rec.get("replicates_tried", 0))


def _order_resolved(branch: str, key: str, value: float, e: float, on: int, tried: int) -> None:
    """The warning of :func:`unresolved_order_warning` unless ``value`` > ORDER_RESOLVED ``e`` (a finite bar)."""
    if math.isfinite(e) and value > ORDER_RESOLVED * e:
        return
    print(f"attnphase: warning: the {branch} order parameter {key} = {value:.2e} is not resolved from 0 by the "
          f"rule's blocks (err_{key} = {e:.2e}, {on} of {tried} blocks on the branch): the point may be an artefact "
          f"of the rule (docs/method.md section 4, the fixed-point solver)", file=sys.stderr)


#: |e_t| up to which a negative e_t is the round-off of a vanishing training loss (a sum of squares plus the ridge).
E_T_ROUND_OFF = 1e-12


def negative_e_t_note(rec: dict) -> str:
    """Why e_t < 0 is printed ("" when it is not): the training loss is >= 0, so a negative e_t within
    :data:`E_T_ROUND_OFF` of 0 is that loss vanishing to round-off (--lam 0: the student interpolates)."""
    e = rec.get("e_t")
    if e is None or not math.isfinite(e) or e >= 0:
        return ""
    if -e <= E_T_ROUND_OFF:
        return f"e_t = {e:.2g} < 0 is 0 to round-off: the training loss vanishes here (the student interpolates)"
    return f"e_t = {e:.3g} < 0: no training loss is negative, a numerical error of the free entropy"


def exact_zero_note(rec: dict) -> str:
    """Why a bar is 0 ("" when none is): an order parameter the fixed point's symmetry holds at 0 (m on the semantic
    branch, theta on the positional one, both on the agnostic one) is 0 on every rule, so exactly."""
    zeros = [k for k in RESULT_KEYS if rec.get(k) == 0.0 and rec.get(f"err_{k}") == 0.0]
    return (" = ".join(f"err_{k}" for k in zeros) + " = 0: " + " = ".join(zeros) + f" = 0 exactly on the "
            f"{rec.get('branch') or 'reached'} branch (its symmetry holds it there on every rule)") if zeros else ""


def matrix_bars_note(rec: dict) -> str:
    """The matrix form's bars that are 0 or absent, said (:func:`matrix_bars_clauses`, joined)."""
    return "; ".join(matrix_bars_clauses(rec))


#: An invariant and its bar at most this are 0 but for round-off (the semantic point's m_norms at r = r* = 2: 2.8e-19
#: with a bar of 5.8e-16).
ROUND_OFF = 1e-12


def matrix_bars_clauses(rec: dict) -> list[str]:
    """The matrix form's bars that are 0 or absent, one clause each: an invariant whose every entry and bar are 0 (to
    :data:`ROUND_OFF`) on the record's branch (the symmetry holds it there on every block), and the diagnostics
    ``e_t_direct`` and ``gauge_angle``, which have no bar."""
    zeros = [k for k in MATRIX_KEYS if isinstance(rec.get(k), list) and rec[k] and isinstance(rec.get(f"err_{k}"), list)
             and all(abs(v) <= ROUND_OFF for v in rec[k]) and all(abs(e) <= ROUND_OFF for e in rec[f"err_{k}"])]
    exact = all(v == 0.0 for k in zeros for v in rec[k] + rec[f"err_{k}"])
    said = [" = ".join(f"err_{k}" for k in zeros) + " = 0: " + " = ".join(zeros) + " = 0 "
            + ("exactly" if exact else f"to round-off (<= {ROUND_OFF:g})") + f" on the "
            f"{rec.get('branch') or 'reached'} branch (its symmetry holds it there on every block)"] if zeros else []
    unbarred = [k for k in ("e_t_direct", "gauge_angle") if rec.get(k) is not None and f"err_{k}" not in rec]
    if unbarred:
        said.append(" and ".join(unbarred) + " have no err_: diagnostics (e_t_direct = lambda Tr q0 / 2 + alpha E[loss], "
                    "e_t again, its bar err_e_t; gauge_angle = the rule's breaking of the rotation symmetry)")
    return said


def exact_zero_rows_note(rows: list[dict]) -> str:
    """:func:`exact_zero_note` (or :func:`matrix_bars_clauses`) over a sweep's or a census's rows on the branch, each
    distinct clause once ("" when no bar is 0)."""
    clauses = ([n] if (n := exact_zero_note(r)) else matrix_bars_clauses(r) for r in rows if not r.get("reason"))
    return "; ".join(dict.fromkeys(c for row in clauses for c in row))


#: The overlaps of :func:`max_relative_error`: q, m, V, theta -> the matrix form's invariant of each.
OVERLAP_INVARIANTS = {"q": "q0_eigenvalues", "m": "m_norms", "V": "V0_eigenvalues", "theta": "th0_singular_values"}


def max_relative_error(rec: dict) -> float:
    """max err_k / |k| over the non-zero overlaps q, m, V, theta of a record with error bars (at rank r every entry
    of their invariants, :data:`OVERLAP_INVARIANTS`; NaN when a bar is NaN), leaving out an order parameter that the
    reached branch's symmetry holds at 0 (m on the semantic branch, theta on the positional one, both on the agnostic
    one; :data:`~attnphase.numerics.phase.branch_end.BRANCH_FLOORS` names those that are not): its value there is
    the solver's residue (theta ~ 1e-12 on an agnostic point reached from the semantic start), not an accuracy; and
    any entry not above :data:`~attnphase.numerics.se.overlaps.ZERO_OVERLAP` (zero at round-off)."""
    from attnphase.numerics.phase.branch_end import BRANCH_FLOORS
    from attnphase.numerics.se.overlaps import ZERO_OVERLAP

    held = set()
    if rec.get("branch") in BRANCH_FLOORS:
        held = {"m", "theta"} - {"theta" if name == "th0" else name for name, _ in BRANCH_FLOORS[rec["branch"]]}
    rel = []
    for k, invariant in OVERLAP_INVARIANTS.items():
        key = k if k in rec else invariant
        if k in held or not rec.get(key):
            continue
        values, errs = (rec[key], rec[f"err_{key}"]) if isinstance(rec[key], list) else ([rec[key]], [rec[f"err_{key}"]])
        rel += [e / abs(v) for v, e in zip(values, errs) if abs(v) > ZERO_OVERLAP]
    return max(rel) if rel and all(math.isfinite(r) for r in rel) else math.nan


def precision_note(rel: float, tier: str) -> None:
    """Say on stderr when the error bars miss the tier's target (numerics.config.PRECISION_TARGETS)."""
    target = PRECISION_TARGETS[tier]
    if not rel <= target:
        print(f"attnphase: note: the largest relative error bar of the overlaps is {rel:.1e}, above the {tier} tier's "
              f"target {target:g} (docs/method.md section 8, accuracy: what each tier reaches)", file=sys.stderr)


def print_record(rec: dict, reason: str, converged: bool, as_json: bool, show=lambda v: v,
                 census: bool = False, failed: bool = False) -> int:
    """Print a solve record (one JSON object, or :func:`attnphase.display.record_lines` with ``show``) and the warning
    or note its ``reason`` calls for (with ``census``, a failed solve's warning names the census that lists the
    fixed points at its alpha); the exit code: 0, 1 (not converged, or ``failed``: converged to another point where
    the requested branch exists, solver failure) or EXIT_NO_BRANCH.  The record gains ``found``: whether it is a point
    of the requested branch (exit code 0), one key for a script where ``branch`` alone does not say it (a point of
    the requested label below its floor, or the rule's own)."""
    rec = rec | {"found": bool(converged and not failed and not reason)}
    if as_json:
        print(json.dumps(outputs.json_value(rec)))
    else:
        print("\n".join(record_lines(rec, show)))
    if not converged or failed:
        hint = (f"; `attnphase census --alpha {rec['alpha']:g}` with the same model options lists the fixed points "
                "that converge here") if census else ""
        print(f"attnphase: warning: {reason}{hint}", file=sys.stderr)
        return 1
    if reason:
        print(f"attnphase: {reason} (exit code {EXIT_NO_BRANCH})", file=sys.stderr)
        return EXIT_NO_BRANCH
    return 0
