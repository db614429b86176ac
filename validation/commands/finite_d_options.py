"""The options of a finite-d run that ``simulate`` and ``validate`` share (the stopping rule, the torch group), and
the checks every finite-d command makes before any work.  torch is imported inside :func:`check_device` only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from attnphase.validation.samples import sample_count, smallest_dimension


def add_training_options(p: argparse.ArgumentParser) -> None:
    """The stopping rule of gradient descent (``simulate`` and ``validate``)."""
    p.add_argument("--grad-tol", type=float, default=None,
                   help="stop when |grad_Q R|_F / sqrt(d) (the gradient of e_t = R/d in the weights Q/sqrt(d)) "
                   "<= this (default 3e-7 in float64, 1e-5 in float32)")
    p.add_argument("--max-steps", type=int, default=20000,
                   help="step budget, a safety net: a run that reaches it stops unconverged, with a warning "
                   "(default 20000)")


def add_torch_options(p: argparse.ArgumentParser, threads: str) -> None:
    """The torch group: ``--device``, ``--dtype``, ``--threads`` (``threads``: its help)."""
    g = p.add_argument_group("torch")
    g.add_argument("--device", default="auto", help='"auto" (cuda if available, else cpu), "cpu", "cuda", "cuda:N" (default auto)')
    g.add_argument("--dtype", default="float64", help="float64 (default) or float32")
    g.add_argument("--threads", type=int, default=None, help=threads)


def check_choice(value: str, choices: tuple[str, ...], name: str) -> None:
    """``value`` one of ``choices``; else a ValueError naming the option ``name``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def check_threads(threads: int | None) -> None:
    """``--threads`` None (torch's choice) or >= 1."""
    if threads is not None and threads < 1:
        raise ValueError(f"--threads must be >= 1, got {threads}")


def check_threads_apply(args: argparse.Namespace, executor: Any, default: Any) -> None:
    """``--threads`` above 1 given where the tasks do not run in this process (several workers or ``--scheduler``):
    refused, as the Dask workers run one thread each and the option would be ignored."""
    from attnphase.options import option_given

    if option_given(args, "--threads", default) and args.threads != 1 and not executor.in_process:
        raise ValueError(f"--threads {args.threads}: applies with --workers 1 (the tasks then run in this process); "
                         "the Dask workers run one torch thread each")


def check_dimension(d: int) -> None:
    """``--d`` >= 2."""
    if d < 2:
        raise ValueError(f"--d (embedding dimension) must be an integer >= 2, got {d}")


def check_training(args: argparse.Namespace) -> None:
    """``--max-steps`` >= 1 and ``--grad-tol`` a finite number > 0 (the stopping rule of gradient descent)."""
    if args.max_steps < 1:
        raise ValueError(f"--max-steps must be >= 1, got {args.max_steps}")
    if args.grad_tol is not None and not (args.grad_tol > 0 and args.grad_tol < float("inf")):
        raise ValueError(f"--grad-tol must be a finite number > 0, got {args.grad_tol}")


def check_dtype(dtype: str) -> None:
    """``--dtype`` float64 or float32."""
    check_choice(dtype, ("float64", "float32"), "--dtype")


