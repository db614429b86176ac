"""What ``attnphase simulate`` (one finite-d gradient-descent run) and ``validate`` (grid + report) do.

    attnphase simulate --d 1000 --alpha 2 --omega 0.3 --init semantic --json
    attnphase validate --quick --out results/validation

The options (the shared model group included) are defined in :mod:`attnphase.cli`.
Nothing heavy is imported at module level: torch, numpy and the numerics are
imported inside the command functions, after every option is checked. Bad
parameters raise ``ValueError`` naming the parameter (the top-level CLI prints
one line, exit code 2).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys

from attnphase import options as opt
from attnphase import execution_options
from attnphase import outputs, work

_INITS = ("semantic", "positional", "random")


def _check_choice(value: str, choices: tuple[str, ...], name: str) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def _check_threads(threads: int | None) -> None:
    if threads is not None and threads < 1:
        raise ValueError(f"--threads must be >= 1, got {threads}")


def _check_dimension(d: int) -> None:
    if d < 2:
        raise ValueError(f"--d (embedding dimension) must be an integer >= 2, got {d}")


def _check_training(args: argparse.Namespace) -> None:
    """``--max-steps`` >= 1 and ``--grad-tol`` a finite number > 0 (the stopping rule of gradient descent)."""
    if args.max_steps < 1:
        raise ValueError(f"--max-steps must be >= 1, got {args.max_steps}")
    if args.grad_tol is not None and not (args.grad_tol > 0 and args.grad_tol < float("inf")):
        raise ValueError(f"--grad-tol must be a finite number > 0, got {args.grad_tol}")


def _train_config(args: argparse.Namespace, optimizer: str = "gd"):
    from attnphase.validation.training import TrainConfig

    return TrainConfig(optimizer=optimizer, grad_tol=args.grad_tol, max_steps=args.max_steps)


def warn_unconverged(runs: list[dict]) -> int:
    """One warning line on stderr when some runs stopped without reaching the gradient tolerance (their
    rows are not counted as agreement); returns how many.  ``runs``: the summary's run dicts."""
    bad = [r for r in runs if not r["converged"]]
    if bad:
        statuses = sorted({r["status"] for r in bad})
        counts = ", ".join(f"{sum(r['status'] == s for r in bad)} {s}" for s in statuses)
        worst = max(bad, key=lambda r: r["grad_norm"])
        print(f"attnphase: warning: {len(bad)} of {len(runs)} runs stopped without reaching the gradient tolerance "
              f"({counts}; largest |grad R|/sqrt(d) {worst['grad_norm']:.2e} after {worst['steps']} steps, d = "
              f"{worst['d']}, alpha = {worst['alpha']:g}, {worst['init']} start): their rows are not counted as "
              f"agreement (report.md, 'Convergence of gradient descent')", file=sys.stderr)
    return len(bad)


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable; the physical memory where /proc is absent)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os

    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _bytes(n: float) -> str:
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def check_memory(d: int, alpha: float, L: int, n_test: int, dtype: str, option: str = "--d") -> None:
    """The data of one simulation fit in memory: (n + n_test) x L x d numbers, twice (data and one
    working copy of the same size in the loss and its gradient).  ValueError with both numbers."""
    n = max(1, round(alpha * d))
    need = 2 * (n + n_test) * L * d * (4 if dtype == "float32" else 8)
    have = available_memory()
    if need > have:
        raise ValueError(f"{option} {d}: one simulation needs about {_bytes(need)} (n = alpha d = {n:.3g} training and "
                         f"{n_test} test samples x L = {L} tokens x d numbers, data plus one working copy), more than "
                         f"the {_bytes(have)} of memory available")


#: The fewest test samples ``simulate --n-test`` takes (eps_g's standard error is then about eps_g / 7).
MIN_N_TEST = 100


def check_samples(alpha: float, d: int) -> int:
    """``n = round(alpha d)`` training samples, at least one (else a ValueError naming --alpha and --d); an
    effective alpha n/d that differs from ``alpha`` is said on stderr.  Returns n."""
    n = round(alpha * d)
    if n < 1:
        raise ValueError(f"--alpha {alpha:g} --d {d}: n = round(alpha d) = round({alpha * d:.3g}) = 0 training "
                         f"samples; need alpha d > 0.5 (raise --alpha or --d)")
    if abs(n - alpha * d) > 1e-9 * alpha * d:
        print(f"attnphase: warning: n = round(alpha d) = {n} training samples: the effective alpha = n/d = "
              f"{n / d:.6g}, not --alpha {alpha:g}", file=sys.stderr)
    return n


