"""Lines of the package's source at a reference commit and now, split by capability.

    python benchmarks/source_lines.py                  # against af68160, the working tree's files
    python benchmarks/source_lines.py --ref af68160 --at HEAD

The package's source is every ``.py`` file git knows under attnphase/, numerics/, theory/, validation/ and
execution/ (the working tree's: tracked and untracked but not ignored; or those of ``--at REV``).  Lines are
physical lines (``wc -l``), comments, docstrings and blank lines included.

The question it answers: did the code of the capabilities that existed at ``--ref`` shrink?  Files, not lines, are
classified: a file that implements only a capability that did not exist at the reference (:data:`NEW_CAPABILITIES`,
printed with its lines, so a reader can disagree) counts as new; every other file counts as old, including a file
that mixes an old capability with a new one (the conservative side: new code inside an old file counts against the
old capabilities).  A file named in :data:`NEW_CAPABILITIES` that existed at the reference is an error; one not at
``--at`` counts 0 lines, with a note.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The package's folders (pyproject.toml's package-dir).
PACKAGE = ("attnphase", "numerics", "theory", "validation", "execution")
REF = "af68160"

#: Capability that did not exist at the reference -> the files that implement it and nothing older.
NEW_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "the Bayes-optimal estimator (its state evolution, thresholds, commands, tables, figure, Nishimori check)": (
        "theory/channels/bayes_optimal.py", "theory/priors/gaussian.py",
        "numerics/se/bayes.py", "numerics/se/bayes_curve.py", "numerics/phase/bayes_thresholds.py",
        "numerics/jobs/bayes_dataset.py", "numerics/jobs/bayes_plots.py",
        "numerics/commands/bayes_optimal.py", "numerics/commands/bayes_options.py",
        "numerics/commands/bayes_phase_diagram.py",
        "validation/derivation_checks/nishimori_check.py",
    ),
    "AMP for the Bayes-optimal channel (simulate --algorithm amp, validate's Bayes-optimal section)": (
        "validation/amp.py", "validation/amp_run.py", "validation/amp_spectral.py", "validation/amp_validation.py",
    ),
    # af68160's cli.main caught KeyboardInterrupt alone (one line, exit 130); SIGTERM/SIGHUP, a Ctrl-C at start-up or
    # inside a library, and the workers' signals are the new capability.
    "signals: a stopped command's exit code and its one line": ("attnphase/interrupts.py",),
    "bad input told from a failed computation (exit 2 or 1), warnings as notes": ("attnphase/work.py",),
    # The rank-r boundaries of af68160 (numerics/rank_boundaries.py) followed branches by warm starts, bisected
    # their ends and took alpha_c as the root of Delta e_t: phase/census_continuation.py, branches.py,
    # global_minimum_changes.py and lowest_branch.py do that for every branch a census finds, so they mix an old
    # capability with a new one and count as old.  What did not exist is the rule's error on Delta e_t and its root:
    "the rule's separation of two branches' e_t and the standard error of alpha_c at rank r": (
        "numerics/phase/census_separation.py",),
    "a branch's absence told from solver failure": ("numerics/phase/absence.py",),
    "alpha_c at r = 1 where the branches never cross (the lowest-e_t point's first change)": (
        "numerics/phase/lowest_point_change.py",),
    "a second registered loss (the how-to's worked example)": ("theory/channels/scaled_square.py",),
}


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout


def source_files(rev: str | None) -> dict[str, int]:
    """Path -> lines of every package ``.py`` file at ``rev`` (None: the working tree)."""
    specs = [f"{d}/*.py" for d in PACKAGE]
    if rev is None:
        names = git("ls-files", "--cached", "--others", "--exclude-standard", "--", *specs).split()
        return {n: len((ROOT / n).read_bytes().splitlines()) for n in sorted(set(names)) if (ROOT / n).is_file()}
    names = git("ls-tree", "-r", "--name-only", rev, "--", *PACKAGE).split()
    return {n: len(git("show", f"{rev}:{n}").encode().splitlines()) for n in sorted(names) if n.endswith(".py")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default=REF, help=f"the reference commit (default {REF})")
    ap.add_argument("--at", default=None, help="the commit to count (default: the working tree)")
    args = ap.parse_args(argv)
    ref, now = source_files(args.ref), source_files(args.at)
    new_files = {f: cap for cap, files in NEW_CAPABILITIES.items() for f in files}
    errors = [f"{f}: listed as new but present at {args.ref}" for f in new_files if f in ref]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    at = args.at or "working tree"
    for f in [f for f in new_files if f not in now]:
        print(f"note: {f} (listed as new) is not at {at}: counted as 0 lines", file=sys.stderr)
        del new_files[f]
    ref_total, now_total = sum(ref.values()), sum(now.values())
    new_total = sum(now[f] for f in new_files)
    old_total = now_total - new_total
    print(f"package source lines ({', '.join(d + '/' for d in PACKAGE)} *.py)")
    print(f"  {args.ref:<14} {ref_total:>6} lines in {len(ref)} files")
    print(f"  {at:<14} {now_total:>6} lines in {len(now)} files ({now_total - ref_total:+d})")
    print(f"\nat {at}, by capability:")
    print(f"  capabilities new since {args.ref}: {new_total:>6} lines in {len(new_files)} files")
    print(f"  the rest (capabilities of {args.ref}, and files mixing them with new ones): {old_total:>6} lines in "
          f"{len(now) - len(new_files)} files, {old_total - ref_total:+d} against {args.ref}'s {ref_total} "
          f"({100.0 * (old_total - ref_total) / ref_total:+.1f} %)")
    print(f"\nby folder: {args.ref} -> {at}, the rest (old capabilities) + new")
    for d in PACKAGE:
        r = sum(n for f, n in ref.items() if f.startswith(d + "/"))
        o = sum(n for f, n in now.items() if f.startswith(d + "/") and f not in new_files)
        w = sum(n for f, n in now.items() if f.startswith(d + "/") and f in new_files)
        print(f"  {d + '/':<12} {r:>6} -> {o:>6} ({o - r:+d}) + {w} new")
    print("\nfiles counted as new capability:")
    for cap, files in NEW_CAPABILITIES.items():
        print(f"  {cap}: {sum(now.get(f, 0) for f in files)} lines")
        for f in files:
            print(f"    {now.get(f, 0):>5}  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
