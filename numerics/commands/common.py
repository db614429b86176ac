"""The set-up every numerics command shares: the model and SolverConfig of the command line at every rank (the
scalar form at r = r* = 1, the matrix form otherwise: docs/model.md section 7), one point's set-up, the staged
output of a job, its tasks folder and command line.  Imports nothing heavy at module level.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import numbers
import shlex
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from attnphase import options as opt
from attnphase import outputs, solver_options, workload
from attnphase.numerics.capabilities import SCALAR_RULES, check, is_scalar_form

#: Where a job keeps its finished tasks, under its --out folder (docs/distributed.md).
TASKS_FOLDER = "tasks"


def task_store(out_dir: Path) -> Any:
    """The store of a job's finished tasks, ``out_dir/tasks`` (``--fresh`` recomputes them; docs/distributed.md); a
    store that cannot be used is bad input naming ``--out`` (StoreUnusable, exit code 2)."""
    from attnphase.execution import ResultStore
    from attnphase.execution.store import StoreUnusable

    try:
        return ResultStore(out_dir / TASKS_FOLDER)
    except StoreUnusable as exc:
        raise StoreUnusable(f"--out: {exc}") from None


def command_line() -> str:
    """The command as typed (a dataset's ``command`` attribute)."""
    return "attnphase " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def ranks_from_args(args: argparse.Namespace) -> tuple[int, int]:
    """(r, r*) from ``--rank`` / ``--teacher-rank`` (1 where a command has neither); ValueError naming the option."""
    out = []
    for option, dest in (("--rank", "rank"), ("--teacher-rank", "teacher_rank")):
        v = getattr(args, dest, 1)
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{option} must be an integer >= 1, got {v!r}")
        out.append(int(v))
    return out[0], out[1]


def model_and_config(args: argparse.Namespace, omegas: Sequence[float], branch: str | None = None) -> tuple[Any, Any]:
    """(ModelParams with the ranks of ``args`` at ``omegas[0]``, SolverConfig), every option and omega checked before
    any work; at r or r* >= 2 the model group checks a rank-1 model, correlated tokens are refused; ``branch`` mixed
    needs r >= 2."""
    r, r_star = ranks_from_args(args)
    if branch == "mixed":
        check("mixed_branch", r, r_star)
    if max(r, r_star) >= 3:
        print(f"attnphase: note: --rank {r} --teacher-rank {r_star}: at r or r* >= 3 the state evolution's solves have "
              "not been seen to converge (a near-isotropic q0 makes rotations a soft mode; docs/general.md, "
              "\"Holes\"): expect \"not converged\"", file=sys.stderr, flush=True)
    params = opt.params_from_args(_at_rank_one(args), omega=omegas[0]).replace(r=r, r_star=r_star)
    if params.correlated_tokens:
        check("correlated_tokens", r, r_star)
    cfg = config_of(args, params)
    with opt.model_errors():
        for w in omegas[1:]:
            params.replace(omega=w)
    return params, cfg


def error_note(note: str) -> dict[str, str]:
    """``{"error_note": note}``, the note said on stderr; {} when ``note`` is "" (a result's missing or zero error
    bars are never silent)."""
    if note:
        print(f"attnphase: note: {note}", file=sys.stderr)
    return {"error_note": note} if note else {}


def check_omega_file_names(omegas: Sequence[float]) -> None:
    """ValueError where two omegas would write one file: a sweep names its per-omega files ``..._omega<omega>.csv``
    with 6 significant digits (``--omega 0.3,0.3000001`` wrote the second over the first)."""
    seen: dict[str, float] = {}
    for w in omegas:
        name = f"{float(w):g}"
        if name in seen and seen[name] != float(w):
            raise ValueError(f"--omega {seen[name]!r} and {float(w)!r} name the same file (omega{name}, the file names "
                             "carry 6 significant digits): give omegas that differ within their first 6 digits")
        seen[name] = float(w)


def check_semantic_signal(omegas: Sequence[float]) -> None:
    """ValueError unless an omega is below 1: at omega = 1 the data carry no semantic signal (docs/model.md section 1),
    so there is no semantic branch and no boundary.  An omega above 1 is left to the model's own range check."""
    if omegas and all(float(w) == 1 for w in omegas):
        raise ValueError("--omega 1: at omega = 1 the target attention is A alone (no semantic signal): there is "
                         "no semantic branch and no alpha_c, alpha_l or branch end to locate; take omega < 1 "
                         "(attnphase solve --omega 1 --branch positional gives the positional fixed point)")


def scan_models(args: argparse.Namespace) -> tuple[str, list[Any], list[Any], list[float]]:
    """(the scanned field, its values, one ModelParams per value with the ranks of ``args``, the omegas) of ``scan``,
    every value checked and no two giving one model."""
    r, r_star = ranks_from_args(args)
    field, values, models, omegas = opt.scan_from_args(_at_rank_one(args))
    models = [m.replace(r=r, r_star=r_star) for m in models]
    seen: dict[str, object] = {}
    for v, m in zip(values, models):  # ``--sigma "0.5;0.5,0.5"``: a scalar and the same value per token
        key = json.dumps(m.to_dict(), sort_keys=True, default=str)
        if key in seen:
            raise ValueError(f"--{field.replace('_', '-')}: the values {str(seen[key])!r} and {str(v)!r} give the same "
                             f"model; give each once")
        seen[key] = v
    return field, values, models, omegas


def _at_rank_one(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` at rank 1: the model group's checks see a rank-1 model (the ranks are set after)."""
    return argparse.Namespace(**vars(args) | {"rank": 1, "teacher_rank": 1})


def config_of(args: argparse.Namespace, params: Any) -> Any:
    """The SolverConfig of the solver group for ``params``, checked against it; in the matrix form (r or r* >= 2)
    ``--prox global`` and a Sobol rule, the scalar form's capabilities (:mod:`attnphase.numerics.capabilities`)
    refused in one line."""
    r, r_star = params.r, params.r_star
    for name in SCALAR_RULES:  # check: nothing at r = r* = 1
        if getattr(args, name, None) is not None:
            check(name, r, r_star)
    cfg = solver_options.config_from_args(args)
    if getattr(args, "backend", None) == "torch":
        check("torch_backend", r, r_star)
    if cfg.prox == "local":
        check("local_prox", r, r_star, cfg.prox)
    if not is_scalar_form(r, r_star) and not str(cfg.quadrature).strip().lower().startswith("sobol"):
        raise ValueError(f"--quadrature {cfg.quadrature}: the rank-r state evolution uses scrambled Sobol rules "
                         f"(sobolK[:REPS:SEED]); its L (r + r*) = {params.L * (params.r + params.r_star)} "
                         f"dimensions rule out tensor grids")
    solver_options.check_supported(params, cfg, args)
    return cfg


def point_setup(args: argparse.Namespace, command: str, branch: str | None = None,
                independent: bool = False) -> tuple[Any, Any, int]:
    """(model, SolverConfig, independent rules of the error estimate: :func:`point_rules`, or with ``independent``
    those of ``--error-estimate K`` alone, :func:`independent_rules`) of a command at one (alpha, omega), every rank:
    checked before any work, the defaults announced."""
    params, cfg = model_and_config(args, [opt.single_omega(args, command)], branch)
    from attnphase.numerics.errors.quadrature_error import independent_rules, point_rules

    n_rules = (independent_rules if independent else point_rules)(cfg, solver_options.error_estimate_from_args(args))
    opt.announce_defaults(args, params)
    if is_scalar_form(params.r, params.r_star):
        workload.announce_rules(params.L, cfg, workload.POINT_ROLES)
    return params, cfg, n_rules


def announce_matrix_tasks(what: str, costs: list[float], per: str, executor: Any, quiet: bool) -> None:
    """A rank-r job's tasks of ``costs`` CPU seconds each (:func:`attnphase.workload.announce_tasks`), their compiled
    loops on every core of this machine (none counted at ``--scheduler``)."""
    from attnphase.execution.executor import usable_cores

    workload.announce_tasks(what, costs, executor.workers, f"~{max(costs):.0f} CPU s per {per}, measured at r = 2, "
                            "r* = 1; the compiled loops use every core", quiet=quiet, min_seconds=0,
                            cores=usable_cores() if executor.scheduler is None else 0, own=workload.JOB_COMMAND_SECONDS,
                            core_use=workload.RANK2_CORE_USE)


@contextlib.contextmanager
def staged_job(out_dir: Path, job: str, model: dict[str, Any], as_json: bool) -> Iterator[Path]:
    """A job's staging folder (:func:`attnphase.outputs.staged_output`), what the job prints naming ``out_dir``; with
    ``--json`` its stdout goes to stderr."""
    with outputs.staged_output(out_dir, job=job, model=model) as stage:
        shown = {str(stage): str(out_dir)}
        stdout = outputs.Rewriting(sys.stderr if as_json else sys.stdout, shown)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(outputs.Rewriting(sys.stderr, shown)):
            yield stage