def announce_campaign(plan, executor, args: argparse.Namespace) -> None:
    """The default campaign's task count and time (theory tasks and simulations, attnphase.workload), said
    before any work; past workload.MAX_SIMULATIONS simulations ``--large`` is needed."""
    from attnphase import workload
    from attnphase.validation.campaign_plan import _theory_jobs

    seen, sims = set(), []
    for s in plan.sweep_specs() + plan.heat_specs() + plan.fss_specs():
        key = (s.d, s.alpha, s.init, s.seed, s.params.omega)
        if key not in seen:
            seen.add(key)
            sims.append(workload.simulation_seconds(s.d, s.alpha))
    theory = [workload.VALIDATE_THEORY_TASK_SECONDS] * len(_theory_jobs(plan, "")[0])
    workers = executor.workers
    t = workload.wall_seconds(theory + sims, workers)
    workload.check_simulations(len(sims), t, workers, "--seeds/--d", getattr(args, "large", False))
    workload.announce_tasks(f"validation campaign at d = {plan.d}: {len(theory)} theory tasks and {len(sims)} "
                            f"simulations", theory + sims, workers,
                            f"~{workload.VALIDATE_THEORY_TASK_SECONDS:.0f} CPU s per theory task, "
                            f"{workload.simulation_seconds(plan.d, 1.0):.2g} s per simulation at alpha = 1",
                            quiet=args.quiet)


def check_plan_samples(smallest_alpha: float, d: int) -> None:
    """A plan's smallest alpha at ``--d d`` has at least one training sample (n = round(alpha d)); else a
    ValueError naming --d and the smallest d that works."""
    if round(smallest_alpha * d) < 1:
        need = math.floor(0.5 / smallest_alpha) + 1
        raise ValueError(f"--d {d}: the plan's smallest alpha {smallest_alpha:g} has n = round(alpha d) = 0 training "
                         f"samples; need --d >= {need}")


def check_ranks_fit(params, d: int) -> None:
    """``L``, the student rank ``r`` and the teacher rank ``r*`` each at most ``d`` (``Q*`` has ``r*``
    orthogonal columns, ``Q`` starts from ``r`` columns): a one-line ValueError naming the option."""
    for option, value, what in (("--L", params.L, "L"), ("--rank", params.r, "student rank r"),
                                ("--teacher-rank", params.r_star, "teacher rank r*")):
        if value > d:
            raise ValueError(f"--d {d} (embedding dimension) must be >= {what} = {value} ({option} {value})")


