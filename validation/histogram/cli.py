"""What ``attnphase histogram`` does: train the positional, semantic and unrestricted models and report.

The options are defined in :mod:`attnphase.cli`. Imports nothing heavy at module level;
torch is imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json

from attnphase import options as opt


def run(args: argparse.Namespace) -> int:
    """Run the experiment described by ``args`` and write the report into ``--out DIR``; returns 0.

    Raises:
        ValueError: for a negative seed, a bad device, a thread count below 1,
            or an output path that is an existing file.
    """
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    out = opt.out_dir_from_args(args)
    from attnphase.validation.cli import check_device

    check_device(args.device)

    import contextlib
    import sys

    import torch

    from attnphase.validation.histogram.experiment import HistogramConfig, run_experiment
    from attnphase.validation.histogram.report import summary, write_report
    from attnphase.validation.histogram.train import resolve_device

    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    config = HistogramConfig.quick() if args.quick else HistogramConfig.paper()
    result = run_experiment(config, args.seed, device, progress=not args.quiet)
    with opt.staged_output(out) as stage:  # all files or none
        with contextlib.redirect_stdout(opt.Rewriting(sys.stdout, {str(stage): str(out)})):
            written = write_report(result, stage)
    lines = [f"{name:>20}: val_acc {v.val_acc:.4f}  score {v.score.score:+.3f}" for name, v in result.variants.items()]
    lines.append(f"majority baseline {result.majority_acc:.4f}; wrote {len(written)} files to {out}")
    if args.json:
        print(json.dumps(opt.json_value(summary(result) | {"out": str(out)})))
    else:
        print("\n".join(lines))
    return 0
