"""The model options every ``attnphase`` command shares, and the one syntax of numeric lists
(:func:`parse_values`: ``NUMBER``, ``a,b,c`` or ``START:STOP:NUM``).

:func:`add_model_options` adds the model group, :func:`params_from_args` builds the
:class:`~attnphase.theory.params.ModelParams` from it. Imports the standard library only; bad values raise
``ValueError`` naming the option (one line, exit code 2).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
from fractions import Fraction
from typing import Any

from attnphase.numerics.grids import even_grid

#: Model options: (option, ModelParams field).
MODEL_OPTIONS = (("--L", "L"), ("--sigma", "sigma"), ("--A", "A"), ("--P", "P"), ("--omega", "omega"), ("--lam", "lam"),
                 ("--rho0", "rho0"), ("--rank", "r"), ("--teacher-rank", "r_star"), ("--token-cov", "C"))

#: The most values a numeric list may hold (each command caps its grid lower: attnphase.workload.check_grid).
MAX_VALUES = 1_000_000

RANGE_SYNTAX = "NUMBER, a,b,c or START:STOP:NUM (NUM values from START to STOP, both included)"


def _exact(text: str, value: float) -> Fraction:
    """The number ``text`` as written (a decimal is exact as a fraction), else the float ``value`` it parsed to."""
    try:
        return Fraction(text)
    except ValueError:
        return Fraction(value)


#: Values of a list closer than this (relative to max(1, |value|)) are one grid point (see :func:`parse_values`).
SAME_VALUE = 1e-12


def parse_values(text: str, option: str, *, positive: bool = False, distinct: bool = True) -> list[float]:
    """Values of a numeric list option: ``NUMBER``, ``a,b,c`` or ``START:STOP:NUM`` (NUM evenly spaced values, both
    ends included), or a comma list of those; ``positive``: every value > 0; ``distinct``: no value twice."""
    values: list[float] = []
    bad = ValueError(f"{option} must be {RANGE_SYNTAX}; e.g. 2, 0.5,1,2 or 0.5:2:16; got {text!r}")
    if "_" in str(text):  # Python's float() reads 1_0 as 10: no number a user means
        raise bad
    for item in str(text).strip().split(","):
        parts = [s.strip() for s in item.split(":")]
        try:
            if len(parts) == 1:
                values.append(float(parts[0]))
                continue
            if len(parts) != 3:
                raise bad
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise bad from None
        if num < 1:
            raise ValueError(f"{option}: NUM in START:STOP:NUM must be an integer >= 1, got {text!r}")
        if num == 1 and start != stop:  # one value cannot hold both ends
            raise ValueError(f"{option}: START:STOP:1 is one value, so START and STOP must be equal (both ends are "
                             f"included); give {parts[0]} alone or NUM >= 2, got {text!r}")
        if num + len(values) > MAX_VALUES:
            raise ValueError(f"{option}: {num} values is more than any command takes (at most {MAX_VALUES}), got {text!r}")
        if num > 1 and not (math.isfinite(start) and math.isfinite(stop)):
            raise ValueError(f"{option} values must be finite numbers, got {text!r}")
        values.extend(even_grid(_exact(parts[0], start), _exact(parts[1], stop), num) if num > 1 else [start])
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{option} values must be finite numbers, got {text!r}")
    if positive and min(values) <= 0:
        raise ValueError(f"{option} values must be > 0, got {text!r}")
    if distinct and len(set(values)) < len(values):
        twice = next(v for i, v in enumerate(values) if v in values[:i])
        raise ValueError(f"{option} values must be distinct (a grid point given twice: {twice:g}), got {text!r}")
    ordered = sorted(values)
    close = [(a, b) for a, b in zip(ordered, ordered[1:]) if b - a <= SAME_VALUE * max(1.0, abs(a), abs(b))]
    if distinct and close:  # the solvers take them for one point (a continuation reaches a target within 1e-12)
        a, b = close[0]
        raise ValueError(f"{option} values must be distinct: {a!r} and {b!r} differ by less than {SAME_VALUE:g} "
                         f"relative, one grid point to the solvers; got {text!r}")
    return [v + 0.0 for v in values]  # -0 is 0 (no "omega -0" in a table, no "omega-0" in a file name)


def parse_value(text: str, option: str, *, positive: bool = False, hint: str = "") -> float:
    """A single number for an option that takes one value here; a range or list is a one-line error."""
    values = parse_values(text, option, positive=positive)
    if len(values) != 1 or any(c in str(text) for c in ",:"):
        raise ValueError(f"{option} takes one number here, got {text!r}" + (f" ({hint})" if hint else ""))
    return values[0]


#: The alpha grid a phase diagram's branches are followed over, when ``--alpha`` is not given.
DEFAULT_ALPHA_GRID = "0.1:3:12"


def add_alpha_grid_option(p: argparse.ArgumentParser) -> None:
    """``--alpha RANGE`` of a phase diagram (read by :func:`alpha_grid`), the same on every command that draws one."""
    p.add_argument("--alpha", default=DEFAULT_ALPHA_GRID, metavar="RANGE",
                   help=f"alpha grid of the branch sweeps, values > 0: {RANGE_SYNTAX} (default {DEFAULT_ALPHA_GRID})")


def alpha_grid(args: argparse.Namespace) -> list[float]:
    """``--alpha`` of a phase diagram: values > 0, two at least (the grid its branches are followed over; a
    ValueError otherwise), sorted ascending (said where that reorders them, as sweep says it)."""
    alphas = parse_values(args.alpha, "--alpha", positive=True)
    if len(alphas) < 2:
        raise ValueError(f"--alpha: the boundaries are located between the points of an alpha grid, got the one value "
                         f"{alphas[0]:g}; give two or more (e.g. --alpha 0.1:3:12)")
    if alphas != sorted(alphas):
        print("attnphase: note: --alpha values sorted ascending (the branches are followed by continuation in alpha)",
              file=sys.stderr)
    return sorted(alphas)


def add_estimator_option(p: argparse.ArgumentParser, bayes_does: str) -> None:
    """``--estimator erm|bayes-optimal`` (ERM the default; the same choices and meaning on every command that takes
    it); ``bayes_does``: what the command does for the Bayes-optimal estimator (docs/bayes-optimal.md)."""
    p.add_argument("--estimator", choices=("erm", "bayes-optimal"), default="erm",
                   help="erm (default): the global minimiser of the regularised square loss; bayes-optimal: the "
                   f"posterior mean (docs/bayes-optimal.md): {bayes_does}")


def add_model_options(p: argparse.ArgumentParser, *, omega_range: bool = False, omega_default: str = "0.3",
                      omega_help: str = "", scan: bool = False, command: str = "") -> None:
    """Add the model group; ``omega_range``: ``--omega`` takes a range; ``scan``: ``--L``, ``--lam``, ``--rho0``
    take lists and ``--sigma`` values separated by ";" (:func:`scan_from_args`); ``command``: its help says what
    that command refuses (:data:`RANK_ONE_COMMANDS`, :data:`INDEPENDENT_TOKEN_COMMANDS`)."""
    rank_one = (f" ({command} takes 1 only: its theory is rank 1; solve, sweep, phase-diagram, scan, census and "
                "simulate take any)") if command in RANK_ONE_COMMANDS else ""
    independent = (f" ({command} takes a diagonal C only: its theory is that of independent tokens)"
                   if command in INDEPENDENT_TOKEN_COMMANDS else "")
    g = p.add_argument_group("model (docs/model.md section 1; the paper's defaults)")
    many = f"; scan: a list, {RANGE_SYNTAX}" if scan else ""
    g.add_argument("--L", type=str if scan else int, default="2" if scan else 2, metavar="L",
                   help=f"sequence length L >= 2 (default 2){many}; the state evolution supports L <= {SE_MAX_L}, "
                   f"derive L <= {MAX_L_OTHER['derive'][0]}, simulate L <= {MAX_L_OTHER['simulate'][0]} (with "
                   f"--estimator bayes-optimal or --algorithm amp L <= {MAX_BAYES_L[0]}); $ATTNPHASE_MAX_L lifts the "
                   "limits")
    g.add_argument("--sigma", default="0.5", metavar="S",
                   help="token standard deviation sigma_l: one number for every token, or L numbers (a,b,c or "
                   "START:STOP:NUM) (default 0.5)" + ('; scan: several such values separated by ";"' if scan else ""))
    g.add_argument("--A", default=None, metavar="MATRIX",
                   help='row-stochastic positional part of the teacher, rows separated by ";" (default '
                   '"0.6,0.4;0.4,0.6" for L = 2, else 0.6 on the diagonal and 0.4 spread over each row)')
    g.add_argument("--P", default=None, metavar="MATRIX",
                   help='Gram matrix p_l.p_k of the positional encodings, rows separated by ";" '
                   '(default "1,-1;-1,1" for L = 2, else the identity)')
    scanned = f"; the values scanned: {RANGE_SYNTAX}" if omega_range else ""
    g.add_argument("--omega", default=omega_default, metavar="RANGE" if omega_range else "OMEGA",
                   help=f"weight omega of A in the teacher, in [0, 1]{scanned} (default {omega_default})"
                   + (f"; {omega_help}" if omega_help else ""))
    g.add_argument("--lam", type=str if scan else float, default="0.01" if scan else 0.01, metavar="LAM",
                   help=f"ridge penalty lambda >= 0 (default 0.01){many}")
    g.add_argument("--rho0", type=str if scan else float, default="1" if scan else 1.0, metavar="RHO0",
                   help=f"teacher norm: Q*^T Q*/d = rho0 I (rho0 > 0; default 1){many}")
    g.add_argument("--rank", type=int, default=1, metavar="R",
                   help=f"student rank r >= 1: Q in R^{{d x r}} (docs/model.md section 7; default 1){rank_one}")
    g.add_argument("--teacher-rank", dest="teacher_rank", type=int, default=1, metavar="R*",
                   help=f"teacher rank r* >= 1: Q* in R^{{d x r*}} (default 1){rank_one}")
    g.add_argument("--token-cov", dest="token_cov", default=None, metavar="MATRIX",
                   help='token covariance C across positions, x_k.x_k\'/d -> C[k,k\'], rows separated by ";" '
                   '(symmetric positive definite; simulate also takes a singular PSD one; sets sigma_l = '
                   'sqrt(C[l,l])); default: independent tokens, C = diag(sigma^2)'
                   + independent)


#: The model options ``attnphase scan`` may scan: option -> ModelParams field.
SCAN_OPTIONS = {"--lam": "lam", "--rho0": "rho0", "--L": "L", "--sigma": "sigma"}


def scan_from_args(args: argparse.Namespace) -> tuple[str, list[Any], list[Any], list[float]]:
    """``attnphase scan``'s grid: (the scanned field, its values, the ModelParams at each value (at the
    first omega), the omegas).  Exactly one of --lam, --rho0, --L, --sigma holds several values."""
    lists = {"--lam": parse_values(args.lam, "--lam"), "--rho0": parse_values(args.rho0, "--rho0"),
             "--L": parse_values(args.L, "--L"), "--sigma": [t.strip() for t in str(args.sigma).split(";")]}
    if not all(lists["--sigma"]):  # "0.5;;0.6", "0.5;" or "": an empty value, as an empty list item elsewhere
        raise ValueError(f"--sigma must be one or more values separated by \";\", none empty, got {args.sigma!r}")
    if any(v != int(v) for v in lists["--L"]):
        raise ValueError(f"--L values must be integers >= 2, got {args.L!r}")
    lists["--L"] = [int(v) for v in lists["--L"]]
    scanned = [o for o, v in lists.items() if len(v) > 1]
    if len(scanned) != 1:
        got = (f"got {len(scanned)} ({', '.join(scanned)})" if scanned else
               "got none: each has one value here (a list is a,b,c or START:STOP:NUM; --sigma's a;b;c)")
        raise ValueError("scan needs a list of values for exactly one of --lam, --rho0, --L, --sigma (the second "
                         f"parameter beside --omega), {got}")
    option, values = scanned[0], lists[scanned[0]]
    if len(set(map(str, values))) != len(values):
        raise ValueError(f"{option}: the scanned values must differ, got {getattr(args, SCAN_OPTIONS[option])!r}")
    omegas = parse_values(args.omega, "--omega")
    firsts = {SCAN_OPTIONS[o]: vals[0] for o, vals in lists.items()}
    models = [omegas_from_args(argparse.Namespace(**vars(args) | firsts | {SCAN_OPTIONS[option]: v}), omegas)[0]
              for v in values]
    return SCAN_OPTIONS[option], values, models, omegas


#: The namespace attribute where the command-line parser records the options given (every spelling of each).
GIVEN_OPTIONS = "given_options"


def option_given(args: argparse.Namespace, option: str, default: Any) -> bool:
    """Whether ``option`` (``"--lam"``) was given: on the command line, as the parser records it
    (:data:`GIVEN_OPTIONS`), even at its default value; in a namespace built otherwise, where its value is not
    ``default``."""
    seen = getattr(args, GIVEN_OPTIONS, None)
    if seen is not None:
        return option in seen
    return getattr(args, option[2:].replace("-", "_"), default) != default


def model_options_given(args: argparse.Namespace) -> list[str]:
    """The model options given (:func:`option_given`; for a command that fixes its own models)."""
    ref = argparse.ArgumentParser()
    add_model_options(ref)
    defaults = vars(ref.parse_args([]))
    return [option for option, _ in MODEL_OPTIONS if option_given(args, option, defaults[option[2:].replace("-", "_")])]


def _matrix(text: str | None, option: str) -> Any:
    from attnphase.theory.params import parse_matrix

    if text is None:
        return None
    try:
        rows = parse_matrix(text)
    except ValueError:
        rows = ()
    if not rows or len(rows) == 1 < len(rows[0]):  # not numbers, or one row of several (no ";" between rows)
        raise ValueError(f'{option} must be rows of comma-separated numbers separated by ";" '
                         f'(e.g. "0.6,0.4;0.4,0.6"), got {text!r}')
    return rows


def params_from_args(args: argparse.Namespace, omega: float | None = None):
    """The validated ModelParams of the model group (``omega`` overrides ``--omega``, else its first value)."""
    from attnphase.theory.params import ModelParams

    if omega is None:
        omega = parse_values(args.omega, "--omega")[0]
    command = getattr(args, "command", "") or ""
    # AMP's run is compared with the Bayes-optimal state evolution at its alpha (validation/amp_run.py)
    estimator = "bayes-optimal" if getattr(args, "algorithm", None) == "amp" else getattr(args, "estimator", "erm")
    check_L(args.L, command, estimator)
    cov = _matrix(getattr(args, "token_cov", None), "--token-cov")
    sigma = None  # --token-cov fixes sigma_l = sqrt(C[l, l]): the default --sigma does not compete with it
    if cov is None or option_given(args, "--sigma", "0.5"):
        vals = parse_values(args.sigma, "--sigma", distinct=False)  # per-token values may repeat
        sigma = vals[0] if len(vals) == 1 else tuple(vals)
    with model_errors():
        params = ModelParams(L=args.L, sigma=sigma, A=_matrix(args.A, "--A"), P=_matrix(args.P, "--P"), omega=omega,
                             lam=args.lam, rho0=args.rho0, r=getattr(args, "rank", 1),
                             r_star=getattr(args, "teacher_rank", 1), C=cov)
    check_rank(params, command)
    return params


#: ModelParams field -> the option that sets it (an error of the library names the option).
_OPTION_OF_FIELD = {field: option for option, field in MODEL_OPTIONS}


@contextlib.contextmanager
def model_errors():
    """Re-raise a ModelParams ValueError with the option that sets the offending field in front."""
    try:
        yield
    except ValueError as exc:
        msg = str(exc)
        option = _OPTION_OF_FIELD.get(field.group(0)) if (field := re.match(r"\w+", msg)) else None
        if option is None or msg.startswith(option):
            raise
        raise ValueError(f"{option}: {msg}") from None


#: The largest L of the commands that need no state evolution, and what it rests on (as the refusal says it).
MAX_L_OTHER = {"derive": (7, "measured on 2 cores: derive --L 7 ~45 s, --L 10 over 150 s"),
               "simulate": (10, "measured on 2 cores: simulate --L 10 ~15 s at d = 50; beyond it is untested")}
#: The largest L the state evolution supports (numerics.quadrature.rules.MAX_SE_L; a test keeps them equal).
SE_MAX_L = 4
#: Commands that solve the state evolution (the limit of numerics.quadrature.rules.check_L_supported).
SE_COMMANDS = ("solve", "sweep", "phase-diagram", "census", "scan", "check", "validate")
#: The commands whose ``--estimator bayes-optimal`` (simulate: ``--algorithm amp``) solves the Bayes-optimal state
#: evolution alone (its tensor grids in L dimensions, not ERM's rules in 2L), and its largest L with what it rests on.
BAYES_COMMANDS = ("solve", "sweep", "phase-diagram", "simulate")
MAX_BAYES_L = (5, "measured on 2 cores: solve --estimator bayes-optimal --L 5 --alpha 0.15 ~27 s; at --L 6 it had "
                  "not finished after 15 min, holding 15 GB")


def check_L(L: Any, command: str = "", estimator: str = "erm") -> None:
    """``--L`` within what ``command`` supports for ``estimator``; ValueError naming the option, L and the limit."""
    if not isinstance(L, int):
        return
    from attnphase.numerics.quadrature.rules import max_L

    if estimator == "bayes-optimal" and command in BAYES_COMMANDS:
        limit, basis = MAX_BAYES_L
        if L > max_L(limit):
            what = ("--algorithm amp is compared with the Bayes-optimal state evolution, which" if command == "simulate"
                    else "the Bayes-optimal estimator's state evolution")
            raise ValueError(f"--L {L}: {what} supports L <= {limit} ({basis}); set ATTNPHASE_MAX_L to try anyway")
        return
    if command in SE_COMMANDS or not command:
        from attnphase.numerics.quadrature.rules import check_L_supported

        check_L_supported(L, "--L")
        return
    limit, basis = MAX_L_OTHER.get(command, (10, "untested beyond"))
    if L > max_L(limit):
        raise ValueError(f"--L {L}: {command} supports L <= {limit} ({basis}); set ATTNPHASE_MAX_L to try anyway")


#: Commands whose theory implements rank r = r* = 1 only (the other SE commands take a rank-r path).
RANK_ONE_COMMANDS = ("derive", "check", "validate")
#: Commands whose theory implements independent tokens only (the other SE commands solve the whitened form).
INDEPENDENT_TOKEN_COMMANDS = ("derive", "check")


def check_rank(params: Any, command: str) -> None:
    """``--rank`` / ``--teacher-rank`` above 1, or a non-diagonal ``--token-cov``, on a command whose theory is the
    rank-1 independent-token one: a one-line ValueError."""
    for option, value in (("--rank", params.r), ("--teacher-rank", params.r_star)):
        if value != 1 and command in RANK_ONE_COMMANDS:
            raise ValueError(f"{option} {value}: {command} implements rank r = r* = 1 only (solve, sweep, "
                             f"phase-diagram, scan and census take --rank/--teacher-rank; simulate trains any rank)")
    if params.correlated_tokens and command in INDEPENDENT_TOKEN_COMMANDS:
        raise ValueError(f"--token-cov: {command} implements independent tokens only (a diagonal C; solve, sweep, "
                         f"phase-diagram, scan, census and validate solve correlated tokens at rank 1; simulate trains with "
                         f"any C)")
    if params.correlated_tokens and command in SE_COMMANDS:
        if params.r != 1 or params.r_star != 1:
            raise ValueError("--token-cov: correlated tokens are solved at rank r = r* = 1 only (simulate trains any rank)")
        from attnphase.theory.whitening import token_mixing

        try:
            token_mixing(params.token_cov)  # a singular C: one line, before any work
        except ValueError as exc:
            raise ValueError(f"--token-cov: {exc}") from None


def check_branch_possible(params: Any, branch: str, needed_by: str = "") -> None:
    """ValueError naming ``--P`` when P = 0 leaves no positional (or mixed) fixed point for ``branch``;
    ``needed_by``: the job that needs the branch (default: ``--branch BRANCH``)."""
    if branch in ("positional", "mixed") and not any(v != 0 for row in params.P for v in row):
        raise ValueError("--P: P = 0 (no positional embeddings) leaves no positional direction (m = 0 for every "
                         "student), so " + (f"no positional fixed point exists for {needed_by}; give a non-zero --P"
                                             if needed_by else f"--branch {branch} has no fixed point; give a non-zero "
                                             f"--P or --branch semantic"))


def announce_defaults(args: argparse.Namespace, params: Any) -> None:
    """For L != 2, say which matrices took their L-dependent defaults (they differ from the paper's L = 2 ones)."""
    if params.L == 2:
        return
    said = []
    if args.A is None:
        said.append(f"--A = 0.6 on the diagonal, {0.4 / (params.L - 1):g} elsewhere")
    if args.P is None:
        said.append("--P = the identity")
    if said:
        print(f"attnphase: note: --L {params.L}: defaults {'; '.join(said)}", file=sys.stderr)


def single_omega(args: argparse.Namespace, command: str) -> float:
    """``--omega`` of a command that takes one omega (a range is a one-line error)."""
    hint = "phase-diagram scans a range of omega" if command != "validate" else ""
    return parse_value(args.omega, "--omega", hint=hint)


def omegas_from_args(args: argparse.Namespace, omegas: list[float] | None = None) -> tuple[Any, list[float]]:
    """(ModelParams at the first omega, every scanned omega: ``omegas``, else ``--omega``'s), each omega validated
    before any work."""
    omegas = omegas or parse_values(args.omega, "--omega")
    params = params_from_args(args, omega=omegas[0])
    with model_errors():
        for w in omegas:
            params.replace(omega=w)
    return params, omegas
