"""The project's text speaks to its users: no issue numbers, no history of its own making.

Every tracked text file (``git ls-files``; the datasets under docs/data and binary files excepted)
is scanned for:

* issue references: the word issue followed by a number, or a number after a hash sign in prose
  (not hex colours, not ``# noqa``);
* the history of the work: which sitting or stage of the work measured what, a commit hash;
* dated measurements and load averages;
* files outside the project: the two design files of the team and the folder they live in.

(The planted examples below are assembled from pieces, so that this file passes its own scan.)

A measurement belongs in the docs as a result with the command that re-measures it; the code says
what it computes.  The matcher itself is tested on planted examples, so the scan cannot pass by
matching nothing.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Folders whose files are data, not the project's prose.
SKIPPED_PREFIXES = ("docs/data/",)

# The names are assembled so that this file does not mention them itself.
_OUTSIDE = "|".join(re.escape(n) for n in (
    "MODEL" + ".md", "STYLE" + ".md", "shared" + "/spec", "../" + "shared" + "/", "`" + "shared" + "/"))

#: (name, compiled pattern): each match is a finding.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("issue number", re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)),
    # '#' and digits standing alone: not a hex colour ('#1f77b4', '#333333'), not an HTML entity, not a '# comment'
    ("issue number", re.compile(r"(?<![\w&#\"'])#\d{1,4}(?![\w;\"'])")),
    # a sitting of work, under its own name (spelled in pieces so that this file passes its own scan)
    ("history", re.compile(r"\bsess" r"ions?\b", re.IGNORECASE)),
    ("history", re.compile(r"\b(?:this|that|last|previous|earlier|next|one)\s+round\b(?![-\s]*(?:off|trip))"
                           r"|\brounds?\s+(?:ago|of\s+work|of\s+changes)\b", re.IGNORECASE)),
    ("history", re.compile(r"\b(?:commit|revision)\s+[0-9a-f]{7,40}\b")),
    ("dated measurement", re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")),
    ("load average", re.compile(r"\bload(?:\s+averages?)?(?:\s+(?:of\s+|about\s+)?|\s*~\s*)\d", re.IGNORECASE)),
    ("file outside the project", re.compile(_OUTSIDE)),
)


def findings(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind, matched text) for every history or issue mention in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in PATTERNS:
            for match in pattern.finditer(line):
                found.append((number, kind, match.group(0)))
    return found


def _tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = listed.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        # not a git checkout (an unpacked source archive): every file but the ignored kinds of folder
        ignored = {".git", ".venv", "__pycache__", ".hypothesis", ".pytest_cache", "results", "build", "dist"}
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not ignored & set(p.relative_to(ROOT).parts)
                 and not any(part.endswith(".egg-info") for part in p.parts)]
    paths = []
    for name in names:
        if not name or name.startswith(SKIPPED_PREFIXES):
            continue
        path = ROOT / name
        if path.is_file():
            paths.append(path)
    return paths


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


_ISSUE, _SESSION, _ROUND, _LOAD = "iss" + "ue", "sess" + "ion", "rou" + "nd", "lo" + "ad"


@pytest.mark.parametrize("planted, kind", [
    ("fixed in " + _ISSUE + " 17", "issue number"),
    ("see " + _ISSUE.title() + " #" + "27 for the plan", "issue number"),
    ("(" + _ISSUE + "s 12, 13)", "issue number"),
    ("the stall of " + "#" + "12 is gone", "issue number"),
    ("measured in the seventh " + _SESSION, "history"),
    ("Since this " + _SESSION + " it has that definition", "history"),
    ("two " + _ROUND + "s ago it took 2 min", "history"),
    ("until this " + _ROUND + " the trace stopped", "history"),
    ("main before this change (commit " + "6cc0d02)", "history"),
    ("the diagram against revision " + "af68160 took 143 CPU-s", "history"),
    ("Measured " + "2026-" + "11-30 on two cores", "dated measurement"),
    ("42 s at " + _LOAD + " average 7", "load average"),
    ("3 min 53 s wall at " + _LOAD + " ~2", "load average"),
    ("(" + _LOAD + " 8-10 from another job)", "load average"),
    ("as " + "MODEL" + ".md states", "file outside the project"),
    ("the anchors in ../" + "shared/" + "STYLE" + ".md", "file outside the project"),
])
def test_the_matcher_finds_a_planted_mention(planted, kind):
    assert kind in [k for _, k, _ in findings("a first line\n" + planted + "\n")]


@pytest.mark.parametrize("legitimate", [
    'colors = ["#1f77b4", "#ff7f0e", "#333", "#2ca02c"]',
    "x = f(y)  # noqa: E501",
    "## 3. State-evolution equations",
    "round-off bound 2 n_ops u; the round trip through netCDF",
    "docs/model.md section 7; sobol12:4, gh16, 2^16 points",
    "print(f\"load average {os.getloadavg()[0]:.2f}\")",
    "the time of each task (its wall seconds) and the machine's load",
    "tasks keyed by a hash of the model and the code version",
])
def test_the_matcher_leaves_legitimate_text_alone(legitimate):
    assert findings(legitimate) == []


def test_no_tracked_file_names_issues_or_the_history_of_its_making():
    report = []
    for path in _tracked_text_files():
        text = _text(path)
        if text is None:
            continue
        for number, kind, match in findings(text):
            report.append(f"{path.relative_to(ROOT)}:{number}: {kind}: {match!r}")
    assert not report, "history or issue mentions (say what the code or the measurement is):\n" + "\n".join(report)
