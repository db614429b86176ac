"""The solver group of the numerics commands, and the one place the CLI builds a SolverConfig
(:func:`config_from_args`); :func:`check_supported` refuses, before any work, what the numerics cannot do.
Imports the standard library only: the defaults and choices are literal copies of
:mod:`attnphase.numerics.config` (a test keeps them equal).
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

#: Fixed-point families (numerics.config.BRANCHES).
BRANCHES = ("semantic", "positional", "agnostic")
#: Proximal maps (numerics.config.PROX_MODES).
PROX_MODES = ("global", "local", "aligned")
#: Proximal solver backends (numerics.config.BACKENDS).
BACKENDS = ("auto", "numpy", "numba", "torch")
#: Branch-end strategies (numerics.config.BRANCH_END_STRATEGIES).
BRANCH_END_STRATEGIES = ("bifurcation", "trace")

#: Precision tiers (numerics.config.PRECISION_TIERS), the default one first.
PRECISION_TIERS = ("default", "fast", "precise")

#: SolverConfig's defaults of the fields the solver group sets (numerics.config.SolverConfig).
SOLVER_DEFAULTS: dict[str, Any] = {
    "prox": "global", "backend": "auto", "quadrature": "sobol10:4", "e_t_quadrature": None,
    "alpha_c_quadrature": "sobol16:4", "alpha_l_quadrature": "sobol12:4", "bifurcation_quadrature": "sobol15:4",
    "end_quadrature": "sobol12:4", "branch_end": "bifurcation", "tol": 1e-10}

#: Solver options: (option, SolverConfig field).  The argparse dest is the field name.
SOLVER_OPTIONS = tuple(("--" + field.replace("_", "-"), field) for field in SOLVER_DEFAULTS)

#: Quadrature roles that may be switched off with the value "none".
_OPTIONAL_RULES = ("e_t_quadrature", "alpha_c_quadrature", "alpha_l_quadrature", "end_quadrature")

RULE_SYNTAX = ("sobolK[:REPS:SEED] (REPS independent scramblings of 2^K Sobol points, pooled; their spread is the error "
               "bar), ghN (Gauss-Hermite, N per dimension) or ghrN[:SEED]")


def add_solver_options(p: argparse.ArgumentParser, command: str) -> None:
    """Add the solver group (every field a SolverConfig takes from the command line); those ``command`` does not use
    (:data:`ROLE_COMMANDS`) are parsed, to be refused by name, but left out of its help."""

    def shown(field: str, text: str) -> str:
        return text if command in ROLE_COMMANDS.get(field, (command,)) else argparse.SUPPRESS

    d = SOLVER_DEFAULTS
    g = p.add_argument_group("solver (docs/method.md)")
    g.add_argument("--prox", choices=PROX_MODES, default=None,
                   help="proximal map: global minimiser, local from h = 0 (the paper's; rank 1 only), or aligned: "
                   "the lowest minimiser on the side of the student's mean field m + (th0/rho0) h* (the basin "
                   "gradient descent keeps from its start: the teacher's mirror image on the semantic branch, the "
                   f"positional one on the positional branch) (default {d['prox']})")
    g.add_argument("--backend", choices=BACKENDS, default=None,
                   help="proximal solver: compiled with numba when it imports (auto), or forced; torch: batched on "
                   "$ATTNPHASE_TORCH_DEVICE (default cuda when present, else cpu); $ATTNPHASE_PROX_BACKEND overrides "
                   f"auto (default {d['backend']})")
    g.add_argument("--precision", choices=PRECISION_TIERS, default=None,
                   help="the rules of every quadrature role at once: fast (a quarter to a sixteenth of the points), "
                   "default, or precise (16-64x the points); an explicit --*-quadrature option overrides its role "
                   "(docs/method.md sections 7-8: the rules and the accuracy of each tier) (default default)")
    for field, text in {
        "quadrature": f"rule of every state-evolution solve: {RULE_SYNTAX} (default {d['quadrature']})",
        "e_t_quadrature": "re-evaluate E[M] in e_t at each converged point on this finer rule, e.g. sobol16 (e_t is "
        "stationary in the overlaps, so it gets that rule's accuracy); none: the solve's rule (default none)",
        "alpha_c_quadrature": "rule of E[M] in the Newton correction of alpha_c (phase-diagram); none: no correction "
        f"(default {d['alpha_c_quadrature']})",
        "alpha_l_quadrature": "rule of the re-solve (warm) of the semantic point at alpha_l, which moves alpha_l by "
        f"one secant step (phase-diagram); none: the solve rule's root (default {d['alpha_l_quadrature']})",
        "bifurcation_quadrature": "rule of the SE-Jacobian eigenvalues where a branch end is located as a bifurcation "
        f"(sweep, phase-diagram) (default {d['bifurcation_quadrature']})",
        "end_quadrature": "rule of the re-solve (warm) of the agnostic point at a bifurcation's last secant point, "
        "which moves the branch end by one linearised step (sweep, phase-diagram); none: the solve rule's secant root "
        f"(default {d['end_quadrature']})",
    }.items():
        g.add_argument("--" + field.replace("_", "-"), default=None, metavar="RULE", help=shown(field, text))
    g.add_argument("--branch-end", dest="branch_end", choices=BRANCH_END_STRATEGIES, default=None,
                   help=shown("branch_end", "how a branch's end is located (sweep, phase-diagram): where the agnostic "
                              "branch turns unstable (bifurcation), or by a trace at fixed theta / bisection in alpha "
                              f"(trace; noisier) (default {d['branch_end']})"))
    g.add_argument("--tol", type=float, default=None, metavar="TOL",
                   help=f"fixed-point residual tolerance, in [1e-14, 1e-6]: far below the quadrature error, above round-off "
                   f"(default {d['tol']:g})")


#: The solver options only some commands use (the boundaries' refinements, the branch ends'): given to another
#: command, one is refused rather than ignored.
ROLE_COMMANDS = {
    "alpha_c_quadrature": ("phase-diagram", "scan"), "alpha_l_quadrature": ("phase-diagram", "scan"),
    **{field: ("sweep", "phase-diagram", "scan") for field in ("bifurcation_quadrature", "end_quadrature",
                                                               "branch_end")},
}


def config_from_args(args: argparse.Namespace):
    """The SolverConfig of the solver group: the rules of ``--precision``, every option given on top (``none``
    of an optional rule gives None), ``--error-estimate`` applied; a bad value is a ValueError naming its option,
    an option the command does not use (:data:`ROLE_COMMANDS`) too."""
    from attnphase.numerics.config import MAX_TOL, MIN_TOL, SolverConfig

    changes = {field: (option, None if field in _OPTIONAL_RULES and str(value).strip().lower() == "none" else value)
               for option, field in SOLVER_OPTIONS if (value := getattr(args, field, None)) is not None}
    command = getattr(args, "command", None)
    for field, (option, _) in changes.items():
        if command and command not in ROLE_COMMANDS.get(field, (command,)):
            users = ROLE_COMMANDS[field]
            raise ValueError(f"{option}: used by {', '.join(users[:-1])} and {users[-1]} only (a {command} locates no "
                             f"{'boundary' if field.startswith('alpha') else 'branch end'}); leave it out")
    if "tol" in changes and not (MIN_TOL <= changes["tol"][1] <= MAX_TOL):
        raise ValueError(f"--tol {changes['tol'][1]:g}: the fixed-point residual must lie far below the quadrature "
                         f"error and above its round-off: --tol must lie in [{MIN_TOL:g}, {MAX_TOL:g}] "
                         f"(default {SOLVER_DEFAULTS['tol']:g})")
    for field, (option, value) in changes.items():  # each option alone first: the error names it
        try:
            SolverConfig(**{field: value})
        except ValueError as exc:
            raise ValueError(f"{option}: {exc}") from None
    cfg = SolverConfig.for_precision(getattr(args, "precision", None) or "default",
                                     **{field: value for field, (_, value) in changes.items()})
    if hasattr(args, "error_estimate"):
        cfg = cfg.with_error_estimate(error_estimate_from_args(args))
    return cfg


def check_supported(params: Any, config: Any, args: argparse.Namespace | None = None) -> None:
    """Model options the numerics cannot honour with this configuration: a one-line ValueError, before any work
    (with ``args``, a rule made too large by ``--error-estimate K`` names that option)."""
    if params.correlated_tokens:
        if config.prox == "aligned":
            raise ValueError("--prox aligned is implemented for independent tokens only (use global or local with --token-cov)")
        if config.backend == "torch":
            raise ValueError("--backend torch: correlated tokens (--token-cov) run on the numba or numpy backend "
                             "(auto picks numba)")
    try:
        from attnphase.numerics.prox.backends import resolve_backend

        backend = resolve_backend(config.backend)  # a backend whose library cannot be imported fails here
    except ImportError as exc:
        raise ValueError(f"--backend: {exc}") from None
    if backend == "torch":
        from attnphase.numerics.prox.torch_backend import torch_device

        try:
            torch_device()  # and a device torch cannot use
        except ValueError as exc:
            raise ValueError(f"--backend torch: {exc}") from None
    try:
        config.check_rules(params.L)  # a rule too large at this L fails here, not after an allocation
    except ValueError as exc:
        msg = str(exc)
        role = next((field for _, field in SOLVER_OPTIONS if msg.startswith(field.replace("_", "-") + ":")), None)
        k = error_estimate_from_args(args) if args is not None else None
        if role is not None and k and getattr(args, role, None) is None:  # the K blocks of --error-estimate did it
            raise ValueError(f"--error-estimate {k} ({k} scrambling blocks in every rule): --{msg} or a smaller K") from None
        raise ValueError(f"--{msg}" if role else msg) from None


def add_branch_option(p: argparse.ArgumentParser, mixed: bool = False, bayes: bool = False,
                      bayes_default: str = "informative (default) or uninformative") -> None:
    """``--branch``: the fixed-point family of BRANCHES, with ``mixed`` (rank r >= 2) and the Bayes-optimal
    estimator's ``informative`` / ``uninformative`` where the command offers them (``bayes_default`` says which
    runs without the option)."""
    p.add_argument("--branch", choices=BRANCHES + (("mixed",) if mixed else ())
                   + (("informative", "uninformative") if bayes else ()), default=None if bayes else "semantic",
                   help="fixed-point family to solve for / follow (default semantic)"
                   + ("; mixed (a positional and a semantic direction) needs --rank >= 2" if mixed else "")
                   + (f"; with --estimator bayes-optimal: {bayes_default}" if bayes else ""))


def add_error_estimate_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--error-estimate auto|0|K``; ``what`` is what the error bars are put on."""
    p.add_argument("--error-estimate", dest="error_estimate", default="auto", metavar="K",
                   help=f"error bars on {what}: auto (default): from the rules' independent scramblings "
                   "(REPS of sobolK:REPS, 4 by default: standard error of their pool, at no extra quadrature points; "
                   "for a rule of one scrambling or a deterministic one, solve and census repeat the point on 4 "
                   "independent rules, the other commands give none and say so in error_note); "
                   "K >= 2: K scramblings instead (K/REPS times the points), or, for a rule of one scrambling "
                   "(sobolK, ghrN:SEED), a repeat on K - 1 more independent rules (ghN: on orders N+2, N+4, ..., "
                   "which share its bias); 0: none (faster)")


def error_estimate_from_args(args: argparse.Namespace) -> int | None:
    """``--error-estimate``: None (auto), 0 (none) or K >= 2; anything else is the same one-line error everywhere."""
    text = str(getattr(args, "error_estimate", "auto")).strip().lower()
    if text == "auto":
        return None
    with contextlib.suppress(ValueError):
        if (k := int(text)) == 0 or k >= 2:
            return k
    raise ValueError(f"--error-estimate K must be auto, 0 (none) or an integer K >= 2 (a spread needs two rules), "
                     f"got {text!r}")
