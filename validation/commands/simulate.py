"""``attnphase simulate``: one finite-d run -- gradient descent on the attention student, or AMP for the
Bayes-optimal estimator -- and its observables, as ``key  value`` lines or one ``--json`` object
(docs/reference/outputs.md).  Exit code 1 when training (or AMP) did not converge.  torch and the numerics are
imported inside :func:`run`, after every option is checked.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from attnphase import options as opt
from attnphase import outputs, work
from attnphase.display import record_lines
from attnphase.validation.commands.finite_d_options import (add_torch_options, add_training_options, check_choice,
                                                           check_device, check_dimension, check_dtype, check_memory,
                                                           check_ranks_fit, check_samples, check_threads, check_training,
                                                           train_config)

NAME = "simulate"
HELP = "train the attention student at finite d with PyTorch; measure m, theta, q, eps_g, e_t, eps_lin"
DESCRIPTION = ("One finite-d simulation: teacher data, gradient descent (or Adam) from an initialisation, "
               "observables on a fresh test set (docs/model.md section 1). Exit code 1 if training did not converge.")


#: Why a training run that did not converge stopped, by its status (validation/training.py).
STOPPED_BECAUSE = {"budget": "the step budget --max-steps ran out", "stalled": "the line search found no decrease",
                   "diverged": "the risk or its gradient is not finite: an extreme model value?"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--d --alpha``, the model group, the algorithm and its start, the stopping rule, AMP's settings, the torch group."""
    p.add_argument("--d", type=int, default=200, help="embedding dimension d >= 2 (default 200)")
    p.add_argument("--alpha", default="2", metavar="ALPHA", help="sample complexity alpha = n/d > 0, one number (default 2)")
    opt.add_model_options(p)
    p.add_argument("--algorithm", default="gd", metavar="{gd,amp}",
                   help="gd (default): train the ERM student; amp: approximate message passing for the Bayes-optimal "
                   "estimator (docs/bayes-optimal.md), beside the state evolution's prediction")
    p.add_argument("--init", default=None, metavar="{semantic,positional,random}", help="initialisation (default semantic; gd only)")
    p.add_argument("--optimizer", default=None, metavar="{gd,adam}", help="gd (Armijo gradient descent, default) or adam (gd only)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random stream (default 0)")
    add_training_options(p)
    p.add_argument("--n-test", type=int, default=None, help="fresh test samples (default 10000; gd only)")
    g = p.add_argument_group("amp (with --algorithm amp)")
    g.add_argument("--damping", type=float, default=0.0,
                   help="in [0, 1): the step 1 - damping of every iteration (default 0: undamped); a step that leaves "
                   "no posterior variance is taken again halved (docs/bayes-optimal.md)")
    g.add_argument("--amp-tol", type=float, default=None,
                   help="stop when AMP's proposed step |D_t| / sqrt(d rho0) <= this (default 1e-7 in float64, 1e-5 in "
                   "float32, whose round-off the change does not fall below)")
    g.add_argument("--max-iter", type=int, default=500, help="AMP iteration budget (default 500)")
    add_torch_options(p, threads="torch.set_num_threads (default: torch's choice)")
    outputs.add_json_option(p)


#: The fewest test samples ``simulate --n-test`` takes (eps_g's standard error is then about eps_g / 7).
MIN_N_TEST = 100


def _check_amp(args: argparse.Namespace) -> None:
    """``--algorithm amp``: no gradient-descent option, its own settings in range (one-line ValueErrors)."""
    for option, value in (("--init", args.init), ("--optimizer", args.optimizer), ("--grad-tol", args.grad_tol),
                          ("--n-test", args.n_test)):
        if value is not None:
            raise ValueError(f"{option}: a gradient-descent option; --algorithm amp runs approximate message passing "
                             f"from a small random start (docs/bayes-optimal.md)")
    if opt.option_given(args, "--max-steps", 20000):
        raise ValueError("--max-steps: a gradient-descent option; --algorithm amp's budget is --max-iter")
    if "--lam" in opt.model_options_given(args):
        raise ValueError("--lam: --algorithm amp computes the posterior mean, which has no ridge penalty")
    if "--P" in opt.model_options_given(args):
        raise ValueError("--P: --algorithm amp computes the posterior mean, which does not use the positional "
                         "encodings (the teacher never sees them)")
    if not 0.0 <= args.damping < 1.0:
        raise ValueError(f"--damping must lie in [0, 1), got {args.damping}")
    if args.amp_tol is not None and not (args.amp_tol > 0 and args.amp_tol < float("inf")):
        raise ValueError(f"--amp-tol must be a finite number > 0, got {args.amp_tol}")
    if args.max_iter < 1:
        raise ValueError(f"--max-iter must be >= 1, got {args.max_iter}")


