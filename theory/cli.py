"""The ``attnphase derive`` subcommand: print every equation of the theory.

    attnphase derive --L 2              # pretty-printed (unicode) for a terminal
    attnphase derive --L 2 --latex      # raw LaTeX
    attnphase derive --L 2 --markdown   # the markdown document (docs/derivation.md)

Model parameters (--sigma, --omega, --A, --P, --lam, --rho0) are validated by
:class:`~attnphase.theory.params.ModelParams`; a bad value raises ValueError
naming the parameter. Nothing heavy is imported at module level.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _floats(text: str) -> tuple[float, ...] | float:
    try:
        vals = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    return vals[0] if len(vals) == 1 else vals


def register(subparsers: Any) -> None:
    """Add the ``derive`` subcommand to the top-level CLI."""
    p = subparsers.add_parser(
        "derive",
        help="print every equation of the model (sympy), for a terminal, as LaTeX or as markdown",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("--L", type=int, default=2, help="sequence length L >= 2 (default 2)")
    p.add_argument("--sigma", type=_floats, default=None, help="token std sigma, scalar or comma-separated per token")
    p.add_argument("--omega", type=float, default=0.3, help="teacher mixing weight omega in [0, 1]")
    p.add_argument("--A", default=None, help='positional teacher matrix, rows separated by ";", e.g. "0.6,0.4;0.4,0.6"')
    p.add_argument("--P", default=None, help='positional Gram matrix, e.g. "1,-1;-1,1"')
    p.add_argument("--lam", type=float, default=0.01, help="ridge penalty lambda >= 0")
    p.add_argument("--rho0", type=float, default=1.0, help="teacher norm rho0 > 0")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--latex", action="store_true", help="print raw LaTeX")
    fmt.add_argument("--markdown", action="store_true", help="print the markdown document")
    p.add_argument("-o", "--output", default=None, help="write to this file instead of stdout")
    p.set_defaults(func=run_derive)


def run_derive(args: argparse.Namespace) -> int:
    """Build the ModelParams (ValueError on bad input), render, write; returns 0."""
    from attnphase.theory.params import ModelParams, parse_matrix

    params = ModelParams(
        L=args.L,
        sigma=args.sigma,
        omega=args.omega,
        A=None if args.A is None else parse_matrix(args.A),
        P=None if args.P is None else parse_matrix(args.P),
        lam=args.lam,
        rho0=args.rho0,
    )
    from attnphase.theory import latex

    if args.markdown:
        text = latex.render_markdown(params)
    elif args.latex:
        text = latex.render_latex(params)
    else:
        text = latex.render_terminal(params)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0
