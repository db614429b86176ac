"""What ``attnphase histogram`` does: train the positional, semantic and unrestricted models and report.

The options are defined in :mod:`attnphase.cli`. Imports nothing heavy at module level;
torch is imported inside :func:`run`.  The variants are tasks of the execution layer
(:mod:`attnphase.validation.histogram.jobs`; ``--workers``, ``--scheduler``, ``--fresh``), kept
under ``--out DIR/tasks``: a rerun reads the finished ones back.
"""

from __future__ import annotations

import argparse
import json
import sys

from attnphase import execution_options
from attnphase import outputs, work


def _announce(config, workers: int, quiet: bool) -> None:
    """The two stages' tasks and their time (attnphase.workload: CPU seconds per training sample and epoch)."""
    from attnphase import workload

    per = workload.HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH * config.n_samples
    train = [per * config.epochs] * len(config.variants)
    reparam = [per * config.reparam_epochs] * sum(v != "both" for v in config.variants)
    t = workload.wall_seconds(train, workers) + workload.wall_seconds(reparam, workers)
    if not quiet:
        print(f"attnphase: histogram: {len(train)} trainings ({config.n_samples} samples x {config.epochs} epochs) "
              f"then {len(reparam)} re-parameterisations, about {workload.format_duration(t)} on {workers} worker"
              f"{'s' if workers != 1 else ''} (~{per * config.epochs:.0f} CPU s per training, from measured CPU times: "
              f"a busy or slower machine takes longer)", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the experiment described by ``args`` and write the report and ``histogram.nc`` into
    ``--out DIR``; returns 0, or 1 when a task failed (then nothing is written but the finished
    tasks' files under ``DIR/tasks``).

    Raises:
        ValueError: for a negative seed, a bad device, a thread count below 1, a bad
            ``--workers`` or ``--scheduler``, or an output path that is an existing file.
    """
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    executor = execution_options.executor_from_args(args)
    out = outputs.out_dir_from_args(args)
    from attnphase.validation.cli import check_device

    check_device(args.device)

    import contextlib
    import time

    import torch

    from attnphase.execution import ResultStore
    from attnphase.execution.dataset import write_netcdf
    from attnphase.numerics.commands.common import TASKS_FOLDER, command_line
    from attnphase.validation.histogram.dataset import histogram_attrs, histogram_dataset
    from attnphase.validation.histogram.experiment import HistogramConfig
    from attnphase.validation.histogram.jobs import run_histogram
    from attnphase.validation.histogram.report import summary, write_report
    from attnphase.validation.histogram.train import resolve_device

    work.begin("running the histogram experiment")
    t0 = time.perf_counter()
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)  # the tasks run in this process with --workers 1 (Dask workers: one thread each)
    config = HistogramConfig.quick() if args.quick else HistogramConfig.paper()
    _announce(config, executor.workers, args.quiet)
    done = run_histogram(config, args.seed, device, executor=executor, store=ResultStore(out / TASKS_FOLDER),
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
    with outputs.staged_output(out, job="histogram", model={"quick": bool(args.quick), "seed": args.seed}) as stage:  # all files or none
        with contextlib.redirect_stdout(outputs.Rewriting(sys.stdout, {str(stage): str(out)})):
            written = write_report(result, stage)
        attrs = histogram_attrs(result, done.version, command_line())
        write_netcdf(histogram_dataset(result, status, attrs), stage / "histogram.nc")
    if args.json:
        print(json.dumps(outputs.json_value(summary(result) | {"out": str(out), "tasks": c})))
    else:
        print("\n".join(f"{name:>20}: val_acc {v.val_acc:.4f}  score {v.score.score:+.3f}"
                        for name, v in result.variants.items()))
        print(f"majority baseline {result.majority_acc:.4f}")
    print(f"wrote {len(written) + 1} files to {out}: report.md, summary.json, histogram.nc, curves and attention maps "
          f"({time.perf_counter() - t0:.1f} s; {tasks})", file=sys.stderr)
    return 0