def check_device(spec: str, option: str = "--device") -> None:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` that this machine has; ValueError naming the option."""
    import torch

    s = str(spec).strip().lower()
    if s in ("auto", "cpu"):
        return
    if s == "cuda" or (s.startswith("cuda:") and s[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(f"{option} {spec}: CUDA is not available on this machine (use --device cpu or auto)")
        if ":" in s and int(s[5:]) >= torch.cuda.device_count():
            raise ValueError(f"{option} {spec}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        return
    raise ValueError(f"{option} must be auto, cpu, cuda or cuda:N, got {spec!r}")


def _check_dtype(dtype: str) -> None:
    _check_choice(dtype, ("float64", "float32"), "--dtype")


def reuse_theory_cache(out_dir, stage) -> int:
    """Copy the theory cache of an earlier run in ``out_dir`` into the staging folder, so a rerun into the same
    ``--out`` reuses it (the staging folder then moves into ``out_dir`` with the cache). Returns the files copied."""
    import shutil
    from pathlib import Path

    src = Path(out_dir) / "theory-cache"
    if not src.is_dir():
        return 0
    dst = Path(stage) / "theory-cache"
    dst.mkdir(parents=True, exist_ok=True)
    files = sorted(src.glob("theory-*.json"))
    for f in files:
        shutil.copy2(f, dst / f.name)
    return len(files)


def _check_amp(args: argparse.Namespace) -> None:
    """``--algorithm amp``: no gradient-descent option, its own settings in range (one-line ValueErrors)."""
    for option, value in (("--init", args.init), ("--optimizer", args.optimizer), ("--grad-tol", args.grad_tol),
                          ("--n-test", args.n_test)):
        if value is not None:
            raise ValueError(f"{option}: a gradient-descent option; --algorithm amp runs approximate message passing "
                             f"from a small random start (docs/bayes-optimal.md)")
    if args.max_steps != 20000:
        raise ValueError("--max-steps: a gradient-descent option; --algorithm amp's budget is --max-iter")
    if not 0.0 <= args.damping < 1.0:
        raise ValueError(f"--damping must lie in [0, 1), got {args.damping}")
    if not (args.amp_tol > 0 and args.amp_tol < float("inf")):
        raise ValueError(f"--amp-tol must be a finite number > 0, got {args.amp_tol}")
    if args.max_iter < 1:
        raise ValueError(f"--max-iter must be >= 1, got {args.max_iter}")


def run_simulate_amp(args: argparse.Namespace) -> int:
    """``attnphase simulate --algorithm amp``: returns 0 when AMP reached its tolerance, 1 otherwise."""
    _check_amp(args)
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True)
    _check_dimension(args.d)
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    _check_dtype(args.dtype)
    _check_threads(args.threads)
    params = opt.params_from_args(args, omega=opt.single_omega(args, "simulate"))
    if max(params.r, params.r_star) != 1:
        raise ValueError("--rank and --teacher-rank: --algorithm amp runs at rank 1")
    if not params.omega < 1.0:
        raise ValueError(f"--omega {params.omega:g}: --algorithm amp needs omega < 1 (at omega = 1 a sample reveals "
                         f"nothing of the teacher)")
    if params.correlated_tokens:
        raise ValueError("--token-cov: --algorithm amp runs with independent tokens")
    check_ranks_fit(params, args.d)
    check_samples(alpha, args.d)
    check_memory(args.d, alpha, params.L, 0, args.dtype)
    check_device(args.device)
    import torch

    from attnphase.validation.amp import AmpConfig
    from attnphase.validation.amp_run import AmpSpec, run_amp

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    spec = AmpSpec(d=args.d, alpha=alpha, seed=args.seed, params=params, device=args.device, dtype=args.dtype,
                   amp=AmpConfig(damping=args.damping, tol=args.amp_tol, max_iter=args.max_iter))
    work.begin("running approximate message passing")
    res = run_amp(spec)
    out = res.to_json()
    if args.json:
        print(json.dumps(outputs.json_value(out)))
    else:
        width = max(len(k) for k in out)
        for k, v in out.items():
            if k not in ("m_path", "q_path"):
                print(f"{k:>{width}}  {v}")
    if not res.converged:
        print(f"attnphase: warning: AMP stopped without converging ({res.status}: last change {res.change:.2e} after "
              f"{res.iterations} iterations, tolerance {res.tol:.1e}; \"converged\": false)", file=sys.stderr)
        return 1
    return 0


def run_simulate(args: argparse.Namespace) -> int:
    """``attnphase simulate``: returns 0 when training (or AMP) converged, 1 otherwise."""
    _check_choice(args.algorithm, ("gd", "amp"), "--algorithm")
    if args.algorithm == "amp":
        return run_simulate_amp(args)
    if args.init is None:
        args.init = "semantic"
    if args.optimizer is None:
        args.optimizer = "gd"
    if args.n_test is None:
        args.n_test = 10000
    for option, value, default in (("--damping", args.damping, 0.0), ("--amp-tol", args.amp_tol, 1e-7),
                                   ("--max-iter", args.max_iter, 500)):
        if value != default:
            raise ValueError(f"{option}: an AMP option; add --algorithm amp")
    _check_choice(args.init, _INITS, "--init")
    _check_choice(args.optimizer, ("gd", "adam"), "--optimizer")
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True)
    _check_dimension(args.d)
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    _check_training(args)
    if args.n_test < MIN_N_TEST:
        raise ValueError(f"--n-test must be >= {MIN_N_TEST}, got {args.n_test} (eps_g and eps_lin are means over "
                         f"the test samples; the JSON gives their standard errors eps_g_se, eps_lin_se)")
    _check_dtype(args.dtype)
    _check_threads(args.threads)
    params = opt.params_from_args(args, omega=opt.single_omega(args, "simulate"))
    if args.init == "positional" and not params.P[0][0] > 0:
        raise ValueError(f"--P: --init positional starts the student along p_1, and P[0,0] = |p_1|^2 = {params.P[0][0]:g} "
                         f"leaves no such direction; give a --P with P[0,0] > 0 or another --init")
    check_ranks_fit(params, args.d)
    check_samples(alpha, args.d)
    check_memory(args.d, alpha, params.L, args.n_test, args.dtype)
    check_device(args.device)
    import torch

    from attnphase.validation.experiments import SimSpec, run_simulation

    if args.threads is not None:
        torch.set_num_threads(args.threads)

    spec = SimSpec(
        d=args.d, alpha=alpha, init=args.init, seed=args.seed, params=params,
        train=_train_config(args, args.optimizer), n_test=args.n_test, device=args.device, dtype=args.dtype,
    )
    work.begin("training the student")
    res = run_simulation(spec)
    if args.json:
        print(json.dumps(outputs.json_value(res.to_json())))
    else:
        out = res.to_dict()
        width = max(len(k) for k in out)
        for k, v in out.items():
            print(f"{k:>{width}}  {v}")
    if not res.converged:
        why = "the step budget --max-steps ran out" if res.status == "budget" else "the line search found no decrease"
        print(f"attnphase: warning: training stopped without converging ({res.status}: {why}; |grad R|/sqrt(d) = "
              f"{res.grad_norm:.2e} after {res.steps} steps, tolerance {res.grad_tol:.1e}; \"converged\": false)",
              file=sys.stderr)
        return 1
    return 0


def run_validate(args: argparse.Namespace) -> int:
    """``attnphase validate``: runs the grid, writes the report; returns 0 (1 if a run did not converge)."""
    if getattr(args, "suite", "default") == "general":
        return run_validate_general(args)
    if getattr(args, "cases", None) is not None:
        raise ValueError("--cases: only with --suite general (it names the general suite's cases)")
    params = opt.params_from_args(args, omega=opt.single_omega(args, "validate"))
    opt.check_branch_possible(params, "positional", "validate's positional runs")
    if not params.P[0][0] > 0:
        raise ValueError(f"--P: validate's positional runs start the student along p_1, and P[0,0] = |p_1|^2 = "
                         f"{params.P[0][0]:g} leaves no such direction; give a --P with P[0,0] > 0")
    out_dir = outputs.out_dir_from_args(args)
    if args.d is not None:
        _check_dimension(args.d)
    d = args.d if args.d is not None else (200 if args.quick else 1000)
    if params.L > d:
        raise ValueError(f"--d (embedding dimension) must be >= L = {params.L}, got {d}")
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    _check_training(args)
    _check_threads(args.threads)
    _check_dtype(args.dtype)
    check_memory(d, 2.5, params.L, 10000, args.dtype)  # 2.5: the largest alpha of the plans' grids
    check_device(args.device)
    executor = execution_options.executor_from_args(args)

    import torch

    from attnphase.execution import ResultStore
    from attnphase.numerics.commands.common import TASKS_FOLDER, command_line
    from attnphase.validation.campaign import run_validation, validation_plan

    if args.threads is not None:  # the tasks run in this process with --workers 1 (Dask workers: one thread each)
        torch.set_num_threads(args.threads)
    plan = validation_plan(quick=args.quick, d=args.d, seeds=args.seeds, params=params, device=args.device,
                           dtype=args.dtype, train=_train_config(args))
    check_plan_samples(min((*plan.alphas, *plan.heat_alphas)), plan.d)
    announce_campaign(plan, executor, args)
    work.begin("running the validation")
    # every file goes to a staging folder first, moved into --out DIR at the end: all files or none
    with outputs.staged_output(out_dir, job="validate", model=plan.to_dict() | {"suite": "default"}) as stage:
        reuse_theory_cache(out_dir, stage)
        shown = {str(stage): str(out_dir)}
        with contextlib.redirect_stdout(outputs.Rewriting(sys.stdout, shown)), \
                contextlib.redirect_stderr(outputs.Rewriting(sys.stderr, shown)):
            summary = run_validation(plan, stage, progress=not args.quiet, executor=executor,
                                     store=ResultStore(out_dir / TASKS_FOLDER), fresh=args.fresh,
                                     command=command_line())
        summary = json.loads(json.dumps(outputs.json_value(summary)).replace(str(stage), str(out_dir)))
    if args.json:
        print(json.dumps(outputs.json_value(summary)))
    t = summary["tasks"]
    print(f"wrote {out_dir}/report.md, summary.json, validation.nc and figures ({summary['wall_seconds']:.0f} s; tasks: "
          f"{t['computed']} computed, {t['stored']} from the store, {t['failed']} failed)", file=sys.stderr)
    if t["failures"]:
        print(f"attnphase: {t['failures']}", file=sys.stderr)
    warn_unconverged(summary.get("runs", []))
    return 0 if summary["all_converged"] else 1


def run_validate_general(args: argparse.Namespace) -> int:
    """``attnphase validate --suite general``: the general model's cases (their own models) against the theory."""
    given = opt.model_options_given(args)
    if given:
        raise ValueError(f"{given[0]}: --suite general runs its own models (docs/validation.md); drop the model "
                         f"options or use --suite default")
    from attnphase.validation.general_suite import general_plan, run_general_validation, select_cases

    cases = select_cases(getattr(args, "cases", None))
    out_dir = outputs.out_dir_from_args(args)
    if args.d is not None:
        _check_dimension(args.d)
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    _check_training(args)
    _check_threads(args.threads)
    _check_dtype(args.dtype)
    check_device(args.device)

    import torch

    from attnphase.execution import ResultStore
    from attnphase.numerics.commands.common import TASKS_FOLDER
    plan = general_plan(quick=args.quick, d=args.d, seeds=args.seeds, device=args.device, dtype=args.dtype,
                        cases=cases, train=_train_config(args))
    check_plan_samples(min((*plan.grid, *(a for c in plan.cases for a in c.alphas))), plan.d)
    for case in plan.cases:
        need = max(case.params.L, case.params.r, case.params.r_star)
        if plan.d < need:
            raise ValueError(f"--d {plan.d}: the general suite's case ({case.key}) {case.title} needs d >= {need}")
    check_memory(plan.d, max(plan.grid), max(c.params.L for c in plan.cases), plan.n_test, args.dtype)
    if not args.quiet:
        from attnphase import workload

        n, seeds = len(plan.cases), len(plan.seeds)
        if plan.quick and plan.d == 200:
            t = workload.GENERAL_QUICK_SUITE_SECONDS * n / 5 * seeds / 3
            said = (f"about {workload.format_duration(t)} (the quick suite of all 5 cases, 3 seeds measured "
                    f"{workload.GENERAL_QUICK_SUITE_SECONDS:.0f} s wall on 2 cores, scaled by cases and seeds)")
        else:
            said = (f"no measured estimate for d = {plan.d}: its simulations grow as d^2 (the full suite's cases (d), (e) "
                    f"at d = 1000 took {workload.GENERAL_FULL_DE_SECONDS:.0f} s wall on 2 cores)")
        print(f"attnphase: general suite: {n} case{'s' if n != 1 else ''} at d = {plan.d}, {seeds} seeds: {said}; a busy "
              f"or slower machine takes longer", file=sys.stderr, flush=True)
    torch.set_num_threads(args.threads if args.threads is not None else max(1, torch.get_num_threads() - 1))
    work.begin("running the general validation suite")
    with outputs.staged_output(out_dir, job="validate", model={"suite": "general", "cases": [c.key for c in plan.cases],
                                                               "d": plan.d}) as stage:
        reuse_theory_cache(out_dir, stage)
        shown = {str(stage): str(out_dir)}
        with contextlib.redirect_stdout(outputs.Rewriting(sys.stdout, shown)), \
                contextlib.redirect_stderr(outputs.Rewriting(sys.stderr, shown)):
            summary = run_general_validation(plan, stage, progress=not args.quiet,
                                             store=ResultStore(out_dir / TASKS_FOLDER))
        summary = json.loads(json.dumps(outputs.json_value(summary)).replace(str(stage), str(out_dir)))
    if args.json:
        print(json.dumps(outputs.json_value(summary)))
    print(f"wrote {out_dir}/report.md, summary.json and general_suite.png ({summary['wall_seconds']:.0f} s)",
          file=sys.stderr)
    warn_unconverged(summary.get("runs", []))
    return 0 if summary["all_converged"] else 1
