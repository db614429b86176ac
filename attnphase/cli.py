"""The ``attnphase`` console command.

Each layer contributes its subcommands through a ``register(subparsers)``
function in its own ``cli`` module; those modules import nothing heavy at
module level (no torch, no sympy), so ``attnphase --help`` and the numerics
subcommands start quickly and never import torch.

Errors: a ``ValueError`` raised by a subcommand (bad parameters) is printed as
one line ``attnphase: error: ...`` and the exit code is 2, with no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that register subcommands, in help order.
_COMMAND_MODULES = (
    "attnphase.theory.cli",
    "attnphase.numerics.cli",
    "attnphase.validation.cli",
    "attnphase.validation.check_cli",
    "attnphase.validation.histogram.cli",
)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = _Parser(
        prog="attnphase",
        description="The solvable model of dot-product attention (Cui, Behrens, Krzakala, Zdeborova 2024): "
        "symbolic derivation, state evolution and phase diagram, and gradient descent at finite d.",
    )
    from attnphase import __version__

    parser.add_argument("--version", action="version", version=f"attnphase {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the chosen subcommand; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        print(f"attnphase: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attnphase: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
