"""``attnphase derive``: print every equation of the theory for the given model, for a terminal, as LaTeX
(``--latex``), as the markdown document docs/derivation.md (``--markdown``) or as JSON, on stdout or to
``-o FILE``. sympy is imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys

from attnphase import options as opt
from attnphase import outputs, work

NAME = "derive"
HELP = "print every equation of the model (sympy), for a terminal, as LaTeX or as markdown"
DESCRIPTION = ("Print every equation of the theory, derived with sympy for the given L: pretty-printed for a "
               "terminal (default), as raw LaTeX (--latex) or as the markdown document docs/derivation.md "
               "(--markdown). The other model options are symbols in the equations and only label the output (check "
               "evaluates the equations at their values).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The model group, ``--latex`` / ``--markdown`` / ``--json`` and ``-o FILE``."""
    opt.add_model_options(p, command="derive")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--latex", action="store_true", help="print raw LaTeX")
    fmt.add_argument("--markdown", action="store_true", help="print the markdown document")
    fmt.add_argument("--json", action="store_true",
                     help="print one JSON object: the model and every equation (section, lhs, rhs as sympy text and as "
                          "LaTeX, note)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write the text to this file instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Build the ModelParams (ValueError on bad input), render, write; returns 0."""
    params = opt.params_from_args(args, omega=opt.single_omega(args, NAME))
    if args.output:
        outputs.check_out_file(args.output, "-o/--output")
    opt.announce_defaults(args, params)
    work.begin("deriving the equations")
    from attnphase.theory import latex

    render = latex.render_markdown if args.markdown else latex.render_latex if args.latex else latex.render_terminal
    text = json.dumps(latex.render_json(params)) + "\n" if args.json else render(params)
    if args.output:
        outputs.write_text_atomic(args.output, text, "-o/--output")
        print(f"wrote {outputs.shown_path(args.output)}", file=sys.stderr)  # as every command says its files
    else:
        sys.stdout.write(text)
    return 0
