"""The ``attnphase`` console command: the parser of every command and the one ``main``.

A command is one module of the shape docs/architecture.md describes ("How a command is defined"), listed in
:data:`COMMANDS` in help order. Building the parser imports nothing heavy. Bad input is one line
``attnphase: error: ...`` on stderr and exit code 2; a result that did not converge exits with 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
from collections.abc import Sequence
from types import ModuleType

from attnphase import __version__, options, outputs, work

#: The command modules, in help order.
COMMANDS = ("attnphase.theory.commands.derive", "attnphase.numerics.commands.solve",
            "attnphase.numerics.commands.sweep", "attnphase.numerics.commands.phase_diagram",
            "attnphase.numerics.commands.census", "attnphase.validation.commands.simulate",
            "attnphase.validation.commands.validate", "attnphase.validation.commands.check",
            "attnphase.validation.commands.histogram", "attnphase.numerics.commands.scan",
            "attnphase.execution.commands.show")

#: An argument that starts with "-" and then a digit, ".digit", "inf" or "nan" is a value, never an option
#: (``--alpha -1:2:3``, ``--lam -0.1``, ``--omega -1e-3``, ``--omega -inf``): no option of attnphase looks like that.
_NEGATIVE_VALUE = re.compile(r"^-(\.?\d|inf|nan)", re.IGNORECASE)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2, which takes negative values and never
    abbreviates long options (a new option cannot break a command line that worked)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_VALUE

    def parse_known_args(self, args=None, namespace=None):  # noqa: D401 - argparse API
        """argparse's, after a one-line error where an option that takes a value is given twice (``--alpha 2 --alpha
        3``; argparse would keep the last one silently); a flag given twice means the same as once.  The namespace
        records the options on the command line (:data:`~attnphase.options.GIVEN_OPTIONS`, every spelling of each):
        an option given at its default value is given (:func:`~attnphase.options.option_given`)."""
        tokens = [] if args is None else list(args)
        seen: dict[str, str] = {}
        given: set[str] = set()
        for i, tok in enumerate(tokens):
            if tok == "--":
                break
            if not tok.startswith("-") or self._negative_number_matcher.match(tok):
                continue
            name, eq, inline = tok.partition("=")
            action = self._option_string_actions.get(name)
            if action is None and not tok.startswith("--") and len(tok) > 2:  # a short option with its value attached
                name, eq, inline = tok[:2], "=", tok[2:]
                action = self._option_string_actions.get(name)
            if action is None:
                continue
            given.update(action.option_strings)
            if action.nargs == 0:
                continue
            value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            if action.dest in seen:
                self.error(f"{name} is given twice ({seen[action.dest]!r} and {value!r}): give each option once")
            seen[action.dest] = value
        ns, extras = super().parse_known_args(args, namespace)
        # a command's parser records its options first; the top-level parser adds its own
        setattr(ns, options.GIVEN_OPTIONS, frozenset(given) | getattr(ns, options.GIVEN_OPTIONS, frozenset()))
        return ns, extras

    def error(self, message: str) -> None:  # noqa: D401 - argparse API
        """One line, the same prefix as every other error: ``attnphase: error: ... (see PROG --help)``; argparse's
        ``argument --lam: invalid float value`` as ``--lam: invalid float value``, as the tool's own errors name
        the option."""
        message = re.sub(r"^argument (-[\w-]+)(?:/-[\w-]+)*: ", r"\1: ", " ".join(message.split()))
        self.exit(2, f"attnphase: error: {message} (see {self.prog} --help)\n")


def command_modules() -> list[ModuleType]:
    """The command modules of :data:`COMMANDS`, imported (each imports nothing heavy at its top)."""
    return [importlib.import_module(name) for name in COMMANDS]


def command_names() -> list[str]:
    """The commands' names, in help order."""
    return [m.NAME for m in command_modules()]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command of :data:`COMMANDS`."""
    parser = _Parser(
        prog="attnphase",
        description="The solvable model of dot-product attention (Cui, Behrens, Krzakala, Zdeborova 2024): "
        "symbolic derivation, state evolution and phase diagram, and gradient descent at finite d.",
        epilog="Every command: numeric lists are NUMBER, a,b,c or START:STOP:NUM; --json prints one JSON object; "
        "--quiet hides progress bars; --out DIR is always a folder; bad input is a one-line error (exit code 2). "
        "The model: docs/model.md.",
    )
    parser.add_argument("--version", action="version", version=f"attnphase {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)
    parser.command_parsers = {}  # NAME -> its parser: an unknown option is reported by the command's parser
    for command in command_modules():
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.DESCRIPTION)
        command.add_arguments(p)
        if not any("--quiet" in a.option_strings for a in p._actions):  # every command takes --quiet
            outputs.add_quiet_option(p)
        p.set_defaults(func=command.run)
        parser.command_parsers[command.NAME] = p
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the chosen subcommand; returns the exit code."""
    from attnphase.execution.executor import THREAD_ENV

    for name, value in THREAD_ENV.items():  # before any command imports numba
        os.environ.setdefault(name, value)
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the command's parser: `see attnphase solve --help`, where the command's options are
        parser.command_parsers[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    from attnphase.theory.codegen import cache_dir_error

    if problem := cache_dir_error():  # else every run would generate and compile its kernels again, silently
        print(f"attnphase: error: {problem}", file=sys.stderr)
        return 2
    from attnphase.interrupts import Terminated, handling_termination, recorded, stop_since, stopped

    mark = recorded()  # a signal after this, then an error: the error is what a library made of the stop
    work.reset(mark)
    try:
        with handling_termination(), work.warnings_as_notes():  # SIGTERM / SIGHUP: every cleanup runs, as on Ctrl-C
            code = args.func(args)
    except (outputs.JobFailed, ValueError, ArithmeticError) as exc:
        if stop_since(mark) is not None:
            return stopped(stop_since(mark))
        what = work.current()
        # a job that failed, or an error raised by the computation after every check passed: not bad input
        if isinstance(exc, outputs.JobFailed) or (what is not None and not getattr(exc, "input_error", False)):
            message = work.failure_message(what or "writing the outputs", exc)
            print(message, file=sys.stderr)
            if getattr(args, "json", False):  # --json's one object, for a pipeline that reads stdout
                print(json.dumps({"error": message.removeprefix("attnphase: "), "exit_code": 1}))
            return 1
        if not isinstance(exc, ValueError):
            raise
        print(f"attnphase: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        return stopped(exc)
    except BrokenPipeError:  # the reader of stdout went away (attnphase ... | head): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    if stop_since(mark) is not None:  # a stop a library swallowed while the command ran: the run was stopped
        return stopped(stop_since(mark))
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
