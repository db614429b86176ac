"""``attnphase histogram``: the paper's histogram task -- positional versus semantic attention (docs/model.md
section 8; docs/histogram.md).  Each training is a task of the execution layer
(:mod:`attnphase.validation.histogram.jobs`) kept under ``--out DIR/tasks``; the files (all or none):
docs/reference/outputs.md.  torch is imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from attnphase import execution_options
from attnphase import outputs, work
from attnphase.validation.commands.finite_d_options import check_device, check_threads, check_threads_apply

NAME = "histogram"
HELP = "the paper's histogram task: positional vs semantic attention (docs/model.md section 8)"
DESCRIPTION = ("Train the single-layer transformer of the histogram task with its attention restricted to the "
               "positional half, the semantic half, or both; score and plot the attention; embed the restricted models "
               "in the unrestricted one and retrain. Each training is a task (--workers, --scheduler), kept in DIR/tasks: "
               "a rerun reads the finished ones back. Exit code 1 if a task failed (then no report is written).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--quick``, ``--seed``, the torch group (``--device``, ``--threads``), the outputs and the workers."""
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


def _announce(config, workers: int, quiet: bool) -> None:
    """The two stages' tasks and their time (attnphase.workload: CPU seconds per training sample and epoch)."""
    from attnphase import workload

    train, reparam = workload.histogram_seconds(config.n_samples, config.epochs, config.reparam_epochs,
                                                len(config.variants), sum(v != "both" for v in config.variants))
    own = workload.HISTOGRAM_COMMAND_SECONDS
    capped = " (one per task)" if workers > len(train) else ""
    workers = max(1, min(workers, len(train)))  # a run of tasks starts no more workers than it has tasks
    stages = [workload.wall_seconds(train, workers), workload.wall_seconds(reparam, workers)]
    t = sum(stages) + own
    # each stage is a run of tasks: on several workers, a local cluster of its own
    cpu = (sum(train) + sum(reparam) + own + workload.cluster_seconds(min(workers, len(train)), stages[0])
           + workload.cluster_seconds(min(workers, len(reparam)), stages[1]))
    if not quiet:
        print(f"attnphase: histogram: {len(train)} trainings ({config.n_samples} samples x {config.epochs} epochs) "
              f"then {len(reparam)} re-parameterisations, about {workload.format_duration(t)} on {workers} worker"
              f"{'s' if workers != 1 else ''}{capped} ({workload.cpu_phrase(cpu)} in all, "
              f"~{train[0]:.0f} CPU s per training; from CPU times measured by benchmarks/workload_calibration.py: "
              f"a busy or slower machine takes longer)", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """The experiment of ``args``, its report and ``histogram.nc`` into ``--out DIR``; returns 0, or 1 when a task
    failed (then only the finished tasks' files are written).  ValueError for a bad option."""
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    check_threads(args.threads)
    executor = execution_options.executor_from_args(args)
    check_threads_apply(args, executor, 1)
    out = outputs.out_dir_from_args(args)
    check_device(args.device)

    import torch

    from attnphase.execution.dataset import write_netcdf
    from attnphase.numerics.commands.common import TASKS_FOLDER, command_line, staged_job, task_store
    from attnphase.validation.histogram.dataset import histogram_attrs, histogram_dataset
    from attnphase.validation.histogram.experiment import HistogramConfig
    from attnphase.validation.histogram.jobs import run_histogram
    from attnphase.validation.histogram.report import ERROR_NOTE, params, summary, write_report
    from attnphase.validation.experiments import resolve_device

    work.begin("running the histogram experiment")
    t0 = time.perf_counter()
    device = resolve_device(args.device.strip().lower())  # a spec check_device accepted
    torch.set_num_threads(args.threads)  # the tasks run in this process with --workers 1 (Dask workers: one thread each)
    config = HistogramConfig.quick() if args.quick else HistogramConfig.paper()
    _announce(config, executor.workers, args.quiet)
    done = run_histogram(config, args.seed, device, executor=executor, store=task_store(out),
                         fresh=args.fresh, quiet=args.quiet)
    c = done.counts
    tasks = f"tasks: {c['computed']} computed, {c['stored']} from the store, {c['failed']} failed"
    result = done.result
    if result is None:
        print(f"attnphase: {done.failures}", file=sys.stderr)
        print(f"wrote no report to {out} ({tasks}; the finished tasks are in {out / TASKS_FOLDER}: a rerun "
              f"computes the rest)", file=sys.stderr)
        if args.json:
            print(json.dumps({"tasks": c | {"failures": done.failures}, "out": str(out)}))
        return 1
    status = {o.label: o.status for o in done.outcomes}
    with staged_job(out, "histogram", {"quick": bool(args.quick), "seed": args.seed}, args.json) as stage:  # all files or none
        written = write_report(result, stage)
        attrs = histogram_attrs(result, done.version, command_line())
        write_netcdf(histogram_dataset(result, status, attrs), stage / "histogram.nc")
    if args.json:
        print(json.dumps(outputs.json_value(summary(result) | {"params": params(result), "error_note": ERROR_NOTE,
                                                               "out": str(out), "tasks": c})))
    else:
        print("\n".join(f"{name:>20}: val_acc {v.val_acc:.4f}  score {v.score.score:+.3f}"
                        for name, v in result.variants.items()))
        print(f"majority baseline {result.majority_acc:.4f}")
    print(f"attnphase: note: {ERROR_NOTE}", file=sys.stderr)  # as simulate says it, in every mode
    print(f"wrote {len(written) + 1} files to {out}: report.md, summary.json, histogram.nc, curves and attention maps "
          f"({time.perf_counter() - t0:.1f} s; {tasks})", file=sys.stderr)
    return 0