def train_config(args: argparse.Namespace, optimizer: str = "gd"):
    """The TrainConfig of ``--grad-tol`` / ``--max-steps`` with ``optimizer``."""
    from attnphase.validation.training import TrainConfig

    return TrainConfig(optimizer=optimizer, grad_tol=args.grad_tol, max_steps=args.max_steps)


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable; the physical memory where /proc is absent)."""
    with contextlib.suppress(OSError), open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _bytes(n: float) -> str:
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def check_memory(d: int, alpha: float, L: int, n_test: int, dtype: str) -> None:
    """The data of one simulation fit in memory: (n + n_test) x L x d numbers, twice (data and one
    working copy of the same size in the loss and its gradient).  ValueError with both numbers."""
    n = max(1, sample_count(alpha, d))
    need = 2 * (n + n_test) * L * d * (4 if dtype == "float32" else 8)
    have = available_memory()
    if need > have:
        raise ValueError(f"--d {d}: one simulation needs about {_bytes(need)} (n = alpha d = {n:.3g} training and "
                         f"{n_test} test samples x L = {L} tokens x d numbers, data plus one working copy), more than "
                         f"the {_bytes(have)} of memory available")


def check_samples(alpha: float, d: int) -> None:
    """``n = round(alpha d)`` training samples (halves up, :func:`~attnphase.validation.samples.sample_count`, as
    the training set is drawn), at least one (else a ValueError naming --alpha and --d); an effective alpha n/d that
    differs from ``alpha`` is said on stderr."""
    n = sample_count(alpha, d)
    if n < 1:
        raise ValueError(f"--alpha {alpha:g} --d {d}: n = round(alpha d) = round({alpha * d:.3g}) = 0 training "
                         f"samples; need alpha d >= 0.5 (raise --alpha or --d)")
    if abs(n - alpha * d) > 1e-9 * alpha * d:
        print(f"attnphase: warning: n = round(alpha d) = {n} training samples: the effective alpha = n/d = "
              f"{n / d:.6g}, not --alpha {alpha:g}", file=sys.stderr)


def warn_rounded_alphas(pairs: Sequence[tuple[float, int]], compared: str = "the theory") -> None:
    """Say on stderr, once, the (alpha, d) of a plan whose training sets hold n = round(alpha d) samples with n / d
    not alpha, each with its effective alpha: their runs are compared with ``compared`` at the nominal alpha."""
    off = sorted({(a, d) for a, d in pairs if abs(sample_count(a, d) - a * d) > 1e-9 * a * d},
                 key=lambda x: (x[1], x[0]))
    if off:
        shown = ", ".join(f"alpha {a:g} at d = {d}: n/d = {sample_count(a, d) / d:.4g}" for a, d in off[:6])
        more = f" and {len(off) - 6} more" if len(off) > 6 else ""
        print(f"attnphase: warning: n = round(alpha d) training samples make the effective alpha = n/d differ from "
              f"the nominal one ({shown}{more}); these runs are compared with {compared} at the nominal alpha",
              file=sys.stderr)


def check_plan_samples(smallest_alpha: float, d: int) -> None:
    """A plan's smallest alpha at ``--d d`` has at least one training sample (n = round(alpha d)); else a
    ValueError naming --d and the smallest d that works."""
    if sample_count(smallest_alpha, d) < 1:
        need = smallest_dimension(smallest_alpha)
        raise ValueError(f"--d {d}: the plan's smallest alpha {smallest_alpha:g} has n = round(alpha d) = 0 training "
                         f"samples; need --d >= {need}")


def check_ranks_fit(params, d: int) -> None:
    """``L``, the student rank ``r`` and the teacher rank ``r*`` each at most ``d`` (``Q*`` has ``r*``
    orthogonal columns, ``Q`` starts from ``r`` columns): a one-line ValueError naming the option."""
    for option, value, what in (("--L", params.L, "L"), ("--rank", params.r, "student rank r"),
                                ("--teacher-rank", params.r_star, "teacher rank r*")):
        if value > d:
            raise ValueError(f"--d {d} (embedding dimension) must be >= {what} = {value} ({option} {value})")


def check_device(spec: str) -> None:
    """``--device`` ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` that this machine has; else a ValueError."""
    import torch

    s = str(spec).strip().lower()
    if s in ("auto", "cpu"):
        return
    if s == "cuda" or (s.startswith("cuda:") and s[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(f"--device {spec}: CUDA is not available on this machine (use --device cpu or auto)")
        if ":" in s and int(s[5:]) >= torch.cuda.device_count():
            raise ValueError(f"--device {spec}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        return
    raise ValueError(f"--device must be auto, cpu, cuda or cuda:N, got {spec!r}")

