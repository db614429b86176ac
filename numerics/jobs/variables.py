"""The variables of the numerics' outputs: one name, one meaning and one unit in CSV, JSON and netCDF
(:class:`~attnphase.execution.dataset.Variable`, in the symbols of docs/model.md); ``err_X`` is the standard error
of X (:func:`lookup`).  Each writer keeps its own column order.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from attnphase.execution.dataset import Variable, error_name, standard_error, table_lookup, variables_map
from attnphase.numerics.commands.point_record import RECORD_KEYS, RESULT_KEYS


def _v(name: str, long_name: str, units: str | None = "1", comment: str = "",
       flags: tuple[tuple[int, str], ...] = ()) -> tuple[str, Variable]:
    return name, Variable(name, long_name, units, comment, flags)


#: The flags of a yes/no variable stored as 0/1 (CF flag_meanings: one word each).
def _yes_no(no: str, yes: str) -> tuple[tuple[int, str], ...]:
    return (0, no), (1, yes)


_BRANCH_END = ("where the branch's fixed point ceases to exist: bifurcation (its order parameter reaches 0), fold, "
               "or solver failure (no converged solve beyond: may be numerical)")

_TABLE: list[tuple[str, Variable]] = [
    # the model (docs/model.md section 1) and the grid
    _v("alpha", "sample complexity alpha = n/d"),
    _v("omega", "weight omega of the positional teacher A"),
    _v("sigma", "token standard deviation sigma_l", comment="one number, or the per-token values as text"),
    _v("lam", "ridge penalty lambda"),
    _v("rho0", "teacher norm rho0 (Q*^T Q*/d = rho0 I)"),
    _v("L", "sequence length L"),
    # a fixed point of the state evolution (section 4) and its observables (section 5)
    _v("branch", "branch of the fixed point reached (semantic, positional, agnostic; mixed at rank r >= 2)", None),
    _v("q", "self-overlap q = |Q|^2/d"),
    _v("m", "positional overlap m = p_1.Q/sqrt(d)"),
    _v("V", "variance overlap V"),
    _v("theta", "semantic overlap theta = Q.Q*/d"),
    _v("eps_g", "test error eps_g"),
    _v("e_t", "training loss per dimension e_t (-Phi)"),
    _v("eps_lin", "test error eps_lin of the linear baseline"),
    _v("converged", "1 where the fixed point converged, else 0", flags=_yes_no("not_converged", "converged")),
    _v("on_branch", "1 where the fixed point reached lies on the branch (converged, with the branch's label and its "
       "order parameter at or above the branch's floor), else 0", flags=_yes_no("off_branch", "on_branch")),
    _v("iterations", "iterations of the fixed-point solver"),
    _v("residual", "residual of the fixed-point solver", comment="relative step of the state-evolution map"),
    _v("reason", "why the row is not a result on the requested branch (empty: it is)", None),
    _v("max_relative_error", "largest standard error relative to its value over the fixed point's observables"),
    # the phase diagram (section 6)
    _v("alpha_c", "alpha_c, where the global minimum switches branch (alpha_c_from to alpha_c_to)"),
    _v("alpha_l", "alpha_l, where the global minimum's test error drops below eps_lin"),
    _v("semantic_end", "alpha where the semantic branch ends", comment=_BRANCH_END),
    _v("positional_end", "alpha where the positional branch ends", comment=_BRANCH_END),
    _v("mixed_end", "alpha where the mixed branch ends (rank r >= 2)", comment=_BRANCH_END),
    _v("alpha_c_coarse", "alpha_c on the solve rule, before the fine-rule Newton correction",
       comment="rank r = r* = 1; NaN at r >= 2 or r* >= 2, where alpha_c is located on the solve rule"),
    _v("alpha_c_from", "branch of the global minimum below alpha_c", None),
    _v("alpha_c_to", "branch of the global minimum above alpha_c", None),
    _v("alpha_c_method", "how alpha_c was located, and what its error is", None),
    _v("alpha_l_branch", "branch whose test error crosses eps_lin at alpha_l", None),
    _v("notes", "the solver's notes", None),
    _v("status", "task status (done, stored, failed)", None),
    _v("error", "the task's error (empty: none)", None),
    _v("end", "alpha where the branch ends", comment=_BRANCH_END + "; NaN: no end located (the branch spans the grid, "
       "or is on at none of its points)"),
    _v("end_kind", "how the branch ends", None),
    _v("birth", "alpha where the positional branch is born from the agnostic point below the sweep's first point on "
       "it (NaN: none located)"),
    # the Bayes-optimal estimator (docs/bayes-optimal.md)
    _v("estimator", "estimator: erm (global minimiser of the training loss) or bayes-optimal (posterior mean)", None),
    _v("free_entropy", "free entropy Phi of the Bayes-optimal fixed point (null at perfect recovery)"),
    _v("perfect_recovery", "1 where the Bayes-optimal fixed point is q0 = rho0 (perfect recovery), else 0",
       flags=_yes_no("no_perfect_recovery", "perfect_recovery")),
    _v("coincides", "1 where the informative and uninformative Bayes-optimal branches are the same point, else 0"),
    _v("alpha_weak_recovery", "Bayes-optimal weak-recovery threshold alpha_WR (q0 = 0 loses stability)"),
    _v("alpha_it", "Bayes-optimal information-theoretic threshold alpha_IT (free-entropy crossing)"),
    _v("alpha_amp", "Bayes-optimal algorithmic threshold alpha_AMP (end of the uninformative branch)"),
    # the census (docs/method.md section 12)
    _v("stable", "1 where the fixed point is stable under the state-evolution map",
       flags=_yes_no("unstable", "stable")),
    _v("leading_eigenvalue", "leading eigenvalue of the state-evolution Jacobian at the fixed point"),
    _v("starts", "how many starts reached the fixed point"),
    _v("rank_in_e_t", "rank of the fixed point by e_t (1: lowest)"),
    _v("delta_e_t", "e_t above the lowest fixed point's"),
    _v("separation_paired", "height above the lowest fixed point in paired standard errors"),
    _v("separation_combined", "height above the lowest fixed point in combined standard errors"),
    _v("gauge_angle", "angle of the gauge alignment", "rad"),
    _v("replicates", "number of replicates the error bars come from"),
    _v("replicates_tried", "number of replicates solved for the error bars (those on another branch left out)"),
    # census_starts.csv / census.nc: one row per start of the census's search
    _v("start", "name of the census's start", None),
    _v("requested_branch", "branch requested (by the command, or the census start made for it)", None),
    _v("kind", "kind of the census start", None),
    _v("fixed_point", "rank_in_e_t of the fixed point the start reached", comment="NaN / empty: it reached none"),
    _v("message", "the solver's message where the start did not converge (empty: it did)", None),
    _v("start_residual", "residual of the start's solve (census.nc at rank r >= 2, beside the points' residual)",
       comment="relative step of the state-evolution map"),
    # phase-diagram --census: one row per omega
    _v("census_alpha", "alpha of the census (alpha_c)"),
    _v("census_global_min", "branch of the census's lowest fixed point", None),
    _v("census_fixed_points", "number of distinct fixed points the census found"),
    _v("census_separation", "e_t gap between the compared pair and the lowest other fixed point, in combined standard errors"),
    _v("census_beaten_by", "fixed point whose e_t lies below the compared pair's (empty: none)", None),
]
#: The rank-r census's invariants of a fixed point, per index i: (column prefix, long name).
INVARIANTS = {"q0_eig": "eigenvalue {} of Q0", "V0_eig": "eigenvalue {} of V0",
              "th0_sv": "singular value {} of theta0", "m_norm": "norm of the positional overlap m of position {}"}
#: The branches whose ends the phase diagram locates (mixed at r >= 2).
_ENDS = ("semantic", "positional", "mixed")
_TABLE += [_v(f"{br}_end_kind", f"how the {br} branch ends", None) for br in _ENDS]
_TABLE += [_v(f"{br}_end_method", f"how the {br} branch's end was located", None) for br in _ENDS]
_TABLE += [_v(f"{br}_end_exists", f"the side of its end the {br} branch exists on: above (the end is its birth) or "
              "below", None) for br in _ENDS]
_TABLE += [_v(f"{k}_note", f"how {k} was found, or why it does not exist", None)
           for k in ("alpha_weak_recovery", "alpha_it", "alpha_amp")]
_TABLE += [_v(f"{k}_found", f"number of rules on which {what} was found")
           for k, what in (("alpha_c", "alpha_c"), ("alpha_l", "alpha_l"),
                           *((f"{br}_end", f"the {br} branch's end") for br in _ENDS))]
#: name -> Variable (read-only).
VARIABLES: Mapping[str, Variable] = MappingProxyType(dict(_TABLE))

#: A matrix fixed point's record entries that are gauge invariants (lists), each with its columns' prefix in
#: :data:`INVARIANTS` (``q0_eigenvalues`` -> ``q0_eig_1``, ``q0_eig_2``, ...).
INVARIANT_COLUMNS = (("q0_eigenvalues", "q0_eig"), ("V0_eigenvalues", "V0_eig"), ("th0_singular_values", "th0_sv"),
                     ("m_norms", "m_norm"))


def invariant_columns(r: int, r_star: int, L: int) -> tuple[str, ...]:
    """The columns of a rank-r fixed point's gauge invariants (:data:`INVARIANT_COLUMNS`): r eigenvalues of q0 and
    of V0, min(r, r*) singular values of th0, L norms |m_l|."""
    sizes = {"q0_eigenvalues": r, "V0_eigenvalues": r, "th0_singular_values": min(r, r_star), "m_norms": L}
    return tuple(f"{prefix}_{i + 1}" for key, prefix in INVARIANT_COLUMNS for i in range(sizes[key]))


def flat_invariants(rec: dict, prefix: str = "") -> dict:
    """The entries ``<prefix><key>`` of :data:`INVARIANT_COLUMNS` in ``rec`` (lists) as one column per entry,
    ``<prefix><column prefix>_<i>`` (``prefix`` "err_": their error bars)."""
    return {f"{prefix}{short}_{i + 1}": v for key, short in INVARIANT_COLUMNS for i, v in enumerate(rec[prefix + key])}


def sweep_columns(r: int = 1, r_star: int = 1, L: int = 2) -> tuple[str, ...]:
    """The sweep's columns in the order of its CSV: the model and the branch, the overlaps (q, m, V, theta at
    r = r* = 1, else :func:`invariant_columns` and the gauge angle), the observables, the status, ``err_<column>``
    and ``reason``."""
    scalar = (r, r_star) == (1, 1)
    overlaps = RESULT_KEYS[:4] if scalar else invariant_columns(r, r_star, L)
    results = overlaps + RESULT_KEYS[4:]
    head = RECORD_KEYS[:RECORD_KEYS.index("q")]
    tail = RECORD_KEYS[RECORD_KEYS.index("e_t") + 1:]
    gauge = () if scalar else ("gauge_angle",)
    return head + results + tail[:1] + gauge + tail[1:] + tuple(f"err_{k}" for k in results) + ("reason",)


#: The sweep's columns at r = r* = 1 (:func:`sweep_columns`).
SWEEP_COLUMNS = sweep_columns()

_lookup = table_lookup(VARIABLES)


def _invariant(name: str) -> Variable | None:
    """The invariant ``<prefix>_<i>`` of :data:`INVARIANTS`, or None."""
    prefix, _, index = name.rpartition("_")
    return Variable(name, INVARIANTS[prefix].format(index)) if prefix in INVARIANTS and index.isdigit() else None


def lookup(name: str) -> Variable | None:
    """The variable named ``name``, or None: for ``err_X`` X's standard error; also the invariants of
    :data:`INVARIANTS`."""
    of = error_name(name)
    if of is not None and (base := _invariant(of)) is not None:
        return standard_error(base, name)
    return _invariant(name) or _lookup(name)


def described(names) -> dict[str, dict[str, str]]:
    """A JSON file's ``variables``: ``{name: {"long_name", "units"}}`` of each of ``names`` in the table."""
    return variables_map(names, lookup)
