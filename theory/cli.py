"""What ``attnphase derive`` does: print every equation of the theory.

    attnphase derive --L 2              # pretty-printed (unicode) for a terminal
    attnphase derive --L 2 --latex      # raw LaTeX
    attnphase derive --L 2 --markdown   # the markdown document (docs/derivation.md)

The options (the shared model group) are defined in :mod:`attnphase.cli`; the model is
built by :func:`attnphase.options.params_from_args` and validated by
:class:`~attnphase.theory.params.ModelParams` (a bad value raises ValueError naming the
parameter). Nothing heavy is imported at module level.
"""

from __future__ import annotations

import argparse
import sys

from attnphase import options as opt
from attnphase import outputs, work


def run_derive(args: argparse.Namespace) -> int:
    """Build the ModelParams (ValueError on bad input), render, write; returns 0."""
    params = opt.params_from_args(args, omega=opt.single_omega(args, "derive"))
    if args.output:
        outputs.check_out_file(args.output, "-o/--output")
    opt.announce_defaults(args, params)
    work.begin("deriving the equations")
    from attnphase.theory import latex

    if args.markdown:
        text = latex.render_markdown(params)
    elif args.latex:
        text = latex.render_latex(params)
    else:
        text = latex.render_terminal(params)
    if args.output:
        outputs.write_text_atomic(args.output, text, "-o/--output")
    else:
        sys.stdout.write(text)
    return 0
