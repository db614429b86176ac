"""``attnphase histogram``: train the positional, semantic and unrestricted models and report.

Imports nothing heavy at module level; torch is imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_OUT = Path("results/histogram")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``histogram`` subcommand to the top-level parser."""
    parser = subparsers.add_parser(
        "histogram",
        help="the paper's histogram task: positional vs semantic attention",
        description=(
            "Train the single-layer transformer of the histogram task with its attention "
            "restricted to the positional half, the semantic half, or both; score and plot "
            "the attention; embed the restricted models in the unrestricted one and retrain."
        ),
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="10 000 samples and 20 epochs instead of the paper's 50 000 and 200",
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT,
        help=f"output directory (default: {DEFAULT_OUT})",
    )
    parser.add_argument("--seed", type=int, default=0, help="master seed (default: 0)")
    parser.add_argument(
        "--device", default="auto",
        help="auto (cuda when available, else cpu), cpu, cuda or cuda:N (default: auto)",
    )
    parser.add_argument(
        "--threads", type=int, default=1,
        help="CPU threads for torch (default: 1; the model is too small to gain from more)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the experiment described by ``args`` and write the report; returns 0.

    Raises:
        ValueError: for a negative seed, a bad device, a thread count below 1,
            or an output path that is an existing file.
    """
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")

    import torch

    from attnphase.validation.histogram.experiment import HistogramConfig, run_experiment
    from attnphase.validation.histogram.report import write_report
    from attnphase.validation.histogram.train import resolve_device

    device = resolve_device(args.device)
    torch.set_num_threads(args.threads)
    config = HistogramConfig.quick() if args.quick else HistogramConfig.paper()
    result = run_experiment(config, args.seed, device, progress=not args.no_progress)
    written = write_report(result, out)
    for name, v in result.variants.items():
        print(f"{name:>20}: val_acc {v.val_acc:.4f}  score {v.score.score:+.3f}")
    print(f"majority baseline {result.majority_acc:.4f}; wrote {len(written)} files to {out}")
    return 0