def _checked_model(args: argparse.Namespace, n_test: int) -> tuple[float, object]:
    """``--alpha``, ``--d``, ``--seed``, the torch group and the model checked (with ``--algorithm amp``: rank 1,
    omega < 1, independent tokens; else a positional start needs P[0,0] > 0), the defaults announced, torch's
    threads set: ``(alpha, params)``."""
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True)
    check_dimension(args.d)
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    check_dtype(args.dtype)
    check_threads(args.threads)
    params = opt.params_from_args(args, omega=opt.single_omega(args, NAME))
    if args.algorithm == "amp" and max(params.r, params.r_star) != 1:
        raise ValueError("--rank and --teacher-rank: --algorithm amp runs at rank 1")
    if args.algorithm == "amp" and not params.omega < 1.0:
        raise ValueError(f"--omega {params.omega:g}: --algorithm amp needs omega < 1 (at omega = 1 a sample reveals "
                         f"nothing of the teacher)")
    if args.algorithm == "amp" and params.correlated_tokens:
        raise ValueError("--token-cov: --algorithm amp runs with independent tokens")
    if args.init == "positional" and not params.P[0][0] > 0:
        raise ValueError(f"--P: --init positional starts the student along p_1, and P[0,0] = |p_1|^2 = "
                         f"{params.P[0][0]:g} leaves no such direction; give a --P with P[0,0] > 0 or another --init")
    check_ranks_fit(params, args.d)
    check_memory(args.d, alpha, params.L, n_test, args.dtype)
    check_device(args.device)
    check_samples(alpha, args.d)  # last: its warning follows every refusal (a refused run prints its error alone)
    opt.announce_defaults(args, params)
    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return alpha, params


def _run_amp(args: argparse.Namespace) -> int:
    """``attnphase simulate --algorithm amp``: returns 0 when AMP reached its tolerance, 1 otherwise."""
    _check_amp(args)
    alpha, params = _checked_model(args, 0)
    from attnphase.validation.amp import AmpConfig
    from attnphase.validation.amp_run import AmpSpec, run_amp

    from attnphase.validation.amp import AMP_TOL

    tol = AMP_TOL.get(args.dtype, AMP_TOL["float32"]) if args.amp_tol is None else args.amp_tol
    spec = AmpSpec(d=args.d, alpha=alpha, seed=args.seed, params=params, device=args.device, dtype=args.dtype,
                   amp=AmpConfig(damping=args.damping, tol=tol, max_iter=args.max_iter))
    work.begin("running approximate message passing")
    res = run_amp(spec)
    from attnphase.validation.experiments import resolve_device

    out = res.to_json() | {"omega": params.omega, "device": resolve_device(args.device).type,
                           "dtype": args.dtype} | model_fields(params, ridge=False) | {"error_note": AMP_ERROR_NOTE}
    print(f"attnphase: note: {AMP_ERROR_NOTE}", file=sys.stderr)
    if args.json:
        print(json.dumps(outputs.json_value(out)))
    else:  # the JSON's keys, a mean with its standard error on one line (attnphase.display)
        print("\n".join(record_lines({k: v for k, v in out.items() if k not in ("theta_path", "q_path")})))
    if not res.converged:
        why = {"diverged": f"a step left no posterior variance (1 / rho0 + Ahat <= 0) at the smallest step size, or "
                           f"a non-finite one, after {res.halvings} halvings: the iteration overshoots on this data set",
               "budget": f"--max-iter {res.iterations} reached"}.get(res.status, res.status)
        # damping is no cure below 1/L, nor where it was given (docs/bayes-optimal.md, "The failures, and why")
        damp = "a damped iteration (--damping 0.5), " if args.damping == 0.0 and spec.alpha > 1.0 / params.L else ""
        print(f"attnphase: warning: AMP stopped without converging ({res.status}: {why}; last change {res.change:.2e} "
              f"after {res.iterations} iterations, tolerance {res.tol:.1e}; \"converged\": false); {damp}a larger "
              "--max-iter or a larger --d may converge; at this d the data set's AMP map may have no fixed point near "
              "the state evolution's, the mean over seeds (--seed) approaching it as d grows (docs/bayes-optimal.md, \"AMP "
              "at finite d\")", file=sys.stderr)
        return 1
    return 0


