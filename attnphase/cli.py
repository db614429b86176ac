"""The ``attnphase`` console command: every subcommand's options, defined in this one place.

The options shared by several commands come from :mod:`attnphase.options` (the model group),
:mod:`attnphase.solver_options` (the solver group, ``--error-estimate K``),
:mod:`attnphase.execution_options` (``--workers --scheduler --fresh``), :mod:`attnphase.outputs`
(``--json``, ``--quiet``, ``--out DIR``) and :mod:`attnphase.workload` (``--large``); each command's
implementation lives in its layer (``attnphase.theory.cli``, ``attnphase.numerics.commands.cli``,
``attnphase.validation.cli``, ``attnphase.validation.histogram.cli``) and is imported only when
that command runs.  Building the parser imports argparse and those three modules only (no
numpy-heavy module, scipy, sympy, torch or numba), so ``attnphase --help`` starts at once.

Conventions (every command):

* a numeric list option takes ``NUMBER``, ``a,b,c`` or ``START:STOP:NUM`` (NUM values, both ends
  included); negative values need no ``=`` (``--alpha -1:2:3``);
* ``--json``: exactly one JSON object on stdout, messages on stderr;
* ``--quiet``: no progress bars;
* ``--out DIR`` is always a folder, created if missing;
* bad input is one line ``attnphase: error: ...`` on stderr and exit code 2, with no traceback; a
  result that did not converge exits with 1.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Sequence

from attnphase import options as opt
from attnphase import solver_options
from attnphase import execution_options
from attnphase import outputs, work, workload

#: Commands in help order: (name, "module:function" that runs it).
COMMANDS = (
    ("derive", "attnphase.theory.cli:run_derive"),
    ("solve", "attnphase.numerics.commands.cli:cmd_solve"),
    ("sweep", "attnphase.numerics.commands.cli:cmd_sweep"),
    ("phase-diagram", "attnphase.numerics.commands.cli:cmd_phase_diagram"),
    ("census", "attnphase.numerics.commands.census_cli:cmd_census"),
    ("simulate", "attnphase.validation.cli:run_simulate"),
    ("validate", "attnphase.validation.cli:run_validate"),
    ("check", "attnphase.validation.check_cli:cmd_check"),
    ("histogram", "attnphase.validation.histogram.cli:run"),
    ("scan", "attnphase.numerics.commands.scan:cmd_scan"),
    ("show", "attnphase.execution.cli:cmd_show"),
)

#: An argument that starts with "-" and then a digit or ".digit" is a value, never an option
#: (``--alpha -1:2:3``, ``--lam -0.1``, ``--omega -1e-3``): no option of attnphase looks like that.
_NEGATIVE_VALUE = re.compile(r"^-\.?\d")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2, and which takes negative values.

    Long options are never abbreviated (``--out`` is not ``derive``'s ``--output``; a new option
    cannot break a command line that worked).
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_VALUE

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        """One line, the same prefix as every other error: ``attnphase: error: ... (see PROG --help)``."""
        self.exit(2, f"attnphase: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def _branch_option(p: argparse.ArgumentParser, mixed: bool = False, bayes: bool = False) -> None:
    p.add_argument("--branch", choices=solver_options.BRANCHES + (("mixed",) if mixed else ())
                   + (("informative", "uninformative") if bayes else ()), default=None if bayes else "semantic",
                   help="fixed-point family to solve for / follow (default semantic)"
                   + ("; mixed (a positional and a semantic direction) needs --rank >= 2" if mixed else "")
                   + ("; with --estimator bayes-optimal: informative (default) or uninformative" if bayes else ""))


def _rank_options(p: argparse.ArgumentParser) -> None:
    """``--rank`` / ``--teacher-rank`` (the model group's, docs/model.md section 7), where the model group
    does not define them already."""
    if any("--rank" in a.option_strings for a in p._actions):
        return
    g = next((grp for grp in p._action_groups if grp.title and grp.title.startswith("model")), p)
    g.add_argument("--rank", type=int, default=1, metavar="R",
                   help="student rank r >= 1: Q in R^{d x r} (docs/model.md section 7; default 1)")
    g.add_argument("--teacher-rank", dest="teacher_rank", type=int, default=1, metavar="R*",
                   help="teacher rank r* >= 1: Q* in R^{d x r*} (default 1)")


def _add_derive(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "derive", help="print every equation of the model (sympy), for a terminal, as LaTeX or as markdown",
        description="Print every equation of the theory, derived with sympy for the given model: pretty-printed "
        "for a terminal (default), as raw LaTeX (--latex) or as the markdown document docs/derivation.md (--markdown).",
    )
    opt.add_model_options(p)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--latex", action="store_true", help="print raw LaTeX")
    fmt.add_argument("--markdown", action="store_true", help="print the markdown document")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write the text to this file instead of stdout")


def _add_solve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "solve", help="solve the state evolution at one (alpha, omega)",
        description="Solve the state evolution (docs/model.md section 3) at one alpha and omega and print the "
        "observables (section 4), each with its error bar. Exit code 1 if the fixed point did not converge, 3 if "
        "the solve reached another branch than --branch (README: exit codes).",
    )
    p.add_argument("--alpha", required=True, metavar="ALPHA", help="sample complexity alpha = n/d > 0 (one number)")
    _branch_option(p, mixed=True, bayes=True)
    opt.add_estimator_option(p, "its fixed point, with the thresholds alpha_weak_recovery, alpha_it, alpha_amp")
    opt.add_model_options(p)
    _rank_options(p)
    solver_options.add_solver_options(p)
    solver_options.add_error_estimate_option(p, "every observable (err_<key>)")
    outputs.add_json_option(p)


def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="follow a branch over a range of alpha (continuation), write a CSV table",
        description="Follow one branch of fixed points over alpha by continuation and write one row per alpha to "
        "DIR/sweep_<branch>_omega<omega>.csv; where the branch ends is reported. Several omegas: one sweep per "
        "omega, each a task (--workers, --scheduler), all in DIR/sweep_<branch>.nc.",
    )
    p.add_argument("--alpha", required=True, metavar="RANGE", help=f"alpha values > 0: {opt.RANGE_SYNTAX}")
    _branch_option(p, mixed=True, bayes=True)
    opt.add_estimator_option(p, "both of its branches (or --branch's) into DIR/sweep_bayes-optimal_omega<omega>.csv "
                             "and DIR/sweep_bayes-optimal.nc, with its thresholds")
    opt.add_model_options(p, omega_range=True, omega_default="0.3")
    _rank_options(p)
    solver_options.add_solver_options(p)
    solver_options.add_error_estimate_option(p, "every point's observables (err_<key> columns)")
    outputs.add_out_option(p, "results", "sweep_<branch>_omega<omega>.csv per omega (rank r >= 2: ..._rank<r>x<r*>.csv) "
                           "and sweep_<branch>.nc")
    workload.add_large_option(p, workload.MAX_SWEEP_POINTS)
    execution_options.add_workers_option(p)
    outputs.add_quiet_option(p)
    outputs.add_json_option(p)


def _add_phase_diagram(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "phase-diagram", help="alpha_c, alpha_l and the branch ends over omega (the main job)",
        description="The phase diagram (docs/model.md section 6): at every omega, both branches over the alpha grid, "
        "alpha_c, alpha_l and where each branch ends; writes phase_diagram.csv/.json/.png and the branch curves at the "
        "run's omega nearest 0.3, curves_omega<omega>.png. "
        "With --rank R --teacher-rank R* (r or r* >= 2): the rank-r state evolution's branches (and mixed at r >= 2), "
        "their ends by bisection, alpha_c and alpha_l by bracketing, each with its bracket width (docs/method.md "
        "section 11, rank r >= 2); phase_diagram.csv/.json/.nc/.png.",
    )
    p.add_argument("--alpha", default="0.1:3:12", metavar="RANGE",
                   help=f"alpha grid of the branch sweeps, values > 0: {opt.RANGE_SYNTAX} (default 0.1:3:12)")
    opt.add_model_options(p, omega_range=True, omega_default="0:0.45:10")
    solver_options.add_solver_options(p)
    solver_options.add_error_estimate_option(p, "every boundary (<boundary>_err columns, error bars in the figure)")
    p.add_argument("--census", action="store_true",
                   help="at every omega, search every fixed point at alpha_c (as attnphase census; error bars from "
                   "--error-estimate K, else 4 rules) and say whether any beats the semantic and positional ones: "
                   "census.csv (opt-in; 30-60 s per omega)")
    opt.add_continuation_option(p)
    outputs.add_out_option(p, "results", "phase_diagram.csv, .json, .png and curves_omega<omega>.png (census.csv with "
                           "--census)")
    workload.add_large_option(p, workload.MAX_DIAGRAM_POINTS)
    execution_options.add_workers_option(p)
    outputs.add_quiet_option(p)
    outputs.add_json_option(p)


def _add_census(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "census", help="every fixed point at one (alpha, omega), ranked by e_t: is the global minimum among the branches?",
        description="Search the state evolution for every fixed point (positional, semantic, agnostic, mixed) from a "
        "spread of starting overlaps at one alpha and omega; remove duplicates, label them, test their stability and "
        "rank them by the training objective e_t with error bars, lowest first (docs/method.md section 12, the census). "
        "With --rank R --teacher-rank R* (r or r* >= 2): the rank-r state evolution from each branch's embedded and "
        "cold starts and mixtures of the semantic and positional states, ranked by e_t with the per-block error "
        "of each point's height above the minimum (no stability test). Exit code 1 if no start converged.",
    )
    p.add_argument("--alpha", required=True, metavar="ALPHA", help="sample complexity alpha = n/d > 0 (one number)")
    opt.add_model_options(p)
    solver_options.add_solver_options(p)
    solver_options.add_error_estimate_option(p, "every fixed point's observables (err_<key>)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help=f"output folder: writes census.json and census.csv (rank r: and census_starts.csv) there "
                   f"({outputs.OUT_RULE}; default: none written)")
    outputs.add_json_option(p)


def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate", help="train the attention student at finite d with PyTorch; measure m, theta, q, eps_g, e_t, eps_lin",
        description="One finite-d simulation: teacher data, gradient descent (or Adam) from an initialisation, "
        "observables on a fresh test set (docs/model.md section 1). Exit code 1 if training did not converge.",
    )
    p.add_argument("--d", type=int, default=200, help="embedding dimension d >= 2 (default 200)")
    p.add_argument("--alpha", default="2", metavar="ALPHA", help="sample complexity alpha = n/d > 0, one number (default 2)")
    opt.add_model_options(p)
    p.add_argument("--algorithm", default="gd", metavar="{gd,amp}",
                   help="gd (default): train the ERM student; amp: approximate message passing for the Bayes-optimal "
                   "estimator (docs/bayes-optimal.md), beside the state evolution's prediction")
    p.add_argument("--init", default=None, metavar="{semantic,positional,random}", help="initialisation (default semantic; gd only)")
    p.add_argument("--optimizer", default=None, metavar="{gd,adam}", help="gd (Armijo gradient descent, default) or adam (gd only)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random stream (default 0)")
    _training_options(p)
    p.add_argument("--n-test", type=int, default=None, help="fresh test samples (default 10000; gd only)")
    g = p.add_argument_group("amp (with --algorithm amp)")
    g.add_argument("--damping", type=float, default=0.0,
                   help="in [0, 1): g_out and its Onsager sum are mixed as (1 - damping) new + damping old (default 0)")
    g.add_argument("--amp-tol", type=float, default=1e-7,
                   help="stop when |Qhat_t - Qhat_(t-1)| / sqrt(d rho0) <= this (default 1e-7)")
    g.add_argument("--max-iter", type=int, default=500, help="AMP iteration budget (default 500)")
    _torch_options(p, threads="torch.set_num_threads (default: torch's choice)")
    outputs.add_json_option(p)


def _training_options(p: argparse.ArgumentParser) -> None:
    """The stopping rule of gradient descent (``simulate`` and ``validate``)."""
    p.add_argument("--grad-tol", type=float, default=None,
                   help="stop when |grad_Q R|_F / sqrt(d) (the gradient of e_t = R/d in the weights Q/sqrt(d)) "
                   "<= this (default 3e-7 in float64, 1e-5 in float32)")
    p.add_argument("--max-steps", type=int, default=20000,
                   help="step budget, a safety net: a run that reaches it stops unconverged, with a warning "
                   "(default 20000)")


def _torch_options(p: argparse.ArgumentParser, threads: str) -> None:
    g = p.add_argument_group("torch")
    g.add_argument("--device", default="auto", help='"auto" (cuda if available, else cpu), "cpu", "cuda", "cuda:N" (default auto)')
    g.add_argument("--dtype", default="float64", help="float64 (default) or float32")
    g.add_argument("--threads", type=int, default=None, help=threads)


def _add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate", help="grid of finite-d simulations against the state evolution: report, summary and figures",
        description="Gradient descent at finite d against the theory (numerics): Fig. 2 curves, Fig. 3 heat map, "
        "finite-size scaling, global versus local proximal theory. Exit code 1 if a run did not converge.",
    )
    p.add_argument("--suite", default="default", choices=("default", "general"),
                   help="default: the paper's model at the model options below (Fig. 2, Fig. 3, finite size); "
                   "general: GD vs theory for the general model (any L, sigma_l, A, P, ranks; its cases fix their "
                   "own models, docs/validation.md) (default: default)")
    p.add_argument("--cases", default=None, metavar="KEYS",
                   help="--suite general only: run these of its cases, comma-separated (e.g. d,e; default all)")
    p.add_argument("--quick", action="store_true", help="d = 200 and a smaller grid (a few minutes on 2 cores)")
    p.add_argument("--d", type=int, default=None, help="override the main dimension (default 1000, quick 200)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per point (default 4, quick 2; general suite 4, quick 3)")
    _training_options(p)
    opt.add_model_options(p, omega_help="the omega of the alpha sweeps (the heat map scans its own omegas)")
    _torch_options(p, threads="torch threads of the simulations with --workers 1 (default: torch's choice; "
                   "Dask workers use one thread each)")
    outputs.add_out_option(p, "results/validation", "report.md, summary.json, validation.nc and the figures")
    workload.add_large_option(p, workload.MAX_SIMULATIONS, "simulations")
    execution_options.add_workers_option(p)
    outputs.add_quiet_option(p)
    outputs.add_json_option(p)


def _add_histogram(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "histogram", help="the paper's histogram task: positional vs semantic attention (docs/model.md section 8)",
        description="Train the single-layer transformer of the histogram task with its attention restricted to the "
        "positional half, the semantic half, or both; score and plot the attention; embed the restricted models "
        "in the unrestricted one and retrain. Each training is a task (--workers, --scheduler), kept in DIR/tasks: "
        "a rerun reads the finished ones back. Exit code 1 if a task failed (then no report is written).",
    )
    p.add_argument("--quick", action="store_true", help="10 000 samples and 20 epochs instead of the paper's 50 000 and 200")
    p.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    g = p.add_argument_group("torch")
    g.add_argument("--device", default="auto", help="auto (cuda when available, else cpu), cpu, cuda or cuda:N (default auto)")
    g.add_argument("--threads", type=int, default=1,
                   help="CPU threads for torch with --workers 1 (default 1; the model is too small to gain from "
                   "more; Dask workers use one thread each)")
    outputs.add_out_option(p, "results/histogram", "report.md, summary.json, histogram.nc, the curves and the attention maps")
    execution_options.add_workers_option(p)
    outputs.add_quiet_option(p)
    outputs.add_json_option(p)


def _add_check(sub: argparse._SubParsersAction) -> None:
    # ``check`` defines its own options (the shared model group through attnphase.numerics.commands.cli's
    # add_model_arguments); its module imports nothing heavy.
    importlib.import_module("attnphase.validation.check_cli").register(sub)


def _add_scan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scan", help="the phase diagram over a second model parameter and omega, as tasks, into one dataset",
        description="The phase diagram (as phase-diagram) at every value of one more model parameter: give a list "
        "to exactly one of --lam, --rho0, --L (a,b,c or START:STOP:NUM) or --sigma (values separated by \";\", "
        "each one number or L numbers). Writes scan.nc (dimensions <parameter>, omega, branch, alpha), scan.csv "
        "and one figure per value, phase_diagram_<parameter><value>.png.",
    )
    p.add_argument("--alpha", default="0.1:3:12", metavar="RANGE",
                   help=f"alpha grid of the branch sweeps, values > 0: {opt.RANGE_SYNTAX} (default 0.1:3:12)")
    opt.add_model_options(p, omega_range=True, omega_default="0:0.45:10", scan=True)
    solver_options.add_solver_options(p)
    solver_options.add_error_estimate_option(p, "every boundary (<boundary>_err variables)")
    outputs.add_out_option(p, "results/scan", "scan.nc, scan.csv, scan.json and a phase diagram figure per value")
    workload.add_large_option(p, workload.MAX_DIAGRAM_POINTS)
    execution_options.add_workers_option(p)
    outputs.add_quiet_option(p)
    outputs.add_json_option(p)


def _add_show(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show", help="print the summary of a job's dataset (its --out folder or a .nc file)",
        description="Print the dimensions, variables, task status and attributes (model, solver, rule, code "
        "version, date) of the netCDF dataset(s) a job wrote into its --out folder.",
    )
    p.add_argument("path", metavar="PATH", help="a job's --out folder, or one .nc file")
    outputs.add_json_option(p)


_BUILDERS = {
    "derive": _add_derive, "solve": _add_solve, "sweep": _add_sweep, "phase-diagram": _add_phase_diagram,
    "census": _add_census,
    "simulate": _add_simulate, "validate": _add_validate, "check": _add_check, "histogram": _add_histogram,
    "scan": _add_scan, "show": _add_show,
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand (imports no layer)."""
    parser = _Parser(
        prog="attnphase",
        description="The solvable model of dot-product attention (Cui, Behrens, Krzakala, Zdeborova 2024): "
        "symbolic derivation, state evolution and phase diagram, and gradient descent at finite d.",
        epilog="Every command: numeric lists are NUMBER, a,b,c or START:STOP:NUM; --json prints one JSON object; "
        "--quiet hides progress bars; --out DIR is always a folder; bad input is a one-line error (exit code 2). "
        "The model: docs/model.md.",
    )
    from attnphase import __version__

    parser.add_argument("--version", action="version", version=f"attnphase {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, target in COMMANDS:
        _BUILDERS[name](sub)
        p = sub.choices[name]
        if not any("--quiet" in a.option_strings for a in p._actions):  # every command takes --quiet
            outputs.add_quiet_option(p)
        p.set_defaults(func=target)
    return parser


def _resolve(func):
    if callable(func):
        return func
    module, _, name = func.partition(":")
    return getattr(importlib.import_module(module), name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the chosen subcommand; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    work.reset()
    from attnphase.interrupts import Terminated, handling_termination, stopped

    try:
        with handling_termination(), work.warnings_as_notes():  # SIGTERM / SIGHUP: every cleanup runs, as on Ctrl-C
            code = _resolve(args.func)(args)
    except outputs.JobFailed as exc:
        print(work.failure_message(work.current() or "writing the outputs", exc), file=sys.stderr)
        return 1
    except (ValueError, ArithmeticError) as exc:
        what = work.current()
        if what is not None and not getattr(exc, "input_error", False):
            # raised by the computation after every check passed: a failure, not bad input
            print(work.failure_message(what, exc), file=sys.stderr)
            return 1
        if not isinstance(exc, ValueError):
            raise
        msg = " ".join(str(exc).split())
        print(f"attnphase: error: {msg}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        return stopped(exc)
    except BrokenPipeError:  # the reader of stdout went away (attnphase ... | head): no traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
