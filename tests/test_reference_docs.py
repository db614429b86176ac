"""The reference pages match the code: commands and API generated and up to date, every output
column documented, every link between the docs pointing at a page (and a heading) that exists, every command
the docs write parsing with the current options."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("docs_reference_generate", DOCS / "reference" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["commands.md", "api.md"])
def test_generated_reference_is_up_to_date(page):
    """Run ``python docs/reference/generate.py`` when this fails, and commit what it writes."""
    text = _generator().PAGES[page]()
    assert (DOCS / "reference" / page).read_text() == text, f"docs/reference/{page} is out of date"


def test_every_command_and_option_is_in_the_command_reference():
    from attnphase.cli import build_parser, command_names
    import argparse

    text = (DOCS / "reference" / "commands.md").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name in command_names():
        assert f"## attnphase {name}" in text
        for action in sub.choices[name]._actions:
            for flag in action.option_strings:
                assert flag in text, (name, flag)


def _documented_names() -> set[str]:
    """Every `name` written in code style in docs/reference/outputs.md."""
    return set(re.findall(r"`([A-Za-z_<][\w<>]*)`", (DOCS / "reference" / "outputs.md").read_text()))


def test_every_solve_key_is_documented():
    proc = subprocess.run([sys.executable, "-m", "attnphase", "solve", "--alpha", "2", "--omega", "0.3",
                           "--branch", "semantic", "--quadrature", "sobol8:4", "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    missing = sorted(set(record) - _documented_names())
    assert not missing, f"solve --json keys not in docs/reference/outputs.md: {missing}"


def test_every_amp_key_is_documented():
    """``simulate --algorithm amp --json``'s keys (the model's aside, documented with solve's), AMP's overlap named
    theta as in every other record (m is the positional overlap)."""
    from attnphase.validation.amp_run import AMP_JSON_KEYS

    assert "theta" in AMP_JSON_KEYS and "m" not in AMP_JSON_KEYS
    missing = sorted(set(AMP_JSON_KEYS) - _documented_names())
    assert not missing, f"simulate --algorithm amp --json keys not in docs/reference/outputs.md: {missing}"


def test_every_phase_diagram_column_is_documented():
    """The columns of phase_diagram.csv at every rank, as the job writes them (the golden record holds those of the
    day it was recorded: semantic_end_exists came later and was missing from the page)."""
    from attnphase.numerics.jobs.boundary_table import csv_columns

    columns = dict.fromkeys(csv_columns(1, True) + csv_columns(2, True))
    names = _documented_names()
    missing = [c for c in columns if c not in names and not (
        (c.startswith("err_") or c.endswith("_found")) and {"err_<boundary>", "<boundary>_found"} <= names)]
    assert not missing, f"phase_diagram.csv columns not in docs/reference/outputs.md: {missing}"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "data" not in p.relative_to(DOCS).parts)


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_between_pages_resolve(page):
    broken = []
    for target in _LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(target)
            continue
        if anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+\s+(.*)$", dest.read_text(), flags=re.MULTILINE)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links to missing pages or headings: {broken}"


#: Placeholders the docs write in a command line, and a value of theirs to parse.
_PLACEHOLDERS = {"A": "1", "W": "0.3", "R": "2", "R*": "1", "r": "2", "r*": "1", "L": "3", "B": "semantic",
                 "D": "200", "K": "4", "T": "fast", "N": "2", "DIR": "out", "ADDRESS": "tcp://host:8786",
                 "C": "0.25,0.075;0.075,0.25", "...": None}
_CODE_LINE = re.compile(r"^(?: {4,}|\s*\$\s+)(?:\$\s+)?attnphase\s+(.*)$")
_INLINE = re.compile(r"`attnphase\s+([^`]+)`")


def _doc_commands() -> list[tuple[str, str, bool]]:
    """(page, command line, whole) for every `attnphase ...` the guides write (the generated pages aside):
    whole for a command in a code block, not for one quoted in prose (which may leave out required options)."""
    pages = [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md")
                                          if "data" not in p.relative_to(DOCS).parts
                                          and p.name not in ("commands.md", "derivation.md"))
    found = []
    for page in pages:
        for line in page.read_text().splitlines():
            match = _CODE_LINE.match(line)
            if match:
                found.append((str(page.relative_to(ROOT)), match.group(1), True))
            else:
                found += [(str(page.relative_to(ROOT)), cmd, False) for cmd in _INLINE.findall(line)]
    return found


def test_every_command_in_the_docs_parses():
    """Every `attnphase ...` in the README and the docs uses the current commands and options: a command line
    in a code block parses (placeholders such as DIR or R* replaced by a value); one quoted in prose names a
    command and only options of that command."""
    import argparse
    import shlex
    from attnphase.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bad = []
    commands = _doc_commands()
    assert len(commands) > 50
    for page, line, whole in commands:
        argv = [_PLACEHOLDERS.get(a, a) for a in shlex.split(line, comments=True)]
        if None in argv or not argv or {"-h", "--help", "--version"} & set(argv):
            continue
        if not whole:
            options = {f for a in sub.choices[argv[0]]._actions for f in a.option_strings} if argv[0] in sub.choices else None
            if options is None or any(a.startswith("--") and a.split("=")[0] not in options for a in argv[1:]):
                bad.append(f"{page}: `attnphase {line}`")
            continue
        try:
            parser.parse_args(argv)
        except SystemExit:
            bad.append(f"{page}: attnphase {line}")
    assert not bad, "commands that do not parse:\n" + "\n".join(bad)
