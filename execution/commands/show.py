"""``attnphase show PATH``: the summary (:func:`~attnphase.execution.dataset.describe`) of the dataset(s) a job
wrote into its ``--out`` folder; with ``--json`` one object keyed by file. xarray is imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from attnphase import outputs

NAME = "show"
HELP = "print the summary of a job's dataset (its --out folder or a .nc file)"
DESCRIPTION = ("Print the dimensions, variables, task status and attributes (model, solver, rule, code "
               "version, date) of the netCDF dataset(s) a job wrote into its --out folder.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``PATH`` and ``--json``."""
    p.add_argument("path", metavar="PATH", help="a job's --out folder, or one .nc file")
    outputs.add_json_option(p)


def run(args: argparse.Namespace) -> int:
    """Print the summary of every dataset at ``args.path``; ValueError (exit 2) where there is none to read."""
    if not str(args.path).strip():
        raise ValueError("PATH: empty (give a job's --out folder or its .nc file)")
    target = Path(args.path)
    try:
        if not target.exists():
            raise ValueError(f"PATH: {outputs.shown_path(target)!r} does not exist (give a job's --out folder or its .nc file)")
        if not (target.is_file() or target.is_dir()):
            raise ValueError(f"PATH: {str(target)!r} is neither a folder nor a file (give a job's --out folder or its "
                             ".nc file)")
        files = [target] if target.is_file() else sorted(target.glob("*.nc"))
    except OSError as exc:  # a name the system refuses (too long), a folder it will not list
        raise ValueError(f"PATH: cannot read {outputs.shown_path(target)!r} ({exc.strerror or exc})") from None
    if not files:
        tasks = target / "tasks"
        stopped = (": its tasks/ folder holds the tasks an unfinished run stored; the same command again resumes "
                   "it and writes the dataset") if tasks.is_dir() and any(tasks.iterdir()) else ""
        raise ValueError(f"PATH: no dataset (*.nc) in {str(target)!r}{stopped}; sweep, phase-diagram, census, scan, "
                         "validate (not --suite general) and histogram write one into their --out folder (check writes "
                         "its tables only)")
    if target.is_file() and target.suffix.lower() in (".csv", ".json", ".md", ".png"):  # another output of the job
        where = (f"give the folder {str(target.parent)!r} or its .nc file" if any(target.parent.glob("*.nc"))
                 else f"its folder {str(target.parent)!r} holds none (sweep, phase-diagram, census, scan, validate and "
                 "histogram write one beside their tables)")
        raise ValueError(f"PATH: {str(target)!r} is one of a job's tables or figures; show reads its dataset: {where}")
    from attnphase.execution.dataset import describe, open_dataset, summary

    out, unread = [], []
    for f in files:
        try:
            out.append((f, open_dataset(f)))
        except (OSError, ValueError) as exc:
            unread.append(f"PATH: cannot read {str(f)!r} as netCDF ({' '.join(str(exc).split())})")
    if unread and not out:
        raise ValueError(unread[0])
    for why in unread:  # a folder's other datasets are still shown
        print(f"attnphase: warning: {why}", file=sys.stderr)
    for f, ds in out:
        if "job" not in ds.attrs:
            print(f"attnphase: note: {f.name} has no job attribute: not a dataset an attnphase job wrote (its "
                  "summary below shows what it holds)", file=sys.stderr)
    if args.json:
        print(json.dumps(outputs.json_value({str(f): summary(ds) for f, ds in out})))
    else:
        print("\n\n".join(describe(ds, f.name) for f, ds in out))
    return 0