def model_fields(params: Any, ridge: bool = True) -> dict[str, Any]:
    """The model a simulation ran, as ``solve`` echoes it: sigma, lam, the loss and P (with ``ridge``: gradient
    descent's; AMP's posterior mean uses none of them), L, A, rho0, the rank (and C for correlated tokens)."""
    from attnphase.numerics.commands.point_record import record_model
    from attnphase.theory.whitening import original

    model = record_model(params)
    model = model if ridge else {k: v for k, v in model.items() if k not in ("loss", "P")}
    return {"sigma": original(params).sigma_value} | ({"lam": params.lam} if ridge else {}) | model


#: Why a simulation's m, theta, q and e_t carry no error bar (README: every number carries its bar, or error_note
#: says why): they are this run's own values, exact up to round-off; eps_g and eps_lin are test-set means.
SIMULATION_ERROR_NOTE = ("m, theta, q, e_t carry no error bar: they are this run's exact values (one teacher, one "
                         "seed; their spread over seeds is validate's sd_<obs>); the bars of eps_g and eps_lin are the "
                         "standard errors of their means over the n_test test samples")


#: Why an AMP run's numbers carry no error bar.
AMP_ERROR_NOTE = ("theta, q and their paths carry no error bar: they are this run's exact values (one teacher, one "
                  "seed; their spread over seeds is validate's); se_q0 is the state evolution's, exact up to its rule's "
                  "error (solve --estimator bayes-optimal gives its bar)")


def run(args: argparse.Namespace) -> int:
    """``attnphase simulate``: returns 0 when training (or AMP) converged, 1 otherwise."""
    check_choice(args.algorithm, ("gd", "amp"), "--algorithm")
    if args.algorithm == "amp":
        return _run_amp(args)
    for dest, default in (("init", "semantic"), ("optimizer", "gd"), ("n_test", 10000)):  # gd's defaults
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    for option, default in (("--damping", 0.0), ("--amp-tol", None), ("--max-iter", 500)):
        if opt.option_given(args, option, default):
            raise ValueError(f"{option}: an AMP option; add --algorithm amp")
    check_choice(args.init, ("semantic", "positional", "random"), "--init")
    check_choice(args.optimizer, ("gd", "adam"), "--optimizer")
    check_training(args)
    if args.n_test < MIN_N_TEST:
        raise ValueError(f"--n-test must be >= {MIN_N_TEST}, got {args.n_test} (eps_g and eps_lin are means over "
                         f"the test samples; the JSON gives their standard errors err_eps_g, err_eps_lin)")
    alpha, params = _checked_model(args, args.n_test)
    from attnphase.validation.experiments import SimSpec, run_simulation

    spec = SimSpec(d=args.d, alpha=alpha, init=args.init, seed=args.seed, params=params,
                   train=train_config(args, args.optimizer), n_test=args.n_test, device=args.device, dtype=args.dtype)
    work.begin("training the student")
    res = run_simulation(spec)
    print(f"attnphase: note: {SIMULATION_ERROR_NOTE}", file=sys.stderr)
    out = res.to_json() | model_fields(params) | {"error_note": SIMULATION_ERROR_NOTE}
    # without --json the JSON's keys as lines (every field, 16 digits, eps_g apart from its standard error)
    print(json.dumps(outputs.json_value(out)) if args.json else "\n".join(record_lines(out)))
    if not res.converged:
        why = STOPPED_BECAUSE.get(res.status, res.status)
        print(f"attnphase: warning: training stopped without converging ({res.status}: {why}; |grad R|/sqrt(d) = "
              f"{res.grad_norm:.2e} after {res.steps} steps, tolerance {res.grad_tol:.1e}; \"converged\": false)",
              file=sys.stderr)
        return 1
    if res.steps == 0:  # a tolerance above the start's gradient: the start itself, not a trained student
        print(f"attnphase: warning: the start already meets the gradient tolerance (|grad R|/sqrt(d) = "
              f"{res.grad_norm:.2e} <= {res.grad_tol:.1e}): no step was taken, the result is the {args.init} start "
              "itself; lower --grad-tol (default 3e-7 in float64) to train", file=sys.stderr)
    return 0

